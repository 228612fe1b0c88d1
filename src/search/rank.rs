//! The learned second stage: a small model over cheap features of each candidate.
//!
//! Hybrid fusion ([`super::fuse`]) judges a chunk by two numbers, its BM25 and its cosine. A
//! documentation page has more to say: whether the page as a whole is about the question (its
//! best chunks, how many of the query's words it holds anywhere), whether its title or the
//! section's headings name what was asked, whether an identifier the reader pasted
//! (`--save-dev`, `std::vector`, `Get-ChildItem`) appears verbatim, whether the query *is* the
//! page's title. [`features`] measures these for each candidate of the fused pool from data
//! the engine already holds (postings, vectors, titles, breadcrumbs, chunk text): no model
//! inference, a few milliseconds for a pool of 30 (and the copies riding along, [`pool_len`]).
//! A [`Ranker`] (gradient-boosted trees, fitted by `prebuild/ranker/train.py` on the train
//! split of the project's own questions, its settings chosen on their dev split, committed as
//! `ranker.json`) turns them into a relevance score.
//!
//! Every value is computed in f32 with deterministic operations (libm's `logf`), so native
//! and wasm builds order candidates identically.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::corpus::Corpus;
use super::fuse::Hit;
use super::retrieve::Retriever;
use crate::analyze::Analyzer;
use crate::error::{Error, Result};
use crate::index::lexical::{self, QueryTerm, Scores};

/// Names of the features, in the order [`features`] writes them (and models read them).
pub const FEATURES: [&str; 22] = [
    "fused",
    "cos",
    "lex",
    "doc_cos_max",
    "doc_cos_2nd",
    "cos_gap",
    "doc_lex_max",
    "chunk_cov",
    "doc_cov",
    "title_cov",
    "crumb_cov",
    "title_exact",
    "phrase",
    "ident",
    "first_chunk",
    "depth",
    "doc_chunks",
    "query_terms",
    "sem_rank",
    "fused_rel",
    "cos_rel",
    "doc_cos_rel",
];
pub const N_FEATURES: usize = FEATURES.len();

/// Query terms beyond this many do not count for coverage (a bit mask per chunk holds them).
const MAX_TERMS: usize = 64;

/// What the features need of the query.
pub struct QueryView<'q> {
    /// The query as typed (identifiers are matched in it verbatim).
    pub text: &'q str,
    /// Its analyzed terms, in order (repeats kept: phrases need them).
    pub terms: &'q [String],
    /// What BM25 searched for them (stand-ins for unknown words, completions).
    pub expanded: &'q [QueryTerm],
    pub vector: &'q [f32],
    /// BM25 of `expanded` over every chunk in scope, when the first stage computed it.
    pub bm25: Option<&'q Scores>,
}

