//! `docloupe mcp`: the engine for AI agents, as an MCP server on stdio (the official Rust SDK,
//! `rmcp`). Two tools, both thin adapters over the one contract:
//!
//! - `search_docs`: the contract request in, the contract response (or error object) out as
//!   structured content, with a markdown rendering as text;
//! - `search_documents`: the `search_documents` shape (`docloupe::search::documents`), results
//!   grouped per document.
//!
//! Scope: the server searches only the bundles it was started with (`--bundle`, repeatable;
//! a bundle file, decoded once, or a folder `index-builder split` wrote, whose pieces are
//! read as queries first need them and kept; a request's `projectId` picks one).
//! `--allow-project` lists the projects a client may query; any other is `UNAUTHORIZED`.
//! Every call is logged as one JSON line (stderr, or `--log FILE`) with its parameters and
//! time. `--rate-limit` calls per minute per server process answer `RATE_LIMIT` beyond it. A
//! bundle that cannot be loaded does not stop the server: its searches answer
//! `INDEX_UNAVAILABLE` (`DOCS_COLLECTION_UNAVAILABLE` in the contract) with the reason, so an
//! agent is told what is wrong.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;

use anyhow::{Context, Result};
use docloupe::search::documents::{self, DocumentsError, DocumentsErrorCode, DocumentsRequest};
use docloupe::search::request;
use docloupe::{
    Embedder, Engine, ErrorCode, ErrorResponse, ModelFiles, SearchRequest, SearchResponse,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};

use crate::{read_piece, render, second_stage, ModelArgs, Source};

mod query_log;
mod stdio;
mod tools;

use query_log::*;
use stdio::*;
use tools::*;

#[derive(clap::Args)]
pub struct McpArgs {
    /// A bundle file or split folder to serve (repeat for several; a request's projectId
    /// picks one, the first answers requests without one).
    #[arg(long, required = true)]
    bundle: Vec<PathBuf>,
    #[command(flatten)]
    model_args: ModelArgs,
    /// A project (namespace/name) clients may query; repeat for several. Without any, every
    /// served bundle may be queried.
    #[arg(long = "allow-project")]
    allow_project: Vec<String>,
    /// Tool calls per minute this server answers before RATE_LIMIT (0: no limit).
    #[arg(long, default_value_t = 120)]
    rate_limit: u32,
    /// Append the query log (JSON lines) to this file instead of stderr.
    #[arg(long)]
    log: Option<PathBuf>,
    /// A split folder's engine drops the shards its searches have read once their files come
    /// to more than this many MiB, and reads again what later searches need (the core and
    /// the vectors stay).
    #[arg(long, default_value_t = 256, value_name = "MiB")]
    split_memory_mib: usize,
}

/// One served bundle: its engine, or why there is none.
struct Collection {
    path: PathBuf,
    project: Option<String>,
    engine: std::result::Result<Served, ErrorResponse>,
}

/// A collection's engine: a bundle file decoded whole, or a split folder whose pieces are
/// read from disk as searches first need them (a large collection then costs the memory of
/// what its queries have read, not of the whole bundle: at 110,651 documents the whole
/// file's engine held 873 MiB). The pieces a split engine holds are bounded: past
/// `--split-memory-mib` of them it drops them all before reading more (the vectors, which
/// every semantic search scans, stay).
enum Served {
    Whole(Engine),
    Split {
        dir: PathBuf,
        engine: RwLock<SplitEngine>,
        budget: usize,
    },
}

/// A split folder's engine and the bytes of the shards added to it since it last dropped
/// them.
struct SplitEngine {
    engine: Engine,
    held: usize,
}

impl Served {
    fn header(&self) -> docloupe::bundle::Header {
        match self {
            Served::Whole(e) => e.header().clone(),
            Served::Split { engine, .. } => read(engine).engine.header().clone(),
        }
    }

