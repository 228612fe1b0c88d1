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

use std::cmp::Ordering;
#[cfg(feature = "vectors")]
use std::collections::{BTreeMap, BTreeSet};

use super::corpus::Corpus;
use super::request::Plan;
use super::retrieve::Retriever;
use super::{Engine, Mode};
use crate::analyze::Analyzer;
use crate::index::lexical::{QueryTerm, Scores};

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

/// Every candidate in scope, in chunk order, as [`rank`] hands them to [`head`].
#[derive(Debug, Clone, PartialEq)]
pub enum Matches {
    /// Fulltext: every chunk BM25 scored, each scoring [`lexical_relevance`] against `ideal`.
    /// Never made into a list: a common word matches a million chunks of a large collection.
    Lexical { bm25: Scores, ideal: f32 },
    /// Semantic and hybrid: their pool, in chunk order.
    Listed(Vec<Hit>),
}

impl Matches {
    /// Each match as a [`Hit`], in chunk order.
    pub fn each(&self, mut f: impl FnMut(Hit)) {
        match self {
            Matches::Lexical { bm25, ideal } => bm25.each(|c, s| f(lexical_hit(c, s, *ideal))),
            Matches::Listed(hits) => hits.iter().cloned().for_each(f),
        }
    }

    /// The matches among `chunks`, in chunk order.
    fn range(&self, chunks: std::ops::Range<u32>) -> Vec<Hit> {
        match self {
            Matches::Lexical { bm25, ideal } => {
                let mut out = Vec::new();
                bm25.each_in(chunks, |c, s| out.push(lexical_hit(c, s, *ideal)));
                out
            }
            Matches::Listed(hits) => {
                let from = hits.partition_point(|h| h.chunk < chunks.start);
                let to = hits.partition_point(|h| h.chunk < chunks.end);
                hits[from..to.max(from)].to_vec()
            }
        }
    }
}

fn lexical_hit(chunk: u32, bm25: f32, ideal: f32) -> Hit {
    Hit {
        chunk,
        score: lexical_relevance(bm25, ideal),
        lexical: bm25,
        semantic: 0.0,
    }
}

/// Every candidate in scope, in chunk order: [`head`] ranks what a request reads. For a
/// hybrid query also the lexical side's scores of every chunk, which the learned second
/// stage reads again (one pass over the postings, not two).
#[cfg_attr(not(feature = "vectors"), allow(unused_variables))]
pub fn rank(
    r: &Retriever,
    analyzer: &Analyzer,
    terms: &[QueryTerm],
    query: Option<&[f32]>,
    mode: Mode,
    fusion: Fusion,
    pool: usize,
) -> (Matches, Option<Scores>) {
    match (mode, query) {
        // Only vector search gives a query vector: the lexical build has no other arm.
        #[cfg(feature = "vectors")]
        (Mode::Semantic, Some(q)) => {
            // In chunk order, as the other modes give them.
            let by_chunk: BTreeMap<u32, (f32, f32)> = r
                .semantic(q, pool)
                .into_iter()
                .map(|(chunk, cos)| (chunk, (cos, 0.0)))
                .collect();
            let hits = by_chunk
                .into_iter()
                .map(|(chunk, (cos, _))| Hit {
                    chunk,
                    score: cos.max(0.0),
                    lexical: 0.0,
                    semantic: cos.max(0.0),
                })
                .collect();
            (Matches::Listed(hits), None)
        }
        #[cfg(feature = "vectors")]
        (Mode::Hybrid, Some(q)) => {
            let bm25 = r.lexical(terms);
            let hits = hybrid(r, analyzer, terms, &bm25, q, fusion, pool);
            (Matches::Listed(hits), Some(bm25))
        }
        // Fulltext, or no query vector.
        _ => {
            let matches = Matches::Lexical {
                bm25: r.lexical(terms),
                // Scaled by the query's words matched exactly: a match through a close
                // spelling (weight < 1) scores below the exact word's.
                ideal: r.corpus.ideal_score_unweighted(terms),
            };
            (matches, None)
        }
    }
}

