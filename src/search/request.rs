//! Received → validated: the contract's request and the checks that turn it into a [`Plan`].
//!
//! Every rule of the request is enforced here, before any index is touched, so an invalid
//! request costs nothing and always gets `INVALID_REQUEST` (or `SEARCH_QUERY_EMPTY`) with the
//! offending field named in `details.field`.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::{Error, Result};

/// Longest accepted query, in characters (after trimming).
pub const MAX_QUERY_CHARS: usize = 500;
pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 50;
pub const DEFAULT_CANDIDATE_LIMIT: usize = 30;
pub const MAX_CANDIDATE_LIMIT: usize = 100;
/// Deepest `offset` accepted: paging stops well before a client could make the engine
/// present an unbounded list.
pub const MAX_OFFSET: usize = 10_000;
pub const DEFAULT_MAX_CHUNKS_PER_DOCUMENT: usize = 3;
pub const MAX_CHUNKS_PER_DOCUMENT: usize = 10;
/// Ceiling on `maxCharsPerChunk`: longer than any chunk the builder writes.
pub const MAX_CHARS_PER_CHUNK: usize = 20_000;
/// Bounds on filter lists and strings: generous for people, small enough that a hostile
/// request cannot make filtering expensive.
const MAX_FILTER_VALUES: usize = 100;
const MAX_FILTER_CHARS: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// BM25 and vectors, fused (then reranked when asked).
    #[default]
    Hybrid,
    /// BM25 only.
    Fulltext,
    /// Vectors only.
    Semantic,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Hybrid => "hybrid",
            Mode::Fulltext => "fulltext",
            Mode::Semantic => "semantic",
        }
    }
}

/// A search request: the contract's JSON shape (camelCase, unknown fields rejected). Absent
/// fields take the documented defaults.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchRequest {
    pub query: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Results to skip (0-based, counted in results): with `limit` as the page size, page
    /// `n` is `offset = n · limit`. The ranking does not depend on it, so consecutive pages
    /// never repeat or skip a result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_limit: Option<usize>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "object_or_null"
    )]
    pub filters: Option<Filters>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chunks_per_document: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<bool>,
    /// Asks for each result's chunk text (`text`), for quoting and citing, trimmed to this
    /// many characters at a word boundary (`…` marks a cut); context chunks are trimmed the
    /// same way. Absent: results carry the snippet only and context chunks in full.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars_per_chunk: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// Counts `offset` and `limit` in documents instead of results (each document bringing
    /// up to `maxChunksPerDocument` results): how `search_documents` pages. Not part of the
    /// contract's JSON (a request naming it is refused as an unknown field).
    #[serde(skip)]
    pub by_document: bool,
    /// Whom the request is answered for, which decides the documents it may see when the
    /// bundle restricts some ([`super::access`]). Set by the host, never by the request:
    /// not part of the contract's JSON (a request naming it is refused as an unknown field).
    #[cfg(feature = "access")]
    #[serde(skip)]
    pub access: super::Access,
}

/// Restrictions on which documents may match. Within a list any value matches (OR); the
/// lists and the other fields combine with AND.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Filters {
    /// Document formats, e.g. `["md", "pdf"]` (case-insensitive, a leading dot is ignored).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub document_types: Vec<String>,
    /// `YYYY-MM-DD`, inclusive. Documents without a date never match a date filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_to: Option<String>,
    /// Prefix of `documentPath` (plain string prefix; a leading `./` is ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_prefix: Option<String>,
    /// Front-matter tags (case-insensitive); a document matches if it has any of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

