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

pub struct BuildConfig {
    pub input: PathBuf,
    pub output: PathBuf,
    pub project: Option<String>,
    /// The embedding model, or none (fulltext only), or the choice left to the collection.
    pub model: ModelChoice,
    pub lang: Option<Language>,
    pub compact_threshold: usize,
    /// Keep the vectors at int8 instead of the 4-bit form (comparisons only).
    pub int8_vectors: bool,
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
    /// What converting one PDF, DOCX or spreadsheet may take (a child process each).
    pub convert_limits: crate::isolate::Limits,
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
        vec![crate::ingest::single_file(&cfg.input)?]
    } else {
        let found = discover_all(&cfg.input, &mut warnings);
        if let Some(summary) = found.unread_summary() {
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
        found.files
    };
    if files.is_empty() {
        bail!(
            "no documents ({}) found under {}",
            crate::ingest::READ_EXTENSIONS,
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
        int8_vectors: cfg.int8_vectors,
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
    let (mut documents_chunked, mut documents_cited) = (0, 0);
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
                let input = embedding_input(&c.section_path, &c.text);
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
                    section_path: c.section_path,
                    anchor: c.anchor,
                    line_start: c.line_start,
                    line_end: c.line_end,
                    page_span: c.page_span,
                    text: c.text,
                    embedding: vectors.next().expect("one vector slot per chunk"),
                })
                .collect();
            match bundle.add(doc) {
                Ok(()) => {
                    documents_cited += usize::from(cited);
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

/// Reusable vectors by the sha256 of the text they were embedded from. A vector is a
/// function of that text alone (one chunk per model call), so any chunk with the same text
/// (moved, renamed, or copied to another file) takes it, and a changed text never does.
#[derive(Default)]
struct Reuse {
    /// One copy of each distinct vector of the previous bundle, by the sha256 of the text it
    /// was embedded from (its row in `stored`).
    vectors: HashMap<[u8; 32], u32>,
    stored: Option<Vectors>,
    /// The previous bundle's documents, chunk metadata and texts, from which the chunk plan of
    /// a file whose path and bytes are unchanged is taken over (a file cut by the same builder
    /// and model into the same chunks) instead of tokenizing it again (most of an incremental
    /// build's time once nothing needs embedding). Kept as the bundle writes them and read a
    /// document at a time: held as plans, with the previous bundle decoded beside them, an
    /// incremental build over 2.24M chunks took 5.1 GB.
    plans: Option<(PackedDocs, TextSection)>,
}

impl Reuse {
    fn new() -> Reuse {
        Reuse::default()
    }

    /// The previous bundle's document at `path`, if its bytes (`doc_id`) are unchanged.
    fn unchanged(&self, path: &str, doc_id: &str) -> Option<usize> {
        let (docs, _) = self.plans.as_ref()?;
        let documents = docs.documents();
        let d = documents
            .binary_search_by(|doc| doc.path.as_str().cmp(path))
            .ok()?;
        (documents[d].doc_id == doc_id).then_some(d)
    }

    /// The previous plan of the file at `path` if its bytes (`doc_id`) are unchanged (`None`
    /// also when the previous bundle cannot give it back: the file is then cut again).
    fn plan(&self, path: &str, doc_id: &str) -> Option<Vec<PlannedChunk>> {
        let d = self.unchanged(path, doc_id)?;
        let (docs, text) = self.plans.as_ref()?;
        let metas = docs.chunks(d).ok()?;
        let first = docs.documents()[d].first_chunk as usize;
        // A reader of its own: each plan inflates its blocks and lets them go.
        let texts = TextReader::new(text)
            .range(first..first + metas.len())
            .ok()?;
        Some(
            metas
                .into_iter()
                .zip(texts)
                .map(|(m, text)| PlannedChunk {
                    section_path: m.section_path,
                    anchor: m.anchor,
                    line_start: m.line_start,
                    line_end: m.line_end,
                    page_span: m.page_span,
                    text,
                })
                .collect(),
        )
    }

    /// The previous bundle's vector for a text of this sha256.
    fn vector(&self, hash: &[u8; 32]) -> Option<Embedding> {
        let row = *self.vectors.get(hash)?;
        let q = self.stored.as_ref()?.get(row as usize);
        Some(Embedding::Quantized {
            scale: q.scale,
            data: q.data.into(),
        })
    }
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

/// `--out` must name a regular file or nothing: the bundle is renamed over it, which would
/// replace a device (`/dev/null`), a FIFO or a link with a file (and reading a FIFO first
/// would block forever).
fn check_output_file(out: &Path) -> Result<()> {
    let meta = match std::fs::symlink_metadata(out) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => bail!("cannot write {}: {e}", out.display()),
    };
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(());
    }
    let what = if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_dir() {
        "a folder"
    } else {
        "a device, FIFO or socket"
    };
    bail!(
        "refusing to write {}: it is {what}, not a regular file (--out names the bundle file to write)",
        out.display()
    )
}

/// The bundle at `out`, read as far as the build needs it: its header alone unless `whole`
/// (an incremental build reads its sections too). `None` when there is no file. Opened without
/// following a link or blocking, checked to be a regular file of at most the size its header
/// gives, and read no further than that: a sparse 2 GiB file at `--out` costs nothing.
fn read_previous(out: &Path, whole: bool) -> std::io::Result<Option<Previous>> {
    use std::io::Read;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let mut f = match options.open(out) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let size = f.metadata()?.len();
    let mut prefix = Vec::new();
    (&mut f)
        .take(docloupe::bundle::HEADER_START as u64)
        .read_to_end(&mut prefix)?;
    if prefix.len() < docloupe::bundle::HEADER_START
        || &prefix[..8] != docloupe::bundle::MAGIC.as_slice()
    {
        return Ok(Some(Previous::Other { size }));
    }
    let header_len = u32::from_le_bytes(prefix[12..16].try_into().expect("4 bytes")) as u64;
    let wanted = if whole {
        size
    } else {
        (docloupe::bundle::HEADER_START as u64 + header_len).min(size)
    };
    let mut bytes = prefix;
    bytes.reserve(wanted.saturating_sub(bytes.len() as u64) as usize);
    f.take(wanted - bytes.len() as u64)
        .read_to_end(&mut bytes)?;
    Ok(Some(Previous::Bundle(bytes)))
}

/// Keeps the first [`docloupe::bundle::HEADER_START`] bytes written to it.
struct Prefix<'a>(&'a mut Vec<u8>);

impl Write for Prefix<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = docloupe::bundle::HEADER_START.saturating_sub(self.0.len());
        self.0.extend_from_slice(&buf[..room.min(buf.len())]);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What is at `--out` before a build.
enum Previous {
    /// A file that starts as a bundle does: its header, or all of it.
    Bundle(Vec<u8>),
    /// Some other file (`size` bytes).
    Other { size: u64 },
}

/// Looks at the bundle already at the output path. Refuses to replace one built with
/// another embedding model, or a file that is not a bundle, without `--force-rebuild`; with
/// `--incremental`, returns its vectors for reuse.
fn previous_bundle(
    cfg: &BuildConfig,
    model: Option<&ModelInfo>,
    warnings: &mut Vec<String>,
) -> Result<Reuse> {
    let out = &cfg.output;
    // Its vectors and plans are read only for an incremental build with a model.
    let whole = cfg.incremental && model.is_some();
    let bytes = match read_previous(out, whole) {
        Ok(Some(Previous::Bundle(b))) => b,
        Ok(None) => {
            if cfg.incremental {
                tracing::info!(
                    "{}: no previous bundle, building from scratch",
                    out.display()
                );
            }
            return Ok(Reuse::new());
        }
        // An empty file holds nothing to lose (a placeholder, `touch`ed or made by mktemp).
        Ok(Some(Previous::Other { size })) if size == 0 || cfg.force_rebuild => {
            return Ok(Reuse::new())
        }
        Ok(Some(Previous::Other { .. })) => bail!(
            "{} exists and is not a docloupe bundle; refusing to overwrite it (pass --force-rebuild to replace it)",
            out.display()
        ),
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
    // Its vectors and plans cannot be checked against the documents without redoing what
    // reusing them saves: they are taken only from a bundle this machine's builder wrote
    // there, unchanged since (`trust.rs`).
    // The header's own sha256 was checked by `decode_header`; every section read below is
    // checked against the header.
    let sealed = crate::trust::seal_of(&bytes).map(|seal| crate::trust::recorded(&seal));
    if !cfg.trust_previous && !matches!(sealed, Ok(true)) {
        warnings.push(format!(
            "{}: the previous bundle is not one index-builder wrote on this machine (or it changed since); nothing is reused and every chunk is embedded (--trust-previous reuses from a bundle of yours all the same)",
            out.display()
        ));
        return Ok(Reuse::new());
    }
    // Read in steps, each let go before the next, so that what is kept beside the new
    // build is one copy of each distinct vector, the chunk metadata as written and the
    // deflated texts (decoded whole, the previous bundle took an incremental build over 2.24M
    // chunks to 5.1 GB). First the sha256 of the text each chunk's vector was embedded from.
    let cannot = |e: docloupe::Error, warnings: &mut Vec<String>| {
        warnings.push(format!(
            "{}: the previous bundle cannot be reused ({e}); every chunk is embedded",
            out.display()
        ));
        Reuse::new()
    };
    let read = || -> Result<_, docloupe::Error> {
        let text = docloupe::bundle::decode_text(&bytes)?;
        let docs = docloupe::bundle::packed_docs(&bytes)?;
        let mut reader = TextReader::new(&text);
        let mut hashes: Vec<[u8; 32]> = Vec::new();
        let mut hash = |path: &[String], i: usize| -> Result<(), docloupe::Error> {
            let input = embedding_input(path, reader.get(i)?);
            hashes.push(Sha256::digest(input.as_bytes()).into());
            Ok(())
        };
        match &docs {
            // Formats 5 on: the chunk metadata as written, a document at a time.
            Some(docs) => {
                for d in 0..docs.documents().len() {
                    let first = docs.documents()[d].first_chunk as usize;
                    for (k, meta) in docs.chunks(d)?.iter().enumerate() {
                        hash(&meta.section_path, first + k)?;
                    }
                }
            }
            // Before: the bundle decoded without its vectors.
            None => {
                let old = docloupe::bundle::decode_lexical(&bytes)?;
                for (i, meta) in old.docs.chunks.iter().enumerate() {
                    hash(&meta.section_path, i)?;
                }
            }
        }
        drop(reader);
        Ok((hashes, docs, text))
    };
    let (hashes, old_docs, old_text) = match read() {
        Ok(read) => read,
        Err(e) => return Ok(cannot(e, warnings)),
    };
    release_freed_memory();
    // Then the vectors, keeping the first of each distinct text's.
    let vectors = match docloupe::bundle::decode_vectors(&bytes) {
        Ok(Some(v)) => v,
        Ok(None) => return Ok(Reuse::new()),
        Err(e) => return Ok(cannot(e, warnings)),
    };
    let mut reuse = Reuse::new();
    let mut stored = Vectors::new(model.map_or(0, |m| m.dims as usize));
    for q in vectors.vectors() {
        let Some(hash) = hashes.get(q.chunk as usize) else {
            continue;
        };
        if let std::collections::hash_map::Entry::Vacant(slot) = reuse.vectors.entry(*hash) {
            slot.insert(stored.len() as u32);
            if let Err(e) = stored.push(q.chunk, q.scale, &q.data) {
                return Ok(cannot(docloupe::Error::Corrupt(e), warnings));
            }
        }
    }
    drop(vectors);
    drop(hashes);
    reuse.stored = Some(stored);
    // The chunk metadata as written and the texts, for the plans (formats 5 on; an older
    // bundle's files are cut again).
    if header.builder == builder_id() {
        reuse.plans = old_docs.map(|docs| (docs, old_text));
    }
    Ok(reuse)
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
            if let Some(span) = c.page_span {
                c.anchor = format!("page={}", span.start);
            }
        }
    }
    chunks
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes to a temporary file beside `path`, syncs, then renames over it: readers see the old
/// bundle or the new one, never half of one. The temporary file is created exclusively under
/// a random name (`tempfile`), so a symlink planted at a predictable name is never followed
/// (a `.name.PID.tmp` opened with `File::create` truncated its target); the directory is
/// synced after the rename so the new name survives a crash.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomically_with(path, |f| f.write_all(bytes))
}

