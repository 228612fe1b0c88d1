//! The build pipeline: ingest → chunk → embed → index → bundle → write (atomically).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use std::collections::HashMap;

use anyhow::{bail, Context, Result};
use docloupe::analyze::Language;
use docloupe::bundle::Citation;
use docloupe::embed::{sha256_hex, Embedder, ModelInfo};
use docloupe::index::{
    build_bundle, chunk_id, embedding_input, BuildOptions, Embedding, SourceChunk, SourceDocument,
};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use serde::Serialize;

use crate::chunk::{chunk_section, EstimateCounter, PlannedChunk, TokenCounter};
use crate::cite::{MetadataWarning, References};
use crate::convert::convert;
use crate::ingest::discover;

pub struct BuildConfig {
    pub input: PathBuf,
    pub output: PathBuf,
    pub project: Option<String>,
    /// `None`: build without embeddings (fulltext only).
    pub embedder: Option<Embedder>,
    pub lang: Option<Language>,
    pub hnsw_threshold: usize,
    pub progress: bool,
    /// A CSL-JSON bibliography to match documents against.
    pub references: Option<References>,
    /// Take the vectors of unchanged chunks from the bundle already at `output`.
    pub incremental: bool,
    /// Replace `output` even when it was built with another embedding model (or is not a
    /// bundle at all).
    pub force_rebuild: bool,
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
    /// Chunks run through the embedding model in this build.
    pub chunks_embedded: usize,
    /// Chunks whose vectors were taken over from the previous bundle (`--incremental`).
    pub chunks_reused: usize,
    /// Documents matched to an entry of `--references`.
    pub documents_cited: usize,
    pub warnings: Vec<String>,
    /// Per-document metadata problems (`MetadataMissing`), each with a hint.
    pub metadata_warnings: Vec<MetadataWarning>,
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

    let model = cfg.embedder.as_ref().map(|e| e.info().clone());
    let mut reuse = previous_bundle(&cfg, model.as_ref(), &mut warnings)?;

