//! `docloupe`: search a bundle from the terminal.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use docloupe::embed::default_model_dir;
use docloupe::{Engine, Mode, ModelFiles, SearchRequest, SearchResponse};

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
    /// Number of results (1..50).
    #[arg(long, short = 'l', default_value_t = 10)]
    limit: usize,
    /// hybrid (BM25 + vectors), fulltext (BM25) or semantic (vectors). Default: hybrid when
    /// the bundle has vectors, else fulltext.
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    #[arg(long, short = 'f', value_enum, default_value_t = Format::Text)]
    format: Format,
    /// The query (several words are joined with spaces).
    #[arg(required = true)]
    query: Vec<String>,
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
    let models = match mode {
        Mode::Fulltext => None,
        Mode::Hybrid | Mode::Semantic => {
            let dir = args.models.unwrap_or_else(default_model_dir);
            Some(ModelFiles::from_dir(&dir).context("the embedding model is needed for hybrid/semantic search (or pass --mode fulltext)")?)
        }
    };
    let engine = Engine::from_bundle(&bytes, models.as_ref())
        .with_context(|| format!("cannot load {}", args.bundle.display()))?;
    let request = SearchRequest::new(args.query.join(" "))
        .limit(args.limit)
        .mode(mode);
    let response = engine.search(&request)?;

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &response)?;
            writeln!(out)?;
        }
        Format::Text => print_text(&mut out, &response, std::io::stdout().is_terminal())?,
    }
    out.flush()?;
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
        "{dim}{} of {} matches for {:?} ({}){reset}",
        r.results.len(),
        r.total,
        r.query,
        r.applied_strategy
    )?;
    for (i, res) in r.results.iter().enumerate() {
        writeln!(out)?;
        writeln!(
            out,
            "{bold}{}. {}{reset}  {dim}score {:.4} (bm25 {:.3}, cos {:.3}){reset}",
            i + 1,
            res.section_path.join(" › "),
            res.score,
            res.ranking_signals.lexical,
            res.ranking_signals.semantic
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
