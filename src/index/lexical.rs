//! BM25 over chunks. Terms come from [`crate::analyze`]; a term's frequency in a chunk is
//! weighted by where it appears (title > headings/description > body: a simple BM25F), and the
//! chunk length used for normalization is the same weighted count.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::analyze::AnalyzerConfig;
use crate::error::{Error, Result};

/// Term dictionary and postings. `terms` is sorted and unique; `postings[i]` belongs to
/// `terms[i]`. Chunk ids in postings are delta-encoded (postcard writes them as varints).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LexicalIndex {
    pub chunk_lengths: Vec<u32>,
    pub terms: Vec<String>,
    pub postings: Vec<Postings>,
    /// [`average_length`] of `chunk_lengths`, worked out on the first query (not stored: a
    /// pass over every chunk, which each query used to pay; 1.35M chunks at 100K documents).
    #[serde(skip)]
    average: Derived<f32>,
}

/// A value worked out once from the rest of its struct: never part of its equality.
#[derive(Debug, Clone, Default)]
struct Derived<T>(std::sync::OnceLock<T>);

impl<T> PartialEq for Derived<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Postings {
    /// First entry is the chunk id itself, then differences to the previous id.
    pub chunk_deltas: Varints,
    /// Weighted term frequency per posting.
    pub tfs: Varints,
}

impl Postings {
    /// (chunk, weighted tf) pairs in chunk order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        chunks(self.chunk_deltas.iter()).zip(self.tfs.iter())
    }
}

/// A list of `u32` kept as the varints postcard writes for a `Vec<u32>` (LEB128, 7 bits a
/// byte), on the wire and in memory alike. Postings are mostly small numbers (chunk steps,
/// term frequencies, chunk lengths): one or two bytes each instead of four, so a Worker
/// holding a hundred shards' postings holds about their file size, not three times it. Read
/// in order only, which is how BM25 reads postings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Varints {
    len: u32,
    bytes: Vec<u8>,
}

impl Varints {
    pub fn push(&mut self, v: u32) {
        push_varint(&mut self.bytes, v);
        self.len += 1;
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The numbers, in order.
    pub fn iter(&self) -> VarintIter<'_> {
        VarintIter {
            bytes: &self.bytes,
            left: self.len,
        }
    }
}

impl FromIterator<u32> for Varints {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Varints {
        let mut out = Varints::default();
        iter.into_iter().for_each(|v| out.push(v));
        out
    }
}

/// [`Varints::iter`].
#[derive(Debug, Clone)]
pub struct VarintIter<'a> {
    bytes: &'a [u8],
    left: u32,
}

impl Iterator for VarintIter<'_> {
    type Item = u32;

    // Always: BM25 reads every posting through here, and the lexical wasm build (optimized
    // for size) otherwise calls it per number.
    #[inline(always)]
    fn next(&mut self) -> Option<u32> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // Written by `push_varint`, so whole; a short read ends the list instead of panicking.
        let mut v = 0u32;
        let mut shift = 0;
        while let Some((&b, rest)) = self.bytes.split_first() {
            self.bytes = rest;
            v |= ((b & 0x7f) as u32).wrapping_shl(shift);
            if b < 0x80 {
                return Some(v);
            }
            shift += 7;
        }
        self.left = 0;
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

impl ExactSizeIterator for VarintIter<'_> {}

impl Serialize for Varints {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for v in self.iter() {
            seq.serialize_element(&v)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Varints {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Varints, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Varints;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of numbers")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Varints, A::Error> {
                let mut out = Varints::default();
                // The length on the wire is a claim: reserve what a small list needs at most.
                out.bytes.reserve(seq.size_hint().unwrap_or(0).min(1 << 16));
                while let Some(v) = seq.next_element::<u32>()? {
                    if out.len == u32::MAX {
                        return Err(serde::de::Error::custom("too many numbers"));
                    }
                    out.push(v);
                }
                out.bytes.shrink_to_fit();
                Ok(out)
            }
        }
        d.deserialize_seq(Visit)
    }
}

