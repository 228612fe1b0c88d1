//! `search_documents`: the agents' shape of a search (the MCP tool of that name and
//! `docloupe search --format json`), as a thin adapter over the contract. Its request becomes
//! one [`SearchRequest`]; the contract's response is regrouped per document. There is no
//! second search path: filters, ranking and errors are the engine's.
//!
//! Request: `query` (1..500 characters, required), `limit` (documents, 1..50, default 10),
//! `page` (1-based, counted in documents: page `p` holds documents `(p−1)·limit + 1 ..
//! p·limit`; default 1), `document_types` (`["pdf", "md"]`), `date_range` (`{from, to}`, ISO
//! dates), `source_filter` (path prefix), `include_context` (default true), `max_chunks`
//! (fragments per document, 1..10, default 3), `search_mode` (`semantic` | `fulltext` |
//! `hybrid`; absent: hybrid, or fulltext over a collection without vectors). A fragment's
//! text is its snippet, or its whole text trimmed to
//! `maxCharsPerChunk` when the contract request asked for that (the CLI's
//! `--max-chars-per-chunk`). Response: `{success: true, query, total_results, search_time:
//! "0.245s", results: [...], facets: {document_types, date_distribution, undated},
//! suggestions}` or `{success: false, error:
//! {code, message, details}}` with codes `INVALID_QUERY`, `RATE_LIMIT`, `INDEX_UNAVAILABLE`,
//! `UNAUTHORIZED`, `INTERNAL_ERROR`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::request::{Filters, Mode, SearchRequest};
use super::response::{ErrorResponse, SearchResponse, SearchResult};
use crate::bundle::Citation;
use crate::error::ErrorCode;

pub const DEFAULT_LIMIT: u32 = 10;
pub const MAX_LIMIT: u32 = 50;
pub const DEFAULT_MAX_CHUNKS: u32 = 3;
pub const MAX_MAX_CHUNKS: u32 = 10;
/// Deepest page: the contract's deepest `offset` in documents of the largest `limit`, so
/// every page of every valid `limit` starts within `MAX_OFFSET`.
pub const MAX_PAGE: u32 = (super::request::MAX_OFFSET as u32) / MAX_LIMIT + 1;

/// The tool's input. Unknown fields are refused, as the schema says (`additionalProperties:
/// false`): a misspelt option must not be silently ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocumentsRequest {
    pub query: String,
    #[serde(default = "default_limit")]
    pub limit: u32,
    /// 1-based page of `limit` documents.
    #[serde(default = "first_page")]
    pub page: u32,
    #[serde(default)]
    pub document_types: Vec<String>,
    #[serde(default)]
    pub date_range: Option<DateRange>,
    #[serde(default)]
    pub source_filter: Option<String>,
    #[serde(default = "yes")]
    pub include_context: bool,
    #[serde(default = "default_max_chunks")]
    pub max_chunks: u32,
    /// Absent: hybrid over a collection with vectors, fulltext over one without (as
    /// `search_docs` without a `mode`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_mode: Option<Mode>,
    /// Which served collection to search (`namespace/name`, as `search_docs`' `projectId`);
    /// absent: the server's first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DateRange {
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default)]
    pub to: Option<String>,
}

fn default_limit() -> u32 {
    DEFAULT_LIMIT
}
fn first_page() -> u32 {
    1
}
fn default_max_chunks() -> u32 {
    DEFAULT_MAX_CHUNKS
}
fn yes() -> bool {
    true
}

impl DocumentsRequest {
    pub fn new(query: impl Into<String>) -> Self {
        DocumentsRequest {
            query: query.into(),
            limit: DEFAULT_LIMIT,
            page: 1,
            document_types: Vec::new(),
            date_range: None,
            source_filter: None,
            include_context: true,
            max_chunks: DEFAULT_MAX_CHUNKS,
            search_mode: None,
            project: None,
        }
    }

