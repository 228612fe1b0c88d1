//! Ingest: find the documents under a root and turn each markdown or plain-text file into front
//! matter plus a list of sections (heading breadcrumb, anchor, text blocks with line ranges).
//! The other formats are converted into the same shape by [`crate::convert`].
//!
//! Files that cannot be read or are not UTF-8 are skipped with a warning; the build goes on.

use std::path::{Path, PathBuf};

mod markdown;

pub use markdown::*;

/// The extensions the builder reads, as messages list them.
pub fn read_extensions() -> String {
    Format::ALL
        .iter()
        .flat_map(|f| f.spec().extensions)
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}

/// Markdown files larger than this are skipped: they are generated dumps, not documentation.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// The limit for PDF, DOCX and spreadsheets.
pub const MAX_BINARY_BYTES: u64 = 256 * 1024 * 1024;

/// A document found under the root.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub format: Format,
    pub abs: PathBuf,
    /// Relative to the root, forward slashes.
    pub rel: String,
    /// The file the walk found (device and inode, on Unix): [`read_source`] reads that file
    /// and no other, so a file swapped for a link (or a folder above it swapped for a link)
    /// between the walk and the read is refused, not followed out of the folder. `None` for a
    /// file named on the command line, which is read wherever it leads.
    pub identity: Option<(u64, u64)>,
}

/// The device and inode of a file's metadata (Unix); elsewhere nothing is compared.
fn identity_of(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// Reads a document's bytes, at most `limit`: the file is opened first (never through a link
/// at its own name, never blocking on a FIFO put in its place), its size checked on the
/// opened file before anything is read, and then at most `limit + 1` bytes read, so a sparse
/// 2 GiB file costs nothing and a file that grows while it is read is still refused. A file
/// that is not the one the walk found (`identity`) is refused.
pub fn read_source(file: &SourceFile, limit: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let nofollow = if file.identity.is_some() {
            libc::O_NOFOLLOW
        } else {
            0
        };
        options.custom_flags(nofollow | libc::O_NONBLOCK);
    }
    let f = options
        .open(&file.abs)
        .map_err(|e| match e.raw_os_error() {
            #[cfg(unix)]
            Some(libc::ELOOP) => {
                "it was replaced by a symbolic link after the folder was read".into()
            }
            _ => format!("cannot read: {e}"),
        })?;
    let meta = f.metadata().map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    if file.identity.is_some() && identity_of(&meta) != file.identity {
        return Err("it was replaced by another file after the folder was read".into());
    }
    if meta.len() > limit {
        return Err(format!(
            "{} bytes is over the {limit} byte limit",
            meta.len()
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(format!(
            "it grew past the {limit} byte limit while it was read"
        ));
    }
    Ok(bytes)
}

/// The document formats the builder reads, by file extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    /// Plain text: paragraphs, no headings.
    Text,
    /// A page as a site serves it: its content, headings with their ids, metadata.
    Html,
    /// Text per page; headings from the outline (bookmarks) where it has one.
    Pdf,
    /// Word: paragraphs, tables, headings from heading styles.
    Docx,
    /// Spreadsheets (`.xlsx`/`.xlsm`, `.xls`, `.ods`): a section per sheet, a block per row.
    Xlsx,
    Xls,
    Ods,
}

/// What the builder knows of a format, in one place: [`Format::spec`].
pub struct FormatSpec {
    /// The result's `documentType`.
    pub doc_type: &'static str,
    /// The extensions that name it (lowercase, without the dot).
    pub extensions: &'static [&'static str],
    /// Read as UTF-8 text in the builder itself; the others are converted from their
    /// container in the isolated child.
    pub text: bool,
}

impl Format {
    /// Every format, in the order they are listed to users.
    pub const ALL: [Format; 8] = [
        Format::Markdown,
        Format::Text,
        Format::Html,
        Format::Pdf,
        Format::Docx,
        Format::Xlsx,
        Format::Xls,
        Format::Ods,
    ];

