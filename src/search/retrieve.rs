//! Retrieval: candidate chunks from each side, with their raw scores, restricted to the
//! documents in scope.

use super::corpus::Corpus;
use super::filter::DocMask;
use super::request::Plan;
use crate::analyze::Token;
use crate::error::Result;
use crate::index::lexical::{QueryTerm, Scores};
use crate::index::vector::VectorIndex;

/// How many chunks each retriever hands to fusion (at least; a larger `limit` raises it).
/// Fusion then scores the union exactly on both signals, so a chunk found by only one side
/// is still judged on both.
pub const POOL_PER_SIDE: usize = 100;

/// What retrieval reads: the corpus, the storage position of each chunk's vector, the scope.
pub struct Retriever<'a> {
    pub corpus: &'a Corpus<'a>,
    pub positions: &'a [u32],
    pub mask: &'a DocMask,
}

impl Retriever<'_> {
    /// BM25 score of every in-scope chunk containing a query term.
    pub fn lexical(&self, terms: &[QueryTerm]) -> Scores {
        let mut hits = self.corpus.bm25(terms);
        if let Some(allowed) = self.mask.chunk_bits() {
            hits.retain(allowed);
        }
        hits
    }

    /// The `k` in-scope chunks nearest to the query vector, best first (cosine).
    pub fn semantic(&self, query: &[f32], k: usize) -> Vec<(u32, f32)> {
        let Some(vectors) = self.corpus.vectors() else {
            return Vec::new();
        };
        if !self.mask.is_restricted() {
            return vectors.nearest(query, k);
        }
        let in_scope = |c: u32| self.mask.allows_chunk(c);
        let mut hits: Vec<(u32, f32)> = match vectors {
            // The first pass reads only in-scope codes, so the shortlist is all in scope.
            VectorIndex::Coded(c) => return c.nearest_where(query, k, Some(&in_scope)),
            VectorIndex::Flat(_) => (0..self.corpus.n_chunks() as u32)
                .filter(|&c| in_scope(c))
                .filter_map(|c| self.cosine(query, c).map(|s| (c, s)))
                .collect(),
        };
        hits.sort_by(crate::index::vector::best_first);
        hits.truncate(k);
        hits
    }

    /// [`Retriever::cosine`] of each chunk in `chunks`, in order.
    pub fn cosines(&self, query: &[f32], chunks: std::ops::Range<u32>) -> Vec<Option<f32>> {
        let Some(vectors) = self.corpus.vectors() else {
            return vec![None; chunks.len()];
        };
        let at = |c: u32| self.positions.get(c as usize).filter(|&&p| p != u32::MAX);
        let positions: Vec<u32> = chunks.clone().filter_map(|c| at(c).copied()).collect();
        let mut dots = vectors.store().dots_f32(&positions, query).into_iter();
        chunks.map(|c| at(c).and_then(|_| dots.next())).collect()
    }

    /// Cosine of the query with one chunk (`None` if it has no vector).
    pub fn cosine(&self, query: &[f32], chunk: u32) -> Option<f32> {
        let vectors = self.corpus.vectors()?;
        let pos = *self.positions.get(chunk as usize)?;
        (pos != u32::MAX).then(|| vectors.dot_f32(pos, query))
    }
}

impl<'a> Retriever<'a> {
    /// A retriever over `corpus` in `mask`'s scope, once a split bundle has the pieces it
    /// reads: with `vectors`, its vector pieces come in the first round, with the postings.
    pub fn ready(
        corpus: &'a Corpus<'a>,
        positions: &'a [u32],
        mask: &'a DocMask,
        vectors: bool,
    ) -> Result<Retriever<'a>> {
        if vectors {
            corpus.vectors();
        }
        corpus.checkpoint()?;
        Ok(Retriever {
            corpus,
            positions,
            mask,
        })
    }
}

/// The query's words as the retrievers search them: typos through close terms, the word
/// being typed through its completions, and the definitions of the abbreviations it writes
/// ([`super::expand`]); and what highlights mark, the words matched, stand-ins included.
pub struct Words {
    pub expanded: Vec<QueryTerm>,
    pub matched: Vec<String>,
}

impl Words {
    pub fn of(corpus: &Corpus, query: &str, tokens: &[Token]) -> Words {
        let mut expanded = super::expand::expand(corpus, query, tokens);
        expanded.extend(super::expand::definitions(query, tokens));
        let matched = expanded.iter().map(|t| t.term.clone()).collect();
        Words { expanded, matched }
    }
}

/// How many chunks each retriever hands to fusion for `plan`: it depends on the page size,
/// never on the page (`offset`), so every page of a request is cut from the same ranking.
pub fn pool_size(plan: &Plan) -> usize {
    let page_results = match plan.by_document {
        true => plan.limit * plan.max_chunks_per_document,
        false => plan.limit,
    };
    POOL_PER_SIDE.max(page_results * 2)
}