/// Ids from a delta-encoded list (the first entry is the id itself): postings' chunk ids, and
/// a split core's fragment starts. Sums wrap, so a hostile list never panics; what would
/// wrap is not increasing, which [`check_deltas`] and the split core's check refuse.
pub fn chunks(deltas: impl Iterator<Item = u32>) -> impl Iterator<Item = u32> {
    let mut chunk = 0u32;
    deltas.map(move |d| {
        chunk = chunk.wrapping_add(d);
        chunk
    })
}

/// The delta encoding [`chunks`] reads: each id's step from the one before (the first entry
/// is the id itself). Steps wrap, so a list that does not increase still round-trips.
pub fn deltas(ids: impl Iterator<Item = u32>) -> impl Iterator<Item = u32> {
    let mut previous = 0u32;
    ids.map(move |id| {
        let step = id.wrapping_sub(previous);
        previous = id;
        step
    })
}

/// Checks that delta-encoded postings are strictly increasing chunk ids below `n_chunks`,
/// what every reader of postings relies on (once, when a bundle or shard is loaded). The
/// error says which way they fail.
pub fn check_deltas(
    deltas: impl Iterator<Item = u32>,
    n_chunks: usize,
) -> std::result::Result<(), &'static str> {
    let mut chunk = 0u64;
    for (i, d) in deltas.enumerate() {
        if i > 0 && d == 0 {
            return Err("repeat a chunk");
        }
        chunk += d as u64;
        if chunk >= n_chunks as u64 {
            return Err("point past the last chunk");
        }
    }
    Ok(())
}

/// BM25's idf for a term in `df` of `n` chunks.
pub fn bm25_idf(n: usize, df: usize) -> f32 {
    let (n, df) = (n as f32, df as f32);
    // libm's logf, so native and wasm agree to the bit (the platform logs may not).
    libm::logf(1.0 + (n - df + 0.5) / (df + 0.5))
}

/// The average chunk length BM25 normalizes by (a split bundle stores this exact value).
pub fn average_length(chunk_lengths: &[u32]) -> f32 {
    let n = chunk_lengths.len().max(1);
    (chunk_lengths.iter().map(|&l| l as f64).sum::<f64>() / n as f64).max(1.0) as f32
}

/// BM25 over `n` chunks, `idf_n` of them counted for idf (the chunks a reader may see, when
/// some are restricted; else `n`), at average length `avg_len`: `lists` gives, per distinct query term, its document frequency, the
/// weight its matches count at (1 for a word of the query, less for a stand-in such as a close
/// spelling or a completion), the query word it stands for (a group number) and its postings
/// as (chunk, weighted tf, chunk length) in chunk order, grouped by word. A chunk scores the
/// sum over the query's words of the best of each word's terms, so a chunk holding three
/// completions of one prefix counts it once. Returns the score of every chunk in some list
/// ([`Scores`], read in chunk order). The whole and the split bundle both score through here,
/// so their scores agree to the bit.
pub fn bm25<P>(
    cfg: &AnalyzerConfig,
    n: usize,
    idf_n: usize,
    avg_len: f32,
    lists: impl Iterator<Item = (usize, f32, usize, P)>,
) -> Scores
where
    P: Iterator<Item = (u32, u32, u32)>,
{
    if n == 0 {
        return Scores::default();
    }
    let lists: Vec<_> = lists.collect();
    let (mut scores, mut matched, spare_best, norms) = SPARE.with(|s| {
        let mut s = s.borrow_mut();
        let spare = &mut *s;
        (
            zeroed(&mut spare.scores, n),
            zeroed(&mut spare.matched, n.div_ceil(64)),
            std::mem::take(&mut spare.best),
            Norms::take(&mut spare.norms, cfg, avg_len),
        )
    });
    // A word searched through several terms (stand-ins) keeps its best term per chunk here,
    // added to `scores` when the word is done; a word of one term adds straight to `scores`
    // (the same sum), and the table is not even made when every word has one term.
    let alone: Vec<bool> = (0..lists.len())
        .map(|i| {
            (i == 0 || lists[i - 1].2 != lists[i].2)
                && lists.get(i + 1).is_none_or(|next| next.2 != lists[i].2)
        })
        .collect();
    let mut best = match alone.contains(&false) {
        true => zeroed(&mut { spare_best }, n),
        false => spare_best,
    };
    let mut in_word: Vec<u32> = Vec::new();
    // `matched`: chunks with a match, as bits, read back in chunk order without sorting them.
    let mut word = None;
    let flush = |scores: &mut [f32], best: &mut [f32], in_word: &mut Vec<u32>| {
        for c in in_word.drain(..) {
            let c = c as usize;
            scores[c] += best[c];
            best[c] = 0.0;
        }
    };
    {
        // Slices, not the `Vec`s: indexing a `Vec` goes through `Index`, which the
        // size-optimized wasm build calls rather than inlines.
        let (scores, best, matched) = (&mut scores[..], &mut best[..], &mut matched[..]);
        let norms = &norms;
        for ((df, weight, group, postings), alone) in lists.into_iter().zip(alone) {
            if word != Some(group) {
                flush(scores, best, &mut in_word);
                word = Some(group);
            }
            let idf = weight * bm25_idf(idf_n, df);
            if alone {
                for (chunk, tf, len) in postings {
                    let c = chunk as usize;
                    if scores[c] == 0.0 {
                        matched[c / 64] |= 1 << (c % 64);
                    }
                    // max(0, s), written out: `f32::max` is a libm call in wasm.
                    let s = term_score(cfg, norms, idf, tf, len);
                    scores[c] += if s > 0.0 { s } else { 0.0 };
                }
                continue;
            }
            for (chunk, tf, len) in postings {
                let c = chunk as usize;
                let s = term_score(cfg, norms, idf, tf, len);
                if best[c] == 0.0 {
                    in_word.push(chunk);
                    if scores[c] == 0.0 {
                        matched[c / 64] |= 1 << (c % 64);
                    }
                }
                if s > best[c] {
                    best[c] = s;
                }
            }
        }
        flush(scores, best, &mut in_word);
    }
    // Every entry of `best` is back to 0.
    let _ = SPARE.try_with(|s| {
        let mut s = s.borrow_mut();
        s.best = best;
        s.norms = norms;
    });
    Scores { scores, matched }
}