/// One row of features per hit of `pool`, in the order of [`FEATURES`].
pub fn features(
    r: &Retriever,
    analyzer: &Analyzer,
    query: &QueryView,
    pool: &[Hit],
) -> Vec<[f32; N_FEATURES]> {
    let corpus = r.corpus;
    let n = corpus.idf_chunks();
    // Distinct terms (at most MAX_TERMS), their idf and Σ idf.
    let distinct: Vec<&str> = lexical::unique(query.terms)
        .into_iter()
        .take(MAX_TERMS)
        .collect();
    let idf: Vec<f32> = distinct
        .iter()
        .map(|t| lexical::bm25_idf(n, corpus.doc_freq(t)))
        .collect();
    let ideal: f32 = idf.iter().sum();
    let weight_of = |mask: u64| -> f32 {
        if ideal <= 0.0 {
            return 0.0;
        }
        let s: f32 = (0..distinct.len())
            .filter(|&i| mask & (1 << i) != 0)
            .map(|i| idf[i])
            .sum();
        s / ideal
    };
    let mask_of = |terms: &[String]| -> u64 {
        distinct
            .iter()
            .enumerate()
            .filter(|(_, t)| terms.iter().any(|x| x == *t))
            .fold(0u64, |m, (i, _)| m | (1 << i))
    };

    // The documents of the pool, and for each the chunks that hold each query term.
    let docs: BTreeSet<u32> = pool.iter().map(|h| corpus.doc_of(h.chunk)).collect();
    let spans: Vec<(u32, u32)> = docs.iter().map(|&d| corpus.doc_span(d)).collect();
    let mut chunk_mask: BTreeMap<u32, u64> = BTreeMap::new();
    for (i, t) in distinct.iter().enumerate() {
        for c in corpus.chunks_with_in(t, &spans) {
            *chunk_mask.entry(c).or_default() |= 1 << i;
        }
    }
    // BM25 of every chunk holding a query term (for a document's best lexical chunk): the
    // first stage's, or computed here.
    let own;
    let bm25 = match query.bm25 {
        Some(scores) => scores,
        None => {
            own = r.lexical(query.expanded);
            &own
        }
    };
    // Per document: best and second-best chunk cosine, best lexical score, term mask.
    let mut doc_stats: BTreeMap<u32, (f32, f32, f32, u64)> = BTreeMap::new();
    for &d in &docs {
        let (first, count) = corpus.doc_span(d);
        let (mut best, mut second, mut lex, mut mask) = (0f32, 0f32, 0f32, 0u64);
        let cosines = r.cosines(query.vector, first..first + count);
        for (c, cos) in (first..first + count).zip(cosines) {
            let cos = cos.unwrap_or(0.0).max(0.0);
            if cos > best {
                second = best;
                best = cos;
            } else if cos > second {
                second = cos;
            }
            if let Some(b) = bm25.get(c) {
                lex = lex.max(normalized(b, ideal));
            }
            mask |= chunk_mask.get(&c).copied().unwrap_or(0);
        }
        doc_stats.insert(d, (best, second, lex, mask));
    }

    let query_terms = distinct.len() as f32;
    let identifiers = identifiers(query.text);
    let query_seq: Vec<&str> = query.terms.iter().map(String::as_str).collect();
    // Semantic rank within the pool: how many hits have a higher cosine (equal cosines share
    // a rank, so identical chunks get identical features and scores).
    let sem_rank: Vec<usize> = pool
        .iter()
        .map(|h| pool.iter().filter(|o| o.semantic > h.semantic).count())
        .collect();

    // The pool's best of each semantic signal: cosines sit in a model's own range (E5's
    // unrelated pairs score ~0.7), so the model also sees each one relative to the best.
    let best_fused = pool.iter().map(|h| h.score).fold(0f32, f32::max);
    let best_cos = pool.iter().map(|h| h.semantic).fold(0f32, f32::max);
    let best_doc_cos = doc_stats.values().map(|s| s.0).fold(0f32, f32::max);
    pool.iter()
        .enumerate()
        .map(|(i, hit)| {
            let meta = corpus.chunk(hit.chunk);
            let d = corpus.doc_of(hit.chunk);
            let doc = corpus.document(d);
            let (doc_cos_max, doc_cos_2nd, doc_lex_max, doc_mask) = doc_stats[&d];
            let title_terms = analyzer.terms(&doc.title);
            let crumb_terms = analyzer.terms(
                &meta
                    .location
                    .section_path
                    .iter()
                    .skip(1)
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(" "),
            );
            let text = corpus.text(hit.chunk);
            let cos = hit.semantic.max(0.0);
            let (_, count) = corpus.doc_span(d);
            [
                hit.score,
                cos,
                normalized(hit.lexical, ideal),
                doc_cos_max,
                doc_cos_2nd,
                doc_cos_max - cos,
                doc_lex_max,
                weight_of(chunk_mask.get(&hit.chunk).copied().unwrap_or(0)),
                weight_of(doc_mask),
                weight_of(mask_of(&title_terms)),
                weight_of(mask_of(&crumb_terms)),
                f32::from(!query_seq.is_empty() && title_terms == query.terms),
                phrase(analyzer, &query_seq, text),
                identifier_match(&identifiers, &doc.title, &meta.location.section_path, text),
                f32::from(meta.chunk_index == 0),
                meta.location.section_path.len().min(6) as f32 / 6.0,
                libm::logf(1.0 + count as f32),
                query_terms.min(10.0) / 10.0,
                1.0 / (1.0 + sem_rank[i] as f32),
                hit.score - best_fused,
                cos - best_cos,
                doc_cos_max - best_doc_cos,
            ]
        })
        .collect()
}

/// How far a document's other chunks fall below its best one, at most (logit units).
pub const WITHIN_DOCUMENT_SPREAD: f32 = 6.0;

