//! The query side: load → validate → analyze → embed → retrieve → fuse → second stage →
//! present → suggest.
//!
//! [`Engine`] holds a decoded bundle (whole, or split and loaded piece by piece), the
//! embedding model that queries it and the second stage. `Engine::run` takes one request
//! through the contract's states, each stage a function of the module that owns it:
//! validated ([`request`]) → candidates ([`retrieve`], in the scope of [`filter`], the query's
//! words through [`expand`]) → fused ([`fuse`]) → reordered or fallen back (`second_stage`:
//! [`rank`] or [`rerank`]) → returned ([`present`], [`suggest`]). Invalid input is refused
//! before any index is read.

pub mod access;
pub mod corpus;
pub mod distance;
pub mod documents;
pub mod expand;
pub mod filter;
pub mod fuse;
pub mod present;
#[cfg(feature = "vectors")]
pub mod rank;
pub mod request;
pub mod rerank;
pub mod response;
pub mod retrieve;
mod second_stage;
pub mod suggest;

use web_time::Instant;

use crate::analyze::Analyzer;
use crate::bundle::split::SplitBundle;
use crate::bundle::{self, Bundle, Header};
use crate::embed::ModelInfo;
#[cfg(feature = "models")]
use crate::embed::{Embedder, ModelFiles};
use crate::error::{Error, Result};
use corpus::{Corpus, Data};

pub use access::Access;
pub use fuse::Fusion;
pub use request::{Filters, Mode, SearchRequest, MAX_QUERY_CHARS};
#[cfg(not(target_arch = "wasm32"))]
pub use rerank::default_reranker_dir;
#[cfg(feature = "models")]
pub use rerank::CrossEncoder;
pub use rerank::{FallbackPolicy, Rerank, RerankerFiles};
pub use response::{
    ContextChunk, ErrorResponse, Facets, Highlight, RankingSignals, SearchResponse, SearchResult,
    Timings,
};

/// `degradedReason` of a semantic or hybrid request answered lexically while the models load.
pub const MODELS_LOADING: &str = "models_loading";
/// `degradedReason` of a semantic or hybrid request answered lexically by a host that runs
/// without the models (an edge Worker: they do not fit its memory).
pub const MODELS_UNAVAILABLE: &str = "models_unavailable";

/// Why a host without the embedding model answers semantic and hybrid requests from the
/// lexical index (flagged) instead of refusing them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LexicalFallback {
    /// The browser's progressive start: the lexical build answers while the full one loads.
    ModelsLoading,
    /// The host never loads them.
    ModelsUnavailable,
}

impl LexicalFallback {
    /// The response's `degradedReason`.
    pub fn reason(self) -> &'static str {
        match self {
            LexicalFallback::ModelsLoading => MODELS_LOADING,
            LexicalFallback::ModelsUnavailable => MODELS_UNAVAILABLE,
        }
    }

    /// The inverse of [`LexicalFallback::reason`].
    pub fn from_reason(reason: &str) -> Option<LexicalFallback> {
        [
            LexicalFallback::ModelsLoading,
            LexicalFallback::ModelsUnavailable,
        ]
        .into_iter()
        .find(|f| f.reason() == reason)
    }
}

/// Engine-wide settings a host chooses (not part of a request).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineOptions {
    /// Time the rerank stage may take per request before falling back (`rerankBudgetMs`).
    pub rerank_budget_ms: u64,
    pub fallback_policy: FallbackPolicy,
    /// The host has no embedding model, and says why: semantic and hybrid requests are then
    /// answered from the lexical index, flagged `fallbackApplied: true` with the reason as
    /// `degradedReason`, instead of refused as with no model at all. `None`: refused.
    pub lexical_fallback: Option<LexicalFallback>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            rerank_budget_ms: 2_000,
            fallback_policy: FallbackPolicy::default(),
            lexical_fallback: None,
        }
    }
}

