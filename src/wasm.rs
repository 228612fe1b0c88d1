//! WebAssembly bindings: a thin layer over [`Engine`] for browsers, Web Workers, Node and
//! Cloudflare Workers. Everything crosses as bytes or JSON; the contract is the engine's.
//!
//! Two builds share this file: the lexical one (no `models` feature: no tract, no tokenizers)
//! answers `fulltext` from the first bytes, and the full one also loads the embedding and
//! rerank models. Errors never cross as exceptions with a Rust message: every call returns the
//! contract's error object (`{errorCode, message, details}`) as a value. A panic aborts the
//! instance (wasm32 has no unwinding); the hook keeps its message so the JS layer can answer
//! `INTERNAL_ERROR` with it and start a fresh instance.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;

use crate::error::Error;
use crate::search::{Engine, ErrorResponse};

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

#[wasm_bindgen(start)]
fn start() {
    std::panic::set_hook(Box::new(|info| {
        let msg = info.to_string();
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(msg));
    }));
}

/// The message of the panic that aborted the last call, if any (then the instance is spent).
#[wasm_bindgen(js_name = takePanic)]
pub fn take_panic() -> Option<String> {
    LAST_PANIC.with(|p| p.borrow_mut().take())
}

/// Which build this is: `"lexical"` or `"full"`.
#[wasm_bindgen(js_name = buildKind)]
pub fn build_kind() -> String {
    if cfg!(feature = "models") {
        "full"
    } else {
        "lexical"
    }
    .into()
}

/// `fast` (simd128) or `portable` for the full build, null for the lexical one.
fn kernels_name() -> Option<&'static str> {
    #[cfg(feature = "models")]
    return Some(crate::embed::kernels().name());
    #[cfg(not(feature = "models"))]
    None
}

fn to_js<T: serde::Serialize>(v: &T) -> JsValue {
    // Through JSON text, not serde-wasm-bindgen: an f32 score must become the JS number of
    // its shortest decimal form (4.723891), as native prints it, not the widened f64
    // (4.723890781402588), so `JSON.stringify` of the object equals the native line.
    serde_json::to_string(v)
        .ok()
        .and_then(|json| js_sys::JSON::parse(&json).ok())
        .unwrap_or(JsValue::NULL)
}

fn error_js(e: Error) -> JsValue {
    to_js(&ErrorResponse::from(e))
}

/// Why the lexical build could not open a whole bundle when its host installed no inflater.
#[cfg(feature = "host-inflate")]
const NO_HOST_INFLATER: &str = "the lexical wasm build inflates whole bundles through \
    globalThis.docloupeInflate, which www/inflate.js installs from pkg/inflate/inflate.wasm";

#[wasm_bindgen(js_name = Engine)]
pub struct WasmEngine {
    inner: Engine,
}

#[wasm_bindgen(js_class = Engine)]
impl WasmEngine {
    /// Decodes a bundle. Throws the contract's error object (never a Rust message) on a
    /// corrupt, truncated or foreign bundle.
    #[wasm_bindgen(constructor)]
    pub fn new(bundle: &[u8]) -> Result<WasmEngine, JsValue> {
        #[cfg(feature = "host-inflate")]
        crate::encoding::take_host_inflater_missing();
        let engine = Engine::lexical(bundle);
        // The lexical package inflates through its host: without one, a whole bundle is not
        // corrupt, the host is incomplete.
        #[cfg(feature = "host-inflate")]
        let engine = engine.map_err(|e| match crate::encoding::take_host_inflater_missing() {
            true => Error::Internal(NO_HOST_INFLATER.into()),
            false => e,
        });
        engine.map(|inner| WasmEngine { inner }).map_err(error_js)
    }

    /// Opens a split bundle from its `core.bin`. A search then answers the error object with
    /// `details.reason == "BundleFilesNeeded"` and `details.files` until the host has added
    /// those files with `addFile` (semantic and hybrid: every one of `info().vectorFiles`
    /// too, which hosts fetch with the models). Throws the contract's error object.
    #[wasm_bindgen(js_name = openSplit)]
    pub fn open_split(core: &[u8]) -> Result<WasmEngine, JsValue> {
        Engine::split(core)
            .map(|inner| WasmEngine { inner })
            .map_err(error_js)
    }

