//! `docloupe serve`: the search service for a team, over HTTP (tokio + hyper through axum, the
//! tokio project's router, whose handlers are plain async functions and whose middleware is
//! tower's, so rmcp's streamable-HTTP MCP service mounts as one more route).
//!
//! - `POST /v1/search/docs/query` (and `GET` with `q=`): the contract, as `docloupe search
//!   --jsonl` answers it; `POST /v1/search/documents`: the `search_documents` shape;
//!   `POST /v1/feedback`: `result_feedback`; `/mcp`: the same three tools over MCP.
//! - `GET /healthz` (alive), `GET /readyz` (every bundle loaded), `GET /metrics` (Prometheus).
//!
//! Every search runs on the bounded [`Pool`] beside the runtime; past its workers and queue a
//! call is answered 503 with `Retry-After` at once. With `--tokens`, every call but the health
//! checks needs `Authorization: Bearer <token>`, and a user sees only their projects (another
//! one is answered as a project no bundle serves).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::mcp::{busy_outcome, DocsServer};
use crate::service::{self, Caller, LogArgs, Outcome, Pool, QueryLog, Service, Via};
use crate::ModelArgs;

mod auth;

use auth::{Users, Who};

pub(crate) const SEARCH_PATH: &str = "/v1/search/docs/query";
pub(crate) const DOCUMENTS_PATH: &str = "/v1/search/documents";
pub(crate) const FEEDBACK_PATH: &str = "/v1/feedback";

#[derive(clap::Args)]
pub struct ServeArgs {
    /// A bundle file or split folder to serve (repeat for several; a request's projectId
    /// picks one, the first a user may see answers requests without one).
    #[arg(long, required = true)]
    bundle: Vec<PathBuf>,
    #[command(flatten)]
    model_args: ModelArgs,
    /// The address to listen on (port 0: any free port, printed at start). Keep it on
    /// loopback behind a reverse proxy that terminates TLS.
    #[arg(long, default_value = "127.0.0.1:8790")]
    listen: SocketAddr,
    /// The tokens file (TOML, one [[user]] per token: name, token_sha256, optional projects,
    /// rate_limit and metrics). Without it the server is open to every client.
    #[arg(long)]
    tokens: Option<PathBuf>,
    /// Calls per minute per user (a tokens file's rate_limit overrides it), or per client
    /// address on an open server, before RATE_LIMIT (0: no limit).
    #[arg(long, default_value_t = 120)]
    rate_limit: u32,
    /// Searches run at once (default: the machine's cores).
    #[arg(long)]
    workers: Option<usize>,
    /// Searches that may wait for a worker; past them a call is answered 503 at once.
    #[arg(long, default_value_t = 64)]
    queue: usize,
    /// The largest request body, in KiB.
    #[arg(long, default_value_t = 64, value_name = "KiB")]
    max_body_kib: usize,
    /// A host name the server is reached by besides loopback (behind a reverse proxy: its
    /// public name); MCP requests for any other Host are refused (DNS rebinding).
    #[arg(long = "public-host")]
    public_host: Vec<String>,
    #[command(flatten)]
    log: LogArgs,
    /// A split folder's engine drops the shards its searches have read past this many MiB.
    #[arg(long, default_value_t = 256, value_name = "MiB")]
    split_memory_mib: usize,
    /// How long a search's answer is answered again to the same request from callers with
    /// the same rights (0: no cache).
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    cache_ttl_seconds: u64,
    /// Answers the cache keeps at most.
    #[arg(long, default_value_t = 10_000)]
    cache_entries: usize,
    /// How often to look for rebuilt bundles (0: only on SIGHUP, which always reloads).
    #[arg(long, default_value_t = 5, value_name = "SECONDS")]
    watch_seconds: u64,
}

struct App {
    service: Arc<Service>,
    /// Loads a bundle as at start (the reloads' loader).
    loader: Box<dyn Fn(&std::path::Path) -> service::Collection + Send + Sync>,
    pool: Arc<Pool>,
    capacity: usize,
    users: Users,
    max_body: usize,
}

type Shared = Arc<App>;