#[cfg(feature = "vectors")]
fn hybrid(
    r: &Retriever,
    analyzer: &Analyzer,
    terms: &[QueryTerm],
    lexical_all: &Scores,
    q: &[f32],
    fusion: Fusion,
    pool_size: usize,
) -> Vec<Hit> {
    let top_lexical = top(|f| lexical_all.each(f), pool_size);

    // chunk → (bm25, cosine)
    let mut pool: BTreeMap<u32, (f32, f32)> = BTreeMap::new();
    for (chunk, bm25) in top_lexical {
        pool.insert(chunk, (bm25, f32::NAN));
    }
    for (chunk, cos) in r.semantic(q, pool_size) {
        let bm25 = lexical_all.get(chunk).unwrap_or(0.0);
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
#[cfg(feature = "vectors")]
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
    for h in &meta.location.section_path {
        heading_terms.extend(analyzer.terms(h));
    }
    query_terms.iter().all(|t| heading_terms.contains(*t))
}

/// Score descending, then `documentPath`, then `chunkIndex`: documents are stored sorted by
/// path with their chunks in order (checked when a bundle is decoded), so that tie-break is
/// the chunk number.
pub fn sort(hits: &mut [Hit]) {
    hits.sort_by(order);
}

/// The ranking's order: [`sort`]'s comparison.
fn order(a: &Hit, b: &Hit) -> Ordering {
    b.score.total_cmp(&a.score).then(a.chunk.cmp(&b.chunk))
}

/// What a request reads from every match.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    /// The head of the ranking: best first, at most `max_per_doc` chunks per document (the
    /// document's best), only those of the first `docs` documents (ranked by their best chunk).
    pub head: Vec<Hit>,
    /// Chunks of the whole ranking after the per-document cap (the response's `total`).
    pub total: usize,
    /// Every document with a match, once each, in document order (what the facets count).
    pub documents: Vec<u32>,
}

/// The ranking of `matches` (in chunk order, as [`rank`] gives them), cut to its first
/// `docs` documents.
///
/// The head reads as the whole ranking would for every page that needs no more than `docs`
/// documents: its first `k` entries (for `k ≤ docs`) belong to its first `k` documents, and
/// leaving out the entries of later documents keeps the order of the rest. So a page of
/// results at `offset + limit ≤ docs`, a page of documents within the first `docs`, and a
/// second stage's pool of at most `docs − 1` entries come out the same. One pass in chunk
/// order groups the matches by document (a document's chunks are consecutive); only the
/// chosen documents' matches are read again and sorted. A query matching a million chunks so
/// costs a walk over them, not a sort (or even a list) of all of them.
pub fn head(corpus: &Corpus, matches: &Matches, max_per_doc: usize, docs: usize) -> Ranking {
    let mut groups: Vec<Group> = Vec::new();
    let mut walk = DocWalk::new(corpus);
    let mut last = None;
    let mut add = |chunk: u32, score: f32| {
        debug_assert!(last < Some(chunk), "matches come in chunk order");
        last = Some(chunk);
        let doc = walk.doc(chunk);
        match groups.last_mut() {
            Some(g) if g.doc == doc => {
                g.count += 1;
                // A later chunk wins only on a higher score.
                if score.total_cmp(&g.score) == Ordering::Greater {
                    (g.chunk, g.score) = (chunk, score);
                }
            }
            _ => groups.push(Group {
                doc,
                count: 1,
                chunk,
                score,
            }),
        }
    };
    match matches {
        // Grouped on raw BM25, and each document's best made a score once: the score is a
        // function of BM25 that never decreases, so a document's best score is its best BM25's
        // (two divisions a match were a third of this pass over a million matches). Where two
        // chunks of a document score the same but not the same BM25, the group may name the
        // later one; only its document is read from it, and ties between documents go by chunk,
        // which is document order, as before.
        Matches::Lexical { bm25, ideal } => {
            // A closure, not `&mut add`: through `&mut F` the call per match was not inlined.
            #[allow(clippy::redundant_closure)]
            bm25.each(|chunk, score| add(chunk, score));
            for g in &mut groups {
                g.score = lexical_relevance(g.score, *ideal);
            }
        }
        Matches::Listed(_) => matches.each(|h| add(h.chunk, h.score)),
    }
    let total = groups
        .iter()
        .map(|g| (g.count as usize).min(max_per_doc))
        .sum();
    let documents: Vec<u32> = groups.iter().map(|g| g.doc).collect();
    if groups.len() > docs {
        // Only the first `docs` documents (by their best match), still in document order.
        let best = |f: &mut dyn FnMut(u32, f32)| groups.iter().for_each(|g| f(g.chunk, g.score));
        let mut chosen: Vec<u32> = top(best, docs)
            .into_iter()
            .map(|(chunk, _)| walk.doc(chunk))
            .collect();
        chosen.sort_unstable();
        groups.retain(|g| chosen.binary_search(&g.doc).is_ok());
    }
    // Each document's best `max_per_doc`, then all of them in order.
    let mut head = Vec::new();
    for g in &groups {
        let (first, n) = corpus.doc_span(g.doc);
        let mut own = matches.range(first..first.saturating_add(n));
        sort(&mut own);
        own.truncate(max_per_doc);
        head.append(&mut own);
    }
    sort(&mut head);
    Ranking {
        head,
        total,
        documents,
    }
}