/// One posting's BM25 (inlined always: it runs per posting, and the lexical wasm build,
/// optimized for size, would otherwise call it).
#[inline(always)]
fn term_score(cfg: &AnalyzerConfig, norms: &Norms, idf: f32, tf: u32, len: u32) -> f32 {
    let tf = tf as f32;
    idf * tf * (cfg.k1 + 1.0) / (tf + norms.get(len))
}

/// `k1 · (1 − b + b · len / avg_len)`, BM25's length normalization, worked out once per length
/// below [`Norms::LENGTHS`] (nearly every chunk: a chunk fits the model's 256 tokens, and its
/// title counts three times) and kept per thread while the average and the parameters stay
/// the same. The table holds what the expression gives, so a score is the same float either
/// way; it spares a division a posting, a query over 1.35M chunks reading a million.
#[derive(Default)]
struct Norms {
    /// What the table was made for.
    k1: f32,
    b: f32,
    avg_len: f32,
    table: Vec<f32>,
}

impl Norms {
    const LENGTHS: usize = 2048;

    fn of(k1: f32, b: f32, avg_len: f32, len: u32) -> f32 {
        k1 * (1.0 - b + b * len as f32 / avg_len)
    }

    /// The spare table if it was made for these parameters, else a new one.
    fn take(spare: &mut Norms, cfg: &AnalyzerConfig, avg_len: f32) -> Norms {
        let spare = std::mem::take(spare);
        let (k1, b) = (cfg.k1, cfg.b);
        let bits = |params: [f32; 3]| params.map(f32::to_bits);
        if bits([spare.k1, spare.b, spare.avg_len]) == bits([k1, b, avg_len])
            && spare.table.len() == Self::LENGTHS
        {
            return spare;
        }
        let table = (0..Self::LENGTHS as u32)
            .map(|len| Self::of(k1, b, avg_len, len))
            .collect();
        Norms {
            k1,
            b,
            avg_len,
            table,
        }
    }

    #[inline(always)]
    fn get(&self, len: u32) -> f32 {
        match self.table.get(len as usize) {
            Some(&n) => n,
            None => Self::of(self.k1, self.b, self.avg_len, len),
        }
    }
}

