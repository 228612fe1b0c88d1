//! What the pipeline reads, whole or split. A whole bundle has everything; a split bundle has
//! what the host has fetched so far. [`Corpus`] is one request's view of either: a read of a
//! piece that is not loaded yet returns a placeholder and records the file it lives in, and
//! [`Corpus::checkpoint`] (called between stages) turns the records into
//! [`Error::FilesNeeded`], so the host fetches them all in one round and asks again. Answers
//! never contain a placeholder: a request either completes on real data or names its files.

use std::cell::RefCell;

use super::access::View;
use crate::analyze::Language;
use crate::bundle::split::{ShardId, SplitBundle};
use crate::bundle::{Bundle, ChunkLocation, ChunkMeta, Document, Header};
use crate::error::{Error, Result};
use crate::index::lexical::{self, QueryTerm};
use crate::index::spelling::correction_shards;
use crate::index::vector::VectorIndex;

/// The engine's data. (One per engine, so the variants' sizes do not matter; boxing the
/// larger one would cost the lexical wasm build its budget.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Data {
    Whole(Bundle),
    Split(SplitBundle),
}

static NO_DOCUMENT: Document = Document {
    path: String::new(),
    doc_id: String::new(),
    title: String::new(),
    description: None,
    doc_type: String::new(),
    date: None,
    tags: Vec::new(),
    lang: Language::En,
    first_chunk: 0,
    chunk_count: 0,
    citation: None,
    created: None,
    file_size: None,
    date_source: None,
};

static NO_CHUNK: ChunkMeta = ChunkMeta {
    doc: 0,
    chunk_index: 0,
    id: String::new(),
    location: ChunkLocation {
        section_path: Vec::new(),
        anchor: String::new(),
        line_start: 0,
        line_end: 0,
        page_span: None,
    },
};

impl Data {
    pub fn header(&self) -> &Header {
        match self {
            Data::Whole(b) => &b.header,
            Data::Split(s) => s.header(),
        }
    }

    pub fn whole(&self) -> Option<&Bundle> {
        match self {
            Data::Whole(b) => Some(b),
            Data::Split(_) => None,
        }
    }
}

/// One request's view of the data.
pub struct Corpus<'a> {
    data: &'a Data,
    /// What the request's reader may see of a whole bundle that restricts some documents
    /// (`None`: everything). Every count and vocabulary read below is of that part alone.
    #[cfg(feature = "access")]
    view: Option<&'a View>,
    /// Files a read needed, in the order first needed.
    missing: RefCell<Vec<ShardId>>,
    /// The first read that found its data corrupt (a whole bundle's text block that does not
    /// inflate), reported at the next checkpoint.
    corrupt: RefCell<Option<Error>>,
}

impl<'a> Corpus<'a> {
    pub fn new(data: &'a Data) -> Corpus<'a> {
        Corpus {
            data,
            #[cfg(feature = "access")]
            view: None,
            missing: RefCell::new(Vec::new()),
            corrupt: RefCell::new(None),
        }
    }

    /// This corpus as a reader with `view` sees it ([`super::access`]).
    pub fn seen_through(self, view: Option<&'a View>) -> Corpus<'a> {
        #[cfg(feature = "access")]
        return Corpus { view, ..self };
        #[cfg(not(feature = "access"))]
        {
            let _ = view;
            self
        }
    }

    /// The reader's view; always `None` in a build without the `access` feature (which loads
    /// no bundle with restricted documents), so the code that reads one compiles away.
    fn view(&self) -> Option<&'a View> {
        #[cfg(feature = "access")]
        return self.view;
        #[cfg(not(feature = "access"))]
        None
    }

    /// Whether the request's reader may see document `d`.
    pub fn sees_doc(&self, d: u32) -> bool {
        self.view().is_none_or(|v| v.sees_doc(d))
    }

    /// Whether the reader sees every document.
    pub fn sees_all(&self) -> bool {
        self.view().is_none()
    }

    /// The reader's chunks as bits, and how many, when the reader may not see them all.
    pub fn readable_chunks(&self) -> Option<(&'a [u64], usize)> {
        self.view().map(|v| (v.chunk_bits(), v.n_chunks()))
    }

    /// The chunks idf counts: those the reader may see.
    pub fn idf_chunks(&self) -> usize {
        self.view()
            .map_or_else(|| self.n_chunks(), |v| v.n_chunks())
    }

    fn have<T>(&self, read: std::result::Result<T, ShardId>, placeholder: T) -> T {
        read.unwrap_or_else(|shard| {
            self.need(shard);
            placeholder
        })
    }

    fn need(&self, shard: ShardId) {
        let mut missing = self.missing.borrow_mut();
        if !missing.contains(&shard) {
            missing.push(shard);
        }
    }

    fn fail(&self, e: Error) {
        self.corrupt.borrow_mut().get_or_insert(e);
    }

    /// Whether a read so far hit a piece that is not loaded, or corrupt (what it read is a
    /// placeholder).
    pub fn pending(&self) -> bool {
        !self.missing.borrow().is_empty() || self.corrupt.borrow().is_some()
    }

    /// The error of the first corrupt read so far, else `Err(FilesNeeded)` when a read hit a
    /// piece that is not loaded.
    pub fn checkpoint(&self) -> Result<()> {
        if let Some(e) = self.corrupt.borrow_mut().take() {
            return Err(e);
        }
        let missing = self.missing.borrow();
        if missing.is_empty() {
            return Ok(());
        }
        Err(Error::FilesNeeded(
            missing.iter().map(|s| s.file_name()).collect(),
        ))
    }

    pub fn header(&self) -> &'a Header {
        self.data.header()
    }