pub fn run(args: ServeArgs) -> Result<()> {
    let users = match &args.tokens {
        Some(path) => Users::from_file(path, args.rate_limit)?,
        None => Users::open(args.rate_limit),
    };
    let workers = args
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .max(1);
    let log = QueryLog::open(&args.log)?;
    let split_budget = args.split_memory_mib.saturating_mul(1 << 20);
    args.model_args.query_model()?;
    let collections = args
        .bundle
        .iter()
        .map(|b| service::load(b, &args.model_args, split_budget))
        .collect();
    let service = Arc::new(Service::new(collections, log).with_cache(
        std::time::Duration::from_secs(args.cache_ttl_seconds),
        args.cache_entries,
    ));
    service.announce();
    if users.is_open() {
        eprintln!(
            "{}",
            json!({"event": "open", "warning": "no --tokens: every client may search every served bundle (its documents without access labels) and read /metrics"})
        );
    }
    let flags = args.model_args;
    let app = Arc::new(App {
        service,
        loader: Box::new(move |path| service::load(path, &flags, split_budget)),
        pool: Arc::new(Pool::new(workers, args.queue)),
        capacity: workers + args.queue,
        users,
        max_body: args.max_body_kib.saturating_mul(1024),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let watch = args.watch_seconds;
    runtime.block_on(async move {
        tokio::spawn(reloads(app.clone(), watch));
        listen(app, args.listen, args.public_host).await
    })
}

/// Reloads on SIGHUP, and every `watch` seconds when a bundle's file changed. Loading runs on
/// a blocking thread; searches go on meanwhile, on the set that is serving.
async fn reloads(app: Shared, watch: u64) {
    #[cfg(unix)]
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
    let period = std::time::Duration::from_secs(watch.max(1));
    loop {
        #[cfg(unix)]
        let signalled = async {
            match hangup.as_mut() {
                Some(h) => {
                    h.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        #[cfg(not(unix))]
        let signalled = std::future::pending::<()>();
        let ticked = async {
            if watch == 0 {
                std::future::pending::<()>().await
            }
            tokio::time::sleep(period).await
        };
        tokio::select! {
            _ = signalled => {}
            _ = ticked => {}
        }
        let worker = app.clone();
        let done = tokio::task::spawn_blocking(move || worker.service.reload(&*worker.loader))
            .await
            .unwrap_or_default();
        for d in done {
            let line = match d {
                service::Reloaded::Swapped(path) => {
                    json!({"event": "reload", "path": path.display().to_string(), "state": "ready"})
                }
                service::Reloaded::Kept(path, why) => {
                    json!({"event": "reload", "path": path.display().to_string(), "state": "failed", "error": why, "serving": "the previous bundle"})
                }
            };
            eprintln!("{line}");
        }
    }
}

async fn listen(app: Shared, address: SocketAddr, public_hosts: Vec<String>) -> Result<()> {
    let stop = CancellationToken::new();
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
    hosts.extend(public_hosts);
    let mut config = StreamableHttpServerConfig::default().with_allowed_hosts(hosts);
    config.cancellation_token = stop.child_token();
    let mcp = {
        let (service, pool) = (app.service.clone(), app.pool.clone());
        StreamableHttpService::new(
            move || {
                Ok(DocsServer {
                    service: service.clone(),
                    caller: None,
                    pool: Some(pool.clone()),
                })
            },
            Arc::new(LocalSessionManager::default()),
            config,
        )
    };
    let router = Router::new()
        .route(SEARCH_PATH, get(search_get).post(search_post))
        .route(DOCUMENTS_PATH, post(documents))
        .route(FEEDBACK_PATH, post(feedback))
        .route("/metrics", get(metrics))
        .nest_service("/mcp", mcp)
        .route_layer(axum::middleware::from_fn_with_state(
            app.clone(),
            authenticate,
        ))
        .route(
            "/healthz",
            get(|| async { json_response(StatusCode::OK, json!({"status": "ok"}).to_string()) }),
        )
        .route("/readyz", get(ready))
        .fallback(not_found)
        .with_state(app.clone());
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let bound = listener.local_addr()?;
    eprintln!(
        "{}",
        json!({"event": "listening", "address": bound.to_string()})
    );
    let shutdown = {
        let stop = stop.clone();
        async move {
            terminated().await;
            eprintln!("{}", json!({"event": "stopping"}));
            // Open MCP streams end too, so the server can finish.
            stop.cancel();
        }
    };
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
    .context("the server failed")?;
    eprintln!("{}", json!({"event": "stopped"}));
    Ok(())
}

/// SIGTERM or Ctrl-C.
async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

fn json_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
        body,
    )
        .into_response()
}

/// The 401 every protected endpoint answers without a known token, in its own shape.
fn unauthorized(path: &str) -> Response {
    let message = "a valid bearer token is required (Authorization: Bearer <token>)";
    let body = match path {
        SEARCH_PATH => json!({"errorCode": "UNAUTHORIZED", "message": message}),
        "/mcp" => {
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": message}})
        }
        _ => {
            json!({"success": false, "error": {"code": "UNAUTHORIZED", "message": message, "details": {}}})
        }
    };
    let mut response = json_response(StatusCode::UNAUTHORIZED, body.to_string());
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"docloupe\""),
    );
    response
}

/// Puts the request's [`Caller`] in its extensions, or answers 401.
async fn authenticate(
    State(app): State<Shared>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    mut request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path().to_owned();
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes().to_vec());
    let caller = match app.users.who(authorization.as_deref(), client.ip()) {
        Who::Anyone(caller) => caller,
        Who::User(user) if path != "/metrics" || user.metrics => user.caller.clone(),
        Who::User(_) => {
            // A user without the metrics right: as if there were nothing here.
            return not_found().await;
        }
        Who::Nobody => {
            app.service.metrics.unauthorized();
            return unauthorized(&path);
        }
    };
    request.extensions_mut().insert(caller);
    next.run(request).await
}

