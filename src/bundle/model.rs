//! The data model inside a bundle. Field order is part of the format: postcard encodes
//! fields positionally, so any change here needs a FORMAT_VERSION bump and a frozen
//! fixture under `tests/fixtures/`.

use serde::{Deserialize, Serialize};

use crate::analyze::Language;
use crate::embed::ModelInfo;
use crate::index::lexical::LexicalIndex;
use crate::index::vector::VectorIndex;

pub use super::text::{TextBlocks, TextReader, TextSection};

/// Describes the bundle; small, read first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// `index-builder <version>` that wrote it.
    pub builder: String,
    /// `namespace/name`, when the collection was built for a project.
    pub project_id: Option<String>,
    /// The embedding model the vectors were made with (`None`: built `--no-embeddings`).
    pub embedding: Option<ModelInfo>,
    pub analyzer: AnalyzerConfig,
    pub counts: Counts,
    pub flags: Flags,
    pub sections: Vec<SectionEntry>,
}

pub use crate::analyze::AnalyzerConfig;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counts {
    pub documents: u32,
    pub chunks: u32,
    pub terms: u32,
    pub vectors: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Flags {
    /// Vectors are present: semantic and hybrid search are possible.
    pub hybrid: bool,
    /// Always false: formats 1–3 marked an HNSW graph so (no longer read). Kept because the
    /// header is positional; `index-builder inspect` names the vectors' kind.
    pub hnsw: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SectionKind {
    Docs,
    Lexical,
    Text,
    Vectors,
    /// Format 10: which groups may read the restricted documents ([`super::AccessSection`]);
    /// only in a bundle where some document is restricted.
    Access,
}

impl SectionKind {
    pub fn name(self) -> &'static str {
        match self {
            SectionKind::Docs => "docs",
            SectionKind::Lexical => "lexical",
            SectionKind::Text => "text",
            SectionKind::Vectors => "vectors",
            SectionKind::Access => "access",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionEntry {
    pub kind: SectionKind,
    /// Offset from the end of the header.
    pub offset: u64,
    pub len: u64,
    pub sha256: [u8; 32],
}

/// One source document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// Relative to the collection root, forward slashes.
    pub path: String,
    /// sha256 (hex, 32 chars) of the file's bytes.
    pub doc_id: String,
    pub title: String,
    pub description: Option<String>,
    /// Format: "md", "txt", "pdf", "docx", "xlsx".
    pub doc_type: String,
    /// The document's date, ISO `YYYY-MM-DD`: when it was last updated, else made (front
    /// matter, a PDF's info dates, an Office file's properties). Filters and facets read it.
    pub date: Option<String>,
    pub tags: Vec<String>,
    pub lang: Language,
    /// Index of the document's first chunk; its chunks are contiguous.
    pub first_chunk: u32,
    pub chunk_count: u32,
    /// The bibliography entry the document was matched to (`--references`).
    pub citation: Option<Citation>,
    /// When the document was made, `YYYY-MM-DD` (format 3).
    pub created: Option<String>,
    /// The source file's size in bytes (format 3).
    pub file_size: Option<u64>,
    /// Where `date` and `created` come from (format 9; `None` before, and for a document
    /// without dates).
    pub date_source: Option<DateSource>,
}

/// A document as formats 3 to 8 write it: without [`Document::date_source`].
#[derive(Deserialize)]
pub(crate) struct DocumentV8 {
    path: String,
    doc_id: String,
    title: String,
    description: Option<String>,
    doc_type: String,
    date: Option<String>,
    tags: Vec<String>,
    lang: Language,
    first_chunk: u32,
    chunk_count: u32,
    citation: Option<Citation>,
    created: Option<String>,
    file_size: Option<u64>,
}

impl From<DocumentV8> for Document {
    fn from(d: DocumentV8) -> Document {
        Document {
            path: d.path,
            doc_id: d.doc_id,
            title: d.title,
            description: d.description,
            doc_type: d.doc_type,
            date: d.date,
            tags: d.tags,
            lang: d.lang,
            first_chunk: d.first_chunk,
            chunk_count: d.chunk_count,
            citation: d.citation,
            created: d.created,
            file_size: d.file_size,
            date_source: None,
        }
    }
}

/// Where a document's dates come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DateSource {
    /// Markdown front matter (`date`, `updated`, …).
    FrontMatter,
    /// The document's own text: the adoption, approval, effective or revision date a
    /// normative document states on its first pages.
    Document,
    /// The file's properties (a PDF's `CreationDate`/`ModDate`, an Office file's core
    /// properties): when the file was produced, which may be long after the document.
    Metadata,
}

/// A document's bibliography entry, from CSL-JSON (as Zotero / Better BibTeX export it).
/// Serialized into results as the contract's `citation` object, every field present (null or
/// empty when the entry lacks it). No `skip_serializing_if` here: postcard is positional.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Citation {
    /// The citation key (`[@citekey]`): CSL `citation-key`, else the entry's `id`.
    pub citekey: String,
    pub title: Option<String>,
    /// "Family, Given" (or a literal name), in the entry's order.
    pub authors: Vec<String>,
    pub year: Option<i32>,
    pub doi: Option<String>,
    pub url: Option<String>,
    pub tags: Vec<String>,
    pub collections: Vec<String>,
}

/// Pages a chunk's text comes from, 1-based and inclusive (`start <= end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageSpan {
    pub start: u32,
    pub end: u32,
}