/// One set of score tables per thread, kept between queries. A query over 1.35M chunks needs
/// two 5.4 MB tables: made afresh each time, they cost page faults natively, and in a wasm
/// instance (whose memory never shrinks) the shards a query loads settle in the holes freed
/// tables leave, so the next table grows the memory again (a Worker isolate went past 128 MB
/// that way). Tables come back all zero: [`Scores`] clears what it set when dropped.
#[derive(Default)]
struct Spare {
    scores: Vec<f32>,
    matched: Vec<u64>,
    best: Vec<f32>,
    norms: Norms,
}

thread_local! {
    static SPARE: std::cell::RefCell<Spare> = std::cell::RefCell::default();
}

/// `spare` if it has `n` entries (all zero, as spare tables are kept), else `n` new zeros.
fn zeroed<T: Copy + Default>(spare: &mut Vec<T>, n: usize) -> Vec<T> {
    match spare.len() == n {
        true => std::mem::take(spare),
        false => vec![T::default(); n],
    }
}

/// BM25 scores of the chunks that hold a query term: a score for every chunk of the
/// collection and a bit for each one that matched, read back in chunk order. A common word
/// matches a million chunks of a large collection; kept this way they cost 4 bytes and a bit
/// per chunk of the collection, and no list of the matches is ever made, sorted or copied.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scores {
    scores: Vec<f32>,
    matched: Vec<u64>,
}

impl Scores {
    /// The score of `chunk`, if it matched.
    pub fn get(&self, chunk: u32) -> Option<f32> {
        let c = chunk as usize;
        let bit = self
            .matched
            .get(c / 64)
            .is_some_and(|w| w >> (c % 64) & 1 == 1);
        bit.then(|| self.scores[c])
    }

    /// `f(chunk, score)` for every match, in chunk order.
    pub fn each(&self, f: impl FnMut(u32, f32)) {
        self.each_in(0..u32::MAX, f)
    }

    /// `f(chunk, score)` for the matches among `chunks`, in chunk order. (Plain loops: the
    /// lexical wasm build is optimized for size, and iterator adapters there cost 1.5× here.)
    pub fn each_in(&self, chunks: std::ops::Range<u32>, mut f: impl FnMut(u32, f32)) {
        let (scores, matched) = (&self.scores[..], &self.matched[..]);
        let end = (chunks.end as usize).min(scores.len());
        let start = (chunks.start as usize).min(end);
        let mut w = start / 64;
        let mut bits = match matched.get(w) {
            Some(&first) if start < end => first & (u64::MAX << (start % 64)),
            _ => return,
        };
        loop {
            while bits != 0 {
                let c = w * 64 + bits.trailing_zeros() as usize;
                if c >= end {
                    return;
                }
                f(c as u32, scores[c]);
                bits &= bits - 1;
            }
            w += 1;
            if w * 64 >= end {
                return;
            }
            bits = matched[w];
        }
    }

    /// Keeps the matches whose bit is set in `allowed` (one bit per chunk, as `Scores` marks
    /// its matches): a word of 64 chunks at a time, and only the matches that go are read.
    pub fn retain(&mut self, allowed: &[u64]) {
        for (w, bits) in self.matched.iter_mut().enumerate() {
            let keep = allowed.get(w).copied().unwrap_or(0);
            let mut gone = *bits & !keep;
            *bits &= keep;
            while gone != 0 {
                let b = gone.trailing_zeros();
                gone &= gone - 1;
                // Only matches hold a score (what `drop` relies on).
                self.scores[w * 64 + b as usize] = 0.0;
            }
        }
    }

    /// How many chunks matched.
    pub fn len(&self) -> usize {
        self.matched.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.matched.iter().all(|&w| w == 0)
    }
}

impl Drop for Scores {
    /// Hands the tables back for the next query, cleared where this one set them (the 64
    /// scores of each word of bits with a match: one small fill, however dense the matches).
    fn drop(&mut self) {
        for (w, bits) in self.matched.iter_mut().enumerate() {
            if *bits != 0 {
                *bits = 0;
                let end = (w * 64 + 64).min(self.scores.len());
                self.scores[w * 64..end].fill(0.0);
            }
        }
        let (scores, matched) = (
            std::mem::take(&mut self.scores),
            std::mem::take(&mut self.matched),
        );
        let _ = SPARE.try_with(|s| {
            let mut s = s.borrow_mut();
            if !scores.is_empty() {
                (s.scores, s.matched) = (scores, matched);
            }
        });
    }
}