impl SearchRequest {
    pub fn new(query: impl Into<String>) -> Self {
        SearchRequest {
            query: query.into(),
            ..Default::default()
        }
    }

    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }

    pub fn rerank(mut self, rerank: bool) -> Self {
        self.rerank = Some(rerank);
        self
    }

    pub fn filters(mut self, filters: Filters) -> Self {
        self.filters = Some(filters);
        self
    }

    /// Parses the contract's JSON. Malformed JSON, a wrong type or an unknown field is
    /// `INVALID_REQUEST` naming the field (dotted path, e.g. `filters.dateFrom`).
    pub fn from_json(json: &str) -> Result<SearchRequest> {
        let de = &mut serde_json::Deserializer::from_str(json);
        let request = SearchRequest::parse(de)?;
        // Anything after the object (`{"query":"a"} {"query":"b"}`) is a malformed request,
        // not a second one to drop.
        de.end().map_err(|e| Error::InvalidRequest {
            field: String::new(),
            message: format!("{e}: the request must be one JSON object"),
        })?;
        Ok(request)
    }

    fn parse(
        de: &mut serde_json::Deserializer<serde_json::de::StrRead<'_>>,
    ) -> Result<SearchRequest> {
        serde_path_to_error::deserialize(de)
            .map(|ObjectOnly(r)| r)
            .map_err(|e| {
                let mut inner = e.inner().to_string();
                // A wrong value is named by its field; where it sat in the text depends on
                // formatting (a JS object re-serialized, a pretty-printed file) and would make
                // equal requests get different messages. Syntax errors keep their position.
                if e.inner().is_data() {
                    if let Some(at) = inner.rfind(" at line ") {
                        inner.truncate(at);
                    }
                }
                let mut field = e.path().to_string();
                // A missing field is reported at its parent; name the field itself.
                if let Some(name) = inner
                    .strip_prefix("missing field `")
                    .and_then(|r| r.split('`').next())
                {
                    field = if field == "." {
                        name.to_owned()
                    } else {
                        format!("{field}.{name}")
                    };
                }
                if field == "." || field == "?" {
                    field = String::new();
                }
                Error::InvalidRequest {
                    field,
                    message: inner,
                }
            })
    }
}

/// Deserializes a struct from a JSON object only. serde's derived structs also accept an
/// array of their fields in order, so `["cache"]` would be a request and `"filters": []`
/// empty filters; the contract says objects.
struct ObjectOnly<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjectOnly<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Object<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Object<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Object(PhantomData)).map(ObjectOnly)
    }
}

fn object_or_null<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> std::result::Result<Option<T>, D::Error> {
    Option::<ObjectOnly<T>>::deserialize(d).map(|o| o.map(|ObjectOnly(v)| v))
}

/// A validated request with defaults applied: what the pipeline runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub query: String,
    pub limit: usize,
    pub mode: Mode,
    /// The request named its mode. One that did not runs fulltext over a bundle without
    /// vectors (and the contract's default, hybrid, over one with them).
    pub mode_named: bool,
    /// Rerank requested (only hybrid requests rerank).
    pub rerank: bool,
    pub candidate_limit: usize,
    /// The page: `limit` results (or documents) after `offset`.
    pub offset: usize,
    /// `offset` and `limit` count documents ([`SearchRequest::by_document`]).
    pub by_document: bool,
    pub max_chunks_per_document: usize,
    pub include_context: bool,
    /// Results carry their text trimmed to this many characters.
    pub max_chars_per_chunk: Option<usize>,
    pub project_id: Option<String>,
    pub scope: Scope,
}

/// Normalized document restrictions (empty = unrestricted).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scope {
    /// Lowercase, without a leading dot.
    pub document_types: Vec<String>,
    pub date_from: Option<String>,
    pub date_to: Option<String>,
    pub source_prefix: Option<String>,
    /// Lowercase.
    pub tags: Vec<String>,
    /// Normalized folder (`a/b`, no slashes at the ends); documents must lie inside it.
    pub workspace: Option<String>,
}

impl Scope {
    pub fn is_empty(&self) -> bool {
        *self == Scope::default()
    }
}

fn invalid(field: &str, message: impl Into<String>) -> Error {
    Error::InvalidRequest {
        field: field.to_owned(),
        message: message.into(),
    }
}

fn in_range(field: &str, value: Option<usize>, default: usize, max: usize) -> Result<usize> {
    let v = value.unwrap_or(default);
    if (1..=max).contains(&v) {
        Ok(v)
    } else {
        Err(invalid(field, format!("must be 1..{max}, got {v}")))
    }
}

