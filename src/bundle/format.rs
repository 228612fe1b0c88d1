//! Bytes ⇄ [`Bundle`]. Decoding never panics: every length, checksum and cross-reference is
//! checked, and each failure has its own [`Error`] variant.

use std::borrow::Cow;

use sha2::{Digest, Sha256};

use super::model::*;
use super::packed::{budget_for, check, unpack, DocsIn, DocsOut, PackedDocs, Packing};
use super::AccessSection;
use super::{FORMAT_VERSION, OLDEST_FORMAT_VERSION};
use crate::encoding::{self, decode_exact, to_bytes};
use crate::error::{Error, Result};
use crate::index::lexical::LexicalIndex;
use crate::index::vector::VectorIndex;

pub const MAGIC: &[u8; 8] = b"DOCLOUPE";
/// Where the header bytes begin (magic + version + length + sha256).
pub const HEADER_START: usize = 8 + 4 + 4 + 32;

/// Serializes a bundle. The section table in `bundle.header` is rewritten to match the
/// sections actually written.
pub fn encode(bundle: &Bundle) -> Result<Vec<u8>> {
    Ok(encode_pieces(bundle)?.into_bytes())
}

/// A bundle's bytes as written, in pieces: the fixed prefix and header, then each section.
/// A writer streams them to a file ([`Encoded::write_to`]) rather than join them: at 100K
/// documents that saves a copy of the whole bundle.
#[derive(Debug)]
pub struct Encoded {
    pieces: Vec<Vec<u8>>,
}

impl Encoded {
    /// The bundle's length in bytes.
    pub fn len(&self) -> usize {
        self.pieces.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the bundle's bytes to `w`, in order.
    pub fn write_to(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        self.pieces.iter().try_for_each(|p| w.write_all(p))
    }

    /// The bundle's bytes in one buffer.
    pub fn into_bytes(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        for p in self.pieces {
            out.extend_from_slice(&p);
        }
        out
    }
}

/// [`encode`], in pieces.
pub fn encode_pieces(bundle: &Bundle) -> Result<Encoded> {
    let docs = || docs_section(&bundle.docs);
    let lexical = || lexical_section(&bundle.lexical);
    let vectors = || bundle.vectors.as_ref().map(vectors_section).transpose();
    // Each section is deflated on its own core natively (the same bytes either way).
    #[cfg(not(target_arch = "wasm32"))]
    let ((docs, lexical), (text, vectors)) = rayon::join(
        || rayon::join(docs, lexical),
        || rayon::join(|| bundle.text.encode(), vectors),
    );
    #[cfg(target_arch = "wasm32")]
    let (docs, lexical, text, vectors) = (docs(), lexical(), bundle.text.encode(), vectors());
    let access = bundle.access.as_ref().map(access_section).transpose()?;
    assemble(&bundle.header, docs?, lexical?, text?, vectors?, access)
}

/// The `docs` section of `documents` and their `chunks` chunks, written by
/// [`super::packed::append`] as they came (the builder's), in pieces.
pub(crate) fn docs_section_packed(
    documents: &[Document],
    chunks: usize,
    packed: &[u8],
) -> Result<Vec<Vec<u8>>> {
    // `DocsOut` as postcard writes it: the documents, the chunk count, the chunks.
    let head = to_bytes(&(documents, chunks), "docs")?;
    encoding::wrap_pieces(&[&head, packed], "docs")
}

fn docs_section(docs: &DocsSection) -> Result<Vec<u8>> {
    check(&docs.documents, &docs.chunks)?;
    let raw = to_bytes(
        &DocsOut {
            documents: &docs.documents,
            chunks: Packing {
                documents: &docs.documents,
                chunks: &docs.chunks,
            },
        },
        "docs",
    )?;
    encoding::wrap(&raw, "docs")
}

pub(crate) fn lexical_section(lexical: &LexicalIndex) -> Result<Vec<u8>> {
    encoding::wrap(&to_bytes(lexical, "lexical")?, "lexical")
}

fn vectors_section(vectors: &VectorIndex) -> Result<Vec<u8>> {
    to_bytes(vectors, "vectors")
}

/// The `access` section: small (group names and indices), so stored as postcard alone.
pub(crate) fn access_section(access: &AccessSection) -> Result<Vec<u8>> {
    to_bytes(access, "access")
}

/// The prefix and header for these sections, then the sections.
fn assemble(
    header: &Header,
    docs: Vec<u8>,
    lexical: Vec<u8>,
    text: Vec<u8>,
    vectors: Option<Vec<u8>>,
    access: Option<Vec<u8>>,
) -> Result<Encoded> {
    assemble_pieces(
        header,
        vec![docs],
        vec![lexical],
        vec![text],
        vectors.map(|v| vec![v]),
        access,
    )
}

/// [`assemble`], each section in pieces, written one after another (a builder hands over its
/// largest sections without joining them).
pub(crate) fn assemble_pieces(
    header: &Header,
    docs: Vec<Vec<u8>>,
    lexical: Vec<Vec<u8>>,
    text: Vec<Vec<u8>>,
    vectors: Option<Vec<Vec<u8>>>,
    access: Option<Vec<u8>>,
) -> Result<Encoded> {
    let mut parts: Vec<(SectionKind, Vec<Vec<u8>>)> = vec![
        (SectionKind::Docs, docs),
        (SectionKind::Lexical, lexical),
        (SectionKind::Text, text),
    ];
    if let Some(v) = vectors {
        parts.push((SectionKind::Vectors, v));
    }
    if let Some(a) = access {
        parts.push((SectionKind::Access, vec![a]));
    }
    let mut header = header.clone();
    header.sections.clear();
    let mut offset = 0u64;
    for (kind, pieces) in &parts {
        let mut sha = Sha256::new();
        let mut len = 0u64;
        for piece in pieces {
            sha.update(piece);
            len += piece.len() as u64;
        }
        header.sections.push(SectionEntry {
            kind: *kind,
            offset,
            len,
            sha256: sha.finalize().into(),
        });
        offset += len;
    }
    let header_bytes = to_bytes(&header, "header")?;
    let header_len =
        u32::try_from(header_bytes.len()).map_err(|_| Error::Encode("header too large".into()))?;

    let mut head = Vec::with_capacity(HEADER_START + header_bytes.len());
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    head.extend_from_slice(&header_len.to_le_bytes());
    head.extend_from_slice(&Sha256::digest(&header_bytes));
    head.extend_from_slice(&header_bytes);
    let mut pieces = vec![head];
    pieces.extend(parts.into_iter().flat_map(|(_, p)| p));
    Ok(Encoded { pieces })
}

/// Reads and verifies the fixed prefix and the header. Returns the header and the offset
/// where sections begin.
pub fn decode_header(bytes: &[u8]) -> Result<(Header, usize)> {
    check_prefix(
        bytes,
        MAGIC,
        HEADER_START,
        (OLDEST_FORMAT_VERSION, FORMAT_VERSION),
    )?;
    let header_len = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes")) as usize;
    let body_start = HEADER_START
        .checked_add(header_len)
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| {
            Error::BundleTruncated(format!(
                "header of {header_len} bytes does not fit in {} bytes",
                bytes.len()
            ))
        })?;
    let header_bytes = &bytes[HEADER_START..body_start];
    if Sha256::digest(header_bytes).as_slice() != &bytes[16..48] {
        return Err(Error::ChecksumMismatch {
            part: "header".into(),
        });
    }
    let header: Header = decode_exact(header_bytes, "header")?;
    Ok((header, body_start))
}

