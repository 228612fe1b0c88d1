//! Retrieval: candidate chunks from each side, with their raw scores.

use crate::bundle::Bundle;

/// How many chunks each retriever hands to fusion. Fusion then scores the union exactly on
/// both signals, so a chunk found by only one side is still judged on both.
pub const POOL_PER_SIDE: usize = 100;

/// BM25 score of every chunk containing a query term, in chunk order.
pub fn lexical(bundle: &Bundle, terms: &[String]) -> Vec<(u32, f32)> {
    bundle.lexical.score(&bundle.header.analyzer, terms)
}

/// The nearest chunks to the query vector, best first (cosine).
pub fn semantic(bundle: &Bundle, query: &[f32], k: usize) -> Vec<(u32, f32)> {
    bundle
        .vectors
        .as_ref()
        .map(|v| v.nearest(query, k))
        .unwrap_or_default()
}

/// Cosine of the query with given chunks (0 where a chunk has no vector).
pub fn semantic_for(bundle: &Bundle, query: &[f32], chunks: &[u32]) -> Vec<f32> {
    match &bundle.vectors {
        Some(v) => v
            .similarity(query, chunks)
            .into_iter()
            .map(|s| s.unwrap_or(0.0))
            .collect(),
        None => vec![0.0; chunks.len()],
    }
}
