//! Scope: which documents a request may see (its reader's access, filters, `workspacePath`).
//!
//! Filters act on documents, so they are evaluated once per document into a mask before
//! retrieval; retrievers then skip masked chunks instead of dropping results afterwards,
//! and a filtered search returns as many results as an unfiltered one would.

use super::corpus::Corpus;
use super::request::Scope;
use crate::bundle::Document;

/// The documents in scope for one request.
#[derive(Debug)]
pub struct DocMask {
    /// `None`: every document.
    allowed: Option<Vec<bool>>,
    /// Chunks belonging to allowed documents.
    pub chunks_in_scope: usize,
}

impl DocMask {
    /// Reads every document when the scope is restricted (a split bundle's `docs.bin`).
    pub fn new(corpus: &Corpus, scope: &Scope) -> DocMask {
        if scope.is_empty() && corpus.sees_all() {
            return DocMask {
                allowed: None,
                chunks_in_scope: corpus.n_chunks(),
            };
        }
        // Documents the reader may not see are out of every scope ([`super::access`]).
        let documents = corpus.all_documents();
        let allowed: Vec<bool> = documents
            .iter()
            .enumerate()
            .map(|(d, doc)| corpus.sees_doc(d as u32) && in_scope(doc, scope))
            .collect();
        let chunks_in_scope = documents
            .iter()
            .zip(&allowed)
            .filter(|(_, &a)| a)
            .map(|(d, _)| d.chunk_count as usize)
            .sum();
        DocMask {
            allowed: Some(allowed),
            chunks_in_scope,
        }
    }

    pub fn is_restricted(&self) -> bool {
        self.allowed.is_some()
    }

    pub fn allows_chunk(&self, corpus: &Corpus, chunk: u32) -> bool {
        match &self.allowed {
            None => true,
            Some(a) => a.get(corpus.doc_of(chunk) as usize) == Some(&true),
        }
    }
}

fn in_scope(d: &Document, s: &Scope) -> bool {
    if !s.document_types.is_empty() && !s.document_types.contains(&d.doc_type.to_lowercase()) {
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