/// A document's matches: how many, and the best one (its chunk and score).
struct Group {
    doc: u32,
    count: u32,
    chunk: u32,
    score: f32,
}

/// The `k` best of `scored` (chunk, score) pairs, given in chunk order: score descending,
/// then chunk, as the ranking orders. One pass: pairs above the `k`-th best score so far are
/// kept, and when `2k` are kept they are sorted and cut to `k`, which raises the bar. A pair
/// that only ties the bar comes after the `k` it ties (chunk order), so it never enters. A
/// million matches so cost one comparison each and no list of them (a histogram of their
/// scores in two passes, before, was a tenth of a hybrid request).
fn top(scored: impl Fn(&mut dyn FnMut(u32, f32)), k: usize) -> Vec<(u32, f32)> {
    let mut top: Vec<(u32, f32)> = Vec::new();
    if k == 0 {
        return top;
    }
    let best_first = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    let mut bar: Option<f32> = None;
    scored(&mut |chunk, score| {
        if bar.is_some_and(|bar| score.total_cmp(&bar) != Ordering::Greater) {
            return;
        }
        top.push((chunk, score));
        if top.len() == 2 * k {
            // Scores that only rise along the chunks pass the bar every time: a sort of 2k
            // every k pairs, O(n log k) at worst (`select_nth_unstable_by` would make it
            // linear, and cost the lexical wasm build 1.6 KB brotli).
            top.sort_by(best_first);
            top.truncate(k);
            bar = Some(top[k - 1].1);
        }
    });
    top.sort_by(best_first);
    top.truncate(k);
    top
}

/// The document of chunk after chunk. Hits in chunk order (as BM25 gives them) stay in a
/// document or move on to a later one, found along the list of each document's first chunk by
/// a gallop forward from the current document and a binary search in the last stride, inline:
/// a query over 110K documents moves tens of thousands of times, and a lookup through
/// [`Corpus`] each time (a binary search over every document, a call per step in the lexical
/// wasm build) was a tenth of a Worker's time.
struct DocWalk<'a> {
    firsts: &'a [u32],
    doc: u32,
    span: std::ops::Range<u32>,
}

