//! `docloupe`: search a bundle from the terminal.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use docloupe::embed::default_model_dir;
use docloupe::search::default_reranker_dir;
use docloupe::{
    CrossEncoder, Engine, EngineOptions, ErrorResponse, FallbackPolicy, Fusion, Mode, ModelFiles,
    RerankerFiles, SearchRequest, SearchResponse,
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
    /// Search a bundle and print the best chunks.
    Search(SearchArgs),
}

#[derive(clap::Args)]
struct SearchArgs {
    /// The bundle file written by `index-builder build`.
    #[arg(long)]
    bundle: PathBuf,
    /// Embedding model directory (from `make models`).
    #[arg(long)]
    models: Option<PathBuf>,
    /// Cross-encoder directory for the rerank stage (manifest.json, model.int8.onnx,
    /// tokenizer.json). Default: $DOCLOUPE_RERANKER_DIR, else prebuild/reranker/model when a
    /// model is installed there; without one, reranked requests fall back to the fused order.
    #[arg(long)]
    reranker: Option<PathBuf>,
    /// Load no rerank model: reranked requests fall back to the fused order.
    #[arg(long, conflicts_with = "reranker")]
    no_reranker: bool,
    /// Time the rerank stage may take per request, in milliseconds.
    #[arg(long, default_value_t = EngineOptions::default().rerank_budget_ms)]
    rerank_budget_ms: u64,
    /// What a failed rerank stage does: return the fused order flagged fallbackApplied, or
    /// answer DOCS_RERANKING_UNAVAILABLE.
    #[arg(long, value_enum, default_value_t = PolicyArg::ReturnHybridCandidates)]
    fallback_policy: PolicyArg,
    /// Batch mode: read one JSON request per line on stdin, write one JSON response (or
    /// error object) per line on stdout, in order. Blank lines are skipped.
    #[arg(long, conflicts_with_all = ["query", "limit", "mode", "format"])]
    jsonl: bool,
    /// Ceiling on `limit` (the contract's 50); evaluation reads deeper rankings.
    #[arg(long, hide = true, default_value_t = EngineOptions::default().max_limit)]
    max_limit: usize,
    /// Share of the rerank model in ordering its pool (0..1), for benchmark comparisons.
    /// Default: the weight calibrated for the model (its manifest's blendWeight).
    #[arg(long, hide = true, value_parser = parse_weight)]
    rerank_weight: Option<f32>,
    /// Hybrid fusion method (weighted or rrf), for benchmark comparisons.
    #[arg(long, hide = true, default_value = "weighted")]
    fusion: Fusion,
    /// Number of results (1..50).
    #[arg(long, short = 'l')]
    limit: Option<usize>,
    /// hybrid (BM25 + vectors), fulltext (BM25) or semantic (vectors). Default: hybrid when
    /// the bundle has vectors, else fulltext.
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    #[arg(long, short = 'f', value_enum)]
    format: Option<Format>,
    /// Model arithmetic: fast (this CPU's SIMD kernels) or portable (tract's generic kernels,
    /// whose answers equal the portable wasm package's byte for byte; 2–4× slower).
    #[arg(long, default_value = "fast")]
    kernels: docloupe::embed::Kernels,
    /// The query (several words are joined with spaces).
    #[arg(required_unless_present = "jsonl")]
    query: Vec<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum PolicyArg {
    ReturnHybridCandidates,
    ErrorOnTotalFailure,
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    Hybrid,
    Fulltext,
    Semantic,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Search(args) => search(args),
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

fn search(args: SearchArgs) -> Result<()> {
    docloupe::embed::use_kernels(args.kernels)?;
    let bytes = std::fs::read(&args.bundle)
        .with_context(|| format!("cannot read bundle {}", args.bundle.display()))?;
    let header = docloupe::bundle::decode_header(&bytes)
        .with_context(|| format!("cannot load {}", args.bundle.display()))?
        .0;
    let mode = match args.mode {
        Some(ModeArg::Hybrid) => Mode::Hybrid,
        Some(ModeArg::Fulltext) => Mode::Fulltext,
        Some(ModeArg::Semantic) => Mode::Semantic,
        None if header.flags.hybrid => Mode::Hybrid,
        None => Mode::Fulltext,
    };
    // A single query needs the model only for its mode; batch requests choose their own mode,
    // so the model is loaded whenever the bundle has vectors and the model is there.
    let models = if args.jsonl {
        let dir = args.models.clone().unwrap_or_else(default_model_dir);
        match header.flags.hybrid {
            true if args.models.is_some() || dir.join("manifest.json").is_file() => {
                Some(ModelFiles::from_dir(&dir)?)
            }
            _ => None,
        }
    } else {
        match mode {
            Mode::Fulltext => None,
            Mode::Hybrid | Mode::Semantic => {
                let dir = args.models.clone().unwrap_or_else(default_model_dir);
                Some(ModelFiles::from_dir(&dir).context("the embedding model is needed for hybrid/semantic search (or pass --mode fulltext)")?)
            }
        }
    };
    let mut engine = Engine::from_bundle(&bytes, models.as_ref())
        .with_context(|| format!("cannot load {}", args.bundle.display()))?
        .with_options(EngineOptions {
            rerank_budget_ms: args.rerank_budget_ms,
            fallback_policy: match args.fallback_policy {
                PolicyArg::ReturnHybridCandidates => FallbackPolicy::ReturnHybridCandidates,
                PolicyArg::ErrorOnTotalFailure => FallbackPolicy::ErrorOnTotalFailure,
            },
            max_limit: args.max_limit,
            fusion: args.fusion,
            rerank_weight: args.rerank_weight,
            ..EngineOptions::default()
        });
    // Only hybrid requests rerank; a single fulltext/semantic query skips loading the model.
    // An explicit --reranker must load; the default directory is used when a model is there.
    let wants_reranker = !args.no_reranker && (args.jsonl || mode == Mode::Hybrid);
    if wants_reranker && header.flags.hybrid {
        let found = match &args.reranker {
            Some(dir) => Some((dir.clone(), RerankerFiles::from_dir(dir))),
            None => RerankerFiles::default_model()
                .transpose()
                .map(|files| (default_reranker_dir(), files)),
        };
        if let Some((dir, files)) = found {
            let files = files.with_context(|| {
                format!(
                    "cannot load the reranker from {} (or pass --no-reranker)",
                    dir.display()
                )
            })?;
            engine = engine.with_reranker(Box::new(
                CrossEncoder::new(&files)
                    .with_context(|| format!("cannot load reranker {}", dir.display()))?,
            ));
        }
    }

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.jsonl {
        return batch(&engine, &mut out);
    }
    let mut request = SearchRequest::new(args.query.join(" ")).mode(mode);
    request.limit = args.limit;
    match engine.search(&request) {
        Ok(response) => match args.format.unwrap_or(Format::Text) {
            Format::Json => {
                serde_json::to_writer_pretty(&mut out, &response)?;
                writeln!(out)?;
            }
            Format::Text => print_text(&mut out, &response, std::io::stdout().is_terminal())?,
        },
        Err(e) if matches!(args.format, Some(Format::Json)) => {
            serde_json::to_writer_pretty(&mut out, &ErrorResponse::from(&e))?;
            writeln!(out)?;
            out.flush()?;
            std::process::exit(1);
        }
        Err(e) => return Err(e.into()),
    }
    out.flush()?;
    Ok(())
}

/// `--jsonl`: one request per line in, one response or error object per line out.
fn batch(engine: &Engine, out: &mut impl Write) -> Result<()> {
    for line in std::io::stdin().lock().lines() {
        let line = line.context("cannot read stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        match engine.search_json(&line) {
            Ok(r) => serde_json::to_writer(&mut *out, &r)?,
            Err(e) => serde_json::to_writer(&mut *out, &e)?,
        }
        writeln!(out)?;
        out.flush()?;
    }
    Ok(())
}

fn print_text(out: &mut impl Write, r: &SearchResponse, color: bool) -> std::io::Result<()> {
    let (bold, dim, hl, reset) = if color {
        ("\x1b[1m", "\x1b[2m", "\x1b[1;33m", "\x1b[0m")
    } else {
        ("", "", "", "")
    };
    writeln!(
        out,
        "{dim}{} of {} matches for {:?} ({}{}, {:.0} ms){reset}",
        r.results.len(),
        r.total,
        r.query,
        r.applied_strategy,
        r.degraded_reason
            .as_deref()
            .map(|d| format!("; fallback: {d}"))
            .unwrap_or_default(),
        r.timings.total_ms
    )?;
    if !r.suggestions.is_empty() {
        writeln!(
            out,
            "{dim}did you mean: {}{reset}",
            r.suggestions.join(" | ")
        )?;
    }
    for (i, res) in r.results.iter().enumerate() {
        writeln!(out)?;
        writeln!(
            out,
            "{bold}{}. {}{reset}  {dim}score {:.4} (bm25 {:.3}, cos {:.3}{}){reset}",
            i + 1,
            res.section_path.join(" › "),
            res.score,
            res.ranking_signals.lexical,
            res.ranking_signals.semantic,
            res.ranking_signals
                .rerank
                .map(|p| format!(", rerank {p:.3}"))
                .unwrap_or_default()
        )?;
        let anchor = if res.anchor.is_empty() {
            String::new()
        } else {
            format!("#{}", res.anchor)
        };
        writeln!(
            out,
            "   {dim}{}:{}-{}{anchor}{reset}",
            res.document_path, res.line_start, res.line_end
        )?;
        let chars: Vec<char> = res.snippet.chars().collect();
        let mut line = String::new();
        let mut pos = 0;
        for h in &res.highlights {
            line.extend(&chars[pos..h.start]);
            line.push_str(hl);
            line.extend(&chars[h.start..h.end]);
            line.push_str(reset);
            pos = h.end;
        }
        line.extend(&chars[pos..]);
        writeln!(out, "   {line}")?;
    }
    Ok(())
}

fn parse_weight(s: &str) -> Result<f32, String> {
    match s.parse::<f32>() {
        Ok(w) if (0.0..=1.0).contains(&w) => Ok(w),
        _ => Err(format!("{s} is not a number in 0..1")),
    }
}
