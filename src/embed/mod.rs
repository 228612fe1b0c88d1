//! Sentence embeddings: tokenizer (`tokenizers`) → BERT encoder (ONNX run by `tract-onnx`) →
//! attention-masked mean pooling → L2 normalization. Used by the index builder for every chunk
//! and by the engine for every semantic query, so both sides embed identically.
//!
//! This module is the models' identity (files, ids, hashes), which every build needs to read
//! a bundle; `encoder` runs them and exists only with the `models` feature (tract +
//! tokenizers), which the lexical-only wasm build leaves out.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

#[cfg(not(target_arch = "wasm32"))]
use crate::error::{Error, Result};

#[cfg(feature = "models")]
mod bert;
#[cfg(feature = "models")]
mod encoder;
#[cfg(feature = "models")]
mod kernels;
#[cfg(feature = "models")]
pub mod unigram;
#[cfg(feature = "models")]
pub use encoder::Embedder;
#[cfg(feature = "models")]
pub(crate) use encoder::{load_plan, run_encoding};
#[cfg(feature = "models")]
pub use kernels::{kernels, use_kernels, Kernels};

/// The bytes of an embedding model as shipped by `prebuild/` plus its identity.
#[derive(Clone)]
pub struct ModelFiles {
    /// Stable model id, e.g. `all-MiniLM-L6-v2-int8wo`; recorded in bundles.
    pub id: String,
    pub onnx: Vec<u8>,
    pub tokenizer: Vec<u8>,
    /// Longest input in tokens (special tokens included); longer inputs are truncated.
    pub max_tokens: usize,
    /// What the model expects before a query and before a passage (E5: `query: ` and
    /// `passage: `; empty for MiniLM). Part of the model's identity: its sha256s pin the
    /// files, and its id names the recipe.
    pub query_prefix: String,
    pub passage_prefix: String,
}

/// The identity of an embedding model as recorded in a bundle header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub id: String,
    /// sha256 (hex) of the ONNX file.
    pub sha256: String,
    /// sha256 (hex) of tokenizer.json.
    pub tokenizer_sha256: String,
    pub dims: u32,
    pub max_tokens: u32,
}

impl ModelInfo {
    /// "id (sha256 prefix)" for messages.
    pub fn describe(&self) -> String {
        format!(
            "{} (onnx sha256 {}, tokenizer sha256 {})",
            self.id,
            short(&self.sha256),
            short(&self.tokenizer_sha256)
        )
    }
}

fn short(hex: &str) -> &str {
    &hex[..hex.len().min(12)]
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// ONNX metadata of a model trimmed to a collection's scripts (`index-builder trim-model`):
/// the sha256 of the full model's ONNX file and tokenizer, and of the trimmed tokenizer the
/// file goes with.
pub const TRIMMED_FROM_MODEL: &str = "docloupe.trimmedFrom.model.sha256";
pub const TRIMMED_FROM_TOKENIZER: &str = "docloupe.trimmedFrom.tokenizer.sha256";
pub const TRIMMED_TOKENIZER: &str = "docloupe.tokenizer.sha256";

/// What a trimmed model's ONNX file says of itself (`index-builder trim-model`).
#[cfg(feature = "models")]
pub struct TrimmedFrom {
    /// The full model's ONNX and tokenizer sha256s.
    pub model: String,
    pub tokenizer: String,
    /// The sha256 of the trimmed tokenizer the file goes with.
    pub trimmed_tokenizer: String,
}

/// The provenance in `onnx`'s metadata when it is a model trimmed to some scripts, read without
/// parsing the graph (its bytes are skipped) and without hashing anything.
#[cfg(feature = "models")]
pub fn trimmed_from(onnx: &[u8]) -> Option<TrimmedFrom> {
    trimmed_from_metadata(&metadata(onnx))
}

#[cfg(feature = "models")]
fn trimmed_from_metadata(meta: &std::collections::BTreeMap<String, String>) -> Option<TrimmedFrom> {
    let get = |key: &str| meta.get(key).cloned();
    Some(TrimmedFrom {
        model: get(TRIMMED_FROM_MODEL)?,
        tokenizer: get(TRIMMED_FROM_TOKENIZER)?,
        trimmed_tokenizer: get(TRIMMED_TOKENIZER)?,
    })
}

/// An ONNX file's `metadata_props`, read without parsing the graph (its bytes are skipped);
/// empty for a file that does not decode.
#[cfg(feature = "models")]
fn metadata(onnx: &[u8]) -> std::collections::BTreeMap<String, String> {
    /// A `ModelProto` read for its metadata alone.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Metadata {
        #[prost(message, repeated, tag = "14")]
        metadata_props: Vec<tract_onnx::pb::StringStringEntryProto>,
    }
    <Metadata as prost::Message>::decode(onnx)
        .map(|m| {
            m.metadata_props
                .into_iter()
                .map(|p| (p.key, p.value))
                .collect()
        })
        .unwrap_or_default()
}