    /// `req` answered. A split folder's engine answers under a shared lock while it has
    /// every piece the request reads; one that lacks some reads them under the exclusive
    /// lock (another call may have added them meanwhile: the search is tried again first).
    fn search(&self, req: &SearchRequest) -> docloupe::Result<SearchResponse> {
        match self {
            Served::Whole(e) => e.search_guarded(req),
            Served::Split {
                dir,
                engine,
                budget,
            } => {
                // Bound first: a guard in the `match` itself would be held through its arms.
                let first = read(engine).engine.search_guarded(req);
                match first {
                    Err(docloupe::Error::FilesNeeded(_)) => {
                        let mut split = engine.write().unwrap_or_else(PoisonError::into_inner);
                        let SplitEngine { engine, held } = &mut *split;
                        // Only between searches: what a search's rounds add is what its
                        // next round reads.
                        if *held > *budget {
                            engine.forget_split_files();
                            *held = 0;
                        }
                        engine.search_fetching(req, |name| {
                            let bytes = read_piece(dir, name)?;
                            *held += bytes.len();
                            Ok(bytes)
                        })
                    }
                    done => done,
                }
            }
        }
    }
}

/// The engine behind `lock`, for a search. Engine calls catch their panics, so a poisoned
/// lock still guards a whole engine.
fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

struct Inner {
    collections: Vec<Collection>,
    allow: Vec<String>,
    limiter: Mutex<Bucket>,
    log: Mutex<Box<dyn Write + Send>>,
}

#[derive(Clone)]
struct DocsServer(Arc<Inner>);

/// Calls per minute, refilled continuously.
struct Bucket {
    per_minute: u32,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// None if the call may go ahead, else the seconds until it could.
    fn take(&mut self) -> Option<u64> {
        if self.per_minute == 0 {
            return None;
        }
        let now = Instant::now();
        let rate = f64::from(self.per_minute) / 60.0;
        self.tokens = (self.tokens + now.duration_since(self.at).as_secs_f64() * rate)
            .min(f64::from(self.per_minute));
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            None
        } else {
            Some(((1.0 - self.tokens) / rate).ceil().max(1.0) as u64)
        }
    }
}

fn load(path: &Path, flags: &ModelArgs, split_budget: usize) -> Collection {
    let loaded = (|| -> std::result::Result<Served, ErrorResponse> {
        let source = Source::open(path).map_err(|e| ErrorResponse::from(&e))?;
        let header = source.header().clone();
        let model_files = if header.flags.hybrid {
            let dir = flags
                .models
                .clone()
                .unwrap_or_else(|| crate::bundle_model_dir(&header));
            ModelFiles::from_dir(&dir).ok()
        } else {
            None
        };
        // A split folder's vector pieces are all read now (hybrid search scans them all),
        // while the model loads.
        let (embedder, loaded) = crate::beside(
            || model_files.as_ref().map(Embedder::new).transpose(),
            || source.into_engine(true),
        );
        let embedder = embedder.map_err(|e| ErrorResponse::from(&e))?;
        let (mut engine, folder, unkept) = loaded.map_err(|e| ErrorResponse::from(&e))?;
        // The server runs for long: the vectors are kept for the next one at once.
        if let Some(cache) = unkept {
            cache.keep(&engine);
        }
        if let Some(e) = embedder {
            engine
                .install_embedder(e)
                .map_err(|e| ErrorResponse::from(&e))?;
        }
        let mut engine = engine.with_options(flags.engine_options());
        if header.flags.hybrid {
            engine = second_stage(engine, flags).map_err(|e| ErrorResponse {
                error_code: ErrorCode::DocsRerankingUnavailable,
                message: format!("{e:#}"),
                details: None,
            })?;
        }
        Ok(match folder {
            Some(dir) => Served::Split {
                dir,
                engine: RwLock::new(SplitEngine { engine, held: 0 }),
                budget: split_budget,
            },
            None => Served::Whole(engine),
        })
    })();
    let project = loaded.as_ref().ok().and_then(|e| e.header().project_id);
    Collection {
        path: path.to_path_buf(),
        project,
        engine: loaded,
    }
}

