//! Building a bundle: [`BundleBuilder`] ([`build_bundle`]) turns analyzed, embedded
//! documents ([`SourceDocument`]) into a [`Bundle`], filling the index structures
//! ([`crate::index`]) and the bundle's own sections as each document is added.

use sha2::{Digest, Sha256};

use super::{
    AnalyzerConfig, Bundle, ChunkLocation, ChunkMeta, Citation, Counts, Document, Flags, Header,
    TextBlocks,
};
use crate::analyze::{Analyzer, Language};
use crate::embed::ModelInfo;
use crate::error::{Error, Result};
use crate::index::lexical::LexicalBuilder;
use crate::index::vector::{self, VectorIndex};

/// A document as the builder hands it over: metadata plus its chunks in order.
#[derive(Debug, Clone)]
pub struct SourceDocument {
    pub path: String,
    pub doc_id: String,
    pub title: String,
    pub description: Option<String>,
    pub doc_type: String,
    pub date: Option<String>,
    /// When it was made (`YYYY-MM-DD`), where the document says.
    pub created: Option<String>,
    /// The source file's size in bytes.
    pub file_size: Option<u64>,
    /// Where `date` and `created` come from.
    pub date_source: Option<crate::bundle::DateSource>,
    pub tags: Vec<String>,
    pub lang: Language,
    pub citation: Option<Citation>,
    /// Who may read it: the groups of each requirement, one of which a reader must hold for
    /// every requirement ([`crate::bundle::AccessSection`]); none: every reader.
    pub access: Vec<Vec<String>>,
    pub chunks: Vec<SourceChunk>,
}

#[derive(Debug, Clone)]
pub struct SourceChunk {
    pub location: ChunkLocation,
    pub text: String,
    /// From the embedding model (absent for `--no-embeddings` builds).
    pub embedding: Option<Embedding>,
}

/// A chunk's vector as the builder has it.
#[derive(Debug, Clone)]
pub enum Embedding {
    /// A unit vector fresh from the model; quantized here.
    Fresh(Vec<f32>),
    /// Already quantized: taken over from an earlier bundle (incremental builds), or quantized
    /// as it came from the model. Quantizing is a function of the vector alone, so this is the
    /// same as the vector it came from. Shared (`Arc`): chunks with the same text hold one
    /// copy (a versioned collection repeats most of its sections word for word).
    Quantized {
        scale: f32,
        data: std::sync::Arc<[i8]>,
    },
}

impl Embedding {
    /// A unit vector from the model, quantized now (as the bundle would store it, so an
    /// incremental build's reused vectors and a clean build's are the same value).
    pub fn quantized(v: &[f32]) -> Embedding {
        let q = vector::QVec::quantize(0, v);
        Embedding::Quantized {
            scale: q.scale,
            data: q.data.into(),
        }
    }

    fn dims(&self) -> usize {
        match self {
            Embedding::Fresh(v) => v.len(),
            Embedding::Quantized { data, .. } => data.len(),
        }
    }

    fn into_qvec(self, chunk: u32) -> vector::QVec {
        match self {
            Embedding::Fresh(v) => vector::QVec::quantize(chunk, &v),
            Embedding::Quantized { scale, data } => vector::QVec {
                chunk,
                scale,
                data: data.to_vec(),
            },
        }
    }
}

#[derive(Debug, Clone)]
pub struct BuildOptions {
    pub builder: String,
    pub project_id: Option<String>,
    pub model: Option<ModelInfo>,
    /// At or above this many chunks the vectors get compact first-pass codes; below, search
    /// scans them exactly.
    pub compact_threshold: usize,
    /// Keep the vectors at int8 (formats 1–5) even for a model whose vectors are written in
    /// the 4-bit form ([`crate::embed::four_bit_vectors`]): for comparisons only.
    pub int8_vectors: bool,
}

/// Default for [`BuildOptions::compact_threshold`]: measured in `docs/measurements/2026-11-29-compact-codes-vs-hnsw.md`.
pub const COMPACT_THRESHOLD: usize = 10_000;