/// ONNX metadata of a query tower (`prebuild/models.py`'s `query.int8.onnx`): an encoder
/// tuned to embed questions into the space of another model's passages, whose ONNX and
/// tokenizer sha256s these name. It searches the bundles built with that model; it never
/// embeds passages.
pub const QUERY_TOWER_OF_MODEL: &str = "docloupe.queryTowerOf.model.sha256";
pub const QUERY_TOWER_OF_TOKENIZER: &str = "docloupe.queryTowerOf.tokenizer.sha256";

/// The ONNX file of a model directory's query tower, where `make models` installs one.
pub const QUERY_TOWER_FILE: &str = "query.int8.onnx";

/// Which encoder embeds the questions of a search (see [`ModelFiles::for_queries`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum QueryModel {
    /// The docs-tuned query tower where one is installed.
    Docs,
    /// The model the bundle was built with, as it is: the default until the whole pipeline
    /// with the tower beats it on every held-out site (docs/models.md).
    #[default]
    Base,
}

/// The (ONNX, tokenizer) sha256s a bundle records for a model's files: their own, or for a
/// model trimmed to some scripts with the tokenizer it was trimmed with, the full model's.
/// The trimmed model gives every text in its scripts the full model's tokens and vector, so
/// it searches the bundles built with the full one; a text in other scripts gets unknown
/// tokens where the full model had pieces. A query tower with its passage model's tokenizer
/// stands for the passage model: its questions land in that model's space.
#[cfg(feature = "models")]
pub fn identity(onnx: &[u8], tokenizer: &[u8]) -> (String, String) {
    let own_tokenizer = sha256_hex(tokenizer);
    let meta = metadata(onnx);
    if let (Some(model), Some(tok)) = (
        meta.get(QUERY_TOWER_OF_MODEL),
        meta.get(QUERY_TOWER_OF_TOKENIZER),
    ) {
        if *tok == own_tokenizer {
            return (model.clone(), tok.clone());
        }
    }
    match trimmed_from_metadata(&meta) {
        Some(t) if t.trimmed_tokenizer == own_tokenizer => (t.model, t.tokenizer),
        _ => (sha256_hex(onnx), own_tokenizer),
    }
}

/// Whether `onnx` is a query tower (see [`QUERY_TOWER_OF_MODEL`]).
#[cfg(feature = "models")]
pub fn is_query_tower(onnx: &[u8]) -> bool {
    metadata(onnx).contains_key(QUERY_TOWER_OF_MODEL)
}

#[cfg(not(target_arch = "wasm32"))]
impl ModelFiles {
    /// Reads a model directory written by `prebuild/models.py`: `manifest.json`,
    /// `model.int8.onnx`, `tokenizer.json`.
    pub fn from_dir(dir: &std::path::Path) -> Result<ModelFiles> {
        Self::from_dir_with(dir, "model.int8.onnx")
    }

