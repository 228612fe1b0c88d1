//! Fusion: one ranked list from the lexical and semantic signals.
//!
//! The hybrid candidate pool is the union of the top `pool` chunks of each retriever. Every
//! pooled chunk gets both raw signals (its exact BM25, its cosine), and one of two fusions
//! orders them:
//!
//! **Weighted** (the default), pool-independent:
//!
//! ```text
//! lexical  = min(1, bm25 / Σ idf(query terms))     Σ idf: a chunk holding every term once
//!          = 1 when the chunk's title/breadcrumb contains every query term
//! semantic = max(0, cos)                            MiniLM
//!          = max(0, 1 − (best − cos) / span)         multilingual E5 (embed::fusion_span)
//! score    = LEXICAL_WEIGHT · lexical + SEMANTIC_WEIGHT · semantic
//! ```
//!
//! `best` is the query's best cosine in scope. E5 puts every passage of a collection within
//! about 0.1 of one another (0.80–0.90), so its raw cosine barely moved a fused score while
//! the lexical side moved it by up to 0.5; read relative to the query's best (as its match
//! rule is), the semantic side weighs in again, and the query's nearest chunk keeps the full
//! semantic half even where its cosine is low, as a question in another language's is.
//!
//! Dividing by the pool's maximum (the obvious choice) makes a chunk that shares one stray
//! word with the query a perfect lexical match whenever nothing better matched lexically,
//! and lets it outrank a strong semantic hit. Here a chunk matching one of four query terms
//! scores about a quarter, whatever else was retrieved. The breadcrumb rule guarantees that
//! a section titled with every query word scores at least 0.5 and so never loses to a
//! semantic near-miss that shares no word with the query (at most 0.5·cos < 0.5; with E5 the
//! query's nearest chunk scores 0.5 exactly, so at worst it ties, and ties break by path).
//!
//! **Reciprocal rank** (`Fusion::Rrf`, kept for comparison on the quality benchmark):
//! `Σ 1 / (60 + rank)` over the chunk's rank by BM25 and by cosine within the pool.
//!
//! Fulltext results score [`lexical_relevance`] (0..1, ordered as BM25), semantic ones their
//! cosine; every mode's `score` is on 0..1.
//!
//! Ties break by `documentPath`, then `chunkIndex`, so results are fully deterministic.

use std::collections::{BTreeMap, BTreeSet};

use super::corpus::Corpus;
use super::retrieve::Retriever;
use super::Mode;
use crate::analyze::Analyzer;
use crate::index::lexical::QueryTerm;

pub const LEXICAL_WEIGHT: f32 = 0.5;
pub const SEMANTIC_WEIGHT: f32 = 0.5;
/// The usual RRF constant (Cormack et al. 2009).
pub const RRF_K: f32 = 60.0;

/// How hybrid search combines its two signals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fusion {
    #[default]
    Weighted,
    Rrf,
}

impl std::str::FromStr for Fusion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "weighted" => Ok(Fusion::Weighted),
            "rrf" => Ok(Fusion::Rrf),
            _ => Err(format!("unknown fusion {s:?} (weighted or rrf)")),
        }
    }
}

/// A ranked chunk with its signals.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub chunk: u32,
    pub score: f32,
    /// Raw BM25.
    pub lexical: f32,
    /// Cosine, clamped at 0.
    pub semantic: f32,
}

/// Every candidate in scope, best first.
pub fn rank(
    r: &Retriever,
    analyzer: &Analyzer,
    terms: &[QueryTerm],
    query: Option<&[f32]>,
    mode: Mode,
    fusion: Fusion,
    pool: usize,
) -> Vec<Hit> {
    let mut hits = match (mode, query) {
        (Mode::Fulltext, _) | (_, None) => {
            // Scaled by the query's words matched exactly: a match through a close spelling
            // (weight < 1) scores below the exact word's.
            let ideal = r.corpus.ideal_score_unweighted(terms);
            r.lexical(terms)
                .into_iter()
                .map(|(chunk, s)| Hit {
                    chunk,
                    score: lexical_relevance(s, ideal),
                    lexical: s,
                    semantic: 0.0,
                })
                .collect()
        }
        (Mode::Semantic, Some(q)) => r
            .semantic(q, pool)
            .into_iter()
            .map(|(chunk, cos)| Hit {
                chunk,
                score: cos.max(0.0),
                lexical: 0.0,
                semantic: cos.max(0.0),
            })
            .collect(),
        (Mode::Hybrid, Some(q)) => hybrid(r, analyzer, terms, q, fusion, pool),
    };
    sort(&mut hits);
    hits
}