async fn not_found() -> Response {
    json_response(
        StatusCode::NOT_FOUND,
        json!({"errorCode": "INVALID_REQUEST", "message": "no such endpoint", "details": {"reason": "not_found"}}).to_string(),
    )
}

/// A request body as text, or the refusal (`reason`: content_type, body_too_large, encoding).
async fn read_body(headers: &HeaderMap, body: Body, max: usize) -> Result<String, (String, Value)> {
    let kind = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = kind.split(';').next().unwrap_or("").trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        return Err((
            format!(
                "the body must be application/json, not {}",
                if kind.is_empty() { "missing" } else { kind }
            ),
            json!({"reason": "content_type"}),
        ));
    }
    let bytes: Bytes = axum::body::to_bytes(body, max).await.map_err(|_| {
        (
            format!("the body is over {max} bytes"),
            json!({"reason": "body_too_large", "maxBytes": max}),
        )
    })?;
    String::from_utf8(bytes.to_vec()).map_err(|_| {
        (
            "the body is not UTF-8".to_owned(),
            json!({"reason": "encoding"}),
        )
    })
}

/// A refused body in the tool's shape.
fn refused_body(tool: &str, message: String, details: Value) -> Outcome {
    match tool {
        "search_docs" => service::error_outcome(
            json!({"errorCode": "INVALID_REQUEST", "message": message, "details": details}),
            "INVALID_REQUEST",
        ),
        _ => {
            let field = details["reason"].as_str().unwrap_or("").to_owned();
            let e = docloupe::search::documents::DocumentsError::invalid(&field, &message);
            service::error_outcome(
                serde_json::to_value(&e).unwrap_or(Value::Null),
                "INVALID_QUERY",
            )
        }
    }
}

/// Runs `tool` for `caller` on the pool and turns the outcome into the HTTP answer.
async fn answer(
    app: Shared,
    caller: Arc<Caller>,
    tool: &'static str,
    endpoint: &'static str,
    args: Value,
    text: Option<String>,
) -> Response {
    let service = app.service.clone();
    let (call_caller, call_args) = (caller.clone(), args.clone());
    app.service
        .metrics
        .in_flight(app.pool.in_use(app.capacity) + 1);
    let run = app
        .pool
        .run(move || {
            let via = Via {
                tool,
                endpoint: Some(endpoint),
            };
            service.call(&call_caller, &via, &call_args, text.as_deref())
        })
        .await;
    app.service.metrics.in_flight(app.pool.in_use(app.capacity));
    let outcome = run.unwrap_or_else(|busy| {
        let outcome = busy_outcome(tool, busy);
        let via = Via {
            tool,
            endpoint: Some(endpoint),
        };
        app.service
            .log_refused(Some(&caller), &via, &args, &outcome);
        outcome
    });
    respond(&outcome)
}

