//! How chunk metadata is written (format 5's `docs` section, split layout 7's fragments):
//! the in-memory [`ChunkMeta`] without what the bytes around it already say.
//!
//! | `ChunkMeta` field | written as |
//! |---|---|
//! | `doc`, `chunk_index` | nothing: chunks follow their documents' `first_chunk` / `chunk_count` |
//! | `id` (32 hex digits) | its 16 bytes |
//! | `section_path` | how many leading entries it shares with the previous chunk's path (the document title, `[title]`, before a document's first chunk), then the rest |
//! | `anchor` | nothing when the previous chunk of its document has the same one (`""` before the first) |
//! | `line_end` | its distance from `line_start` |
//!
//! On cpp-docs (9,751 pages, 116,325 chunks) the docs section shrinks from 14.6 MB to
//! 7.6 MB: the breadcrumb repeated the page title in every chunk (2.8 MB) and its headings
//! in every chunk of a section, the ids were hex, the anchors repeated per section. Decoding
//! gives back the same `ChunkMeta`s, so nothing after the decoder changes.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::model::{ChunkLocation, ChunkMeta, Document, PageSpan};
use crate::error::{Error, Result};

/// The `docs` section as written (format 5).
#[derive(Serialize)]
pub(crate) struct DocsOut<'a> {
    pub documents: &'a [Document],
    pub chunks: Packing<'a>,
}

/// `chunks` packed as they are written, one at a time: the same bytes as a `Vec` of
/// [`pack`]'s, without holding it (130 MB at 1.35M chunks).
pub(crate) struct Packing<'a> {
    pub documents: &'a [Document],
    pub chunks: &'a [ChunkMeta],
}

impl Serialize for Packing<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeSeq};
        let mut seq = s.serialize_seq(Some(self.chunks.len()))?;
        let mut failed = None;
        let packed = for_each_packed(self.documents, self.chunks, |p| {
            seq.serialize_element(&p).map_err(|e| {
                failed = Some(e);
                Error::Encode(String::new())
            })
        });
        if let Some(e) = failed {
            return Err(e);
        }
        packed.map_err(S::Error::custom)?;
        seq.end()
    }
}

/// The `docs` section as read (format 5; its documents in format 9's layout, which every
/// format read has).
#[derive(Deserialize)]
pub(crate) struct DocsIn {
    pub documents: Vec<Document>,
    pub chunks: Vec<PackedChunk<'static>>,
}

/// One chunk as written: borrowing from the `ChunkMeta` it packs (at 1.35M chunks, copies
/// of the breadcrumbs and anchors came to ~150 MB of the builder's peak), owned when read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PackedChunk<'a> {
    id: [u8; 16],
    /// Leading entries of the previous path kept.
    shared: u32,
    /// The path's entries after those.
    tail: Cow<'a, [String]>,
    /// `None`: the previous chunk's anchor.
    anchor: Option<Cow<'a, str>>,
    line_start: u32,
    /// `line_end - line_start`.
    lines: u32,
    page_span: Option<PageSpan>,
}

/// Writes `chunks`, which follow `documents` in order: each document's `chunk_count` of them
/// (the builder's bundles always; a hand-made inconsistent one is written as it is, for the
/// decoder to refuse).
pub(crate) fn pack<'a>(
    documents: &'a [Document],
    chunks: &'a [ChunkMeta],
) -> Result<Vec<PackedChunk<'a>>> {
    let mut out = Vec::with_capacity(chunks.len());
    for_each_packed(documents, chunks, |p| {
        out.push(p);
        Ok(())
    })?;
    Ok(out)
}

/// The error [`pack`] would give `chunks`, if any: checked before [`Packing`] writes them
/// (a serializer's error loses its message).
pub(crate) fn check(documents: &[Document], chunks: &[ChunkMeta]) -> Result<()> {
    for_each_packed(documents, chunks, |_| Ok(()))
}

/// [`pack`], each packed chunk handed to `f` in order: exactly one per chunk.
fn for_each_packed<'a>(
    documents: &'a [Document],
    chunks: &'a [ChunkMeta],
    mut f: impl FnMut(PackedChunk<'a>) -> Result<()>,
) -> Result<()> {
    let mut rest = chunks;
    let runs = documents
        .iter()
        .map(|d| (std::slice::from_ref(&d.title), d.chunk_count as usize))
        .chain(std::iter::once((&[][..], usize::MAX)));
    for (title, count) in runs {
        let (own, after) = rest.split_at(count.min(rest.len()));
        rest = after;
        pack_run(title, own, &mut f)?;
        if rest.is_empty() {
            break;
        }
    }
    Ok(())
}

