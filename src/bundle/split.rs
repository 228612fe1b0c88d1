//! The split layout: one bundle cut into small files a browser fetches only as a query needs
//! them, so the first fulltext result costs kilobytes instead of the whole bundle.
//!
//! ```text
//! core.bin      magic b"DOCLSPLT", version u32 LE ([`SPLIT_VERSION`]), sha256(payload),
//!               payload = postcard(Core): the bundle's header, BM25's average chunk length,
//!               chunk count per document, facet keys per document, the first term and the
//!               term count of each lexical shard and the first document of each fragment shard
//! lex-N.bin     a range of terms with their postings; each posting also carries its chunk's
//!               length, so BM25 needs nothing else
//! frag-N.bin    a range of whole documents: their metadata, chunk metadata and chunk text
//! docs.bin      every document's metadata (read only by requests with filters)
//! voc-N.bin     the terms filed under correction keys that hash to N, each with its document
//!               frequency and the word suggestions write for it (read only for misspellings)
//! vec-N.bin     piece N of the bundle's vectors section, byte for byte (semantic and hybrid
//!               search read every piece; fulltext never does)
//! ```
//!
//! No file holds the whole bundle: every file stays far below a static host's per-file limit
//! (Cloudflare's 25 MiB), and the browser's hybrid mode downloads the vectors and the shards
//! its queries read instead of the text of every page.
//!
//! Every shard file is `sha256(payload)` followed by `postcard(ShardFile)`, which names the
//! bundle (`bundle_tag`, the first 8 bytes of the whole bundle's sha256) and the shard, so a
//! corrupt, truncated, misnamed or stale file is refused when it is added instead of
//! answering wrongly. The split is a pure function of the bundle's bytes: same bundle, same
//! files. Answers from a split bundle are byte-identical to the whole bundle's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::format::check_prefix;
use super::model::{Bundle, ChunkMeta, Document, FacetTable, Header, SectionKind, TextReader};
use super::packed::{budget_for, pack, unpack, PackedChunk};
use crate::encoding::{decode_exact, to_bytes};
use crate::error::{Error, Result};
use crate::index::lexical::{self, Varints};
use crate::index::spelling::{
    correction_keys, correction_shard, correction_shards, count_words, most_frequent,
    SURFACE_FORMS, SURFACE_SAMPLE,
};

pub const SPLIT_MAGIC: &[u8; 8] = b"DOCLSPLT";
/// Version of the split layout (`core.bin`'s); split files are cut again from their bundle
/// rather than read in an older layout. 3: lexical shards' term counts in the core. 5: each
/// term's surface form in `vocab.bin`. 6: the vocabulary in `voc-N.bin` shards by correction
/// key. 7: fragments' chunk metadata packed as in format 5's `docs` section. 8: the fragments'
/// first documents as differences. 9: the vectors section in `vec-N.bin` pieces instead of the
/// whole bundle in `bundle.bin`. 10: up to three surface forms a term in `voc-N.bin`. 11: a
/// shard names its bundle by the first 8 bytes of the bundle's sha256 ([`BUNDLE_TAG_BYTES`]),
/// not all 32. 12: documents say where their dates come from (bundle format 9).
pub const SPLIT_VERSION: u32 = 12;
pub const CORE_FILE: &str = "core.bin";

/// Most pieces a split's vectors section is cut into (and a core may claim).
pub const MAX_VECTOR_PIECES: u32 = 4096;

/// How big shards grow: a shard closes once its content reaches this many encoded bytes (one
/// term's postings or one document may exceed it alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSizes {
    pub lexical: usize,
    pub fragment: usize,
    /// Terms per vocabulary shard, on average (at most [`MAX_VOCAB_SHARDS`] shards). Each term
    /// is filed under up to 4 keys and a misspelt word reads up to 4 shards (8 when its stem
    /// and its typed form begin differently): with cpp-docs' 48,278 terms, 48 a shard (1,006
    /// shards) costs the ten misspelt queries of `tests/bench/web/misspelt.txt` a median 1.3 KB
    /// more, cold, than 24 a shard did, and halves the vocabulary's file count.
    pub vocabulary: usize,
    /// Bytes of the vectors section per `vec-N.bin` piece (the last one holds the rest).
    pub vectors: usize,
}

/// Most vocabulary shards a split has (and a core may claim).
pub const MAX_VOCAB_SHARDS: u32 = 2048;

impl Default for ShardSizes {
    /// Measured on the 10k-document cpp-docs bundle (`examples/split_cost`, brotli 11, each
    /// query on a fresh engine: a cold visitor's data, core included), over `make bench-web`'s
    /// 40 queries (`queries.txt`) and ten misspelt ones (`misspelt.txt`, both in
    /// `tests/bench/web`; the first is bench-web's misspelt first query):
    ///
    /// | format, lexical + fragment KB, terms per vocabulary shard | files | median cold, plain / misspelt | first misspelt |
    /// |---|---|---|---|
    /// | 4, 8 + 4, 24 (split layout 6) | 7,028 | 73.1 / 85.9 KB | 81.3 KB |
    /// | 4, 8 + 4, 48 | 6,022 | 73.2 / 87.1 KB | 84.5 KB |
    /// | 4, 8 + 6, 64 | 4,847 | 77.9 / 93.8 KB | 93.0 KB |
    /// | 4, 8 + 8, 48 | 4,541 | 78.9 / 88.0 KB | 87.4 KB |
    /// | 4, 8 + 12, 24 | 4,858 | 83.9 / — | — |
    /// | 4, 16 + 4, 24 | 6,759 | 87.8 / — | — |
    /// | 5, 8 + 4, 48 | 5,687 | 72.0 / 87.1 KB | 83.2 KB |
    /// | **5, 8 + 6, 48** | **4,809** | **74.5 / 90.3 KB** | **83.7 KB** |
    /// | 5, 8 + 6, 64 | 4,558 | 74.5 / 91.7 KB | 89.8 KB |
    /// | 5, 8 + 8, 48 | 4,270 | 78.2 / 91.9 KB | 88.7 KB |
    /// | 5, 8 + 8, 32 | 4,773 | 78.2 / 90.3 KB | 88.2 KB |
    /// | 5, 6 + 8, 48 | 4,421 | 76.6 / 90.0 KB | 90.0 KB |
    ///
    /// Cloudflare serves at most 20,000 asset files (Free) and the collection should fit in
    /// 5,000; a fragment holds whole documents, so most cpp-docs pages (10.9 KB on average)
    /// were a fragment alone at 4 KB. With 8 KB fragments bench-web's misspelt first query
    /// read 205.5 KB in Chromium, past its 200 KB goal; at 6 KB it read 200.7 KB, and 198.7 KB
    /// once split version 8 wrote the core's fragment starts as steps (core.bin 16.2 → 14.3 KB
    /// brotli); the first fulltext result 189.6 KB.
    fn default() -> Self {
        ShardSizes {
            lexical: 8 * 1024,
            fragment: 6 * 1024,
            vocabulary: 48,
            // cpp-docs' 29.6 MB of vectors in 8 files a browser fetches in parallel, each far
            // below a static host's 25 MiB per file.
            vectors: 4 * 1024 * 1024,
        }
    }
}

