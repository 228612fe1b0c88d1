//! Reading the split layout: the core, then each shard as it is added, checked against the
//! core before it is trusted.

use super::*;

/// A split bundle as far as it has been loaded: the core plus whichever shards were added.
#[derive(Debug)]
pub struct SplitBundle {
    pub core: Core,
    /// The layout's version ([`OLDEST_SPLIT_VERSION`] or [`SPLIT_VERSION`]).
    pub(super) version: u32,
    /// `first_chunk[d]` is document `d`'s first chunk; one extra entry holds the chunk count.
    pub(super) first_chunk: Vec<u32>,
    /// Loaded shards by number (a `Vec`, not a map: the lexical wasm build pays for every
    /// generic collection it instantiates).
    pub(super) lexical: Vec<Option<LexShard>>,
    pub(super) fragments: Vec<Option<FragShard>>,
    pub(super) documents: Option<Vec<Document>>,
    pub(super) vocabulary: Vec<Option<Vocabulary>>,
    /// Pieces of the vectors section added so far (dropped once all are in and decoded).
    #[cfg(feature = "vectors")]
    pub(super) vector_pieces: Vec<Piece>,
    /// The section's bytes from its start, as far as the pieces have come in order: a piece
    /// that follows them is added here at once, one that comes early is held until then.
    #[cfg(feature = "vectors")]
    pub(super) vector_prefix: Vec<u8>,
    /// The decoded vectors, once every piece is in, and each chunk's position among them.
    #[cfg(feature = "vectors")]
    pub(super) vectors: Option<Box<(crate::index::vector::VectorIndex, Vec<u32>)>>,
}

/// Where one piece of a split bundle's vectors section is.
#[cfg(feature = "vectors")]
#[derive(Debug)]
pub(super) enum Piece {
    Missing,
    /// Come ahead of a piece before it: its bytes, until that one is in.
    Held(Vec<u8>),
    /// In [`SplitBundle::vector_prefix`].
    InSection,
}

#[cfg(feature = "vectors")]
impl Piece {
    pub(super) fn len(&self) -> usize {
        match self {
            Piece::Held(bytes) => bytes.len(),
            _ => 0,
        }
    }
}

