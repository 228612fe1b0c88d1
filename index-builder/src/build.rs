//! The build pipeline: ingest → chunk → embed → index → bundle → write (atomically).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use docloupe::analyze::Language;
use docloupe::embed::{sha256_hex, Embedder};
use docloupe::index::{build_bundle, embedding_input, BuildOptions, SourceChunk, SourceDocument};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use serde::Serialize;

use crate::chunk::{chunk_section, EstimateCounter, PlannedChunk, TokenCounter};
use crate::ingest::{discover, parse_document};

pub struct BuildConfig {
    pub input: PathBuf,
    pub output: PathBuf,
    pub project: Option<String>,
    /// `None`: build without embeddings (fulltext only).
    pub embedder: Option<Embedder>,
    pub lang: Option<Language>,
    pub hnsw_threshold: usize,
    pub progress: bool,
}

/// The JSON report printed after a build.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestResult {
    pub chunks_written: usize,
    pub documents_processed: usize,
    pub duration_seconds: f64,
    pub embed_model: Option<String>,
    pub bundle_path: String,
    pub bundle_bytes: usize,
    pub warnings: Vec<String>,
}

struct TokenizerCounter<'a>(&'a Embedder);

impl TokenCounter for TokenizerCounter<'_> {
    fn count(&self, text: &str) -> usize {
        self.0
            .count_tokens(text)
            .unwrap_or_else(|_| EstimateCounter.count(text))
    }
}