    /// Reads the tool's arguments. A wrong type, an unknown field or a bound outside the
    /// schema is `INVALID_QUERY` naming the field.
    pub fn from_value(args: &Value) -> Result<DocumentsRequest, DocumentsError> {
        if !args.is_object() {
            return Err(DocumentsError::invalid(
                "",
                "the arguments must be a JSON object",
            ));
        }
        let req: DocumentsRequest = serde_path_to_error::deserialize(args).map_err(|e| {
            let field = e.path().to_string();
            let field = if field == "." { String::new() } else { field };
            DocumentsError::invalid(&field, &e.inner().to_string())
        })?;
        req.check()?;
        Ok(req)
    }

    /// The bounds the schema states; the contract checks the rest (query length, dates, path).
    fn check(&self) -> Result<(), DocumentsError> {
        if !(1..=MAX_LIMIT).contains(&self.limit) {
            return Err(DocumentsError::invalid(
                "limit",
                &format!("must be 1..{MAX_LIMIT}"),
            ));
        }
        if !(1..=MAX_PAGE).contains(&self.page) {
            return Err(DocumentsError::invalid(
                "page",
                &format!("must be 1..{MAX_PAGE}"),
            ));
        }
        if !(1..=MAX_MAX_CHUNKS).contains(&self.max_chunks) {
            return Err(DocumentsError::invalid(
                "max_chunks",
                &format!("must be 1..{MAX_MAX_CHUNKS}"),
            ));
        }
        Ok(())
    }

    /// The contract request that answers this one: the page's `limit` documents with up to
    /// `max_chunks` fragments each (the contract counting `limit` and `offset` in documents).
    pub fn to_search_request(&self) -> SearchRequest {
        let date = self.date_range.clone().unwrap_or_default();
        let filters = Filters {
            document_types: self.document_types.clone(),
            date_from: date.from,
            date_to: date.to,
            source_prefix: self.source_filter.clone(),
            tags: Vec::new(),
        };
        SearchRequest {
            query: self.query.clone(),
            limit: Some(self.limit as usize),
            offset: Some((self.page as usize - 1) * self.limit as usize),
            by_document: true,
            mode: self.search_mode,
            filters: (filters != Filters::default()).then_some(filters),
            max_chunks_per_document: Some(self.max_chunks as usize),
            include_context: Some(self.include_context),
            project_id: self.project.clone(),
            ..Default::default()
        }
    }
}

/// The success shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentsResponse {
    pub success: bool,
    pub query: String,
    /// Documents that match (after filters), not only those returned.
    pub total_results: usize,
    /// Engine time, e.g. `"0.245s"`.
    pub search_time: String,
    pub results: Vec<DocumentResult>,
    pub facets: DocumentFacets,
    pub suggestions: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentResult {
    /// The document's path in the collection (unique within it).
    pub id: String,
    pub title: String,
    pub file_path: String,
    pub file_type: String,
    /// Bytes of the source file (null for bundles older than format 3).
    pub file_size: Option<u64>,
    /// When the document was made (front matter `date`/`created`, a PDF's CreationDate, an
    /// Office file's created), else its only date.
    pub created_at: Option<String>,
    /// When it was last updated (front matter `updated`/`lastmod`, a PDF's ModDate, an Office
    /// file's modified), else its only date: what date filters read.
    pub updated_at: Option<String>,
    /// The best score among the document's fragments.
    pub relevance_score: f64,
    /// Each fragment's snippet with the matched words in `**bold**`.
    pub highlights: Vec<String>,
    /// The fragments, and with `include_context` their neighbours in full, by position.
    pub context_chunks: Vec<ContextChunk>,
    /// The document's bibliography entry (collections built with `--references`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citation: Option<Citation>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextChunk {
    pub chunk_index: u32,
    pub text: String,
    /// 1-based page for paged formats (PDF); null for others.
    pub page_number: Option<u32>,
    /// The fragment's score; null for a neighbour included as context.
    pub relevance_score: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentFacets {
    pub document_types: BTreeMap<String, usize>,
    pub date_distribution: BTreeMap<String, usize>,
    /// Matching documents without a date: a date filter never returns them.
    pub undated: usize,
}

/// The error shape's `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DocumentsErrorCode {
    InvalidQuery,
    RateLimit,
    IndexUnavailable,
    Unauthorized,
    InternalError,
}

