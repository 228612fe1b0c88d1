//! `index-builder`: turns a folder of documents (markdown, text, PDF, DOCX, spreadsheets)
//! into a docloupe bundle.

use index_builder::{build, chunk, cite, ingest, isolate, site};

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use docloupe::analyze::Language;
use docloupe::embed::{models_root, KNOWN_MODELS};
use docloupe::{Embedder, ModelFiles};

#[derive(Parser)]
#[command(
    name = "index-builder",
    version,
    about = "Build docloupe search bundles from documentation folders"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build a bundle from every document under a folder (markdown, text, PDF, DOCX,
    /// XLSX/XLS/ODS), or from one document.
    Build(BuildArgs),
    /// Print what the builder makes of one document as JSON: its docId, title, heading tree,
    /// page map (PDF), sections with their text blocks, lines and pages, and the chunks the
    /// build cuts them into with each one's span (breadcrumb, anchor, lines, pages, tokens).
    Convert {
        /// A markdown, text, PDF, DOCX or spreadsheet file.
        file: PathBuf,
        /// Count tokens with this embedding model's tokenizer (minilm, e5-multilingual or a
        /// model directory), so the chunks are exactly the build's; without it they are
        /// sized by the estimate `--no-embeddings` builds use.
        #[arg(long)]
        model: Option<String>,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Internal: converts one binary file read on stdin (the builder's isolated child).
    #[command(hide = true)]
    ConvertWorker {
        #[arg(long)]
        format: String,
        #[arg(long)]
        stem: String,
        #[arg(long)]
        rel: String,
    },
    /// Print a bundle's header and section sizes as JSON (verifies checksums).
    Inspect {
        /// The bundle file.
        bundle: PathBuf,
    },
    /// Print every chunk of a bundle as JSON lines (documentPath, chunkIndex, title,
    /// description, sectionPath, anchor, lines, text): for inspection and for mining
    /// training data (prebuild/reranker).
    Dump {
        /// The bundle file.
        bundle: PathBuf,
    },
    /// Render every document (markdown, plain text) under DIR as a plain HTML site in OUT (replaced as a whole):
    /// a page per document at its path with `.html`, headings carrying the bundle's anchors
    /// (so a result's `documentPath` + `#anchor` lands on its section), raw HTML shown as text.
    Site {
        /// Folder of documents (the one the bundle is built from).
        dir: PathBuf,
        /// Directory to write.
        #[arg(long)]
        out: PathBuf,
        /// The site's name, in every page's header and title.
        #[arg(long, default_value = "Documentation")]
        title: String,
        /// A file of HTML put into every page's <head> (e.g. the search component's script).
        /// Pages carry a strict Content-Security-Policy: no inline script or style here.
        #[arg(long)]
        head: Option<PathBuf>,
        /// The Content-Security-Policy of every page (a <meta> tag); "" for none. The
        /// default allows scripts, styles, workers and fetches from the site's own origin.
        #[arg(long, default_value = site::DEFAULT_CSP, hide_default_value = true)]
        csp: String,
    },
    /// Cut a bundle into the split layout a browser loads piece by piece (core.bin, lexical
    /// and fragment shards, the vectors in pieces for semantic search) in directory OUT,
    /// replaced as a whole.
    Split {
        /// The bundle file.
        bundle: PathBuf,
        /// Directory to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// Cut a multilingual model (e5-multilingual, or a model directory with a SentencePiece
    /// vocabulary) down to the scripts a collection is written in, for the browser and the
    /// edge: the pieces of other scripts' letters and their rows of the embedding table go.
    /// A text in the kept scripts gets the same tokens and the same vector as from the full
    /// model, so bundles built with it are searched with the trimmed one. Writes
    /// manifest.json, model.int8.onnx and tokenizer.json into OUT (replaced as a whole).
    TrimModel {
        /// The model: e5-multilingual or a model directory (as `make models` writes them).
        #[arg(value_name = "e5-multilingual|DIR")]
        model: String,
        /// The scripts whose letters to keep, comma-separated: latin, cyrillic, greek
        /// (digits, punctuation and symbols are always kept).
        #[arg(long, value_delimiter = ',', required = true)]
        scripts: Vec<String>,
        /// Directory to write.
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(clap::Args)]
struct BuildArgs {
    /// Folder of documents (hidden and git-ignored paths are skipped), or one document (its
    /// path in the bundle is its file name).
    #[arg(value_name = "PATH")]
    dir: PathBuf,
    /// Bundle file to write (atomically).
    #[arg(long)]
    out: PathBuf,
    /// Project the collection belongs to, as namespace/name.
    #[arg(long)]
    project: Option<String>,
    /// The embedding model: minilm (English, small and fast), e5-multilingual (≈100
    /// languages, Russian included, cross-language; 2× slower), auto (e5-multilingual when at
    /// least 5 % of the documents are not in English, else minilm), or a model directory.
    /// Models come from `make models`.
    #[arg(
        long,
        default_value = "auto",
        value_name = "minilm|e5-multilingual|auto|DIR"
    )]
    model: String,
    /// Model arithmetic: fast (this CPU's SIMD kernels, which differ between CPU generations
    /// in the last bits) or portable (tract's generic kernels: the same vectors on every
    /// machine; 2–4× slower).
    #[arg(long, default_value = "fast")]
    kernels: docloupe::embed::Kernels,
    /// Build without vectors: smaller, fulltext search only.
    #[arg(long)]
    no_embeddings: bool,
    /// Document language: from front matter or detected (auto), or forced.
    #[arg(long, value_enum, default_value_t = LangArg::Auto)]
    lang: LangArg,
    /// Vectors get compact first-pass codes from this many chunks on: a semantic query then
    /// scans one bit a dimension and rescores a shortlist exactly; below it, every vector is
    /// scanned exactly (docs/measurements/2026-11-29-compact-codes-vs-hnsw.md).
    #[arg(long, default_value_t = docloupe::bundle::COMPACT_THRESHOLD)]
    compact_threshold: usize,
    /// Files read, chunked and embedded together: what the build holds in memory at once
    /// besides the bundle it writes (the bundle is the same for any size).
    #[arg(long, default_value_t = build::BATCH_FILES as u64, value_parser = clap::value_parser!(u64).range(1..))]
    batch_files: u64,
    /// Show no progress bar even on a terminal.
    #[arg(long)]
    quiet: bool,
    /// A CSL-JSON bibliography (Zotero / Better BibTeX export): documents matched to an entry
    /// (by `citekey` in front matter, file name = citation key, or attached file) carry its
    /// citation in results.
    #[arg(long, value_name = "REFS.json")]
    references: Option<PathBuf>,
    /// Reuse the vectors of unchanged chunks from the bundle already at --out: only new or
    /// changed documents are embedded. The result is byte-identical to a clean build.
    #[arg(long)]
    incremental: bool,
    /// Replace --out even if it was built with another embedding model (or is not a bundle).
    #[arg(long)]
    force_rebuild: bool,
    /// With --incremental: reuse from the bundle at --out even when this machine's builder
    /// did not write it (a bundle of yours restored from elsewhere, without the cache that
    /// holds its seal). Its vectors and chunk plans are taken as they are.
    #[arg(long, requires = "incremental")]
    trust_previous: bool,
    /// Name every file of a type index-builder does not read in the warnings (by default
    /// they are counted by extension: "3 files of unknown type skipped: .dwg ×2, .rtf ×1").
    #[arg(long)]
    list_skipped: bool,
    /// Read only documents of these types, comma-separated (md, txt, html, pdf, docx, xlsx,
    /// xls, ods): `--formats html` indexes a built site's pages and leaves its robots.txt and
    /// stray sources out. Default: every type.
    #[arg(long, value_delimiter = ',', value_parser = parse_format, value_name = "TYPES")]
    formats: Option<Vec<ingest::Format>>,
    /// Who may read which documents: a TOML file of path globs → groups (docs/serve.md). The
    /// bundle keeps each document's groups; `docloupe serve` shows a user only the documents
    /// their groups open. A page's `access:` front matter narrows its rule further.
    #[arg(long, value_name = "ACCESS.toml")]
    access: Option<PathBuf>,
    #[command(flatten)]
    limits: LimitArgs,
}

fn parse_format(s: &str) -> Result<ingest::Format, String> {
    let t = s.trim().trim_start_matches('.').to_ascii_lowercase();
    ingest::Format::from_doc_type(&t).ok_or_else(|| {
        let known: Vec<&str> = ingest::Format::ALL.iter().map(|f| f.doc_type()).collect();
        format!("{s:?} is not a document type ({})", known.join(", "))
    })
}

/// What converting one PDF, DOCX or spreadsheet may take: each runs in a child process with
/// these limits, and a file that passes one is skipped with a warning.
#[derive(clap::Args)]
struct LimitArgs {
    /// Memory (address space) of one conversion, in MiB.
    #[arg(long, default_value_t = isolate::Limits::default().memory_bytes >> 20, value_name = "MiB")]
    convert_memory_mb: u64,
    /// Time one conversion may take, in seconds.
    #[arg(long, default_value_t = isolate::Limits::default().seconds, value_name = "SECONDS")]
    convert_timeout: u64,
}

impl LimitArgs {
    fn limits(&self) -> isolate::Limits {
        isolate::Limits {
            memory_bytes: self.convert_memory_mb.max(64) << 20,
            seconds: self.convert_timeout.max(1),
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum LangArg {
    Auto,
    En,
    Ru,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("DOCLOUPE_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Build(args) => build(args),
        Command::Inspect { bundle } => inspect(&bundle),
        Command::Convert {
            file,
            model,
            limits,
        } => convert_one(&file, model.as_deref(), limits.limits()),
        Command::ConvertWorker { format, stem, rel } => {
            return isolate::worker(&format, &stem, &rel)
        }
        Command::Site {
            dir,
            out,
            title,
            head,
            csp,
        } => site(&dir, &out, &title, head.as_deref(), &csp),
        Command::Dump { bundle } => dump(&bundle),
        Command::Split { bundle, out } => split(&bundle, &out),
        Command::TrimModel {
            model,
            scripts,
            out,
        } => trim_model(&model, &scripts, &out),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // Output piped into `head` and the like: the reader has what it wanted.
        Err(e)
            if e.chain().any(|c| {
                let kind = c
                    .downcast_ref::<std::io::Error>()
                    .map(|io| io.kind())
                    .or_else(|| {
                        c.downcast_ref::<serde_json::Error>()
                            .and_then(serde_json::Error::io_error_kind)
                    });
                kind == Some(std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("index-builder: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Writes `text` and a newline to stdout, as an error (never a panic, as `println!` does) when
/// the reader has gone: `index-builder inspect b | head -1` ends quietly.
fn print_line(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()?;
    Ok(())
}

/// The installed directory of a model `--model` names (minilm, e5-multilingual).
fn known_model_dir(name: &str) -> Option<PathBuf> {
    KNOWN_MODELS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, dir, _)| models_root().join(dir))
}

/// `--model`'s value as a directory: a known model's, else the path given.
fn model_dir(model: &str) -> PathBuf {
    known_model_dir(model).unwrap_or_else(|| PathBuf::from(model))
}

fn build(args: BuildArgs) -> Result<()> {
    if let Some(p) = &args.project {
        validate_project(p)?;
    }
    docloupe::embed::use_kernels(args.kernels)?;
    let missing = "the embedding model is missing (run `make models`, pass --model DIR, or build with --no-embeddings)";
    let files = |dir: &std::path::Path| ModelFiles::from_dir(dir).context(missing);
    let named = known_model_dir;
    let model = if args.no_embeddings {
        build::ModelChoice::None
    } else if args.model == "auto" {
        build::ModelChoice::Auto {
            english: named("minilm").expect("a known model"),
            multilingual: named("e5-multilingual").expect("a known model"),
        }
    } else {
        let dir = model_dir(&args.model);
        let files = files(&dir)?;
        // A trimmed model answers for the full one in the scripts it keeps; a bundle records the
        // full model, so its passages must be the full model's in every script.
        if docloupe::embed::trimmed_from(&files.onnx)
            .is_some_and(|t| t.trimmed_tokenizer == docloupe::embed::sha256_hex(&files.tokenizer))
        {
            bail!(
                "{} is a model trimmed to some scripts (`index-builder trim-model`): it searches bundles, build them with the full model",
                dir.display()
            );
        }
        // A query tower embeds questions into another model's passage space, never passages.
        if docloupe::embed::is_query_tower(&files.onnx) {
            bail!(
                "{}: model.int8.onnx is a query tower (it embeds questions, not passages): build with the model it pairs with",
                dir.display()
            );
        }
        build::ModelChoice::Fixed(Box::new(Embedder::new(&files)?))
    };
    let mut warnings = Vec::new();
    let references = args
        .references
        .as_deref()
        .map(|p| cite::References::load(p, &mut warnings))
        .transpose()?;
    let access = args
        .access
        .as_deref()
        .map(index_builder::access::AccessRules::load)
        .transpose()?;
    let lang = match args.lang {
        LangArg::Auto => None,
        LangArg::En => Some(Language::En),
        LangArg::Ru => Some(Language::Ru),
    };
    let report = build::run(build::BuildConfig {
        input: args.dir,
        output: args.out,
        project: args.project,
        model,
        lang,
        compact_threshold: args.compact_threshold,
        batch_files: usize::try_from(args.batch_files).unwrap_or(usize::MAX),
        progress: !args.quiet && std::io::stderr().is_terminal(),
        references,
        incremental: args.incremental,
        force_rebuild: args.force_rebuild,
        trust_previous: args.trust_previous,
        list_skipped: args.list_skipped,
        formats: args.formats,
        convert_limits: args.limits.limits(),
        access,
    })?;
    let mut report = report;
    warnings.append(&mut report.warnings);
    report.warnings = warnings;
    for w in &report.warnings {
        tracing::warn!("{w}");
    }
    print_line(&serde_json::to_string_pretty(&report)?)?;
    Ok(())
}

fn convert_one(path: &std::path::Path, model: Option<&str>, limits: isolate::Limits) -> Result<()> {
    let format = ingest::single_file(path)?.format;
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let rel = path.display().to_string();
    let mut warnings = Vec::new();
    let c = isolate::convert_isolated(format, &bytes, &stem, &rel, &mut warnings, limits)
        .map_err(|why| anyhow::anyhow!("{rel}: cannot be indexed: {why}"))?;
    let embedder = model
        .map(|m| -> Result<Embedder> {
            let dir = model_dir(m);
            let files = ModelFiles::from_dir(&dir)
                .with_context(|| format!("cannot load the model {}", dir.display()))?;
            Ok(Embedder::new(&files)?)
        })
        .transpose()?;
    let (counter, max_tokens): (Box<dyn chunk::TokenCounter>, usize) = match &embedder {
        Some(e) => (
            Box::new(build::TokenizerCounter(e)),
            e.info().max_tokens as usize,
        ),
        None => (Box::new(chunk::EstimateCounter), 256),
    };
    let paged = !c.page_map.pages.is_empty();
    let chunks = build::plan_chunks(&c.doc, paged, max_tokens, counter.as_ref());
    let report = serde_json::json!({
        "docId": c.doc_id,
        "documentType": format.doc_type(),
        "title": c.doc.title,
        "headingTree": c.doc.outline.iter().map(|h| serde_json::json!({
            "level": h.level, "title": h.title, "anchor": h.anchor, "page": h.page,
        })).collect::<Vec<_>>(),
        "pageMap": c.page_map.pages.iter().map(|p| serde_json::json!({
            "page": p.page, "start": p.start, "end": p.end,
        })).collect::<Vec<_>>(),
        "sections": c.doc.sections.iter().map(|s| serde_json::json!({
            "headings": s.headings,
            "anchor": s.anchor,
            "blocks": s.blocks.iter().map(|b| serde_json::json!({
                "lineStart": b.line_start, "lineEnd": b.line_end, "page": b.page, "text": b.text,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "chunks": chunks.iter().enumerate().map(|(i, ch)| serde_json::json!({
            "chunkIndex": i,
            "sectionPath": ch.location.section_path,
            "anchor": ch.location.anchor,
            "lineStart": ch.location.line_start,
            "lineEnd": ch.location.line_end,
            "pageStart": ch.location.page_span.map(|p| p.start),
            "pageEnd": ch.location.page_span.map(|p| p.end),
            "tokens": counter.count(&docloupe::bundle::embedding_input(&ch.location.section_path, &ch.text)),
            "text": ch.text,
        })).collect::<Vec<_>>(),
        "tokenCounts": if embedder.is_some() { "model" } else { "estimate" },
        "warnings": warnings,
    });
    use std::io::Write;
    writeln!(
        std::io::stdout(),
        "{}",
        serde_json::to_string_pretty(&report)?
    )?;
    Ok(())
}

fn inspect(path: &std::path::Path) -> Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let (header, body) = docloupe::bundle::decode_header(&bytes)?;
    let mut sections = Vec::new();
    let (mut vector_index, mut vector_bits) = (None, None);
    for s in &header.sections {
        let raw = docloupe::bundle::section_bytes(&bytes, body, s)?;
        if s.kind.name() == "vectors" {
            (vector_index, vector_bits) = match docloupe::index::vector::wire_kind(raw) {
                Some((kind, bits)) => (Some(kind), Some(bits)),
                None => (Some("unknown"), None),
            };
        }
        sections.push(serde_json::json!({
            "kind": s.kind.name(),
            "offset": body as u64 + s.offset,
            "bytes": s.len,
        }));
    }
    let report = serde_json::json!({
        "formatVersion": u32::from_le_bytes(bytes[8..12].try_into()?),
        "bytes": bytes.len(),
        "headerBytes": body,
        "builder": header.builder,
        "projectId": header.project_id,
        "embedding": header.embedding,
        "analyzer": header.analyzer,
        "counts": header.counts,
        "flags": header.flags,
        "vectorIndex": vector_index,
        "vectorBits": vector_bits,
        "sections": sections,
        // Who may read what: the groups named and how many documents are restricted.
        "access": docloupe::bundle::decode_access(&bytes)?.map(|a| serde_json::json!({
            "groups": a.groups,
            "documentsRestricted": a.documents.len(),
        })),
    });
    print_line(&serde_json::to_string_pretty(&report)?)?;
    Ok(())
}

fn site(
    dir: &std::path::Path,
    out: &std::path::Path,
    title: &str,
    head: Option<&std::path::Path>,
    csp: &str,
) -> Result<()> {
    let head = match head {
        Some(p) => {
            std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?
        }
        None => String::new(),
    };
    let (pages, warnings) = site::write_site(dir, out, title, &head, csp)?;
    for w in &warnings {
        tracing::warn!("{w}");
    }
    print_line(
        &serde_json::json!({ "out": out, "pages": pages, "warnings": warnings }).to_string(),
    )?;
    Ok(())
}

fn trim_model(model: &str, scripts: &[String], out: &std::path::Path) -> Result<()> {
    use index_builder::trim::{self, Script};
    let scripts = scripts
        .iter()
        .map(|name| {
            Script::from_name(name.trim()).with_context(|| {
                let known: Vec<&str> = Script::ALL.iter().map(|s| s.name()).collect();
                format!("unknown script {name:?} (known: {})", known.join(", "))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let trimmed = trim::trim_model(&model_dir(model), &scripts)?;
    index_builder::output::write_dir_atomically(out, &trimmed.files, "trim-model")?;
    let bytes: serde_json::Map<String, serde_json::Value> = trimmed
        .files
        .iter()
        .map(|(name, b)| (name.clone(), b.len().into()))
        .collect();
    print_line(
        &serde_json::json!({
            "out": out,
            "pieces": trimmed.old_ids.len(),
            "of": trimmed.of,
            "bytes": bytes,
        })
        .to_string(),
    )
}

fn split(path: &std::path::Path, out: &std::path::Path) -> Result<()> {
    let sizes = docloupe::bundle::split::ShardSizes::default();
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    // The vectors are cut from their section's bytes as they are: checked whole first (the
    // same checks as a full decode), then let go before the rest is decoded.
    docloupe::bundle::check_vectors(&bytes)?;
    let bundle = docloupe::bundle::decode_lexical(&bytes)?;
    // Each file is written as it is made; only its name and size are kept for the report.
    let mut out_dir = index_builder::output::DirWriter::new(out, "split")?;
    let mut files: Vec<(String, usize)> = Vec::new();
    let mut failed = None;
    let cut = docloupe::bundle::split::split_into(&bundle, &bytes, sizes, |name, file| {
        if let Err(e) = out_dir.write(&name, &file) {
            // Stops the split; the write's own error is what is reported.
            failed = Some(e);
            return Err(docloupe::Error::Internal(
                "writing the split stopped".into(),
            ));
        }
        files.push((name, file.len()));
        Ok(())
    });
    if let Some(e) = failed {
        return Err(e);
    }
    cut?;
    out_dir.finish()?;
    let size = |prefix: &str| -> Vec<usize> {
        files
            .iter()
            .filter(|(n, _)| n.starts_with(prefix))
            .map(|&(_, len)| len)
            .collect()
    };
    let summary = |sizes: Vec<usize>| {
        serde_json::json!({
            "files": sizes.len(),
            "bytes": sizes.iter().sum::<usize>(),
            "largest": sizes.iter().max(),
        })
    };
    let report = serde_json::json!({
        "out": out,
        "files": files.len(),
        "coreBytes": size("core.bin").first(),
        "lexical": summary(size("lex-")),
        "fragments": summary(size("frag-")),
        "documentsBytes": size("docs.bin").first(),
        "vocabulary": summary(size("voc-")),
        "vectors": summary(size("vec-")),
        "bundleBytes": bytes.len(),
    });
    print_line(&serde_json::to_string_pretty(&report)?)?;
    Ok(())
}

fn dump(path: &std::path::Path) -> Result<()> {
    use std::io::Write;
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let bundle = docloupe::bundle::decode(&bytes)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for (i, c) in bundle.docs.chunks.iter().enumerate() {
        let d = &bundle.docs.documents[c.doc as usize];
        let line = serde_json::json!({
            "documentPath": d.path,
            "chunkIndex": c.chunk_index,
            "chunkId": c.id,
            "title": d.title,
            "description": d.description,
            "lang": d.lang.code(),
            "sectionPath": c.location.section_path,
            "anchor": c.location.anchor,
            "lineStart": c.location.line_start,
            "lineEnd": c.location.line_end,
            "text": bundle.text.get(i)?,
        });
        let mut line = line;
        if let Some(p) = c.location.page_span {
            line["pageStart"] = p.start.into();
            line["pageEnd"] = p.end.into();
        }
        if let Some(cite) = &d.citation {
            line["citation"] = serde_json::to_value(cite)?;
        }
        serde_json::to_writer(&mut out, &line)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

/// `namespace/name`, each part 1–64 of `[a-z0-9._-]`, starting with a letter or digit.
fn validate_project(p: &str) -> Result<()> {
    let part_ok = |s: &str| {
        (1..=64).contains(&s.len())
            && s.chars().all(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
            })
            && s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
    };
    match p.split_once('/') {
        Some((ns, name)) if part_ok(ns) && part_ok(name) => Ok(()),
        _ => bail!("--project must look like namespace/name (lowercase letters, digits, '.', '_', '-'), got {p:?}"),
    }
}
