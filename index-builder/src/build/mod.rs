//! The build pipeline: ingest → chunk → embed → index → bundle → write (atomically).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use std::collections::HashMap;

use anyhow::{bail, Context, Result};
use docloupe::analyze::Language;
use docloupe::bundle::{
    embedding_input, BuildOptions, BundleBuilder, Citation, Embedding, PackedDocs, SourceChunk,
    SourceDocument, TextReader, TextSection,
};
use docloupe::embed::{Embedder, ModelFiles, ModelInfo};
use docloupe::index::vector::Vectors;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::chunk::{chunk_section, EstimateCounter, PlannedChunk, TokenCounter};
use crate::cite::{MetadataWarning, References};
use crate::ingest::discover_all;
use crate::isolate::convert_isolated;

mod previous;

use crate::output::*;
use previous::*;

pub struct BuildConfig {
    pub input: PathBuf,
    pub output: PathBuf,
    pub project: Option<String>,
    /// The embedding model, or none (fulltext only), or the choice left to the collection.
    pub model: ModelChoice,
    pub lang: Option<Language>,
    pub compact_threshold: usize,
    /// Files read, chunked and embedded together ([`BATCH_FILES`]; at least 1).
    pub batch_files: usize,
    pub progress: bool,
    /// A CSL-JSON bibliography to match documents against.
    pub references: Option<References>,
    /// Take the vectors of unchanged chunks from the bundle already at `output`.
    pub incremental: bool,
    /// Replace `output` even when it was built with another embedding model (or is not a
    /// bundle at all).
    pub force_rebuild: bool,
    /// With `incremental`: reuse from the previous bundle without its seal (`trust.rs`).
    pub trust_previous: bool,
    /// Name every file of an unknown type in the warnings, not only their counts.
    pub list_skipped: bool,
    /// Only documents of these formats (`--formats html`: a built site's pages, not its
    /// `robots.txt`); `None` reads every format.
    pub formats: Option<Vec<crate::ingest::Format>>,
    /// What converting one PDF, DOCX or spreadsheet may take (a child process each).
    pub convert_limits: crate::isolate::Limits,
    /// `--access`: which groups may read which documents, by path.
    pub access: Option<crate::access::AccessRules>,
}

/// Which embedding model a build uses.
pub enum ModelChoice {
    /// No vectors: fulltext only (`--no-embeddings`).
    None,
    /// This one (`--model minilm|e5-multilingual|DIR`).
    Fixed(Box<Embedder>),
    /// `--model auto`: the multilingual model when at least [`AUTO_MULTILINGUAL_SHARE`] of
    /// the documents are not in English, else the English one (smaller and faster).
    Auto {
        english: PathBuf,
        multilingual: PathBuf,
    },
}

/// The share of non-English documents from which `--model auto` takes the multilingual model.
pub const AUTO_MULTILINGUAL_SHARE: f64 = 0.05;

/// Files read, chunked and embedded together before their documents go into the bundle: work
/// for every core, while the text held at once stays small (the batch's own). The bundle is
/// the same for any batch size.
pub const BATCH_FILES: usize = 1024;

/// The JSON report printed after a build.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestResult {
    pub chunks_written: usize,
    pub documents_processed: usize,
    pub duration_seconds: f64,
    pub embed_model: Option<String>,
    /// Why that model (`--model auto` says what it counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embed_model_reason: Option<String>,
    pub bundle_path: String,
    pub bundle_bytes: usize,
    /// Chunks run through the embedding model in this build: one per distinct text.
    pub chunks_embedded: usize,
    /// Chunks whose vectors were taken over from the previous bundle (`--incremental`).
    pub chunks_reused: usize,
    /// Chunks whose text (breadcrumb and body) another chunk of this build has word for word,
    /// so they took that chunk's vector instead of running the model again.
    pub chunks_shared: usize,
    /// Documents cut into chunks in this build; with `--incremental` the others (same path,
    /// same bytes) took their chunks over from the previous bundle.
    pub documents_chunked: usize,
    /// Documents matched to an entry of `--references`.
    pub documents_cited: usize,
    /// Documents only some groups of readers may see (`--access`, front matter `access:`).
    pub documents_restricted: usize,
    pub warnings: Vec<String>,
    /// Files of no format the builder reads, counted by extension (`--list-skipped` names
    /// each in `warnings`).
    pub unknown_types_skipped: std::collections::BTreeMap<String, usize>,
    /// Per-document metadata problems (`MetadataMissing`), each with a hint.
    pub metadata_warnings: Vec<MetadataWarning>,
}