/// What [`unpack`] charges against its budget for one chunk: the breadcrumb entries it takes
/// over from the chunk before (`shared`), and that chunk's anchor when it repeats it. The
/// writer charges the same ([`append`]), so it can keep every bundle inside every reader's
/// budget.
fn copy_cost(shared: &[String], repeated_anchor: Option<&str>) -> usize {
    shared.iter().map(|s| s.len() + 24).sum::<usize>() + repeated_anchor.map_or(0, str::len)
}

/// Packs one document's chunks (`own`), whose breadcrumbs start from `title`. Returns what
/// reading them back copies ([`copy_cost`], summed).
fn pack_run<'a>(
    title: &'a [String],
    own: &'a [ChunkMeta],
    f: &mut impl FnMut(PackedChunk<'a>) -> Result<()>,
) -> Result<usize> {
    let mut path = title;
    let mut anchor = "";
    let mut copied = 0usize;
    for c in own {
        let shared = path
            .iter()
            .zip(&c.location.section_path)
            .take_while(|(a, b)| a == b)
            .count();
        let repeated = (c.location.anchor == anchor).then_some(anchor);
        copied = copied.saturating_add(copy_cost(&c.location.section_path[..shared], repeated));
        f(PackedChunk {
            id: id_bytes(&c.id).ok_or_else(|| {
                Error::Encode(format!("chunk id {:?} is not 32 hex digits", c.id))
            })?,
            shared: shared as u32,
            tail: Cow::Borrowed(&c.location.section_path[shared..]),
            anchor: repeated
                .is_none()
                .then_some(Cow::Borrowed(c.location.anchor.as_str())),
            line_start: c.location.line_start,
            lines: c
                .location
                .line_end
                .checked_sub(c.location.line_start)
                .ok_or_else(|| Error::Encode("a chunk ends before it starts".into()))?,
            page_span: c.location.page_span,
        })?;
        path = &c.location.section_path;
        anchor = &c.location.anchor;
    }
    Ok(copied)
}

/// Appends the chunks of one document, titled `title`, to `out` as [`Packing`] writes them
/// (postcard writes a sequence's elements back to back): a builder holds its chunk metadata
/// packed, as it will be written, rather than as `ChunkMeta`s (at 2.24M chunks, about 0.7 GB
/// less). Returns what reading them back costs against the readers' budget.
pub(crate) fn append(title: &str, chunks: &[ChunkMeta], out: &mut Vec<u8>) -> Result<RunCost> {
    let title = [title.to_owned()];
    let before = out.len();
    let copied = pack_run(&title, chunks, &mut |p| {
        *out = postcard::to_extend(&p, std::mem::take(out))
            .map_err(|e| Error::Encode(format!("docs: {e}")))?;
        Ok(())
    })?;
    Ok(RunCost {
        copied,
        packed: out.len() - before,
    })
}

/// What one document's chunks cost a reader ([`unpack`]): the bytes of breadcrumbs and
/// anchors copied from chunk to chunk, and the bytes the chunks take packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunCost {
    pub copied: usize,
    pub packed: usize,
}

impl RunCost {
    /// What the copies come to beyond the budget the chunks' own bytes buy
    /// ([`budget_for`]'s 16 a byte): the part only the budget's fixed slack can pay for.
    pub fn excess(self) -> usize {
        self.copied
            .saturating_sub(self.packed.saturating_mul(BUDGET_PER_BYTE))
    }
}

/// What every byte of a section buys of [`unpack`]'s budget, and the budget's fixed part: a
/// bundle whose documents' [`RunCost::excess`] sums to at most [`BUDGET_SLACK`] is read by
/// every reader, whichever documents it reads together (the whole `docs` section, a split
/// layout's fragment shard, one document of an incremental build).
pub const BUDGET_PER_BYTE: usize = 16;
pub const BUDGET_SLACK: usize = 1 << 20;