impl<'a> DocWalk<'a> {
    fn new(corpus: &Corpus<'a>) -> DocWalk<'a> {
        DocWalk {
            firsts: corpus.doc_firsts(),
            doc: 0,
            span: 0..0,
        }
    }

    /// Inlined always (most chunks stay in the last document), the rest out of line.
    fn doc(&mut self, chunk: u32) -> u32 {
        if self.span.contains(&chunk) {
            return self.doc;
        }
        self.move_to(chunk)
    }

    #[inline(never)]
    fn move_to(&mut self, chunk: u32) -> u32 {
        let firsts = self.firsts;
        let from = (self.span.end != 0 && chunk >= self.span.end).then_some(self.doc as usize);
        let lo = doc_in(firsts, chunk, from);
        self.doc = lo as u32;
        self.span = firsts[lo]..firsts[lo + 1];
        self.doc
    }
}

/// The document holding `chunk`, given each document's first chunk and then the chunk count
/// (`chunk` below it): the last one starting at or before it (empty documents before it share
/// its first chunk), as [`SplitBundle::doc_of`](crate::bundle::split::SplitBundle::doc_of)
/// finds it. With `from`, a document starting at or before `chunk`, a gallop forward from
/// there narrows the search to its last stride; else it is over them all.
fn doc_in(firsts: &[u32], chunk: u32, from: Option<usize>) -> usize {
    let last = firsts.len() - 1;
    // firsts[lo] <= chunk < firsts[hi] (firsts[last] is the chunk count).
    let (lo, hi) = match from {
        Some(from) => {
            let (mut lo, mut step) = (from, 1);
            let hi = loop {
                let next = (lo + step).min(last);
                if next == lo || firsts[next] > chunk {
                    break next;
                }
                lo = next;
                step *= 2;
            };
            (lo, hi)
        }
        None => (0, last),
    };
    lo + firsts[lo..hi].partition_point(|&f| f <= chunk) - 1
}

/// The fused ranking's head, and what the response counts of the whole ranking.
pub struct Fused {
    /// Best first: the documents of every page of the request, and of the second stage's
    /// pool with the entry after it.
    pub head: Vec<Hit>,
    /// Chunks of the whole ranking after the per-document cap (the response's `total`).
    pub total: usize,
    /// Every document with a match, once each, in document order (what the facets count).
    pub documents: Vec<u32>,
    /// Hybrid's BM25 scores, which the learned second stage reads (the lexical build has
    /// neither).
    #[cfg_attr(not(feature = "vectors"), allow(dead_code))]
    pub bm25: Option<Scores>,
}

impl Engine {
    /// Fuse: the retrievers' candidates for `terms` and `vector` as one ranking ([`rank`]),
    /// its matches only ([`semantic_matches`]), cut after the documents the request's pages
    /// and `room` more (the second stage's reach) ([`head`]).
    pub(super) fn fuse(
        &self,
        retriever: &Retriever,
        plan: &Plan,
        terms: &[QueryTerm],
        vector: Option<&[f32]>,
        mode: Mode,
        room: usize,
    ) -> Fused {
        let corpus = retriever.corpus;
        let pool = super::retrieve::pool_size(plan);
        let fusion = self.calibration.fusion;
        let (matches, bm25) = rank(retriever, &self.analyzer, terms, vector, mode, fusion, pool);
        #[cfg(feature = "vectors")]
        let matches = semantic_matches(matches, corpus.header(), self.calibration.match_floor);
        let docs = plan.offset + plan.limit + room;
        let ranking = head(corpus, &matches, plan.max_chunks_per_document, docs);
        Fused {
            head: ranking.head,
            total: ranking.total,
            documents: ranking.documents,
            bm25,
        }
    }
}

/// What matches: a chunk holding a query word (or a close spelling of one), or, on the
/// semantic side, one close enough by the model's match rule ([`crate::embed::match_rule`],
/// or the host's `floor`). The rest of the nearest neighbours (in a small collection, all of
/// it) is not an answer: it is neither returned nor counted in `total` and the facets.
/// (Without vector search every answer is lexical, and so is every fulltext one.)
#[cfg(feature = "vectors")]
fn semantic_matches(
    matches: Matches,
    header: &crate::bundle::Header,
    floor: Option<f32>,
) -> Matches {
    let Matches::Listed(mut hits) = matches else {
        return matches;
    };
    let rule = match floor {
        Some(floor) => crate::embed::MatchRule {
            floor,
            within_best: None,
        },
        None => header
            .embedding
            .as_ref()
            .map(|m| crate::embed::match_rule(&m.id))
            .unwrap_or_default(),
    };
    let best = hits.iter().map(|h| h.semantic).fold(0.0, f32::max);
    let floor = match rule.within_best {
        Some(d) => rule.floor.max(best - d),
        None => rule.floor,
    };
    hits.retain(|h| h.lexical > 0.0 || h.semantic >= floor);
    Matches::Listed(hits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::split;
    use crate::search::corpus::Data;

    /// The whole ranking the slow way: every hit sorted, then capped per document.
    fn whole(corpus: &Corpus, mut hits: Vec<Hit>, max: usize) -> Vec<Hit> {
        sort(&mut hits);
        let mut seen = vec![0usize; corpus.n_docs()];
        hits.retain(|h| {
            let d = corpus.doc_of(h.chunk) as usize;
            seen[d] += 1;
            seen[d] <= max
        });
        hits
    }

    /// Its first `docs` documents, in order of first appearance.
    fn first_documents(corpus: &Corpus, ranked: &[Hit], docs: usize) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        for h in ranked {
            let d = corpus.doc_of(h.chunk);
            if !out.contains(&d) {
                out.push(d);
            }
        }
        out.truncate(docs);
        out
    }

    /// The one-pass top equals a sort of every pair cut to `k`: ties by chunk, `k` of 0, 1,
    /// around the pair count and past it, scores that rise along the chunks (every pair
    /// passes the bar) and fall.
    #[test]
    fn top_is_a_sort_of_every_pair_cut_to_k() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        for round in 0..300 {
            let n = next(300) as u32;
            let pairs: Vec<(u32, f32)> = (0..n)
                .map(|c| {
                    let score = match round % 3 {
                        0 => next(5) as f32 / 4.0,
                        1 => c as f32,
                        _ => -(c as f32) + next(2) as f32,
                    };
                    (c * 3 + next(3) as u32 % 2, score)
                })
                .collect();
            for k in [0, 1, 2, 7, n as usize / 2, n as usize, n as usize + 5] {
                let mut want = pairs.clone();
                want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                want.truncate(k);
                let got = top(|f| pairs.iter().for_each(|&(c, s)| f(c, s)), k);
                assert_eq!(got, want, "round {round}, k {k}");
            }
        }
    }