    /// The format table: a new variant is a compile error here until it is described, and in
    /// `convert::convert` until it is routed to a converter.
    pub const fn spec(self) -> FormatSpec {
        let (doc_type, extensions, text): (&str, &[&str], bool) = match self {
            Format::Markdown => ("md", &["md", "markdown"], true),
            Format::Text => ("txt", &["txt"], true),
            Format::Html => ("html", &["html", "htm"], true),
            Format::Pdf => ("pdf", &["pdf"], false),
            Format::Docx => ("docx", &["docx", "docm", "dotx", "dotm"], false),
            Format::Xlsx => ("xlsx", &["xlsx", "xlsm", "xltx", "xltm"], false),
            Format::Xls => ("xls", &["xls"], false),
            Format::Ods => ("ods", &["ods"], false),
        };
        FormatSpec {
            doc_type,
            extensions,
            text,
        }
    }

    /// The format a file's extension names. Word's macro-enabled documents and templates
    /// (`.docm`, `.dotx`, `.dotm`) are DOCX packages: their text is read, their macros never
    /// run nor are kept.
    pub fn of(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Format::ALL
            .into_iter()
            .find(|f| f.spec().extensions.contains(&ext.as_str()))
    }

    /// The format of `path`: by its extension, else by its bytes ([`Format::sniff`]).
    pub fn recognize(path: &Path) -> Result<Option<Format>, &'static str> {
        match Format::of(path) {
            Some(format) => Ok(Some(format)),
            None => Format::sniff(path),
        }
    }

    /// The format of a file whose extension names none the builder reads, from its bytes: a
    /// Word or Excel package or an OpenDocument spreadsheet saved under another extension
    /// (some tools write DOCX as `.doc`). `Err` says why a file of a known kind is not read.
    pub fn sniff(path: &Path) -> Result<Option<Format>, &'static str> {
        use std::io::Read;
        let mut head = [0u8; 8];
        let n = std::fs::File::open(path)
            .and_then(|mut f| f.read(&mut head))
            .unwrap_or(0);
        match &head[..n] {
            [b'P', b'K', 3, 4, ..] => {
                let Ok(zip) = std::fs::File::open(path).map(zip::ZipArchive::new) else {
                    return Ok(None);
                };
                let Ok(zip) = zip else {
                    return Ok(None);
                };
                let has = |name: &str| zip.file_names().any(|n| n == name);
                Ok(if has("word/document.xml") {
                    Some(Format::Docx)
                } else if has("xl/workbook.xml") {
                    Some(Format::Xlsx)
                } else if has("content.xml") && has("mimetype") {
                    Some(Format::Ods)
                } else {
                    None
                })
            }
            [0xD0, 0xCF, 0x11, 0xE0, ..]
                if path
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("doc") || e.eq_ignore_ascii_case("dot")) =>
            {
                Err("a Word 97-2003 file (.doc), which index-builder does not read; save it as .docx")
            }
            _ => Ok(None),
        }
    }

    /// The result's `documentType` (and the `documentTypes` filter's value).
    pub fn doc_type(self) -> &'static str {
        self.spec().doc_type
    }

    /// The format whose [`Format::doc_type`] is `t`.
    pub fn from_doc_type(t: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.doc_type() == t)
    }

    /// Markdown and text are read as UTF-8; the others are converted from their container.
    pub fn is_text(self) -> bool {
        self.spec().text
    }

    /// Larger files are skipped: a text file that size is a generated dump, a PDF or workbook
    /// that size is mostly images or data no one searches as prose.
    pub fn max_bytes(self) -> u64 {
        if self.is_text() {
            MAX_FILE_BYTES
        } else {
            MAX_BINARY_BYTES
        }
    }
}

/// One document given as a file instead of a folder (`index-builder build FILE`): its path in
/// the bundle is its file name. A file of a format the builder does not read, or whose name
/// would not be a safe document path, is an error (there is nothing else to build).
pub fn single_file(path: &Path) -> anyhow::Result<SourceFile> {
    let format = match Format::recognize(path) {
        Ok(Some(f)) => f,
        Ok(None) => anyhow::bail!(
            "{}: not a format index-builder reads ({})",
            path.display(),
            read_extensions()
        ),
        Err(why) => anyhow::bail!("{}: {why}", path.display()),
    };
    let rel = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| anyhow::anyhow!("{}: its name is not UTF-8", path.display()))?
        .to_owned();
    if let Some(why) = docloupe::bundle::document_path_problem(&rel) {
        anyhow::bail!("{rel:?}: cannot be a document, its name {why}");
    }
    Ok(SourceFile {
        format,
        abs: path.to_path_buf(),
        rel,
        identity: None,
    })
}

