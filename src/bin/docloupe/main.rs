//! `docloupe`: search a bundle from the terminal (`search`), serve it to AI agents over MCP
//! (`mcp`), and read the query logs (`stats`).

#[cfg(unix)]
mod daemon;
mod mcp;
mod render;
mod serve;
mod service;
mod stats;
mod vector_cache;

use vector_cache::VectorCache;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use docloupe::bundle::BundleFile;
use docloupe::embed::{model_dir_for, QueryModel};
use docloupe::search::default_reranker_dir;
use docloupe::search::documents::{self, DateRange, DocumentsError, DocumentsRequest};
#[cfg(feature = "calibration")]
use docloupe::Fusion;
use docloupe::{
    CrossEncoder, Embedder, Engine, EngineOptions, FallbackPolicy, Mode, ModelFiles, RerankerFiles,
};

#[derive(Parser)]
#[command(
    name = "docloupe",
    version,
    about = "Search documentation bundles built by index-builder"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Search a bundle and print the best documents and their fragments.
    Search(SearchArgs),
    /// Serve bundles to AI agents as an MCP server on stdio (tools search_docs and
    /// search_documents).
    Mcp(mcp::McpArgs),
    /// Serve bundles to a team over HTTP: the contract at /v1/search/docs/query,
    /// search_documents, feedback, MCP over streamable HTTP at /mcp, health and Prometheus
    /// metrics; per-user tokens and projects, rate limits, a bounded search pool.
    Serve(serve::ServeArgs),
    /// Usage statistics from query logs (`docloupe mcp --log`, the edge Worker's): searches
    /// per tool, mode and status, latency, top and zero-result queries, filters, and
    /// precision@5 from result_feedback.
    Stats(stats::StatsArgs),
    /// Internal: the search daemon `docloupe search` starts and asks (it keeps the models
    /// loaded between calls; DOCLOUPE_DAEMON=off turns it off).
    #[cfg(unix)]
    #[command(hide = true)]
    Daemon,
}

/// What the quality benchmarks, the ranker's trainer and the match-floor and blend calibrations
/// set (`--features calibration`).
#[cfg(feature = "calibration")]
#[derive(clap::Args)]
struct CalibrationArgs {
    /// Ceiling on `limit` (the contract's 50); evaluation reads deeper rankings.
    #[arg(long, default_value_t = docloupe::Calibration::default().max_limit)]
    max_limit: usize,
    /// Share of the rerank model in ordering its pool (0..1), for benchmark comparisons.
    /// Default: the weight calibrated for the model (its manifest's blendWeight).
    #[arg(long, value_parser = parse_weight)]
    rerank_weight: Option<f32>,
    /// Reranked results carry the learned ranker's features (rankingSignals.features), as
    /// training data for prebuild/ranker.
    #[arg(long)]
    explain_features: bool,
    /// The cosine from which a semantic neighbour matches (default: the model's calibrated
    /// floor); tests/bench/floors.py measures with 0.
    #[arg(long)]
    match_floor: Option<f32>,
    /// Hybrid fusion method (weighted or rrf), for benchmark comparisons.
    #[arg(long, default_value = "weighted")]
    fusion: Fusion,
}

/// `engine` with the options of `args`: the model flags', and in a calibration build the
/// benchmarks' settings.
fn configured(engine: Engine, args: &SearchArgs) -> Engine {
    let engine = engine.with_options(args.model_args.engine_options());
    #[cfg(feature = "calibration")]
    let engine = engine.calibrate(docloupe::Calibration {
        max_limit: args.calibration.max_limit,
        fusion: args.calibration.fusion,
        rerank_weight: args.calibration.rerank_weight,
        explain_features: args.calibration.explain_features,
        match_floor: args.calibration.match_floor,
    });
    engine
}