impl SplitBundle {
    /// Reads and verifies `core.bin`.
    pub fn open(bytes: &[u8]) -> Result<SplitBundle> {
        const PREFIX: usize = 8 + 4 + 32;
        let version = check_prefix(
            bytes,
            SPLIT_MAGIC,
            PREFIX,
            (OLDEST_SPLIT_VERSION, SPLIT_VERSION),
        )?;
        let payload = &bytes[PREFIX..];
        if Sha256::digest(payload).as_slice() != &bytes[12..44] {
            return Err(Error::ChecksumMismatch {
                part: CORE_FILE.into(),
            });
        }
        let core: Core = decode_exact(payload, CORE_FILE)?;
        let corrupt = |m: &str| Err(Error::Corrupt(format!("{CORE_FILE}: {m}")));
        core.header.analyzer.validate()?;
        // (A build without `access` reads no access section anyway.)
        #[cfg(feature = "access")]
        if core
            .header
            .sections
            .iter()
            .any(|s| s.kind == crate::bundle::SectionKind::Access)
        {
            return corrupt("a split layout never holds restricted documents");
        }
        if !(core.avg_chunk_len.is_finite() && core.avg_chunk_len >= 1.0) {
            return corrupt("the average chunk length is not a length");
        }
        let counts = core.header.counts;
        let n_docs = core.doc_chunks.len();
        if n_docs != counts.documents as usize || core.doc_facets.len() != n_docs {
            return corrupt("document tables disagree with the header's counts");
        }
        let mut first_chunk = Vec::with_capacity(n_docs + 1);
        let mut total = 0u64;
        for &c in &core.doc_chunks {
            first_chunk.push(total as u32);
            total += c as u64;
        }
        if total != counts.chunks as u64 {
            return corrupt("chunk counts per document do not add up to the header's");
        }
        first_chunk.push(total as u32);
        let facets_ok = core.doc_facets.iter().all(|&(t, m)| {
            (t as usize) < core.doc_types.len() && (m as usize) <= core.months.len()
        });
        if !facets_ok {
            return corrupt("a facet key points past its table");
        }
        if core.lex_shard_terms.len() != core.lex_shards.len() || core.lex_shard_terms.contains(&0)
        {
            return corrupt("lexical shard term counts disagree with the shards");
        }
        if !core.lex_shards.windows(2).all(|w| w[0] < w[1])
            || !core.frag_shards.windows(2).all(|w| w[0] < w[1])
            || (n_docs > 0 && core.frag_shards.first() != Some(&0))
            || core
                .frag_shards
                .last()
                .is_some_and(|&d| d as usize >= n_docs)
        {
            return corrupt("shard boundaries are out of order");
        }
        if !(1..=MAX_VOCAB_SHARDS).contains(&core.vocab_shards) {
            return corrupt("the vocabulary shard count is out of range");
        }
        let vectors_len = vectors_entry(&core.header).map(|e| e.len);
        let pieces_fit = match vectors_len {
            None => core.vector_pieces == 0,
            Some(len) => {
                (1..=MAX_VECTOR_PIECES).contains(&core.vector_pieces)
                    && u64::from(core.vector_pieces) <= len.max(1)
            }
        };
        if !pieces_fit || core.header.flags.hybrid != vectors_len.is_some() {
            return corrupt("the vector piece count disagrees with the header");
        }
        let lexical = (0..core.lex_shards.len()).map(|_| None).collect();
        let fragments = (0..core.frag_shards.len()).map(|_| None).collect();
        Ok(SplitBundle {
            vocabulary: (0..core.vocab_shards).map(|_| None).collect(),
            #[cfg(feature = "vectors")]
            vector_pieces: (0..core.vector_pieces).map(|_| Piece::Missing).collect(),
            #[cfg(feature = "vectors")]
            vector_prefix: Vec::new(),
            #[cfg(feature = "vectors")]
            vectors: None,
            core,
            version,
            first_chunk,
            lexical,
            fragments,
            documents: None,
        })
    }

    /// Drops every lexical, fragment, documents and vocabulary shard added so far (the core
    /// and the vectors stay): a long-lived host bounds its memory so, and searches name the
    /// shards they need again.
    pub fn forget_shards(&mut self) {
        self.lexical.iter_mut().for_each(|s| *s = None);
        self.fragments.iter_mut().for_each(|s| *s = None);
        self.vocabulary.iter_mut().for_each(|s| *s = None);
        self.documents = None;
    }