/// The bytes of one section, bounds- and checksum-verified.
pub fn section_bytes<'a>(
    bytes: &'a [u8],
    body_start: usize,
    entry: &SectionEntry,
) -> Result<&'a [u8]> {
    let name = entry.kind.name();
    let start = usize::try_from(entry.offset)
        .ok()
        .and_then(|o| o.checked_add(body_start));
    let end = start
        .zip(usize::try_from(entry.len).ok())
        .and_then(|(s, l)| s.checked_add(l));
    let (start, end) = match (start, end) {
        (Some(s), Some(e)) if e <= bytes.len() => (s, e),
        _ => {
            return Err(Error::BundleTruncated(format!(
                "section {name} ends at {} but the bundle has {} bytes",
                entry
                    .offset
                    .saturating_add(entry.len)
                    .saturating_add(body_start as u64),
                bytes.len()
            )))
        }
    };
    let section = &bytes[start..end];
    verify_section(section, entry)?;
    Ok(section)
}

/// Checks one section's bytes against the sha256 its entry records.
pub(super) fn verify_section(section: &[u8], entry: &SectionEntry) -> Result<()> {
    if Sha256::digest(section).as_slice() != entry.sha256 {
        return Err(Error::ChecksumMismatch {
            part: format!("section {}", entry.kind.name()),
        });
    }
    Ok(())
}