/// Documents by the model, chunks within a document by the first stage. The model is trained
/// on page-level judgments (every chunk of a page that answers is labelled as answering), so
/// it knows which page answers, not which of its chunks does: the first stage's fused score,
/// which measures the chunk itself, knows that better. Each chunk gets its document's best
/// logit, lowered by up to [`WITHIN_DOCUMENT_SPREAD`] as its fused score falls short of the
/// best fused score among its document's chunks in the pool. A document's best chunk keeps
/// the document's logit, so the order of documents is the model's.
pub fn order_within_documents(corpus: &Corpus, pool: &[Hit], logits: &mut [f32]) {
    let mut best: BTreeMap<u32, (f32, f32)> = BTreeMap::new();
    for (h, &l) in pool.iter().zip(logits.iter()) {
        let e = best
            .entry(corpus.doc_of(h.chunk))
            .or_insert((f32::NEG_INFINITY, 0.0));
        e.0 = e.0.max(l);
        e.1 = e.1.max(h.score);
    }
    for (h, l) in pool.iter().zip(logits.iter_mut()) {
        let (doc_logit, doc_fused) = best[&corpus.doc_of(h.chunk)];
        let short = if doc_fused > 0.0 {
            1.0 - (h.score / doc_fused).clamp(0.0, 1.0)
        } else {
            0.0
        };
        *l = doc_logit - WITHIN_DOCUMENT_SPREAD * short;
    }
}

/// What makes two documents copies of one page: the same title and file name (versioned
/// reference docs keep `reference/5.1/…/Get-Process.md` and `…/7.4/…/Get-Process.md`).
fn copy_key<'c>(corpus: &'c Corpus, d: u32) -> (&'c str, &'c str) {
    let doc = corpus.document(d);
    let name = doc.path.rsplit('/').next().unwrap_or(&doc.path);
    (doc.title.as_str(), name)
}

/// How many hits of a pool may ride along as copies, per candidate the request asked for.
pub const COPIES_PER_CANDIDATE: usize = 4;

/// The length of the learned stage's pool: the first hits of `ranked` up to `candidates` of
/// them, not counting the hits of a document that is a copy of one ranked above it (copies
/// ride along with their page, up to [`COPIES_PER_CANDIDATE`] × `candidates` of them). Five
/// versions of every page would otherwise fill a pool of 30 with six pages' copies and leave
/// the page that answers out of it; in a collection without copies the pool is the first
/// `candidates` hits.
pub fn pool_len(corpus: &Corpus, ranked: &[Hit], candidates: usize) -> usize {
    let mut pages: BTreeMap<(&str, &str), u32> = BTreeMap::new();
    let (mut counted, mut riding) = (0, 0);
    for (i, h) in ranked.iter().enumerate() {
        let d = corpus.doc_of(h.chunk);
        let first = *pages.entry(copy_key(corpus, d)).or_insert(d);
        if first == d {
            if counted == candidates {
                return i;
            }
            counted += 1;
        } else {
            if riding == COPIES_PER_CANDIDATE * candidates {
                return i;
            }
            riding += 1;
        }
    }
    ranked.len()
}

/// How many distinct pages open the list before a copy of one of them may come (chosen on the
/// dev questions; see `prebuild/ranker/README.md`).
pub const DISTINCT_HEAD: usize = 3;

/// How far apart (logit units) the copies moved below the head stay, in their order.
const COPY_STEP: f32 = 0.05;