/// The text the embedding model sees for a chunk: its breadcrumb, then its body. The
/// breadcrumb gives short sections their context ("Install › Windows" + two lines).
pub fn embedding_input(section_path: &[String], text: &str) -> String {
    format!("{}\n{}", section_path.join(" > "), text)
}

/// Deterministic chunk id: 128 bits of sha256 over (document path, docId, sectionPath, model
/// id, chunkIndex). The path makes it unique per file: two files with the same content (the
/// same docId) have distinct chunks, and clients that key on `chunkId` (the web component's
/// selection) tell them apart.
pub fn chunk_id(
    path: &str,
    doc_id: &str,
    section_path: &[String],
    model_id: &str,
    chunk_index: u32,
) -> String {
    let mut h = Sha256::new();
    h.update(path.as_bytes());
    h.update([0]);
    h.update(doc_id.as_bytes());
    h.update([0]);
    for s in section_path {
        h.update(s.as_bytes());
        h.update([0x1f]);
    }
    h.update([0]);
    h.update(model_id.as_bytes());
    h.update([0]);
    h.update(chunk_index.to_le_bytes());
    h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Builds the bundle. Documents are sorted by path first, so the result does not depend on
/// the order the caller found them in.
pub fn build_bundle(mut docs: Vec<SourceDocument>, opts: &BuildOptions) -> Result<Bundle> {
    docs.sort_by(|a, b| a.path.cmp(&b.path));
    let mut bundle = BundleBuilder::new(opts);
    for doc in docs {
        bundle.add(doc)?;
    }
    bundle.finish()
}

/// Builds a bundle a document at a time, in path order, so a builder that reads, chunks and
/// embeds a collection in batches holds each document's text only until it is added: the
/// text goes into the text section's deflated blocks and the lexical postings at once, and
/// the chunk metadata is packed as the `docs` section writes it. [`build_bundle`] over the
/// same documents gives the same bundle, and [`BundleBuilder::encode`] its bytes.
pub struct BundleBuilder<'a> {
    opts: &'a BuildOptions,
    analyzer: Analyzer,
    cfg: AnalyzerConfig,
    lexical: LexicalBuilder,
    documents: Vec<Document>,
    /// The chunks' metadata as the `docs` section writes it.
    packed: Vec<u8>,
    /// The documents' [`crate::bundle::RunCost::excess`] so far: kept within the readers'
    /// fixed slack.
    excess: usize,
    text: TextBlocks,
    vectors: vector::Vectors,
    /// The restricted documents' requirements, by document index.
    access: Vec<(u32, Vec<Vec<String>>)>,
}

