//! Writing the split layout: a bundle cut into its core and shards, each file a pure
//! function of the bundle's bytes.

use super::*;

/// Every term's surface forms, in term order, as the query side's `suggest::surfaces` finds
/// them over a whole bundle
/// (none where no word of its sampled chunks makes the term). One pass over the chunks: a
/// chunk is read for the terms whose first [`SURFACE_SAMPLE`] postings hold it.
pub fn surface_forms(bundle: &crate::bundle::Bundle) -> crate::error::Result<Vec<Vec<String>>> {
    let lexical = &bundle.lexical;
    let analyzer = crate::analyze::Analyzer::for_version(bundle.header.analyzer.version);
    // Per chunk, the terms it is sampled for.
    let mut sampled: Vec<Vec<u32>> = vec![Vec::new(); bundle.docs.chunks.len()];
    for (term, postings) in lexical.postings.iter().enumerate() {
        for (c, _) in postings.iter().take(SURFACE_SAMPLE) {
            if let Some(list) = sampled.get_mut(c as usize) {
                list.push(term as u32);
            }
        }
    }
    let mut counts: Vec<BTreeMap<String, usize>> = vec![BTreeMap::new(); lexical.terms.len()];
    // In chunk order, each text block inflated once and not kept.
    let mut text = TextReader::new(&bundle.text);
    for (c, terms) in sampled.iter().enumerate().filter(|(_, t)| !t.is_empty()) {
        let meta = &bundle.docs.chunks[c];
        let Some(doc) = bundle.docs.documents.get(meta.doc as usize) else {
            continue;
        };
        let id = |term: &str| {
            lexical
                .term_id(term)
                .filter(|i| terms.contains(&(*i as u32)))
        };
        count_words(
            &analyzer,
            &[
                text.get(c)?,
                &doc.title,
                &meta.location.section_path.join(" "),
            ],
            id,
            |i, word| *counts[i].entry(word).or_default() += 1,
        );
    }
    Ok(counts.into_iter().map(most_frequent).collect())
}

/// Cuts a bundle (decoded from `bytes`) into its split files, `(file name, bytes)` in a fixed
/// order, `core.bin` first.
pub fn split(bundle: &Bundle, bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    split_with(bundle, bytes, ShardSizes::default())
}

/// [`split`] with other shard sizes (tests cut tiny shards to cross every boundary).
pub fn split_with(
    bundle: &Bundle,
    bytes: &[u8],
    sizes: ShardSizes,
) -> Result<Vec<(String, Vec<u8>)>> {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    split_into(bundle, bytes, sizes, |name, file| {
        files.push((name, file));
        Ok(())
    })?;
    // `core.bin` comes last from `split_into`; first here.
    files.rotate_right(1);
    Ok(files)
}