    /// Verifies and installs one shard file, named as [`ShardId::file_name`] names it.
    pub fn add(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        let shard = ShardId::from_file_name(name)
            .ok_or_else(|| Error::Corrupt(format!("{name:?} is not a file of a split bundle")))?;
        match shard {
            ShardId::Lexical(i) => {
                let body: LexShard = self.open_shard(shard, bytes)?;
                self.check_lexical(i, &body)?;
                self.lexical[i as usize] = Some(body);
            }
            ShardId::Fragment(i) => {
                let FragShardIn {
                    documents,
                    chunks,
                    texts,
                } = if self.version > OLDEST_SPLIT_VERSION {
                    self.open_shard(shard, bytes)?
                } else {
                    let old: FragShardIn<DocumentV8> = self.open_shard(shard, bytes)?;
                    FragShardIn {
                        documents: old.documents.into_iter().map(Document::from).collect(),
                        chunks: old.chunks,
                        texts: old.texts,
                    }
                };
                let first_doc = self.fragment_docs(i).map_or(0, |d| d.start as u32);
                let chunks = unpack(&documents, first_doc, chunks, budget_for(bytes.len()))
                    .map_err(|e| self.corrupt(shard, &e))?;
                let body = FragShard {
                    documents,
                    chunks,
                    texts,
                };
                self.check_fragment(i, &body)?;
                self.fragments[i as usize] = Some(body);
            }
            ShardId::Documents => {
                let body: Vec<Document> = if self.version > OLDEST_SPLIT_VERSION {
                    self.open_shard(shard, bytes)?
                } else {
                    let old: Vec<DocumentV8> = self.open_shard(shard, bytes)?;
                    old.into_iter().map(Document::from).collect()
                };
                let fits = body.len() == self.n_docs()
                    && body
                        .iter()
                        .enumerate()
                        .all(|(d, doc)| self.doc_fits(d, doc));
                if !fits {
                    return Err(self.corrupt(shard, "documents disagree with the core"));
                }
                self.documents = Some(body);
            }
            ShardId::Vocabulary(i) => {
                if i >= self.core.vocab_shards {
                    return Err(self.corrupt(shard, "is not a shard of this split"));
                }
                let body: Vocabulary = self.open_shard(shard, bytes)?;
                let n = self.core.vocab_shards;
                let fits = body.terms.len() == body.dfs.len()
                    && body.terms.len() == body.forms.len()
                    && body.forms.iter().all(|&n| n as usize <= SURFACE_FORMS)
                    && body.forms.iter().map(|&n| n as usize).sum::<usize>() == body.surfaces.len()
                    && {
                        let mut forms = body.surfaces.iter();
                        body.terms.iter().zip(&body.forms).all(|(t, &n)| {
                            forms
                                .by_ref()
                                .take(n as usize)
                                .all(|(keep, _)| t.is_char_boundary(*keep as usize))
                        })
                    }
                    && body.terms.windows(2).all(|w| w[0] < w[1])
                    && body.terms.iter().all(|t| {
                        correction_keys(t)
                            .iter()
                            .any(|k| correction_shard(k, n) == i)
                    });
                if !fits {
                    return Err(self.corrupt(shard, "malformed term list"));
                }
                self.vocabulary[i as usize] = Some(body);
            }
            #[cfg(feature = "vectors")]
            ShardId::Vectors(i) => self.add_vector_piece(i, bytes)?,
            // The first-paint build has no vector search: its hosts never fetch vectors.
            #[cfg(not(feature = "vectors"))]
            ShardId::Vectors(_) => return Err(self.corrupt(shard, "is not read by this build")),
        }
        Ok(())
    }

    /// Installs piece `i` of the vectors section; the last one to arrive decodes them all,
    /// with the whole bundle's checks (the section's checksum, the graph's bounds, one vector
    /// per chunk of the model's width).
    #[cfg(feature = "vectors")]
    pub(super) fn add_vector_piece(&mut self, i: u32, bytes: &[u8]) -> Result<()> {
        let shard = ShardId::Vectors(i);
        let entry = vectors_entry(&self.core.header).cloned();
        let (Some(entry), Some(slot)) = (entry, self.vector_pieces.get(i as usize)) else {
            return Err(self.corrupt(shard, "is not a file of this split"));
        };
        if !matches!(slot, Piece::Missing) || self.vectors.is_some() {
            return Ok(());
        }
        // Borrowed from `bytes` (postcard lays a byte string out as it is) and copied once:
        // onto the section's bytes when the pieces before it are in (as a reader that reads
        // them in order always finds), else held until they are. 153 MB of pieces at 2.24M
        // vectors had been copied out, then all again into one buffer.
        let body: &[u8] = self.open_shard(shard, bytes)?;
        let held: usize = self.vector_pieces.iter().map(Piece::len).sum();
        let arrived = self.vector_prefix.len() + held + body.len();
        if arrived as u64 > entry.len {
            return Err(self.corrupt(shard, "the pieces outgrow the vectors section"));
        }
        let next = self
            .vector_pieces
            .iter()
            .position(|p| !matches!(p, Piece::InSection))
            .unwrap_or(self.vector_pieces.len());
        if i as usize == next {
            self.vector_prefix.extend_from_slice(body);
            self.vector_pieces[next] = Piece::InSection;
            for piece in &mut self.vector_pieces[next + 1..] {
                match std::mem::replace(piece, Piece::InSection) {
                    Piece::Held(bytes) => self.vector_prefix.extend_from_slice(&bytes),
                    other => {
                        *piece = other;
                        break;
                    }
                }
            }
        } else {
            self.vector_pieces[i as usize] = Piece::Held(body.to_vec());
        }
        if self
            .vector_pieces
            .iter()
            .any(|p| !matches!(p, Piece::InSection))
        {
            return Ok(());
        }
        // Whatever the outcome, the pieces are not kept: a bad set is fetched again. (Sized
        // by what arrived, never by the core's claim.)
        let section = std::mem::take(&mut self.vector_prefix);
        self.vector_pieces.fill_with(|| Piece::Missing);
        crate::bundle::format::verify_section(&section, &entry)?;
        self.install_vectors(crate::index::vector::decode(&section)?)
    }