impl<'a> BundleBuilder<'a> {
    pub fn new(opts: &'a BuildOptions) -> BundleBuilder<'a> {
        BundleBuilder {
            opts,
            analyzer: Analyzer::new(),
            cfg: AnalyzerConfig::default(),
            lexical: LexicalBuilder::default(),
            documents: Vec::new(),
            packed: Vec::new(),
            excess: 0,
            text: TextBlocks::default(),
            vectors: vector::Vectors::new(opts.model.as_ref().map_or(0, |m| m.dims as usize)),
            access: Vec::new(),
        }
    }

    /// How many documents have been added.
    pub fn documents(&self) -> usize {
        self.documents.len()
    }

    /// How many chunks have been added.
    pub fn chunks(&self) -> usize {
        // Documents own consecutive runs of chunks.
        self.documents
            .last()
            .map_or(0, |d| d.first_chunk as usize + d.chunk_count as usize)
    }

    /// Adds the next document; its path must sort after the last one's.
    pub fn add(&mut self, doc: SourceDocument) -> Result<()> {
        if let Some(last) = self.documents.last() {
            if doc.path <= last.path {
                return Err(Error::Encode(if doc.path == last.path {
                    format!("duplicate document path {}", doc.path)
                } else {
                    format!("document {} added after {}", doc.path, last.path)
                }));
            }
        }
        let (analyzer, cfg, opts) = (&self.analyzer, &self.cfg, self.opts);
        // Whatever refuses a document is found before any of it is added: a refused document
        // leaves the builder as it was.
        if let Some(why) = access_problem(&doc.access) {
            return Err(Error::DocumentRefused {
                path: doc.path,
                why,
            });
        }
        for (k, chunk) in doc.chunks.iter().enumerate() {
            let refused = if chunk.location.line_end < chunk.location.line_start {
                "ends before it starts".to_owned()
            } else {
                match (&opts.model, &chunk.embedding) {
                    (Some(m), Some(v)) if v.dims() != m.dims as usize => {
                        format!("has {} dims, model {} has {}", v.dims(), m.id, m.dims)
                    }
                    (Some(_), None) => "has no embedding".to_owned(),
                    _ => continue,
                }
            };
            return Err(Error::Encode(format!(
                "chunk {k} of {} {refused}",
                doc.path
            )));
        }
        let model_id = opts.model.as_ref().map_or("none", |m| m.id.as_str());
        let d = self.documents.len();
        let first_chunk =
            u32::try_from(self.chunks()).map_err(|_| Error::Encode("over 2^32 chunks".into()))?;
        let chunk_count = doc.chunks.len() as u32;
        let mut metas = Vec::with_capacity(doc.chunks.len());
        let mut bodies = Vec::with_capacity(doc.chunks.len());
        for (k, chunk) in doc.chunks.into_iter().enumerate() {
            metas.push(ChunkMeta {
                doc: d as u32,
                chunk_index: k as u32,
                id: chunk_id(
                    &doc.path,
                    &doc.doc_id,
                    &chunk.location.section_path,
                    model_id,
                    k as u32,
                ),
                location: chunk.location,
            });
            bodies.push((chunk.text, chunk.embedding));
        }
        // Every reader holds what it reads of the chunk metadata to a budget (a few crafted
        // bytes could otherwise repeat a long breadcrumb millions of times): a document whose
        // breadcrumbs would take the bundle past it is refused here, or the bundle would be.
        let mut packed = Vec::new();
        let cost = crate::bundle::append_packed_chunks(&doc.title, &metas, &mut packed)?;
        let excess = self.excess.saturating_add(cost.excess());
        if excess > crate::bundle::BUDGET_SLACK {
            return Err(Error::DocumentRefused {
                path: doc.path,
                why: format!(
                    "its {} chunks repeat {} bytes of breadcrumbs and anchors, more than a reader accepts",
                    metas.len(),
                    cost.copied
                ),
            });
        }
        self.excess = excess;
        let title_terms = analyzer.terms(&doc.title);
        let description_terms = doc
            .description
            .as_deref()
            .map(|t| analyzer.terms(t))
            .unwrap_or_default();
        for (k, (meta, (text, embedding))) in metas.iter().zip(bodies).enumerate() {
            // The title is section_path[0]; weigh only the headings below it as headings.
            let mut heading_terms = analyzer.terms(
                &meta
                    .location
                    .section_path
                    .iter()
                    .skip(1)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" "),
            );
            if k == 0 {
                heading_terms.extend(description_terms.iter().cloned());
            }
            // A passage that defines an abbreviation ("ОДПУ — общедомовой прибор учёта") is
            // marked under its own term, which a query of that abbreviation adds
            // (`search::expand::definitions`): the definition comes first.
            for abbreviation in crate::analyze::defined_abbreviations(&text) {
                for term in analyzer.terms(&abbreviation) {
                    heading_terms.push(crate::analyze::definition_term(&term));
                }
            }
            let body_terms = analyzer.terms(&text);
            let id = self.lexical.add_chunk([
                (title_terms.as_slice(), cfg.title_weight),
                (heading_terms.as_slice(), cfg.heading_weight),
                (body_terms.as_slice(), cfg.body_weight),
            ]);
            if let (Some(m), Some(v)) = (&opts.model, embedding) {
                let v = v.into_qvec(id);
                let four = !opts.int8_vectors && crate::embed::four_bit_vectors(&m.id);
                let v = if four { v.to_4bit() } else { v };
                self.vectors
                    .push(v.chunk, v.scale, &v.data)
                    .map_err(Error::Encode)?;
            }
            self.text.push(text)?;
        }
        self.packed.extend_from_slice(&packed);
        if !doc.access.is_empty() {
            self.access.push((d as u32, doc.access));
        }
        self.documents.push(Document {
            path: doc.path,
            doc_id: doc.doc_id,
            title: doc.title,
            description: doc.description,
            doc_type: doc.doc_type,
            date: doc.date,
            tags: doc.tags,
            lang: doc.lang,
            first_chunk,
            chunk_count,
            citation: doc.citation,
            created: doc.created,
            file_size: doc.file_size,
            date_source: doc.date_source,
        });
        Ok(())
    }