/// Settings only the quality benchmark, the trainers and the tests change
/// ([`Engine::calibrate`]; the CLI exposes them in its calibration build alone, `make
/// calibration`): every host runs the defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// Ceiling on `limit`: the contract's 50. Evaluation raises it to read deeper rankings.
    pub max_limit: usize,
    pub fusion: Fusion,
    /// How much the rerank model decides the order of its pool: the pool is sorted by
    /// `w · p + (1 − w) · fused`, with `p` the model's probability and `fused` the fused score
    /// (0..1 for the default weighted fusion). 1 = the model alone. `None`: the weight
    /// calibrated for the model ([`Rerank::blend_weight`], chosen on a training split, never
    /// on test qrels), else 1.
    pub rerank_weight: Option<f32>,
    /// Results of the learned second stage carry its features (`rankingSignals.features`):
    /// training data for `prebuild/ranker`, never for clients.
    pub explain_features: bool,
    /// The cosine from which a semantic neighbour that shares no word with the query matches;
    /// `None`: the bundle's model's rule ([`crate::embed::match_rule`]). Tools that calibrate
    /// it set 0 (every neighbour matches).
    pub match_floor: Option<f32>,
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration {
            max_limit: request::MAX_LIMIT,
            fusion: Fusion::default(),
            rerank_weight: None,
            explain_features: false,
            match_floor: None,
        }
    }
}

/// How many times [`Engine::search_fetching`] fetches missing files for one request before
/// giving up; the deepest request (a misspelt word: postings, vocabulary, the suggestion's
/// postings, then text) needs four.
pub const MAX_FETCH_ROUNDS: usize = 6;

/// A loaded bundle (whole, or split and loaded piece by piece) plus the models that query it.
#[derive(Debug)]
pub struct Engine {
    data: Data,
    analyzer: Analyzer,
    #[cfg(feature = "models")]
    embedder: Option<Embedder>,
    /// A model-based second stage (a cross-encoder) the host installed; it replaces the
    /// learned ranker.
    reranker: Option<Box<dyn Rerank>>,
    /// The learned second stage (on by default; `None` after [`Engine::without_second_stage`]).
    #[cfg(feature = "vectors")]
    ranker: Option<&'static rank::Ranker>,
    /// Storage position of each chunk's vector.
    positions: Vec<u32>,
    options: EngineOptions,
    calibration: Calibration,
    /// What each reader may see of a bundle that restricts some documents ([`access`]).
    #[cfg(feature = "access")]
    views: access::Views,
    /// The scopes of recent requests, masked ([`filter::Masks`]).
    #[cfg(feature = "access")]
    masks: filter::Masks,
}

impl Engine {
    /// Decodes `bytes` with no models: `fulltext` only (semantic and hybrid requests are
    /// refused as with a missing model). The lexical-only build has just this.
    pub fn lexical(bytes: &[u8]) -> Result<Engine> {
        // Without vector search compiled in, nothing can ever read the vectors: skip them.
        #[cfg(not(feature = "vectors"))]
        let bundle = bundle::decode_lexical(bytes)?;
        #[cfg(feature = "vectors")]
        let bundle = bundle::decode(bytes)?;
        Ok(Engine::assemble(Data::Whole(bundle)))
    }

    /// Opens a split bundle from its `core.bin`. Searches name the files they need
    /// ([`Error::FilesNeeded`]) until the host adds them with [`Engine::add_split_file`];
    /// [`Engine::search_fetching`] runs that loop. Semantic and hybrid search need the
    /// embedding model installed and every `vec-N.bin` ([`Engine::missing_vector_files`]).
    pub fn split(core: &[u8]) -> Result<Engine> {
        Ok(Engine::assemble(Data::Split(SplitBundle::open(core)?)))
    }

    /// Adds one file of a split bundle (verified against the core before it is used).
    pub fn add_split_file(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        match &mut self.data {
            Data::Split(s) => s.add(name, bytes),
            Data::Whole(_) => Err(Error::Internal(format!(
                "{name}: this engine holds a whole bundle, not a split one"
            ))),
        }
    }

    /// Drops the shards a split bundle's searches have added (not its core or vectors; see
    /// [`SplitBundle::forget_shards`]); a whole bundle keeps everything.
    pub fn forget_split_files(&mut self) {
        if let Data::Split(s) = &mut self.data {
            s.forget_shards();
        }
    }