    /// Installs vectors decoded elsewhere (a native host's cache of them, keyed by the
    /// section's checksum), checked as the pieces' are: one per chunk, of the model's width.
    /// Pieces added before are dropped.
    #[cfg(feature = "vectors")]
    pub fn install_vectors(&mut self, vectors: crate::index::vector::VectorIndex) -> Result<()> {
        let dims = self.core.header.embedding.as_ref().map_or(0, |m| m.dims);
        vectors.validate(self.n_chunks(), dims as usize)?;
        let positions = vectors.positions(self.n_chunks());
        self.vector_prefix = Vec::new();
        self.vector_pieces.fill_with(|| Piece::Missing);
        self.vectors = Some(Box::new((vectors, positions)));
        Ok(())
    }

    /// The vectors and each chunk's position among them (`u32::MAX`: none), or the pieces
    /// still missing.
    #[cfg(feature = "vectors")]
    #[allow(clippy::type_complexity)]
    pub fn vectors(
        &self,
    ) -> std::result::Result<(&crate::index::vector::VectorIndex, &[u32]), Vec<ShardId>> {
        match self.vectors.as_deref() {
            Some((v, positions)) => Ok((v, positions)),
            None => Err(self.vector_files()),
        }
    }

    /// The `vec-N.bin` pieces not added yet (none once the vectors are decoded).
    #[cfg(feature = "vectors")]
    pub fn vector_files(&self) -> Vec<ShardId> {
        if self.vectors.is_some() {
            return Vec::new();
        }
        (0..self.vector_pieces.len() as u32)
            .filter(|&i| matches!(self.vector_pieces[i as usize], Piece::Missing))
            .map(ShardId::Vectors)
            .collect()
    }

    pub(super) fn corrupt(&self, shard: ShardId, m: &str) -> Error {
        Error::Corrupt(format!("{}: {m}", shard.file_name()))
    }

    pub(super) fn open_shard<'a, T: Deserialize<'a>>(
        &self,
        shard: ShardId,
        bytes: &'a [u8],
    ) -> Result<T> {
        let name = shard.file_name();
        if bytes.len() < 32 {
            return Err(Error::BundleTruncated(format!(
                "{name} has {} bytes, less than its checksum",
                bytes.len()
            )));
        }
        let (sum, payload) = bytes.split_at(32);
        if Sha256::digest(payload).as_slice() != sum {
            return Err(Error::ChecksumMismatch { part: name });
        }
        let file: ShardFile<T> = decode_exact(payload, &name)?;
        if file.bundle_tag != bundle_tag(&self.core.bundle_id) {
            return Err(self.corrupt(shard, "belongs to a different bundle than core.bin"));
        }
        if file.shard != shard {
            return Err(self.corrupt(shard, "holds a different shard than its name says"));
        }
        Ok(file.body)
    }