/// A bundle's documents, and their chunk metadata as the `docs` section writes it (about 60
/// bytes a chunk), each document's chunks read back when asked for: what an incremental
/// build keeps of the previous bundle to take over the chunks of unchanged files (as
/// `ChunkMeta`s, with their texts, that was 5.1 GB at 2.24M chunks).
#[derive(Debug)]
pub struct PackedDocs {
    documents: Vec<Document>,
    raw: Vec<u8>,
    /// Where each document's chunks start in `raw`, then where the last one's end.
    starts: Vec<usize>,
}

impl PackedDocs {
    /// The `docs` section's raw (inflated) bytes: the documents, then every chunk packed.
    pub(crate) fn parse(raw: Vec<u8>) -> Result<PackedDocs> {
        let corrupt = |e: postcard::Error| Error::Corrupt(format!("docs: {e}"));
        let (documents, rest) =
            postcard::take_from_bytes::<Vec<Document>>(&raw).map_err(corrupt)?;
        // A sequence's length, as postcard writes it.
        let (count, mut rest) = postcard::take_from_bytes::<usize>(rest).map_err(corrupt)?;
        let total: u64 = documents.iter().map(|d| d.chunk_count as u64).sum();
        if total != count as u64 {
            return Err(Error::Corrupt(format!(
                "docs: documents own {total} chunks, {count} are written"
            )));
        }
        // Chunks follow their documents, which are sorted by path (what the whole decode
        // checks of them, and what a reader finding a document by path relies on).
        let mut next = 0u64;
        for (i, doc) in documents.iter().enumerate() {
            if doc.first_chunk as u64 != next {
                return Err(Error::Corrupt(format!(
                    "docs: document {i} starts at chunk {}, expected {next}",
                    doc.first_chunk
                )));
            }
            next += doc.chunk_count as u64;
        }
        if !documents.windows(2).all(|w| w[0].path < w[1].path) {
            return Err(Error::Corrupt("documents are not sorted by path".into()));
        }
        let mut starts = Vec::with_capacity(documents.len() + 1);
        for doc in &documents {
            starts.push(raw.len() - rest.len());
            for _ in 0..doc.chunk_count {
                rest = postcard::take_from_bytes::<PackedChunk<'_>>(rest)
                    .map_err(corrupt)?
                    .1;
            }
        }
        starts.push(raw.len() - rest.len());
        if !rest.is_empty() {
            return Err(Error::Corrupt("docs: bytes after the last chunk".into()));
        }
        Ok(PackedDocs {
            documents,
            raw,
            starts,
        })
    }

    pub fn documents(&self) -> &[Document] {
        &self.documents
    }

    /// Document `d`'s chunks (`d` < the number of documents).
    pub fn chunks(&self, d: usize) -> Result<Vec<ChunkMeta>> {
        let mut rest = &self.raw[self.starts[d]..self.starts[d + 1]];
        let len = rest.len();
        let mut packed = Vec::with_capacity(self.documents[d].chunk_count as usize);
        while !rest.is_empty() {
            let (p, after) = postcard::take_from_bytes::<PackedChunk<'static>>(rest)
                .map_err(|e| Error::Corrupt(format!("docs: {e}")))?;
            packed.push(p);
            rest = after;
        }
        unpack(&self.documents[d..d + 1], d as u32, packed, budget_for(len)).map_err(Error::Corrupt)
    }
}