/// Distinct pages first. Versioned documentation keeps the same page under several folders
/// (`reference/5.1/…/Get-Process.md`, `…/7.4/…`): five copies of one page fill the top of the
/// list and push the page that answers out of it. A document with the same title and file
/// name as a document ranked above it is a copy. The first [`DISTINCT_HEAD`] pages in rank
/// order that are not copies form the head; every copy ranked among them moves (all its
/// chunks by the same amount, in their order) to just under the head's last page (the last
/// distinct page, when the pool holds fewer), so the
/// copies of a good page still come right after the head instead of sinking below weaker
/// pages. `scores` are the chunks' logits, each chunk carrying its document's order.
pub fn distinct_pages_first(corpus: &Corpus, pool: &[Hit], scores: &mut [f32]) {
    // Documents in rank order, each with its best score.
    let mut docs: Vec<(u32, f32, u32)> = best_per_document(corpus, pool, scores)
        .into_iter()
        .map(|(d, (s, c))| (d, s, c))
        .collect();
    docs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    let mut keys: BTreeSet<(&str, &str)> = BTreeSet::new();
    let mut copies: Vec<(u32, f32)> = Vec::new();
    // The head's last page so far, and how many copies rank above it. With fewer distinct
    // pages than the head holds, every copy above the last of them moves below it.
    let (mut floor, mut above) = (f32::NEG_INFINITY, 0);
    for &(d, s, _) in &docs {
        if !keys.insert(copy_key(corpus, d)) {
            copies.push((d, s));
            continue;
        }
        (floor, above) = (s, copies.len());
        if keys.len() == DISTINCT_HEAD {
            break;
        }
    }
    let shift: BTreeMap<u32, f32> = copies[..above]
        .iter()
        .enumerate()
        .map(|(j, &(d, s))| (d, floor - s - COPY_STEP * (j + 1) as f32))
        .collect();
    move_documents(corpus, pool, scores, &shift);
}

/// Each document of `pool` with its best score in `scores` and, among its chunks with that
/// score, the lowest chunk id (what breaks ties between documents).
fn best_per_document(corpus: &Corpus, pool: &[Hit], scores: &[f32]) -> BTreeMap<u32, (f32, u32)> {
    let mut best: BTreeMap<u32, (f32, u32)> = BTreeMap::new();
    for (h, &s) in pool.iter().zip(scores.iter()) {
        let e = best
            .entry(corpus.doc_of(h.chunk))
            .or_insert((f32::NEG_INFINITY, h.chunk));
        if s > e.0 || (s == e.0 && h.chunk < e.1) {
            *e = (s, h.chunk);
        }
    }
    best
}

/// Adds `by[d]` to the score of every chunk of each document `d` in it: the document moves,
/// its chunks keeping their order.
fn move_documents(corpus: &Corpus, pool: &[Hit], scores: &mut [f32], by: &BTreeMap<u32, f32>) {
    for (h, s) in pool.iter().zip(scores.iter_mut()) {
        if let Some(by) = by.get(&corpus.doc_of(h.chunk)) {
            *s += by;
        }
    }
}

/// How alike a query and a page title must be (Dice of their letter trigrams, [`title_similarity`])
/// for the page to count as the one the query names (chosen on the dev halves of the typo and
/// title sets; see `prebuild/ranker/README.md`).
pub const TITLE_MATCH: f32 = 0.6;

/// How much of a title [`titled_pages_first`] reads: four times the longest query
/// ([`super::MAX_QUERY_CHARS`] characters); a title that long is no title a query is typed as.
const TITLE_CHARS: usize = 4 * super::MAX_QUERY_CHARS;

/// How far apart (logit units) the titled pages stay above the rest of the pool, in order.
const TITLE_STEP: f32 = 0.05;

/// The most alike titled pages that move, at most: as many as a page of results holds.
const TITLED_PAGES: usize = super::request::MAX_LIMIT;

/// Letter trigrams of `s`: lowercased, every run of characters that are neither letters nor
/// digits one space, a space at each end (`"Get-ChildItem"` → ` ge`, `get`, `et `, `t c`, …).
/// Sorted and without repeats.
fn trigrams(s: &str) -> Vec<[char; 3]> {
    let mut chars = vec![' '];
    for c in s.chars().flat_map(char::to_lowercase) {
        let c = if c.is_alphanumeric() { c } else { ' ' };
        if c != ' ' || chars.last() != Some(&' ') {
            chars.push(c);
        }
    }
    if chars.last() != Some(&' ') {
        chars.push(' ');
    }
    let mut grams: Vec<[char; 3]> = chars.windows(3).map(|w| [w[0], w[1], w[2]]).collect();
    grams.sort_unstable();
    grams.dedup();
    grams
}

/// Dice coefficient of the letter trigrams of a query and a title, 0 to 1: 1 for the title
/// itself (case and punctuation aside), high for the title with a typo or its last word cut
/// short as typed, low for a question that merely mentions it.
pub fn title_similarity(query: &str, title: &str) -> f32 {
    dice(&trigrams(query), &trigrams(title))
}

/// Dice coefficient of two sorted sets.
fn dice(a: &[[char; 3]], b: &[[char; 3]]) -> f32 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    (2 * common) as f32 / (a.len() + b.len()) as f32
}