/// Lists the documents under `root` (see [`discover_all`]).
pub fn discover(root: &Path, warnings: &mut Vec<String>) -> Vec<SourceFile> {
    discover_all(root, warnings).files
}

/// What a walk of the folder found.
#[derive(Debug, Default)]
pub struct Discovery {
    /// The documents, sorted by relative path.
    pub files: Vec<SourceFile>,
    /// Files of no format the builder reads, by extension (`.dwg`; `(none)` for a name
    /// without one): their relative paths.
    pub unread: std::collections::BTreeMap<String, Vec<String>>,
}

impl Discovery {
    /// "3 files of unknown type skipped: .dwg ×2, .rtf ×1", or `None` when every file was read.
    pub fn unread_summary(&self) -> Option<String> {
        let n: usize = self.unread.values().map(Vec::len).sum();
        if n == 0 {
            return None;
        }
        let mut kinds: Vec<(&String, usize)> =
            self.unread.iter().map(|(k, v)| (k, v.len())).collect();
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let listed: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
        Some(format!(
            "{n} file{} of unknown type skipped: {}",
            if n == 1 { "" } else { "s" },
            listed.join(", ")
        ))
    }
}

/// Lists the documents under `root`, skipping hidden and git-ignored paths, sorted by relative
/// path, and the files of no format it reads, by extension.
pub fn discover_all(root: &Path, warnings: &mut Vec<String>) -> Discovery {
    let mut files = Vec::new();
    let mut unread: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .ignore(true)
        .require_git(false)
        .filter_entry(|e| e.file_name() != "node_modules")
        .build();
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                warnings.push(format!("skipped an unreadable path: {e}"));
                continue;
            }
        };
        let path = entry.path();
        let Ok(rel) = path.strip_prefix(root) else {
            continue;
        };
        if entry.depth() > 0 && entry.path_is_symlink() {
            // A link may lead anywhere, out of the folder included: never followed.
            warnings.push(format!(
                "{}: skipped, it is a symbolic link (links are not followed)",
                rel.to_string_lossy()
            ));
            continue;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let format = match Format::recognize(path) {
            Ok(Some(format)) => format,
            Ok(None) => {
                let ext = path
                    .extension()
                    .map(|e| format!(".{}", e.to_string_lossy().to_lowercase()))
                    .unwrap_or_else(|| "(none)".into());
                unread
                    .entry(ext)
                    .or_default()
                    .push(rel.to_string_lossy().replace('\\', "/"));
                continue;
            }
            Err(why) => {
                warnings.push(format!("{}: skipped, {why}", rel.to_string_lossy()));
                continue;
            }
        };
        let Some(parts) = rel
            .components()
            .map(|c| c.as_os_str().to_str())
            .collect::<Option<Vec<_>>>()
        else {
            warnings.push(format!(
                "{}: skipped, its name is not UTF-8",
                rel.to_string_lossy()
            ));
            continue;
        };
        let rel = parts.join("/");
        // Its path becomes a link on readers' pages: one a browser would read as a scheme
        // (`javascript:x.md`) or a way out of the site is never indexed (and never loads).
        if let Some(why) = docloupe::bundle::document_path_problem(&rel) {
            warnings.push(format!("{rel:?}: skipped, its path {why}"));
            continue;
        }
        let identity = match entry.metadata() {
            Ok(meta) => identity_of(&meta),
            Err(e) => {
                warnings.push(format!("{rel}: skipped, cannot read: {e}"));
                continue;
            }
        };
        files.push(SourceFile {
            format,
            abs: path.to_path_buf(),
            rel,
            identity,
        });
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    Discovery { files, unread }
}

#[cfg(test)]
mod tests;
