//! The query side: load → retrieve → fuse → present.
//!
//! [`Engine::from_bundle`] decodes and validates a bundle and checks that the embedding
//! model given is the one the bundle's vectors were made with. [`Engine::search`] runs one
//! request: BM25 and vector retrieval ([`retrieve`]), score fusion ([`fuse`]), then snippets
//! and the response shape ([`present`]).

pub mod fuse;
pub mod present;
pub mod retrieve;

use serde::{Deserialize, Serialize};

use crate::analyze::Analyzer;
use crate::bundle::{self, Bundle, Header};
use crate::embed::{Embedder, ModelFiles};
use crate::error::{Error, Result};

/// Longest accepted query, in characters (after trimming).
pub const MAX_QUERY_CHARS: usize = 500;
pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 50;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// BM25 and vectors, fused.
    #[default]
    Hybrid,
    /// BM25 only.
    Fulltext,
    /// Vectors only.
    Semantic,
}

/// A search request (the contract's JSON shape: camelCase, unknown fields rejected).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchRequest {
    pub query: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
}

impl SearchRequest {
    pub fn new(query: impl Into<String>) -> Self {
        SearchRequest {
            query: query.into(),
            limit: None,
            mode: None,
        }
    }

    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RankingSignals {
    /// BM25 score (0 when no query term occurs in the chunk).
    pub lexical: f32,
    /// Cosine similarity of query and chunk embeddings, clamped at 0.
    pub semantic: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Highlight {
    pub start: usize,
    pub end: usize,
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
    pub snippet: String,
    /// Character offsets into `snippet` of the words that matched the query.
    pub highlights: Vec<Highlight>,
    pub score: f32,
    pub ranking_signals: RankingSignals,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResponse {
    pub query: String,
    /// Number of chunks that matched before `limit` was applied.
    pub total: usize,
    pub applied_strategy: String,
    pub fallback_applied: bool,
    pub results: Vec<SearchResult>,
}

/// A loaded bundle plus (optionally) the embedding model that queries it.
#[derive(Debug)]
pub struct Engine {
    bundle: Bundle,
    analyzer: Analyzer,
    embedder: Option<Embedder>,
}

impl Engine {
    /// Decodes `bytes` and loads the model if given. A bundle with vectors queried without a
    /// model still answers `fulltext`; a model different from the bundle's is an error.
    pub fn from_bundle(bytes: &[u8], models: Option<&ModelFiles>) -> Result<Engine> {
        let embedder = models.map(Embedder::new).transpose()?;
        Engine::with_embedder(bytes, embedder)
    }

    /// Like [`Engine::from_bundle`] with an already loaded model (loading one takes longer
    /// than decoding most bundles, so callers with several bundles share it).
    pub fn with_embedder(bytes: &[u8], embedder: Option<Embedder>) -> Result<Engine> {
        let bundle = bundle::decode(bytes)?;
        if let (Some(expected), Some(e)) = (&bundle.header.embedding, &embedder) {
            let provided = e.info();
            if expected.sha256 != provided.sha256
                || expected.tokenizer_sha256 != provided.tokenizer_sha256
            {
                return Err(Error::EmbeddingModelMismatch {
                    expected: expected.describe(),
                    provided: provided.describe(),
                });
            }
        }
        Ok(Engine {
            bundle,
            analyzer: Analyzer::new(),
            embedder,
        })
    }

    pub fn header(&self) -> &Header {
        &self.bundle.header
    }

    pub fn bundle(&self) -> &Bundle {
        &self.bundle
    }

    /// Whether semantic and hybrid requests can be answered.
    pub fn semantic_ready(&self) -> bool {
        self.bundle.vectors.is_some() && self.embedder.is_some()
    }

    pub fn search(&self, request: &SearchRequest) -> Result<SearchResponse> {
        let query = request.query.trim();
        if query.is_empty() {
            return Err(Error::QueryEmpty);
        }
        if query.chars().count() > MAX_QUERY_CHARS {
            return Err(Error::InvalidRequest {
                field: "query".into(),
                message: format!("longer than {MAX_QUERY_CHARS} characters"),
            });
        }
        let limit = request.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(Error::InvalidRequest {
                field: "limit".into(),
                message: format!("must be 1..{MAX_LIMIT}, got {limit}"),
            });
        }
        let mode = request.mode.unwrap_or_default();
        let terms = self.analyzer.terms(query);

        let query_vector = match mode {
            Mode::Fulltext => None,
            Mode::Hybrid | Mode::Semantic => Some(self.embed_query(query)?),
        };
        let ranked = fuse::rank(&self.bundle, &terms, query_vector.as_deref(), mode);
        let total = ranked.len();
        let results = ranked
            .into_iter()
            .take(limit)
            .map(|hit| present::result(&self.bundle, &self.analyzer, &terms, hit))
            .collect();
        Ok(SearchResponse {
            query: query.to_owned(),
            total,
            applied_strategy: strategy(mode).to_owned(),
            fallback_applied: false,
            results,
        })
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        if self.bundle.vectors.is_none() {
            return Err(Error::SemanticUnavailable(
                "the bundle was built without embeddings; use mode \"fulltext\"".into(),
            ));
        }
        let Some(embedder) = &self.embedder else {
            return Err(Error::SemanticUnavailable(
                "no embedding model was loaded; use mode \"fulltext\"".into(),
            ));
        };
        embedder.embed(query)
    }
}

fn strategy(mode: Mode) -> &'static str {
    match mode {
        Mode::Hybrid => "bm25_plus_vector_docs_only",
        Mode::Fulltext => "bm25_docs_only",
        Mode::Semantic => "vector_docs_only",
    }
}
