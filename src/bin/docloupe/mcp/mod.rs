//! `docloupe mcp`: the engine for AI agents, as an MCP server on stdio (the official Rust SDK,
//! `rmcp`), with the tools of [`crate::service`]: `search_docs`, `search_documents` and
//! `result_feedback`. The same handler serves MCP over streamable HTTP in `docloupe serve`,
//! where each request carries its user's [`Caller`].
//!
//! `--allow-project` lists the projects a client may query; any other is `UNAUTHORIZED`.
//! Every call is logged as one JSON line (stderr, or `--log FILE`) with its parameters and
//! time. `--rate-limit` calls per minute per server process answer `RATE_LIMIT` beyond it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};

use crate::service::{self, Bucket, Busy, Caller, LogArgs, Pool, QueryLog, Scope, Service, Via};
use crate::ModelArgs;

mod stdio;
pub(crate) mod tools;

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
    #[command(flatten)]
    log: LogArgs,
    /// A split folder's engine drops the shards its searches have read once their files come
    /// to more than this many MiB, and reads again what later searches need (the core and
    /// the vectors stay).
    #[arg(long, default_value_t = 256, value_name = "MiB")]
    split_memory_mib: usize,
    #[command(flatten)]
    access: crate::AccessArgs,
}

pub fn serve(args: McpArgs) -> Result<()> {
    for p in &args.allow_project {
        anyhow::ensure!(
            service::valid_project(p),
            "--allow-project {p:?}: expected namespace/name"
        );
    }
    let flags = &args.model_args;
    flags.query_model()?;
    let collections = args
        .bundle
        .iter()
        .map(|b| service::load(b, flags, args.split_memory_mib.saturating_mul(1 << 20)))
        .collect();
    let log = QueryLog::open(&args.log)?;
    let service = Service::new(collections, log);
    service.announce();
    let scope = if args.allow_project.is_empty() {
        Scope::All
    } else {
        Scope::Allowed(args.allow_project.clone())
    };
    let server = DocsServer {
        service: Arc::new(service),
        caller: Some(Arc::new(Caller {
            user: None,
            scope,
            limiter: Arc::new(Mutex::new(Bucket::new(args.rate_limit))),
            access: args.access.access()?,
        })),
        pool: None,
    };
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

/// The MCP handler over a [`Service`]. On stdio one caller is the whole process's; over HTTP
/// (`caller: None`) each request brings its own, put in the request's extensions by the
/// server's authentication.
#[derive(Clone)]
pub(crate) struct DocsServer {
    pub(crate) service: Arc<Service>,
    pub(crate) caller: Option<Arc<Caller>>,
    /// The server's search pool (over HTTP); on stdio, tokio's blocking threads.
    pub(crate) pool: Option<Arc<Pool>>,
}

impl DocsServer {
    /// The request's caller: this server's own, or the one its HTTP request carries.
    fn caller(&self, context: &RequestContext<RoleServer>) -> Option<Arc<Caller>> {
        self.caller.clone().or_else(|| {
            context
                .extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Arc<Caller>>().cloned())
        })
    }

    fn info(&self, caller: Option<&Caller>) -> ServerConfig {
        // Only what this client may query: the others' names are not its business.
        let projects = caller
            .map(|c| self.service.projects(&c.scope))
            .unwrap_or_default();
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
}

/// What a call the pool could not run answers: at capacity, the 503 a client retries.
pub(crate) fn busy_outcome(tool: &str, busy: Busy) -> service::Outcome {
    match busy {
        Busy::Full => service::unavailable(
            tool,
            "the server is at capacity; try again in 1 s",
            json!({"reason": "overloaded", "retryAfterSeconds": 1}),
        ),
        Busy::Failed => service::internal(tool),
    }
}

impl ServerHandler for DocsServer {
    fn get_info(&self) -> ServerConfig {
        self.info(self.caller.as_deref())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        // Over HTTP the projects named are the ones this request's user may see.
        if let Some(caller) = self.caller(&context) {
            result.instructions = self.info(Some(&caller)).instructions;
        }
        Ok(result)
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
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let tool = request.name.to_string();
        if !service::TOOLS.contains(&tool.as_str()) {
            return Err(McpError::invalid_params(
                format!("no tool named {tool}"),
                None,
            ));
        }
        let Some(caller) = self.caller(&context) else {
            // The HTTP layer authenticates before any MCP message; a request without a
            // caller never got past it.
            return Err(McpError::internal_error("no caller for this request", None));
        };
        let (service, name) = (self.service.clone(), tool.clone());
        // Over HTTP a call is logged and counted under `/mcp`; on stdio under no endpoint.
        let endpoint = self.caller.is_none().then_some("/mcp");
        let (refused_args, refused_caller) = (args.clone(), caller.clone());
        // Searching is CPU work: off the protocol's threads (over HTTP on the server's bounded
        // pool). Logged before answering, whatever the answer.
        let work = move || {
            let via = Via {
                tool: &name,
                endpoint,
            };
            service.call(&caller, &via, &args, None)
        };
        let outcome = match &self.pool {
            Some(pool) => match pool.run(work).await {
                Ok(outcome) => outcome,
                Err(busy) => {
                    let outcome = busy_outcome(&tool, busy);
                    let via = Via {
                        tool: &tool,
                        endpoint,
                    };
                    self.service
                        .log_refused(Some(&refused_caller), &via, &refused_args, &outcome);
                    outcome
                }
            },
            None => tokio::task::spawn_blocking(work)
                .await
                .unwrap_or_else(|_| service::internal(&tool)),
        };
        let mut result = if outcome.is_error {
            CallToolResult::error(vec![ContentBlock::text(outcome.text)])
        } else {
            CallToolResult::success(vec![ContentBlock::text(outcome.text)])
        };
        result.structured_content = Some(outcome.structured);
        Ok(result.into())
    }
}