/// Titled pages first. A query that is a page's title, as typed (a typo, the last word cut
/// short), asks for that page: page-level judgments of developer questions cannot teach the
/// model this, and it ranked such pages below others (`prebuild/ranker/README.md`). Every
/// document whose title is at least [`TITLE_MATCH`] alike the query ([`title_similarity`])
/// moves above the pool's best logit, the most alike first (equal ones in the model's order),
/// [`TITLE_STEP`] apart; its chunks move together, keeping their order. Run before
/// [`distinct_pages_first`], which then spaces out the copies of a titled page. A question
/// rarely comes that close to a title: on the 86 dev questions this fired for one. At most
/// [`TITLED_PAGES`] pages move (a page of results holds no more), so the moved logits (the
/// model's lie within −6..3) stay inside [`super::rerank::probability`]'s ±15 and keep their
/// order.
pub fn titled_pages_first(corpus: &Corpus, query: &str, pool: &[Hit], scores: &mut [f32]) {
    let query = trigrams(query);
    let mut titled: Vec<(f32, f32, u32, u32)> = best_per_document(corpus, pool, scores)
        .iter()
        .filter_map(|(&d, &(s, c))| {
            let title = &corpus.document(d).title;
            // Only its first TITLE_CHARS characters: a hostile page's title can be megabytes
            // long, and it would be read for every query the page comes up for.
            let title = match title.char_indices().nth(TITLE_CHARS) {
                Some((end, _)) => &title[..end],
                None => title,
            };
            let sim = dice(&query, &trigrams(title));
            (sim >= TITLE_MATCH).then_some((sim, s, c, d))
        })
        .collect();
    if titled.is_empty() {
        return;
    }
    titled.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(b.1.total_cmp(&a.1))
            .then(a.2.cmp(&b.2))
    });
    titled.truncate(TITLED_PAGES);
    let top = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let n = titled.len();
    let shift: BTreeMap<u32, f32> = titled
        .iter()
        .enumerate()
        .map(|(j, &(_, s, _, d))| (d, top + TITLE_STEP * (n - j) as f32 - s))
        .collect();
    move_documents(corpus, pool, scores, &shift);
}

/// BM25 over Σ idf, capped at 1 (as fusion's lexical signal).
fn normalized(bm25: f32, ideal: f32) -> f32 {
    if ideal > 0.0 {
        (bm25 / ideal).min(1.0)
    } else {
        0.0
    }
}

/// Share of the query's adjacent term pairs that are adjacent in `text` too (0 for a query of
/// one term).
fn phrase(analyzer: &Analyzer, query: &[&str], text: &str) -> f32 {
    if query.len() < 2 {
        return 0.0;
    }
    // The query's few pairs looked for along the text's words (a table of the text's pairs
    // cost more than the words: the second stage reads every pool chunk).
    let mut found = vec![false; query.len() - 1];
    for w in analyzer.terms(text).windows(2) {
        for (pair, found) in query.windows(2).zip(found.iter_mut()) {
            *found = *found || (pair[0] == w[0] && pair[1] == w[1]);
        }
    }
    found.iter().filter(|&&f| f).count() as f32 / (query.len() - 1) as f32
}

/// Words of the query a reader pasted from code: with `::`, `-`, `_`, `.`, `<`, `(`, `/`,
/// `=` or `#` inside, or camelCase, or letters and digits mixed; lowercased, surrounding
/// quotes and punctuation dropped.
pub fn identifiers(query: &str) -> Vec<String> {
    query
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| {
                matches!(
                    c,
                    '`' | '"' | '\'' | ',' | ';' | '?' | '!' | '«' | '»' | '“' | '”'
                )
            })
        })
        .filter(|w| w.chars().count() >= 2)
        .filter(|w| {
            let inner = w.trim_end_matches(['.', ':']);
            let chars: Vec<char> = inner.chars().collect();
            let marks = chars
                .iter()
                .any(|c| matches!(c, ':' | '-' | '_' | '.' | '<' | '(' | '/' | '=' | '#' | '$'));
            let camel = chars
                .windows(2)
                .any(|p| p[0].is_lowercase() && p[1].is_uppercase());
            let mixed =
                chars.iter().any(|c| c.is_ascii_digit()) && chars.iter().any(|c| c.is_alphabetic());
            marks && chars.iter().any(|c| c.is_alphanumeric()) || camel || mixed
        })
        .map(|w| w.to_lowercase())
        .collect()
}