    /// Adds one file of a split bundle, verified against the core. Throws the contract's
    /// error object for a corrupt, truncated, misnamed or foreign file.
    #[wasm_bindgen(js_name = addFile)]
    pub fn add_file(&mut self, name: &str, bytes: &[u8]) -> Result<(), JsValue> {
        self.inner.add_split_file(name, bytes).map_err(error_js)
    }

    /// Loads the bundle's embedding model (ONNX + tokenizer.json bytes); they must be the
    /// model the bundle was built with. Throws the contract's error object.
    #[cfg(feature = "models")]
    #[wasm_bindgen(js_name = loadEmbedder)]
    pub fn load_embedder(&mut self, onnx: Vec<u8>, tokenizer: Vec<u8>) -> Result<(), JsValue> {
        let Some(info) = self.inner.header().embedding.clone() else {
            return Err(error_js(Error::HybridNotSupported {
                mode: "semantic".into(),
            }));
        };
        // Compare hashes before the (slow) load: a wrong file is named at once, typed.
        // A model trimmed to a site's scripts counts as the full model it was cut from
        // (`embed::identity`). The lines above and below keep their numbers: panic locations
        // are part of the lexical build, whose brotli size is within 50 bytes of its budget.
        let mut provided = info.clone();
        (provided.sha256, provided.tokenizer_sha256) = crate::embed::identity(&onnx, &tokenizer);
        self.inner
            .check_embedding_model(&provided)
            .map_err(error_js)?;
        let (query_prefix, passage_prefix) = crate::embed::known_prefixes(&info.id);
        let files = crate::embed::ModelFiles {
            id: info.id,
            onnx,
            tokenizer,
            max_tokens: info.max_tokens as usize,
            query_prefix: query_prefix.into(),
            passage_prefix: passage_prefix.into(),
        };
        let embedder = crate::embed::Embedder::from_files(files).map_err(error_js)?;
        self.inner.install_embedder(embedder).map_err(error_js)
    }

    /// Loads a cross-encoder from its manifest.json, int8 ONNX and tokenizer.json bytes.
    #[cfg(feature = "models")]
    #[wasm_bindgen(js_name = loadReranker)]
    pub fn load_reranker(
        &mut self,
        manifest: &[u8],
        onnx: Vec<u8>,
        tokenizer: Vec<u8>,
    ) -> Result<(), JsValue> {
        let files = crate::search::RerankerFiles::from_parts(manifest, onnx, tokenizer, "reranker")
            .map_err(error_js)?;
        let model = crate::search::CrossEncoder::new(&files).map_err(error_js)?;
        self.inner.set_reranker(Box::new(model));
        Ok(())
    }

    /// Tells the engine that the host is still loading the models: semantic and hybrid
    /// requests are answered lexically, flagged `fallbackApplied` with
    /// `degradedReason: "models_loading"`, instead of refused.
    #[wasm_bindgen(js_name = setModelsLoading)]
    pub fn set_models_loading(&mut self, loading: bool) {
        let mut options = self.inner.options().clone();
        options.lexical_fallback = loading.then_some(crate::search::LexicalFallback::ModelsLoading);
        self.inner.set_options(options);
    }

    /// Why this host answers semantic and hybrid requests lexically: `"models_loading"`,
    /// `"models_unavailable"` (a host that never loads them, e.g. an edge Worker), or
    /// `undefined` to refuse them. Any other reason throws the contract's `INVALID_REQUEST`.
    #[wasm_bindgen(js_name = setLexicalFallback)]
    pub fn set_lexical_fallback(&mut self, reason: Option<String>) -> Result<(), JsValue> {
        let fallback = match reason.as_deref() {
            None => None,
            Some(r) => Some(
                crate::search::LexicalFallback::from_reason(r).ok_or_else(|| {
                    error_js(Error::InvalidRequest {
                        field: "lexicalFallback".into(),
                        message: format!("{r:?}: expected models_loading or models_unavailable"),
                    })
                })?,
            ),
        };
        let mut options = self.inner.options().clone();
        options.lexical_fallback = fallback;
        self.inner.set_options(options);
        Ok(())
    }

