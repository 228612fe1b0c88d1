//! A bundle read from a file section by section (native hosts: the CLI and the MCP server).
//!
//! [`super::decode`] needs the whole file in memory and then holds it twice (raw and
//! decoded). [`BundleFile`] reads the fixed prefix and the header, then only the sections a
//! host asks for, one at a time, each verified against its checksum before it is decoded. A
//! fulltext search never reads the vectors, which are most of a hybrid bundle's bytes; a
//! hybrid one holds one raw section at a time instead of the whole file.

use std::borrow::Cow;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::format::{
    check_prefix, check_sections_fit, decode_header, decode_sections, verify_section, HEADER_START,
    MAGIC,
};
use super::model::{Bundle, Header, SectionKind};
use super::{FORMAT_VERSION, OLDEST_FORMAT_VERSION};
use crate::error::{Error, Result};

/// An open bundle file whose prefix and header are read and verified.
#[derive(Debug)]
pub struct BundleFile {
    file: File,
    path: PathBuf,
    header: Header,
    version: u32,
    body_start: u64,
}

impl BundleFile {
    /// Opens `path` and reads its header: the same checks, in the same order, as
    /// [`super::decode`] (magic, truncation, format version, header checksum, section bounds).
    pub fn open(path: &Path) -> Result<BundleFile> {
        let mut file = File::open(path).map_err(|e| Error::unreadable(path, e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::unreadable(path, e))?
            .len();
        let mut head = read_at(&mut file, path, 0, len.min(HEADER_START as u64))?;
        let version = check_prefix(
            &head,
            MAGIC,
            HEADER_START,
            (OLDEST_FORMAT_VERSION, FORMAT_VERSION),
        )?;
        let header_len = u64::from(u32::from_le_bytes(
            head[12..16].try_into().expect("4 bytes"),
        ));
        if HEADER_START as u64 + header_len > len {
            return Err(Error::BundleTruncated(format!(
                "header of {header_len} bytes does not fit in {len} bytes"
            )));
        }
        head.extend(read_at(&mut file, path, HEADER_START as u64, header_len)?);
        let (header, body_start) = decode_header(&head)?;
        check_sections_fit(&header, body_start, len)?;
        Ok(BundleFile {
            file,
            path: path.to_owned(),
            header,
            version,
            body_start: body_start as u64,
        })
    }

    /// The bundle's header (model, counts, flags, section table).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Reads, verifies and decodes the docs, lexical and text sections, and the vectors when
    /// `with_vectors` (otherwise they are neither read nor verified, and `vectors` is `None`
    /// as with [`super::decode_lexical`]).
    pub fn decode(mut self, with_vectors: bool) -> Result<Bundle> {
        let entries = self.header.sections.clone();
        let (file, path, body_start) = (&mut self.file, &self.path, self.body_start);
        let section = |kind: SectionKind| {
            let Some(entry) = entries.iter().find(|s| s.kind == kind) else {
                return Ok(None);
            };
            // In bounds: `open` checked every section against the file's length.
            let bytes = read_at(file, path, body_start + entry.offset, entry.len)?;
            verify_section(&bytes, entry)?;
            Ok(Some(Cow::Owned(bytes)))
        };
        decode_sections(self.header, self.version, section, with_vectors, false)
    }
}

/// Exactly `n` bytes of `file` from `offset` (a file that shrank since it was opened is
/// truncated).
fn read_at(file: &mut File, path: &Path, offset: u64, n: u64) -> Result<Vec<u8>> {
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| Error::unreadable(path, e))?;
    // `n` is within the file's length (checked against it before any read).
    let mut bytes = Vec::with_capacity(n as usize);
    file.take(n)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::unreadable(path, e))?;
    if (bytes.len() as u64) < n {
        return Err(Error::BundleTruncated(format!(
            "{} ended at byte {} while reading {n} bytes from {offset}",
            path.display(),
            offset + bytes.len() as u64
        )));
    }
    Ok(bytes)
}