fn respond(outcome: &Outcome) -> Response {
    let status =
        StatusCode::from_u16(outcome.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json_response(status, outcome.body());
    if matches!(outcome.status(), 429 | 503) {
        if let Some(retry) = outcome.retry_after() {
            if let Ok(v) = HeaderValue::from_str(&retry.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
    }
    if let Some(hit) = outcome.cached {
        response.headers_mut().insert(
            "x-docloupe-cache",
            HeaderValue::from_static(if hit { "hit" } else { "miss" }),
        );
    }
    if let Some(n) = outcome.results {
        if let Ok(v) = HeaderValue::from_str(&n.to_string()) {
            response.headers_mut().insert("x-docloupe-results", v);
        }
    }
    response
}

/// A JSON body's tool call: read, refused in the tool's shape, or run.
async fn body_call(
    app: Shared,
    caller: Arc<Caller>,
    headers: HeaderMap,
    body: Body,
    tool: &'static str,
    endpoint: &'static str,
) -> Response {
    let text = match read_body(&headers, body, app.max_body).await {
        Ok(t) => t,
        Err((message, details)) => {
            let outcome = refused_body(tool, message, details);
            let via = Via {
                tool,
                endpoint: Some(endpoint),
            };
            app.service
                .log_refused(Some(&caller), &via, &Value::Null, &outcome);
            return respond(&outcome);
        }
    };
    // search_docs reads the text itself (its errors name the field); the other tools take
    // the parsed object, and JSON that does not parse is their INVALID_QUERY.
    let args = serde_json::from_str::<Value>(&text).unwrap_or(Value::Null);
    if tool != "search_docs" && !args.is_object() {
        let outcome = refused_body(
            tool,
            "the body must be a JSON object".into(),
            json!({"reason": ""}),
        );
        return respond(&outcome);
    }
    let text = (tool == "search_docs").then_some(text);
    answer(app, caller, tool, endpoint, args, text).await
}

async fn search_post(
    State(app): State<Shared>,
    axum::Extension(caller): axum::Extension<Arc<Caller>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    body_call(app, caller, headers, body, "search_docs", SEARCH_PATH).await
}

/// `GET ?q=…&limit=&offset=&mode=&type=&project=`: the Worker's query form (numbers that are
/// not numbers stay strings, so the engine names the field).
async fn search_get(
    State(app): State<Shared>,
    axum::Extension(caller): axum::Extension<Arc<Caller>>,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Response {
    let pairs: Vec<(String, String)> = query
        .as_deref()
        .map(|q| serde_urlencoded::from_str(q).unwrap_or_default())
        .unwrap_or_default();
    let get = |k: &str| {
        pairs
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    let num = |v: String| match v.parse::<i64>() {
        Ok(n) => Value::from(n),
        Err(_) => Value::from(v),
    };
    let mut req = json!({"query": get("q").unwrap_or_default()});
    if let Some(v) = get("limit") {
        req["limit"] = num(v);
    }
    if let Some(v) = get("offset") {
        req["offset"] = num(v);
    }
    if let Some(v) = get("mode") {
        req["mode"] = Value::from(v);
    }
    if let Some(v) = get("project") {
        req["projectId"] = Value::from(v);
    }
    let types: Vec<String> = pairs
        .iter()
        .filter(|(k, _)| k == "type")
        .map(|(_, v)| v.clone())
        .collect();
    if !types.is_empty() {
        req["filters"] = json!({"documentTypes": types});
    }
    let text = req.to_string();
    answer(app, caller, "search_docs", SEARCH_PATH, req, Some(text)).await
}

async fn documents(
    State(app): State<Shared>,
    axum::Extension(caller): axum::Extension<Arc<Caller>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    body_call(
        app,
        caller,
        headers,
        body,
        "search_documents",
        DOCUMENTS_PATH,
    )
    .await
}

async fn feedback(
    State(app): State<Shared>,
    axum::Extension(caller): axum::Extension<Arc<Caller>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    body_call(app, caller, headers, body, "result_feedback", FEEDBACK_PATH).await
}

async fn metrics(State(app): State<Shared>) -> Response {
    app.service.metrics.in_flight(app.pool.in_use(app.capacity));
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        app.service.metrics.encode(),
    )
        .into_response()
}

/// 200 once every served bundle (and its models) is loaded, else 503; `reloadFailed`
/// counts bundles whose rebuilt file could not be loaded (the previous one is serving).
/// Counts only: the names of the bundles are not for anonymous load balancers (the log and
/// /metrics have them).
async fn ready(State(app): State<Shared>) -> Response {
    let set = app.service.current();
    let total = set.len();
    let reload_failed = app.service.reload_errors().len();
    let unavailable = set.iter().filter(|c| c.engine.is_err()).count();
    let status = if unavailable == 0 {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json_response(
        status,
        json!({"ready": unavailable == 0, "bundles": total, "unavailable": unavailable, "reloadFailed": reload_failed})
            .to_string(),
    )
}
