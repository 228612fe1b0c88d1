//! docloupe: hybrid (BM25 + vector) search over documentation bundles.
//!
//! The index side (`index-builder`) and this engine share [`analyze`], [`embed`], [`index`]
//! and [`bundle`]; the query side is [`search`]. See ARCHITECTURE.md for the data flow.

pub mod analyze;
pub mod bundle;
pub mod embed;
pub mod error;
pub mod index;
pub mod search;

pub use embed::{Embedder, ModelFiles, ModelInfo};
pub use error::{Error, ErrorCode, Result};
pub use search::{
    CrossEncoder, Engine, EngineOptions, ErrorResponse, FallbackPolicy, Filters, Fusion, Mode,
    Rerank, RerankerFiles, SearchRequest, SearchResponse, SearchResult,
};
