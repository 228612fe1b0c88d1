//! Rerank: a cross-encoder reads (query, chunk) pairs of the fused top `candidateLimit` and
//! orders them by its relevance score.
//!
//! The stage never makes a request fail on its own account: when no model is loaded, the
//! model fails, or the time budget runs out, the engine returns the fused order with
//! `fallbackApplied: true` (policy [`FallbackPolicy::ReturnHybridCandidates`], the default),
//! unless the caller chose [`FallbackPolicy::ErrorOnTotalFailure`].
//!
//! Pairs are scored one model call each on a plan built for batch size 1 (as the embedder:
//! on tract a fixed batch of one runs faster than padding several pairs to a common length),
//! and the budget is checked before every pair, so a request overshoots the budget by at
//! most one pair's inference.

#[cfg(feature = "models")]
use std::sync::Arc;

#[cfg(feature = "models")]
use tokenizers::{Tokenizer, TruncationParams, TruncationStrategy};
#[cfg(feature = "models")]
use tract_onnx::prelude::*;
use web_time::{Duration, Instant};

use crate::embed::sha256_hex;
#[cfg(feature = "models")]
use crate::embed::{load_plan, run_encoding};
use crate::error::{Error, Result};

/// What the engine does when the rerank stage cannot decide the order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FallbackPolicy {
    /// Return the fused order, flagged `fallbackApplied: true`.
    #[default]
    ReturnHybridCandidates,
    /// Answer `DOCS_RERANKING_UNAVAILABLE` instead.
    ErrorOnTotalFailure,
}

/// Why reranking did not decide the order (the response's `degradedReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    ModelUnavailable,
    Failed,
    BudgetExceeded,
}

impl Fallback {
    /// The `details.reason` of `DOCS_RERANKING_UNAVAILABLE` under `error_on_total_failure`.
    pub fn error_reason(self) -> &'static str {
        match self {
            Fallback::ModelUnavailable => "RerankModelUnavailable",
            Fallback::Failed => "RerankFailed",
            Fallback::BudgetExceeded => "RerankBudgetExceeded",
        }
    }

    pub fn reason(self) -> &'static str {
        match self {
            Fallback::ModelUnavailable => "rerank_model_unavailable",
            Fallback::Failed => "rerank_failed",
            Fallback::BudgetExceeded => "rerank_budget_exceeded",
        }
    }
}

/// A relevance model over (query, passage) pairs. [`CrossEncoder`] is the real one; the trait
/// lets a host supply another (and tests inject failures).
pub trait Rerank: Send + Sync + std::fmt::Debug {
    /// Raw relevance logit of one pair; higher is more relevant.
    fn score(&self, query: &str, passage: &str) -> Result<f32>;

    /// How much this model should decide the order of its pool when blended with the fused
    /// score (see `Calibration::rerank_weight`), as calibrated for it; `None`: the model alone.
    fn blend_weight(&self) -> Option<f32> {
        None
    }
}

/// Maps a logit onto (0, 1). Clamped to ±15 first so the result is never exactly 0 or 1 in
/// f32 (σ(17) already rounds to 1): a reranked result always reports a non-zero
/// `rankingSignals.rerank`, and the order of any two logits within ±15 is kept.
pub fn probability(logit: f32) -> f32 {
    let x = if logit.is_nan() {
        0.0
    } else {
        logit.clamp(-15.0, 15.0)
    };
    // libm's expf, not the platform's: glibc and the wasm runtime's exp round differently.
    1.0 / (1.0 + libm::expf(-x))
}

/// Scores every passage within `budget`, or says why it could not.
pub fn score_all(
    model: Option<&dyn Rerank>,
    query: &str,
    passages: &[String],
    budget: Duration,
) -> std::result::Result<Vec<f32>, Fallback> {
    let Some(model) = model else {
        return Err(Fallback::ModelUnavailable);
    };
    let start = Instant::now();
    let mut out = Vec::with_capacity(passages.len());
    for p in passages {
        if start.elapsed() >= budget {
            return Err(Fallback::BudgetExceeded);
        }
        // A model that panics (a bug in it or in tract) must not take the request down:
        // the stage reports a failure and the engine falls back.
        let scored =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| model.score(query, p)));
        match scored {
            Ok(Ok(logit)) if logit.is_finite() => out.push(probability(logit)),
            _ => return Err(Fallback::Failed),
        }
    }
    Ok(out)
}