    /// [`Engine::search`], fetching the files of a split bundle the request needs with
    /// `fetch(file name)` (at most [`MAX_FETCH_ROUNDS`] rounds, all of a round's files
    /// before the next try). A whole bundle never calls `fetch`.
    pub fn search_fetching(
        &mut self,
        req: &SearchRequest,
        mut fetch: impl FnMut(&str) -> Result<Vec<u8>>,
    ) -> Result<SearchResponse> {
        for _ in 0..MAX_FETCH_ROUNDS {
            match self.search_guarded(req) {
                Err(Error::FilesNeeded(files)) => {
                    for name in files {
                        let bytes = fetch(&name)?;
                        self.add_split_file(&name, &bytes)?;
                    }
                }
                done => return done,
            }
        }
        Err(Error::Internal(format!(
            "the request still needed files after {MAX_FETCH_ROUNDS} rounds"
        )))
    }

    fn assemble(data: Data) -> Engine {
        let positions = match &data {
            Data::Whole(b) => b
                .vectors
                .as_ref()
                .map(|v| v.positions(b.docs.chunks.len()))
                .unwrap_or_default(),
            Data::Split(_) => Vec::new(),
        };
        Engine {
            // Queries are analyzed by the rules the bundle's text was.
            analyzer: Analyzer::for_version(data.header().analyzer.version),
            data,
            #[cfg(feature = "models")]
            embedder: None,
            reranker: None,
            #[cfg(feature = "vectors")]
            ranker: Some(rank::Ranker::default_model()),
            positions,
            options: EngineOptions::default(),
            calibration: Calibration::default(),
            #[cfg(feature = "access")]
            views: access::Views::default(),
            #[cfg(feature = "access")]
            masks: filter::Masks::default(),
        }
    }

    /// Decodes `bytes` and loads the model if given. A bundle with vectors queried without a
    /// model still answers `fulltext`; a model different from the bundle's is an error.
    #[cfg(feature = "models")]
    pub fn from_bundle(bytes: &[u8], models: Option<&ModelFiles>) -> Result<Engine> {
        let embedder = models.map(Embedder::new).transpose()?;
        Engine::with_embedder(bytes, embedder)
    }

    /// Like [`Engine::from_bundle`] with an already loaded model (loading one takes longer
    /// than decoding most bundles, so callers with several bundles share it).
    #[cfg(feature = "models")]
    pub fn with_embedder(bytes: &[u8], embedder: Option<Embedder>) -> Result<Engine> {
        Engine::from_decoded(bundle::decode(bytes)?, embedder)
    }

    /// An engine over an already decoded bundle ([`bundle::BundleFile`] reads one from a file
    /// section by section, without its vectors when only `fulltext` will be asked).
    #[cfg(feature = "models")]
    pub fn from_decoded(bundle: Bundle, embedder: Option<Embedder>) -> Result<Engine> {
        let mut engine = Engine::assemble(Data::Whole(bundle));
        if let Some(e) = embedder {
            engine.install_embedder(e)?;
        }
        Ok(engine)
    }

    /// Installs the embedding model after the bundle (the browser loads models in the
    /// background while the engine already answers `fulltext`). It must be the bundle's model.
    #[cfg(feature = "models")]
    pub fn install_embedder(&mut self, embedder: Embedder) -> Result<()> {
        match &self.data {
            // A split bundle reads its vectors from its `vec-N.bin` files, fetched like any
            // other of its files.
            Data::Split(_) => {}
            Data::Whole(b) if b.vectors.is_none() && b.header.flags.hybrid => {
                return Err(Error::Model(
                    "the bundle was decoded without its vectors (fulltext only); decode it \
                     with them for semantic search"
                        .into(),
                ))
            }
            Data::Whole(_) => {}
        }
        self.check_embedding_model(embedder.info())?;
        self.embedder = Some(embedder);
        Ok(())
    }

