//! The bundle: everything a search needs, in one deterministic byte string.
//!
//! ```text
//! offset  size  field
//! 0       8     magic  b"DOCLOUPE"
//! 8       4     format version (u32 LE)
//! 12      4     header length H (u32 LE)
//! 16      32    sha256 of the header bytes
//! 48      H     header (postcard): builder, project, model, analyzer, counts, flags, section table
//! 48+H    ...   sections, back to back, each at the offset/length the section table gives and
//!               each with its own sha256 there
//! ```
//!
//! Sections are independently decodable so a browser can fetch the small ones first:
//! `docs` (document + chunk metadata), `lexical` (term dictionary + postings), `text`
//! (chunk text for snippets and context) and `vectors` (4-bit vectors, or int8 before format
//! 6; scanned exactly or through compact codes, or an HNSW graph before format 4). From
//! format 8 every section is deflated (`encoding/deflate.rs`): `docs` and `lexical` whole, `text`
//! and `vectors` in blocks.
//! Nothing in a bundle depends on time, hash-map order or thread scheduling: the same
//! input gives the same bytes.

pub(crate) mod access;
mod builder;
#[cfg(not(target_arch = "wasm32"))]
mod file;
mod format;
mod model;
mod packed;
mod path;
pub mod split;
mod text;

pub use access::{valid_group, AccessSection, MAX_GROUP_CHARS};
pub use builder::{
    build_bundle, chunk_id, embedding_input, BuildOptions, BundleBuilder, Embedding, SourceChunk,
    SourceDocument, COMPACT_THRESHOLD,
};
#[cfg(not(target_arch = "wasm32"))]
pub use file::BundleFile;
#[cfg(feature = "access")]
pub use format::decode_access;
pub(crate) use format::{access_section, assemble_pieces, docs_section_packed, lexical_section};
pub use format::{
    check_vectors, decode, decode_header, decode_lexical, decode_text, decode_vectors, encode,
    encode_pieces, packed_docs, section_bytes, Encoded, HEADER_START, MAGIC,
};
pub use model::*;
pub(crate) use packed::append as append_packed_chunks;
pub use packed::PackedDocs;
pub use packed::{RunCost, BUDGET_PER_BYTE, BUDGET_SLACK};
pub use path::{document_path_problem, is_bidi_control, is_format_char, url_scheme};

/// The format version this engine writes. 2: documents record their citation, chunks
/// their page span (PDF). 3: documents' creation date and file size. 4: large collections'
/// vectors carry compact first-pass codes ([`crate::index::vector::Coded`]) instead of an
/// HNSW graph. 5: chunk metadata packed (`packed.rs`: binary ids, breadcrumbs and anchors
/// written once per change). 6: vectors in the 4-bit form, two values a byte
/// ([`crate::index::vector::QVec::to_4bit`]). 7: chunk texts deflated in blocks, inflated
/// as they are read (`text.rs`). 8: the `docs` and `lexical` sections deflated whole
/// (`encoding/deflate.rs`), the vectors deflated in blocks of rows with their compact codes computed
/// when read ([`crate::index::vector`]). 9: documents say where their dates come from
/// ([`DateSource`]). 10: an `access` section, in a bundle where some document is restricted
/// to groups of readers ([`AccessSection`]).
pub const FORMAT_VERSION: u32 = 10;
/// The oldest format version this engine reads: the current one and the one before it
/// (formats 1 to 8 are refused as [`crate::Error::OlderFormat`], which names the
/// index-builder to rebuild with). The same for every build, the lexical wasm included.
pub const OLDEST_FORMAT_VERSION: u32 = FORMAT_VERSION - 1;

/// The index-builder release that writes [`FORMAT_VERSION`] (and [`split::SPLIT_VERSION`]):
/// the one a bundle too old to read is rebuilt with.
pub const REBUILD_WITH: &str = concat!("index-builder ", env!("CARGO_PKG_VERSION"));