/// `{success: false, error: {code, message, details}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentsError {
    pub success: bool,
    pub error: DocumentsErrorBody,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentsErrorBody {
    pub code: DocumentsErrorCode,
    pub message: String,
    pub details: Value,
}

impl DocumentsError {
    pub fn new(code: DocumentsErrorCode, message: impl Into<String>, details: Value) -> Self {
        DocumentsError {
            success: false,
            error: DocumentsErrorBody {
                code,
                message: message.into(),
                details,
            },
        }
    }

    pub fn invalid(field: &str, message: &str) -> Self {
        let message = if field.is_empty() {
            format!("invalid arguments: {message}")
        } else {
            format!("invalid {field}: {message}")
        };
        DocumentsError::new(
            DocumentsErrorCode::InvalidQuery,
            message,
            json!({ "field": field }),
        )
    }

    /// The contract's error in this shape: request errors are `INVALID_QUERY` (a contract
    /// field renamed to the tool's), a missing or broken collection `INDEX_UNAVAILABLE`.
    pub fn from_contract(e: &ErrorResponse) -> Self {
        let code = match e.error_code {
            ErrorCode::InvalidRequest | ErrorCode::SearchQueryEmpty => {
                DocumentsErrorCode::InvalidQuery
            }
            ErrorCode::DocsCollectionUnavailable | ErrorCode::DocsRerankingUnavailable => {
                DocumentsErrorCode::IndexUnavailable
            }
            _ => DocumentsErrorCode::InternalError,
        };
        let mut details = e.details.clone().unwrap_or_else(|| json!({}));
        let mut message = e.message.clone();
        if let Some(field) = details
            .get("field")
            .and_then(Value::as_str)
            .map(str::to_owned)
        {
            let renamed = tool_field(&field);
            if renamed != field && !field.is_empty() {
                message = message.replace(&field, renamed);
            }
            details["field"] = Value::String(renamed.to_owned());
        }
        if e.error_code == ErrorCode::SearchQueryEmpty {
            details = json!({ "field": "query" });
        }
        DocumentsError::new(code, message, details)
    }
}

/// The tool's name for a contract field.
fn tool_field(contract: &str) -> &str {
    match contract {
        "filters.documentTypes" => "document_types",
        "filters.dateFrom" => "date_range.from",
        "filters.dateTo" => "date_range.to",
        "filters.sourcePrefix" => "source_filter",
        "maxChunksPerDocument" => "max_chunks",
        "includeContext" => "include_context",
        "mode" => "search_mode",
        "offset" => "page",
        other => other,
    }
}