/// Distinct terms, sorted: a repeated query term counts once.
pub fn unique(terms: &[String]) -> Vec<&str> {
    let mut unique: Vec<&str> = terms.iter().map(String::as_str).collect();
    unique.sort_unstable();
    unique.dedup();
    unique
}

/// A term as retrieval uses it: a word of the query, or a stand-in for one (a close spelling
/// of a word the index does not know, a completion of the word being typed), with the weight
/// its matches count at and the query word it stands for.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTerm {
    pub term: String,
    /// 1 for the query's own words; less for stand-ins, so exact matches rank first.
    pub weight: f32,
    /// The query's own term it stands for (itself, for a query word).
    pub word: String,
}

impl QueryTerm {
    pub fn exact(term: &str) -> QueryTerm {
        QueryTerm {
            term: term.to_owned(),
            weight: 1.0,
            word: term.to_owned(),
        }
    }
}

/// Distinct terms of `terms`, each at the highest weight it has (and for that word), as
/// (term, weight, group): grouped by the query word they stand for (group numbers count the
/// words in order), sorted by term inside a group.
pub fn unique_weighted(terms: &[QueryTerm]) -> Vec<(&str, f32, usize)> {
    // (word, term, weight), kept in (word, term) order; a query has a handful of terms, and
    // inserting in place costs the lexical wasm build less code than sorting.
    let mut out: Vec<(&str, &str, f32)> = Vec::with_capacity(terms.len());
    for t in terms {
        let item = (t.word.as_str(), t.term.as_str(), t.weight);
        if let Some(i) = out.iter().position(|e| e.1 == item.1) {
            // The highest weight wins; at the same weight, the first word.
            let e = out[i];
            if !(item.2 > e.2 || (item.2 == e.2 && item.0 < e.0)) {
                continue;
            }
            out.remove(i);
        }
        let at = out.partition_point(|x| (x.0, x.1) < (item.0, item.1));
        out.insert(at, item);
    }
    let mut group = 0;
    let mut last: Option<&str> = None;
    out.into_iter()
        .map(|(word, term, weight)| {
            if last.is_some_and(|w| w != word) {
                group += 1;
            }
            last = Some(word);
            (term, weight, group)
        })
        .collect()
}

/// Collects weighted terms chunk by chunk (in chunk order) and produces a [`LexicalIndex`].
/// Each term's postings grow as varint bytes (the step from the previous chunk, then the
/// weighted tf): about 3 bytes a posting instead of a `(u32, u32)`'s 8 and a `Vec`'s slack
/// (at 110,651 documents the builder holds tens of millions of postings).
#[derive(Debug, Default)]
pub struct LexicalBuilder {
    postings: BTreeMap<String, Growing>,
    lengths: Vec<u32>,
}

/// One term's postings so far.
#[derive(Debug, Default)]
struct Growing {
    bytes: Vec<u8>,
    /// The last chunk added, and how many.
    last: u32,
    count: u32,
}

fn push_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

