//! The second stage: the head of the fused ranking reordered by a model, or left in its fused
//! order when none runs. Two models can take this place: the learned ranker ([`super::rank`]:
//! cheap features, no model run; the default) or a cross-encoder the host installed
//! ([`super::rerank`]: `candidateLimit` passages scored by the model, blended with the fused
//! score). Only a hybrid request asks for it, and only vector search gives one: the lexical
//! build (the edge's, the browser's first) leaves the models out, and the fused order stands.
//!
//! A cross-encoder that is missing, fails or runs past its budget falls back to the fused
//! order (flagged with its reason), or fails the request when the fallback policy says so.

#[cfg(feature = "vectors")]
use web_time::{Duration, Instant};

use super::fuse::{Fused, Hit};
use super::present::Entry;
use super::request::Plan;
use super::retrieve::{Retriever, Words};
#[cfg(feature = "vectors")]
use super::{corpus::Corpus, rank, FallbackPolicy};
use super::{rerank, Engine, Timings};
use crate::analyze::Token;
#[cfg(feature = "vectors")]
use crate::error::Error;
use crate::error::Result;
#[cfg(feature = "vectors")]
use crate::index::lexical::{QueryTerm, Scores};

/// The order the second stage leaves.
pub(super) struct Ordered {
    pub order: Vec<Entry>,
    /// Feature rows by position in the head, when the host asked for them
    /// ([`super::Calibration::explain_features`]).
    pub features: Vec<Vec<f32>>,
    /// Why the cross-encoder's order was not used.
    pub fallback: Option<rerank::Fallback>,
}

/// What the second stage reads of the query.
#[cfg(feature = "vectors")]
pub(super) struct Query<'q> {
    pub text: &'q str,
    /// The query's analyzed words.
    pub terms: &'q [String],
    /// They and their stand-ins (corrections, completions, definitions).
    pub expanded: &'q [QueryTerm],
    pub vector: Option<&'q [f32]>,
    /// The BM25 scores hybrid fusion computed.
    pub bm25: Option<&'q Scores>,
}

/// Documents beyond the page that the second stage's pool may reach into (every copy of a
/// page beside it, and the entry after the pool): the fused ranking is cut after
/// `offset + limit +` this many documents.
pub(super) fn head_room(rerank: bool, candidate_limit: usize) -> usize {
    #[cfg(feature = "vectors")]
    if rerank {
        return candidate_limit * (1 + rank::COPIES_PER_CANDIDATE) + 1;
    }
    let _ = (rerank, candidate_limit);
    0
}

/// The fused order as it stands.
fn fused_order(head: &[Hit]) -> Vec<Entry> {
    head.iter()
        .enumerate()
        .map(|(i, h)| (i, h.score, None))
        .collect()
}

impl Engine {
    /// The second stage over the fused `head`, when `run` (a hybrid request that asked for
    /// it, answered with the models); its time goes into `timings.rerank_ms`.
    #[cfg(feature = "vectors")]
    pub(super) fn second_stage(
        &self,
        retriever: &Retriever,
        plan: &Plan,
        (tokens, words, vector): (&[Token], &Words, Option<&[f32]>),
        fused: &Fused,
        run: bool,
        timings: &mut Timings,
    ) -> Result<Ordered> {
        let head = &fused.head[..];
        let mut ordered = Ordered {
            order: fused_order(head),
            features: Vec::new(),
            fallback: None,
        };
        if !run {
            return Ok(ordered);
        }
        let t = Instant::now();
        let corpus = retriever.corpus;
        let terms: Vec<String> = tokens.iter().map(|t| t.term.clone()).collect();
        let query = &Query {
            text: &plan.query,
            terms: &terms,
            expanded: &words.expanded,
            vector,
            bm25: fused.bm25.as_ref(),
        };
        // The learned stage scores copies of a page beside it (cheap features, no model
        // run); the cross-encoder scores `candidateLimit` passages, copies or not.
        let pool_len = match (&self.reranker, &self.ranker) {
            (None, Some(_)) => rank::pool_len(corpus, head, plan.candidate_limit),
            _ => plan.candidate_limit.min(head.len()),
        };
        let pool = &head[..pool_len];
        let learned = match (&self.reranker, query.vector) {
            (None, Some(vector)) => self.learned_stage(retriever, query, vector, pool),
            _ => None,
        };
        let scored = match learned {
            Some((probs, features)) => {
                ordered.features = features;
                Ok((probs, 1.0))
            }
            None => self.cross_encoder(corpus, &plan.query, pool),
        };
        match scored {
            Ok((probs, w)) => blend(&mut ordered.order, head, pool_len, &probs, w),
            Err(why) if self.options.fallback_policy == FallbackPolicy::ErrorOnTotalFailure => {
                return Err(Error::RerankUnavailable {
                    reason: why.error_reason(),
                    message: format!(
                        "the rerank stage did not complete ({}) and the fallback policy is error_on_total_failure",
                        why.reason()
                    ),
                });
            }
            Err(why) => ordered.fallback = Some(why),
        }
        timings.rerank_ms = super::ms(t.elapsed());
        Ok(ordered)
    }