/// Checks every field and applies defaults. `max_limit` is the engine's ceiling on `limit`
/// (the contract's 50; evaluation tools raise it).
pub fn validate(req: &SearchRequest, max_limit: usize) -> Result<Plan> {
    let query = req.query.trim();
    // A query of nothing a reader can see (a byte order mark, NUL, zero-width spaces) is
    // empty too.
    if query
        .chars()
        .all(|c| c.is_whitespace() || c.is_control() || crate::bundle::is_format_char(c))
    {
        return Err(Error::QueryEmpty);
    }
    let chars = query.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(invalid(
            "query",
            format!("longer than {MAX_QUERY_CHARS} characters ({chars})"),
        ));
    }
    let limit = in_range("limit", req.limit, DEFAULT_LIMIT, max_limit)?;
    let offset = req.offset.unwrap_or(0);
    if offset > MAX_OFFSET {
        return Err(invalid(
            "offset",
            format!("must be 0..{MAX_OFFSET}, got {offset}"),
        ));
    }
    let candidate_limit = in_range(
        "candidateLimit",
        req.candidate_limit,
        DEFAULT_CANDIDATE_LIMIT,
        MAX_CANDIDATE_LIMIT,
    )?;
    let max_chunks_per_document = in_range(
        "maxChunksPerDocument",
        req.max_chunks_per_document,
        DEFAULT_MAX_CHUNKS_PER_DOCUMENT,
        MAX_CHUNKS_PER_DOCUMENT,
    )?;
    let max_chars_per_chunk = req
        .max_chars_per_chunk
        .map(|n| in_range("maxCharsPerChunk", Some(n), 0, MAX_CHARS_PER_CHUNK))
        .transpose()?;
    let mode = req.mode.unwrap_or_default();
    let mut scope = match &req.filters {
        Some(f) => scope(f)?,
        None => Scope::default(),
    };
    if let Some(ws) = &req.workspace_path {
        scope.workspace = workspace(ws)?;
    }
    let project_id = match &req.project_id {
        Some(p) if p.trim().is_empty() => return Err(invalid("projectId", "must not be empty")),
        Some(p) if p.len() > MAX_FILTER_CHARS => return Err(invalid("projectId", "too long")),
        Some(p) => Some(p.trim().to_owned()),
        None => None,
    };
    Ok(Plan {
        query: query.to_owned(),
        limit,
        mode,
        mode_named: req.mode.is_some(),
        rerank: mode == Mode::Hybrid && req.rerank.unwrap_or(true),
        candidate_limit,
        offset,
        by_document: req.by_document,
        max_chunks_per_document,
        include_context: req.include_context.unwrap_or(true),
        max_chars_per_chunk,
        project_id,
        scope,
    })
}

fn scope(f: &Filters) -> Result<Scope> {
    let list = |field: &str, values: &[String], strip_dot: bool| -> Result<Vec<String>> {
        if values.len() > MAX_FILTER_VALUES {
            return Err(invalid(
                field,
                format!("at most {MAX_FILTER_VALUES} values"),
            ));
        }
        let mut out = Vec::with_capacity(values.len());
        for v in values {
            let mut v = v.trim().to_lowercase();
            if strip_dot {
                v = v.trim_start_matches('.').to_owned();
            }
            if v.is_empty() || v.len() > MAX_FILTER_CHARS {
                return Err(invalid(field, "values must be non-empty strings"));
            }
            out.push(v);
        }
        out.sort();
        out.dedup();
        Ok(out)
    };
    let date_from = f
        .date_from
        .as_deref()
        .map(|d| iso_date("filters.dateFrom", d))
        .transpose()?;
    let date_to = f
        .date_to
        .as_deref()
        .map(|d| iso_date("filters.dateTo", d))
        .transpose()?;
    if let (Some(a), Some(b)) = (&date_from, &date_to) {
        if a > b {
            return Err(invalid(
                "filters.dateFrom",
                format!("{a} is after dateTo {b}"),
            ));
        }
    }
    let source_prefix = match f.source_prefix.as_deref() {
        Some(p) if p.len() > MAX_FILTER_CHARS => {
            return Err(invalid("filters.sourcePrefix", "too long"))
        }
        Some(p) => {
            let p = p.trim().replace('\\', "/");
            let p = p.strip_prefix("./").unwrap_or(&p).to_owned();
            (!p.is_empty()).then_some(p)
        }
        None => None,
    };
    Ok(Scope {
        document_types: list("filters.documentTypes", &f.document_types, true)?,
        date_from,
        date_to,
        source_prefix,
        tags: list("filters.tags", &f.tags, false)?,
        workspace: None,
    })
}