/// The contract's response regrouped per document: documents in the order of their best
/// fragment, at most `req.limit` of them.
pub fn shape(req: &DocumentsRequest, r: &SearchResponse) -> DocumentsResponse {
    let mut order: Vec<&str> = Vec::new();
    let mut by_doc: BTreeMap<&str, Vec<&SearchResult>> = BTreeMap::new();
    for res in &r.results {
        let doc = res.document_path.as_str();
        if !by_doc.contains_key(doc) {
            if order.len() == req.limit as usize {
                continue;
            }
            order.push(doc);
        }
        by_doc.entry(doc).or_default().push(res);
    }
    let results = order
        .iter()
        .map(|doc| {
            let hits = &by_doc[doc];
            let first = hits[0];
            let mut chunks: BTreeMap<u32, ContextChunk> = BTreeMap::new();
            if req.include_context {
                for ctx in hits.iter().flat_map(|h| h.context.iter().flatten()) {
                    chunks
                        .entry(ctx.chunk_index)
                        .or_insert_with(|| ContextChunk {
                            chunk_index: ctx.chunk_index,
                            text: ctx.text.clone(),
                            page_number: ctx.page_start,
                            relevance_score: None,
                        });
                }
            }
            for h in hits {
                // A fragment that is also another's neighbour is listed as the fragment.
                chunks.insert(
                    h.chunk_index,
                    ContextChunk {
                        chunk_index: h.chunk_index,
                        text: h.text.clone().unwrap_or_else(|| h.snippet.clone()),
                        page_number: h.page_start,
                        relevance_score: Some(score(h.score)),
                    },
                );
            }
            DocumentResult {
                id: first.document_path.clone(),
                title: first.title.clone(),
                file_path: first.document_path.clone(),
                file_type: first.document_type.clone(),
                file_size: first.file_size,
                created_at: first.created.clone().or_else(|| first.date.clone()),
                updated_at: first.date.clone(),
                relevance_score: score(first.score),
                highlights: hits.iter().map(|h| marked(h, "**", "**")).collect(),
                context_chunks: chunks.into_values().collect(),
                citation: first.citation.clone(),
            }
        })
        .collect();
    DocumentsResponse {
        success: true,
        query: r.query.clone(),
        total_results: r.facets.document_types.values().sum(),
        search_time: format!("{:.3}s", r.timings.total_ms / 1000.0),
        results,
        facets: DocumentFacets {
            document_types: r.facets.document_types.clone(),
            date_distribution: r.facets.dates.clone(),
            undated: r.facets.undated,
        },
        suggestions: r.suggestions.clone(),
    }
}