pub fn serve(args: McpArgs) -> Result<()> {
    for p in &args.allow_project {
        anyhow::ensure!(
            valid_project(p),
            "--allow-project {p:?}: expected namespace/name"
        );
    }
    let flags = &args.model_args;
    let collections: Vec<Collection> = args
        .bundle
        .iter()
        .map(|b| load(b, flags, args.split_memory_mib.saturating_mul(1 << 20)))
        .collect();
    let log: Box<dyn Write + Send> = match &args.log {
        Some(path) => {
            let mut open = std::fs::OpenOptions::new();
            open.create(true).append(true);
            // Queries can be private: a new log is readable by its owner only.
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
            Box::new(
                open.open(path)
                    .with_context(|| format!("cannot open the log {}", path.display()))?,
            )
        }
        None => Box::new(std::io::stderr()),
    };
    for c in &collections {
        let state = match &c.engine {
            Ok(_) => "ready".to_owned(),
            Err(e) => format!("unavailable: {}", e.message),
        };
        let line = json!({"event": "bundle", "path": c.path.display().to_string(), "projectId": c.project, "state": state});
        eprintln!("{line}");
    }
    let server = DocsServer(Arc::new(Inner {
        collections,
        allow: args.allow_project.clone(),
        limiter: Mutex::new(Bucket {
            per_minute: args.rate_limit,
            tokens: f64::from(args.rate_limit),
            at: Instant::now(),
        }),
        log: Mutex::new(log),
    }));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let service = server
            .serve(checked_stdio())
            .await
            .context("MCP handshake on stdio failed")?;
        service.waiting().await.context("MCP session failed")?;
        Ok(())
    })
}

fn valid_project(p: &str) -> bool {
    let ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    matches!(p.split_once('/'), Some((ns, name)) if ok(ns) && ok(name))
}

/// What a tool call answered: the JSON for structured content, its text, and whether it is
/// an error; plus what the log line says about it.
struct Outcome {
    structured: Value,
    text: String,
    is_error: bool,
    results: Option<usize>,
    error_code: Option<String>,
}

impl DocsServer {
    /// The collection a request names (by projectId), after the access scope; the contract's
    /// error otherwise, and `UNAUTHORIZED` for a project the client may not query.
    fn collection(&self, project: Option<&str>) -> std::result::Result<&Collection, Refusal> {
        let inner = &self.0;
        let chosen = match project {
            Some(p) => inner
                .collections
                .iter()
                .find(|c| c.project.as_deref() == Some(p)),
            None => inner.collections.first(),
        };
        let target = project
            .map(str::to_owned)
            .or_else(|| chosen.and_then(|c| c.project.clone()));
        if !inner.allow.is_empty()
            && !target
                .as_deref()
                .is_some_and(|t| inner.allow.iter().any(|a| a == t))
        {
            return Err(Refusal::Unauthorized(format!(
                "project {} is not open to this client (allowed: {})",
                target.as_deref().unwrap_or("(none)"),
                inner.allow.join(", ")
            )));
        }
        chosen.ok_or_else(|| {
            Refusal::Contract(ErrorResponse {
                error_code: ErrorCode::DocsCollectionUnavailable,
                message: format!(
                    "no served bundle is project {}",
                    project.unwrap_or_default()
                ),
                details: Some(json!({"reason": "ProjectNotFound", "requested": project})),
            })
        })
    }

    fn rate_limited(&self) -> Option<u64> {
        self.0.limiter.lock().map(|mut b| b.take()).unwrap_or(None)
    }