/// Checks what every docloupe file starts with: `magic` (`BadMagic`), at least `prefix` bytes
/// (`BundleTruncated`), then a u32 LE format version in `versions` (the oldest and newest
/// this engine reads), which it returns.
pub(super) fn check_prefix(
    bytes: &[u8],
    magic: &[u8; 8],
    prefix: usize,
    (oldest, newest): (u32, u32),
) -> Result<u32> {
    let magic_len = bytes.len().min(magic.len());
    if bytes[..magic_len] != magic[..magic_len] {
        return Err(Error::BadMagic);
    }
    if bytes.len() < prefix {
        return Err(Error::BundleTruncated(format!(
            "{} bytes, the fixed prefix alone is {prefix}",
            bytes.len()
        )));
    }
    let version = version_of(bytes);
    if version > newest {
        return Err(Error::NewerFormat {
            found: version,
            supported: newest,
        });
    }
    if version < oldest {
        return Err(Error::OlderFormat {
            layout: if magic == MAGIC {
                "bundle format"
            } else {
                "split layout"
            },
            found: version,
            oldest,
            rebuild_with: super::REBUILD_WITH,
        });
    }
    Ok(version)
}

/// The format version of a file at least 12 bytes long (see [`check_prefix`]).
fn version_of(bytes: &[u8]) -> u32 {
    u32::from_le_bytes(bytes[8..12].try_into().expect("12 bytes"))
}

/// Decodes and validates a whole bundle.
pub fn decode(bytes: &[u8]) -> Result<Bundle> {
    decode_with(bytes, true)
}

/// Decodes a bundle for fulltext search only: the vectors section is checksum-verified but
/// not decoded (`vectors` stays `None`; the header still says the bundle has them). The
/// lexical wasm build can never use vectors, and decoding them would cost it memory, time
/// and the HNSW decoder's code.
pub fn decode_lexical(bytes: &[u8]) -> Result<Bundle> {
    decode_with(bytes, false)
}

/// Checks what [`decode`] checks of a bundle's vectors section and [`decode_lexical`] does
/// not (that it decodes, and fits the header's chunks and model), holding the decoded
/// vectors only while it looks. With [`decode_lexical`] after it, the same checks as
/// [`decode`] without holding the vectors beside the rest: what the split layout's writer
/// needs, which cuts the section's bytes as they are (at 2.24M vectors, 0.56 GB less).
pub fn check_vectors(bytes: &[u8]) -> Result<()> {
    decode_vectors(bytes).map(drop)
}

/// A bundle's vectors alone (`None`: it has none), checked as [`check_vectors`] checks them.
pub fn decode_vectors(bytes: &[u8]) -> Result<Option<VectorIndex>> {
    let (_, header, raw) = verified_section(bytes, SectionKind::Vectors)?;
    let Some(raw) = raw else {
        return Ok(None);
    };
    let vectors = crate::index::vector::decode(raw)?;
    let dims = header.embedding.as_ref().map_or(0, |m| m.dims);
    vectors.validate(header.counts.chunks as usize, dims as usize)?;
    Ok(Some(vectors))
}

/// A bundle's `text` section alone, its checksum verified (its blocks are checked as they are
/// read).
pub fn decode_text(bytes: &[u8]) -> Result<TextSection> {
    match verified_section(bytes, SectionKind::Text)? {
        (_, _, Some(section)) => TextSection::decode(section),
        _ => Err(Error::Corrupt("no text section".into())),
    }
}

/// A bundle's documents and chunk metadata as its `docs` section writes them, read back a
/// document at a time ([`PackedDocs`]). The section's checksum is verified; what it holds is
/// checked as it is read.
pub fn packed_docs(bytes: &[u8]) -> Result<PackedDocs> {
    let (_, _, section) = verified_section(bytes, SectionKind::Docs)?;
    let section = section.ok_or_else(|| Error::Corrupt("no docs section".into()))?;
    PackedDocs::parse(encoding::unwrap(section, "docs")?)
}

/// The format version, the header and section `kind` of a whole bundle in memory (`None`:
/// it has none), the section's checksum verified: for readers of one section alone.
fn verified_section(bytes: &[u8], kind: SectionKind) -> Result<(u32, Header, Option<&[u8]>)> {
    let (header, body_start) = decode_header(bytes)?;
    let section = match header.sections.iter().find(|s| s.kind == kind) {
        Some(entry) => {
            let section = section_bytes(bytes, body_start, entry)?;
            verify_section(section, entry)?;
            Some(section)
        }
        None => None,
    };
    Ok((version_of(bytes), header, section))
}