/// Reads back the chunks of `documents`, the first of which is document `first_doc` of the
/// bundle. `budget`: the most bytes the paths and anchors copied from earlier chunks may come
/// to (a few bytes of a crafted file could otherwise repeat a long heading millions of times).
/// The error is the message of the caller's `Corrupt` (a plain string: converting an `Error`
/// to text here cost the lexical build 1.6 KB).
pub(crate) fn unpack(
    documents: &[Document],
    first_doc: u32,
    packed: Vec<PackedChunk<'_>>,
    mut budget: usize,
) -> std::result::Result<Vec<ChunkMeta>, String> {
    let total: u64 = documents.iter().map(|d| d.chunk_count as u64).sum();
    if total != packed.len() as u64 {
        return Err(format!(
            "documents own {total} chunks, {} are written",
            packed.len()
        ));
    }
    let mut out: Vec<ChunkMeta> = Vec::with_capacity(packed.len());
    let mut packed = packed.into_iter();
    for (i, doc) in documents.iter().enumerate() {
        let mut path: Vec<String> = vec![doc.title.clone()];
        let mut anchor = String::new();
        for chunk_index in 0..doc.chunk_count {
            let Some(p) = packed.next() else { break };
            let shared = p.shared as usize;
            if shared > path.len() {
                return Err(format!(
                    "chunk {chunk_index} of document {} shares {shared} headings of {}",
                    first_doc as usize + i,
                    path.len()
                ));
            }
            let copied = copy_cost(
                &path[..shared],
                p.anchor.is_none().then_some(anchor.as_str()),
            );
            budget = budget.checked_sub(copied).ok_or_else(|| {
                "chunk breadcrumbs expand far past their section's size".to_owned()
            })?;
            path.truncate(shared);
            path.extend(p.tail.into_owned());
            if let Some(a) = p.anchor {
                anchor = a.into_owned();
            }
            // No `{:?}` of a path in the lexical build: Debug string escaping costs it.
            let line_end = p.line_start.checked_add(p.lines).ok_or_else(|| {
                format!(
                    "chunk {chunk_index} of document {} ends past line 2^32",
                    first_doc as usize + i
                )
            })?;
            out.push(ChunkMeta {
                doc: first_doc + i as u32,
                chunk_index,
                id: id_hex(&p.id),
                location: ChunkLocation {
                    section_path: path.clone(),
                    anchor: anchor.clone(),
                    line_start: p.line_start,
                    line_end,
                    page_span: p.page_span,
                },
            });
        }
    }
    Ok(out)
}

/// The most bytes of breadcrumbs and anchors `unpack` copies for a section of `len` bytes:
/// cpp-docs copies 1.2× its section's size (9.1 MB, counting 24 bytes a `String`).
pub(crate) fn budget_for(len: usize) -> usize {
    len.saturating_mul(BUDGET_PER_BYTE)
        .saturating_add(BUDGET_SLACK)
}