impl LexicalBuilder {
    /// Adds the next chunk. `fields` are (terms, weight) pairs, e.g. title terms with the
    /// title weight. Returns the chunk's id.
    pub fn add_chunk<'a>(&mut self, fields: impl IntoIterator<Item = (&'a [String], u32)>) -> u32 {
        let id = self.lengths.len() as u32;
        let mut tf: BTreeMap<&str, u32> = BTreeMap::new();
        let mut len = 0u32;
        for (terms, weight) in fields {
            for t in terms {
                *tf.entry(t.as_str()).or_default() += weight;
                len += weight;
            }
        }
        for (term, f) in tf {
            let g = match self.postings.get_mut(term) {
                Some(g) => g,
                None => self.postings.entry(term.to_owned()).or_default(),
            };
            // The first entry is the chunk id itself, then steps.
            push_varint(&mut g.bytes, if g.count == 0 { id } else { id - g.last });
            push_varint(&mut g.bytes, f);
            g.last = id;
            g.count += 1;
        }
        self.lengths.push(len);
        id
    }

    pub fn finish(self) -> LexicalIndex {
        let mut terms = Vec::with_capacity(self.postings.len());
        let mut postings = Vec::with_capacity(self.postings.len());
        for (term, g) in self.postings {
            let (mut chunk_deltas, mut tfs) = (Varints::default(), Varints::default());
            // The builder's bytes hold (step, tf) pairs, read with the postings' own reader.
            let mut pairs = VarintIter {
                bytes: &g.bytes,
                left: g.count.saturating_mul(2),
            };
            while let (Some(step), Some(tf)) = (pairs.next(), pairs.next()) {
                chunk_deltas.push(step);
                tfs.push(tf);
            }
            terms.push(term);
            postings.push(Postings { chunk_deltas, tfs });
        }
        LexicalIndex {
            chunk_lengths: self.lengths,
            terms,
            postings,
            average: Default::default(),
        }
    }
}

impl LexicalIndex {
    pub fn term_id(&self, term: &str) -> Option<usize> {
        self.terms.binary_search_by(|t| t.as_str().cmp(term)).ok()
    }

    /// Number of chunks containing the term.
    pub fn doc_freq(&self, term: &str) -> usize {
        self.term_id(term).map_or(0, |i| self.postings[i].tfs.len())
    }

    /// Inverse document frequency as BM25 uses it; a term absent from the index gets the
    /// highest idf, as if it were in no chunk.
    pub fn idf(&self, term: &str) -> f32 {
        bm25_idf(self.chunk_lengths.len(), self.doc_freq(term))
    }

    /// BM25 scores of every chunk that contains at least one of `terms`, in chunk order.
    /// Repeated query terms count once.
    pub fn score(&self, cfg: &AnalyzerConfig, terms: &[QueryTerm]) -> Scores {
        let avg_len = *self
            .average
            .0
            .get_or_init(|| average_length(&self.chunk_lengths));
        let lists = unique_weighted(terms)
            .into_iter()
            .filter_map(|(term, weight, group)| {
                let p = &self.postings[self.term_id(term)?];
                Some((
                    p.tfs.len(),
                    weight,
                    group,
                    p.iter()
                        .map(|(c, tf)| (c, tf, self.chunk_lengths[c as usize])),
                ))
            });
        let n = self.chunk_lengths.len();
        bm25(cfg, n, n, avg_len, lists)
    }

    /// Terms that start with `prefix`, with their document frequencies, in term order;
    /// `None` when there are more than `cap`.
    pub fn terms_with_prefix(&self, prefix: &str, cap: usize) -> Option<Vec<(&str, usize)>> {
        let from = self.terms.partition_point(|t| t.as_str() < prefix);
        let to = from + self.terms[from..].partition_point(|t| t.starts_with(prefix));
        (to - from <= cap).then(|| {
            self.terms[from..to]
                .iter()
                .zip(&self.postings[from..to])
                .map(|(t, p)| (t.as_str(), p.tfs.len()))
                .collect()
        })
    }

    /// Checks what [`LexicalIndex::score`] relies on, so a bad bundle fails at load time.
    pub fn validate(&self, n_chunks: usize) -> Result<()> {
        let bad = |m: String| Err(Error::Corrupt(format!("lexical section: {m}")));
        if self.chunk_lengths.len() != n_chunks {
            return bad(format!(
                "{} chunk lengths for {n_chunks} chunks",
                self.chunk_lengths.len()
            ));
        }
        if self.terms.len() != self.postings.len() {
            return bad("terms and postings differ in number".into());
        }
        if !self.terms.windows(2).all(|w| w[0] < w[1]) {
            return bad("term dictionary is not sorted".into());
        }
        for (term, p) in self.terms.iter().zip(&self.postings) {
            if p.chunk_deltas.len() != p.tfs.len() || p.tfs.is_empty() {
                return bad(format!("postings of {term:?} are malformed"));
            }
            if let Err(why) = check_deltas(p.chunk_deltas.iter(), n_chunks) {
                return bad(format!("postings of {term:?} {why}"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