/// Share of `identifiers` found verbatim (case-insensitively) in the title, breadcrumb or text.
fn identifier_match(identifiers: &[String], title: &str, crumbs: &[String], text: &str) -> f32 {
    if identifiers.is_empty() {
        return 0.0;
    }
    let haystack = format!("{title}\n{}\n{text}", crumbs.join("\n")).to_lowercase();
    let found = identifiers
        .iter()
        .filter(|id| haystack.contains(id.as_str()))
        .count();
    found as f32 / identifiers.len() as f32
}

/// A trained ranking model: gradient-boosted regression trees over [`FEATURES`]. The score of
/// a row is `base` plus every tree's leaf value; higher is more relevant.
#[derive(Debug, Clone, Deserialize)]
pub struct Ranker {
    pub id: String,
    pub features: Vec<String>,
    pub base: f32,
    pub trees: Vec<Tree>,
}

/// One tree in flat arrays: node `i` sends a row left when `row[feature[i]] <= threshold[i]`;
/// a child index `< 0` is leaf `!child` (`-1` is leaf 0).
#[derive(Debug, Clone, Deserialize)]
pub struct Tree {
    pub feature: Vec<u32>,
    pub threshold: Vec<f32>,
    pub left: Vec<i32>,
    pub right: Vec<i32>,
    pub leaf: Vec<f32>,
}

/// The committed model (`prebuild/ranker/train.py` writes it).
const DEFAULT_RANKER: &str = include_str!("ranker.json");

impl Ranker {
    /// Parses and checks a model: it must name exactly [`FEATURES`], and every node must
    /// point inside its tree (a tree walk can then neither panic nor loop).
    pub fn from_json(json: &str) -> Result<Ranker> {
        let model: Ranker =
            serde_json::from_str(json).map_err(|e| Error::Model(format!("ranker model: {e}")))?;
        if model.features != FEATURES {
            return Err(Error::Model(format!(
                "ranker model {} reads features {:?}; this engine computes {FEATURES:?}",
                model.id, model.features
            )));
        }
        for (k, t) in model.trees.iter().enumerate() {
            let nodes = t.feature.len();
            let bad = t.threshold.len() != nodes
                || t.left.len() != nodes
                || t.right.len() != nodes
                || t.leaf.is_empty()
                || t.feature.iter().any(|&f| f as usize >= N_FEATURES)
                || t.threshold.iter().any(|x| x.is_nan())
                || t.leaf.iter().any(|x| !x.is_finite())
                || t.left.iter().chain(&t.right).enumerate().any(|(i, &c)| {
                    let node = i % nodes.max(1);
                    if c < 0 {
                        (!c) as usize >= t.leaf.len()
                    } else {
                        // Children come after their parent: no cycles.
                        c as usize >= nodes || c as usize <= node
                    }
                });
            if bad {
                return Err(Error::Model(format!("ranker model: tree {k} is malformed")));
            }
        }
        Ok(model)
    }