fn id_bytes(hex: &str) -> Option<[u8; 16]> {
    let digits = hex.as_bytes();
    if digits.len() != 32 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 16];
    for (o, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *o = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

fn id_hex(bytes: &[u8; 16]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(32);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_only_lowercase_hex_packs() {
        let hex = "00ff10a9bc3e4d5f60718293a4b5c6d7";
        assert_eq!(id_hex(&id_bytes(hex).unwrap()), hex);
        assert_eq!(id_bytes("00FF10A9BC3E4D5F60718293A4B5C6D7"), None);
        assert_eq!(id_bytes("abc"), None);
        assert_eq!(id_bytes("zz".repeat(16).as_str()), None);
    }

    fn doc(title: &str, first_chunk: u32, chunk_count: u32) -> Document {
        Document {
            path: format!("{title}.md"),
            doc_id: "0".repeat(32),
            title: title.into(),
            description: None,
            doc_type: "md".into(),
            date: None,
            tags: vec![],
            lang: crate::analyze::Language::En,
            first_chunk,
            chunk_count,
            citation: None,
            created: None,
            file_size: None,
            date_source: None,
        }
    }

    fn chunk(doc: u32, chunk_index: u32, path: &[&str], anchor: &str) -> ChunkMeta {
        ChunkMeta {
            doc,
            chunk_index,
            id: format!("{:032x}", (doc as u128) << 64 | chunk_index as u128),
            location: ChunkLocation {
                section_path: path.iter().map(|s| s.to_string()).collect(),
                anchor: anchor.into(),
                line_start: 3 * chunk_index + 1,
                line_end: 3 * chunk_index + 2,
                page_span: (chunk_index == 1).then_some(PageSpan { start: 2, end: 3 }),
            },
        }
    }

    #[test]
    fn chunks_read_back_as_they_were_written() {
        let docs = vec![doc("A", 0, 4), doc("B", 4, 2), doc("Empty", 6, 0)];
        let chunks = vec![
            chunk(0, 0, &["A"], ""),
            chunk(0, 1, &["A", "Install"], "install"),
            chunk(0, 2, &["A", "Install"], "install"),
            chunk(0, 3, &["Other title", "Deep", "Deeper"], "deeper"),
            // A path that does not begin with the title, and one that is empty.
            chunk(1, 0, &[], ""),
            chunk(1, 1, &["B", "x"], "x"),
        ];
        let packed = pack(&docs, &chunks).unwrap();
        assert_eq!(packed[0].shared, 1);
        assert!(packed[0].tail.is_empty() && packed[0].anchor.is_none());
        assert_eq!((packed[2].shared, packed[2].anchor.as_deref()), (2, None));
        // A new document's first chunk starts again from "".
        assert_eq!(packed[4].anchor, None);
        assert_eq!(unpack(&docs, 0, packed.clone(), 1 << 20).unwrap(), chunks);
        // The same documents as the 8th.. of a bundle: only `doc` moves.
        let moved = unpack(&docs, 7, packed, 1 << 20).unwrap();
        assert!(moved.iter().zip(&chunks).all(|(m, c)| m.doc == c.doc + 7));
    }

    /// The `docs` section's raw bytes, as `DocsOut` writes them.
    fn raw(docs: &[Document], chunks: &[ChunkMeta]) -> Vec<u8> {
        postcard::to_allocvec(&DocsOut {
            documents: docs,
            chunks: Packing {
                documents: docs,
                chunks,
            },
        })
        .unwrap()
    }

    #[test]
    fn packed_docs_read_a_document_at_a_time_as_written() {
        let docs = vec![doc("A", 0, 3), doc("B", 3, 0), doc("C", 3, 2)];
        let chunks = vec![
            chunk(0, 0, &["A"], ""),
            chunk(0, 1, &["A", "Install"], "install"),
            chunk(0, 2, &["A", "Install"], "install"),
            chunk(2, 0, &["C", "x"], "x"),
            chunk(2, 1, &["C", "x", "y"], "y"),
        ];
        let read = PackedDocs::parse(raw(&docs, &chunks)).unwrap();
        assert_eq!(read.documents(), docs.as_slice());
        assert_eq!(read.chunks(0).unwrap(), chunks[..3]);
        assert!(read.chunks(1).unwrap().is_empty());
        assert_eq!(read.chunks(2).unwrap(), chunks[3..]);
        // What the whole decode refuses of the documents, and bytes that do not add up.
        let refused = |docs: &[Document], extra: &[u8]| {
            let mut bytes = raw(docs, &chunks);
            bytes.extend_from_slice(extra);
            PackedDocs::parse(bytes).unwrap_err().to_string()
        };
        let mut gap = docs.clone();
        gap[2].first_chunk = 4;
        assert!(refused(&gap, &[]).contains("starts at chunk 4, expected 3"));
        let unsorted = vec![doc("C", 0, 2), doc("B", 2, 0), doc("A", 2, 3)];
        assert!(refused(&unsorted, &[]).contains("not sorted by path"));
        assert!(refused(&docs, &[0]).contains("after the last chunk"));
        let mut short = raw(&docs, &chunks);
        short.truncate(short.len() - 1);
        assert!(PackedDocs::parse(short).is_err());
    }

    #[test]
    fn a_crafted_section_is_refused_not_expanded() {
        let docs = vec![doc("A", 0, 2)];
        let chunks = vec![chunk(0, 0, &["A", "h"], "h"), chunk(0, 1, &["A", "h"], "h")];
        let good = pack(&docs, &chunks).unwrap();
        let refused = |change: &dyn Fn(&mut Vec<PackedChunk<'_>>)| {
            let mut bad = good.clone();
            change(&mut bad);
            unpack(&docs, 0, bad, 1 << 20).unwrap_err()
        };
        assert!(refused(&|p| p[1].shared = 3).contains("shares 3 headings of 2"));
        assert!(refused(&|p| p[1].line_start = u32::MAX).contains("past line"));
        assert!(refused(&|p| p.truncate(1)).contains("are written"));
        // A long heading shared a million times would be gigabytes.
        let mut long = good[..1].to_vec();
        long[0].tail = vec!["x".repeat(1 << 16)].into();
        long.extend(std::iter::repeat_n(good[1].clone(), 1_000_000));
        let many = vec![doc("A", 0, 1_000_001)];
        let err = unpack(&many, 0, long, budget_for(1_000_000)).unwrap_err();
        assert!(err.contains("expand far past"), "{err}");
    }
}
