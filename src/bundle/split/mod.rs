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
use super::model::{
    Bundle, ChunkMeta, Document, DocumentV8, FacetTable, Header, SectionKind, TextReader,
};
use super::packed::{budget_for, pack, unpack, PackedChunk};
use crate::encoding::{decode_exact, to_bytes};
use crate::error::{Error, Result};
use crate::index::lexical::{self, Varints};
use crate::index::spelling::{
    correction_keys, correction_shard, correction_shards, count_words, most_frequent,
    SURFACE_FORMS, SURFACE_SAMPLE,
};

mod read;
mod write;

pub use read::*;
pub use write::*;

pub const SPLIT_MAGIC: &[u8; 8] = b"DOCLSPLT";
/// Version of the split layout (`core.bin`'s). Read are this one and the one before it
/// ([`OLDEST_SPLIT_VERSION`]); older layouts are refused as `OlderFormat` and cut again. 3: lexical shards' term counts in the core. 5: each
/// term's surface form in `vocab.bin`. 6: the vocabulary in `voc-N.bin` shards by correction
/// key. 7: fragments' chunk metadata packed as in format 5's `docs` section. 8: the fragments'
/// first documents as differences. 9: the vectors section in `vec-N.bin` pieces instead of the
/// whole bundle in `bundle.bin`. 10: up to three surface forms a term in `voc-N.bin`. 11: a
/// shard names its bundle by the first 8 bytes of the bundle's sha256 ([`BUNDLE_TAG_BYTES`]),
/// not all 32. 12: documents say where their dates come from (bundle format 9).
pub const SPLIT_VERSION: u32 = 12;
/// The oldest split layout read: 11, whose documents have no `date_source` (bundle format 8).
pub const OLDEST_SPLIT_VERSION: u32 = SPLIT_VERSION - 1;
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

/// A fragment shard as read; layout 11's documents are [`DocumentV8`]s.
#[derive(Deserialize)]
struct FragShardIn<D = Document> {
    documents: Vec<D>,
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

/// The header's entry for the vectors section, if the bundle has one.
fn vectors_entry(header: &Header) -> Option<&super::model::SectionEntry> {
    header
        .sections
        .iter()
        .find(|e| e.kind == SectionKind::Vectors)
}