    /// The files that embed a directory's *questions*: with [`QueryModel::Docs`], its
    /// docs-tuned query tower ([`QUERY_TOWER_FILE`]) where `make models` installed one, else
    /// (and with [`QueryModel::Base`]) the model itself. Bundles are the same either way: the
    /// tower embeds into the model's passage space.
    pub fn for_queries(dir: &std::path::Path, which: QueryModel) -> Result<ModelFiles> {
        if which == QueryModel::Docs && dir.join(QUERY_TOWER_FILE).is_file() {
            Self::from_dir_with(dir, QUERY_TOWER_FILE)
        } else {
            Self::from_dir(dir)
        }
    }

    /// Like [`ModelFiles::from_dir`] with another ONNX file of the same directory
    /// (the fp32 reference model, for the quantization check; the query tower).
    pub fn from_dir_with(dir: &std::path::Path, onnx_name: &str) -> Result<ModelFiles> {
        let read = |name: &str| {
            std::fs::read(dir.join(name)).map_err(|e| {
                Error::Model(format!(
                    "cannot read {}: {e} (run `make models` to fetch and build the models)",
                    dir.join(name).display()
                ))
            })
        };
        let manifest: serde_json::Value = serde_json::from_slice(&read("manifest.json")?)
            .map_err(|e| Error::Model(format!("bad manifest.json in {}: {e}", dir.display())))?;
        let mut id = manifest["id"]
            .as_str()
            .ok_or_else(|| Error::Model("manifest.json has no id".into()))?
            .to_owned();
        if onnx_name != "model.int8.onnx" {
            id = format!("{id}+{onnx_name}");
        }
        let max_tokens = manifest["maxTokens"].as_u64().unwrap_or(256) as usize;
        let prefix = |key: &str| manifest[key].as_str().unwrap_or("").to_owned();
        Ok(ModelFiles {
            id,
            onnx: read(onnx_name)?,
            tokenizer: read("tokenizer.json")?,
            max_tokens,
            query_prefix: prefix("queryPrefix"),
            passage_prefix: prefix("passagePrefix"),
        })
    }
}

/// The query and passage prefixes of a model the project knows, by its id (a host that has
/// only the bundle's `ModelInfo` and the files, such as the browser, takes them from here).
pub fn known_prefixes(model_id: &str) -> (&'static str, &'static str) {
    if model_id.starts_with("multilingual-e5") {
        ("query: ", "passage: ")
    } else {
        ("", "")
    }
}

/// When a chunk that shares no word with the query still matches it, for a model the project
/// knows: its cosine reaches `floor`, and, with `within_best`, lies at most that far below
/// the query's best cosine. Below either a semantic neighbour is not counted or returned.
/// Both are chosen on the docs-questions dev and train splits (never test) so that 97.5 % of
/// the judged documents' best chunks match (`tests/bench/floors.py`). MiniLM: cosine 0.23.
/// Multilingual E5 puts every passage of a collection in 0.80–0.90 (its cross-language
/// answers lowest), so no cosine separates answers; within 0.04 of the query's best does
/// (`docs/measurements/2026-11-26-fusion-and-match-rules.md` has the figures). Other models: every nearest neighbour matches.
pub fn match_rule(model_id: &str) -> MatchRule {
    if model_id.starts_with("all-MiniLM-L6-v2") {
        MatchRule {
            floor: 0.23,
            within_best: None,
        }
    } else if model_id.starts_with("multilingual-e5") {
        MatchRule {
            floor: 0.0,
            within_best: Some(0.04),
        }
    } else {
        MatchRule::default()
    }
}

/// How hybrid fusion reads a model's cosine: `None`, as it is; `Some(span)`, as
/// `max(0, 1 − (best − cos) / span)` with `best` the query's best cosine in scope (see
/// `search::fuse`). Multilingual E5 puts every passage of a collection within about 0.1 of one
/// another, so its raw cosine barely moved a fused score next to the lexical side's 0..1; read
/// relative to the query's best it weighs in, and a cross-language answer (low cosines, no
/// lexical match) keeps its full semantic half. Chosen on dev and train data only, E5 hybrid
/// without the second stage, nDCG@10 for span 0.05 / **0.1** / 0.15 / 0.2 / 0.3 and raw:
/// SciFact train .7371 / **.7395** / .7385 / .7363 / .7302 / .7140; Russian FastAPI questions
/// over the English pages (dev + train, 57) and English over Russian (70), and the Russian
/// docs questions (dev + train, 114): `docs/measurements/2026-11-26-fusion-and-match-rules.md` has the table. MiniLM spreads its
/// cosines over 0–0.8 already (raw; its weights were chosen on SciFact train).
pub fn fusion_span(model_id: &str) -> Option<f32> {
    if model_id.starts_with("multilingual-e5") {
        Some(0.1)
    } else {
        None
    }
}