    /// The bundle of every document added: the bundle [`BundleBuilder::encode`]'s bytes
    /// decode to.
    pub fn finish(self) -> Result<Bundle> {
        crate::bundle::decode(&self.encode(|| {})?.into_bytes())
    }

    /// The bytes of the bundle of every document added, a section at a time: each part of
    /// the builder is dropped once its section is bytes, and `freed` runs after each (a
    /// builder hands the freed pages back to the system there). The largest sections' bytes
    /// are handed over as they were made, not copied (`text`, the vector blocks).
    pub fn encode(self, mut freed: impl FnMut()) -> Result<crate::bundle::Encoded> {
        let chunks = self.chunks();
        let BundleBuilder {
            opts,
            cfg,
            lexical,
            documents,
            packed,
            text,
            vectors,
            access,
            ..
        } = self;
        let access = crate::bundle::AccessSection::of(&access)?
            .map(|a| crate::bundle::access_section(&a))
            .transpose()?;
        let text = text.into_pieces()?;
        let docs = crate::bundle::docs_section_packed(&documents, chunks, &packed)?;
        drop(packed);
        freed();
        let lexical = lexical.finish();
        let terms = lexical.terms.len() as u32;
        let lexical = vec![crate::bundle::lexical_section(&lexical)?];
        freed();
        let vectors = opts
            .model
            .is_some()
            .then(|| VectorIndex::build(vectors, opts.compact_threshold));
        let header = Header {
            builder: opts.builder.clone(),
            project_id: opts.project_id.clone(),
            embedding: opts.model.clone(),
            analyzer: cfg,
            counts: Counts {
                documents: documents.len() as u32,
                chunks: chunks as u32,
                terms,
                vectors: vectors.as_ref().map_or(0, |v| v.len() as u32),
            },
            flags: Flags {
                hybrid: vectors.is_some(),
                // Formats 1–3's graph; never built since.
                hnsw: false,
            },
            sections: Vec::new(),
        };
        drop(documents);
        let vectors = vectors.map(|v| v.section_pieces()).transpose()?;
        freed();
        crate::bundle::assemble_pieces(&header, docs, lexical, text, vectors, access)
    }
}

