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

    /// Written by an older builder whose layout is no longer read: only the current format
    /// and the one before it are.
    #[error("{layout} version {found} is older than this engine reads ({oldest} and newer); rebuild it with {rebuild_with}")]
    OlderFormat {
        /// `bundle format` or `split layout`.
        layout: &'static str,
        found: u32,
        oldest: u32,
        /// The index-builder release that writes what this engine reads
        /// ([`crate::bundle::REBUILD_WITH`]).
        rebuild_with: &'static str,
    },

    /// Built with text-analysis rules newer than this engine's: its queries could not be
    /// analyzed the way its text was.
    #[error("bundle analyzer version {found} is newer than this engine supports (up to {supported}); upgrade docloupe")]
    NewerAnalyzer { found: u32, supported: u32 },

    /// The bundle's file could not be opened or read (native hosts, [`crate::bundle::BundleFile`]).
    #[error("cannot read bundle {path}: {message}")]
    Unreadable { path: String, message: String },

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

    /// A semantic or hybrid search was asked of a bundle built without embeddings.
    #[error("invalid request: mode {mode:?} needs embeddings, but this bundle was built with --no-embeddings; use mode \"fulltext\"")]
    HybridNotSupported { mode: String },

    /// A semantic or hybrid search was asked of an engine whose embedding model is not
    /// loaded (or failed on this query).
    #[error("semantic search unavailable: {0}")]
    SemanticUnavailable(String),

    /// The request names a project this collection does not belong to.
    #[error("project {requested:?} not found: this collection is {}", available.as_deref().map_or("not bound to a project".to_owned(), |p| format!("project {p:?}")))]
    ProjectNotFound {
        requested: String,
        available: Option<String>,
    },

    /// The rerank stage failed under the `error_on_total_failure` policy, or the fused stage
    /// it depends on is unavailable.
    #[error("reranking unavailable: {message}")]
    RerankUnavailable {
        /// Stable name: `FusedStageUnavailable`, `RerankModelUnavailable`, `RerankFailed`,
        /// `RerankBudgetExceeded`.
        reason: &'static str,
        message: String,
    },

    /// A split bundle's host has not loaded the files this request reads yet; it fetches
    /// them (`details.files`), adds them and asks again.
    #[error("the search needs files of the split bundle that are not loaded: {}", .0.join(", "))]
    FilesNeeded(Vec<String>),

    /// A bug: an invariant the engine relies on does not hold.
    #[error("internal error: {0}")]
    Internal(String),

    /// Serialization of a bundle failed (builder side).
    #[error("cannot encode bundle: {0}")]
    Encode(String),

    /// One document cannot go into the bundle as it is; the builder skips it and goes on
    /// (the bundle stays as it was before it).
    #[error("{path}: {why}")]
    DocumentRefused { path: String, why: String },

    /// A bundle that restricts documents to groups of readers, opened by a build that cannot
    /// tell readers apart (the wasm builds): served with `docloupe serve` only.
    #[error("restricted documents: use docloupe serve")]
    AccessRestricted,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The contract's error codes, as every front end reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    InvalidRequest,
    SearchQueryEmpty,
    DocsCollectionUnavailable,
    DocsRerankingUnavailable,
    InternalError,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::SearchQueryEmpty => "SEARCH_QUERY_EMPTY",
            ErrorCode::DocsCollectionUnavailable => "DOCS_COLLECTION_UNAVAILABLE",
            ErrorCode::DocsRerankingUnavailable => "DOCS_RERANKING_UNAVAILABLE",
            ErrorCode::InternalError => "INTERNAL_ERROR",
        }
    }
}

impl Error {
    /// A bundle file (or a split folder's piece) that could not be read.
    pub fn unreadable(path: &std::path::Path, e: std::io::Error) -> Error {
        Error::Unreadable {
            path: path.display().to_string(),
            message: e.to_string(),
        }
    }

    /// The contract code this error is reported under.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidRequest { .. } | Error::HybridNotSupported { .. } => {
                ErrorCode::InvalidRequest
            }
            Error::QueryEmpty => ErrorCode::SearchQueryEmpty,
            Error::BundleTruncated(_)
            | Error::Unreadable { .. }
            | Error::BadMagic
            | Error::NewerFormat { .. }
            | Error::NewerAnalyzer { .. }
            | Error::OlderFormat { .. }
            | Error::ChecksumMismatch { .. }
            | Error::Corrupt(_)
            | Error::EmbeddingModelMismatch { .. }
            | Error::ProjectNotFound { .. }
            | Error::SemanticUnavailable(_)
            | Error::AccessRestricted
            | Error::FilesNeeded(_) => ErrorCode::DocsCollectionUnavailable,
            Error::RerankUnavailable { .. } => ErrorCode::DocsRerankingUnavailable,
            Error::Model(_)
            | Error::Encode(_)
            | Error::DocumentRefused { .. }
            | Error::Internal(_) => ErrorCode::InternalError,
        }
    }

    /// Machine-readable particulars: `reason` (a stable CamelCase name) plus the fields that
    /// explain it, e.g. `{"reason": "OutOfRange", "field": "limit"}`.
    pub fn details(&self) -> Option<serde_json::Value> {
        use serde_json::json;
        Some(match self {
            Error::InvalidRequest { field, message } => {
                json!({"reason": "InvalidField", "field": field, "message": message})
            }
            Error::HybridNotSupported { mode } => {
                json!({"reason": "HybridNotSupported", "field": "mode", "mode": mode})
            }
            Error::QueryEmpty => json!({"field": "query"}),
            Error::BundleTruncated(_) => json!({"reason": "BundleTruncated"}),
            Error::Unreadable { path, .. } => json!({"reason": "BundleUnreadable", "path": path}),
            Error::BadMagic => json!({"reason": "NotABundle"}),
            Error::NewerFormat { found, supported } => newer("NewerFormat", *found, *supported),
            Error::NewerAnalyzer { found, supported } => newer("NewerAnalyzer", *found, *supported),
            Error::OlderFormat {
                found,
                oldest,
                rebuild_with,
                ..
            } => {
                json!({"reason": "OlderFormat", "found": found, "oldest": oldest, "rebuildWith": rebuild_with})
            }
            Error::ChecksumMismatch { part } => {
                json!({"reason": "ChecksumMismatch", "part": part})
            }
            Error::Corrupt(_) => json!({"reason": "Corrupt"}),
            Error::EmbeddingModelMismatch { expected, provided } => {
                json!({"reason": "EmbeddingModelMismatch", "expected": expected, "provided": provided})
            }
            Error::ProjectNotFound {
                requested,
                available,
            } => {
                json!({"reason": "ProjectNotFound", "projectId": requested, "available": available})
            }
            Error::SemanticUnavailable(_) => json!({"reason": "EmbeddingModelNotLoaded"}),
            Error::RerankUnavailable { reason, .. } => json!({"reason": reason}),
            Error::FilesNeeded(files) => json!({"reason": "BundleFilesNeeded", "files": files}),
            Error::AccessRestricted => json!({"reason": "AccessRestricted"}),
            Error::Model(_)
            | Error::Encode(_)
            | Error::DocumentRefused { .. }
            | Error::Internal(_) => return None,
        })
    }
}

/// The details of a bundle made by a newer docloupe (its format or its analysis rules).
fn newer(reason: &str, found: u32, supported: u32) -> serde_json::Value {
    serde_json::json!({"reason": reason, "found": found, "supported": supported})
}