/// [`write_atomically`], the bytes written by `write`.
pub fn write_atomically_with(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Result<()> {
    let dir = parent_dir(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle".into());
    let result = (|| -> std::io::Result<()> {
        let mut tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(&dir)?;
        write(tmp.as_file_mut())?;
        readable(tmp.as_file(), 0o644)?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        sync_dir(&dir)
    })();
    result.with_context(|| format!("cannot write {}", path.display()))
}

/// The file `write_dir_atomically` leaves in every directory it writes, naming the command:
/// only a directory holding it (or an empty one) is ever replaced.
pub const OUTPUT_MARKER: &str = ".docloupe-output";

/// Writes `files` (relative paths, `/`-separated) into a fresh directory beside `dir`, syncs
/// them, then swaps it in for `dir`: readers see the old set of files or the new one, never a
/// mix (a split bundle's shards must all come from one bundle). See [`DirWriter`].
pub fn write_dir_atomically(dir: &Path, files: &[(String, Vec<u8>)], what: &str) -> Result<()> {
    let mut out = DirWriter::new(dir, what)?;
    for (file, bytes) in files {
        out.write(file, bytes)?;
    }
    out.finish()
}

/// A directory written file by file and swapped in for `dir` as a whole by
/// [`DirWriter::finish`] (dropped unfinished, the fresh directory is removed and `dir` is
/// untouched). The fresh directory has a random name beside `dir` and is ours alone; an
/// existing `dir` is replaced only when it is empty or an earlier output of `what` (`split`,
/// `site`: its [`OUTPUT_MARKER`] says so), never a folder of someone's files. Files are
/// written as they come, so a writer never holds them all (a split of 100,000 documents is
/// 650 MB of files).
pub struct DirWriter {
    dir: PathBuf,
    what: String,
    replaces: bool,
    tmp: tempfile::TempDir,
}

impl DirWriter {
    pub fn new(dir: &Path, what: &str) -> Result<DirWriter> {
        let parent = parent_dir(dir);
        std::fs::create_dir_all(&parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
        let meta = std::fs::symlink_metadata(dir).ok();
        if let Some(meta) = &meta {
            let ours = meta.is_dir()
                && (std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none())
                    || std::fs::read_to_string(dir.join(OUTPUT_MARKER))
                        .is_ok_and(|m| m.trim() == format!("index-builder {what}")));
            if !ours {
                bail!(
                    "refusing to replace {}: it is not empty and not an earlier `index-builder {what}` output (remove it, or choose another --out)",
                    dir.display()
                );
            }
        }
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{}.", dir_name(dir, what)))
            .suffix(".tmp")
            .tempdir_in(&parent)
            .with_context(|| format!("cannot write {}", dir.display()))?;
        Ok(DirWriter {
            dir: dir.to_owned(),
            what: what.to_owned(),
            replaces: meta.is_some(),
            tmp,
        })
    }

    /// Writes and syncs one file (a relative, `/`-separated path) into the fresh directory.
    pub fn write(&mut self, file: &str, bytes: &[u8]) -> Result<()> {
        let target = self.tmp.path().join(file);
        (|| -> std::io::Result<()> {
            if let Some(sub) = target.parent() {
                std::fs::create_dir_all(sub)?;
            }
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&target)?;
            f.write_all(bytes)?;
            readable(&f, 0o644)?;
            f.sync_all()
        })()
        .with_context(|| format!("cannot write {}", self.dir.display()))
    }

    /// Adds the [`OUTPUT_MARKER`] and swaps the fresh directory in for `dir`.
    pub fn finish(mut self) -> Result<()> {
        let marker = format!("index-builder {}\n", self.what);
        self.write(OUTPUT_MARKER, marker.as_bytes())?;
        let DirWriter {
            dir,
            what,
            replaces,
            tmp,
        } = self;
        let (parent, name) = (parent_dir(&dir), dir_name(&dir, &what));
        let result = (|| -> std::io::Result<()> {
            readable(&std::fs::File::open(tmp.path())?, 0o755)?;
            let old = replaces.then(|| parent.join(format!(".{name}.{:016x}.old", rand_suffix())));
            if let Some(old) = &old {
                std::fs::rename(&dir, old)?;
            }
            let tmp = tmp.keep();
            if let Err(e) = std::fs::rename(&tmp, &dir) {
                if let Some(old) = &old {
                    let _ = std::fs::rename(old, &dir);
                }
                let _ = std::fs::remove_dir_all(&tmp);
                return Err(e);
            }
            sync_dir(&parent)?;
            if let Some(old) = &old {
                std::fs::remove_dir_all(old)?;
            }
            Ok(())
        })();
        result.with_context(|| format!("cannot write {}", dir.display()))
    }
}

/// `dir`'s own name, for the names of its fresh and old copies beside it.
fn dir_name(dir: &Path, what: &str) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| what.into())
}

/// A random 64-bit number for a temporary name (from the standard library's randomly keyed
/// hasher: no extra crate).
fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::process::id() as u64);
    h.finish()
}

/// Sets `f`'s permission bits (temporary files are created 0600; a bundle or a site is read
/// by other users, such as a web server).
fn readable(f: &std::fs::File, mode: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = (f, mode);
    Ok(())
}

/// Makes a rename in `dir` durable.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
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

#[cfg(test)]
mod tests;