    let files = discover(&cfg.input, &mut warnings);
    if files.is_empty() {
        bail!(
            "no documents (*.md, *.markdown, *.txt, *.pdf, *.docx, *.xlsx, *.xls, *.ods) found under {}",
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
    let mut metadata_warnings = Vec::new();
    let mut documents_cited = 0;
    for (doc, w) in parsed {
        warnings.extend(w);
        if let Some((mut doc, chunks, citekey)) = doc {
            if let Some(refs) = &cfg.references {
                match refs.find(&doc.path, citekey.as_deref()) {
                    Some(c) => {
                        cite(&mut doc, c.clone());
                        documents_cited += 1;
                    }
                    None => metadata_warnings.push(refs.missing(&doc.path)),
                }
            }
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

    // Embed every chunk whose vector the previous bundle does not already hold.
    let model_id = model.as_ref().map_or("none", |m| m.id.as_str());
    let mut slots: Vec<Result<Embedding, String>> = Vec::new();
    for (doc, chunks) in docs.iter().zip(&planned) {
        for (k, c) in chunks.iter().enumerate() {
            let input = embedding_input(&c.section_path, &c.text);
            let id = chunk_id(&doc.doc_id, &c.section_path, model_id, k as u32);
            slots.push(match reuse.remove(&id) {
                Some((hash, e)) if hash == sha256_hex(input.as_bytes()) => Ok(e),
                _ => Err(input),
            });
        }
    }
    let chunks_reused = slots.iter().filter(|s| s.is_ok()).count();
    let chunks_embedded = if cfg.embedder.is_some() {
        slots.len() - chunks_reused
    } else {
        0
    };
    // One chunk per model call: tract's kernels round differently for different batch
    // shapes, so only unbatched embedding makes a vector a function of its text alone
    // (identical chunks get identical vectors, and vectors can be reused across builds). It
    // is also faster here: on 1,535 rust-book chunks, 63 s unbatched vs 73 s in batches of 16.
    let vectors: Vec<Option<Embedding>> = match &cfg.embedder {
        None => vec![None; slots.len()],
        Some(embedder) => {
            let bar = progress_bar(cfg.progress, chunks_embedded as u64, "embedding");
            let vectors = slots
                .into_par_iter()
                .map(|slot| match slot {
                    Ok(reused) => Ok(Some(reused)),
                    Err(text) => {
                        let v = embedder.embed(&text);
                        bar.inc(1);
                        v.map(|v| Some(Embedding::Fresh(v)))
                    }
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
                page_span: c.page_span,
                text: c.text,
                embedding: vectors.next().expect("one vector slot per chunk"),
            })
            .collect();
    }

    let opts = BuildOptions {
        builder: format!("index-builder {}", env!("CARGO_PKG_VERSION")),
        project_id: cfg.project.clone(),
        model,
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
        chunks_embedded,
        chunks_reused,
        documents_cited,
        warnings,
        metadata_warnings,
    })
}

/// Attaches a bibliography entry; its tags join the document's (for the `tags` filter).
fn cite(doc: &mut SourceDocument, c: Citation) {
    doc.tags.extend(c.tags.iter().cloned());
    doc.tags.sort();
    doc.tags.dedup();
    doc.citation = Some(c);
}

/// A chunk's reusable vector, by chunk id: the sha256 of the text it was embedded from (so a
/// chunk whose text changed under the same id is embedded again) and the vector.
type Reuse = HashMap<String, (String, Embedding)>;

/// Looks at the bundle already at the output path. Refuses to replace one built with
/// another embedding model, or a file that is not a bundle, without `--force-rebuild`; with
/// `--incremental`, returns its vectors for reuse.
fn previous_bundle(
    cfg: &BuildConfig,
    model: Option<&ModelInfo>,
    warnings: &mut Vec<String>,
) -> Result<Reuse> {
    let out = &cfg.output;
    let bytes = match std::fs::read(out) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if cfg.incremental {
                tracing::info!(
                    "{}: no previous bundle, building from scratch",
                    out.display()
                );
            }
            return Ok(Reuse::new());
        }
        Err(e) if cfg.force_rebuild => {
            tracing::warn!("cannot read {}: {e}; replacing it", out.display());
            return Ok(Reuse::new());
        }
        Err(e) => bail!(
            "cannot read the existing {} ({e}); pass --force-rebuild to replace it",
            out.display()
        ),
    };
    let header = match docloupe::bundle::decode_header(&bytes) {
        Ok((h, _)) => h,
        Err(docloupe::Error::BadMagic) if !cfg.force_rebuild => bail!(
            "{} exists and is not a docloupe bundle; refusing to overwrite it (pass --force-rebuild to replace it)",
            out.display()
        ),
        Err(e) => {
            if cfg.incremental {
                warnings.push(format!(
                    "{}: the previous bundle cannot be reused ({e}); every chunk is embedded",
                    out.display()
                ));
            }
            return Ok(Reuse::new());
        }
    };
    if let (Some(old), Some(new)) = (&header.embedding, model) {
        let same = old.id == new.id && old.sha256 == new.sha256;
        if !same && !cfg.force_rebuild {
            bail!(
                "{} was built with embedding model {}, this build uses {}: replacing it with vectors of another model needs --force-rebuild (searches then need the new model too)",
                out.display(),
                old.describe(),
                new.describe()
            );
        }
        if !same {
            return Ok(Reuse::new());
        }
    }
    if !cfg.incremental || model.is_none() || header.embedding.is_none() {
        return Ok(Reuse::new());
    }
    let old = match docloupe::bundle::decode(&bytes) {
        Ok(b) => b,
        Err(e) => {
            warnings.push(format!(
                "{}: the previous bundle cannot be reused ({e}); every chunk is embedded",
                out.display()
            ));
            return Ok(Reuse::new());
        }
    };
    let Some(vectors) = &old.vectors else {
        return Ok(Reuse::new());
    };
    let mut reuse = Reuse::with_capacity(old.docs.chunks.len());
    for q in vectors.vectors() {
        let i = q.chunk as usize;
        let (Some(meta), Some(text)) = (old.docs.chunks.get(i), old.text.texts.get(i)) else {
            continue;
        };
        let input = embedding_input(&meta.section_path, text);
        reuse.insert(
            meta.id.clone(),
            (
                sha256_hex(input.as_bytes()),
                Embedding::Quantized {
                    scale: q.scale,
                    data: q.data.clone(),
                },
            ),
        );
    }
    Ok(reuse)
}

/// A document read and chunked, before embedding, with the citation key its front matter
/// names.
type ReadDocument = (SourceDocument, Vec<PlannedChunk>, Option<String>);

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
    let limit = file.format.max_bytes();
    if bytes.len() as u64 > limit {
        warnings.push(format!(
            "{}: skipped, {} bytes is over the {limit} byte limit",
            file.rel,
            bytes.len(),
        ));
        return None;
    }
    let stem = Path::new(&file.rel)
        .file_stem()
        .map_or_else(|| file.rel.clone(), |s| s.to_string_lossy().into_owned());
    let converted = match convert(file.format, &bytes, &stem, &file.rel, warnings) {
        Ok(c) => c,
        Err(why) => {
            warnings.push(format!("{}: skipped, {why}", file.rel));
            return None;
        }
    };
    let doc = converted.doc;
    let paged = !converted.page_map.pages.is_empty();
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
    if paged {
        // A PDF viewer opens `file.pdf#page=N` at the page: the anchor a result links to.
        for c in &mut chunks {
            if let Some(span) = c.page_span {
                c.anchor = format!("page={}", span.start);
            }
        }
    }
    let lang = cfg.lang.or(doc.front.lang).unwrap_or_else(|| {
        if file.format.is_text() {
            Language::detect(&String::from_utf8_lossy(&bytes))
        } else {
            let text: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
            Language::detect(&text.join("\n"))
        }
    });
    let mut tags = doc.front.tags.clone();
    if let Some(kind) = &doc.front.kind {
        tags.push(format!("type:{kind}"));
        tags.sort();
        tags.dedup();
    }
    let source = SourceDocument {
        path: file.rel.clone(),
        doc_id: converted.doc_id,
        title: doc.title,
        description: doc.front.description,
        doc_type: file.format.doc_type().into(),
        date: doc.front.date,
        tags,
        lang,
        citation: None,
        chunks: Vec::new(),
    };
    Some((source, chunks, doc.front.citekey))
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