/// Counts tokens with the embedding model's own tokenizer.
pub struct TokenizerCounter<'a>(pub &'a Embedder);

impl TokenCounter for TokenizerCounter<'_> {
    fn count(&self, text: &str) -> usize {
        self.0
            .count_tokens(text)
            .unwrap_or_else(|_| EstimateCounter.count(text))
    }
}

pub fn run(mut cfg: BuildConfig) -> Result<IngestResult> {
    let started = Instant::now();
    let mut warnings = Vec::new();
    let single = cfg.input.is_file();
    if !single && !cfg.input.is_dir() {
        bail!(
            "input {} does not exist or is neither a folder nor a file",
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
    check_output_file(&cfg.output)?;

    let mut unread_types = std::collections::BTreeMap::new();
    let files = if single {
        let file = crate::ingest::single_file(&cfg.input)?;
        if let Some(keep) = cfg.formats.as_ref().filter(|k| !k.contains(&file.format)) {
            bail!(
                "{} is a {} document, and --formats asks for {} only",
                cfg.input.display(),
                file.format.doc_type(),
                format_list(keep)
            );
        }
        vec![file]
    } else {
        let mut found = discover_all(&cfg.input, &mut warnings);
        if let Some(keep) = &cfg.formats {
            let (kept, left): (Vec<_>, Vec<_>) = std::mem::take(&mut found.files)
                .into_iter()
                .partition(|f| keep.contains(&f.format));
            found.files = kept;
            if !left.is_empty() {
                let mut by_type = std::collections::BTreeMap::<&str, usize>::new();
                for f in &left {
                    *by_type.entry(f.format.doc_type()).or_default() += 1;
                }
                let counts: Vec<String> =
                    by_type.iter().map(|(t, n)| format!(".{t} ×{n}")).collect();
                warnings.push(format!(
                    "{} file{} left out by --formats {}: {}",
                    left.len(),
                    if left.len() == 1 { "" } else { "s" },
                    format_list(keep),
                    counts.join(", ")
                ));
            }
        }
        // With --formats the rest of the folder (a site's scripts, fonts, images) is left out
        // on purpose: no warning for it.
        if let Some(summary) = found.unread_summary().filter(|_| cfg.formats.is_none()) {
            warnings.push(summary);
        }
        for (ext, paths) in &found.unread {
            if cfg.list_skipped {
                warnings.extend(
                    paths
                        .iter()
                        .map(|p| format!("{p}: skipped, index-builder does not read {ext} files")),
                );
            }
            unread_types.insert(ext.clone(), paths.len());
        }
        crate::convert::html::site_documents(found.files, &mut warnings)
    };
    if files.is_empty() {
        bail!(
            "no documents ({}) found under {}",
            match &cfg.formats {
                Some(keep) => format_list(keep),
                None => crate::ingest::read_extensions(),
            },
            cfg.input.display()
        );
    }
    // `--model auto` picks the model from every document's language, and chunking needs that
    // model's tokenizer: a first pass reads each file for its language alone. A binary format's
    // conversion (a child process each) is kept for the build; a text file is read again there.
    let choice = std::mem::replace(&mut cfg.model, ModelChoice::None);
    let mut ahead: Vec<Option<ReadAhead>> = Vec::new();
    let (embedder, embed_model_reason) = match choice {
        ModelChoice::None => (None, None),
        ModelChoice::Fixed(e) => (Some(*e), None),
        ModelChoice::Auto {
            english,
            multilingual,
        } => {
            let bar = progress_bar(cfg.progress, files.len() as u64, "languages");
            let seen: Vec<(Option<Language>, Option<ReadAhead>)> = files
                .par_iter()
                .map(|file| {
                    let mut w = Vec::new();
                    let doc = convert_file(file, &cfg, &mut w);
                    bar.inc(1);
                    let lang = doc.as_ref().map(|c| c.lang);
                    (lang, (!file.format.is_text()).then_some((doc, w)))
                })
                .collect();
            bar.finish_and_clear();
            let langs: Vec<Language> = seen.iter().filter_map(|s| s.0).collect();
            ahead = seen.into_iter().map(|s| s.1).collect();
            let other = langs.iter().filter(|&&l| l != Language::En).count();
            let share = other as f64 / langs.len().max(1) as f64;
            let (dir, why) = if share >= AUTO_MULTILINGUAL_SHARE {
                (multilingual, "multilingual")
            } else {
                (english, "English only")
            };
            let reason = format!(
                "auto: {other} of {} documents are not in English ({why} model)",
                langs.len()
            );
            let files = ModelFiles::from_dir(&dir).with_context(|| {
                format!("{reason}, but that model is missing (run `make models`, or pass --model)")
            })?;
            (Some(Embedder::new(&files)?), Some(reason))
        }
    };
    let model = embedder.as_ref().map(|e| e.info().clone());
    let reuse = previous_bundle(&cfg, model.as_ref(), &mut warnings)?;
    // Reading the previous bundle freed over a GB of small allocations.
    release_freed_memory();

    // Chunk to the model's window.
    let counter: Box<dyn TokenCounter + Sync> = match &embedder {
        Some(e) => Box::new(TokenizerCounter(e)),
        None => Box::new(EstimateCounter),
    };
    let max_tokens = embedder
        .as_ref()
        .map_or(256, |e| e.info().max_tokens as usize);
    let opts = BuildOptions {
        builder: builder_id(),
        project_id: cfg.project.clone(),
        model,
        compact_threshold: cfg.compact_threshold,
        int8_vectors: false,
    };

    // The documents go into the bundle a batch at a time, in path order: each batch read and
    // chunked, then embedded, on every core, and added before the next is read, so the
    // collection's text is never held whole (reading all 102,168 documents of the 100K
    // benchmark first took the process to 2.3 GB; the whole build now peaks at 0.8 GB, 1.6 GB
    // with vectors).
    let mut bundle = BundleBuilder::new(&opts);
    // Every distinct text is embedded once, whichever batch it comes in: versioned
    // documentation repeats most sections word for word (PowerShell-Docs keeps five copies of
    // each cmdlet page), and a vector is a function of its text alone (below). By the sha256
    // of the text, as `reuse` keys its vectors.
    let mut embedded: HashMap<[u8; 32], Embedding> = HashMap::new();
    let (mut chunks_embedded, mut chunks_reused, mut chunks_shared) = (0, 0, 0);
    let (mut documents_chunked, mut documents_cited, mut documents_restricted) = (0, 0, 0);
    let mut metadata_warnings = Vec::new();
    let bar = progress_bar(cfg.progress, files.len() as u64, "building");
    let batch_files = cfg.batch_files.max(1);
    for (b, batch) in files.chunks(batch_files).enumerate() {
        let first = b * batch_files;
        let batch_ahead: Vec<_> = (first..first + batch.len())
            .map(|i| ahead.get_mut(i).and_then(Option::take))
            .collect();
        let read: Vec<(Option<ReadDocument>, Vec<String>)> = batch
            .par_iter()
            .zip(batch_ahead)
            .map(|(file, ahead)| {
                let (converted, mut w) = ahead.unwrap_or_else(|| {
                    let mut w = Vec::new();
                    (convert_file(file, &cfg, &mut w), w)
                });
                let doc = converted.and_then(|c| {
                    plan_document(c, &cfg, &reuse, max_tokens, counter.as_ref(), &mut w)
                });
                (doc, w)
            })
            .collect();
        let mut docs = Vec::new();
        let mut planned = Vec::new();
        for (doc, w) in read {
            warnings.extend(w);
            if let Some((mut doc, chunks, citekey)) = doc {
                let mut cited = false;
                if let Some(refs) = &cfg.references {
                    match refs.find(&doc.path, citekey.as_deref()) {
                        Some(c) => {
                            cite(&mut doc, c.clone());
                            cited = true;
                        }
                        None => metadata_warnings.push(refs.missing(&doc.path)),
                    }
                }
                let chunked = reuse.unchanged(&doc.path, &doc.doc_id).is_none();
                docs.push((doc, cited, chunked));
                planned.push(chunks);
            }
        }

        enum Slot {
            Ready(Embedding),
            /// Index into `pending`.
            Pending(usize),
        }
        let mut slots: Vec<Slot> = Vec::new();
        let mut pending: Vec<String> = Vec::new();
        let mut pending_by_hash: HashMap<[u8; 32], usize> = HashMap::new();
        if embedder.is_some() {
            for c in planned.iter().flatten() {
                let input = embedding_input(&c.location.section_path, &c.text);
                let hash: [u8; 32] = Sha256::digest(input.as_bytes()).into();
                if let Some(e) = reuse.vector(&hash) {
                    chunks_reused += 1;
                    slots.push(Slot::Ready(e));
                } else if let Some(e) = embedded.get(&hash) {
                    chunks_shared += 1;
                    slots.push(Slot::Ready(e.clone()));
                } else if let Some(&i) = pending_by_hash.get(&hash) {
                    chunks_shared += 1;
                    slots.push(Slot::Pending(i));
                } else {
                    pending_by_hash.insert(hash, pending.len());
                    slots.push(Slot::Pending(pending.len()));
                    pending.push(input);
                }
            }
        }
        // One chunk per model call: tract's kernels round differently for different batch
        // shapes, so only unbatched embedding makes a vector a function of its text alone
        // (identical chunks get identical vectors, and vectors can be reused across builds).
        // It is also faster here: on 1,535 rust-book chunks, 63 s unbatched vs 73 s in
        // batches of 16. Each vector is quantized as soon as it comes (quantizing is a
        // function of the vector alone), and the chunks that share a text share its one copy
        // (`Embedding::Quantized` holds an `Arc`).
        let vectors: Vec<Option<Embedding>> = match &embedder {
            None => vec![None; planned.iter().map(Vec::len).sum()],
            Some(embedder) => {
                chunks_embedded += pending.len();
                let fresh = pending
                    .into_par_iter()
                    .map(|text| Ok(Embedding::quantized(&embedder.embed_passage(&text)?)))
                    .collect::<Result<Vec<_>, docloupe::Error>>()?;
                for (hash, i) in pending_by_hash {
                    embedded.insert(hash, fresh[i].clone());
                }
                slots
                    .into_iter()
                    .map(|slot| {
                        Some(match slot {
                            Slot::Ready(e) => e,
                            Slot::Pending(i) => fresh[i].clone(),
                        })
                    })
                    .collect()
            }
        };
        let mut vectors = vectors.into_iter();
        for ((mut doc, cited, chunked), chunks) in docs.into_iter().zip(planned) {
            doc.chunks = chunks
                .into_iter()
                .map(|c| SourceChunk {
                    location: c.location,
                    text: c.text,
                    embedding: vectors.next().expect("one vector slot per chunk"),
                })
                .collect();
            let restricted = !doc.access.is_empty();
            match bundle.add(doc) {
                Ok(()) => {
                    documents_cited += usize::from(cited);
                    documents_restricted += usize::from(restricted);
                    documents_chunked += usize::from(chunked);
                }
                // One document the bundle cannot hold: skipped, as any other unreadable one.
                Err(docloupe::Error::DocumentRefused { path, why }) => {
                    warnings.push(format!("{path}: skipped, {why}"));
                }
                Err(e) => return Err(e.into()),
            }
        }
        bar.inc(batch.len() as u64);
    }
    bar.finish_and_clear();
    drop(embedded);
    let documents_processed = bundle.documents();
    if documents_processed == 0 {
        bail!(
            "none of the {} documents under {} could be read",
            files.len(),
            cfg.input.display()
        );
    }
    let chunks_written = bundle.chunks();
    // Encoded a section at a time and written piece by piece: at 100K documents the bundle,
    // its sections' bytes side by side and a joined copy of them are each hundreds of MB.
    let bytes = bundle.encode(release_freed_memory)?;
    write_atomically_with(&cfg.output, |f| bytes.write_to(f))?;
    // What a later `--incremental` build checks before it takes anything over (`trust.rs`).
    let mut prefix = Vec::with_capacity(docloupe::bundle::HEADER_START);
    bytes
        .write_to(&mut Prefix(&mut prefix))
        .expect("a prefix is written to memory");
    let sealed = crate::trust::seal_of(&prefix).and_then(|seal| crate::trust::record(&seal));
    if let Err(e) = sealed {
        warnings.push(format!(
            "{}: its seal was not recorded ({e:#}); an --incremental build from it will reuse nothing",
            cfg.output.display()
        ));
    }

    Ok(IngestResult {
        chunks_written,
        documents_processed,
        duration_seconds: (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        embed_model: opts.model.map(|m| m.id),
        embed_model_reason,
        bundle_path: cfg.output.display().to_string(),
        bundle_bytes: bytes.len(),
        chunks_embedded,
        chunks_reused,
        chunks_shared,
        documents_chunked,
        documents_cited,
        documents_restricted,
        warnings,
        unknown_types_skipped: unread_types,
        metadata_warnings,
    })
}

/// Hands the heap pages freed by a phase of the build back to the system. glibc's allocator
/// keeps freed memory in the process, so what reading and chunking 110,651 documents had
/// freed (their parsed forms, 1.4 GB at the most) stayed resident through the rest of the
/// build and its write.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of the allocator's own heaps to the system;
    // it takes no pointers and touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Attaches a bibliography entry; its tags join the document's (for the `tags` filter).
fn cite(doc: &mut SourceDocument, c: Citation) {
    doc.tags.extend(c.tags.iter().cloned());
    doc.tags.sort();
    doc.tags.dedup();
    doc.citation = Some(c);
}

/// What `Header::builder` says: the version, and the chunker's, so that a plan is taken over
/// from a previous bundle only when the same code made it.
pub fn builder_id() -> String {
    format!(
        "index-builder {}, chunker {}",
        env!("CARGO_PKG_VERSION"),
        crate::chunk::CHUNKER_VERSION
    )
}

/// A document read and chunked, before embedding, with the citation key its front matter
/// names.
type ReadDocument = (SourceDocument, Vec<PlannedChunk>, Option<String>);

/// A file converted by `--model auto`'s first pass (a binary format's: converting it again
/// would mean another child process), with its warnings, for the build to take over.
type ReadAhead = (Option<Converted>, Vec<String>);

/// A file read and converted, before chunking (which needs the model's tokenizer).
struct Converted {
    file: crate::ingest::SourceFile,
    conversion: crate::convert::ConversionResult,
    /// The language of the file as a whole (front matter, `--lang`, or detected): what
    /// `--model auto` counts; the document's recorded language is decided from its chunks.
    lang: Language,
    /// A text file's language detected from its whole text, where neither `--lang` nor its
    /// front matter gives one (the text itself is not kept: at 100K documents the copies held
    /// between reading and chunking came to ~560 MB).
    detected: Option<Language>,
    /// The file's size in bytes (recorded: the same file, the same size).
    size: u64,
}

fn convert_file(
    file: &crate::ingest::SourceFile,
    cfg: &BuildConfig,
    warnings: &mut Vec<String>,
) -> Option<Converted> {
    let bytes = match crate::ingest::read_source(file, file.format.max_bytes()) {
        Ok(b) => b,
        Err(why) => {
            warnings.push(format!("{}: skipped, {why}", file.rel));
            return None;
        }
    };
    let stem = Path::new(&file.rel)
        .file_stem()
        .map_or_else(|| file.rel.clone(), |s| s.to_string_lossy().into_owned());
    let conversion = match convert_isolated(
        file.format,
        &bytes,
        &stem,
        &file.rel,
        warnings,
        cfg.convert_limits,
    ) {
        Ok(c) => c,
        Err(why) => {
            warnings.push(format!("{}: skipped, {why}", file.rel));
            return None;
        }
    };
    let given = cfg.lang.or(conversion.doc.front.lang);
    let detected = (given.is_none() && file.format.is_text())
        .then(|| Language::detect(&crate::convert::decode_text(&bytes).unwrap_or_default()));
    let lang = given.or(detected).unwrap_or_else(|| {
        let blocks: Vec<&str> = conversion
            .doc
            .sections
            .iter()
            .flat_map(|s| &s.blocks)
            .map(|b| b.text.as_str())
            .collect();
        Language::detect(&blocks.join("\n"))
    });
    Some(Converted {
        file: file.clone(),
        conversion,
        lang,
        detected,
        size: bytes.len() as u64,
    })
}

fn plan_document(
    converted: Converted,
    cfg: &BuildConfig,
    previous: &Reuse,
    max_tokens: usize,
    counter: &dyn TokenCounter,
    warnings: &mut Vec<String>,
) -> Option<ReadDocument> {
    let Converted {
        file,
        conversion,
        detected,
        size,
        ..
    } = converted;
    let paged = !conversion.page_map.pages.is_empty();
    let doc = conversion.doc;
    // Who may read it: the access file's rule for its path, and the page's own `access:`.
    // A page whose `access:` cannot be read is left out, never indexed for every reader.
    if let Some(why) = &doc.front.access_error {
        warnings.push(format!("{}: skipped, {why}", file.rel));
        return None;
    }
    let access: Vec<Vec<String>> = cfg
        .access
        .as_ref()
        .and_then(|rules| rules.groups_for(&file.rel))
        .map(<[String]>::to_vec)
        .into_iter()
        .chain(doc.front.access.clone())
        .collect();
    let chunks = match previous.plan(&file.rel, &conversion.doc_id) {
        Some(plan) => plan,
        None => plan_chunks(&doc, paged, max_tokens, counter),
    };
    if chunks.is_empty() {
        warnings.push(format!("{}: skipped, no text", file.rel));
        return None;
    }
    let lang = cfg.lang.or(doc.front.lang).or(detected).unwrap_or_else(|| {
        let text: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        Language::detect(&text.join("\n"))
    });
    let mut tags = doc.front.tags.clone();
    if let Some(kind) = &doc.front.kind {
        tags.push(format!("type:{kind}"));
        tags.sort();
        tags.dedup();
    }
    let source = SourceDocument {
        path: file.rel.clone(),
        doc_id: conversion.doc_id,
        title: doc.title,
        description: doc.front.description,
        doc_type: file.format.doc_type().into(),
        date: doc.front.date,
        created: doc.front.created,
        date_source: doc.front.date_source,
        file_size: Some(size),
        tags,
        lang,
        citation: None,
        access,
        chunks: Vec::new(),
    };
    Some((source, chunks, doc.front.citekey))
}

/// A converted document's chunks, as the build plans them: each section (breadcrumb = title +
/// headings) cut to `max_tokens`; in a paged document each chunk's anchor is its first page
/// (`page=N`, where a PDF viewer opens). `index-builder convert` shows the same.
pub fn plan_chunks(
    doc: &crate::ingest::ParsedDoc,
    paged: bool,
    max_tokens: usize,
    counter: &dyn TokenCounter,
) -> Vec<PlannedChunk> {
    let mut chunks = Vec::new();
    for section in &doc.sections {
        let mut path = vec![doc.title.clone()];
        path.extend(section.headings.iter().cloned());
        chunks.extend(chunk_section(section, &path, max_tokens, counter));
    }
    if paged {
        // A PDF viewer opens `file.pdf#page=N` at the page: the anchor a result links to.
        for c in &mut chunks {
            if let Some(span) = c.location.page_span {
                c.location.anchor = format!("page={}", span.start);
            }
        }
    }
    chunks
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

#[cfg(test)]
mod tests;

/// `html, pdf`: the formats `--formats` named.
fn format_list(formats: &[crate::ingest::Format]) -> String {
    let names: Vec<&str> = formats.iter().map(|f| f.doc_type()).collect();
    names.join(", ")
}