#[derive(clap::Args)]
// A later `--format` (or any option) replaces an earlier one, so a command line with a
// default in front (the /search command file's `--format markdown`) takes the user's choice.
#[command(args_override_self = true)]
struct SearchArgs {
    /// The bundle file written by `index-builder build`, or a folder `index-builder split`
    /// wrote: then only the pieces a query needs are read (its core, the postings of its words,
    /// the fragments of its results; every vector piece for semantic and hybrid search).
    #[arg(long)]
    bundle: PathBuf,
    #[command(flatten)]
    model_args: ModelArgs,
    /// Batch mode: read one contract request per line on stdin, write one JSON response (or
    /// error object) per line on stdout, in order. Blank lines are skipped.
    #[arg(long, conflicts_with_all = ["query", "limit", "page", "offset", "mode", "format", "types", "date_from", "date_to", "source", "chunks", "max_chars_per_chunk"])]
    jsonl: bool,
    /// The benchmarks' settings: only in a build with the `calibration` feature, never in the
    /// release binary (`make bench-quality` and `make ranker` build one of their own).
    #[cfg(feature = "calibration")]
    #[command(flatten)]
    calibration: CalibrationArgs,
    /// Number of documents (1..50).
    #[arg(long, short = 'l', default_value_t = documents::DEFAULT_LIMIT)]
    limit: u32,
    /// Which page of --limit documents to show (1 = the best ones).
    #[arg(long, short = 'p', default_value_t = 1)]
    page: u32,
    /// Skip this many documents first (instead of --page).
    #[arg(long, conflicts_with = "page")]
    offset: Option<u32>,
    /// Only these document types, comma-separated (md, txt, pdf, docx, xlsx, xls, ods).
    #[arg(long, short = 't', value_delimiter = ',')]
    types: Vec<String>,
    /// Only documents dated on or after this day (YYYY-MM-DD).
    #[arg(long)]
    date_from: Option<String>,
    /// Only documents dated on or before this day (YYYY-MM-DD).
    #[arg(long)]
    date_to: Option<String>,
    /// Only documents whose path starts with this prefix.
    #[arg(long)]
    source: Option<String>,
    /// Show the text around each fragment: `-c`, `--context`, `--context=false`.
    #[arg(long, short = 'c', default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    context: bool,
    /// Fragments per document (1..10).
    #[arg(long, short = 'k', default_value_t = documents::DEFAULT_MAX_CHUNKS)]
    chunks: u32,
    /// Give each fragment's text trimmed to N characters (for quoting and citing) instead
    /// of its snippet; with --format json, in `context_chunks[].text`.
    #[arg(long, value_name = "N")]
    max_chars_per_chunk: Option<u32>,
    /// hybrid (BM25 + vectors, reranked), fulltext (BM25) or semantic (vectors). Default:
    /// hybrid when the bundle has vectors, else fulltext.
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// text (for a terminal), markdown (for a chat) or json (search_documents' shape).
    #[arg(long, short = 'f', value_enum, default_value = "text")]
    format: Format,
    /// Model arithmetic: fast (this CPU's SIMD kernels) or portable (the same sums on every
    /// machine, whose answers equal the portable wasm package's byte for byte; 2–4× slower).
    #[arg(long, default_value = "fast")]
    kernels: docloupe::embed::Kernels,
    #[command(flatten)]
    access: AccessArgs,
    /// The query (several words are joined with spaces).
    #[arg(required_unless_present = "jsonl")]
    query: Vec<String>,
}

/// Whom a command searches for, in a bundle that restricts documents to groups of readers
/// (`index-builder build --access`): without these, documents without access labels only.
#[derive(clap::Args, Clone, Default)]
pub(crate) struct AccessArgs {
    /// Search as a reader in these groups (comma-separated): restricted documents that one
    /// of them opens are found too.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "GROUPS",
        conflicts_with = "all_groups"
    )]
    groups: Vec<String>,
    /// Search every document, restricted or not (the bundle's owner).
    #[arg(long)]
    all_groups: bool,
}

impl AccessArgs {
    pub(crate) fn access(&self) -> Result<docloupe::Access> {
        if self.all_groups {
            return Ok(docloupe::Access::Everything);
        }
        if let Some(bad) = self
            .groups
            .iter()
            .find(|g| !docloupe::bundle::valid_group(g))
        {
            anyhow::bail!("--groups: {bad:?} is not a group name");
        }
        Ok(docloupe::Access::groups(self.groups.clone()))
    }

