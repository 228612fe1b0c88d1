//! A large bundle's decoded vectors, kept between processes under
//! `$DOCLOUPE_CACHE/vectors` (`docloupe::index::vector::cache` lays them out). Decoding 2.24M
//! vectors (inflating, transposing, coding) took most of a one-off hybrid `docloupe search`;
//! reading them back as they lie in memory takes a fraction of it. A file is named by the
//! checksum the bundle's header records for its vectors section, so a bundle file and its
//! split folder share one, and a rebuilt bundle with other vectors never reads a stale one.
//!
//! `DOCLOUPE_VECTOR_CACHE`: `auto` (unset) keeps the vectors of bundles of at least
//! [`AUTO_MIN_CHUNKS`] chunks, `always` of every bundle with vectors, `off` of none. A file
//! that is refused (another version, damaged, another bundle's) is decoded past and
//! written again; one that cannot be written leaves a note on stderr and the answer as it is.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::PathBuf;

use docloupe::bundle::{Header, SectionKind};
use docloupe::index::vector::{cache, VectorIndex};

/// Chunks from which `auto` keeps a bundle's vectors: decoding 120K (en-large-cpp-docs)
/// takes about 0.06 s, 2.24M about 0.8 s on 2 cores.
pub(crate) const AUTO_MIN_CHUNKS: u32 = 500_000;

/// Files kept at most, the most recently used (each is about 250 bytes a vector).
const KEEP: usize = 4;

/// The variable that chooses.
pub(crate) const VARIABLE: &str = "DOCLOUPE_VECTOR_CACHE";

pub(crate) struct VectorCache {
    dir: PathBuf,
    path: PathBuf,
    key: [u8; 32],
    chunks: usize,
    dims: usize,
}

impl VectorCache {
    /// Where the vectors of the bundle with `header` are kept, when they are (see the module).
    pub(crate) fn for_header(header: &Header) -> Option<VectorCache> {
        let entry = header
            .sections
            .iter()
            .find(|s| s.kind == SectionKind::Vectors)?;
        let chunks = header.counts.chunks;
        let wanted = match std::env::var(VARIABLE).as_deref() {
            Ok("off") => false,
            Ok("always") => true,
            Ok("auto") | Err(_) => chunks >= AUTO_MIN_CHUNKS,
            Ok(other) => {
                eprintln!("docloupe: {VARIABLE}={other:?} is not auto, always or off; auto");
                chunks >= AUTO_MIN_CHUNKS
            }
        };
        if !wanted {
            return None;
        }
        let dir = docloupe::embed::cache_root().join("vectors");
        let hex: String = entry.sha256.iter().map(|b| format!("{b:02x}")).collect();
        Some(VectorCache {
            path: dir.join(format!("{hex}.v{}.vec", cache::VERSION)),
            dir,
            key: entry.sha256,
            chunks: chunks as usize,
            dims: header.embedding.as_ref().map_or(0, |m| m.dims as usize),
        })
    }

    /// The kept vectors, checked (checksums, then one per chunk of the model's width), or
    /// `None`: none kept, or refused (noted on stderr; the caller decodes and writes them
    /// again).
    pub(crate) fn read(&self) -> Option<VectorIndex> {
        // Only a plain file: a FIFO planted here would hold `open`, a symlink lead elsewhere.
        let meta = std::fs::symlink_metadata(&self.path).ok()?;
        if !meta.file_type().is_file() {
            return None;
        }
        let kept = File::open(&self.path)
            .map_err(|e| docloupe::Error::unreadable(&self.path, e))
            .and_then(|f| {
                let len = f
                    .metadata()
                    .map_err(|e| docloupe::Error::unreadable(&self.path, e))?;
                let index = cache::read(&mut BufReader::new(&f), len.len(), &self.key, &self.path)?;
                index.validate(self.chunks, self.dims)?;
                // The most recently used are the ones kept.
                let _ = File::options()
                    .write(true)
                    .open(&self.path)
                    .and_then(|w| w.set_modified(std::time::SystemTime::now()));
                Ok(index)
            });
        match kept {
            Ok(index) => Some(index),
            Err(e) => {
                eprintln!("docloupe: decoding the vectors again: {e}");
                None
            }
        }
    }

    /// Keeps the vectors `engine` decoded (see [`VectorCache::write`]).
    pub(crate) fn keep(&self, engine: &docloupe::Engine) {
        if let Some(index) = engine.vector_index() {
            self.write(index);
        }
    }

    /// Keeps `index` (written beside under a fresh name, then renamed over the file: a reader
    /// sees the old file or the new one); older files past the newest [`KEEP`] are removed.
    fn write(&self, index: &VectorIndex) {
        let written = (|| -> anyhow::Result<bool> {
            std::fs::create_dir_all(&self.dir)?;
            let tmp = tempfile::Builder::new()
                .prefix(".vectors.")
                .suffix(".tmp")
                .tempfile_in(&self.dir)?;
            let mut out = BufWriter::with_capacity(1 << 20, tmp.as_file());
            if !cache::write(index, &self.key, &mut out)? {
                return Ok(false);
            }
            out.flush()?;
            drop(out);
            tmp.persist(&self.path)?;
            Ok(true)
        })();
        match written {
            Ok(true) => self.evict(),
            Ok(false) => {}
            Err(e) => eprintln!(
                "docloupe: the decoded vectors are not kept in {}: {e:#}",
                self.dir.display()
            ),
        }
    }

    /// Removes the kept files past the [`KEEP`] most recently used.
    fn evict(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".vec"))
            .filter_map(|e| {
                // (`DirEntry::metadata` does not follow a symlink: only plain files go.)
                let meta = e.metadata().ok().filter(|m| m.file_type().is_file())?;
                Some((meta.modified().ok()?, e.path()))
            })
            .collect();
        files.sort_by(|a, b| b.cmp(a));
        for (_, path) in files.into_iter().skip(KEEP) {
            let _ = std::fs::remove_file(path);
        }
    }
}