    /// `search_docs`: the contract, as is.
    fn search_docs(&self, args: &Value) -> Outcome {
        if let Some(retry) = self.rate_limited() {
            let e = json!({"errorCode": "RATE_LIMIT", "message": format!("too many calls; try again in {retry} s"), "details": {"retryAfterSeconds": retry}});
            return error_outcome(e, "RATE_LIMIT");
        }
        let text = args.to_string();
        let project = args.get("projectId").and_then(Value::as_str);
        let answer = self.collection(project).and_then(|c| match &c.engine {
            Ok(engine) => SearchRequest::from_json(&text)
                .and_then(|req| engine.search(&req))
                .map_err(|e| Refusal::Contract(ErrorResponse::from(&e))),
            Err(e) => Err(Refusal::Contract(e.clone())),
        });
        match answer {
            Ok(r) => Outcome {
                structured: serde_json::to_value(&r).unwrap_or(Value::Null),
                text: render::markdown(&r, &render::Page::results(&r, args)),
                is_error: false,
                results: Some(r.results.len()),
                error_code: None,
            },
            Err(Refusal::Contract(e)) => {
                let code = serde_json::to_value(e.error_code)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned));
                error_outcome(
                    serde_json::to_value(&e).unwrap_or(Value::Null),
                    code.as_deref().unwrap_or("INTERNAL_ERROR"),
                )
            }
            Err(Refusal::Unauthorized(message)) => error_outcome(
                json!({"errorCode": "UNAUTHORIZED", "message": message}),
                "UNAUTHORIZED",
            ),
        }
    }

    /// `search_documents`: the agents' shape over the same engine.
    fn search_documents(&self, args: &Value) -> Outcome {
        let refuse = |e: DocumentsError| {
            let code = serde_json::to_value(e.error.code)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            error_outcome(serde_json::to_value(&e).unwrap_or(Value::Null), &code)
        };
        if let Some(retry) = self.rate_limited() {
            return refuse(DocumentsError::new(
                DocumentsErrorCode::RateLimit,
                format!("too many calls; try again in {retry} s"),
                json!({"retryAfterSeconds": retry}),
            ));
        }
        let req = match DocumentsRequest::from_value(args) {
            Ok(r) => r,
            Err(e) => return refuse(e),
        };
        let collection = match self.collection(req.project.as_deref()) {
            Ok(c) => c,
            Err(Refusal::Unauthorized(m)) => {
                return refuse(DocumentsError::new(
                    DocumentsErrorCode::Unauthorized,
                    m,
                    json!({}),
                ))
            }
            Err(Refusal::Contract(e)) => return refuse(DocumentsError::from_contract(&e)),
        };
        let response: std::result::Result<SearchResponse, ErrorResponse> = match &collection.engine
        {
            Ok(engine) => engine
                .search(&req.to_search_request())
                .map_err(|e| ErrorResponse::from(&e)),
            Err(e) => Err(e.clone()),
        };
        match response {
            Ok(r) => {
                let shaped = documents::shape(&req, &r);
                Outcome {
                    results: Some(shaped.results.len()),
                    structured: serde_json::to_value(&shaped).unwrap_or(Value::Null),
                    text: render::markdown(
                        &r,
                        &render::Page::documents(
                            (req.page as usize - 1) * req.limit as usize,
                            req.limit as usize,
                        ),
                    ),
                    is_error: false,
                    error_code: None,
                }
            }
            Err(e) => refuse(DocumentsError::from_contract(&e)),
        }
    }

    /// `result_feedback`: a result marked relevant or not, recorded in the query log (where
    /// `docloupe stats` turns marks at ranks 1–5 into precision@5). Nothing else changes.
    fn feedback(&self, args: &Value) -> Outcome {
        let refuse = |field: &str, message: &str| {
            let e = DocumentsError::invalid(field, message);
            error_outcome(
                serde_json::to_value(&e).unwrap_or(Value::Null),
                "INVALID_QUERY",
            )
        };
        if let Some(retry) = self.rate_limited() {
            let e = DocumentsError::new(
                DocumentsErrorCode::RateLimit,
                format!("too many calls; try again in {retry} s"),
                json!({"retryAfterSeconds": retry}),
            );
            return error_outcome(
                serde_json::to_value(&e).unwrap_or(Value::Null),
                "RATE_LIMIT",
            );
        }
        let Some(obj) = args.as_object() else {
            return refuse("", "the arguments must be a JSON object");
        };
        let known = [
            "query", "document", "relevant", "rank", "chunk_id", "project", "note",
        ];
        if let Some(k) = obj.keys().find(|k| !known.contains(&k.as_str())) {
            return refuse(k, "unknown field");
        }
        let text = |k: &str, max: usize, required: bool| match &args[k] {
            Value::Null if !required => Ok(()),
            Value::String(s) if !s.trim().is_empty() && s.chars().count() <= max => Ok(()),
            _ => Err(format!(
                "must be a non-empty string of at most {max} characters"
            )),
        };
        for (k, max, required) in [
            ("query", 500, true),
            ("document", 1000, true),
            ("chunk_id", 100, false),
            ("project", 200, false),
            ("note", 500, false),
        ] {
            if let Err(m) = text(k, max, required) {
                return refuse(k, &m);
            }
        }
        if !args["relevant"].is_boolean() {
            return refuse("relevant", "must be true or false");
        }
        match &args["rank"] {
            Value::Null => {}
            v if v.as_u64().is_some_and(|r| (1..=10_000).contains(&r)) => {}
            _ => return refuse("rank", "must be the result's position, 1..10000"),
        }
        Outcome {
            structured: json!({"success": true, "recorded": true}),
            text: "Recorded.".into(),
            is_error: false,
            results: None,
            error_code: None,
        }
    }

    fn log(&self, tool: &str, args: &Value, outcome: &Outcome, started: Instant) {
        let line = json!({
            "time": now_rfc3339(),
            "tool": tool,
            "params": bounded(args, 0),
            "durationMs": (started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
            "results": outcome.results,
            "errorCode": outcome.error_code,
        });
        if let Ok(mut log) = self.0.log.lock() {
            let _ = writeln!(log, "{line}");
            let _ = log.flush();
        }
    }
}

