//! What the long-running front ends share: `docloupe mcp` (stdio) and `docloupe serve` (HTTP,
//! and MCP over HTTP). The served collections, the three tools as thin adapters over the one
//! contract, a caller's scope and rate limit, and the query log:
//!
//! - `search_docs`: the contract request in, the contract response (or error object) out;
//! - `search_documents`: the `search_documents` shape (`docloupe::search::documents`), results
//!   grouped per document;
//! - `result_feedback`: a result marked relevant or not, recorded in the query log.
//!
//! Scope: only the bundles the server was started with (a bundle file, decoded once, or a
//! folder `index-builder split` wrote, whose pieces are read as queries first need them and
//! kept; a request's `projectId` picks one). A bundle that cannot be loaded does not stop the
//! server: its searches answer `INDEX_UNAVAILABLE` (`DOCS_COLLECTION_UNAVAILABLE` in the
//! contract) with the reason, so a client is told what is wrong.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;

use docloupe::search::documents::{self, DocumentsError, DocumentsErrorCode, DocumentsRequest};
use docloupe::search::Timings;
use docloupe::{
    Embedder, Engine, ErrorCode, ErrorResponse, ModelFiles, SearchRequest, SearchResponse,
};
use serde_json::{json, Value};

use crate::{read_piece, render, second_stage, ModelArgs, Source};

mod cache;
mod log_file;
mod metrics;
mod pool;
mod query_log;

use cache::{cache_key, Cache};
pub(crate) use log_file::{LogArgs, QueryLog};
pub(crate) use metrics::Metrics;
pub(crate) use pool::{Busy, Pool};
pub(crate) use query_log::now_rfc3339;
use query_log::*;

/// The tools every front end offers, by name.
pub(crate) const TOOLS: [&str; 3] = ["search_docs", "search_documents", "result_feedback"];

/// One served bundle: its engine, or why there is none.
pub(crate) struct Collection {
    pub(crate) path: PathBuf,
    pub(crate) project: Option<String>,
    pub(crate) engine: std::result::Result<Served, ErrorResponse>,
    /// The file as it was when loaded: a reload loads only what changed.
    stamp: Option<Stamp>,
}

/// A bundle file's (or a split folder's `core.bin`'s) identity: a rebuilt bundle is a new
/// file renamed into place, so its inode, size or time differ.
#[derive(Clone, Debug, PartialEq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    #[cfg(unix)]
    inode: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let file = if path.is_dir() {
        path.join("core.bin")
    } else {
        path.to_path_buf()
    };
    let m = std::fs::metadata(file).ok()?;
    Some(Stamp {
        len: m.len(),
        modified: m.modified().ok(),
        #[cfg(unix)]
        inode: std::os::unix::fs::MetadataExt::ino(&m),
    })
}

/// A collection's engine: a bundle file decoded whole, or a split folder whose pieces are
/// read from disk as searches first need them (a large collection then costs the memory of
/// what its queries have read, not of the whole bundle: at 110,651 documents the whole
/// file's engine held 873 MiB). The pieces a split engine holds are bounded: past
/// `--split-memory-mib` of them it drops them all before reading more (the vectors, which
/// every semantic search scans, stay).
pub(crate) enum Served {
    Whole(Engine),
    Split {
        dir: PathBuf,
        engine: RwLock<SplitEngine>,
        budget: usize,
    },
}

/// A split folder's engine and the bytes of the shards added to it since it last dropped
/// them.
pub(crate) struct SplitEngine {
    engine: Engine,
    held: usize,
}