/// `YYYY-MM-DD` with a real month and day.
fn iso_date(field: &str, s: &str) -> Result<String> {
    let bad = || invalid(field, format!("must be an ISO date YYYY-MM-DD, got {s:?}"));
    let s = s.trim();
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = &s[r];
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return Err(bad());
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return Err(bad()),
    };
    if d == 0 || d > days {
        return Err(bad());
    }
    Ok(s.to_owned())
}

/// A relative folder inside the collection, normalized to `a/b`; `None` for the root.
fn workspace(ws: &str) -> Result<Option<String>> {
    let field = "workspacePath";
    if ws.len() > MAX_FILTER_CHARS {
        return Err(invalid(field, "too long"));
    }
    let p = ws.trim().replace('\\', "/");
    let drive = p.len() >= 2 && p.as_bytes()[1] == b':' && p.as_bytes()[0].is_ascii_alphabetic();
    if p.starts_with('/') || p.starts_with('~') || drive {
        return Err(invalid(
            field,
            format!(
                "must be a folder relative to the collection root, got the absolute path {ws:?}"
            ),
        ));
    }
    let mut parts = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                return Err(invalid(
                    field,
                    format!("must stay inside the collection, but {ws:?} climbs out with \"..\""),
                ))
            }
            other => parts.push(other),
        }
    }
    Ok((!parts.is_empty()).then(|| parts.join("/")))
}

/// The project a request names must be the bundle's.
pub fn check_project(plan: &Plan, header: &crate::bundle::Header) -> Result<()> {
    match &plan.project_id {
        Some(p) if header.project_id.as_deref() != Some(p.as_str()) => {
            Err(Error::ProjectNotFound {
                requested: p.clone(),
                available: header.project_id.clone(),
            })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(e: Error) -> String {
        match e {
            Error::InvalidRequest { field, .. } => field,
            other => panic!("expected InvalidRequest, got {other:?}"),
        }
    }

    #[test]
    fn json_errors_name_the_field() {
        let f = |j: &str| field_of(SearchRequest::from_json(j).unwrap_err());
        assert_eq!(f(r#"{"query":"a","colour":1}"#), "colour");
        assert_eq!(
            f(r#"{"query":"a","filters":{"dateFrom":3}}"#),
            "filters.dateFrom"
        );
        assert_eq!(f(r#"{"query":"a","filters":{"kind":"x"}}"#), "filters.kind");
        assert_eq!(f(r#"{"query":"a","limit":-1}"#), "limit");
        assert_eq!(f(r#"{"query":"a","limit":2.5}"#), "limit");
        assert_eq!(f(r#"{"query":"a","mode":"fuzzy"}"#), "mode");
        assert_eq!(f(r#"{"limit":3}"#), "query");
        assert_eq!(f(r#"{"query":"a""#), "");
        assert!(SearchRequest::from_json("[1]").is_err());
        assert!(SearchRequest::from_json("").is_err());
    }

    #[test]
    fn dates_must_be_real() {
        for ok in ["2024-02-29", "2023-12-31", "0001-01-01"] {
            assert_eq!(iso_date("d", ok).unwrap(), ok);
        }
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "2024-1-01",
            "2024-01-00",
            "20240101",
            "2024-01-01T00:00",
            "２０２４-01-01",
        ] {
            assert!(iso_date("d", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn workspaces_stay_inside_the_collection() {
        assert_eq!(
            workspace("./guides//setup/").unwrap().as_deref(),
            Some("guides/setup")
        );
        assert_eq!(workspace(".").unwrap(), None);
        assert_eq!(
            workspace(r"guides\setup").unwrap().as_deref(),
            Some("guides/setup")
        );
        for bad in [
            "/etc",
            "../x",
            "a/../../b",
            "a/..",
            "C:/docs",
            "~/docs",
            r"\\server\share",
        ] {
            assert!(workspace(bad).is_err(), "{bad}");
        }
    }
}
