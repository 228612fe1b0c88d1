//! The contract's response and error shapes (camelCase JSON). Field names and meanings are
//! fixed: the wasm API, the Worker, the CLI and the MCP server all serialize these types.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bundle::Citation;
use crate::error::{Error, ErrorCode};

/// `appliedStrategy` values.
pub const STRATEGY_RERANK: &str = "bm25_plus_vector_rerank_docs_only";
pub const STRATEGY_HYBRID: &str = "bm25_plus_vector_docs_only";
pub const STRATEGY_FULLTEXT: &str = "bm25_docs_only";
pub const STRATEGY_SEMANTIC: &str = "vector_docs_only";

/// Every result is a documentation chunk; the field exists so mixed collections can say so.
pub const SOURCE_TYPE: &str = "documentation";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResponse {
    /// The query as searched (trimmed).
    pub query: String,
    /// Results available for this request after filters and `maxChunksPerDocument`, before
    /// `limit`.
    pub total: usize,
    pub applied_strategy: String,
    /// The rerank stage was requested but did not decide the order (see `degradedReason`).
    pub fallback_applied: bool,
    /// Why the response is not what was asked for; present only then. One of
    /// `rerank_model_unavailable`, `rerank_failed`, `rerank_budget_exceeded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded_reason: Option<String>,
    pub results: Vec<SearchResult>,
    pub facets: Facets,
    pub suggestions: Vec<String>,
    pub timings: Timings,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    pub document_path: String,
    pub chunk_index: u32,
    pub chunk_id: String,
    pub title: String,
    pub section_path: Vec<String>,
    pub anchor: String,
    pub line_start: u32,
    pub line_end: u32,
    /// Pages the chunk comes from (1-based, inclusive), for paged formats (PDF) only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_start: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_end: Option<u32>,
    /// A window of the chunk around its best match (at most ~240 characters plus ellipses).
    pub snippet: String,
    /// Character (Unicode scalar) offsets into `snippet` of the words that matched.
    pub highlights: Vec<Highlight>,
    pub score: f32,
    pub source_type: String,
    pub document_type: String,
    /// The document's date (`YYYY-MM-DD`): when it was last updated, else made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// When the document was made, where it says (`YYYY-MM-DD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// Where `date` and `created` come from: `front_matter`, `document` (its own text) or
    /// `metadata` (the file's properties).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_source: Option<crate::bundle::DateSource>,
    /// The source file's size in bytes (bundles of format 3 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_size: Option<u64>,
    pub ranking_signals: RankingSignals,
    /// The document's bibliography entry, when the collection was built with references.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citation: Option<Citation>,
    /// The chunk's text trimmed to the request's `maxCharsPerChunk` (only when it asks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Neighbouring chunks of the same document (when `includeContext`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Vec<ContextChunk>>,
}

impl SearchResult {
    /// "p. 12" or "pp. 12–14" for a paged result.
    pub fn pages(&self) -> Option<String> {
        match (self.page_start, self.page_end) {
            (Some(a), Some(b)) if b > a => Some(format!("pp. {a}–{b}")),
            (Some(a), _) => Some(format!("p. {a}")),
            _ => None,
        }
    }

    /// The result as a pandoc citation, `[@citekey, p. 12]` (`[@citekey]` without pages), when
    /// its document has a bibliography entry.
    pub fn cite(&self) -> Option<String> {
        let c = self.citation.as_ref()?;
        Some(match self.pages() {
            Some(p) => format!("[@{}, {p}]", c.citekey),
            None => format!("[@{}]", c.citekey),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RankingSignals {
    /// BM25 score (0 when no query term occurs in the chunk).
    pub lexical: f32,
    /// Cosine similarity of query and chunk embeddings, clamped at 0.
    pub semantic: f32,
    /// Cross-encoder relevance probability in (0, 1); present only when the rerank stage
    /// scored this result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<f32>,
    /// The learned second stage's features of this result (`rank::FEATURES` order); only
    /// when the host asks for them (`Calibration::explain_features`, for training).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<Vec<f32>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Highlight {
    pub start: usize,
    pub end: usize,
}

/// A neighbour of a hit, in full, so a reader (or an agent) gets the surrounding text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextChunk {
    /// `before` or `after` the hit.
    pub position: String,
    pub chunk_index: u32,
    pub chunk_id: String,
    pub section_path: Vec<String>,
    pub anchor: String,
    pub line_start: u32,
    pub line_end: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_start: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_end: Option<u32>,
    pub text: String,
}

/// Counts of distinct documents among all candidates (after filters), not only the page.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Facets {
    pub document_types: BTreeMap<String, usize>,
    /// `YYYY-MM` → documents dated in that month.
    pub dates: BTreeMap<String, usize>,
    /// Documents without a date (never matched by a date filter).
    #[serde(default)]
    pub undated: usize,
}

/// Wall-clock milliseconds per stage. Not deterministic: compare responses without it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    pub total_ms: f64,
    pub embed_ms: f64,
    pub retrieve_ms: f64,
    pub rerank_ms: f64,
}

/// The contract's error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorResponse {
    pub error_code: ErrorCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

impl From<&Error> for ErrorResponse {
    fn from(e: &Error) -> Self {
        ErrorResponse {
            error_code: e.code(),
            message: e.to_string(),
            details: e.details(),
        }
    }
}

impl From<Error> for ErrorResponse {
    fn from(e: Error) -> Self {
        ErrorResponse::from(&e)
    }
}