/// The bytes of a cross-encoder as shipped by `prebuild/`.
#[derive(Clone)]
pub struct RerankerFiles {
    pub id: String,
    pub onnx: Vec<u8>,
    pub tokenizer: Vec<u8>,
    /// Longest pair in tokens (special tokens included); longer pairs are truncated, the
    /// longer side first.
    pub max_tokens: usize,
    /// Calibrated blend weight (`blendWeight` in manifest.json), in 0..=1.
    pub blend_weight: Option<f32>,
}

/// Where the project's own reranker is committed (`prebuild/reranker/build.sh` rebuilds it).
pub const DEFAULT_RERANKER_SUBDIR: &str = "prebuild/reranker/model";

/// sha256 of the committed `model.int8.onnx`: the built-in default loads only this file, so a
/// binary and a model from different commits cannot be paired silently.
pub const DEFAULT_RERANKER_SHA256: &str =
    "d35537f2cff272ef09e1af9911c3cb2aa0dff038bad79be1fc5305b1e0f61f14";

/// The default reranker directory: `$DOCLOUPE_RERANKER_DIR`, else the installed model in the
/// source tree this binary was built from.
#[cfg(not(target_arch = "wasm32"))]
pub fn default_reranker_dir() -> std::path::PathBuf {
    match std::env::var_os("DOCLOUPE_RERANKER_DIR") {
        Some(dir) => dir.into(),
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_RERANKER_SUBDIR),
    }
}

impl RerankerFiles {
    /// A reranker from its three files' bytes: `manifest.json` (`id`, `maxTokens`,
    /// `blendWeight`, and the `sha256` of each file, which is verified), the int8 ONNX and
    /// `tokenizer.json`. `origin` names where they came from, for messages.
    pub fn from_parts(
        manifest: &[u8],
        onnx: Vec<u8>,
        tokenizer: Vec<u8>,
        origin: &str,
    ) -> Result<RerankerFiles> {
        let manifest: serde_json::Value = serde_json::from_slice(manifest)
            .map_err(|e| Error::Model(format!("bad reranker manifest.json in {origin}: {e}")))?;
        let files = RerankerFiles {
            id: manifest["id"]
                .as_str()
                .ok_or_else(|| Error::Model("reranker manifest.json has no id".into()))?
                .to_owned(),
            onnx,
            tokenizer,
            max_tokens: manifest["maxTokens"].as_u64().unwrap_or(256) as usize,
            blend_weight: match &manifest["blendWeight"] {
                serde_json::Value::Null => None,
                v => Some(
                    v.as_f64()
                        .filter(|w| (0.0..=1.0).contains(w))
                        .ok_or_else(|| {
                            Error::Model(format!(
                                "reranker manifest.json: blendWeight {v} is not a number in 0..=1"
                            ))
                        })? as f32,
                ),
            },
        };
        for (name, bytes) in [
            ("model.int8.onnx", &files.onnx),
            ("tokenizer.json", &files.tokenizer),
        ] {
            if let Some(want) = manifest["sha256"][name].as_str() {
                let got = sha256_hex(bytes);
                if got != want {
                    return Err(Error::Model(format!(
                        "{origin}/{name} does not match manifest.json (sha256 {got}, expected {want})"
                    )));
                }
            }
        }
        Ok(files)
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl RerankerFiles {
    /// Reads a reranker directory: `manifest.json`, `model.int8.onnx`, `tokenizer.json` (see
    /// [`RerankerFiles::from_parts`]).
    pub fn from_dir(dir: &std::path::Path) -> Result<RerankerFiles> {
        let read = |name: &str| {
            std::fs::read(dir.join(name)).map_err(|e| {
                Error::Model(format!(
                    "cannot read reranker file {}: {e}",
                    dir.join(name).display()
                ))
            })
        };
        RerankerFiles::from_parts(
            &read("manifest.json")?,
            read("model.int8.onnx")?,
            read("tokenizer.json")?,
            &dir.display().to_string(),
        )
    }

    /// The reranker the engine uses when none is named: `$DOCLOUPE_RERANKER_DIR` as given, or
    /// else the committed model, which must be the pinned file. `None` when the directory has
    /// no model (a trimmed install); the rerank stage then falls back as the contract says.
    pub fn default_model() -> Result<Option<RerankerFiles>> {
        let dir = default_reranker_dir();
        if !dir.join("manifest.json").is_file() {
            return Ok(None);
        }
        let files = RerankerFiles::from_dir(&dir)?;
        if std::env::var_os("DOCLOUPE_RERANKER_DIR").is_none() {
            let got = sha256_hex(&files.onnx);
            if got != DEFAULT_RERANKER_SHA256 {
                return Err(Error::Model(format!(
                    "{} is not the reranker this build pins (sha256 {got}, expected {DEFAULT_RERANKER_SHA256})",
                    dir.join("model.int8.onnx").display()
                )));
            }
        }
        Ok(Some(files))
    }
}

#[cfg(feature = "models")]
/// A BERT-style cross-encoder: inputs `input_ids`, `attention_mask`, `token_type_ids`
/// (`[1, sequence]`, i64), output one logit (`[1, 1]` or `[1]`).
pub struct CrossEncoder {
    id: String,
    sha256: String,
    blend_weight: Option<f32>,
    tokenizer: Tokenizer,
    plan: Arc<TypedRunnableModel>,
}

#[cfg(feature = "models")]
impl std::fmt::Debug for CrossEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrossEncoder")
            .field("id", &self.id)
            .field("sha256", &self.sha256)
            .finish()
    }
}