/// A score as the contract prints it (the f32's shortest decimal), not the f64 it widens to
/// (0.6079765558242798 for 0.60797656), whichever way the shape is serialized.
fn score(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

/// A result's snippet with its highlights wrapped in `open`/`close` (offsets are in chars).
pub fn marked(res: &SearchResult, open: &str, close: &str) -> String {
    marked_with(res, open, close, str::to_owned)
}

/// [`marked`], passing every piece of snippet text through `escape` first (e.g. for markdown).
pub fn marked_with(
    res: &SearchResult,
    open: &str,
    close: &str,
    escape: impl Fn(&str) -> String,
) -> String {
    let chars: Vec<char> = res.snippet.chars().collect();
    let piece = |from: usize, to: usize| escape(&chars[from..to].iter().collect::<String>());
    let mut out = String::with_capacity(res.snippet.len() + res.highlights.len() * 4);
    let mut at = 0;
    for h in &res.highlights {
        if h.start < at || h.end > chars.len() || h.end <= h.start {
            continue;
        }
        out.push_str(&piece(at, h.start));
        out.push_str(open);
        out.push_str(&piece(h.start, h.end));
        out.push_str(close);
        at = h.end;
    }
    out.push_str(&piece(at, chars.len()));
    out
}

/// The tool's input schema (JSON Schema), exactly as the spec states it.
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string", "minLength": 1, "maxLength": 500,
                "description": "What to look for, in words or as a question"
            },
            "limit": {
                "type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT,
                "description": "How many documents to return"
            },
            "page": {
                "type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 1,
                "description": "Which page of `limit` documents (1 = the best ones)"
            },
            "document_types": {
                "type": "array", "items": {"type": "string"}, "default": [],
                "description": "Only these formats, e.g. pdf, docx, xlsx, txt, md (any of them)"
            },
            "date_range": {
                "type": "object",
                "properties": {
                    "from": {"type": "string", "format": "date", "description": "ISO date YYYY-MM-DD, inclusive"},
                    "to": {"type": "string", "format": "date", "description": "ISO date YYYY-MM-DD, inclusive"}
                },
                "additionalProperties": false,
                "description": "Only documents dated within this range"
            },
            "source_filter": {
                "type": "string",
                "description": "Only documents whose path starts with this prefix"
            },
            "include_context": {
                "type": "boolean", "default": true,
                "description": "Add the text around each fragment"
            },
            "max_chunks": {
                "type": "integer", "minimum": 1, "maximum": MAX_MAX_CHUNKS, "default": DEFAULT_MAX_CHUNKS,
                "description": "Fragments per document"
            },
            "search_mode": {
                "type": "string", "enum": ["semantic", "fulltext", "hybrid"], "default": "hybrid",
                "description": "semantic (meaning), fulltext (words) or hybrid (both, reranked); absent: hybrid, or fulltext where the collection has no vectors"
            },
            "project": {
                "type": "string",
                "description": "Which collection to search (namespace/name), when the server has several"
            }
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_bounds_follow_the_schema() {
        let r = DocumentsRequest::from_value(&json!({"query": "cache"})).unwrap();
        assert_eq!(r, DocumentsRequest::new("cache"));
        for (args, field) in [
            (json!({"query": "x", "limit": 0}), "limit"),
            (json!({"query": "x", "limit": 51}), "limit"),
            (json!({"query": "x", "max_chunks": 11}), "max_chunks"),
            (json!({"query": "x", "page": 0}), "page"),
            (json!({"query": "x", "limit": 50, "page": 202}), "page"),
            (
                json!({"query": "x", "search_mode": "vector"}),
                "search_mode",
            ),
            (
                json!({"query": "x", "date_range": {"from": 3}}),
                "date_range.from",
            ),
            (json!({"query": "x", "colour": "red"}), "colour"),
            (json!({"limit": 3}), ""),
        ] {
            let e = DocumentsRequest::from_value(&args).unwrap_err();
            assert_eq!(e.error.code, DocumentsErrorCode::InvalidQuery, "{args}");
            assert_eq!(
                e.error.details["field"], field,
                "{args}: {}",
                e.error.message
            );
        }
        assert!(DocumentsRequest::from_value(&json!(["query"])).is_err());
    }

    #[test]
    fn it_asks_the_contract_for_a_page_of_documents() {
        let mut r = DocumentsRequest::new("cache");
        r.document_types = vec!["pdf".into()];
        r.date_range = Some(DateRange {
            from: Some("2024-01-01".into()),
            to: None,
        });
        r.limit = 30;
        r.page = 3;
        let s = r.to_search_request();
        assert_eq!(s.limit, Some(30));
        assert_eq!(s.offset, Some(60));
        assert!(s.by_document);
        assert_eq!(s.max_chunks_per_document, Some(3));
        let f = s.filters.unwrap();
        assert_eq!(f.document_types, vec!["pdf"]);
        assert_eq!(f.date_from.as_deref(), Some("2024-01-01"));
        assert_eq!(DocumentsRequest::new("x").to_search_request().filters, None);
    }

    #[test]
    fn contract_errors_keep_their_meaning_under_the_tools_names() {
        let e = ErrorResponse {
            error_code: ErrorCode::InvalidRequest,
            message: "bad date".into(),
            details: Some(json!({"field": "filters.dateFrom"})),
        };
        let d = DocumentsError::from_contract(&e);
        assert_eq!(d.error.code, DocumentsErrorCode::InvalidQuery);
        assert_eq!(d.error.details["field"], "date_range.from");
        let e = ErrorResponse {
            error_code: ErrorCode::DocsCollectionUnavailable,
            message: "corrupt".into(),
            details: Some(json!({"reason": "ChecksumMismatch"})),
        };
        assert_eq!(
            DocumentsError::from_contract(&e).error.code,
            DocumentsErrorCode::IndexUnavailable
        );
        let v = serde_json::to_value(DocumentsError::from_contract(&e)).unwrap();
        assert_eq!(
            v,
            json!({"success": false, "error": {"code": "INDEX_UNAVAILABLE", "message": "corrupt", "details": {"reason": "ChecksumMismatch"}}})
        );
    }
}