/// What a host loads first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Core {
    pub bundle_id: [u8; 32],
    /// Size of the whole bundle the files were cut from.
    pub bundle_bytes: u64,
    pub header: Header,
    /// BM25's average chunk length, as [`lexical::average_length`] computes it.
    pub avg_chunk_len: f32,
    /// Chunk count of each document, in document (= path) order.
    pub doc_chunks: Vec<u32>,
    pub doc_types: Vec<String>,
    pub months: Vec<String>,
    /// Per document: index into `doc_types`, and 1 + index into `months` (0: no date).
    pub doc_facets: Vec<(u32, u32)>,
    /// First term of each lexical shard; shard `i` holds terms from `lex_shards[i]` up to
    /// (not including) `lex_shards[i + 1]`.
    pub lex_shards: Vec<String>,
    /// Number of terms in each lexical shard (how many terms a prefix covers, known before
    /// its shards are fetched).
    pub lex_shard_terms: Vec<u32>,
    /// First document of each fragment shard (written as the differences between them:
    /// small numbers, about half the bytes once compressed, on a file every query reads).
    #[serde(with = "deltas")]
    pub frag_shards: Vec<u32>,
    /// Number of vocabulary shards (`voc-N.bin`, N below it).
    pub vocab_shards: u32,
    /// Number of pieces of the vectors section (`vec-N.bin`, N below it; 0: no vectors). The
    /// header's section table gives their total length and checksum.
    pub vector_pieces: u32,
}

/// An increasing list written as its first value and the steps between values. Reading
/// adds them back up, wrapping: a list that did not increase fails [`SplitBundle`]'s
/// strictly-increasing check when the core is opened, so it needs no check of its own.
mod deltas {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(list: &[u32], s: S) -> Result<S::Ok, S::Error> {
        let steps: Vec<u32> = crate::index::lexical::deltas(list.iter().copied()).collect();
        steps.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
        let steps = Vec::<u32>::deserialize(d)?;
        Ok(crate::index::lexical::chunks(steps.into_iter()).collect())
    }
}

/// One file of a split bundle besides the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ShardId {
    Lexical(u32),
    Fragment(u32),
    Documents,
    Vocabulary(u32),
    Vectors(u32),
}

impl ShardId {
    pub fn file_name(self) -> String {
        match self {
            ShardId::Lexical(i) => format!("lex-{i}.bin"),
            ShardId::Fragment(i) => format!("frag-{i}.bin"),
            ShardId::Documents => "docs.bin".into(),
            ShardId::Vocabulary(i) => format!("voc-{i}.bin"),
            ShardId::Vectors(i) => format!("vec-{i}.bin"),
        }
    }

    pub fn from_file_name(name: &str) -> Option<ShardId> {
        let numbered = |prefix: &str| {
            name.strip_prefix(prefix)?
                .strip_suffix(".bin")?
                .parse::<u32>()
                .ok()
        };
        match name {
            "docs.bin" => Some(ShardId::Documents),
            _ => numbered("lex-")
                .map(ShardId::Lexical)
                .or_else(|| numbered("frag-").map(ShardId::Fragment))
                .or_else(|| numbered("voc-").map(ShardId::Vocabulary))
                .or_else(|| numbered("vec-").map(ShardId::Vectors)),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LexShard {
    pub terms: Vec<String>,
    pub postings: Vec<ShardPostings>,
}

/// [`lexical::Postings`] plus each posting's chunk length (varints in memory too: a Worker
/// holds many shards).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardPostings {
    pub chunk_deltas: Varints,
    pub tfs: Varints,
    pub lens: Varints,
}

impl ShardPostings {
    /// (chunk, weighted tf, chunk length) in chunk order.
    pub fn iter(&self) -> ShardPostingsIter<'_> {
        ShardPostingsIter {
            chunk: 0,
            deltas: self.chunk_deltas.iter(),
            tfs: self.tfs.iter(),
            lens: self.lens.iter(),
        }
    }
}

/// [`ShardPostings::iter`]: one step reads the three lists (a plain struct rather than
/// `zip`s, which the size-optimized lexical wasm build would call through per posting).
pub struct ShardPostingsIter<'a> {
    chunk: u32,
    deltas: lexical::VarintIter<'a>,
    tfs: lexical::VarintIter<'a>,
    lens: lexical::VarintIter<'a>,
}

impl Iterator for ShardPostingsIter<'_> {
    type Item = (u32, u32, u32);

    #[inline(always)]
    fn next(&mut self) -> Option<(u32, u32, u32)> {
        // Wrapping, as `lexical::chunks`: checked increasing when the shard was added.
        self.chunk = self.chunk.wrapping_add(self.deltas.next()?);
        Some((self.chunk, self.tfs.next()?, self.lens.next()?))
    }
}

/// A fragment shard, read: a run of documents with their chunks' metadata and text.
#[derive(Debug, Clone, PartialEq)]
pub struct FragShard {
    pub documents: Vec<Document>,
    pub chunks: Vec<ChunkMeta>,
    pub texts: Vec<String>,
}