pub fn run(cfg: BuildConfig) -> Result<IngestResult> {
    let started = Instant::now();
    let mut warnings = Vec::new();
    if !cfg.input.is_dir() {
        bail!(
            "input folder {} does not exist or is not a folder",
            cfg.input.display()
        );
    }
    // Fail on an unwritable output before spending minutes on embeddings.
    let out_dir = parent_dir(&cfg.output);
    if !out_dir.is_dir() {
        bail!(
            "cannot write {}: folder {} does not exist",
            cfg.output.display(),
            out_dir.display()
        );
    }

    let files = discover(&cfg.input, &mut warnings);
    if files.is_empty() {
        bail!(
            "no documents (*.md, *.markdown, *.txt) found under {}",
            cfg.input.display()
        );
    }
    let bar = progress_bar(cfg.progress, files.len() as u64, "reading");

    // Ingest + chunk, in parallel; the result is put back in path order.
    let counter: Box<dyn TokenCounter + Sync> = match &cfg.embedder {
        Some(e) => Box::new(TokenizerCounter(e)),
        None => Box::new(EstimateCounter),
    };
    let max_tokens = cfg
        .embedder
        .as_ref()
        .map_or(256, |e| e.info().max_tokens as usize);
    let parsed: Vec<(Option<ReadDocument>, Vec<String>)> = files
        .par_iter()
        .map(|file| {
            let mut w = Vec::new();
            let doc = read_document(file, &cfg, max_tokens, counter.as_ref(), &mut w);
            bar.inc(1);
            (doc, w)
        })
        .collect();
    bar.finish_and_clear();

    let mut docs = Vec::new();
    let mut planned = Vec::new();
    for (doc, w) in parsed {
        warnings.extend(w);
        if let Some((doc, chunks)) = doc {
            docs.push(doc);
            planned.push(chunks);
        }
    }
    if docs.is_empty() {
        bail!(
            "none of the {} documents under {} could be read",
            files.len(),
            cfg.input.display()
        );
    }

    // Embed every chunk.
    let inputs: Vec<String> = planned
        .iter()
        .flatten()
        .map(|c| embedding_input(&c.section_path, &c.text))
        .collect();
    // One chunk per model call: tract's kernels round differently for different batch
    // shapes, so only unbatched embedding makes a vector a function of its text alone
    // (identical chunks get identical vectors, and vectors can be reused across builds). It
    // is also faster here: on 1,535 rust-book chunks, 63 s unbatched vs 73 s in batches of 16.
    let vectors: Vec<Option<Vec<f32>>> = match &cfg.embedder {
        None => vec![None; inputs.len()],
        Some(embedder) => {
            let bar = progress_bar(cfg.progress, inputs.len() as u64, "embedding");
            let vectors = inputs
                .par_iter()
                .map(|text| {
                    let v = embedder.embed(text);
                    bar.inc(1);
                    v.map(Some)
                })
                .collect::<Result<_, docloupe::Error>>()?;
            bar.finish_and_clear();
            vectors
        }
    };
    let mut vectors = vectors.into_iter();
    for (doc, chunks) in docs.iter_mut().zip(planned) {
        doc.chunks = chunks
            .into_iter()
            .map(|c| SourceChunk {
                section_path: c.section_path,
                anchor: c.anchor,
                line_start: c.line_start,
                line_end: c.line_end,
                text: c.text,
                embedding: vectors.next().expect("one vector slot per chunk"),
            })
            .collect();
    }

    let opts = BuildOptions {
        builder: format!("index-builder {}", env!("CARGO_PKG_VERSION")),
        project_id: cfg.project.clone(),
        model: cfg.embedder.as_ref().map(|e| e.info().clone()),
        hnsw_threshold: cfg.hnsw_threshold,
    };
    let documents_processed = docs.len();
    let bundle = build_bundle(docs, &opts)?;
    let chunks_written = bundle.docs.chunks.len();
    let bytes = docloupe::bundle::encode(&bundle)?;
    write_atomically(&cfg.output, &bytes)?;

    Ok(IngestResult {
        chunks_written,
        documents_processed,
        duration_seconds: (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        embed_model: opts.model.map(|m| m.id),
        bundle_path: cfg.output.display().to_string(),
        bundle_bytes: bytes.len(),
        warnings,
    })
}

/// A document read and chunked, before embedding.
type ReadDocument = (SourceDocument, Vec<PlannedChunk>);

fn read_document(
    file: &crate::ingest::SourceFile,
    cfg: &BuildConfig,
    max_tokens: usize,
    counter: &dyn TokenCounter,
    warnings: &mut Vec<String>,
) -> Option<ReadDocument> {
    let bytes = match std::fs::read(&file.abs) {
        Ok(b) => b,
        Err(e) => {
            warnings.push(format!("{}: skipped, cannot read: {e}", file.rel));
            return None;
        }
    };
    if bytes.len() as u64 > crate::ingest::MAX_FILE_BYTES {
        warnings.push(format!(
            "{}: skipped, {} bytes is over the {} byte limit",
            file.rel,
            bytes.len(),
            crate::ingest::MAX_FILE_BYTES
        ));
        return None;
    }
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(format!("{}: skipped, not UTF-8 ({e})", file.rel));
            return None;
        }
    };
    let stem = Path::new(&file.rel)
        .file_stem()
        .map_or_else(|| file.rel.clone(), |s| s.to_string_lossy().into_owned());
    let doc = parse_document(file.format, text, &stem, warnings, &file.rel);
    let mut chunks = Vec::new();
    for section in &doc.sections {
        let mut path = vec![doc.title.clone()];
        path.extend(section.headings.iter().cloned());
        chunks.extend(chunk_section(section, &path, max_tokens, counter));
    }
    if chunks.is_empty() {
        warnings.push(format!("{}: skipped, no text", file.rel));
        return None;
    }
    let lang = cfg
        .lang
        .or(doc.front.lang)
        .unwrap_or_else(|| Language::detect(text));
    let mut tags = doc.front.tags.clone();
    if let Some(kind) = &doc.front.kind {
        tags.push(format!("type:{kind}"));
        tags.sort();
        tags.dedup();
    }
    let source = SourceDocument {
        path: file.rel.clone(),
        doc_id: sha256_hex(&bytes)[..32].to_owned(),
        title: doc.title,
        description: doc.front.description,
        doc_type: file.format.doc_type().into(),
        date: doc.front.date,
        tags,
        lang,
        chunks: Vec::new(),
    };
    Some((source, chunks))
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes to a temporary file beside `path`, syncs, then renames over it: readers see the old
/// bundle or the new one, never half of one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = parent_dir(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}

/// Writes `files` (relative paths, `/`-separated) into a fresh directory beside `dir`, syncs them, then swaps it in for `dir`:
/// readers see the old set of files or the new one, never a mix (a split bundle's shards
/// must all come from one bundle).
pub fn write_dir_atomically(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<()> {
    let parent = parent_dir(dir);
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "split".into());
    let tmp = parent.join(format!(".{name}.{}.tmp", std::process::id()));
    let old = parent.join(format!(".{name}.{}.old", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        std::fs::create_dir_all(&tmp)?;
        for (file, bytes) in files {
            if let Some(sub) = Path::new(file).parent() {
                std::fs::create_dir_all(tmp.join(sub))?;
            }
            let mut f = std::fs::File::create(tmp.join(file))?;
            f.write_all(bytes)?;
            f.sync_all()?;
        }
        if dir.exists() {
            std::fs::rename(dir, &old)?;
        }
        std::fs::rename(&tmp, dir)?;
        if old.exists() {
            std::fs::remove_dir_all(&old)?;
        }
        Ok(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&tmp);
        if old.exists() && !dir.exists() {
            let _ = std::fs::rename(&old, dir);
        }
        return Err(e).with_context(|| format!("cannot write {}", dir.display()));
    }
    Ok(())
}

fn progress_bar(show: bool, len: u64, what: &'static str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} ({per_sec}, eta {eta})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_message(what);
    bar
}