    /// Whether `provided` (ONNX and tokenizer hashes) is the model the bundle was built with;
    /// hosts call it before a slow load to name a wrong file at once.
    pub fn check_embedding_model(&self, provided: &ModelInfo) -> Result<()> {
        if let Some(expected) = &self.header().embedding {
            if expected.sha256 != provided.sha256
                || expected.tokenizer_sha256 != provided.tokenizer_sha256
            {
                return Err(Error::EmbeddingModelMismatch {
                    expected: expected.describe(),
                    provided: provided.describe(),
                });
            }
        }
        Ok(())
    }

    /// Installs the rerank model used when a hybrid request asks for reranking.
    pub fn with_reranker(mut self, reranker: Box<dyn Rerank>) -> Engine {
        self.set_reranker(reranker);
        self
    }

    pub fn set_reranker(&mut self, reranker: Box<dyn Rerank>) {
        self.reranker = Some(reranker);
    }

    /// No second stage at all: reranking requests fall back to the fused order
    /// (`rerank_model_unavailable`).
    pub fn without_second_stage(mut self) -> Engine {
        self.reranker = None;
        #[cfg(feature = "vectors")]
        {
            self.ranker = None;
        }
        self
    }

    pub fn with_options(mut self, options: EngineOptions) -> Engine {
        self.set_options(options);
        self
    }

    pub fn set_options(&mut self, options: EngineOptions) {
        self.options = options;
    }

    pub fn options(&self) -> &EngineOptions {
        &self.options
    }

    /// Replaces the calibration settings (benchmarks, trainers and tests only).
    pub fn calibrate(mut self, calibration: Calibration) -> Engine {
        self.calibration = calibration;
        self
    }

    pub fn header(&self) -> &Header {
        self.data.header()
    }

    /// The decoded bundle, when the engine holds a whole one.
    pub fn bundle(&self) -> Option<&Bundle> {
        self.data.whole()
    }

    /// Storage position of each chunk's vector (empty until a split bundle's vectors are in).
    fn positions(&self) -> &[u32] {
        #[cfg(feature = "vectors")]
        if let Data::Split(s) = &self.data {
            return s.vectors().map_or(&[], |(_, p)| p);
        }
        &self.positions
    }

    /// The decoded vectors (`None` without them, or until a split bundle's are all in).
    #[cfg(feature = "vectors")]
    pub fn vector_index(&self) -> Option<&crate::index::vector::VectorIndex> {
        match &self.data {
            Data::Split(s) => s.vectors().ok().map(|(v, _)| v),
            Data::Whole(b) => b.vectors.as_ref(),
        }
    }

    /// Installs vectors decoded elsewhere, for the bundle whose vectors section they are (a
    /// native host keeps them between processes: `docloupe search`'s vector cache). They are
    /// checked as decoded ones are (one per chunk, of the model's width); the caller answers
    /// for their being the section's (its checksum in the header's section table).
    #[cfg(feature = "vectors")]
    pub fn install_vectors(&mut self, vectors: crate::index::vector::VectorIndex) -> Result<()> {
        if !self.has_vectors() {
            return Err(Error::Internal(
                "the bundle has no vectors to install".into(),
            ));
        }
        match &mut self.data {
            Data::Split(s) => s.install_vectors(vectors),
            Data::Whole(b) => {
                let dims = b.header.embedding.as_ref().map_or(0, |m| m.dims);
                let n = b.docs.chunks.len();
                vectors.validate(n, dims as usize)?;
                self.positions = vectors.positions(n);
                b.vectors = Some(vectors);
                Ok(())
            }
        }
    }

    /// The `vec-N.bin` files of a split bundle not added yet: semantic and hybrid search need
    /// them all (hosts fetch them with the models rather than on the first such query).
    pub fn missing_vector_files(&self) -> Vec<String> {
        #[cfg(feature = "vectors")]
        if let Data::Split(s) = &self.data {
            return s.vector_files().iter().map(|f| f.file_name()).collect();
        }
        Vec::new()
    }

    /// The bundle has vectors (semantic and hybrid search are possible with its model).
    fn has_vectors(&self) -> bool {
        self.header().flags.hybrid
    }

    /// Whether semantic and hybrid requests can be answered.
    pub fn semantic_ready(&self) -> bool {
        self.has_vectors() && self.has_embedder()
    }