/// [`split_with`], handing each file to `sink` as soon as it is made (`core.bin` last, as it
/// lists the rest), so a writer need not hold them all: at 100,000 documents they are 650 MB.
pub fn split_into(
    bundle: &Bundle,
    bytes: &[u8],
    sizes: ShardSizes,
    mut sink: impl FnMut(String, Vec<u8>) -> Result<()>,
) -> Result<()> {
    // A static host hands every file to whoever asks: a restricted document's text would be
    // there for anyone to read.
    if let Some(access) = &bundle.access {
        return Err(Error::Encode(format!(
            "{} documents of this bundle are restricted to groups of readers (index-builder \
             build --access); a split layout is served file by file to anyone, so it is not \
             cut from it: serve the bundle with `docloupe serve --tokens`",
            access.documents.len()
        )));
    }
    let bundle_id: [u8; 32] = Sha256::digest(bytes).into();
    let tag = bundle_tag(&bundle_id);
    let mut add = |shard: ShardId, file: Vec<u8>| sink(shard.file_name(), file);

    // Lexical shards: term ranges of about LEXICAL_SHARD_BYTES.
    let lengths = &bundle.lexical.chunk_lengths;
    let mut lex_shards = Vec::new();
    let mut current = LexShard {
        terms: Vec::new(),
        postings: Vec::new(),
    };
    let mut size = 0;
    let mut lex_shard_terms = Vec::new();
    let mut flush = |current: &mut LexShard, lex_shards: &mut Vec<String>| -> Result<()> {
        let shard = ShardId::Lexical(lex_shards.len() as u32);
        lex_shards.push(current.terms[0].clone());
        lex_shard_terms.push(current.terms.len() as u32);
        let body = std::mem::replace(
            current,
            LexShard {
                terms: Vec::new(),
                postings: Vec::new(),
            },
        );
        add(shard, shard_file(tag, shard, body)?)
    };
    for (term, p) in bundle.lexical.terms.iter().zip(&bundle.lexical.postings) {
        let postings = ShardPostings {
            chunk_deltas: p.chunk_deltas.clone(),
            tfs: p.tfs.clone(),
            lens: p.iter().map(|(c, _)| lengths[c as usize]).collect(),
        };
        size += term.len() + to_bytes(&postings, "postings")?.len();
        current.terms.push(term.clone());
        current.postings.push(postings);
        if size >= sizes.lexical {
            flush(&mut current, &mut lex_shards)?;
            size = 0;
        }
    }
    if !current.terms.is_empty() {
        flush(&mut current, &mut lex_shards)?;
    }

    // Fragment shards: runs of whole documents of about FRAGMENT_SHARD_BYTES.
    let docs = &bundle.docs;
    let mut frag_shards = Vec::new();
    let mut start = 0usize;
    let mut size = 0;
    // Each document's chunks are packed once: a shard's are its documents' runs back to back
    // (packing starts afresh at every document).
    let mut packed = Vec::new();
    // Texts read in order, each block inflated once and let go (kept, the blocks of 2.24M
    // chunks were over 1 GB of the split's peak).
    let mut text = TextReader::new(&bundle.text);
    let mut texts = Vec::new();
    for (d, doc) in docs.documents.iter().enumerate() {
        let chunks = doc.first_chunk as usize..(doc.first_chunk + doc.chunk_count) as usize;
        let own = pack(std::slice::from_ref(doc), &docs.chunks[chunks.clone()])?;
        let own_texts = text.range(chunks)?;
        size += to_bytes(doc, "document")?.len()
            + to_bytes(&own, "chunks")?.len()
            + to_bytes(&own_texts, "texts")?.len();
        packed.extend(own);
        texts.extend(own_texts);
        if size >= sizes.fragment || d + 1 == docs.documents.len() {
            let shard = ShardId::Fragment(frag_shards.len() as u32);
            frag_shards.push(start as u32);
            let body = FragShardOut {
                documents: &docs.documents[start..d + 1],
                chunks: std::mem::take(&mut packed),
                texts: std::mem::take(&mut texts),
            };
            add(shard, shard_file(tag, shard, body)?)?;
            start = d + 1;
            size = 0;
        }
    }

    add(
        ShardId::Documents,
        shard_file(tag, ShardId::Documents, &docs.documents)?,
    )?;
    // Vocabulary shards: each term under every correction key it has, so a misspelt word
    // finds each of its corrections in one of its own keys' shards.
    let terms = &bundle.lexical.terms;
    let vocab_shards = terms
        .len()
        .div_ceil(sizes.vocabulary.max(1))
        .clamp(1, MAX_VOCAB_SHARDS as usize) as u32;
    let surfaces = surface_forms(bundle)?;
    let mut vocabulary: Vec<Vocabulary> = (0..vocab_shards)
        .map(|_| Vocabulary {
            terms: Vec::new(),
            dfs: Vec::new(),
            forms: Vec::new(),
            surfaces: Vec::new(),
        })
        .collect();
    for (i, term) in terms.iter().enumerate() {
        for shard in correction_shards(&[term], vocab_shards) {
            let v = &mut vocabulary[shard as usize];
            v.terms.push(term.clone());
            v.dfs.push(bundle.lexical.postings[i].tfs.len() as u32);
            v.forms.push(surfaces[i].len() as u8);
            v.surfaces
                .extend(surfaces[i].iter().map(|form| surface_entry(term, form)));
        }
    }
    for (i, body) in vocabulary.into_iter().enumerate() {
        let shard = ShardId::Vocabulary(i as u32);
        add(shard, shard_file(tag, shard, body)?)?;
    }

    let FacetTable {
        doc_types,
        months,
        doc_facets,
    } = FacetTable::of(&docs.documents);
    // The vectors section as the bundle holds it, in pieces: a host that has them all decodes
    // and validates exactly what the whole bundle would.
    let (header, body_start) = crate::bundle::format::decode_header(bytes)?;
    let mut vector_pieces = 0u32;
    if let Some(entry) = vectors_entry(&header) {
        let section = crate::bundle::format::section_bytes(bytes, body_start, entry)?;
        for piece in section.chunks(sizes.vectors.max(1)) {
            let shard = ShardId::Vectors(vector_pieces);
            add(shard, shard_file(tag, shard, piece)?)?;
            vector_pieces += 1;
        }
        if vector_pieces > MAX_VECTOR_PIECES {
            return Err(Error::Encode(format!(
                "the vectors section would take {vector_pieces} files, more than \
                 {MAX_VECTOR_PIECES}: cut larger pieces"
            )));
        }
    }

    let core = Core {
        bundle_id,
        bundle_bytes: bytes.len() as u64,
        header: bundle.header.clone(),
        avg_chunk_len: lexical::average_length(lengths),
        doc_chunks: docs.documents.iter().map(|d| d.chunk_count).collect(),
        doc_types,
        months,
        doc_facets,
        lex_shards,
        lex_shard_terms,
        frag_shards,
        vocab_shards,
        vector_pieces,
    };
    let payload = to_bytes(&core, "core")?;
    let mut core_file = SPLIT_MAGIC.to_vec();
    core_file.extend_from_slice(&SPLIT_VERSION.to_le_bytes());
    core_file.extend_from_slice(&Sha256::digest(&payload));
    core_file.extend_from_slice(&payload);
    sink(CORE_FILE.into(), core_file)
}