    /// Without vector search there is no second stage: the fused order.
    #[cfg(not(feature = "vectors"))]
    pub(super) fn second_stage(
        &self,
        _: &Retriever,
        _: &Plan,
        _: (&[Token], &Words, Option<&[f32]>),
        fused: &Fused,
        _: bool,
        _: &mut Timings,
    ) -> Result<Ordered> {
        Ok(Ordered {
            order: fused_order(&fused.head),
            features: Vec::new(),
            fallback: None,
        })
    }

    /// The learned second stage's probabilities for `pool`, and its feature rows when the
    /// host asked for them (`None` when there is no ranker): the model alone decides the
    /// order, and its logistic is the reported probability.
    #[cfg(feature = "vectors")]
    fn learned_stage(
        &self,
        retriever: &Retriever,
        query: &Query,
        vector: &[f32],
        pool: &[Hit],
    ) -> Option<(Vec<f32>, Vec<Vec<f32>>)> {
        let model = self.ranker?;
        let view = rank::QueryView {
            text: query.text,
            terms: query.terms,
            expanded: query.expanded,
            vector,
            bm25: query.bm25,
        };
        let rows = rank::features(retriever, &self.analyzer, &view, pool);
        let features = match self.calibration.explain_features {
            true => rows.iter().map(|r| r.to_vec()).collect(),
            false => Vec::new(),
        };
        let mut logits: Vec<f32> = rows.iter().map(|r| model.score(r)).collect();
        rank::order_within_documents(retriever.corpus, pool, &mut logits);
        rank::titled_pages_first(retriever.corpus, query.text, pool, &mut logits);
        rank::distinct_pages_first(retriever.corpus, pool, &mut logits);
        Some((
            logits.into_iter().map(rerank::probability).collect(),
            features,
        ))
    }

    /// The cross-encoder's probabilities for `pool` within the rerank budget, with the weight
    /// its order gets against the fused score (the host's, else the model's calibrated one,
    /// else 1).
    #[cfg(feature = "vectors")]
    fn cross_encoder(
        &self,
        corpus: &Corpus,
        query: &str,
        pool: &[Hit],
    ) -> std::result::Result<(Vec<f32>, f32), rerank::Fallback> {
        let passages: Vec<String> = pool.iter().map(|h| passage(corpus, h.chunk)).collect();
        let budget = Duration::from_millis(self.options.rerank_budget_ms);
        let model = self.reranker.as_deref();
        let probs = rerank::score_all(model, query, &passages, budget)?;
        let w = self
            .calibration
            .rerank_weight
            .or_else(|| model.and_then(|m| m.blend_weight()))
            .unwrap_or(1.0)
            .clamp(0.0, 1.0);
        Ok((probs, w))
    }
}

/// The reranked pool comes first, ordered by the model (blended with the fused score by `w`),
/// and its score is that blend: the model's probability of an answer when it decides alone.
/// Candidates beyond the pool keep their fused order below it, their fused scores scaled to
/// stay at or under the pool's lowest.
#[cfg(feature = "vectors")]
fn blend(order: &mut [Entry], head: &[Hit], pool_len: usize, probs: &[f32], w: f32) {
    for (entry, p) in order.iter_mut().zip(probs) {
        entry.1 = w * p + (1.0 - w) * entry.1.clamp(0.0, 1.0);
        entry.2 = Some(*p);
    }
    order[..pool_len].sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then(head[a.0].chunk.cmp(&head[b.0].chunk))
    });
    let lowest = order[..pool_len].last().map_or(1.0, |e| e.1);
    let highest_rest = order.get(pool_len).map_or(0.0, |e| e.1.clamp(0.0, 1.0));
    let scale = if highest_rest > lowest {
        lowest / highest_rest
    } else {
        1.0
    };
    for entry in order.iter_mut().skip(pool_len) {
        entry.1 = entry.1.clamp(0.0, 1.0) * scale;
    }
}

/// What the cross-encoder reads for a chunk: its breadcrumb, then its text.
#[cfg(feature = "vectors")]
fn passage(corpus: &Corpus, chunk: u32) -> String {
    crate::bundle::embedding_input(
        &corpus.chunk(chunk).location.section_path,
        corpus.text(chunk),
    )
}
