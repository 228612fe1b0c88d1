//! Fusion: one ranked list from the lexical and semantic signals.
//!
//! Hybrid scoring: the candidate pool is the union of the top [`POOL_PER_SIDE`] chunks of
//! each retriever. Every pooled chunk gets both raw signals (its exact BM25, its cosine), each
//! mapped onto 0..1 without looking at the rest of the pool, and the fused score is their
//! weighted sum:
//!
//! ```text
//! lexical  = min(1, bm25 / Σ idf(query terms))     Σ idf: a chunk holding every term once
//! semantic = max(0, cos)
//! score    = LEXICAL_WEIGHT · lexical + SEMANTIC_WEIGHT · semantic
//! ```
//!
//! Pool-independent normalization matters: dividing by the pool's maximum (the obvious
//! choice) makes a chunk that shares one stray word with the query a perfect lexical match
//! whenever nothing better matched lexically, and lets it outrank a strong semantic hit.
//! Here a chunk matching one of four query terms scores about a quarter, whatever else
//! was retrieved, and a score means the same across queries and across exact and HNSW search.
//! Ties break by `documentPath`, then `chunkIndex`, so results are fully deterministic.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::retrieve::{self, POOL_PER_SIDE};
use super::Mode;
use crate::bundle::Bundle;

pub const LEXICAL_WEIGHT: f32 = 0.5;
pub const SEMANTIC_WEIGHT: f32 = 0.5;

/// A ranked chunk with its signals.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub chunk: u32,
    pub score: f32,
    pub lexical: f32,
    pub semantic: f32,
}

/// Every candidate, best first.
pub fn rank(bundle: &Bundle, terms: &[String], query: Option<&[f32]>, mode: Mode) -> Vec<Hit> {
    let mut hits = match (mode, query) {
        (Mode::Fulltext, _) | (_, None) => retrieve::lexical(bundle, terms)
            .into_iter()
            .map(|(chunk, s)| Hit {
                chunk,
                score: s,
                lexical: s,
                semantic: 0.0,
            })
            .collect(),
        (Mode::Semantic, Some(q)) => retrieve::semantic(bundle, q, POOL_PER_SIDE)
            .into_iter()
            .map(|(chunk, cos)| Hit {
                chunk,
                score: cos.max(0.0),
                lexical: 0.0,
                semantic: cos.max(0.0),
            })
            .collect(),
        (Mode::Hybrid, Some(q)) => hybrid(bundle, terms, q),
    };
    sort(bundle, &mut hits);
    hits
}

fn hybrid(bundle: &Bundle, terms: &[String], q: &[f32]) -> Vec<Hit> {
    let lexical_all = retrieve::lexical(bundle, terms);
    let mut by_lexical = lexical_all.clone();
    by_lexical.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    by_lexical.truncate(POOL_PER_SIDE);

    let mut pool: BTreeMap<u32, (f32, Option<f32>)> = BTreeMap::new();
    for (chunk, s) in by_lexical {
        pool.insert(chunk, (s, None));
    }
    for (chunk, cos) in retrieve::semantic(bundle, q, POOL_PER_SIDE) {
        let bm25 = lexical_all
            .binary_search_by_key(&chunk, |x| x.0)
            .map_or(0.0, |i| lexical_all[i].1);
        pool.entry(chunk).or_insert((bm25, None)).1 = Some(cos);
    }
    let missing: Vec<u32> = pool
        .iter()
        .filter(|(_, v)| v.1.is_none())
        .map(|(&c, _)| c)
        .collect();
    for (chunk, cos) in missing
        .iter()
        .zip(retrieve::semantic_for(bundle, q, &missing))
    {
        pool.get_mut(chunk).expect("from the pool").1 = Some(cos);
    }

    let ideal = bundle.lexical.ideal_score(terms);
    let lexical_norm = |bm25: f32| {
        if ideal > 0.0 {
            (bm25 / ideal).min(1.0)
        } else {
            0.0
        }
    };
    pool.into_iter()
        .map(|(chunk, (lexical, cos))| {
            let semantic = cos.unwrap_or(0.0).max(0.0);
            let score = LEXICAL_WEIGHT * lexical_norm(lexical) + SEMANTIC_WEIGHT * semantic;
            Hit {
                chunk,
                score,
                lexical,
                semantic,
            }
        })
        .collect()
}

/// Score descending, then `documentPath`, then `chunkIndex`.
pub fn sort(bundle: &Bundle, hits: &mut [Hit]) {
    let key = |chunk: u32| {
        let meta = &bundle.docs.chunks[chunk as usize];
        (
            &bundle.docs.documents[meta.doc as usize].path,
            meta.chunk_index,
        )
    };
    hits.sort_by(|a, b| match b.score.total_cmp(&a.score) {
        Ordering::Equal => key(a.chunk).cmp(&key(b.chunk)),
        other => other,
    });
}
