//! The engine's one error type. Every fallible public function returns [`Error`];
//! binaries wrap it with `anyhow`, the contract layer maps it onto error codes.

use thiserror::Error;

/// Everything that can go wrong inside the engine.
#[derive(Debug, Error)]
pub enum Error {
    /// The bytes end before a structure they announce is complete.
    #[error("bundle is truncated: {0}")]
    BundleTruncated(String),

    /// The first bytes are not the docloupe magic: this is some other file.
    #[error("not a docloupe bundle (magic bytes missing)")]
    BadMagic,

    /// Written by a newer builder; this engine cannot know its layout.
    #[error("bundle format version {found} is newer than this engine supports (up to {supported}); upgrade docloupe")]
    NewerFormat { found: u32, supported: u32 },

    /// Written by an older builder whose layout is no longer read.
    #[error("bundle format version {found} is older than this engine supports (from {oldest}); rebuild the bundle")]
    OlderFormat { found: u32, oldest: u32 },

    /// A header or section does not match its recorded sha256.
    #[error("checksum mismatch in bundle {part}: the file is corrupt")]
    ChecksumMismatch { part: String },

    /// Checksums were fine but the content does not decode or is inconsistent.
    #[error("bundle is corrupt: {0}")]
    Corrupt(String),

    /// The bundle's vectors were made by a different embedding model than the one given.
    #[error(
        "embedding model mismatch: bundle was built with {expected}, but {provided} was provided"
    )]
    EmbeddingModelMismatch { expected: String, provided: String },

    /// The model or tokenizer files could not be loaded or run.
    #[error("model error: {0}")]
    Model(String),

    /// A search request that is malformed or out of range.
    #[error("invalid request: {field}: {message}")]
    InvalidRequest { field: String, message: String },

    /// The query is empty after trimming.
    #[error("the search query is empty")]
    QueryEmpty,

    /// A semantic or hybrid search was asked of an engine that has no vectors or no model.
    #[error("semantic search unavailable: {0}")]
    SemanticUnavailable(String),

    /// Serialization of a bundle failed (builder side).
    #[error("cannot encode bundle: {0}")]
    Encode(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