    pub(super) fn check_lexical(&self, i: u32, body: &LexShard) -> Result<()> {
        let shard = ShardId::Lexical(i);
        let (Some(first), next) = (
            self.core.lex_shards.get(i as usize),
            self.core.lex_shards.get(i as usize + 1),
        ) else {
            return Err(self.corrupt(shard, "no such shard in core.bin"));
        };
        let in_range = body.terms.first() == Some(first)
            && body.terms.windows(2).all(|w| w[0] < w[1])
            && next.is_none_or(|n| body.terms.last().is_some_and(|l| l < n));
        let counted = self.core.lex_shard_terms.get(i as usize) == Some(&(body.terms.len() as u32));
        if !in_range || !counted || body.terms.len() != body.postings.len() {
            return Err(self.corrupt(shard, "terms outside the shard's range"));
        }
        for p in &body.postings {
            let n = p.tfs.len();
            if n == 0 || p.chunk_deltas.len() != n || p.lens.len() != n {
                return Err(self.corrupt(shard, "malformed postings"));
            }
            if let Err(why) = lexical::check_deltas(p.chunk_deltas.iter(), self.n_chunks()) {
                return Err(self.corrupt(shard, &format!("postings {why}")));
            }
        }
        Ok(())
    }

    pub(super) fn check_fragment(&self, i: u32, body: &FragShard) -> Result<()> {
        let shard = ShardId::Fragment(i);
        let Some(docs) = self.fragment_docs(i) else {
            return Err(self.corrupt(shard, "no such shard in core.bin"));
        };
        let chunks = self.first_chunk[docs.start] as usize..self.first_chunk[docs.end] as usize;
        let fits = body.documents.len() == docs.len()
            && body.chunks.len() == chunks.len()
            && body.texts.len() == chunks.len()
            && body
                .documents
                .iter()
                .zip(docs.clone())
                .all(|(doc, d)| self.doc_fits(d, doc))
            && body.chunks.iter().zip(chunks.clone()).all(|(meta, c)| {
                let d = meta.doc as usize;
                docs.contains(&d) && self.first_chunk[d] as usize + meta.chunk_index as usize == c
            });
        if !fits {
            return Err(self.corrupt(shard, "documents or chunks disagree with the core"));
        }
        Ok(())
    }

    /// Whether `doc`, as a shard holds it, has the chunks the core gives document `d` and a
    /// path that can be a link ([`super::document_path_problem`]).
    pub(super) fn doc_fits(&self, d: usize, doc: &Document) -> bool {
        doc.first_chunk == self.first_chunk[d]
            && doc.chunk_count == self.core.doc_chunks[d]
            && crate::bundle::document_path_problem(&doc.path).is_none()
    }

    /// Documents of fragment shard `i`.
    pub(super) fn fragment_docs(&self, i: u32) -> Option<std::ops::Range<usize>> {
        let start = *self.core.frag_shards.get(i as usize)? as usize;
        let end = self
            .core
            .frag_shards
            .get(i as usize + 1)
            .map_or(self.n_docs(), |&d| d as usize);
        Some(start..end)
    }

    pub fn header(&self) -> &Header {
        &self.core.header
    }

    pub fn n_docs(&self) -> usize {
        self.core.doc_chunks.len()
    }

    pub fn n_chunks(&self) -> usize {
        *self.first_chunk.last().unwrap_or(&0) as usize
    }

    /// Chunks of document `d`: (first, count).
    pub fn doc_span(&self, d: u32) -> (u32, u32) {
        (
            self.first_chunk[d as usize],
            self.core.doc_chunks[d as usize],
        )
    }

    pub fn doc_of(&self, chunk: u32) -> u32 {
        (self.first_chunk[..self.n_docs()].partition_point(|&f| f <= chunk) - 1) as u32
    }

    /// Each document's first chunk, then the chunk count: document `d` holds chunks
    /// `firsts[d]..firsts[d + 1]`.
    pub fn doc_firsts(&self) -> &[u32] {
        &self.first_chunk
    }

    /// Document type and `YYYY-MM` of document `d`.
    pub fn facet_keys(&self, d: u32) -> (&str, Option<&str>) {
        let (t, m) = self.core.doc_facets[d as usize];
        let month = (m > 0).then(|| self.core.months[m as usize - 1].as_str());
        (self.core.doc_types[t as usize].as_str(), month)
    }