fn hybrid(
    r: &Retriever,
    analyzer: &Analyzer,
    terms: &[QueryTerm],
    q: &[f32],
    fusion: Fusion,
    pool_size: usize,
) -> Vec<Hit> {
    let lexical_all = r.lexical(terms);
    let mut top_lexical: Vec<(u32, f32)> = lexical_all.clone();
    top_lexical.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    top_lexical.truncate(pool_size);

    // chunk → (bm25, cosine)
    let mut pool: BTreeMap<u32, (f32, f32)> = BTreeMap::new();
    for (chunk, bm25) in top_lexical {
        pool.insert(chunk, (bm25, f32::NAN));
    }
    for (chunk, cos) in r.semantic(q, pool_size) {
        let bm25 = lexical_all
            .binary_search_by_key(&chunk, |x| x.0)
            .map_or(0.0, |i| lexical_all[i].1);
        pool.insert(chunk, (bm25, cos));
    }
    for (chunk, v) in pool.iter_mut() {
        if v.1.is_nan() {
            v.1 = r.cosine(q, *chunk).unwrap_or(0.0);
        }
    }

    let scores: Vec<(u32, f32, f32, f32)> = match fusion {
        Fusion::Weighted => {
            let ideal = r.corpus.ideal_score(terms);
            let span = r
                .corpus
                .header()
                .embedding
                .as_ref()
                .and_then(|m| crate::embed::fusion_span(&m.id));
            // The pool holds the query's nearest chunk in scope.
            let best = pool.values().map(|v| v.1).fold(f32::MIN, f32::max);
            // The breadcrumb rule reads the query's own words.
            let query_terms: BTreeSet<&str> = terms
                .iter()
                .filter(|t| t.weight >= 1.0)
                .map(|t| t.term.as_str())
                .collect();
            pool.into_iter()
                .map(|(chunk, (bm25, cos))| {
                    let mut lexical = if ideal > 0.0 {
                        (bm25 / ideal).min(1.0)
                    } else {
                        0.0
                    };
                    if bm25 > 0.0
                        && lexical < 1.0
                        && breadcrumb_has_all(r.corpus, analyzer, chunk, &query_terms)
                    {
                        lexical = 1.0;
                    }
                    let semantic = cos.max(0.0);
                    let fused = match span {
                        Some(span) => (1.0 - (best - cos) / span).max(0.0),
                        None => semantic,
                    };
                    let score = LEXICAL_WEIGHT * lexical + SEMANTIC_WEIGHT * fused;
                    (chunk, score, bm25, semantic)
                })
                .collect()
        }
        Fusion::Rrf => {
            let entries: Vec<(u32, f32, f32)> =
                pool.into_iter().map(|(c, (b, s))| (c, b, s)).collect();
            let rank_of = |key: fn(&(u32, f32, f32)) -> f32| {
                let mut order: Vec<usize> = (0..entries.len()).collect();
                order.sort_by(|&a, &b| {
                    key(&entries[b])
                        .total_cmp(&key(&entries[a]))
                        .then(entries[a].0.cmp(&entries[b].0))
                });
                let mut ranks = vec![0usize; entries.len()];
                for (rank, i) in order.into_iter().enumerate() {
                    ranks[i] = rank + 1;
                }
                ranks
            };
            let lex_rank = rank_of(|e| e.1);
            let sem_rank = rank_of(|e| e.2);
            entries
                .iter()
                .enumerate()
                .map(|(i, &(chunk, bm25, cos))| {
                    let mut score = 0.0;
                    if bm25 > 0.0 {
                        score += 1.0 / (RRF_K + lex_rank[i] as f32);
                    }
                    if cos > 0.0 {
                        score += 1.0 / (RRF_K + sem_rank[i] as f32);
                    }
                    (chunk, score, bm25, cos.max(0.0))
                })
                .collect()
        }
    };
    scores
        .into_iter()
        .map(|(chunk, score, lexical, semantic)| Hit {
            chunk,
            score,
            lexical,
            semantic,
        })
        .collect()
}

/// A fulltext result's score on the 0..1 scale every mode reports: `2x / (2x + 1)` with
/// `x = bm25 / Σ idf`, `Σ idf` being the BM25 of a chunk holding every query term once (which
/// scores 0.67; half of it 0.5, twice it 0.8). Strictly increasing in BM25, so it orders as
/// BM25 does (and costs the lexical wasm build no `exp`).
pub fn lexical_relevance(bm25: f32, ideal: f32) -> f32 {
    if ideal > 0.0 && bm25 > 0.0 {
        let x2 = 2.0 * bm25 / ideal;
        x2 / (x2 + 1.0)
    } else {
        0.0
    }
}

/// Whether the chunk's document title and section headings hold every query term.
fn breadcrumb_has_all(
    corpus: &Corpus,
    analyzer: &Analyzer,
    chunk: u32,
    query_terms: &BTreeSet<&str>,
) -> bool {
    if query_terms.is_empty() {
        return false;
    }
    let meta = corpus.chunk(chunk);
    let doc = corpus.document(meta.doc);
    let mut heading_terms: BTreeSet<String> = analyzer.terms(&doc.title).into_iter().collect();
    for h in &meta.section_path {
        heading_terms.extend(analyzer.terms(h));
    }
    query_terms.iter().all(|t| heading_terms.contains(*t))
}

/// Score descending, then `documentPath`, then `chunkIndex`: documents are stored sorted by
/// path with their chunks in order (checked when a bundle is decoded), so that tie-break is
/// the chunk number.
pub fn sort(hits: &mut [Hit]) {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.chunk.cmp(&b.chunk)));
}