fn decode_with(bytes: &[u8], with_vectors: bool) -> Result<Bundle> {
    let (header, body_start) = decode_header(bytes)?;
    check_sections_fit(&header, body_start, bytes.len() as u64)?;
    let entries = header.sections.clone();
    let section = |kind: SectionKind| {
        entries
            .iter()
            .find(|s| s.kind == kind)
            .map(|entry| section_bytes(bytes, body_start, entry).map(Cow::Borrowed))
            .transpose()
    };
    // The vectors are verified even when not decoded: a whole bundle in memory is checked whole.
    decode_sections(header, version_of(bytes), section, with_vectors, true)
}

/// Checks every section's bounds first, so a truncated file reports truncation rather than
/// whichever section happened to be decoded first.
pub(super) fn check_sections_fit(header: &Header, body_start: usize, len: u64) -> Result<()> {
    if let Some(end) = header
        .sections
        .iter()
        .map(|s| s.offset.saturating_add(s.len))
        .max()
    {
        if end.saturating_add(body_start as u64) > len {
            return Err(Error::BundleTruncated(format!(
                "sections end at byte {} but the bundle has {len} bytes",
                end.saturating_add(body_start as u64),
            )));
        }
    }
    Ok(())
}

/// Decodes a bundle section by section and validates it. `section(kind)` gives the
/// checksum-verified bytes of one section (`None`: the bundle has none), each asked for once and
/// dropped once decoded, so a reader that owns them holds one raw section at a time (the
/// docs and lexical sections, decoded side by side, together). `version`
/// is the file's format version (from 10, an access section may follow). Without `with_vectors` the
/// vectors are not decoded, and asked for only when `verify_unread`.
pub(super) fn decode_sections<'a>(
    header: Header,
    version: u32,
    mut section: impl FnMut(SectionKind) -> Result<Option<Cow<'a, [u8]>>>,
    with_vectors: bool,
    verify_unread: bool,
) -> Result<Bundle> {
    let mut required = |kind: SectionKind| {
        section(kind)?.ok_or_else(|| Error::Corrupt(format!("section {} is missing", kind.name())))
    };
    // The docs and lexical sections are deflated whole; natively the two are inflated and
    // decoded on two cores.
    let inflated = |raw: Cow<'a, [u8]>, kind: SectionKind| -> Result<Vec<u8>> {
        encoding::unwrap(&raw, kind.name())
    };
    let (docs_raw, lexical_raw) = (
        required(SectionKind::Docs)?,
        required(SectionKind::Lexical)?,
    );
    let docs = || -> Result<DocsSection> {
        let raw = inflated(docs_raw, SectionKind::Docs)?;
        let docs: DocsIn = decode_exact(&raw, "docs")?;
        let chunks = unpack(&docs.documents, 0, docs.chunks, budget_for(raw.len()))
            .map_err(Error::Corrupt)?;
        Ok(DocsSection::new(docs.documents, chunks))
    };
    let lexical = || -> Result<LexicalIndex> {
        decode_exact(&inflated(lexical_raw, SectionKind::Lexical)?, "lexical")
    };
    #[cfg(not(target_arch = "wasm32"))]
    let (docs, lexical) = rayon::join(docs, lexical);
    #[cfg(target_arch = "wasm32")]
    let (docs, lexical) = (docs(), lexical());
    let (docs, lexical) = (docs?, lexical?);
    let text = TextSection::decode(&required(SectionKind::Text)?)?;
    let vectors: Option<VectorIndex> = match (with_vectors, verify_unread) {
        (true, _) => match section(SectionKind::Vectors)? {
            Some(raw) => Some(crate::index::vector::decode(&raw)?),
            None => None,
        },
        (false, true) => {
            section(SectionKind::Vectors)?;
            None
        }
        (false, false) => None,
    };
    let access = access_section_of(section(SectionKind::Access)?, version)?;
    let bundle = Bundle {
        header,
        docs,
        lexical,
        text,
        vectors,
        access,
    };
    validate(&bundle, with_vectors)?;
    Ok(bundle)
}

/// A bundle's access section alone (`None`: no document is restricted), decoded and
/// checked against the header's document count: what `index-builder inspect` reports.
#[cfg(feature = "access")]
pub fn decode_access(bytes: &[u8]) -> Result<Option<AccessSection>> {
    let (version, header, raw) = verified_section(bytes, SectionKind::Access)?;
    let access = access_section_of(raw.map(Cow::Borrowed), version)?;
    if let Some(a) = &access {
        a.validate(header.counts.documents as usize)?;
    }
    Ok(access)
}