    /// The shard holding `term`'s postings, and the postings if it is loaded (`Ok(None)`:
    /// loaded, and the term is not in the index).
    pub fn postings(&self, term: &str) -> std::result::Result<Option<&ShardPostings>, ShardId> {
        let i = self
            .core
            .lex_shards
            .partition_point(|f| f.as_str() <= term)
            .checked_sub(1);
        let Some(i) = i else {
            return Ok(None); // sorts before every term
        };
        let shard = self.lexical[i].as_ref().ok_or(ShardId::Lexical(i as u32))?;
        Ok(shard
            .terms
            .binary_search_by(|t| t.as_str().cmp(term))
            .ok()
            .map(|k| &shard.postings[k]))
    }

    /// Terms of the index that start with `prefix`, with their document frequencies, in term
    /// order; `Ok(None)` when there are more than `cap` (found from the core's term counts
    /// before any shard is read, when the prefix covers whole shards). `Err`: the shards the
    /// prefix's range touches that are not loaded.
    #[allow(clippy::type_complexity)]
    pub fn terms_with_prefix(
        &self,
        prefix: &str,
        cap: usize,
    ) -> std::result::Result<Option<Vec<(&str, usize)>>, Vec<ShardId>> {
        let shards = &self.core.lex_shards;
        if shards.is_empty() {
            return Ok(Some(Vec::new()));
        }
        // The first shard that may hold such a term, and the last.
        let first = shards
            .partition_point(|f| f.as_str() <= prefix)
            .saturating_sub(1);
        let last = shards
            .partition_point(|f| f.as_str() < prefix || f.starts_with(prefix))
            .saturating_sub(1)
            .max(first);
        // The shards between them hold nothing but such terms.
        let inner: usize = self.core.lex_shard_terms[(first + 1).min(last)..last]
            .iter()
            .map(|&n| n as usize)
            .sum();
        if inner > cap {
            return Ok(None);
        }
        let missing: Vec<ShardId> = (first..=last)
            .filter(|&i| self.lexical[i].is_none())
            .map(|i| ShardId::Lexical(i as u32))
            .collect();
        if !missing.is_empty() {
            return Err(missing);
        }
        let mut out = Vec::new();
        for shard in self.lexical[first..=last].iter().flatten() {
            let from = shard.terms.partition_point(|t| t.as_str() < prefix);
            out.extend(
                shard.terms[from..]
                    .iter()
                    .zip(&shard.postings[from..])
                    .take_while(|(t, _)| t.starts_with(prefix))
                    .map(|(t, p)| (t.as_str(), p.tfs.len())),
            );
            if out.len() > cap {
                return Ok(None);
            }
        }
        Ok(Some(out))
    }

    /// The fragment shard holding document `d`, and `d`'s position in it.
    pub(super) fn fragment_of(&self, d: u32) -> std::result::Result<(&FragShard, usize), ShardId> {
        let i = self.core.frag_shards.partition_point(|&f| f <= d) - 1;
        let frag = self.fragments[i]
            .as_ref()
            .ok_or(ShardId::Fragment(i as u32))?;
        Ok((frag, (d - self.core.frag_shards[i]) as usize))
    }

    /// Metadata of document `d`.
    pub fn document(&self, d: u32) -> std::result::Result<&Document, ShardId> {
        if let Some(all) = &self.documents {
            return Ok(&all[d as usize]);
        }
        let (frag, k) = self.fragment_of(d)?;
        Ok(&frag.documents[k])
    }

    /// Metadata and text of `chunk`.
    pub fn chunk(&self, chunk: u32) -> std::result::Result<(&ChunkMeta, &str), ShardId> {
        let (frag, _) = self.fragment_of(self.doc_of(chunk))?;
        let k = (chunk - frag.documents[0].first_chunk) as usize;
        Ok((&frag.chunks[k], frag.texts[k].as_str()))
    }

    pub fn all_documents(&self) -> std::result::Result<&[Document], ShardId> {
        self.documents.as_deref().ok_or(ShardId::Documents)
    }

    /// Vocabulary shard `i` (`i` below [`Core::vocab_shards`]).
    pub fn vocabulary(&self, i: u32) -> std::result::Result<&Vocabulary, ShardId> {
        self.vocabulary
            .get(i as usize)
            .and_then(Option::as_ref)
            .ok_or(ShardId::Vocabulary(i))
    }
}
