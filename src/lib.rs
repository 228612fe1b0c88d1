//! docloupe: hybrid (BM25 + vector) search over documentation bundles.
//!
//! The index side (`index-builder`) and this engine share [`analyze`], [`embed`], [`index`]
//! and [`bundle`]; the query side is [`search`]. ARCHITECTURE.md walks the data flow.

pub mod analyze;
pub mod bundle;
pub mod embed;
mod encoding;
pub mod error;
pub mod index;
#[cfg(any(feature = "access", feature = "models"))]
mod kept;
pub mod search;
#[cfg(target_arch = "wasm32")]
pub mod wasm;

#[cfg(feature = "models")]
pub use embed::Embedder;
pub use embed::{ModelFiles, ModelInfo};
pub use error::{Error, ErrorCode, Result};
#[cfg(feature = "models")]
pub use search::CrossEncoder;
pub use search::{
    Access, Calibration, Engine, EngineOptions, ErrorResponse, FallbackPolicy, Filters, Fusion,
    LexicalFallback, Mode, Rerank, RerankerFiles, SearchRequest, SearchResponse, SearchResult,
};