    /// The model the engine ranks with unless a host installs another second stage.
    pub fn default_model() -> &'static Ranker {
        static MODEL: std::sync::OnceLock<Ranker> = std::sync::OnceLock::new();
        MODEL.get_or_init(|| Ranker::from_json(DEFAULT_RANKER).expect("the committed ranker loads"))
    }

    pub fn score(&self, row: &[f32; N_FEATURES]) -> f32 {
        let mut s = self.base;
        for t in &self.trees {
            if t.feature.is_empty() {
                s += t.leaf[0];
                continue;
            }
            let mut node = 0usize;
            loop {
                let go = if row[t.feature[node] as usize] <= t.threshold[node] {
                    t.left[node]
                } else {
                    t.right[node]
                };
                if go < 0 {
                    s += t.leaf[(!go) as usize];
                    break;
                }
                node = go as usize;
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The share of the query's adjacent pairs that the text holds adjacent, each pair of the
    /// query counted (a repeated one twice), in the text's order only.
    #[test]
    fn phrase_counts_the_query_pairs_found_adjacent_in_the_text() {
        let a = Analyzer::new();
        let q = |s: &str| a.terms(s);
        let cases = [
            ("remove item", "Use Remove-Item to remove items.", 1.0),
            ("remove item", "The item to remove.", 0.0),
            ("copy item copy item", "copy item then", 2.0 / 3.0),
            ("copy item force", "first copy the item, later force", 0.5),
            ("copy item force", "item copy, force copy", 0.0),
            (
                "copy item force",
                "copy item, with force: copy-item -force",
                1.0,
            ),
            ("item copy remove", "remove item copy", 0.5),
            ("remove", "remove", 0.0),
        ];
        for (query, text, want) in cases {
            let terms = q(query);
            let seq: Vec<&str> = terms.iter().map(String::as_str).collect();
            assert_eq!(phrase(&a, &seq, text), want, "{query:?} in {text:?}");
        }
    }

    #[test]
    fn identifiers_are_what_a_reader_pastes_from_code() {
        assert_eq!(
            identifiers("how to use std::vector with `--save-dev` in Get-ChildItem, LNK2019?"),
            ["std::vector", "--save-dev", "get-childitem", "lnk2019"]
        );
        assert_eq!(identifiers("what is a defineModel macro"), ["definemodel"]);
        assert!(identifiers("how do I publish a package").is_empty());
        assert!(identifiers("Что такое v-model?").contains(&"v-model".to_owned()));
    }

    #[test]
    fn a_title_as_typed_is_alike_and_a_question_is_not() {
        assert_eq!(title_similarity("Get-ChildItem", "get childitem"), 1.0);
        assert_eq!(
            title_similarity("Terminating Errors", "Terminating Errors"),
            1.0
        );
        for typed in [
            "Termintaing Errors",
            "Terminating Err",
            "terminating  errors!",
        ] {
            let s = title_similarity(typed, "Terminating Errors");
            assert!(s >= TITLE_MATCH, "{typed}: {s}");
        }
        assert!(title_similarity("Спрятать элемнт", "Спрятать элемент") >= TITLE_MATCH);
        for question in [
            "how do I stop the pipeline on terminating errors",
            "Errors",
            "Terminal",
        ] {
            let s = title_similarity(question, "Terminating Errors");
            assert!(s < TITLE_MATCH, "{question}: {s}");
        }
        assert_eq!(title_similarity("", "Terminating Errors"), 0.0);
        assert_eq!(title_similarity("--", "Terminating Errors"), 0.0);
        assert_eq!(title_similarity("Errors", ""), 0.0);
    }

    #[test]
    fn trees_walk_to_their_leaves() {
        let json = format!(
            r#"{{"id":"t","features":{},"base":0.5,"trees":[
              {{"feature":[1,0],"threshold":[0.5,0.2],"left":[1,-2],"right":[-1,-3],"leaf":[10,20,30]}},
              {{"feature":[],"threshold":[],"left":[],"right":[],"leaf":[1]}}]}}"#,
            serde_json::to_string(&FEATURES).unwrap()
        );
        let m = Ranker::from_json(&json).unwrap();
        let mut row = [0f32; N_FEATURES];
        assert_eq!(m.score(&row), 0.5 + 20.0 + 1.0);
        row[0] = 0.3;
        assert_eq!(m.score(&row), 0.5 + 30.0 + 1.0);
        row[1] = 0.9;
        assert_eq!(m.score(&row), 0.5 + 10.0 + 1.0);
    }

    #[test]
    fn malformed_models_are_refused() {
        let feats = serde_json::to_string(&FEATURES).unwrap();
        for tree in [
            r#"{"feature":[0],"threshold":[0],"left":[0],"right":[-1],"leaf":[1]}"#,
            r#"{"feature":[0],"threshold":[0],"left":[-5],"right":[-1],"leaf":[1]}"#,
            r#"{"feature":[99],"threshold":[0],"left":[-1],"right":[-1],"leaf":[1]}"#,
            r#"{"feature":[0],"threshold":[0],"left":[-1],"right":[-1],"leaf":[]}"#,
        ] {
            let json = format!(r#"{{"id":"t","features":{feats},"base":0,"trees":[{tree}]}}"#);
            assert!(Ranker::from_json(&json).is_err(), "{tree}");
        }
        assert!(Ranker::from_json(r#"{"id":"t","features":["x"],"base":0,"trees":[]}"#).is_err());
        Ranker::default_model();
    }
}
