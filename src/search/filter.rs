//! Scope: which documents a request may see (its reader's access, filters, `workspacePath`).
//!
//! Filters act on documents, so they are evaluated once per document into a mask before
//! retrieval; retrievers then skip masked chunks instead of dropping results afterwards,
//! and a filtered search returns as many results as an unfiltered one would.

#[cfg(feature = "access")]
use {super::access::KEPT, std::sync::Arc};

use super::corpus::Corpus;
use super::request::Scope;
use crate::bundle::Document;

/// The documents in scope for one request, as the chunks they hold.
#[derive(Debug)]
pub struct DocMask {
    /// `None`: every chunk. Else one bit per chunk, set for the chunks of documents in
    /// scope: retrievers test a chunk with one bit read, where going through its document
    /// read each chunk's metadata (at 2.24M chunks, a scan of hundreds of MB per query).
    chunks: Option<Vec<u64>>,
    /// Chunks belonging to allowed documents.
    pub chunks_in_scope: usize,
}

impl DocMask {
    /// Reads every document when the scope is restricted (a split bundle's `docs.bin`).
    pub fn new(corpus: &Corpus, scope: &Scope) -> DocMask {
        let n = corpus.n_chunks();
        if scope.is_empty() && corpus.sees_all() {
            return DocMask {
                chunks: None,
                chunks_in_scope: n,
            };
        }
        // Documents the reader may not see are out of every scope ([`super::access`]); with
        // no other restriction, the reader's own chunks are the scope.
        if scope.is_empty() {
            if let Some((bits, chunks_in_scope)) = corpus.readable_chunks() {
                return DocMask {
                    chunks: Some(bits.to_vec()),
                    chunks_in_scope,
                };
            }
        }
        let mut bits = vec![0u64; n.div_ceil(64)];
        let mut chunks_in_scope = 0;
        for (d, doc) in corpus.all_documents().iter().enumerate() {
            if corpus.sees_doc(d as u32) && in_scope(doc, scope) {
                let first = (doc.first_chunk as usize).min(n);
                let end = first.saturating_add(doc.chunk_count as usize).min(n);
                set_bits(&mut bits, first, end);
                chunks_in_scope += end - first;
            }
        }
        DocMask {
            chunks: Some(bits),
            chunks_in_scope,
        }
    }

    pub fn is_restricted(&self) -> bool {
        self.chunks.is_some()
    }

    /// The bit of each chunk in scope, 64 to a word; `None` for every chunk.
    pub fn chunk_bits(&self) -> Option<&[u64]> {
        self.chunks.as_deref()
    }

    pub fn allows_chunk(&self, chunk: u32) -> bool {
        match &self.chunks {
            None => true,
            Some(bits) => bits
                .get(chunk as usize / 64)
                .is_some_and(|w| w & (1 << (chunk % 64)) != 0),
        }
    }
}

/// The masks an engine has made, one per reader's access and scope, kept for the next request
/// with both the same: a server answers a few groups of users and a few filters over and
/// over, and masking a filtered scope reads every document (at 102K documents, 2.5 ms: a
/// tenth of a hybrid request). Each is a bit per chunk: 280 KB at 2.24M chunks.
#[cfg(feature = "access")]
#[derive(Debug, Default)]
pub(crate) struct Masks(crate::kept::Kept<(super::Access, Scope), Arc<DocMask>, KEPT>);

#[cfg(feature = "access")]
impl Masks {
    /// [`DocMask::new`] for `access`'s view of a whole bundle, kept; made each time over a
    /// split bundle, whose documents may not all be in yet.
    pub(crate) fn get(
        &self,
        corpus: &Corpus,
        access: &super::Access,
        scope: &Scope,
    ) -> Arc<DocMask> {
        let make = || Arc::new(DocMask::new(corpus, scope));
        match corpus.whole() {
            None => make(),
            Some(_) => self.0.get(&(access.clone(), scope.clone()), make),
        }
    }
}

/// Sets bits `from..to` of `bits`, a word at a time where the range covers one.
fn set_bits(bits: &mut [u64], from: usize, to: usize) {
    let mut i = from;
    while i < to {
        let (word, bit) = (i / 64, i % 64);
        let n = (64 - bit).min(to - i);
        let ones = if n == 64 {
            u64::MAX
        } else {
            ((1u64 << n) - 1) << bit
        };
        bits[word] |= ones;
        i += n;
    }
}

fn in_scope(d: &Document, s: &Scope) -> bool {
    // (ASCII types, which every format's are, compared without a lowercase copy of each.)
    let same_type = |t: &String| match d.doc_type.is_ascii() {
        true => t.eq_ignore_ascii_case(&d.doc_type),
        false => *t == d.doc_type.to_lowercase(),
    };
    if !s.document_types.is_empty() && !s.document_types.iter().any(same_type) {
        return false;
    }
    if s.date_from.is_some() || s.date_to.is_some() {
        // Dates are stored as `YYYY-MM-DD`, so string order is date order.
        let Some(date) = d.date.as_deref() else {
            return false;
        };
        if s.date_from.as_deref().is_some_and(|f| date < f)
            || s.date_to.as_deref().is_some_and(|t| date > t)
        {
            return false;
        }
    }
    if let Some(p) = &s.source_prefix {
        if !d.path.starts_with(p.as_str()) {
            return false;
        }
    }
    if let Some(ws) = &s.workspace {
        let inside = d
            .path
            .strip_prefix(ws.as_str())
            .is_some_and(|rest| rest.starts_with('/'));
        if !inside {
            return false;
        }
    }
    if !s.tags.is_empty()
        && !d
            .tags
            .iter()
            .any(|t| s.tags.contains(&t.trim().to_lowercase()))
    {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    #[test]
    fn set_bits_sets_exactly_the_range() {
        for (from, to) in [
            (0, 0),
            (0, 1),
            (3, 64),
            (63, 65),
            (0, 128),
            (5, 200),
            (64, 190),
        ] {
            let mut bits = vec![0u64; 4];
            super::set_bits(&mut bits, from, to);
            for i in 0..256 {
                let set = bits[i / 64] & (1 << (i % 64)) != 0;
                assert_eq!(set, (from..to).contains(&i), "{from}..{to} at {i}");
            }
        }
    }
}