/// Where a chunk is in its document: the one description of a chunk's place that the
/// builder plans, the bundle stores and the engine presents (as the contract's
/// `sectionPath`, `anchor`, `lineStart`/`lineEnd` and `pageStart`/`pageEnd`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChunkLocation {
    /// Breadcrumb from the document title down to the chunk's heading.
    pub section_path: Vec<String>,
    /// GitHub-style slug of the chunk's heading ("" before the first heading).
    pub anchor: String,
    /// 1-based, inclusive, in the source file. For converted formats, in the format's own
    /// unit: lines of the extracted text (PDF), paragraphs (DOCX), rows (XLSX).
    pub line_start: u32,
    pub line_end: u32,
    /// Pages, for paged formats (PDF); `None` for the others.
    pub page_span: Option<PageSpan>,
}

/// One chunk's metadata; its text lives in the `text` section at the same index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkMeta {
    pub doc: u32,
    /// 0-based within the document.
    pub chunk_index: u32,
    /// Deterministic id: hash of (docId, sectionPath, model id, chunkIndex).
    pub id: String,
    pub location: ChunkLocation,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocsSection {
    pub documents: Vec<Document>,
    pub chunks: Vec<ChunkMeta>,
    /// Worked out from `documents` on first use; not stored.
    #[serde(skip)]
    pub tables: Tables,
}

impl DocsSection {
    pub fn new(documents: Vec<Document>, chunks: Vec<ChunkMeta>) -> DocsSection {
        DocsSection {
            documents,
            chunks,
            tables: Tables::default(),
        }
    }

    /// Compact tables of what a query reads of every document it matches: where its chunks
    /// start, and its facet keys. Read out of [`Document`]s, the fields of a million matches'
    /// documents each cost a cache miss and the facets a string comparison; the split
    /// layout's core stores the same tables.
    pub fn tables(&self) -> &DocTables {
        self.tables.0.get_or_init(|| {
            let mut firsts: Vec<u32> = self.documents.iter().map(|d| d.first_chunk).collect();
            firsts.push(self.chunks.len() as u32);
            DocTables {
                firsts,
                facets: FacetTable::of(&self.documents),
            }
        })
    }
}

/// [`DocsSection::tables`], made once: never part of the section's equality.
#[derive(Debug, Clone, Default)]
pub struct Tables(std::sync::OnceLock<DocTables>);

impl PartialEq for Tables {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

#[derive(Debug, Clone)]
pub struct DocTables {
    /// Each document's first chunk, then the chunk count (the split layout's table; a
    /// document's chunks are contiguous): document `d` holds `firsts[d]..firsts[d + 1]`. A
    /// million matches walk to their documents along these 4 bytes a document, where each
    /// chunk's own document number is a cache and TLB miss into the chunks (fulltext over
    /// 2.24M chunks: that walk was 37 % of its time).
    pub firsts: Vec<u32>,
    pub facets: FacetTable,
}

/// Every document's facet keys as numbers (what the facets count), with the names they
/// stand for.
#[derive(Debug, Clone, PartialEq)]
pub struct FacetTable {
    /// The distinct document types, sorted.
    pub doc_types: Vec<String>,
    /// The distinct `YYYY-MM` months, sorted.
    pub months: Vec<String>,
    /// Per document: index into `doc_types`, and 1 + index into `months` (0: no date).
    pub doc_facets: Vec<(u32, u32)>,
}

impl FacetTable {
    pub fn of(documents: &[Document]) -> FacetTable {
        let mut doc_types: Vec<String> = documents.iter().map(|d| d.doc_type.clone()).collect();
        doc_types.sort();
        doc_types.dedup();
        let mut months: Vec<String> = documents.iter().filter_map(month).collect();
        months.sort();
        months.dedup();
        let position = |list: &[String], key: &str| list.binary_search_by(|x| x.as_str().cmp(key));
        let doc_facets = documents
            .iter()
            .map(|d| {
                let t = position(&doc_types, &d.doc_type).unwrap_or(0) as u32;
                let m = month(d).map_or(0, |m| position(&months, &m).map_or(0, |i| i as u32 + 1));
                (t, m)
            })
            .collect();
        FacetTable {
            doc_types,
            months,
            doc_facets,
        }
    }
}

/// `YYYY-MM` of a document's date, the facet key.
pub fn month(d: &Document) -> Option<String> {
    d.date
        .as_deref()
        .and_then(|d| d.get(..7))
        .map(str::to_owned)
}

/// A decoded bundle. `vectors` is `None` for bundles built without embeddings, `access` for
/// bundles whose every document is open to every reader.
#[derive(Debug)]
pub struct Bundle {
    pub header: Header,
    pub docs: DocsSection,
    pub lexical: LexicalIndex,
    pub text: TextSection,
    pub vectors: Option<VectorIndex>,
    pub access: Option<super::AccessSection>,
}