    fn has_embedder(&self) -> bool {
        #[cfg(feature = "models")]
        return self.embedder.is_some();
        #[cfg(not(feature = "models"))]
        false
    }

    pub fn reranker_ready(&self) -> bool {
        #[cfg(feature = "vectors")]
        if self.ranker.is_some() {
            return true;
        }
        self.reranker.is_some()
    }

    /// The contract in one call: JSON request in, response or error object out. A panic
    /// inside the engine (a bug) is caught and reported as `INTERNAL_ERROR`, never unwound
    /// into the host.
    pub fn search_json(&self, json: &str) -> std::result::Result<SearchResponse, ErrorResponse> {
        SearchRequest::from_json(json)
            .and_then(|req| self.search_guarded(&req))
            .map_err(ErrorResponse::from)
    }

    /// [`Engine::search`] with a panic inside the engine (a bug, or a bundle that passed
    /// validation and still broke an assumption) caught and reported as `INTERNAL_ERROR`,
    /// never unwound into the host. Every front end searches through this or
    /// [`Engine::search_json`].
    pub fn search_guarded(&self, req: &SearchRequest) -> Result<SearchResponse> {
        let run = || self.search(req);
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
            Ok(r) => r,
            Err(_) => Err(Error::Internal("the engine failed on this request".into())),
        }
    }

    pub fn search(&self, req: &SearchRequest) -> Result<SearchResponse> {
        self.run(req, None)
    }

    /// [`Engine::search`] with the query's vector given instead of computed by the embedding
    /// model: what the fuzz targets drive semantic and hybrid search through, without a model.
    #[doc(hidden)]
    #[cfg(feature = "vectors")]
    pub fn search_with_query_vector(
        &self,
        req: &SearchRequest,
        vector: Vec<f32>,
    ) -> Result<SearchResponse> {
        self.run(req, Some(vector))
    }

    /// One request through the stages of the contract, each a function of the module that
    /// owns it: validate ([`request`]) → analyze → embed → retrieve ([`retrieve`], in the
    /// scope of [`filter`]) → fuse ([`fuse`]) → second stage ([`second_stage`]) → present
    /// ([`present`]) → suggest ([`suggest`]). Invalid input is refused before any index is
    /// read.
    fn run(&self, req: &SearchRequest, given_vector: Option<Vec<f32>>) -> Result<SearchResponse> {
        let started = Instant::now();
        let mut timings = Timings::default();
        let mut plan = request::validate(req, self.calibration.max_limit)?;
        // A request that names no mode asks for the best the bundle has: over one built
        // without vectors that is fulltext (as the CLI answers), not a refusal; only a request
        // that names hybrid or semantic is told the bundle cannot answer it.
        if !plan.mode_named && !self.has_vectors() {
            plan.mode = Mode::Fulltext;
            plan.rerank = false;
        }
        // The reader's part of the bundle: the rest is as if it were not there.
        #[cfg(feature = "access")]
        let view = self.views.get(self.data.whole(), &req.access);
        #[cfg(feature = "access")]
        let corpus = Corpus::new(&self.data).seen_through(view.as_deref());
        // Without the feature no bundle with restricted documents loads: every reader sees all.
        #[cfg(not(feature = "access"))]
        let corpus = Corpus::new(&self.data);
        request::check_project(&plan, corpus.header())?;
        // Analyze: the query's words, and the mode that runs.
        let tokens = self.analyzer.query_tokens(&plan.query);
        let lexical_fallback = self.lexical_fallback(plan.mode);
        let mode = match lexical_fallback {
            Some(_) => Mode::Fulltext,
            None => plan.mode,
        };
        let query_vector = self.query_vector(&plan, mode, given_vector, &mut timings)?;
        let t = Instant::now();
        #[cfg(feature = "access")]
        let mask = self.masks.get(&corpus, &req.access, &plan.scope);
        #[cfg(not(feature = "access"))]
        let mask = filter::DocMask::new(&corpus, &plan.scope);
        let words = retrieve::Words::of(&corpus, &plan.query, &tokens);
        let vectors = query_vector.is_some();
        let retriever = retrieve::Retriever::ready(&corpus, self.positions(), &mask, vectors)?;
        let vector = query_vector.as_deref();
        let room = second_stage::head_room(plan.rerank, plan.candidate_limit);
        let fused = self.fuse(&retriever, &plan, &words.expanded, vector, mode, room);
        let facets = present::facets(&corpus, &fused.documents);
        corpus.checkpoint()?;
        timings.retrieve_ms = ms(t.elapsed());
        let rerank = plan.rerank && lexical_fallback.is_none();
        let query = (&tokens[..], &words, vector);
        let ordered = self.second_stage(&retriever, &plan, query, &fused, rerank, &mut timings)?;
        let page = (ordered.order, ordered.features);
        let results = present::page(
            &corpus,
            &self.analyzer,
            &plan,
            &words.matched,
            &fused.head,
            page,
        );
        let suggestions =
            suggest::suggestions(&corpus, &self.analyzer, &plan.query, &tokens, fused.total);
        corpus.checkpoint()?;
        timings.total_ms = ms(started.elapsed());
        Ok(SearchResponse {
            query: plan.query,
            total: fused.total,
            // A lexical answer to a semantic or hybrid request is `bm25_docs_only` (flagged
            // with the reason); a second stage that fell back keeps its name, flagged.
            applied_strategy: strategy(mode, rerank).to_owned(),
            fallback_applied: lexical_fallback.is_some() || ordered.fallback.is_some(),
            degraded_reason: match lexical_fallback {
                Some(f) => Some(f.reason().to_owned()),
                None => ordered.fallback.map(|f| f.reason().to_owned()),
            },
            results,
            facets,
            suggestions,
            timings,
        })
    }

    /// Without the models, and with the host's reason, semantic and hybrid requests degrade
    /// to the lexical ranking.
    fn lexical_fallback(&self, mode: Mode) -> Option<LexicalFallback> {
        self.options
            .lexical_fallback
            .filter(|_| mode != Mode::Fulltext && !self.has_embedder() && self.has_vectors())
    }

    /// Embed: the query's vector for the `mode` that runs (none for fulltext; the host's own
    /// when it gave one), the model's time in `timings.embed_ms`.
    fn query_vector(
        &self,
        plan: &request::Plan,
        mode: Mode,
        given: Option<Vec<f32>>,
        timings: &mut Timings,
    ) -> Result<Option<Vec<f32>>> {
        match mode {
            Mode::Fulltext => Ok(None),
            _ if given.is_some() && self.has_vectors() => Ok(given),
            mode => {
                let t = Instant::now();
                let v = self.embed_query(&plan.query, mode, plan.rerank)?;
                timings.embed_ms = ms(t.elapsed());
                Ok(Some(v))
            }
        }
    }

    fn embed_query(&self, query: &str, mode: Mode, rerank: bool) -> Result<Vec<f32>> {
        if !self.has_vectors() {
            return Err(Error::HybridNotSupported {
                mode: mode.as_str().to_owned(),
            });
        }
        let unavailable = |why: String| match mode {
            // Fusion is the stage reranking builds on: without it a request that asked for
            // reranking is told the reranking path is unavailable. Without reranking it is
            // the semantic side that is missing, as for a semantic request.
            Mode::Hybrid if rerank => Error::RerankUnavailable {
                reason: "FusedStageUnavailable",
                message: format!("the fused stage is unavailable: {why}"),
            },
            _ => Error::SemanticUnavailable(why),
        };
        #[cfg(feature = "models")]
        if let Some(embedder) = &self.embedder {
            return embedder
                .embed_query(query)
                .map_err(|e| unavailable(format!("embedding the query failed: {e}")));
        }
        let _ = query;
        Err(unavailable(
            "no embedding model is loaded; use mode \"fulltext\"".into(),
        ))
    }
}

fn strategy(mode: Mode, rerank: bool) -> &'static str {
    match mode {
        Mode::Hybrid if rerank => response::STRATEGY_RERANK,
        Mode::Hybrid => response::STRATEGY_HYBRID,
        Mode::Fulltext => response::STRATEGY_FULLTEXT,
        Mode::Semantic => response::STRATEGY_SEMANTIC,
    }
}

fn ms(d: web_time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}