/// The access section's bytes decoded (checked in `validate`). Format 9 and older have none:
/// one in such a file is not what any builder wrote. A build without the `access` feature
/// cannot tell readers apart, so it refuses a bundle that restricts documents.
fn access_section_of(raw: Option<Cow<'_, [u8]>>, version: u32) -> Result<Option<AccessSection>> {
    match raw {
        None => Ok(None),
        #[cfg(feature = "access")]
        Some(_) if version < 10 => Err(Error::Corrupt(format!(
            "format {version} has no access section"
        ))),
        #[cfg(feature = "access")]
        Some(raw) => Ok(Some(decode_exact(&raw, "access")?)),
        #[cfg(not(feature = "access"))]
        Some(_) => {
            let _ = version;
            Err(Error::AccessRestricted)
        }
    }
}

/// Cross-checks that would otherwise become out-of-bounds panics at query time. Checksums
/// catch accidents; these catch a bundle that is well-formed but inconsistent.
fn validate(b: &Bundle, with_vectors: bool) -> Result<()> {
    let corrupt = |m: String| Err(Error::Corrupt(m));
    let n_docs = b.docs.documents.len();
    let n_chunks = b.docs.chunks.len();
    let c = &b.header.counts;
    if c.documents as usize != n_docs || c.chunks as usize != n_chunks {
        return corrupt(format!(
            "header counts {} documents / {} chunks, sections hold {n_docs} / {n_chunks}",
            c.documents, c.chunks
        ));
    }
    if b.text.len() != n_chunks {
        return corrupt(format!(
            "{} chunk texts for {n_chunks} chunks",
            b.text.len()
        ));
    }
    // Documents own consecutive, non-overlapping runs of chunks that cover them all, in
    // order (u64 sums: on wasm32 a usize sum of two u32s can wrap).
    let mut next = 0u64;
    for (i, doc) in b.docs.documents.iter().enumerate() {
        let end = doc.first_chunk as u64 + doc.chunk_count as u64;
        if doc.first_chunk as u64 != next || end > n_chunks as u64 {
            return corrupt(format!(
                "document {i} claims chunks {}..{end}, expected from {next} within {n_chunks}",
                doc.first_chunk
            ));
        }
        next = end;
        let end = end as usize;
        for (k, chunk) in b.docs.chunks[doc.first_chunk as usize..end]
            .iter()
            .enumerate()
        {
            if chunk.doc as usize != i || chunk.chunk_index as usize != k {
                return corrupt(format!(
                    "chunk {} of document {i} is out of place",
                    doc.first_chunk as usize + k
                ));
            }
        }
    }
    if next != n_chunks as u64 {
        return corrupt(format!("documents own {next} chunks of {n_chunks}"));
    }
    b.header.analyzer.validate()?;
    // A document path becomes a link on readers' pages.
    if let Some((doc, why)) = b
        .docs
        .documents
        .iter()
        .find_map(|d| Some((d, super::document_path_problem(&d.path)?)))
    {
        return corrupt(format!("document path {:?} {why}", doc.path));
    }
    // The tie-break (documentPath, then chunkIndex) is chunk order only because documents
    // are stored sorted by path; the builder guarantees it, a crafted bundle must too.
    if !b.docs.documents.windows(2).all(|w| w[0].path < w[1].path) {
        return corrupt("documents are not sorted by path".into());
    }
    if b.docs.chunks.iter().any(|ch| ch.doc as usize >= n_docs) {
        return corrupt("a chunk points past the document table".into());
    }
    if let Some(i) = b.docs.chunks.iter().position(|ch| {
        ch.location
            .page_span
            .is_some_and(|p| p.start == 0 || p.start > p.end)
    }) {
        return corrupt(format!("chunk {i} has an invalid page span"));
    }
    b.lexical.validate(n_chunks)?;
    if b.lexical.terms.len() != c.terms as usize {
        return corrupt(format!(
            "header counts {} terms, lexical section holds {}",
            c.terms,
            b.lexical.terms.len()
        ));
    }
    let has_vectors = b
        .header
        .sections
        .iter()
        .any(|s| s.kind == SectionKind::Vectors);
    match (has_vectors, &b.header.embedding) {
        (true, None) => return corrupt("vectors present but no embedding model recorded".into()),
        (false, Some(_)) => return corrupt("embedding model recorded but vectors missing".into()),
        _ => {}
    }
    if b.header.flags.hybrid != has_vectors {
        return corrupt("hybrid flag disagrees with the vectors section".into());
    }
    if let (true, Some(v), Some(model)) = (with_vectors, &b.vectors, &b.header.embedding) {
        v.validate(n_chunks, model.dims as usize)?;
    }
    #[cfg(feature = "access")]
    if let Some(access) = &b.access {
        access.validate(n_docs)?;
    }
    Ok(())
}
