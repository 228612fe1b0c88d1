//! Sentence embeddings: tokenizer (`tokenizers`) → BERT encoder (ONNX run by `tract-onnx`) →
//! attention-masked mean pooling → L2 normalization. Used by the index builder for every chunk
//! and by the engine for every semantic query, so both sides embed identically.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};
use tract_onnx::prelude::*;

use crate::error::{Error, Result};

/// The bytes of an embedding model as shipped by `prebuild/` plus its identity.
#[derive(Clone)]
pub struct ModelFiles {
    /// Stable model id, e.g. `all-MiniLM-L6-v2-int8wo`; recorded in bundles.
    pub id: String,
    pub onnx: Vec<u8>,
    pub tokenizer: Vec<u8>,
    /// Longest input in tokens (special tokens included); longer inputs are truncated.
    pub max_tokens: usize,
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

#[cfg(not(target_arch = "wasm32"))]
impl ModelFiles {
    /// Reads a model directory written by `prebuild/models.py`: `manifest.json`,
    /// `model.int8.onnx`, `tokenizer.json`.
    pub fn from_dir(dir: &std::path::Path) -> Result<ModelFiles> {
        Self::from_dir_with(dir, "model.int8.onnx")
    }

    /// Like [`ModelFiles::from_dir`] with another ONNX file of the same directory
    /// (the fp32 reference model, for the quantization check).
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
        Ok(ModelFiles {
            id,
            onnx: read(onnx_name)?,
            tokenizer: read("tokenizer.json")?,
            max_tokens,
        })
    }
}

/// A loaded, optimized embedding model. Cheap to share across threads (`run` takes `&self`).
pub struct Embedder {
    info: ModelInfo,
    tokenizer: Tokenizer,
    /// The same tokenizer without truncation or padding, for measuring text.
    counter: Tokenizer,
    plan: Arc<TypedRunnableModel>,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("info", &self.info)
            .finish()
    }
}

impl Embedder {
    pub fn new(files: &ModelFiles) -> Result<Embedder> {
        let mut tokenizer = Tokenizer::from_bytes(&files.tokenizer)
            .map_err(|e| Error::Model(format!("tokenizer.json does not load: {e}")))?;
        // The shipped tokenizer.json pads to a fixed 128 and truncates at 128: replace both.
        let mut counter = tokenizer.clone();
        counter.with_padding(None);
        counter
            .with_truncation(None)
            .map_err(|e| Error::Model(format!("tokenizer truncation: {e}")))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: files.max_tokens,
                ..Default::default()
            }))
            .map_err(|e| Error::Model(format!("tokenizer truncation: {e}")))?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..Default::default()
        }));

        let plan = load_plan(&files.onnx)
            .map_err(|e| Error::Model(format!("ONNX model does not load: {e:#}")))?;
        let mut embedder = Embedder {
            info: ModelInfo {
                id: files.id.clone(),
                sha256: sha256_hex(&files.onnx),
                tokenizer_sha256: sha256_hex(&files.tokenizer),
                dims: 0,
                max_tokens: files.max_tokens as u32,
            },
            tokenizer,
            counter,
            plan,
        };
        // One probe run validates the graph end to end and tells the output width.
        let probe = embedder.embed_batch(&["probe"])?;
        embedder.info.dims = probe[0].len() as u32;
        Ok(embedder)
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    pub fn dims(&self) -> usize {
        self.info.dims as usize
    }

    /// Number of tokens `text` takes (special tokens included, before truncation).
    pub fn count_tokens(&self, text: &str) -> Result<usize> {
        let enc = self
            .counter
            .encode_fast(text, true)
            .map_err(|e| Error::Model(format!("tokenizer: {e}")))?;
        Ok(enc.len())
    }

    /// Embeds one text: a unit vector of `dims` floats.
    pub fn embed(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self
            .embed_batch(&[text])?
            .pop()
            .expect("one input gives one output"))
    }

    /// Embeds a batch (padded to its longest member). Each output is a unit vector. Results
    /// differ from [`Embedder::embed`] in the last bits (other kernel shapes).
    pub fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch_fast(texts.to_vec(), true)
            .map_err(|e| Error::Model(format!("tokenizer: {e}")))?;
        let batch = encodings.len();
        let seq = encodings.iter().map(|e| e.len()).max().unwrap_or(0).max(1);
        let mut ids = vec![0i64; batch * seq];
        let mut mask = vec![0i64; batch * seq];
        let mut types = vec![0i64; batch * seq];
        for (b, enc) in encodings.iter().enumerate() {
            for (i, ((&id, &m), &t)) in enc
                .get_ids()
                .iter()
                .zip(enc.get_attention_mask())
                .zip(enc.get_type_ids())
                .enumerate()
            {
                ids[b * seq + i] = id as i64;
                mask[b * seq + i] = m as i64;
                types[b * seq + i] = t as i64;
            }
        }
        let tensor = |v: Vec<i64>| -> Result<TValue> {
            Ok(Tensor::from_shape(&[batch, seq], &v)
                .map_err(|e| Error::Model(e.to_string()))?
                .into())
        };
        let outputs = self
            .plan
            .run(tvec![tensor(ids)?, tensor(mask.clone())?, tensor(types)?])
            .map_err(|e| Error::Model(format!("inference failed: {e:#}")))?;
        let hidden = outputs[0]
            .to_plain_array_view::<f32>()
            .map_err(|e| Error::Model(e.to_string()))?;
        let shape = hidden.shape().to_vec();
        if shape.len() != 3 || shape[0] != batch || shape[1] != seq {
            return Err(Error::Model(format!(
                "unexpected output shape {shape:?}, want [{batch}, {seq}, dims]"
            )));
        }
        let dims = shape[2];
        let hidden = hidden
            .as_slice()
            .ok_or_else(|| Error::Model("output is not contiguous".into()))?;
        let mut out = Vec::with_capacity(batch);
        for b in 0..batch {
            let mut v = vec![0f32; dims];
            let mut n = 0f32;
            for i in 0..seq {
                if mask[b * seq + i] != 0 {
                    let row = &hidden[(b * seq + i) * dims..(b * seq + i + 1) * dims];
                    v.iter_mut().zip(row).for_each(|(a, x)| *a += x);
                    n += 1.0;
                }
            }
            if n > 0.0 {
                v.iter_mut().for_each(|a| *a /= n);
            }
            normalize(&mut v);
            out.push(v);
        }
        Ok(out)
    }
}

/// Scales `v` to unit length (leaves a zero vector alone).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

fn load_plan(onnx: &[u8]) -> TractResult<Arc<TypedRunnableModel>> {
    // Keep the file's symbolic batch/sequence dims: one optimized plan serves every shape.
    let model = tract_onnx::onnx().model_for_read(&mut std::io::Cursor::new(onnx))?;
    model.into_optimized()?.into_runnable()
}

/// Where `prebuild/models.py` puts the default embedding model: `$DOCLOUPE_MODEL_DIR`, else
/// `$DOCLOUPE_CACHE/models/all-MiniLM-L6-v2`, else `~/.cache/docloupe/models/all-MiniLM-L6-v2`.
#[cfg(not(target_arch = "wasm32"))]
pub fn default_model_dir() -> std::path::PathBuf {
    if let Some(dir) = std::env::var_os("DOCLOUPE_MODEL_DIR") {
        return dir.into();
    }
    let cache = std::env::var_os("DOCLOUPE_CACHE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("HOME")
                .map(std::path::PathBuf::from)
                .unwrap_or_else(|| ".".into())
                .join(".cache/docloupe")
        });
    cache.join("models").join("all-MiniLM-L6-v2")
}