/// A fragment shard as written: the chunks packed as in the bundle's `docs` section.
#[derive(Serialize)]
struct FragShardOut<'a> {
    documents: &'a [Document],
    chunks: Vec<PackedChunk<'a>>,
    texts: Vec<String>,
}

#[derive(Deserialize)]
struct FragShardIn {
    documents: Vec<Document>,
    chunks: Vec<PackedChunk<'static>>,
    texts: Vec<String>,
}

/// One vocabulary shard: the terms filed under a correction key of its number
/// ([`crate::index::spelling::correction_keys`]), in term order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vocabulary {
    pub terms: Vec<String>,
    pub dfs: Vec<u32>,
    /// How many surface forms each term has in `surfaces` (at most
    /// [`crate::index::spelling::SURFACE_FORMS`]).
    pub forms: Vec<u8>,
    /// The terms' surface forms, the words suggestions write for them
    /// ([`surface_forms`]), term after term (`forms` says how many
    /// each), the most frequent first; each as the number of the term's leading bytes it keeps
    /// and the rest (`configur` → `configuration`: 8, `ation`). Without them a misspelt first
    /// query fetched the chunks they are read from.
    pub surfaces: Vec<(u8, String)>,
}

impl Vocabulary {
    /// Term `i`'s surface forms (none for `i` out of range).
    pub fn surfaces(&self, i: usize) -> Vec<String> {
        let (Some(&n), Some(term)) = (self.forms.get(i), self.terms.get(i)) else {
            return Vec::new();
        };
        let first: usize = self.forms[..i].iter().map(|&n| n as usize).sum();
        let forms = self
            .surfaces
            .get(first..first + n as usize)
            .unwrap_or_default();
        forms
            .iter()
            .filter_map(|(keep, rest)| Some(format!("{}{rest}", term.get(..*keep as usize)?)))
            .collect()
    }
}

/// `surface` as [`Vocabulary::surfaces`] stores it against `term`.
/// Every term's surface forms, in term order, as the query side's `suggest::surfaces` finds them over a whole bundle
/// (none where no word of its sampled chunks makes the term). One pass over the chunks: a
/// chunk is read for the terms whose first [`SURFACE_SAMPLE`] postings hold it.
pub fn surface_forms(bundle: &crate::bundle::Bundle) -> crate::error::Result<Vec<Vec<String>>> {
    let lexical = &bundle.lexical;
    let analyzer = crate::analyze::Analyzer::for_version(bundle.header.analyzer.version);
    // Per chunk, the terms it is sampled for.
    let mut sampled: Vec<Vec<u32>> = vec![Vec::new(); bundle.docs.chunks.len()];
    for (term, postings) in lexical.postings.iter().enumerate() {
        for (c, _) in postings.iter().take(SURFACE_SAMPLE) {
            if let Some(list) = sampled.get_mut(c as usize) {
                list.push(term as u32);
            }
        }
    }
    let mut counts: Vec<BTreeMap<String, usize>> = vec![BTreeMap::new(); lexical.terms.len()];
    // In chunk order, each text block inflated once and not kept.
    let mut text = TextReader::new(&bundle.text);
    for (c, terms) in sampled.iter().enumerate().filter(|(_, t)| !t.is_empty()) {
        let meta = &bundle.docs.chunks[c];
        let Some(doc) = bundle.docs.documents.get(meta.doc as usize) else {
            continue;
        };
        let id = |term: &str| {
            lexical
                .term_id(term)
                .filter(|i| terms.contains(&(*i as u32)))
        };
        count_words(
            &analyzer,
            &[text.get(c)?, &doc.title, &meta.section_path.join(" ")],
            id,
            |i, word| *counts[i].entry(word).or_default() += 1,
        );
    }
    Ok(counts.into_iter().map(most_frequent).collect())
}

fn surface_entry(term: &str, surface: &str) -> (u8, String) {
    let mut keep = term
        .char_indices()
        .map(|(i, c)| i + c.len_utf8())
        .take_while(|&end| surface.as_bytes().get(..end) == term.as_bytes().get(..end))
        .last()
        .unwrap_or(0)
        .min(u8::MAX as usize);
    while !term.is_char_boundary(keep) {
        keep -= 1;
    }
    (keep as u8, surface[keep..].to_owned())
}

/// How much of the bundle's sha256 a shard carries to name its bundle. The tag tells a stale
/// file (cut from another bundle: a deploy that mixed two versions) from the right one; its
/// own checksum, a full sha256, is what catches corruption. Two bundles share a tag by
/// accident with odds of 2^-64. Every shard file a cold query reads carries it, incompressible:
/// in bench-web's misspelt first query (18 shard files) the whole 32-byte sha256 was 0.6 KB,
/// the tag is 0.14 KB.
pub const BUNDLE_TAG_BYTES: usize = 8;

type BundleTag = [u8; BUNDLE_TAG_BYTES];

fn bundle_tag(bundle_id: &[u8; 32]) -> BundleTag {
    let mut tag = [0; BUNDLE_TAG_BYTES];
    tag.copy_from_slice(&bundle_id[..BUNDLE_TAG_BYTES]);
    tag
}

#[derive(Serialize, Deserialize)]
struct ShardFile<T> {
    bundle_tag: BundleTag,
    shard: ShardId,
    body: T,
}