    pub fn whole(&self) -> Option<&'a Bundle> {
        self.data.whole()
    }

    /// The vectors; of a split bundle, once all its `vec-N.bin` pieces are in (a read before
    /// that records the missing pieces, as any other read of a piece not loaded yet).
    pub fn vectors(&self) -> Option<&'a VectorIndex> {
        // A build without models never embeds a query (and never decodes vectors): saying so
        // here lets the compiler drop vector search from the lexical wasm build.
        #[cfg(not(feature = "vectors"))]
        return None;
        #[cfg(feature = "vectors")]
        match self.data {
            Data::Whole(b) => b.vectors.as_ref(),
            Data::Split(s) => match s.vectors() {
                Ok((v, _)) => Some(v),
                Err(missing) => {
                    missing.into_iter().for_each(|m| self.need(m));
                    None
                }
            },
        }
    }

    pub fn n_chunks(&self) -> usize {
        match self.data {
            Data::Whole(b) => b.docs.chunks.len(),
            Data::Split(s) => s.n_chunks(),
        }
    }

    pub fn n_docs(&self) -> usize {
        match self.data {
            Data::Whole(b) => b.docs.documents.len(),
            Data::Split(s) => s.n_docs(),
        }
    }

    pub fn doc_of(&self, chunk: u32) -> u32 {
        match self.data {
            Data::Whole(b) => b.docs.chunks[chunk as usize].doc,
            Data::Split(s) => s.doc_of(chunk),
        }
    }

    /// Each document's first chunk, then the chunk count (document `d` holds
    /// `firsts[d]..firsts[d + 1]`).
    pub fn doc_firsts(&self) -> &'a [u32] {
        match self.data {
            Data::Whole(b) => &b.docs.tables().firsts,
            Data::Split(s) => s.doc_firsts(),
        }
    }

    /// (first chunk, chunk count) of document `d`.
    pub fn doc_span(&self, d: u32) -> (u32, u32) {
        match self.data {
            Data::Whole(b) => {
                let doc = &b.docs.documents[d as usize];
                (doc.first_chunk, doc.chunk_count)
            }
            Data::Split(s) => s.doc_span(d),
        }
    }

    /// Document type and `YYYY-MM` of document `d` (what facets count).
    pub fn facet_keys(&self, d: u32) -> (&'a str, Option<&'a str>) {
        match self.data {
            Data::Whole(b) => {
                let doc = &b.docs.documents[d as usize];
                (&doc.doc_type, doc.date.as_deref().and_then(|x| x.get(..7)))
            }
            Data::Split(s) => s.facet_keys(d),
        }
    }

    /// Every document's facet keys as numbers, with the names they stand for (type, month + 1
    /// or 0 for undated): a split bundle stores them so, a whole bundle works them out once.
    #[allow(clippy::type_complexity)]
    pub fn facet_ids(&self) -> Option<(&'a [(u32, u32)], &'a [String], &'a [String])> {
        match self.data {
            Data::Whole(b) => {
                let f = &b.docs.tables().facets;
                Some((&f.doc_facets, &f.doc_types, &f.months))
            }
            Data::Split(s) => Some((&s.core.doc_facets, &s.core.doc_types, &s.core.months)),
        }
    }

    pub fn document(&self, d: u32) -> &'a Document {
        match self.data {
            Data::Whole(b) => &b.docs.documents[d as usize],
            Data::Split(s) => self.have(s.document(d), &NO_DOCUMENT),
        }
    }

    pub fn chunk(&self, c: u32) -> &'a ChunkMeta {
        match self.data {
            Data::Whole(b) => &b.docs.chunks[c as usize],
            Data::Split(s) => self.have(s.chunk(c).map(|x| x.0), &NO_CHUNK),
        }
    }

    pub fn text(&self, c: u32) -> &'a str {
        match self.data {
            Data::Whole(b) => b.text.get(c as usize).unwrap_or_else(|e| {
                self.fail(e);
                ""
            }),
            Data::Split(s) => self.have(s.chunk(c).map(|x| x.1), ""),
        }
    }

    /// Every document (filters read them all).
    pub fn all_documents(&self) -> &'a [Document] {
        match self.data {
            Data::Whole(b) => &b.docs.documents,
            Data::Split(s) => self.have(s.all_documents(), &[]),
        }
    }

    /// BM25 of every chunk holding a query term.
    pub fn bm25(&self, terms: &[QueryTerm]) -> lexical::Scores {
        match self.data {
            Data::Whole(b) => match self.view() {
                None => b.lexical.score(&b.header.analyzer, terms),
                // The readable chunks' postings, with their counts: the scores a bundle of
                // the readable documents alone gives.
                Some(v) => {
                    let lx = &b.lexical;
                    let lists = lexical::unique_weighted(terms).into_iter().filter_map(
                        |(term, weight, group)| {
                            let i = lx.term_id(term).filter(|&i| v.df(i) > 0)?;
                            let postings = lx.postings[i]
                                .iter()
                                .filter(|&(c, _)| v.sees_chunk(c))
                                .map(|(c, tf)| (c, tf, lx.chunk_lengths[c as usize]));
                            Some((v.df(i), weight, group, postings))
                        },
                    );
                    let n = lx.chunk_lengths.len();
                    lexical::bm25(&b.header.analyzer, n, v.n_chunks(), v.avg_len(), lists)
                }
            },
            Data::Split(s) => {
                let lists: Vec<_> = lexical::unique_weighted(terms)
                    .into_iter()
                    .filter_map(|(t, w, g)| self.have(s.postings(t), None).map(|p| (p, w, g)))
                    .collect();
                lexical::bm25(
                    &s.header().analyzer,
                    s.n_chunks(),
                    s.n_chunks(),
                    s.core.avg_chunk_len,
                    lists
                        .into_iter()
                        .map(|(p, w, g)| (p.tfs.len(), w, g, p.iter())),
                )
            }
        }
    }

    /// Terms that start with `prefix` and their document frequencies, in term order; none
    /// when more than `cap` do.
    pub fn terms_with_prefix(&self, prefix: &str, cap: usize) -> Vec<(&'a str, usize)> {
        let found = match self.data {
            Data::Whole(b) => match self.view() {
                None => b.lexical.terms_with_prefix(prefix, cap),
                Some(v) => {
                    let lx = &b.lexical;
                    let from = lx.terms.partition_point(|t| t.as_str() < prefix);
                    let to = from + lx.terms[from..].partition_point(|t| t.starts_with(prefix));
                    let readable: Vec<(&str, usize)> = (from..to)
                        .filter(|&i| v.df(i) > 0)
                        .map(|i| (lx.terms[i].as_str(), v.df(i)))
                        .take(cap + 1)
                        .collect();
                    (readable.len() <= cap).then_some(readable)
                }
            },
            Data::Split(s) => s.terms_with_prefix(prefix, cap).unwrap_or_else(|missing| {
                missing.into_iter().for_each(|m| self.need(m));
                None
            }),
        };
        found.unwrap_or_default()
    }

    /// Number of chunks containing `term`.
    pub fn doc_freq(&self, term: &str) -> usize {
        match self.data {
            Data::Whole(b) => match self.view() {
                None => b.lexical.doc_freq(term),
                Some(v) => b.lexical.term_id(term).map_or(0, |i| v.df(i)),
            },
            Data::Split(s) => self.have(s.postings(term), None).map_or(0, |p| p.tfs.len()),
        }
    }

    /// What a chunk matching every query word once, at average length, would score: Σ idf,
    /// each word at its best stand-in (weight × idf) when it has some. Dividing by it puts
    /// BM25 on a query-independent 0..1 scale (clamped; title matches and repeated terms can
    /// exceed it). A word repeated in the query counts once; the sum runs in term order.
    pub fn ideal_score(&self, terms: &[QueryTerm]) -> f32 {
        self.ideal(terms, true)
    }

    /// [`Corpus::ideal_score`] as if every term were the query's own word (weight 1).
    pub fn ideal_score_unweighted(&self, terms: &[QueryTerm]) -> f32 {
        self.ideal(terms, false)
    }

    fn ideal(&self, terms: &[QueryTerm], weighted: bool) -> f32 {
        let n = self.idf_chunks();
        let mut best: std::collections::BTreeMap<&str, f32> = Default::default();
        for t in terms {
            let w = if weighted { t.weight } else { 1.0 };
            let v = w * lexical::bm25_idf(n, self.doc_freq(&t.term));
            let e = best.entry(t.word.as_str()).or_insert(v);
            *e = e.max(v);
        }
        best.values().sum()
    }

    /// The chunks that contain `term`, in chunk order, read off its chunk ids alone (`None`
    /// for a term the index does not have, or whose split shard is recorded as needed).
    fn term_chunks(&self, term: &str) -> Option<impl Iterator<Item = u32> + 'a> {
        let deltas = match self.data {
            Data::Whole(b) => &b.lexical.postings[b.lexical.term_id(term)?].chunk_deltas,
            Data::Split(s) => &self.have(s.postings(term), None)?.chunk_deltas,
        };
        let view = self.view();
        Some(lexical::chunks(deltas.iter()).filter(move |&c| view.is_none_or(|v| v.sees_chunk(c))))
    }

    /// The first `k` chunks (in chunk order) that contain `term`.
    pub fn first_chunks_with(&self, term: &str, k: usize) -> Vec<u32> {
        self.term_chunks(term)
            .map_or_else(Vec::new, |c| c.take(k).collect())
    }

    /// The chunks (in chunk order) that contain `term` among `spans`, (first chunk, count)
    /// ranges in chunk order that do not overlap (a few documents'). Reads the term's chunk
    /// ids alone, in one merge with the ranges, and stops after the last range: a common
    /// word's postings cover most of a large collection, and the second stage asks this
    /// for each query word.
    #[cfg(feature = "vectors")]
    pub fn chunks_with_in(&self, term: &str, spans: &[(u32, u32)]) -> Vec<u32> {
        let Some(chunks) = self.term_chunks(term) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut at = 0;
        for c in chunks {
            while spans
                .get(at)
                .is_some_and(|&(first, n)| first.saturating_add(n) <= c)
            {
                at += 1;
            }
            match spans.get(at) {
                Some(&(first, _)) if c >= first => out.push(c),
                Some(_) => {}
                None => break,
            }
        }
        out
    }

    /// A split bundle's stored surface forms of `term` (from a loaded vocabulary shard that
    /// files it, or recorded as needed: none until it is loaded); `None` for a whole bundle,
    /// which reads them from the chunks.
    pub fn stored_surfaces(&self, term: &str) -> Option<Vec<String>> {
        let Data::Split(s) = self.data else {
            return None;
        };
        let shards = correction_shards(&[term], s.core.vocab_shards);
        for &i in &shards {
            if let Ok(v) = s.vocabulary(i) {
                let at = v.terms.binary_search_by(|t| t.as_str().cmp(term)).ok();
                return Some(at.map(|i| v.surfaces(i)).unwrap_or_default());
            }
        }
        if let Some(&i) = shards.first() {
            self.need(ShardId::Vocabulary(i));
        }
        Some(Vec::new())
    }

    /// The index terms, with their document frequencies, that a correction of `words` may
    /// be (none for no words): every term of a whole bundle; the terms of a split bundle's
    /// vocabulary shards that file the words' correction keys (recorded as needed until
    /// loaded). In no particular order; from a split bundle, a term filed under two of the
    /// keys comes twice. [`super::expand::close_terms`] keeps the ones that share a key with
    /// its word, each once, so both give the same corrections.
    pub fn correction_candidates(&self, words: &[&str]) -> Vec<(&'a str, usize)> {
        match self.data {
            _ if words.is_empty() => Vec::new(),
            Data::Whole(b) => match self.view() {
                None => b
                    .lexical
                    .terms
                    .iter()
                    .zip(&b.lexical.postings)
                    .map(|(t, p)| (t.as_str(), p.tfs.len()))
                    .collect(),
                Some(v) => (0..b.lexical.terms.len())
                    .filter(|&i| v.df(i) > 0)
                    .map(|i| (b.lexical.terms[i].as_str(), v.df(i)))
                    .collect(),
            },
            Data::Split(s) => {
                let mut out: Vec<(&str, usize)> = Vec::new();
                for i in correction_shards(words, s.core.vocab_shards) {
                    match s.vocabulary(i) {
                        Ok(v) => out.extend(
                            v.terms
                                .iter()
                                .map(String::as_str)
                                .zip(v.dfs.iter().map(|&df| df as usize)),
                        ),
                        Err(shard) => self.need(shard),
                    }
                }
                // A term is filed under each of its keys, so two shards may both hold it: it
                // comes once per shard, and `close_terms` keeps it once. (Over 110K documents a
                // word's shards hold thousands of terms; a linear check for repeats here was a
                // tenth of a Worker's time.)
                out
            }
        }
    }
}

