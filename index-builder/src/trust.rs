//! What `--incremental` may take over from the bundle already at `--out`: only a bundle this
//! machine's index-builder wrote, unchanged since.
//!
//! An incremental build reuses the previous bundle's vectors (by the text each was embedded
//! from) and the chunk plans of unchanged files. Neither can be checked against the documents
//! without redoing the work they save (embedding, tokenizing), and a bundle's own checksums
//! prove nothing about who wrote it: anyone who can write the file can recompute them. So
//! every build records a seal of the bundle it wrote: an HMAC-SHA256, under a key of this
//! user's (`$DOCLOUPE_CACHE/builder/key`, 32 random bytes, readable by the user alone), of the
//! sha256 the bundle's prefix gives its header. The header holds every section's sha256, and
//! every read of a section checks it, so the seal covers every byte. The seal is recorded as
//! a file of that name under `$DOCLOUPE_CACHE/builder/written/` (the newest
//! [`KEEP_SEALS`] are kept), and an incremental build reuses nothing from a bundle whose seal
//! is not recorded: a file changed after it was written, or copied from another machine or
//! user, is built again from its documents, with a warning saying so. A copy on the same
//! machine is trusted wherever it lies. The bundle's bytes do not depend on the key.

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Seals kept: the bundles written most recently.
pub const KEEP_SEALS: usize = 256;

/// The seal of the bundle whose first bytes are `prefix` (at least
/// [`docloupe::bundle::HEADER_START`] of them: the magic, version, header length and the
/// header's sha256).
pub fn seal_of(prefix: &[u8]) -> Result<String> {
    let digest = prefix
        .get(..docloupe::bundle::HEADER_START)
        .context("too short to be a bundle")?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key()?).expect("HMAC takes a key of any length");
    mac.update(digest);
    Ok(hex(&mac.finalize().into_bytes()))
}

/// Records `seal` as that of a bundle this builder wrote.
pub fn record(seal: &str) -> Result<()> {
    let dir = builder_dir().join("written");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::write(dir.join(seal), b"")
        .with_context(|| format!("cannot write {}", dir.display()))?;
    prune(&dir);
    Ok(())
}

/// Whether `seal` is that of a bundle this builder wrote.
pub fn recorded(seal: &str) -> bool {
    builder_dir().join("written").join(seal).is_file()
}

/// Keeps the newest [`KEEP_SEALS`] seals.
fn prune(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut seals: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if seals.len() <= KEEP_SEALS {
        return;
    }
    seals.sort();
    for (_, old) in &seals[..seals.len() - KEEP_SEALS] {
        let _ = std::fs::remove_file(old);
    }
}

fn builder_dir() -> PathBuf {
    docloupe::embed::cache_root().join("builder")
}

/// This user's key: read, or made (mode 0600, under a fresh name, then linked into place so
/// that two builds starting at once agree on one) on first use.
fn key() -> Result<Vec<u8>> {
    let dir = builder_dir();
    let path = dir.join("key");
    if let Ok(key) = std::fs::read(&path) {
        if key.len() == 32 {
            return Ok(key);
        }
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut key = vec![0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut r| r.read_exact(&mut key))
        .context("cannot draw a random key from /dev/urandom")?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".key.")
        .tempfile_in(&dir)
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.write_all(&key)?;
    tmp.as_file().sync_all()?;
    match tmp.persist_noclobber(&path) {
        Ok(_) => Ok(key),
        Err(_) => std::fs::read(&path).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