impl Served {
    pub(crate) fn header(&self) -> docloupe::bundle::Header {
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
                        // next round reads (the exclusive lock holds the others off).
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

/// Calls per minute, refilled continuously.
pub(crate) struct Bucket {
    per_minute: u32,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// A full bucket of `per_minute` calls (0: no limit).
    pub(crate) fn new(per_minute: u32) -> Bucket {
        Bucket {
            per_minute,
            tokens: f64::from(per_minute),
            at: Instant::now(),
        }
    }

    /// None if the call may go ahead, else the seconds until it could.
    pub(crate) fn take(&mut self) -> Option<u64> {
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

/// Loads the bundle file or split folder at `path` with the models `flags` choose; a bundle
/// that cannot be loaded is a collection that answers why.
pub(crate) fn load(path: &Path, flags: &ModelArgs, split_budget: usize) -> Collection {
    // Taken first: a file replaced while it loads is loaded again at the next reload.
    let stamp = stamp(path);
    let loaded = (|| -> std::result::Result<Served, ErrorResponse> {
        let source = Source::open(path).map_err(|e| ErrorResponse::from(&e))?;
        let header = source.header().clone();
        let model_files = if header.flags.hybrid {
            let dir = flags
                .models
                .clone()
                .unwrap_or_else(|| crate::bundle_model_dir(&header));
            // A bad `$DOCLOUPE_QUERY_MODEL` stops `serve` and `mcp` as they start.
            let which = flags.query_model().unwrap_or_default();
            ModelFiles::for_queries(&dir, which).ok()
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
        stamp,
    }
}

pub(crate) fn valid_project(p: &str) -> bool {
    let ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    matches!(p.split_once('/'), Some((ns, name)) if ok(ns) && ok(name))
}

/// Which collections a caller may query.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Scope {
    /// Every served bundle.
    All,
    /// `docloupe mcp --allow-project`: one agent's process. Another project is
    /// `UNAUTHORIZED`, and the answer says which are open.
    Allowed(Vec<String>),
    /// A user's projects (`docloupe serve --tokens`): another project is answered exactly as
    /// a project no bundle serves, so a user cannot tell that it exists.
    Hidden(Vec<String>),
}

impl Scope {
    /// Whether a collection of `project` is visible to this scope.
    pub(crate) fn sees(&self, project: Option<&str>) -> bool {
        match self {
            Scope::All => true,
            Scope::Allowed(list) | Scope::Hidden(list) => {
                project.is_some_and(|p| list.iter().any(|a| a == p))
            }
        }
    }
}

/// Who calls: the name the log records, the collections they may query, their rate limit.
pub(crate) struct Caller {
    /// The user's name from the tokens file (None on stdio or an open server).
    pub(crate) user: Option<String>,
    pub(crate) scope: Scope,
    pub(crate) limiter: Arc<Mutex<Bucket>>,
    /// The documents they may see in a bundle that restricts some to groups of readers.
    pub(crate) access: docloupe::Access,
}

impl Caller {
    fn rate_limited(&self) -> Option<u64> {
        self.limiter.lock().map(|mut b| b.take()).unwrap_or(None)
    }
}

/// What a tool call answered: the JSON for structured content, its text, and whether it is
/// an error; plus what the log line and the metrics say about it.
#[derive(Clone)]
pub(crate) struct Outcome {
    pub(crate) structured: Value,
    pub(crate) text: String,
    pub(crate) is_error: bool,
    pub(crate) results: Option<usize>,
    pub(crate) error_code: Option<String>,
    /// A search's stage times, when it ran.
    pub(crate) timings: Option<Timings>,
    /// The answer's JSON text as the engine's types write it (field order included: what
    /// `docloupe search --jsonl` prints), where it differs from `structured`'s.
    pub(crate) json: Option<String>,
    /// With a cache: whether the answer came from it.
    pub(crate) cached: Option<bool>,
}

enum Refusal {
    Contract(ErrorResponse),
    Unauthorized(String),
}

/// `v` as JSON, read back from its text: an `f32` then has the digits the text has
/// (`0.9308756`), not those of its widening to `f64` (`0.9308755993843079`), so structured
/// content equals the HTTP body and `docloupe search --jsonl`'s line.
fn as_written(v: &impl serde::Serialize) -> Value {
    serde_json::to_string(v)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
}

pub(crate) fn error_outcome(structured: Value, code: &str) -> Outcome {
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
        timings: None,
        json: None,
        cached: None,
    }
}

/// The error a tool answers when the call could not run at all (`reason`: `overloaded`, or a
/// search that failed outside the engine), in the tool's own shape.
pub(crate) fn unavailable(tool: &str, message: &str, details: Value) -> Outcome {
    match tool {
        "search_docs" => error_outcome(
            json!({"errorCode": "DOCS_COLLECTION_UNAVAILABLE", "message": message, "details": details}),
            "DOCS_COLLECTION_UNAVAILABLE",
        ),
        _ => error_outcome(
            serde_json::to_value(DocumentsError::new(
                DocumentsErrorCode::IndexUnavailable,
                message,
                details,
            ))
            .unwrap_or(Value::Null),
            "INDEX_UNAVAILABLE",
        ),
    }
}

/// `RATE_LIMIT` in the tool's own shape.
fn rate_limit_outcome(tool: &str, retry: u64) -> Outcome {
    let message = format!("too many calls; try again in {retry} s");
    match tool {
        "search_docs" => error_outcome(
            json!({"errorCode": "RATE_LIMIT", "message": message, "details": {"retryAfterSeconds": retry}}),
            "RATE_LIMIT",
        ),
        _ => {
            let e = DocumentsError::new(
                DocumentsErrorCode::RateLimit,
                message,
                json!({"retryAfterSeconds": retry}),
            );
            Outcome {
                json: serde_json::to_string(&e).ok(),
                ..error_outcome(
                    serde_json::to_value(&e).unwrap_or(Value::Null),
                    "RATE_LIMIT",
                )
            }
        }
    }
}

/// An internal failure in the tool's own shape (never with a panic's text).
pub(crate) fn internal(tool: &str) -> Outcome {
    let failed = "the search failed";
    let body = match tool {
        "search_docs" => json!({"errorCode": "INTERNAL_ERROR", "message": failed}),
        _ => serde_json::to_value(DocumentsError::new(
            DocumentsErrorCode::InternalError,
            failed,
            json!({}),
        ))
        .unwrap_or(Value::Null),
    };
    error_outcome(body, "INTERNAL_ERROR")
}

impl Outcome {
    /// The answer's JSON text, for an HTTP body.
    pub(crate) fn body(&self) -> String {
        self.json
            .clone()
            .unwrap_or_else(|| self.structured.to_string())
    }

    /// The HTTP status this answer goes out with (also the `status` label of the metrics,
    /// whatever the transport).
    pub(crate) fn status(&self) -> u16 {
        let reason = self
            .structured
            .pointer("/details/reason")
            .or_else(|| self.structured.pointer("/error/details/reason"))
            .and_then(Value::as_str);
        match self.error_code.as_deref() {
            None => 200,
            Some("INVALID_REQUEST" | "SEARCH_QUERY_EMPTY" | "INVALID_QUERY") => 400,
            Some("UNAUTHORIZED") => 401,
            Some("RATE_LIMIT") => 429,
            // Another project's collection is not here; a missing or broken bundle (or a
            // server at capacity) is this service's fault.
            Some("DOCS_COLLECTION_UNAVAILABLE" | "INDEX_UNAVAILABLE") => {
                if reason == Some("ProjectNotFound") {
                    404
                } else {
                    503
                }
            }
            Some("DOCS_RERANKING_UNAVAILABLE") => 503,
            Some(_) => 500,
        }
    }

    /// The seconds a `RATE_LIMIT` or an overloaded answer asks the client to wait.
    pub(crate) fn retry_after(&self) -> Option<u64> {
        self.structured
            .pointer("/details/retryAfterSeconds")
            .or_else(|| self.structured.pointer("/error/details/retryAfterSeconds"))
            .and_then(Value::as_u64)
    }
}

/// The served collections as one set: a reload swaps in a new set, and a call in flight
/// finishes on the one it started with.
pub(crate) type Collections = Arc<Vec<Arc<Collection>>>;

/// The served collections, the query log, the metrics and (for `serve`) the answer cache.
pub(crate) struct Service {
    collections: RwLock<Collections>,
    log: QueryLog,
    pub(crate) metrics: Metrics,
    cache: Option<Cache>,
    /// Bundles whose new file failed to load: why, and the file's stamp (tried again once
    /// the file changes).
    reload_errors: Mutex<Vec<ReloadError>>,
}

#[derive(Clone)]
struct ReloadError {
    path: PathBuf,
    message: String,
    stamp: Option<Stamp>,
}

/// What a reload did to one bundle.
#[derive(Debug)]
pub(crate) enum Reloaded {
    /// The new bundle is serving.
    Swapped(PathBuf),
    /// The new bundle could not be loaded; the old one keeps serving.
    Kept(PathBuf, String),
}

/// How a call came in, for the log line.
pub(crate) struct Via<'a> {
    /// The tool (`search_docs`, `search_documents`, `result_feedback`).
    pub(crate) tool: &'a str,
    /// The HTTP endpoint, or `/mcp`; None on stdio.
    pub(crate) endpoint: Option<&'a str>,
}

impl Service {
    pub(crate) fn new(collections: Vec<Collection>, log: QueryLog) -> Service {
        let metrics = Metrics::default();
        for c in &collections {
            metrics.bundle_loaded(c);
        }
        Service {
            collections: RwLock::new(Arc::new(collections.into_iter().map(Arc::new).collect())),
            log,
            metrics,
            cache: None,
            reload_errors: Mutex::new(Vec::new()),
        }
    }

    /// Answers of searches are kept for `ttl` per access scope (at most `entries` of them).
    pub(crate) fn with_cache(mut self, ttl: std::time::Duration, entries: usize) -> Service {
        self.cache = (!ttl.is_zero() && entries > 0).then(|| Cache::new(ttl, entries));
        self
    }

    /// The collections now served.
    pub(crate) fn current(&self) -> Collections {
        read(&self.collections).clone()
    }

    /// The reload failures still standing: (bundle path, why).
    pub(crate) fn reload_errors(&self) -> Vec<(PathBuf, String)> {
        self.reload_errors
            .lock()
            .map(|e| {
                e.iter()
                    .map(|r| (r.path.clone(), r.message.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Loads again (with `load`) every bundle whose file changed since it was loaded. A
    /// bundle that loads replaces the old one at once (calls in flight finish on the old
    /// set) and empties the cache; one that does not leaves the old one serving, and is
    /// reported until a file that loads takes its place.
    pub(crate) fn reload(&self, load: &dyn Fn(&Path) -> Collection) -> Vec<Reloaded> {
        let old = self.current();
        let mut errors = self
            .reload_errors
            .lock()
            .map(|e| e.clone())
            .unwrap_or_default();
        let mut next: Vec<Arc<Collection>> = Vec::with_capacity(old.len());
        let mut done = Vec::new();
        for c in old.iter() {
            let now = stamp(&c.path);
            let failed_before = errors.iter().any(|e| e.path == c.path && e.stamp == now);
            if now == c.stamp || failed_before {
                next.push(c.clone());
                continue;
            }
            let fresh = load(&c.path);
            errors.retain(|e| e.path != c.path);
            match (&fresh.engine, &c.engine) {
                (Err(e), Ok(_)) => {
                    errors.push(ReloadError {
                        path: c.path.clone(),
                        message: e.message.clone(),
                        stamp: fresh.stamp.clone(),
                    });
                    done.push(Reloaded::Kept(c.path.clone(), e.message.clone()));
                    self.metrics.reload_failed();
                    next.push(c.clone());
                }
                _ => {
                    self.metrics.bundle_loaded(&fresh);
                    done.push(Reloaded::Swapped(c.path.clone()));
                    next.push(Arc::new(fresh));
                }
            }
        }
        if done.iter().any(|d| matches!(d, Reloaded::Swapped(_))) {
            *self
                .collections
                .write()
                .unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
            if let Some(cache) = &self.cache {
                cache.clear();
            }
        }
        if let Ok(mut e) = self.reload_errors.lock() {
            *e = errors;
        }
        done
    }

    /// One line per served bundle on stderr: its path, project and state.
    pub(crate) fn announce(&self) {
        for c in self.current().iter() {
            let state = match &c.engine {
                Ok(_) => "ready".to_owned(),
                Err(e) => format!("unavailable: {}", e.message),
            };
            let line = json!({"event": "bundle", "path": c.path.display().to_string(), "projectId": c.project, "state": state});
            eprintln!("{line}");
        }
    }

    /// The projects `scope` may see, in the order served.
    pub(crate) fn projects(&self, scope: &Scope) -> Vec<String> {
        self.current()
            .iter()
            .filter_map(|c| c.project.clone())
            .filter(|p| scope.sees(Some(p)))
            .collect()
    }

    /// `tool` called with `args` (and for `search_docs` the request's own JSON text, when
    /// the caller has it, so that it is read exactly as `docloupe search --jsonl` reads a
    /// line), then logged.
    pub(crate) fn call(
        &self,
        caller: &Caller,
        via: &Via,
        args: &Value,
        text: Option<&str>,
    ) -> Outcome {
        let started = Instant::now();
        let set = self.current();
        // A search answered within the TTL for the same scope and request is answered again
        // (after the caller's rate limit: a cached answer is still a call).
        let cache = self
            .cache
            .as_ref()
            .filter(|_| via.tool != "result_feedback");
        let key = cache.map(|_| cache_key(caller, via.tool, args, text));
        let mut hit = false;
        let outcome = match caller.rate_limited() {
            Some(retry) => rate_limit_outcome(via.tool, retry),
            None => match cache.zip(key.as_ref()).and_then(|(c, k)| c.get(k)) {
                Some(cached) => {
                    hit = true;
                    cached
                }
                None => {
                    let outcome = match via.tool {
                        "search_docs" => self.search_docs(&set, caller, args, text),
                        "result_feedback" => self.feedback(caller, args),
                        _ => self.search_documents(&set, caller, args),
                    };
                    // Only answers, and only while the set they came from is still served.
                    if let (Some(c), Some(k)) = (cache, key) {
                        if !outcome.is_error && Arc::ptr_eq(&set, &self.current()) {
                            c.put(k, &outcome);
                        }
                    }
                    outcome
                }
            },
        };
        if cache.is_some() && outcome.results.is_some() {
            self.metrics.cache(hit);
        }
        self.metrics.record(via, args, &outcome, started.elapsed());
        self.log(caller, via, args, &outcome, started, cache.map(|_| hit));
        Outcome {
            cached: cache.map(|_| hit),
            ..outcome
        }
    }

    /// Logs a call that was answered without running (over capacity, or unauthorized).
    pub(crate) fn log_refused(
        &self,
        caller: Option<&Caller>,
        via: &Via,
        args: &Value,
        outcome: &Outcome,
    ) {
        self.metrics
            .record(via, args, outcome, std::time::Duration::ZERO);
        let line = self.line(
            caller.and_then(|c| c.user.as_deref()),
            via,
            args,
            outcome,
            None,
        );
        self.log.write(&line);
    }

    /// The collection a request names (by projectId), after the caller's scope; the
    /// contract's error otherwise.
    fn collection<'a>(
        set: &'a [Arc<Collection>],
        caller: &Caller,
        project: Option<&str>,
    ) -> std::result::Result<&'a Collection, Refusal> {
        let chosen = match (project, &caller.scope) {
            (Some(p), _) => set.iter().find(|c| c.project.as_deref() == Some(p)),
            // A user without the first bundle gets the first one they may see.
            (None, Scope::Hidden(_)) => {
                set.iter().find(|c| caller.scope.sees(c.project.as_deref()))
            }
            (None, _) => set.first(),
        }
        .map(|c| &**c);
        let chosen = match &caller.scope {
            Scope::All => chosen,
            Scope::Hidden(_) => chosen.filter(|c| caller.scope.sees(c.project.as_deref())),
            Scope::Allowed(allow) => {
                let target = project
                    .map(str::to_owned)
                    .or_else(|| chosen.and_then(|c| c.project.clone()));
                if !caller.scope.sees(target.as_deref()) {
                    return Err(Refusal::Unauthorized(format!(
                        "project {} is not open to this client (allowed: {})",
                        target.as_deref().unwrap_or("(none)"),
                        allow.join(", ")
                    )));
                }
                chosen
            }
        };
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

    /// `search_docs`: the contract, as is.
    fn search_docs(
        &self,
        set: &[Arc<Collection>],
        caller: &Caller,
        args: &Value,
        text: Option<&str>,
    ) -> Outcome {
        let owned;
        let text = match text {
            Some(t) => t,
            None => {
                owned = args.to_string();
                &owned
            }
        };
        let project = args.get("projectId").and_then(Value::as_str);
        let answer = Self::collection(set, caller, project).and_then(|c| match &c.engine {
            Ok(engine) => SearchRequest::from_json(text)
                .and_then(|req| {
                    engine.search(&SearchRequest {
                        access: caller.access.clone(),
                        ..req
                    })
                })
                .map_err(|e| Refusal::Contract(ErrorResponse::from(&e))),
            Err(e) => Err(Refusal::Contract(e.clone())),
        });
        match answer {
            Ok(r) => Outcome {
                structured: as_written(&r),
                text: render::markdown(&r, &render::Page::results(&r, args)),
                is_error: false,
                results: Some(r.results.len()),
                error_code: None,
                timings: Some(r.timings.clone()),
                json: serde_json::to_string(&r).ok(),
                cached: None,
            },
            Err(Refusal::Contract(e)) => {
                let code = serde_json::to_value(e.error_code)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned));
                Outcome {
                    json: serde_json::to_string(&e).ok(),
                    ..error_outcome(
                        serde_json::to_value(&e).unwrap_or(Value::Null),
                        code.as_deref().unwrap_or("INTERNAL_ERROR"),
                    )
                }
            }
            Err(Refusal::Unauthorized(message)) => error_outcome(
                json!({"errorCode": "UNAUTHORIZED", "message": message}),
                "UNAUTHORIZED",
            ),
        }
    }

    /// `search_documents`: the agents' shape over the same engine.
    fn search_documents(&self, set: &[Arc<Collection>], caller: &Caller, args: &Value) -> Outcome {
        let refuse = |e: DocumentsError| {
            let code = serde_json::to_value(e.error.code)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            Outcome {
                json: serde_json::to_string(&e).ok(),
                ..error_outcome(serde_json::to_value(&e).unwrap_or(Value::Null), &code)
            }
        };
        let req = match DocumentsRequest::from_value(args) {
            Ok(r) => r,
            Err(e) => return refuse(e),
        };
        let collection = match Self::collection(set, caller, req.project.as_deref()) {
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
                .search(&SearchRequest {
                    access: caller.access.clone(),
                    ..req.to_search_request()
                })
                .map_err(|e| ErrorResponse::from(&e)),
            Err(e) => Err(e.clone()),
        };
        match response {
            Ok(r) => {
                let shaped = documents::shape(&req, &r);
                Outcome {
                    results: Some(shaped.results.len()),
                    structured: as_written(&shaped),
                    text: render::markdown(
                        &r,
                        &render::Page::documents(
                            (req.page as usize - 1) * req.limit as usize,
                            req.limit as usize,
                        ),
                    ),
                    is_error: false,
                    error_code: None,
                    timings: Some(r.timings.clone()),
                    json: serde_json::to_string(&shaped).ok(),
                    cached: None,
                }
            }
            Err(e) => refuse(DocumentsError::from_contract(&e)),
        }
    }

    /// `result_feedback`: a result marked relevant or not, recorded in the query log (where
    /// `docloupe stats` turns marks at ranks 1–5 into precision@5). Nothing else changes.
    fn feedback(&self, caller: &Caller, args: &Value) -> Outcome {
        let refuse = |field: &str, message: &str| {
            let e = DocumentsError::invalid(field, message);
            error_outcome(
                serde_json::to_value(&e).unwrap_or(Value::Null),
                "INVALID_QUERY",
            )
        };
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
        // Feedback on a project the caller cannot see is refused as a project not served.
        if let Some(p) = args["project"].as_str() {
            if matches!(caller.scope, Scope::Hidden(_)) && !caller.scope.sees(Some(p)) {
                return refuse("project", &format!("no served bundle is project {p}"));
            }
        }
        Outcome {
            structured: json!({"success": true, "recorded": true}),
            text: "Recorded.".into(),
            is_error: false,
            results: None,
            error_code: None,
            timings: None,
            json: None,
            cached: None,
        }
    }

    fn line(
        &self,
        user: Option<&str>,
        via: &Via,
        args: &Value,
        outcome: &Outcome,
        started: Option<Instant>,
    ) -> Value {
        let mut line = json!({
            "time": now_rfc3339(),
            "tool": via.tool,
            "params": bounded(args, 0),
            "durationMs": started.map(|s| (s.elapsed().as_secs_f64() * 1e6).round() / 1e3),
            "results": outcome.results,
            "errorCode": outcome.error_code,
        });
        if let Some(user) = user {
            line["user"] = Value::from(user);
        }
        if let Some(endpoint) = via.endpoint {
            line["endpoint"] = Value::from(endpoint);
        }
        line
    }

    fn log(
        &self,
        caller: &Caller,
        via: &Via,
        args: &Value,
        outcome: &Outcome,
        started: Instant,
        hit: Option<bool>,
    ) {
        let mut line = self.line(caller.user.as_deref(), via, args, outcome, Some(started));
        if let Some(hit) = hit {
            line["cache"] = Value::from(if hit { "hit" } else { "miss" });
        }
        self.log.write(&line);
    }
}

#[cfg(test)]
mod tests;