enum Refusal {
    Contract(ErrorResponse),
    Unauthorized(String),
}

fn error_outcome(structured: Value, code: &str) -> Outcome {
    let message = structured
        .pointer("/error/message")
        .or_else(|| structured.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    Outcome {
        text: format!("{code}: {message}"),
        structured,
        is_error: true,
        results: None,
        error_code: Some(code.to_owned()),
    }
}

impl ServerHandler for DocsServer {
    fn get_info(&self) -> ServerConfig {
        // Only what this client may query: the others' names are not its business.
        let allow = &self.0.allow;
        let projects: Vec<String> = self
            .0
            .collections
            .iter()
            .filter_map(|c| c.project.clone())
            .filter(|p| allow.is_empty() || allow.contains(p))
            .collect();
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("docloupe", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "Searches documentation bundles{}. Use search_documents for documents with their \
                 best fragments, search_docs for the full ranking contract; result_feedback to \
                 say whether a result answered the query.",
                if projects.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", projects.join(", "))
                }
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, McpError> {
        let started = Instant::now();
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let tool = request.name.to_string();
        if !["search_docs", "search_documents", "result_feedback"].contains(&tool.as_str()) {
            return Err(McpError::invalid_params(
                format!("no tool named {tool}"),
                None,
            ));
        }
        let server = self.clone();
        let (tool_name, call_args) = (tool.clone(), args.clone());
        // Searching is CPU work: off the protocol's threads.
        let outcome = tokio::task::spawn_blocking(move || match tool_name.as_str() {
            "search_docs" => server.search_docs(&call_args),
            "result_feedback" => server.feedback(&call_args),
            _ => server.search_documents(&call_args),
        })
        .await
        .unwrap_or_else(|_| {
            let failed = "the search failed";
            let body = match tool.as_str() {
                "search_docs" => json!({"errorCode": "INTERNAL_ERROR", "message": failed}),
                _ => serde_json::to_value(DocumentsError::new(
                    DocumentsErrorCode::InternalError,
                    failed,
                    json!({}),
                ))
                .unwrap_or(Value::Null),
            };
            error_outcome(body, "INTERNAL_ERROR")
        });
        // Logged before answering, whatever the answer.
        self.log(&tool, &args, &outcome, started);
        let mut result = if outcome.is_error {
            CallToolResult::error(vec![ContentBlock::text(outcome.text)])
        } else {
            CallToolResult::success(vec![ContentBlock::text(outcome.text)])
        };
        result.structured_content = Some(outcome.structured);
        Ok(result.into())
    }
}

#[cfg(test)]
mod tests;