/// Why a document's access requirements cannot be stored, if they cannot.
fn access_problem(access: &[Vec<String>]) -> Option<String> {
    use crate::bundle::access::{MAX_GROUPS_PER_REQUIREMENT, MAX_REQUIREMENTS};
    if access.len() > MAX_REQUIREMENTS {
        return Some(format!(
            "it has over {MAX_REQUIREMENTS} access requirements"
        ));
    }
    for r in access {
        if r.is_empty() || r.len() > MAX_GROUPS_PER_REQUIREMENT {
            return Some(format!(
                "an access requirement must name 1 to {MAX_GROUPS_PER_REQUIREMENT} groups"
            ));
        }
        if let Some(g) = r.iter().find(|g| !crate::bundle::valid_group(g)) {
            return Some(format!(
                "access group {g:?} is not a group name (1 to {} letters, digits, '-', '_', '.', '@')",
                crate::bundle::MAX_GROUP_CHARS
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::PageSpan;

    fn documents(dims: usize) -> Vec<SourceDocument> {
        let mut seed = 5u32;
        let mut unit = || {
            let v: Vec<f32> = (0..dims)
                .map(|_| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    (seed >> 16) as f32 / 32_768.0 - 1.0
                })
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / norm).collect::<Vec<_>>()
        };
        (0..4)
            .map(|d| SourceDocument {
                path: format!("guide/{d}.md"),
                doc_id: format!("{d:032x}"),
                title: format!("Page {d}"),
                description: (d % 2 == 0).then(|| "About caching".into()),
                doc_type: if d == 3 { "pdf" } else { "md" }.into(),
                date: None,
                created: Some("2026-01-02".into()),
                file_size: Some(100 + d as u64),
                date_source: None,
                tags: vec!["tag".into()],
                lang: Language::En,
                citation: None,
                access: Vec::new(),
                chunks: (0..d * 3)
                    .map(|k| SourceChunk {
                        location: ChunkLocation {
                            section_path: match k % 3 {
                                0 => vec![format!("Page {d}")],
                                1 => vec![format!("Page {d}"), "Install".into()],
                                _ => vec!["Other".into(), "Install".into(), format!("Step {k}")],
                            },
                            anchor: if k % 3 == 0 {
                                String::new()
                            } else {
                                "install".into()
                            },
                            line_start: 1 + 4 * k as u32,
                            line_end: 3 + 4 * k as u32,
                            page_span: (d == 3).then_some(PageSpan { start: 1, end: 2 }),
                        },
                        text: format!("chunk {k} of page {d}: cache the build output ").repeat(k),
                        embedding: (dims > 0).then(|| Embedding::Fresh(unit())),
                    })
                    .collect(),
            })
            .collect()
    }

    /// The builder writes its sections as it goes, packed and in pieces; the bytes are those
    /// the whole bundle it decodes to is written in, with vectors exact, coded or none.
    #[test]
    fn what_the_builder_writes_is_the_bundle_it_reads_back_as() {
        for (dims, compact_threshold) in [(0, 10), (24, 1_000), (24, 1)] {
            let opts = BuildOptions {
                builder: "test".into(),
                project_id: None,
                model: (dims > 0).then(|| ModelInfo {
                    id: "test-model".into(),
                    sha256: "0".repeat(64),
                    tokenizer_sha256: "1".repeat(64),
                    dims: dims as u32,
                    max_tokens: 256,
                }),
                compact_threshold,
                int8_vectors: false,
            };
            let docs = documents(dims);
            let mut builder = BundleBuilder::new(&opts);
            for doc in docs.clone() {
                builder.add(doc).unwrap();
            }
            assert_eq!((builder.documents(), builder.chunks()), (4, 18));
            let mut freed = 0;
            let bytes = builder.encode(|| freed += 1).unwrap().into_bytes();
            assert_eq!(freed, 3);
            let read = crate::bundle::decode(&bytes).unwrap();
            assert_eq!(crate::bundle::encode(&read).unwrap(), bytes, "{dims} dims");
            assert_eq!(read.header.counts.chunks, 18);
            assert_eq!(read.vectors.is_some(), dims > 0);
            // What went in comes out.
            let chunks = docs.iter().flat_map(|d| &d.chunks);
            for (i, (meta, source)) in read.docs.chunks.iter().zip(chunks).enumerate() {
                assert_eq!(meta.location.section_path, source.location.section_path);
                assert_eq!(
                    (&meta.location.anchor, meta.location.line_end),
                    (&source.location.anchor, source.location.line_end)
                );
                assert_eq!(meta.location.page_span, source.location.page_span);
                assert_eq!(read.text.get(i).unwrap(), source.text);
            }
            assert_eq!(build_bundle(docs, &opts).unwrap().docs, read.docs);
        }
    }

    /// Regression (hostile inputs, issue 59): the builder wrote bundles whose breadcrumbs
    /// every reader refused ("chunk breadcrumbs expand far past their section's size"). A
    /// document that would take the bundle past the readers' budget is refused when added,
    /// and what the builder writes loads whole, a document at a time and as a split layout.
    #[test]
    fn a_document_past_the_readers_budget_is_refused_and_the_bundle_loads() {
        let opts = BuildOptions {
            builder: "test".into(),
            project_id: None,
            model: None,
            compact_threshold: 10,
            int8_vectors: false,
        };
        // Each chunk shares a six-level breadcrumb of 256-character headings with the one
        // before it: about 1.6 KB copied for about 25 bytes written.
        let heavy = |d: usize| {
            let path: Vec<String> = (0..6).map(|l| format!("{l}{}", "h".repeat(255))).collect();
            SourceDocument {
                path: format!("heavy/{d:03}.md"),
                doc_id: format!("{d:032x}"),
                title: path[0].clone(),
                description: None,
                doc_type: "md".into(),
                date: None,
                created: None,
                file_size: None,
                date_source: None,
                tags: vec![],
                lang: Language::En,
                citation: None,
                access: Vec::new(),
                chunks: (0..200)
                    .map(|k| SourceChunk {
                        location: ChunkLocation {
                            section_path: path.clone(),
                            anchor: "a".into(),
                            line_start: k + 1,
                            line_end: k + 1,
                            page_span: None,
                        },
                        text: format!("chunk {k} of {d}"),
                        embedding: None,
                    })
                    .collect(),
            }
        };
        let mut builder = BundleBuilder::new(&opts);
        let (mut added, mut refused) = (0, 0);
        for d in 0..8 {
            match builder.add(heavy(d)) {
                Ok(()) => added += 1,
                Err(Error::DocumentRefused { path, why }) => {
                    assert_eq!(path, format!("heavy/{d:03}.md"));
                    assert!(why.contains("more than a reader accepts"), "{why}");
                    refused += 1;
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(
            added >= 2 && refused >= 1,
            "{added} added, {refused} refused"
        );
        let bytes = builder.encode(|| {}).unwrap().into_bytes();
        let whole = crate::bundle::decode(&bytes).unwrap();
        assert_eq!(whole.docs.documents.len(), added);
        let packed = crate::bundle::packed_docs(&bytes).unwrap();
        for d in 0..added {
            assert_eq!(packed.chunks(d).unwrap().len(), 200);
        }
        for sizes in [
            crate::bundle::split::ShardSizes::default(),
            crate::bundle::split::ShardSizes {
                lexical: 1,
                fragment: 1,
                vocabulary: 1,
                vectors: 64,
            },
        ] {
            let files = crate::bundle::split::split_with(&whole, &bytes, sizes).unwrap();
            let mut split = crate::bundle::split::SplitBundle::open(&files[0].1).unwrap();
            for (name, file) in &files[1..] {
                split.add(name, file).unwrap();
            }
        }
    }

    #[test]
    fn a_chunk_that_ends_before_it_starts_is_refused_when_added() {
        let opts = BuildOptions {
            builder: "test".into(),
            project_id: None,
            model: None,
            compact_threshold: 10,
            int8_vectors: false,
        };
        let mut doc = documents(0).remove(2);
        doc.chunks[1].location.line_end = 0;
        let mut builder = BundleBuilder::new(&opts);
        let err = builder.add(doc).unwrap_err();
        assert!(
            err.to_string()
                .contains("chunk 1 of guide/2.md ends before it starts"),
            "{err}"
        );
        // Nothing of it was added: the next document builds the bundle it would alone.
        let next = documents(0).remove(3);
        builder.add(next.clone()).unwrap();
        let alone = build_bundle(vec![next], &opts).unwrap();
        assert_eq!(builder.finish().unwrap().docs, alone.docs);
    }

    #[test]
    fn a_chunk_without_its_vector_is_refused_before_anything_is_added() {
        let model = ModelInfo {
            id: "test-model".into(),
            sha256: "0".repeat(64),
            tokenizer_sha256: "1".repeat(64),
            dims: 24,
            max_tokens: 256,
        };
        let opts = BuildOptions {
            builder: "test".into(),
            project_id: None,
            model: Some(model),
            compact_threshold: 1_000,
            int8_vectors: false,
        };
        let docs = documents(24);
        let mut short = docs[2].clone();
        short.chunks[4].embedding = Some(Embedding::Fresh(vec![0.5; 12]));
        let mut missing = docs[2].clone();
        missing.chunks[5].embedding = None;
        let mut builder = BundleBuilder::new(&opts);
        for (bad, says) in [
            (
                short,
                "chunk 4 of guide/2.md has 12 dims, model test-model has 24",
            ),
            (missing, "chunk 5 of guide/2.md has no embedding"),
        ] {
            let err = builder.add(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
        builder.add(docs[3].clone()).unwrap();
        let alone = build_bundle(vec![docs[3].clone()], &opts).unwrap();
        let built = builder.finish().unwrap();
        assert_eq!(built.docs, alone.docs);
        assert_eq!(built.lexical, alone.lexical);
        assert_eq!(built.vectors.unwrap().len(), 9);
    }
}