#[cfg(all(test, feature = "vectors"))]
mod tests {
    use super::*;
    use crate::bundle::split::{self, CORE_FILE};

    const FIXTURE: &[u8] = include_bytes!("../../tests/fixtures/bundles/v10-coded.bundle");

    /// The same bundle whole and split (every file added).
    fn both() -> [Data; 2] {
        let bundle = crate::bundle::decode(FIXTURE).unwrap();
        let files = split::split(&bundle, FIXTURE).unwrap();
        let core = &files.iter().find(|(n, _)| n == CORE_FILE).unwrap().1;
        let mut s = SplitBundle::open(core).unwrap();
        for (name, bytes) in &files {
            if name != CORE_FILE {
                s.add(name, bytes).unwrap();
            }
        }
        [Data::Whole(bundle), Data::Split(s)]
    }

    #[test]
    fn chunks_with_in_reads_the_chunks_of_the_given_documents_only() {
        let [whole, split] = both();
        let Data::Whole(bundle) = &whole else {
            unreachable!()
        };
        let n_docs = bundle.docs.documents.len() as u32;
        assert!(n_docs > 3, "the fixture has a few documents");
        let sets: Vec<Vec<u32>> = vec![
            vec![],
            (0..n_docs).collect(),
            (0..n_docs).step_by(2).collect(),
            (1..n_docs).step_by(3).collect(),
            vec![n_docs - 1],
            vec![0],
        ];
        let mut seen = 0;
        for data in [&whole, &split] {
            let corpus = Corpus::new(data);
            for (i, term) in bundle.lexical.terms.iter().enumerate() {
                let all: Vec<u32> = bundle.lexical.postings[i].iter().map(|p| p.0).collect();
                for docs in &sets {
                    let spans: Vec<(u32, u32)> = docs.iter().map(|&d| corpus.doc_span(d)).collect();
                    let expected: Vec<u32> = all
                        .iter()
                        .copied()
                        .filter(|c| docs.contains(&corpus.doc_of(*c)))
                        .collect();
                    let got = corpus.chunks_with_in(term, &spans);
                    assert_eq!(got, expected, "{term:?} in documents {docs:?}");
                    seen += got.len();
                }
            }
            assert!(corpus.chunks_with_in("no-such-term", &[(0, 1)]).is_empty());
            assert!(corpus.missing.borrow().is_empty(), "every file is loaded");
        }
        assert!(seen > 0);
    }
}