fn shard_file<T: Serialize>(bundle_tag: BundleTag, shard: ShardId, body: T) -> Result<Vec<u8>> {
    let payload = to_bytes(
        &ShardFile {
            bundle_tag,
            shard,
            body,
        },
        &shard.file_name(),
    )?;
    let mut out = Sha256::digest(&payload).to_vec();
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Cuts a bundle (decoded from `bytes`) into its split files, `(file name, bytes)` in a fixed
/// order, `core.bin` first.
pub fn split(bundle: &Bundle, bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    split_with(bundle, bytes, ShardSizes::default())
}

/// [`split`] with other shard sizes (tests cut tiny shards to cross every boundary).
pub fn split_with(
    bundle: &Bundle,
    bytes: &[u8],
    sizes: ShardSizes,
) -> Result<Vec<(String, Vec<u8>)>> {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    split_into(bundle, bytes, sizes, |name, file| {
        files.push((name, file));
        Ok(())
    })?;
    // `core.bin` comes last from `split_into`; first here.
    files.rotate_right(1);
    Ok(files)
}

/// [`split_with`], handing each file to `sink` as soon as it is made (`core.bin` last, as it
/// lists the rest), so a writer need not hold them all: at 100,000 documents they are 650 MB.
pub fn split_into(
    bundle: &Bundle,
    bytes: &[u8],
    sizes: ShardSizes,
    mut sink: impl FnMut(String, Vec<u8>) -> Result<()>,
) -> Result<()> {
    let bundle_id: [u8; 32] = Sha256::digest(bytes).into();
    let tag = bundle_tag(&bundle_id);
    let mut add = |shard: ShardId, file: Vec<u8>| sink(shard.file_name(), file);

    // Lexical shards: term ranges of about LEXICAL_SHARD_BYTES.
    let lengths = &bundle.lexical.chunk_lengths;
    let mut lex_shards = Vec::new();
    let mut current = LexShard {
        terms: Vec::new(),
        postings: Vec::new(),
    };
    let mut size = 0;
    let mut lex_shard_terms = Vec::new();
    let mut flush = |current: &mut LexShard, lex_shards: &mut Vec<String>| -> Result<()> {
        let shard = ShardId::Lexical(lex_shards.len() as u32);
        lex_shards.push(current.terms[0].clone());
        lex_shard_terms.push(current.terms.len() as u32);
        let body = std::mem::replace(
            current,
            LexShard {
                terms: Vec::new(),
                postings: Vec::new(),
            },
        );
        add(shard, shard_file(tag, shard, body)?)
    };
    for (term, p) in bundle.lexical.terms.iter().zip(&bundle.lexical.postings) {
        let postings = ShardPostings {
            chunk_deltas: p.chunk_deltas.clone(),
            tfs: p.tfs.clone(),
            lens: p.iter().map(|(c, _)| lengths[c as usize]).collect(),
        };
        size += term.len() + to_bytes(&postings, "postings")?.len();
        current.terms.push(term.clone());
        current.postings.push(postings);
        if size >= sizes.lexical {
            flush(&mut current, &mut lex_shards)?;
            size = 0;
        }
    }
    if !current.terms.is_empty() {
        flush(&mut current, &mut lex_shards)?;
    }

    // Fragment shards: runs of whole documents of about FRAGMENT_SHARD_BYTES.
    let docs = &bundle.docs;
    let mut frag_shards = Vec::new();
    let mut start = 0usize;
    let mut size = 0;
    // Each document's chunks are packed once: a shard's are its documents' runs back to back
    // (packing starts afresh at every document).
    let mut packed = Vec::new();
    // Texts read in order, each block inflated once and let go (kept, the blocks of 2.24M
    // chunks were over 1 GB of the split's peak).
    let mut text = TextReader::new(&bundle.text);
    let mut texts = Vec::new();
    for (d, doc) in docs.documents.iter().enumerate() {
        let chunks = doc.first_chunk as usize..(doc.first_chunk + doc.chunk_count) as usize;
        let own = pack(std::slice::from_ref(doc), &docs.chunks[chunks.clone()])?;
        let own_texts = text.range(chunks)?;
        size += to_bytes(doc, "document")?.len()
            + to_bytes(&own, "chunks")?.len()
            + to_bytes(&own_texts, "texts")?.len();
        packed.extend(own);
        texts.extend(own_texts);
        if size >= sizes.fragment || d + 1 == docs.documents.len() {
            let shard = ShardId::Fragment(frag_shards.len() as u32);
            frag_shards.push(start as u32);
            let body = FragShardOut {
                documents: &docs.documents[start..d + 1],
                chunks: std::mem::take(&mut packed),
                texts: std::mem::take(&mut texts),
            };
            add(shard, shard_file(tag, shard, body)?)?;
            start = d + 1;
            size = 0;
        }
    }

    add(
        ShardId::Documents,
        shard_file(tag, ShardId::Documents, &docs.documents)?,
    )?;
    // Vocabulary shards: each term under every correction key it has, so a misspelt word
    // finds each of its corrections in one of its own keys' shards.
    let terms = &bundle.lexical.terms;
    let vocab_shards = terms
        .len()
        .div_ceil(sizes.vocabulary.max(1))
        .clamp(1, MAX_VOCAB_SHARDS as usize) as u32;
    let surfaces = surface_forms(bundle)?;
    let mut vocabulary: Vec<Vocabulary> = (0..vocab_shards)
        .map(|_| Vocabulary {
            terms: Vec::new(),
            dfs: Vec::new(),
            forms: Vec::new(),
            surfaces: Vec::new(),
        })
        .collect();
    for (i, term) in terms.iter().enumerate() {
        for shard in correction_shards(&[term], vocab_shards) {
            let v = &mut vocabulary[shard as usize];
            v.terms.push(term.clone());
            v.dfs.push(bundle.lexical.postings[i].tfs.len() as u32);
            v.forms.push(surfaces[i].len() as u8);
            v.surfaces
                .extend(surfaces[i].iter().map(|form| surface_entry(term, form)));
        }
    }
    for (i, body) in vocabulary.into_iter().enumerate() {
        let shard = ShardId::Vocabulary(i as u32);
        add(shard, shard_file(tag, shard, body)?)?;
    }

    let FacetTable {
        doc_types,
        months,
        doc_facets,
    } = FacetTable::of(&docs.documents);
    // The vectors section as the bundle holds it, in pieces: a host that has them all decodes
    // and validates exactly what the whole bundle would.
    let (header, body_start) = super::format::decode_header(bytes)?;
    let mut vector_pieces = 0u32;
    if let Some(entry) = vectors_entry(&header) {
        let section = super::format::section_bytes(bytes, body_start, entry)?;
        for piece in section.chunks(sizes.vectors.max(1)) {
            let shard = ShardId::Vectors(vector_pieces);
            add(shard, shard_file(tag, shard, piece)?)?;
            vector_pieces += 1;
        }
        if vector_pieces > MAX_VECTOR_PIECES {
            return Err(Error::Encode(format!(
                "the vectors section would take {vector_pieces} files, more than \
                 {MAX_VECTOR_PIECES}: cut larger pieces"
            )));
        }
    }

    let core = Core {
        bundle_id,
        bundle_bytes: bytes.len() as u64,
        header: bundle.header.clone(),
        avg_chunk_len: lexical::average_length(lengths),
        doc_chunks: docs.documents.iter().map(|d| d.chunk_count).collect(),
        doc_types,
        months,
        doc_facets,
        lex_shards,
        lex_shard_terms,
        frag_shards,
        vocab_shards,
        vector_pieces,
    };
    let payload = to_bytes(&core, "core")?;
    let mut core_file = SPLIT_MAGIC.to_vec();
    core_file.extend_from_slice(&SPLIT_VERSION.to_le_bytes());
    core_file.extend_from_slice(&Sha256::digest(&payload));
    core_file.extend_from_slice(&payload);
    sink(CORE_FILE.into(), core_file)
}

/// The header's entry for the vectors section, if the bundle has one.
fn vectors_entry(header: &Header) -> Option<&super::model::SectionEntry> {
    header
        .sections
        .iter()
        .find(|e| e.kind == SectionKind::Vectors)
}

/// A split bundle as far as it has been loaded: the core plus whichever shards were added.
#[derive(Debug)]
pub struct SplitBundle {
    pub core: Core,
    /// `first_chunk[d]` is document `d`'s first chunk; one extra entry holds the chunk count.
    first_chunk: Vec<u32>,
    /// Loaded shards by number (a `Vec`, not a map: the lexical wasm build pays for every
    /// generic collection it instantiates).
    lexical: Vec<Option<LexShard>>,
    fragments: Vec<Option<FragShard>>,
    documents: Option<Vec<Document>>,
    vocabulary: Vec<Option<Vocabulary>>,
    /// Pieces of the vectors section added so far (dropped once all are in and decoded).
    #[cfg(feature = "vectors")]
    vector_pieces: Vec<Piece>,
    /// The section's bytes from its start, as far as the pieces have come in order: a piece
    /// that follows them is added here at once, one that comes early is held until then.
    #[cfg(feature = "vectors")]
    vector_prefix: Vec<u8>,
    /// The decoded vectors, once every piece is in, and each chunk's position among them.
    #[cfg(feature = "vectors")]
    vectors: Option<Box<(crate::index::vector::VectorIndex, Vec<u32>)>>,
}

/// Where one piece of a split bundle's vectors section is.
#[cfg(feature = "vectors")]
#[derive(Debug)]
enum Piece {
    Missing,
    /// Come ahead of a piece before it: its bytes, until that one is in.
    Held(Vec<u8>),
    /// In [`SplitBundle::vector_prefix`].
    InSection,
}

#[cfg(feature = "vectors")]
impl Piece {
    fn len(&self) -> usize {
        match self {
            Piece::Held(bytes) => bytes.len(),
            _ => 0,
        }
    }
}

impl SplitBundle {
    /// Reads and verifies `core.bin`.
    pub fn open(bytes: &[u8]) -> Result<SplitBundle> {
        const PREFIX: usize = 8 + 4 + 32;
        // Split files are cut from a bundle and cut again with it; only the current layout
        // of their shards is read.
        check_prefix(bytes, SPLIT_MAGIC, PREFIX, (SPLIT_VERSION, SPLIT_VERSION))?;
        let payload = &bytes[PREFIX..];
        if Sha256::digest(payload).as_slice() != &bytes[12..44] {
            return Err(Error::ChecksumMismatch {
                part: CORE_FILE.into(),
            });
        }
        let core: Core = decode_exact(payload, CORE_FILE)?;
        let corrupt = |m: &str| Err(Error::Corrupt(format!("{CORE_FILE}: {m}")));
        core.header.analyzer.validate()?;
        if !(core.avg_chunk_len.is_finite() && core.avg_chunk_len >= 1.0) {
            return corrupt("the average chunk length is not a length");
        }
        let counts = core.header.counts;
        let n_docs = core.doc_chunks.len();
        if n_docs != counts.documents as usize || core.doc_facets.len() != n_docs {
            return corrupt("document tables disagree with the header's counts");
        }
        let mut first_chunk = Vec::with_capacity(n_docs + 1);
        let mut total = 0u64;
        for &c in &core.doc_chunks {
            first_chunk.push(total as u32);
            total += c as u64;
        }
        if total != counts.chunks as u64 {
            return corrupt("chunk counts per document do not add up to the header's");
        }
        first_chunk.push(total as u32);
        let facets_ok = core.doc_facets.iter().all(|&(t, m)| {
            (t as usize) < core.doc_types.len() && (m as usize) <= core.months.len()
        });
        if !facets_ok {
            return corrupt("a facet key points past its table");
        }
        if core.lex_shard_terms.len() != core.lex_shards.len() || core.lex_shard_terms.contains(&0)
        {
            return corrupt("lexical shard term counts disagree with the shards");
        }
        if !core.lex_shards.windows(2).all(|w| w[0] < w[1])
            || !core.frag_shards.windows(2).all(|w| w[0] < w[1])
            || (n_docs > 0 && core.frag_shards.first() != Some(&0))
            || core
                .frag_shards
                .last()
                .is_some_and(|&d| d as usize >= n_docs)
        {
            return corrupt("shard boundaries are out of order");
        }
        if !(1..=MAX_VOCAB_SHARDS).contains(&core.vocab_shards) {
            return corrupt("the vocabulary shard count is out of range");
        }
        let vectors_len = vectors_entry(&core.header).map(|e| e.len);
        let pieces_fit = match vectors_len {
            None => core.vector_pieces == 0,
            Some(len) => {
                (1..=MAX_VECTOR_PIECES).contains(&core.vector_pieces)
                    && u64::from(core.vector_pieces) <= len.max(1)
            }
        };
        if !pieces_fit || core.header.flags.hybrid != vectors_len.is_some() {
            return corrupt("the vector piece count disagrees with the header");
        }
        let lexical = (0..core.lex_shards.len()).map(|_| None).collect();
        let fragments = (0..core.frag_shards.len()).map(|_| None).collect();
        Ok(SplitBundle {
            vocabulary: (0..core.vocab_shards).map(|_| None).collect(),
            #[cfg(feature = "vectors")]
            vector_pieces: (0..core.vector_pieces).map(|_| Piece::Missing).collect(),
            #[cfg(feature = "vectors")]
            vector_prefix: Vec::new(),
            #[cfg(feature = "vectors")]
            vectors: None,
            core,
            first_chunk,
            lexical,
            fragments,
            documents: None,
        })
    }

    /// Drops every lexical, fragment, documents and vocabulary shard added so far (the core
    /// and the vectors stay): a long-lived host bounds its memory so, and searches name the
    /// shards they need again.
    pub fn forget_shards(&mut self) {
        self.lexical.iter_mut().for_each(|s| *s = None);
        self.fragments.iter_mut().for_each(|s| *s = None);
        self.vocabulary.iter_mut().for_each(|s| *s = None);
        self.documents = None;
    }

    /// Verifies and installs one shard file, named as [`ShardId::file_name`] names it.
    pub fn add(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        let shard = ShardId::from_file_name(name)
            .ok_or_else(|| Error::Corrupt(format!("{name:?} is not a file of a split bundle")))?;
        match shard {
            ShardId::Lexical(i) => {
                let body: LexShard = self.open_shard(shard, bytes)?;
                self.check_lexical(i, &body)?;
                self.lexical[i as usize] = Some(body);
            }
            ShardId::Fragment(i) => {
                let FragShardIn {
                    documents,
                    chunks,
                    texts,
                } = self.open_shard(shard, bytes)?;
                let first_doc = self.fragment_docs(i).map_or(0, |d| d.start as u32);
                let chunks = unpack(&documents, first_doc, chunks, budget_for(bytes.len()))
                    .map_err(|e| self.corrupt(shard, &e))?;
                let body = FragShard {
                    documents,
                    chunks,
                    texts,
                };
                self.check_fragment(i, &body)?;
                self.fragments[i as usize] = Some(body);
            }
            ShardId::Documents => {
                let body: Vec<Document> = self.open_shard(shard, bytes)?;
                let fits = body.len() == self.n_docs()
                    && body
                        .iter()
                        .enumerate()
                        .all(|(d, doc)| self.doc_fits(d, doc));
                if !fits {
                    return Err(self.corrupt(shard, "documents disagree with the core"));
                }
                self.documents = Some(body);
            }
            ShardId::Vocabulary(i) => {
                if i >= self.core.vocab_shards {
                    return Err(self.corrupt(shard, "is not a shard of this split"));
                }
                let body: Vocabulary = self.open_shard(shard, bytes)?;
                let n = self.core.vocab_shards;
                let fits = body.terms.len() == body.dfs.len()
                    && body.terms.len() == body.forms.len()
                    && body.forms.iter().all(|&n| n as usize <= SURFACE_FORMS)
                    && body.forms.iter().map(|&n| n as usize).sum::<usize>() == body.surfaces.len()
                    && {
                        let mut forms = body.surfaces.iter();
                        body.terms.iter().zip(&body.forms).all(|(t, &n)| {
                            forms
                                .by_ref()
                                .take(n as usize)
                                .all(|(keep, _)| t.is_char_boundary(*keep as usize))
                        })
                    }
                    && body.terms.windows(2).all(|w| w[0] < w[1])
                    && body.terms.iter().all(|t| {
                        correction_keys(t)
                            .iter()
                            .any(|k| correction_shard(k, n) == i)
                    });
                if !fits {
                    return Err(self.corrupt(shard, "malformed term list"));
                }
                self.vocabulary[i as usize] = Some(body);
            }
            #[cfg(feature = "vectors")]
            ShardId::Vectors(i) => self.add_vector_piece(i, bytes)?,
            // The first-paint build has no vector search: its hosts never fetch vectors.
            #[cfg(not(feature = "vectors"))]
            ShardId::Vectors(_) => return Err(self.corrupt(shard, "is not read by this build")),
        }
        Ok(())
    }

    /// Installs piece `i` of the vectors section; the last one to arrive decodes them all,
    /// with the whole bundle's checks (the section's checksum, the graph's bounds, one vector
    /// per chunk of the model's width).
    #[cfg(feature = "vectors")]
    fn add_vector_piece(&mut self, i: u32, bytes: &[u8]) -> Result<()> {
        let shard = ShardId::Vectors(i);
        let entry = vectors_entry(&self.core.header).cloned();
        let (Some(entry), Some(slot)) = (entry, self.vector_pieces.get(i as usize)) else {
            return Err(self.corrupt(shard, "is not a file of this split"));
        };
        if !matches!(slot, Piece::Missing) || self.vectors.is_some() {
            return Ok(());
        }
        // Borrowed from `bytes` (postcard lays a byte string out as it is) and copied once:
        // onto the section's bytes when the pieces before it are in (as a reader that reads
        // them in order always finds), else held until they are. 153 MB of pieces at 2.24M
        // vectors had been copied out, then all again into one buffer.
        let body: &[u8] = self.open_shard(shard, bytes)?;
        let held: usize = self.vector_pieces.iter().map(Piece::len).sum();
        let arrived = self.vector_prefix.len() + held + body.len();
        if arrived as u64 > entry.len {
            return Err(self.corrupt(shard, "the pieces outgrow the vectors section"));
        }
        let next = self
            .vector_pieces
            .iter()
            .position(|p| !matches!(p, Piece::InSection))
            .unwrap_or(self.vector_pieces.len());
        if i as usize == next {
            self.vector_prefix.extend_from_slice(body);
            self.vector_pieces[next] = Piece::InSection;
            for piece in &mut self.vector_pieces[next + 1..] {
                match std::mem::replace(piece, Piece::InSection) {
                    Piece::Held(bytes) => self.vector_prefix.extend_from_slice(&bytes),
                    other => {
                        *piece = other;
                        break;
                    }
                }
            }
        } else {
            self.vector_pieces[i as usize] = Piece::Held(body.to_vec());
        }
        if self
            .vector_pieces
            .iter()
            .any(|p| !matches!(p, Piece::InSection))
        {
            return Ok(());
        }
        // Whatever the outcome, the pieces are not kept: a bad set is fetched again. (Sized
        // by what arrived, never by the core's claim.)
        let section = std::mem::take(&mut self.vector_prefix);
        self.vector_pieces.fill_with(|| Piece::Missing);
        super::format::verify_section(&section, &entry)?;
        use crate::index::vector::validate_graph_bytes;
        validate_graph_bytes(&section)?;
        self.install_vectors(crate::index::vector::decode(&section)?)
    }

    /// Installs vectors decoded elsewhere (a native host's cache of them, keyed by the
    /// section's checksum), checked as the pieces' are: one per chunk, of the model's width.
    /// Pieces added before are dropped.
    #[cfg(feature = "vectors")]
    pub fn install_vectors(&mut self, vectors: crate::index::vector::VectorIndex) -> Result<()> {
        let dims = self.core.header.embedding.as_ref().map_or(0, |m| m.dims);
        vectors.validate(self.n_chunks(), dims as usize)?;
        let positions = vectors.positions(self.n_chunks());
        self.vector_prefix = Vec::new();
        self.vector_pieces.fill_with(|| Piece::Missing);
        self.vectors = Some(Box::new((vectors, positions)));
        Ok(())
    }

    /// The vectors and each chunk's position among them (`u32::MAX`: none), or the pieces
    /// still missing.
    #[cfg(feature = "vectors")]
    #[allow(clippy::type_complexity)]
    pub fn vectors(
        &self,
    ) -> std::result::Result<(&crate::index::vector::VectorIndex, &[u32]), Vec<ShardId>> {
        match self.vectors.as_deref() {
            Some((v, positions)) => Ok((v, positions)),
            None => Err(self.vector_files()),
        }
    }

    /// The `vec-N.bin` pieces not added yet (none once the vectors are decoded).
    #[cfg(feature = "vectors")]
    pub fn vector_files(&self) -> Vec<ShardId> {
        if self.vectors.is_some() {
            return Vec::new();
        }
        (0..self.vector_pieces.len() as u32)
            .filter(|&i| matches!(self.vector_pieces[i as usize], Piece::Missing))
            .map(ShardId::Vectors)
            .collect()
    }

    fn corrupt(&self, shard: ShardId, m: &str) -> Error {
        Error::Corrupt(format!("{}: {m}", shard.file_name()))
    }

    fn open_shard<'a, T: Deserialize<'a>>(&self, shard: ShardId, bytes: &'a [u8]) -> Result<T> {
        let name = shard.file_name();
        if bytes.len() < 32 {
            return Err(Error::BundleTruncated(format!(
                "{name} has {} bytes, less than its checksum",
                bytes.len()
            )));
        }
        let (sum, payload) = bytes.split_at(32);
        if Sha256::digest(payload).as_slice() != sum {
            return Err(Error::ChecksumMismatch { part: name });
        }
        let file: ShardFile<T> = decode_exact(payload, &name)?;
        if file.bundle_tag != bundle_tag(&self.core.bundle_id) {
            return Err(self.corrupt(shard, "belongs to a different bundle than core.bin"));
        }
        if file.shard != shard {
            return Err(self.corrupt(shard, "holds a different shard than its name says"));
        }
        Ok(file.body)
    }

    fn check_lexical(&self, i: u32, body: &LexShard) -> Result<()> {
        let shard = ShardId::Lexical(i);
        let (Some(first), next) = (
            self.core.lex_shards.get(i as usize),
            self.core.lex_shards.get(i as usize + 1),
        ) else {
            return Err(self.corrupt(shard, "no such shard in core.bin"));
        };
        let in_range = body.terms.first() == Some(first)
            && body.terms.windows(2).all(|w| w[0] < w[1])
            && next.is_none_or(|n| body.terms.last().is_some_and(|l| l < n));
        let counted = self.core.lex_shard_terms.get(i as usize) == Some(&(body.terms.len() as u32));
        if !in_range || !counted || body.terms.len() != body.postings.len() {
            return Err(self.corrupt(shard, "terms outside the shard's range"));
        }
        for p in &body.postings {
            let n = p.tfs.len();
            if n == 0 || p.chunk_deltas.len() != n || p.lens.len() != n {
                return Err(self.corrupt(shard, "malformed postings"));
            }
            if let Err(why) = lexical::check_deltas(p.chunk_deltas.iter(), self.n_chunks()) {
                return Err(self.corrupt(shard, &format!("postings {why}")));
            }
        }
        Ok(())
    }

    fn check_fragment(&self, i: u32, body: &FragShard) -> Result<()> {
        let shard = ShardId::Fragment(i);
        let Some(docs) = self.fragment_docs(i) else {
            return Err(self.corrupt(shard, "no such shard in core.bin"));
        };
        let chunks = self.first_chunk[docs.start] as usize..self.first_chunk[docs.end] as usize;
        let fits = body.documents.len() == docs.len()
            && body.chunks.len() == chunks.len()
            && body.texts.len() == chunks.len()
            && body
                .documents
                .iter()
                .zip(docs.clone())
                .all(|(doc, d)| self.doc_fits(d, doc))
            && body.chunks.iter().zip(chunks.clone()).all(|(meta, c)| {
                let d = meta.doc as usize;
                docs.contains(&d) && self.first_chunk[d] as usize + meta.chunk_index as usize == c
            });
        if !fits {
            return Err(self.corrupt(shard, "documents or chunks disagree with the core"));
        }
        Ok(())
    }

    /// Whether `doc`, as a shard holds it, has the chunks the core gives document `d` and a
    /// path that can be a link ([`super::document_path_problem`]).
    fn doc_fits(&self, d: usize, doc: &Document) -> bool {
        doc.first_chunk == self.first_chunk[d]
            && doc.chunk_count == self.core.doc_chunks[d]
            && super::document_path_problem(&doc.path).is_none()
    }

    /// Documents of fragment shard `i`.
    fn fragment_docs(&self, i: u32) -> Option<std::ops::Range<usize>> {
        let start = *self.core.frag_shards.get(i as usize)? as usize;
        let end = self
            .core
            .frag_shards
            .get(i as usize + 1)
            .map_or(self.n_docs(), |&d| d as usize);
        Some(start..end)
    }

    pub fn header(&self) -> &Header {
        &self.core.header
    }

    pub fn n_docs(&self) -> usize {
        self.core.doc_chunks.len()
    }

    pub fn n_chunks(&self) -> usize {
        *self.first_chunk.last().unwrap_or(&0) as usize
    }

    /// Chunks of document `d`: (first, count).
    pub fn doc_span(&self, d: u32) -> (u32, u32) {
        (
            self.first_chunk[d as usize],
            self.core.doc_chunks[d as usize],
        )
    }

    pub fn doc_of(&self, chunk: u32) -> u32 {
        (self.first_chunk[..self.n_docs()].partition_point(|&f| f <= chunk) - 1) as u32
    }

    /// Each document's first chunk, then the chunk count: document `d` holds chunks
    /// `firsts[d]..firsts[d + 1]`.
    pub fn doc_firsts(&self) -> &[u32] {
        &self.first_chunk
    }

    /// Document type and `YYYY-MM` of document `d`.
    pub fn facet_keys(&self, d: u32) -> (&str, Option<&str>) {
        let (t, m) = self.core.doc_facets[d as usize];
        let month = (m > 0).then(|| self.core.months[m as usize - 1].as_str());
        (self.core.doc_types[t as usize].as_str(), month)
    }

    /// The shard holding `term`'s postings, and the postings if it is loaded (`Ok(None)`:
    /// loaded, and the term is not in the index).
    pub fn postings(&self, term: &str) -> std::result::Result<Option<&ShardPostings>, ShardId> {
        let i = self
            .core
            .lex_shards
            .partition_point(|f| f.as_str() <= term)
            .checked_sub(1);
        let Some(i) = i else {
            return Ok(None); // sorts before every term
        };
        let shard = self.lexical[i].as_ref().ok_or(ShardId::Lexical(i as u32))?;
        Ok(shard
            .terms
            .binary_search_by(|t| t.as_str().cmp(term))
            .ok()
            .map(|k| &shard.postings[k]))
    }

    /// Terms of the index that start with `prefix`, with their document frequencies, in term
    /// order; `Ok(None)` when there are more than `cap` (found from the core's term counts
    /// before any shard is read, when the prefix covers whole shards). `Err`: the shards the
    /// prefix's range touches that are not loaded.
    #[allow(clippy::type_complexity)]
    pub fn terms_with_prefix(
        &self,
        prefix: &str,
        cap: usize,
    ) -> std::result::Result<Option<Vec<(&str, usize)>>, Vec<ShardId>> {
        let shards = &self.core.lex_shards;
        if shards.is_empty() {
            return Ok(Some(Vec::new()));
        }
        // The first shard that may hold such a term, and the last.
        let first = shards
            .partition_point(|f| f.as_str() <= prefix)
            .saturating_sub(1);
        let last = shards
            .partition_point(|f| f.as_str() < prefix || f.starts_with(prefix))
            .saturating_sub(1)
            .max(first);
        // The shards between them hold nothing but such terms.
        let inner: usize = self.core.lex_shard_terms[(first + 1).min(last)..last]
            .iter()
            .map(|&n| n as usize)
            .sum();
        if inner > cap {
            return Ok(None);
        }
        let missing: Vec<ShardId> = (first..=last)
            .filter(|&i| self.lexical[i].is_none())
            .map(|i| ShardId::Lexical(i as u32))
            .collect();
        if !missing.is_empty() {
            return Err(missing);
        }
        let mut out = Vec::new();
        for shard in self.lexical[first..=last].iter().flatten() {
            let from = shard.terms.partition_point(|t| t.as_str() < prefix);
            out.extend(
                shard.terms[from..]
                    .iter()
                    .zip(&shard.postings[from..])
                    .take_while(|(t, _)| t.starts_with(prefix))
                    .map(|(t, p)| (t.as_str(), p.tfs.len())),
            );
            if out.len() > cap {
                return Ok(None);
            }
        }
        Ok(Some(out))
    }

    /// The fragment shard holding document `d`, and `d`'s position in it.
    fn fragment_of(&self, d: u32) -> std::result::Result<(&FragShard, usize), ShardId> {
        let i = self.core.frag_shards.partition_point(|&f| f <= d) - 1;
        let frag = self.fragments[i]
            .as_ref()
            .ok_or(ShardId::Fragment(i as u32))?;
        Ok((frag, (d - self.core.frag_shards[i]) as usize))
    }

    /// Metadata of document `d`.
    pub fn document(&self, d: u32) -> std::result::Result<&Document, ShardId> {
        if let Some(all) = &self.documents {
            return Ok(&all[d as usize]);
        }
        let (frag, k) = self.fragment_of(d)?;
        Ok(&frag.documents[k])
    }

    /// Metadata and text of `chunk`.
    pub fn chunk(&self, chunk: u32) -> std::result::Result<(&ChunkMeta, &str), ShardId> {
        let (frag, _) = self.fragment_of(self.doc_of(chunk))?;
        let k = (chunk - frag.documents[0].first_chunk) as usize;
        Ok((&frag.chunks[k], frag.texts[k].as_str()))
    }

    pub fn all_documents(&self) -> std::result::Result<&[Document], ShardId> {
        self.documents.as_deref().ok_or(ShardId::Documents)
    }

    /// Vocabulary shard `i` (`i` below [`Core::vocab_shards`]).
    pub fn vocabulary(&self, i: u32) -> std::result::Result<&Vocabulary, ShardId> {
        self.vocabulary
            .get(i as usize)
            .and_then(Option::as_ref)
            .ok_or(ShardId::Vocabulary(i))
    }
}
