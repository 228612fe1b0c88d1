//! Access: which documents of a bundle one request may see, when some are restricted to
//! groups of readers (the bundle's `access` section, [`crate::bundle::AccessSection`]).
//!
//! A request is answered as if the documents its reader may not see were not in the bundle
//! at all: they are out of scope before retrieval ([`super::filter::DocMask`]), and what the
//! ranking counts over the collection (the number of chunks, their average length, each
//! term's document frequency) and the vocabulary that typo tolerance, completions and
//! suggestions draw on are the readable documents' alone ([`View`], read through
//! [`super::corpus::Corpus`]). So no result, snippet, highlight, total, facet count, score,
//! corrected spelling or suggestion depends on a document the reader may not see: over a
//! whole bundle the answer is the one a bundle built from the readable documents alone gives.

#[cfg(feature = "access")]
use std::sync::Arc;

use crate::bundle::Bundle;

/// Whom a request is answered for. The host sets it (`docloupe serve` from the caller's
/// token); it is never read from the request's JSON.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Access {
    /// A reader with no groups: documents without access labels only. What every host
    /// answers unless it says whom for (the wasm builds, the Worker, an open server).
    #[default]
    Public,
    /// A reader in these groups (sorted, each once: [`Access::groups`]).
    Groups(Vec<String>),
    /// Every document: the bundle's owner (`docloupe search --all-groups`).
    Everything,
}

impl Access {
    /// A reader in `groups` (sorted and deduplicated here).
    pub fn groups<S: Into<String>>(groups: impl IntoIterator<Item = S>) -> Access {
        let mut g: Vec<String> = groups.into_iter().map(Into::into).collect();
        g.sort();
        g.dedup();
        if g.is_empty() {
            Access::Public
        } else {
            Access::Groups(g)
        }
    }
}

/// What one [`Access`] can read of a whole bundle that restricts some documents to groups
/// it does not hold, and the statistics BM25 takes over the readable chunks alone.
#[cfg(feature = "access")]
#[derive(Debug)]
pub struct View {
    docs: Vec<bool>,
    /// Readable chunks, one bit each.
    chunks: Vec<u64>,
    /// Readable chunks.
    n_chunks: usize,
    /// Their average length (as [`crate::index::lexical::average_length`] takes it).
    avg_len: f32,
    /// Per term of the lexical index: the readable chunks that hold it.
    df: Vec<u32>,
}

#[cfg(feature = "access")]
impl View {
    /// `None` when `access` reads every document of `bundle` (a bundle without an access
    /// section, or a reader whose groups open every restricted document).
    pub fn of(bundle: &Bundle, access: &Access) -> Option<View> {
        use crate::index::lexical;
        let section = bundle.access.as_ref()?;
        let n_docs = bundle.docs.documents.len();
        let docs = match access {
            Access::Everything => return None,
            Access::Public => section.readable(n_docs, &[]),
            Access::Groups(g) => section.readable(n_docs, g),
        }?;
        let lengths = &bundle.lexical.chunk_lengths;
        let mut chunks = vec![0u64; lengths.len().div_ceil(64)];
        let mut readable_lengths = Vec::new();
        for (doc, _) in bundle.docs.documents.iter().zip(&docs).filter(|(_, &r)| r) {
            let first = doc.first_chunk as usize;
            for c in first..first + doc.chunk_count as usize {
                chunks[c / 64] |= 1 << (c % 64);
                readable_lengths.push(lengths.get(c).copied().unwrap_or(0));
            }
        }
        let sees = |c: u32| chunks[c as usize / 64] & (1 << (c % 64)) != 0;
        let df = bundle
            .lexical
            .postings
            .iter()
            .map(|p| {
                lexical::chunks(p.chunk_deltas.iter())
                    .filter(|&c| sees(c))
                    .count() as u32
            })
            .collect();
        Some(View {
            docs,
            n_chunks: readable_lengths.len(),
            avg_len: lexical::average_length(&readable_lengths),
            chunks,
            df,
        })
    }

    pub fn sees_doc(&self, d: u32) -> bool {
        self.docs.get(d as usize) == Some(&true)
    }

    pub fn sees_chunk(&self, c: u32) -> bool {
        self.chunks
            .get(c as usize / 64)
            .is_some_and(|w| w & (1 << (c % 64)) != 0)
    }

    /// The readable chunks holding term number `term` of the lexical index.
    pub fn df(&self, term: usize) -> usize {
        self.df.get(term).copied().unwrap_or(0) as usize
    }

    /// How many chunks are readable (what idf counts).
    pub fn n_chunks(&self) -> usize {
        self.n_chunks
    }

    /// The readable chunks, one bit each.
    pub fn chunk_bits(&self) -> &[u64] {
        &self.chunks
    }

    /// The readable chunks' average length (what BM25 normalizes by).
    pub fn avg_len(&self) -> f32 {
        self.avg_len
    }
}

/// Without the `access` feature no bundle with restricted documents loads
/// ([`crate::Error::AccessRestricted`]), so there is never a view: the type has no values
/// and the code that reads one compiles away (the lexical wasm's budget).
#[cfg(not(feature = "access"))]
#[derive(Debug)]
pub enum View {}

#[cfg(not(feature = "access"))]
impl View {
    pub fn of(_: &Bundle, _: &Access) -> Option<View> {
        None
    }
    pub fn sees_doc(&self, _: u32) -> bool {
        match *self {}
    }
    pub fn sees_chunk(&self, _: u32) -> bool {
        match *self {}
    }
    pub fn df(&self, _: usize) -> usize {
        match *self {}
    }
    pub fn n_chunks(&self) -> usize {
        match *self {}
    }
    pub fn avg_len(&self) -> f32 {
        match *self {}
    }
    pub fn chunk_bits(&self) -> &[u64] {
        match *self {}
    }
}

/// Views and masks kept at most; past that the oldest is made again when next asked for.
#[cfg(feature = "access")]
pub(crate) const KEPT: usize = 64;

/// The views an engine has made, one per reader's access, kept for the next request of the
/// same reader (a server answers a few groups of users over and over). Making one reads
/// every posting once.
#[cfg(feature = "access")]
#[derive(Debug, Default)]
pub(crate) struct Views(crate::kept::Kept<Access, Option<Arc<View>>, KEPT>);

#[cfg(feature = "access")]
impl Views {
    /// What `access` reads of `bundle` (`None`: all of it).
    pub(crate) fn get(&self, bundle: Option<&Bundle>, access: &Access) -> Option<Arc<View>> {
        let bundle = bundle.filter(|b| b.access.is_some())?;
        self.0
            .get(access, || View::of(bundle, access).map(Arc::new))
    }
}
