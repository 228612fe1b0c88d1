//! The three tools' definitions and input schemas, from the contract's own bounds.

use std::sync::Arc;

use docloupe::search::{documents, request};
use rmcp::model::Tool;
use serde_json::{json, Value};

/// The contract request's schema, for `search_docs`: the fields, and the bounds `request.rs`
/// enforces (its constants, so the two cannot drift).
pub(super) fn search_docs_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": request::MAX_QUERY_CHARS},
            "limit": {"type": "integer", "minimum": 1, "maximum": request::MAX_LIMIT, "default": request::DEFAULT_LIMIT},
            "mode": {"type": "string", "enum": ["hybrid", "fulltext", "semantic"], "default": "hybrid"},
            "rerank": {"type": "boolean", "default": true},
            "candidateLimit": {"type": "integer", "minimum": 1, "maximum": request::MAX_CANDIDATE_LIMIT, "default": request::DEFAULT_CANDIDATE_LIMIT},
            "filters": {
                "type": "object",
                "properties": {
                    "documentTypes": {"type": "array", "items": {"type": "string"}},
                    "dateFrom": {"type": "string", "format": "date"},
                    "dateTo": {"type": "string", "format": "date"},
                    "sourcePrefix": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}}
                },
                "additionalProperties": false
            },
            "maxChunksPerDocument": {"type": "integer", "minimum": 1, "maximum": request::MAX_CHUNKS_PER_DOCUMENT, "default": request::DEFAULT_MAX_CHUNKS_PER_DOCUMENT},
            "includeContext": {"type": "boolean", "default": true},
            "maxCharsPerChunk": {"type": "integer", "minimum": 1, "maximum": request::MAX_CHARS_PER_CHUNK},
            "workspacePath": {"type": "string"},
            "projectId": {"type": "string"}
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

pub(super) fn feedback_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 500, "description": "The query the result answered (or did not)"},
            "document": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "The result's document path (search_documents' id, search_docs' documentPath)"},
            "relevant": {"type": "boolean", "description": "Whether the result answers the query"},
            "rank": {"type": "integer", "minimum": 1, "maximum": 10000, "description": "The result's position in the answer (1 = first)"},
            "chunk_id": {"type": "string", "maxLength": 100, "description": "The fragment's chunkId, when one fragment is meant"},
            "project": {"type": "string", "maxLength": 200, "description": "The collection (namespace/name), when the server has several"},
            "note": {"type": "string", "maxLength": 500, "description": "Why, in a few words"}
        },
        "required": ["query", "document", "relevant"],
        "additionalProperties": false
    })
}

pub(super) fn tools() -> Vec<Tool> {
    let object = |v: Value| Arc::new(v.as_object().cloned().unwrap_or_default());
    vec![
        Tool::new(
            "search_docs",
            "Search the documentation with docloupe's search contract: hybrid (BM25 + vectors, \
             reranked), fulltext or semantic, with filters. Returns ranked chunks with their \
             section breadcrumb, anchor, line range, snippet and ranking signals.",
            object(search_docs_schema()),
        ),
        Tool::new(
            "search_documents",
            "Search the documents and get them grouped per document: title, path, type, dates, \
             relevance, highlighted fragments with their text, facets and suggestions.",
            object(documents::input_schema()),
        ),
        Tool::new(
            "result_feedback",
            "Say whether a search result answered the query: the query, the result's document \
             path, relevant true/false and its rank (1 = first). Recorded in the query log for \
             the collection's owners (`docloupe stats` reports precision@5); changes no ranking.",
            object(feedback_schema()),
        ),
    ]
}
