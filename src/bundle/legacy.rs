//! Earlier formats' data model, read and converted to the current one. Only the `docs`
//! section changed since format 1 (format 2 added `citation` to documents and
//! `page_span` to chunks; format 3 `created` and `file_size` to documents); every other
//! section decodes with the current types (format 4 only added a variant to the vectors
//! section's enum, so format 3 reads as format 4).

use serde::Deserialize;

use super::model::{ChunkMeta, DocsSection, Document};
use crate::analyze::Language;

/// Format 1's `docs` section.
#[derive(Deserialize)]
pub(super) struct DocsSectionV1 {
    documents: Vec<DocumentV1>,
    chunks: Vec<ChunkMetaV1>,
}

#[derive(Deserialize)]
struct DocumentV1 {
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
}

#[derive(Deserialize)]
struct ChunkMetaV1 {
    doc: u32,
    chunk_index: u32,
    id: String,
    section_path: Vec<String>,
    anchor: String,
    line_start: u32,
    line_end: u32,
}

impl From<DocsSectionV1> for DocsSection {
    fn from(v1: DocsSectionV1) -> Self {
        DocsSection {
            documents: v1
                .documents
                .into_iter()
                .map(|d| Document {
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
                    citation: None,
                    created: None,
                    file_size: None,
                    date_source: None,
                })
                .collect(),
            chunks: v1
                .chunks
                .into_iter()
                .map(|c| ChunkMeta {
                    doc: c.doc,
                    chunk_index: c.chunk_index,
                    id: c.id,
                    section_path: c.section_path,
                    anchor: c.anchor,
                    line_start: c.line_start,
                    line_end: c.line_end,
                    page_span: None,
                })
                .collect(),
            tables: Default::default(),
        }
    }
}

/// Formats 3 and 4's `docs` section: chunk metadata as it is held, documents without
/// `date_source`.
#[derive(Deserialize)]
pub(super) struct DocsSectionV3 {
    documents: Vec<super::model::DocumentV8>,
    chunks: Vec<ChunkMeta>,
}

impl From<DocsSectionV3> for DocsSection {
    fn from(v3: DocsSectionV3) -> Self {
        DocsSection::new(
            v3.documents.into_iter().map(Document::from).collect(),
            v3.chunks,
        )
    }
}

/// Format 2's `docs` section: documents without `created` and `file_size`.
#[derive(Deserialize)]
pub(super) struct DocsSectionV2 {
    documents: Vec<DocumentV2>,
    chunks: Vec<ChunkMeta>,
}

#[derive(Deserialize)]
struct DocumentV2 {
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
    citation: Option<super::model::Citation>,
}

impl From<DocsSectionV2> for DocsSection {
    fn from(v2: DocsSectionV2) -> Self {
        DocsSection {
            documents: v2
                .documents
                .into_iter()
                .map(|d| Document {
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
                    created: None,
                    file_size: None,
                    date_source: None,
                })
                .collect(),
            chunks: v2.chunks,
            tables: Default::default(),
        }
    }
}
