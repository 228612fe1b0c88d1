//! Writing what the builder makes (bundles, split layouts, sites): files and folders replaced
//! atomically (a temporary sibling, then a rename), never through a planted symbolic link, and
//! only over what a build wrote before.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// `--out` must name a regular file or nothing: the bundle is renamed over it, which would
/// replace a device (`/dev/null`), a FIFO or a link with a file (and reading a FIFO first
/// would block forever).
pub fn check_output_file(out: &Path) -> Result<()> {
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

pub(crate) fn parent_dir(path: &Path) -> PathBuf {
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
    pub(crate) dir: PathBuf,
    pub(crate) what: String,
    pub(crate) replaces: bool,
    pub(crate) tmp: tempfile::TempDir,
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
pub(crate) fn dir_name(dir: &Path, what: &str) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| what.into())
}

/// A random 64-bit number for a temporary name (from the standard library's randomly keyed
/// hasher: no extra crate).
pub(crate) fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::process::id() as u64);
    h.finish()
}

/// Sets `f`'s permission bits (temporary files are created 0600; a bundle or a site is read
/// by other users, such as a web server).
pub(crate) fn readable(f: &std::fs::File, mode: u32) -> std::io::Result<()> {
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
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