#[cfg(feature = "models")]
impl CrossEncoder {
    /// Loads and checks the model: a probe pair must produce exactly one finite logit, so a
    /// wrong file (an embedding model, a classifier with two labels) fails here, typed.
    pub fn new(files: &RerankerFiles) -> Result<CrossEncoder> {
        let mut tokenizer = Tokenizer::from_bytes(&files.tokenizer)
            .map_err(|e| Error::Model(format!("reranker tokenizer.json does not load: {e}")))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: files.max_tokens,
                strategy: TruncationStrategy::LongestFirst,
                ..Default::default()
            }))
            .map_err(|e| Error::Model(format!("reranker tokenizer truncation: {e}")))?;
        let plan = load_plan(&files.onnx)
            .map_err(|e| Error::Model(format!("reranker ONNX model does not load: {e:#}")))?;
        let model = CrossEncoder {
            id: files.id.clone(),
            sha256: sha256_hex(&files.onnx),
            blend_weight: files.blend_weight,
            tokenizer,
            plan,
        };
        let probe = model.score("probe query", "probe passage")?;
        if !probe.is_finite() {
            return Err(Error::Model("reranker produced a non-finite score".into()));
        }
        Ok(model)
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn sha256(&self) -> &str {
        &self.sha256
    }
}

#[cfg(feature = "models")]
impl Rerank for CrossEncoder {
    fn score(&self, query: &str, passage: &str) -> Result<f32> {
        let enc = self
            .tokenizer
            .encode((query, passage), true)
            .map_err(|e| Error::Model(format!("reranker tokenizer: {e}")))?;
        let outputs = run_encoding(&self.plan, &enc)?;
        let logits = outputs[0]
            .to_plain_array_view::<f32>()
            .map_err(|e| Error::Model(format!("reranker output: {e}")))?;
        if logits.len() != 1 {
            return Err(Error::Model(format!(
                "reranker output has shape {:?}; a cross-encoder gives one logit",
                logits.shape()
            )));
        }
        Ok(logits.iter().next().copied().unwrap_or(f32::NAN))
    }

    fn blend_weight(&self) -> Option<f32> {
        self.blend_weight
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Fixed(Vec<f32>, std::sync::atomic::AtomicUsize);

    impl Rerank for Fixed {
        fn score(&self, _: &str, _: &str) -> Result<f32> {
            let i = self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.0
                .get(i)
                .copied()
                .ok_or_else(|| Error::Model("out of scores".into()))
        }
    }

    fn passages(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("p{i}")).collect()
    }

    #[test]
    fn probabilities_are_never_zero_or_one() {
        for x in [-1e30, -100.0, -30.0, 0.0, 30.0, 1e30, f32::NAN] {
            let p = probability(x);
            assert!(p > 0.0 && p < 1.0, "{x} -> {p}");
        }
        assert!(probability(2.0) > probability(1.0));
    }

    #[test]
    fn every_way_the_stage_can_fail_is_named() {
        let long = Duration::from_secs(60);
        assert_eq!(
            score_all(None, "q", &passages(3), long),
            Err(Fallback::ModelUnavailable)
        );
        let short = Fixed(vec![1.0], Default::default());
        assert_eq!(
            score_all(Some(&short), "q", &passages(3), long),
            Err(Fallback::Failed)
        );
        let nan = Fixed(vec![1.0, f32::NAN], Default::default());
        assert_eq!(
            score_all(Some(&nan), "q", &passages(2), long),
            Err(Fallback::Failed)
        );
        let ok = Fixed(vec![1.0, -1.0], Default::default());
        assert_eq!(
            score_all(Some(&ok), "q", &passages(2), Duration::ZERO),
            Err(Fallback::BudgetExceeded)
        );
        let ok = Fixed(vec![1.0, -1.0], Default::default());
        let s = score_all(Some(&ok), "q", &passages(2), long).unwrap();
        assert!(s[0] > 0.5 && s[1] < 0.5);
    }
}
