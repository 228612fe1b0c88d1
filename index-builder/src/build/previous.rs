//! The bundle a build replaces: read as far as its header (or whole for `--incremental`), and
//! what an incremental build reuses of it (chunks and vectors of unchanged documents).

use super::*;

/// Reusable vectors by the sha256 of the text they were embedded from. A vector is a
/// function of that text alone (one chunk per model call), so any chunk with the same text
/// (moved, renamed, or copied to another file) takes it, and a changed text never does.
#[derive(Default)]
pub(super) struct Reuse {
    /// One copy of each distinct vector of the previous bundle, by the sha256 of the text it
    /// was embedded from (its row in `stored`).
    pub(super) vectors: HashMap<[u8; 32], u32>,
    pub(super) stored: Option<Vectors>,
    /// The previous bundle's documents, chunk metadata and texts, from which the chunk plan of
    /// a file whose path and bytes are unchanged is taken over (a file cut by the same builder
    /// and model into the same chunks) instead of tokenizing it again (most of an incremental
    /// build's time once nothing needs embedding). Kept as the bundle writes them and read a
    /// document at a time: held as plans, with the previous bundle decoded beside them, an
    /// incremental build over 2.24M chunks took 5.1 GB.
    pub(super) plans: Option<(PackedDocs, TextSection)>,
}

impl Reuse {
    pub(super) fn new() -> Reuse {
        Reuse::default()
    }

    /// The previous bundle's document at `path`, if its bytes (`doc_id`) are unchanged.
    pub(super) fn unchanged(&self, path: &str, doc_id: &str) -> Option<usize> {
        let (docs, _) = self.plans.as_ref()?;
        let documents = docs.documents();
        let d = documents
            .binary_search_by(|doc| doc.path.as_str().cmp(path))
            .ok()?;
        (documents[d].doc_id == doc_id).then_some(d)
    }

    /// The previous plan of the file at `path` if its bytes (`doc_id`) are unchanged (`None`
    /// also when the previous bundle cannot give it back: the file is then cut again).
    pub(super) fn plan(&self, path: &str, doc_id: &str) -> Option<Vec<PlannedChunk>> {
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
                    location: m.location,
                    text,
                })
                .collect(),
        )
    }

    /// The previous bundle's vector for a text of this sha256.
    pub(super) fn vector(&self, hash: &[u8; 32]) -> Option<Embedding> {
        let row = *self.vectors.get(hash)?;
        let q = self.stored.as_ref()?.get(row as usize);
        Some(Embedding::Quantized {
            scale: q.scale,
            data: q.data.into(),
        })
    }
}

/// The bundle at `out`, read as far as the build needs it: its header alone unless `whole`
/// (an incremental build reads its sections too). `None` when there is no file. Opened without
/// following a link or blocking, checked to be a regular file of at most the size its header
/// gives, and read no further than that: a sparse 2 GiB file at `--out` costs nothing.
pub(super) fn read_previous(out: &Path, whole: bool) -> std::io::Result<Option<Previous>> {
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
pub(super) struct Prefix<'a>(pub(super) &'a mut Vec<u8>);

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
pub(super) enum Previous {
    /// A file that starts as a bundle does: its header, or all of it.
    Bundle(Vec<u8>),
    /// Some other file (`size` bytes).
    Other { size: u64 },
}

/// Looks at the bundle already at the output path. Refuses to replace one built with
/// another embedding model, or a file that is not a bundle, without `--force-rebuild`; with
/// `--incremental`, returns its vectors for reuse.
pub(super) fn previous_bundle(
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
        // The chunk metadata as written, a document at a time.
        for d in 0..docs.documents().len() {
            let first = docs.documents()[d].first_chunk as usize;
            for (k, meta) in docs.chunks(d)?.iter().enumerate() {
                hash(&meta.location.section_path, first + k)?;
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
    // The chunk metadata as written and the texts, for the plans (a bundle of another
    // builder has its files cut again).
    if header.builder == builder_id() {
        reuse.plans = Some((old_docs, old_text));
    }
    Ok(reuse)
}