    /// How long the rerank stage may take per request, in whole milliseconds (default 2000, as
    /// natively); past it the fused order is returned with `degradedReason:
    /// "rerank_budget_exceeded"`. Anything but a whole number ≥ 0 throws `INVALID_REQUEST`.
    /// Only in the builds with models: the lexical build has no rerank stage, and keeping it
    /// out keeps float formatting out of the build that must stay under 100 KB.
    #[cfg(feature = "models")]
    #[wasm_bindgen(js_name = setRerankBudgetMs)]
    pub fn set_rerank_budget_ms(&mut self, ms: f64) -> Result<(), JsValue> {
        if !(ms.is_finite() && ms >= 0.0 && ms.fract() == 0.0 && ms <= 9_007_199_254_740_991.0) {
            return Err(error_js(Error::InvalidRequest {
                field: "rerankBudgetMs".into(),
                message: "expected a whole number of milliseconds, 0 or more".into(),
            }));
        }
        let mut options = self.inner.options().clone();
        options.rerank_budget_ms = ms as u64;
        self.inner.set_options(options);
        Ok(())
    }

    /// The contract: a request object in, the response or the error object out (never throws).
    pub fn search(&self, request: JsValue) -> JsValue {
        // JSON.stringify is the JS host's own reading of "a JSON value": functions and
        // undefined members drop out, and what cannot be written (undefined itself, a BigInt,
        // a cycle) is not a request.
        let json = match js_sys::JSON::stringify(&request)
            .ok()
            .and_then(|s| s.as_string())
        {
            Some(json) => json,
            None => {
                return error_js(Error::InvalidRequest {
                    field: String::new(),
                    message: "the request is not a JSON value".into(),
                })
            }
        };
        // The object is JSON.parse of the very bytes searchJson (and native) print.
        js_sys::JSON::parse(&self.search_json(&json)).unwrap_or(JsValue::NULL)
    }

    /// The same with JSON text in and out (the exact bytes the native CLI prints).
    #[wasm_bindgen(js_name = searchJson)]
    pub fn search_json(&self, request: &str) -> String {
        let out = match self.inner.search_json(request) {
            Ok(r) => serde_json::to_string(&r),
            Err(e) => serde_json::to_string(&e),
        };
        out.unwrap_or_else(|_| {
            String::from("{\"errorCode\":\"INTERNAL_ERROR\",\"message\":\"serialization failed\"}")
        })
    }

    /// What is loaded: `{build, kernels, split, documents, chunks, vectors, vectorFiles,
    /// projectId, embedding, semanticReady, rerankerReady}` (`vectorFiles`: a split bundle's
    /// `vec-N.bin` files not added yet).
    pub fn info(&self) -> JsValue {
        let h = self.inner.header();
        to_js(&serde_json::json!({
            "build": build_kind(),
            "kernels": kernels_name(),
            "split": self.inner.bundle().is_none(),
            "documents": h.counts.documents,
            "chunks": h.counts.chunks,
            "vectors": h.counts.vectors,
            "vectorFiles": self.inner.missing_vector_files(),
            "projectId": h.project_id,
            "embedding": h.embedding.as_ref().map(|m| &m.id),
            "semanticReady": self.inner.semantic_ready(),
            "rerankerReady": self.inner.reranker_ready(),
        }))
    }

    /// Drops the shards of a split bundle that searches have added (its core and vectors
    /// stay): how a host with the models bounds its memory without loading them again. Only
    /// in the builds with models (the lexical host starts a new engine over the core instead).
    #[cfg(feature = "models")]
    #[wasm_bindgen(js_name = forgetFiles)]
    pub fn forget_files(&mut self) {
        self.inner.forget_split_files();
    }
}