/// Whether a model's vectors are written in the 4-bit form (format 6,
/// [`crate::index::vector::QVec::to_4bit`]), half the bytes of int8. Only where measured to
/// keep quality: MiniLM (nDCG@10 on SciFact train, semantic 0.6759 → 0.6774, hybrid 0.7339 →
/// 0.7343). Multilingual E5 keeps int8: its passages share one large direction (every cosine
/// of a collection within 0.80–0.90, see [`match_rule`]), so what tells two passages apart is
/// small next to the 4-bit rounding: semantic nDCG@10 0.8347 → 0.8214 on XQuAD-R ru-sentence
/// (not a reported set; ru-paragraph's test figure agreed: 0.9520 → 0.9441). Other models:
/// int8, unmeasured.
pub fn four_bit_vectors(model_id: &str) -> bool {
    model_id.starts_with("all-MiniLM-L6-v2")
}

/// See [`match_rule`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MatchRule {
    pub floor: f32,
    pub within_best: Option<f32>,
}

/// The models `make models` installs, by the name `index-builder build --model` takes:
/// (name, directory under `$DOCLOUPE_CACHE/models`, model id).
pub const KNOWN_MODELS: [(&str, &str, &str); 2] = [
    ("minilm", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-int8wo"),
    (
        "e5-multilingual",
        "multilingual-e5-small",
        "multilingual-e5-small-int8wo",
    ),
];

/// Where `make models` puts its models: `$DOCLOUPE_CACHE/models`, else
/// `~/.cache/docloupe/models`.
#[cfg(not(target_arch = "wasm32"))]
pub fn models_root() -> std::path::PathBuf {
    cache_root().join("models")
}

/// docloupe's cache: `$DOCLOUPE_CACHE`, else `~/.cache/docloupe`.
#[cfg(not(target_arch = "wasm32"))]
pub fn cache_root() -> std::path::PathBuf {
    std::env::var_os("DOCLOUPE_CACHE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("HOME")
                .map(std::path::PathBuf::from)
                .unwrap_or_else(|| ".".into())
                .join(".cache/docloupe")
        })
}

/// The installed directory of the model a bundle names (`$DOCLOUPE_MODEL_DIR` when set): a
/// search loads whatever model its bundle was built with.
#[cfg(not(target_arch = "wasm32"))]
pub fn model_dir_for(info: &ModelInfo) -> std::path::PathBuf {
    if let Some(dir) = std::env::var_os("DOCLOUPE_MODEL_DIR") {
        return dir.into();
    }
    let known = KNOWN_MODELS
        .iter()
        .find(|(_, _, id)| *id == info.id)
        .map(|(_, dir, _)| *dir);
    models_root().join(known.unwrap_or(KNOWN_MODELS[0].1))
}

/// Scales `v` to unit length (leaves a zero vector alone).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Where `prebuild/models.py` puts the default embedding model: `$DOCLOUPE_MODEL_DIR`, else
/// `$DOCLOUPE_CACHE/models/all-MiniLM-L6-v2`, else `~/.cache/docloupe/models/all-MiniLM-L6-v2`.
#[cfg(not(target_arch = "wasm32"))]
pub fn default_model_dir() -> std::path::PathBuf {
    if let Some(dir) = std::env::var_os("DOCLOUPE_MODEL_DIR") {
        return dir.into();
    }
    models_root().join(KNOWN_MODELS[0].1)
}