    /// The gallop finds what a binary search over every document finds, from any document at
    /// or before the chunk, empty documents (and runs of them) included.
    #[test]
    fn a_chunk_is_found_in_its_document_from_any_earlier_one() {
        // Chunk counts per document, empty ones among them, first and last included.
        let counts = [0u32, 3, 0, 0, 1, 5, 0, 2, 1, 1, 0, 40, 0, 7, 0];
        let mut firsts = vec![0u32];
        for c in counts {
            firsts.push(firsts.last().unwrap() + c);
        }
        let total = *firsts.last().unwrap();
        let n_docs = counts.len();
        for chunk in 0..total {
            let want = firsts[..n_docs].partition_point(|&f| f <= chunk) - 1;
            assert!(counts[want] > 0 && (firsts[want]..firsts[want + 1]).contains(&chunk));
            assert_eq!(doc_in(&firsts, chunk, None), want, "chunk {chunk}");
            for from in (0..n_docs).filter(|&d| firsts[d] <= chunk) {
                assert_eq!(
                    doc_in(&firsts, chunk, Some(from)),
                    want,
                    "chunk {chunk} from {from}"
                );
            }
        }
    }

    #[test]
    fn the_head_is_the_whole_ranking_cut_to_its_first_documents() {
        const FIXTURE: &[u8] = include_bytes!("../../tests/fixtures/bundles/v10-coded.bundle");
        let bundle = crate::bundle::decode(FIXTURE).unwrap();
        // Split too: its walk from chunk to document is its own.
        let files = crate::bundle::split::split(&bundle, FIXTURE).unwrap();
        let core = &files.iter().find(|(n, _)| n == split::CORE_FILE).unwrap().1;
        let mut s = split::SplitBundle::open(core).unwrap();
        for (name, bytes) in &files {
            if name != split::CORE_FILE {
                s.add(name, bytes).unwrap();
            }
        }
        for data in [Data::Whole(bundle), Data::Split(s)] {
            ranking_cut_to_its_first_documents(&data);
        }
    }

    fn ranking_cut_to_its_first_documents(data: &Data) {
        let corpus = Corpus::new(data);
        let n = corpus.n_chunks() as u32;
        assert!(corpus.n_docs() > 4, "the fixture has a few documents");
        // A small generator: reproducible, and with many equal scores (ties break by chunk).
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |m: u32| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % m as u64) as u32
        };
        let cfg = corpus.header().analyzer.clone();
        for round in 0..200 {
            // In chunk order, as fusion hands them over: as a list (semantic, hybrid), or
            // as BM25's scores (fulltext; tf 1..4 at one length, so scores tie often).
            let mut listed = Vec::new();
            let mut postings = Vec::new();
            for chunk in 0..n {
                if next(3) > 0 || round % 7 == 0 {
                    listed.push(Hit {
                        chunk,
                        score: next(4) as f32 / 4.0,
                        lexical: 0.0,
                        semantic: 0.0,
                    });
                    postings.push((chunk, 1 + next(4), 10));
                }
            }
            let matches = match round % 2 {
                0 => Matches::Listed(listed),
                _ => {
                    let df = postings.len();
                    let lists = std::iter::once((df, 1.0, 0, postings.into_iter()));
                    Matches::Lexical {
                        bm25: crate::index::lexical::bm25(
                            &cfg, n as usize, n as usize, 10.0, lists,
                        ),
                        ideal: 2.5,
                    }
                }
            };
            let mut hits = Vec::new();
            matches.each(|h| hits.push(h));
            let max = 1 + next(3) as usize;
            let docs = next(corpus.n_docs() as u32 + 2) as usize;
            let all = whole(&corpus, hits.clone(), max);
            let got = head(&corpus, &matches, max, docs);

            assert_eq!(got.total, all.len(), "round {round}");
            let mut documents = got.documents.clone();
            documents.sort_unstable();
            let mut expected: Vec<u32> = hits.iter().map(|h| corpus.doc_of(h.chunk)).collect();
            expected.sort_unstable();
            expected.dedup();
            assert_eq!(documents, expected, "round {round}");

            let first = first_documents(&corpus, &all, docs);
            let cut: Vec<Hit> = all
                .iter()
                .filter(|h| first.contains(&corpus.doc_of(h.chunk)))
                .cloned()
                .collect();
            assert_eq!(got.head, cut, "round {round}: docs {docs}, max {max}");
            // So every page within the first `docs` entries reads as the whole ranking's.
            let k = docs.min(all.len());
            assert_eq!(got.head[..k], all[..k], "round {round}");
        }
    }
}