    /// Whether the command searches as anyone but a reader without groups.
    fn named(&self) -> bool {
        self.all_groups || !self.groups.is_empty()
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum PolicyArg {
    ReturnHybridCandidates,
    ErrorOnTotalFailure,
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    Hybrid,
    Fulltext,
    Semantic,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum Format {
    Text,
    Json,
    Markdown,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Search(args) => search(args),
        Command::Mcp(args) => mcp::serve(args),
        Command::Serve(args) => serve::run(args),
        Command::Stats(args) => stats::run(args),
        #[cfg(unix)]
        Command::Daemon => daemon::serve(),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("docloupe: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The installed directory of the model `header`'s bundle was built with (MiniLM's when it
/// names none).
pub(crate) fn bundle_model_dir(header: &docloupe::bundle::Header) -> PathBuf {
    match &header.embedding {
        Some(info) => model_dir_for(info),
        None => docloupe::embed::default_model_dir(),
    }
}

/// The model flags `search` and `mcp` share.
#[derive(clap::Args)]
pub(crate) struct ModelArgs {
    /// Embedding model directory. Default: the installed model the bundle was built with
    /// (`make models` installs MiniLM and multilingual E5 under $DOCLOUPE_CACHE/models).
    #[arg(long)]
    pub models: Option<PathBuf>,
    /// A cross-encoder directory (manifest.json, model.int8.onnx, tokenizer.json, e.g.
    /// prebuild/reranker/model) as the rerank stage instead of the built-in learned ranker.
    /// Default: $DOCLOUPE_RERANKER_DIR when set, else the learned ranker.
    #[arg(long)]
    pub reranker: Option<PathBuf>,
    /// No rerank stage at all: reranked requests fall back to the fused order.
    #[arg(long, conflicts_with = "reranker")]
    pub no_reranker: bool,
    /// Time the rerank stage may take per request, in milliseconds.
    #[arg(long, default_value_t = EngineOptions::default().rerank_budget_ms)]
    pub rerank_budget_ms: u64,
    /// What a failed rerank stage does: return the fused order flagged fallbackApplied, or
    /// answer DOCS_RERANKING_UNAVAILABLE.
    #[arg(long, value_enum, default_value_t = PolicyArg::ReturnHybridCandidates)]
    pub fallback_policy: PolicyArg,
    /// What embeds the questions: `base`, the model the bundle was built with, or `docs`, the
    /// docs-tuned query tower `make models` installs beside MiniLM (bundles stay as built).
    /// Default: $DOCLOUPE_QUERY_MODEL when set, else base.
    #[arg(long, value_enum)]
    pub query_model: Option<QueryModelArg>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub(crate) enum QueryModelArg {
    Docs,
    Base,
}

impl From<QueryModelArg> for QueryModel {
    fn from(arg: QueryModelArg) -> QueryModel {
        match arg {
            QueryModelArg::Docs => QueryModel::Docs,
            QueryModelArg::Base => QueryModel::Base,
        }
    }
}

impl From<QueryModel> for QueryModelArg {
    fn from(model: QueryModel) -> QueryModelArg {
        match model {
            QueryModel::Docs => QueryModelArg::Docs,
            QueryModel::Base => QueryModelArg::Base,
        }
    }
}

impl ModelArgs {
    /// The query model these flags (or `$DOCLOUPE_QUERY_MODEL`) choose.
    pub(crate) fn query_model(&self) -> Result<QueryModel> {
        let arg = match self.query_model {
            Some(arg) => arg,
            None => match std::env::var("DOCLOUPE_QUERY_MODEL") {
                Ok(v) if !v.is_empty() => <QueryModelArg as clap::ValueEnum>::from_str(&v, true)
                    .map_err(|_| {
                        anyhow::anyhow!("DOCLOUPE_QUERY_MODEL={v:?}: expected `docs` or `base`")
                    })?,
                _ => QueryModelArg::Base,
            },
        };
        Ok(arg.into())
    }

    /// The engine settings these flags choose.
    pub(crate) fn engine_options(&self) -> EngineOptions {
        EngineOptions {
            rerank_budget_ms: self.rerank_budget_ms,
            fallback_policy: match self.fallback_policy {
                PolicyArg::ReturnHybridCandidates => FallbackPolicy::ReturnHybridCandidates,
                PolicyArg::ErrorOnTotalFailure => FallbackPolicy::ErrorOnTotalFailure,
            },
            ..EngineOptions::default()
        }
    }
}

/// Installs the second stage `flags` ask for on `engine`: a cross-encoder (`--reranker`,
/// `$DOCLOUPE_RERANKER_DIR`), none (`--no-reranker`), or the built-in learned ranker.
pub(crate) fn second_stage(engine: Engine, flags: &ModelArgs) -> Result<Engine> {
    if flags.no_reranker {
        return Ok(engine.without_second_stage());
    }
    Ok(match load_reranker(flags)? {
        Some(model) => engine.with_reranker(Box::new(model)),
        None => engine,
    })
}

/// Loads the rerank model `flags` ask for: an explicit directory must load; the default one is
/// used when a model is installed there.
pub(crate) fn load_reranker(flags: &ModelArgs) -> Result<Option<CrossEncoder>> {
    if flags.no_reranker {
        return Ok(None);
    }
    let found = match flags.reranker.as_deref() {
        Some(dir) => Some((dir.to_path_buf(), RerankerFiles::from_dir(dir))),
        None if std::env::var_os("DOCLOUPE_RERANKER_DIR").is_some() => {
            RerankerFiles::default_model()
                .transpose()
                .map(|files| (default_reranker_dir(), files))
        }
        None => None,
    };
    let Some((dir, files)) = found else {
        return Ok(None);
    };
    let files = files.with_context(|| {
        format!(
            "cannot load the reranker from {} (or pass --no-reranker)",
            dir.display()
        )
    })?;
    Ok(Some(CrossEncoder::new(&files).with_context(|| {
        format!("cannot load reranker {}", dir.display())
    })?))
}

fn search(args: SearchArgs) -> Result<()> {
    docloupe::embed::use_kernels(args.kernels)?;
    // The header first: the mode (and so whether the vectors are read at all) depends on it.
    // An unreadable file's error already names it.
    let source = Source::open(&args.bundle).map_err(|e| match e {
        docloupe::Error::Unreadable { .. } => anyhow::Error::new(e),
        e => anyhow::Error::new(e).context(format!("cannot load {}", args.bundle.display())),
    })?;
    let header = source.header().clone();
    let mode = match args.mode {
        Some(ModeArg::Hybrid) => Mode::Hybrid,
        Some(ModeArg::Fulltext) => Mode::Fulltext,
        Some(ModeArg::Semantic) => Mode::Semantic,
        None if header.flags.hybrid => Mode::Hybrid,
        None => Mode::Fulltext,
    };
    // The /search options are search_documents' arguments, checked the same way.
    let prepared = (!args.jsonl).then(|| one_request(&args, mode));
    // A query that needs the model asks the daemon first, which keeps it loaded (`daemon.rs`).
    #[cfg(unix)]
    let daemon = daemon_config(&args, mode != Mode::Fulltext && header.flags.hybrid);
    #[cfg(unix)]
    if let (Some(config), Some(Ok((req, contract)))) = (&daemon, &prepared) {
        if let Some(answer) = daemon::ask(config, contract) {
            let answer = answer.map_err(|e| DocumentsError::from_contract(&e));
            return print_answer(&args, answer.map(|r| (req.clone(), r)));
        }
    }
    // A single query needs the model only for its mode; batch requests choose their own mode,
    // so the model is loaded whenever the bundle has vectors and the model is there.
    let models = if args.jsonl {
        let dir = args
            .model_args
            .models
            .clone()
            .unwrap_or_else(|| bundle_model_dir(&header));
        match header.flags.hybrid {
            true if args.model_args.models.is_some() || dir.join("manifest.json").is_file() => {
                Some(ModelFiles::for_queries(
                    &dir,
                    args.model_args.query_model()?,
                )?)
            }
            _ => None,
        }
    } else {
        match mode {
            Mode::Fulltext => None,
            Mode::Hybrid | Mode::Semantic => {
                let dir = args
                    .model_args
                    .models
                    .clone()
                    .unwrap_or_else(|| bundle_model_dir(&header));
                Some(ModelFiles::for_queries(&dir, args.model_args.query_model()?).context("the embedding model is needed for hybrid/semantic search (or pass --mode fulltext)")?)
            }
        }
    };
    // A single fulltext query neither reads nor decodes the vectors.
    let wants_vectors = args.jsonl || mode != Mode::Fulltext;
    let (embedder, loaded) = beside(
        || models.as_ref().map(Embedder::new).transpose(),
        || source.into_engine(wants_vectors),
    );
    let embedder = embedder?;
    let cannot_load = || format!("cannot load {}", args.bundle.display());
    let (mut engine, folder, unkept) = loaded.with_context(cannot_load)?;
    if let Some(e) = embedder {
        engine.install_embedder(e).with_context(cannot_load)?;
    }
    let mut engine = configured(engine, &args);
    // Only hybrid requests rerank; a single fulltext/semantic query skips loading a model.
    let wants_reranker = args.jsonl || mode == Mode::Hybrid;
    if wants_reranker && header.flags.hybrid {
        engine = second_stage(engine, &args.model_args)?;
    }

    // Vectors just decoded are kept for the next process: before a batch, which may run for
    // long, and after a one-off answer, which should not wait for them.
    let mut unkept = unkept;
    if args.jsonl {
        if let Some(cache) = unkept.take() {
            cache.keep(&engine);
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let access = args.access.access()?;
    let mut ask = |req: &docloupe::SearchRequest| {
        let req = &docloupe::SearchRequest {
            access: access.clone(),
            ..req.clone()
        };
        match &folder {
            Some(dir) => engine.search_fetching(req, |name| read_piece(dir, name)),
            None => engine.search_guarded(req),
        }
    };
    if args.jsonl {
        return batch(&mut ask, &mut out);
    }
    drop(out);
    let answer = prepared.expect("one query").and_then(|(req, contract)| {
        ask(&contract)
            .map(|r| (req, r))
            .map_err(|e| DocumentsError::from_contract(&docloupe::ErrorResponse::from(&e)))
    });
    print_answer(&args, answer)?;
    if let Some(cache) = unkept {
        cache.keep(&engine);
    }
    // Next time the daemon answers: it keeps the model this call had to load.
    #[cfg(unix)]
    if let Some(config) = &daemon {
        daemon::start(config);
    }
    // The process ends with the answer: the operating system takes the engine's memory back
    // at once, where freeing it first (2.24M vectors' arrays, a bundle's tables) took about
    // 0.1 s after the answer was out.
    std::mem::forget(engine);
    Ok(())
}

/// The one query of a `docloupe search` command line, as `search_documents` reads it and as
/// the contract's request it becomes.
fn one_request(
    args: &SearchArgs,
    mode: Mode,
) -> std::result::Result<(DocumentsRequest, docloupe::SearchRequest), DocumentsError> {
    let mut request = DocumentsRequest::new(args.query.join(" "));
    request.limit = args.limit;
    request.page = args.page;
    request.document_types = args
        .types
        .iter()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .collect();
    request.date_range = (args.date_from.is_some() || args.date_to.is_some()).then(|| DateRange {
        from: args.date_from.clone(),
        to: args.date_to.clone(),
    });
    request.source_filter = args.source.clone();
    request.include_context = args.context;
    request.max_chunks = args.chunks;
    request.search_mode = Some(mode);
    let value = serde_json::to_value(&request).expect("a request serializes");
    DocumentsRequest::from_value(&value).map(|req| {
        let mut contract = req.to_search_request();
        contract.max_chars_per_chunk = args.max_chars_per_chunk.map(|n| n as usize);
        if let Some(skip) = args.offset {
            contract.offset = Some(skip as usize);
        }
        (req, contract)
    })
}

/// Prints a `docloupe search` answer in the format asked for.
fn print_answer(
    args: &SearchArgs,
    answer: std::result::Result<(DocumentsRequest, docloupe::SearchResponse), DocumentsError>,
) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match (answer, args.format) {
        (Ok((req, response)), Format::Json) => {
            serde_json::to_writer_pretty(&mut out, &documents::shape(&req, &response))?;
            writeln!(out)?;
        }
        (Ok((req, response)), Format::Text) => render::text(
            &mut out,
            &response,
            &page_of(&req, args.offset),
            std::io::stdout().is_terminal(),
        )?,
        (Ok((req, response)), Format::Markdown) => write!(
            out,
            "{}",
            render::markdown(&response, &page_of(&req, args.offset))
        )?,
        (Err(e), Format::Json) => {
            serde_json::to_writer_pretty(&mut out, &e)?;
            writeln!(out)?;
            out.flush()?;
            std::process::exit(1);
        }
        (Err(e), _) => anyhow::bail!("{} ({:?})", e.error.message, e.error.code),
    }
    out.flush()?;
    Ok(())
}

/// The daemon's configuration for this command, when it should ask one: a single query that
/// needs the embedding model, from a release build (a calibration build answers itself), the
/// daemon not turned off.
#[cfg(unix)]
fn daemon_config(args: &SearchArgs, needs_model: bool) -> Option<daemon::Config> {
    // The daemon answers readers without groups (the request's access is not on its wire).
    if args.jsonl
        || !needs_model
        || cfg!(feature = "calibration")
        || !daemon::enabled()
        || args.access.named()
    {
        return None;
    }
    let bundle = std::fs::canonicalize(&args.bundle).ok()?;
    Some(daemon::Config {
        stamp: daemon::Stamp::of(&bundle)?,
        models: std::fs::canonicalize(args.model_args.models.clone().or_else(|| {
            Source::open(&bundle)
                .ok()
                .map(|s| bundle_model_dir(s.header()))
        })?)
        .ok()?,
        bundle,
        reranker: match &args.model_args.reranker {
            Some(dir) => Some(dir.clone()),
            None if std::env::var_os("DOCLOUPE_RERANKER_DIR").is_some() => {
                Some(default_reranker_dir())
            }
            None => None,
        },
        no_reranker: args.model_args.no_reranker,
        rerank_budget_ms: args.model_args.rerank_budget_ms,
        error_on_total_failure: matches!(
            args.model_args.fallback_policy,
            PolicyArg::ErrorOnTotalFailure
        ),
        portable_kernels: docloupe::embed::kernels() == docloupe::embed::Kernels::Portable,
        query_model: args.model_args.query_model().ok()?,
    })
}

/// The engine a daemon keeps for `config`: as `docloupe search` loads it for a hybrid query
/// (vectors, the embedding model, the second stage), able to answer every mode.
#[cfg(unix)]
pub(crate) fn load_engine(config: &daemon::Config) -> Result<Engine> {
    let kernels = match config.portable_kernels {
        true => docloupe::embed::Kernels::Portable,
        false => docloupe::embed::Kernels::Fast,
    };
    if docloupe::embed::kernels() != kernels {
        docloupe::embed::use_kernels(kernels)?;
    }
    let source = Source::open(&config.bundle)?;
    let files = ModelFiles::for_queries(&config.models, config.query_model)?;
    let (embedder, loaded) = beside(|| Embedder::new(&files), || source.into_engine(true));
    let (mut engine, _, unkept) = loaded?;
    engine.install_embedder(embedder?)?;
    let flags = ModelArgs {
        models: Some(config.models.clone()),
        // Explicit, so that the daemon's own environment plays no part.
        reranker: config.reranker.clone(),
        no_reranker: config.no_reranker,
        rerank_budget_ms: config.rerank_budget_ms,
        fallback_policy: match config.error_on_total_failure {
            true => PolicyArg::ErrorOnTotalFailure,
            false => PolicyArg::ReturnHybridCandidates,
        },
        query_model: Some(config.query_model.into()),
    };
    let engine = second_stage(engine.with_options(flags.engine_options()), &flags)?;
    if let Some(cache) = unkept {
        cache.keep(&engine);
    }
    Ok(engine)
}

/// Which documents of the ranking a `search` answer shows.
fn page_of(req: &DocumentsRequest, offset: Option<u32>) -> render::Page {
    render::Page::documents(
        offset.map_or((req.page as usize - 1) * req.limit as usize, |o| o as usize),
        req.limit as usize,
    )
}

/// Longest request line `--jsonl` reads; a longer one is answered INVALID_REQUEST.
const MAX_JSONL_LINE: usize = 1 << 20;

/// What `--bundle` names: a bundle file, read section by section, or a split folder, read
/// piece by piece as queries need them.
pub(crate) enum Source {
    File(Box<BundleFile>),
    Split { dir: PathBuf, engine: Box<Engine> },
}

impl Source {
    pub(crate) fn open(path: &std::path::Path) -> docloupe::Result<Source> {
        if !path.is_dir() {
            return BundleFile::open(path).map(|f| Source::File(Box::new(f)));
        }
        let core = read_piece(path, "core.bin")?;
        Ok(Source::Split {
            dir: path.to_owned(),
            engine: Box::new(Engine::split(&core)?),
        })
    }

    pub(crate) fn header(&self) -> &docloupe::bundle::Header {
        match self {
            Source::File(f) => f.header(),
            Source::Split { engine, .. } => engine.header(),
        }
    }

    /// The engine, with the vectors (every piece, for a split folder) when `with_vectors`,
    /// the split folder queries read their pieces from, and where to keep the vectors just
    /// decoded ([`VectorCache::keep`], when the caller has time: after the answer). The
    /// vectors come from that cache when it has them. The embedding model is the caller's to
    /// install: it loads on another thread meanwhile ([`beside`]).
    pub(crate) fn into_engine(
        self,
        with_vectors: bool,
    ) -> docloupe::Result<(Engine, Option<PathBuf>, Option<VectorCache>)> {
        let cache = with_vectors
            .then(|| VectorCache::for_header(self.header()))
            .flatten();
        let kept = cache.as_ref().and_then(VectorCache::read);
        let decode = with_vectors && kept.is_none();
        let (mut engine, dir) = match self {
            Source::File(f) => (Engine::from_decoded(f.decode(decode)?, None)?, None),
            Source::Split { dir, mut engine } => {
                if decode {
                    for name in engine.missing_vector_files() {
                        engine.add_split_file(&name, &read_piece(&dir, &name)?)?;
                    }
                }
                (*engine, Some(dir))
            }
        };
        let unkept = match kept {
            Some(vectors) => {
                engine.install_vectors(vectors)?;
                None
            }
            None => cache,
        };
        Ok((engine, dir, unkept))
    }
}

/// `a` on a thread of its own while `b` runs here, and both results. Loading the embedding
/// model (about 0.4 s, on one core) beside reading the bundle's vectors (about as long before
/// they are inflated on every core): a one-off hybrid call over 2.24M vectors waited for one
/// and then the other. A panic in `a` goes on here.
pub(crate) fn beside<A: Send, B>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    std::thread::scope(|s| {
        let a = s.spawn(a);
        let b = b();
        (a.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), b)
    })
}

/// One file of a split folder. The names come from the engine (`core.bin`, then the
/// pieces its core lists), never from a document.
pub(crate) fn read_piece(dir: &std::path::Path, name: &str) -> docloupe::Result<Vec<u8>> {
    let path = dir.join(name);
    std::fs::read(&path).map_err(|e| docloupe::Error::unreadable(&path, e))
}

/// `--jsonl`: one request per line in, one response or error object per line out. A line
/// that is not UTF-8 or is over [`MAX_JSONL_LINE`] bytes gets an error object and the batch
/// goes on.
fn batch(
    ask: &mut impl FnMut(&docloupe::SearchRequest) -> docloupe::Result<docloupe::SearchResponse>,
    out: &mut impl Write,
) -> Result<()> {
    let mut input = std::io::stdin().lock();
    let mut buf = Vec::new();
    while let Some(complete) =
        read_line_bounded(&mut input, &mut buf, MAX_JSONL_LINE).context("cannot read stdin")?
    {
        let answer = match (complete, std::str::from_utf8(&buf)) {
            (false, _) => Err(invalid_line(format!(
                "the request line is longer than {MAX_JSONL_LINE} bytes"
            ))),
            (true, Err(e)) => Err(invalid_line(format!("the request line is not UTF-8 ({e})"))),
            (true, Ok(line)) if line.trim().is_empty() => continue,
            (true, Ok(line)) => docloupe::SearchRequest::from_json(line)
                .and_then(|req| ask(&req))
                .map_err(docloupe::ErrorResponse::from),
        };
        match answer {
            Ok(r) => serde_json::to_writer(&mut *out, &r)?,
            Err(e) => serde_json::to_writer(&mut *out, &e)?,
        }
        writeln!(out)?;
        out.flush()?;
    }
    Ok(())
}

fn invalid_line(message: String) -> docloupe::ErrorResponse {
    docloupe::ErrorResponse::from(docloupe::Error::InvalidRequest {
        field: String::new(),
        message,
    })
}

/// Reads one line (without its `\n`) into `buf`, keeping at most `max` bytes of it.
/// `None` at the end of input; `Some(false)` when the line was longer than `max` (the rest of
/// it is read and dropped).
fn read_line_bounded(
    input: &mut impl std::io::BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<bool>> {
    buf.clear();
    let mut complete = true;
    let mut any = false;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(any.then_some(complete));
        }
        any = true;
        let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if complete {
            if buf.len() + part.len() > max {
                complete = false;
                buf.clear();
            } else {
                buf.extend_from_slice(part);
            }
        }
        let used = done.unwrap_or(chunk.len());
        input.consume(used);
        if done.is_some() {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(Some(complete));
        }
    }
}

#[cfg(feature = "calibration")]
fn parse_weight(s: &str) -> Result<f32, String> {
    match s.parse::<f32>() {
        Ok(w) if (0.0..=1.0).contains(&w) => Ok(w),
        _ => Err(format!("{s} is not a number in 0..1")),
    }
}
