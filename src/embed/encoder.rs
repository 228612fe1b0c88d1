//! Running the models: `tokenizers` + a `tract-onnx` plan (the `models` feature).

use std::borrow::Cow;
use std::sync::Arc;

use tokenizers::{Encoding, Tokenizer};
use tract_onnx::prelude::*;

use super::bert::{self, Bert};
use super::unigram::CompactTokenizer;
use super::{normalize, ModelFiles, ModelInfo};
use crate::error::{Error, Result};

/// A model's tokenizer: a Unigram one (multilingual E5's XLM-R pieces) with the compact model,
/// which keeps 4 MiB resident where `tokenizers`' own keeps ≈ 270 MiB; any other (MiniLM's
/// WordPiece) as `tokenizers` loads it.
enum Tokenizing {
    Compact(Box<CompactTokenizer>),
    Stock(Box<Tokenizer>),
}

impl Tokenizing {
    /// Without truncation or padding, which the shipped tokenizer.json may ask for (one text
    /// per call, cut at the model's window by [`Embedder::encode`]).
    fn load(json: &[u8]) -> Result<Tokenizing> {
        let err = |e: tokenizers::Error| Error::Model(format!("tokenizer.json does not load: {e}"));
        // The compact model reads only a Unigram model without byte fallback; anything else
        // fails there (at the `model` object, after the rest) and loads as `tokenizers` does.
        if let Ok(mut t) = serde_json::from_slice::<CompactTokenizer>(json) {
            t.with_padding(None);
            t.with_truncation(None).map_err(err)?;
            return Ok(Tokenizing::Compact(Box::new(t)));
        }
        let mut t = Tokenizer::from_bytes(json).map_err(err)?;
        t.with_padding(None);
        t.with_truncation(None).map_err(err)?;
        Ok(Tokenizing::Stock(Box::new(t)))
    }

    fn encode(&self, text: &str) -> Result<Encoding> {
        match self {
            Tokenizing::Compact(t) => t.encode_fast(text, true),
            Tokenizing::Stock(t) => t.encode_fast(text, true),
        }
        .map_err(|e| Error::Model(format!("tokenizer: {e}")))
    }
}

/// A loaded, optimized embedding model. Cheap to share across threads (`run` takes `&self`).
pub struct Embedder {
    info: ModelInfo,
    /// The model's tokenizer without truncation or padding (one instance, shared by counting
    /// and embedding).
    tokenizer: Tokenizing,
    max_tokens: usize,
    query_prefix: String,
    passage_prefix: String,
    runtime: Runtime,
    /// A query tower ([`super::QUERY_TOWER_OF_MODEL`]): it embeds questions only.
    query_only: bool,
    /// The vectors of the queries embedded last.
    queries: KeptQueries,
}

/// What runs the graph: tract's optimized plan (f32 weights, tract's kernels for this CPU), or
/// [`Bert`] over the int8 weights as the file holds them. Wasm and the portable kernels take
/// [`Bert`] for every `build_model` int8 file: MiniLM in 32 MiB of wasm memory against
/// tract's 84, and the same bits on every target. Natively the fast kernels stay tract's,
/// whose AVX2/FMA matmul embeds a build's passages twice as fast.
enum Runtime {
    Tract(Arc<TypedRunnableModel>),
    Int8(Box<Bert>),
}

/// The vectors of the last queries embedded, by their text: the second page of a search, the
/// same question under another filter, an agent asking again all need the vector of a query
/// embedded a moment before (a third of a hybrid request's time on a server). A vector is a
/// function of its text alone (see [`Embedder::embed`]), so a kept one has the bits a new run
/// gives. At most [`KEPT_QUERIES`] are kept (a query's text, at most 500 characters, and its
/// floats: 4 KB an entry at most); past it the oldest goes.
type KeptQueries = crate::kept::Kept<String, Vec<f32>, KEPT_QUERIES>;

/// A server's worth natively; a few in wasm, where a Worker isolate counts every kilobyte and a
/// browser tab pages through one reader's searches.
const KEPT_QUERIES: usize = if cfg!(target_arch = "wasm32") {
    16
} else {
    256
};

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("info", &self.info)
            .finish()
    }
}

impl Embedder {
    pub fn new(files: &ModelFiles) -> Result<Embedder> {
        Self::load(files, Cow::Borrowed(&files.onnx), &files.tokenizer)
    }

    /// [`Embedder::new`] that lets go of the ONNX file's bytes as soon as they are decoded,
    /// before tract builds its graph from them: in wasm, whose memory never shrinks, the
    /// file's copy is then not part of the load's peak (measured: 89 MiB less for E5, 21 for MiniLM).
    pub fn from_files(mut files: ModelFiles) -> Result<Embedder> {
        let onnx = std::mem::take(&mut files.onnx);
        let tokenizer = std::mem::take(&mut files.tokenizer);
        Self::load(&files, Cow::Owned(onnx), &tokenizer)
    }

    fn load(files: &ModelFiles, onnx: Cow<[u8]>, tokenizer_json: &[u8]) -> Result<Embedder> {
        let query_only = super::is_query_tower(&onnx);
        let side = || {
            let tokenizer = Tokenizing::load(tokenizer_json);
            let (sha256, tokenizer_sha256) = super::identity(&onnx, tokenizer_json);
            (tokenizer, sha256, tokenizer_sha256)
        };
        let (tokenizer, sha256, tokenizer_sha256, runtime) = if int8_runtime(&onnx) {
            let (tokenizer, sha256, tokenizer_sha256) = side();
            // Owned bytes become the weights' storage without a copy.
            let bert = Bert::load(bytes::Bytes::from(onnx.into_owned()))?;
            (
                tokenizer,
                sha256,
                tokenizer_sha256,
                Runtime::Int8(Box::new(bert)),
            )
        } else {
            // The graph's parse and optimization (E5: about 0.75 s) on one core; the tokenizer
            // (0.13 s) and both files' sha256 (0.08 s) beside it, natively.
            let decode = || decode_onnx(&onnx);
            #[cfg(not(target_arch = "wasm32"))]
            let ((tokenizer, sha256, tokenizer_sha256), proto) = rayon::join(side, decode);
            #[cfg(target_arch = "wasm32")]
            let ((tokenizer, sha256, tokenizer_sha256), proto) = (side(), decode());
            drop(onnx);
            let plan = proto
                .and_then(plan_for_proto)
                .map_err(|e| Error::Model(format!("ONNX model does not load: {e:#}")))?;
            (tokenizer, sha256, tokenizer_sha256, Runtime::Tract(plan))
        };
        let tokenizer = tokenizer?;
        let mut embedder = Embedder {
            info: ModelInfo {
                id: files.id.clone(),
                sha256,
                tokenizer_sha256,
                dims: 0,
                max_tokens: files.max_tokens as u32,
            },
            tokenizer,
            max_tokens: files.max_tokens.max(2),
            query_prefix: files.query_prefix.clone(),
            passage_prefix: files.passage_prefix.clone(),
            runtime,
            query_only,
            queries: KeptQueries::default(),
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

    /// Number of tokens `text` takes as a passage (its prefix and the special tokens
    /// included, before truncation): what chunking budgets against the window.
    pub fn count_tokens(&self, text: &str) -> Result<usize> {
        let enc = self
            .tokenizer
            .encode(&format!("{}{text}", self.passage_prefix))?;
        Ok(enc.len())
    }

    /// The token ids the model reads for `text` (as given, no prefix): special tokens
    /// included, truncated to the model's window. Benchmarks feed the same ids to other
    /// runtimes.
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self.encode(text)?.get_ids().to_vec())
    }

    /// `text` tokenized and cut to the window: the first `max − 1` tokens and the closing
    /// special token, what truncation of a single sequence keeps.
    fn encode(&self, text: &str) -> Result<Encoding> {
        let mut enc = self.tokenizer.encode(text)?;
        if enc.len() > self.max_tokens {
            let ids = enc.get_ids();
            let types = enc.get_type_ids();
            let keep = self.max_tokens - 1;
            let mut cut_ids = ids[..keep].to_vec();
            cut_ids.push(ids[ids.len() - 1]);
            let mut cut_types = types[..keep].to_vec();
            cut_types.push(types[types.len() - 1]);
            enc = Encoding::new(
                cut_ids,
                cut_types,
                vec![String::new(); self.max_tokens],
                vec![None; self.max_tokens],
                vec![(0, 0); self.max_tokens],
                vec![0; self.max_tokens],
                vec![1; self.max_tokens],
                Vec::new(),
                Default::default(),
            );
        }
        Ok(enc)
    }

    /// Embeds a search query (with the model's query prefix), or gives the vector kept from
    /// the last time it was asked.
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        let text = format!("{}{text}", self.query_prefix);
        self.queries.try_get(&text, || self.embed(&text))
    }

    /// Embeds a passage: a chunk's embedding input (with the model's passage prefix). A query
    /// tower refuses: its vectors of a page would not be the ones its questions are tuned to
    /// meet.
    pub fn embed_passage(&self, text: &str) -> Result<Vec<f32>> {
        if self.query_only {
            return Err(Error::Model(format!(
                "{} is a query tower: it embeds questions, not passages (build with the \
                 directory's model.int8.onnx)",
                self.info.id
            )));
        }
        self.embed(&format!("{}{text}", self.passage_prefix))
    }

    /// Whether this is a query tower, which embeds questions only.
    pub fn is_query_tower(&self) -> bool {
        self.query_only
    }

    /// Embeds one text as given (no prefix): a unit vector of `dims` floats. Deterministic:
    /// the same text always gives the same bits.
    pub fn embed(&self, text: &str) -> Result<Vec<f32>> {
        let enc = self.encode(text)?;
        let seq = enc.len().max(1);
        let mask = enc.get_attention_mask();
        let hidden = match &self.runtime {
            Runtime::Int8(bert) => bert.run(enc.get_ids(), enc.get_type_ids(), mask)?,
            Runtime::Tract(plan) => {
                let outputs = run_encoding(plan, &enc)?;
                let hidden = outputs[0]
                    .to_plain_array_view::<f32>()
                    .map_err(|e| Error::Model(e.to_string()))?;
                let shape = hidden.shape().to_vec();
                if shape.len() != 3 || shape[0] != 1 || shape[1] != seq {
                    return Err(Error::Model(format!(
                        "unexpected output shape {shape:?}, want [1, {seq}, dims]"
                    )));
                }
                hidden.iter().copied().collect()
            }
        };
        let dims = hidden.len() / seq;
        // Mean over the real tokens (the mask is all ones without padding, but honour it).
        let mut v = vec![0f32; dims];
        let mut n = 0f32;
        for (i, row) in hidden.chunks_exact(dims).enumerate() {
            if mask.get(i).copied().unwrap_or(0) != 0 {
                v.iter_mut().zip(row).for_each(|(a, x)| *a += x);
                n += 1.0;
            }
        }
        if n > 0.0 {
            v.iter_mut().for_each(|a| *a /= n);
        }
        normalize(&mut v);
        Ok(v)
    }

    /// Embeds several texts, one model call each. The plan is built for batch size 1: that
    /// runs ~1.5× faster than a symbolic batch on tract, and makes a vector a function of its
    /// text alone (batched runs round differently with the batch's shape).
    pub fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        texts.iter().map(|t| self.embed(t)).collect()
    }
}

/// Whether this process runs `onnx` on [`Bert`] (see [`Runtime`]).
fn int8_runtime(onnx: &[u8]) -> bool {
    bert::runs(onnx)
        && (cfg!(target_arch = "wasm32") || super::kernels() == super::Kernels::Portable)
}

/// The three BERT inputs, in the order every docloupe graph takes them (prebuild/models.py
/// writes both the embedding model and the reranker this way).
const BERT_INPUTS: [&str; 3] = ["input_ids", "attention_mask", "token_type_ids"];

/// Loads a BERT-style graph for one sequence per call: batch fixed to 1 (every call embeds
/// one text or scores one pair; see index-builder's build.rs), sequence kept symbolic so one
/// optimized plan serves every length. Inputs are matched by name, since they are fed by
/// position.
pub(crate) fn load_plan(onnx: &[u8]) -> TractResult<Arc<TypedRunnableModel>> {
    plan_for_proto(decode_onnx(onnx)?)
}

/// The file's protobuf (what tract's `model_for_read` decodes, without its copy of the bytes).
fn decode_onnx(onnx: &[u8]) -> TractResult<tract_onnx::pb::ModelProto> {
    <tract_onnx::pb::ModelProto as prost::Message>::decode(onnx)
        .map_err(|e| TractError::msg(format!("Reading proto model: {e}")))
}

/// [`load_plan`] from the decoded file, which is dropped once tract has its tensors.
fn plan_for_proto(proto: tract_onnx::pb::ModelProto) -> TractResult<Arc<TypedRunnableModel>> {
    plan_for_proto_with(proto, true)
}

fn plan_for_proto_with(
    proto: tract_onnx::pb::ModelProto,
    fold: bool,
) -> TractResult<Arc<TypedRunnableModel>> {
    let mut model = tract_onnx::onnx().model_for_proto_model(&proto)?;
    drop(proto);
    if fold {
        fold_weights(&mut model)?;
    }
    let names: Vec<String> = model
        .input_outlets()?
        .iter()
        .map(|o| model.node(o.node).name.clone())
        .collect();
    if names != BERT_INPUTS {
        return Err(TractError::msg(format!(
            "inputs are {names:?}; expected {BERT_INPUTS:?}"
        )));
    }
    let seq = model.symbols.sym("sequence");
    for input in 0..3 {
        model.set_input_fact(input, i64::fact(&[1.to_dim(), seq.clone().to_dim()]).into())?;
    }
    model.into_optimized()?.into_runnable()
}

/// Folds each int8 weight (`Mul(DequantizeLinear(q, scale, 0), row factor)`, prebuild/models.py)
/// into the f32 constant tract's analysis makes of it, one weight at a time, before the
/// model's own analysis. That analysis keeps the value of every constant node it computes, the
/// `DequantizeLinear`'s and the `Mul`'s both, until the typed model replaces them: two f32
/// copies of every weight at once, the peak of the load (E5: 2 × 85 MB). Here each pair is
/// analysed alone in a model of its own (the same ops on the same inputs, so the same bits)
/// and the pair is replaced by the result.
fn fold_weights(model: &mut InferenceModel) -> TractResult<usize> {
    use tract_onnx::tract_hir::infer::Factoid;
    let konst = |model: &InferenceModel, o: OutletId| {
        model
            .node(o.node)
            .op_as::<tract_onnx::tract_hir::ops::konst::Const>()
            .map(|c| c.val().clone())
    };
    let pairs: Vec<(usize, usize)> = model
        .nodes()
        .iter()
        .filter(|n| n.op.name() == "Mul" && n.inputs.len() == 2)
        .filter_map(|n| {
            let dq = model.node(n.inputs[0].node);
            let folds = dq.op.name() == "DequantizeLinear"
                && dq.inputs.iter().all(|&i| konst(model, i).is_some())
                && konst(model, n.inputs[1]).is_some();
            folds.then_some((dq.id, n.id))
        })
        .collect();
    let mut folded_count = 0;
    for (dq, mul) in pairs {
        let mut alone = InferenceModel::default();
        let mut inputs = tvec!();
        for (ix, &i) in model.node(dq).inputs.iter().enumerate() {
            let value = konst(model, i).expect("checked above");
            inputs.push(alone.add_const(format!("input.{ix}"), value)?);
        }
        let weight = alone.wire_node("dq", model.node(dq).op.clone(), &inputs)?;
        let row = alone.add_const(
            "row",
            konst(model, model.node(mul).inputs[1]).expect("checked"),
        )?;
        let folded = alone.wire_node("mul", model.node(mul).op.clone(), &[weight[0], row])?;
        alone.select_output_outlets(&folded)?;
        alone.analyse(false)?;
        let Some(value) = alone.outlet_fact(folded[0])?.value.concretize() else {
            continue;
        };
        drop(alone);
        let mut patch = tract_onnx::tract_hir::infer::InferenceModelPatch::default();
        let k = patch.add_const(format!("{}.folded", model.node(mul).name), value)?;
        patch.shunt_outside(model, OutletId::new(mul, 0), k)?;
        patch.apply(model)?;
        folded_count += 1;
    }
    // The int8 weights and the replaced nodes go.
    model.compact()?;
    Ok(folded_count)
}

/// Runs a [`load_plan`] plan on one tokenized sequence (or pair).
pub(crate) fn run_encoding(
    plan: &Arc<TypedRunnableModel>,
    enc: &tokenizers::Encoding,
) -> Result<TVec<TValue>> {
    let seq = enc.len().max(1);
    let column = |v: &[u32]| -> Result<TValue> {
        let mut data: Vec<i64> = v.iter().map(|&x| x as i64).collect();
        data.resize(seq, 0);
        Ok(Tensor::from_shape(&[1, seq], &data)
            .map_err(|e| Error::Model(e.to_string()))?
            .into())
    };
    plan.run(tvec![
        column(enc.get_ids())?,
        column(enc.get_attention_mask())?,
        column(enc.get_type_ids())?
    ])
    .map_err(|e| Error::Model(format!("inference failed: {e:#}")))
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    /// A query asked again gets the vector a new run gives, bit for bit, under the model's
    /// query prefix (E5's `query: `, not its `passage: `).
    #[test]
    fn a_kept_query_vector_is_the_one_a_new_run_gives() {
        let dir = super::super::models_root().join("multilingual-e5-small");
        let e = Embedder::new(&ModelFiles::from_dir(&dir).expect("run `make models`")).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        let fresh = e.embed("query: how big can the cache be").unwrap();
        let asked = e.embed_query("how big can the cache be").unwrap();
        let again = e.embed_query("how big can the cache be").unwrap();
        assert_eq!(bits(&asked), bits(&fresh));
        assert_eq!(bits(&again), bits(&fresh));
        let passage = e.embed_passage("how big can the cache be").unwrap();
        assert_ne!(bits(&passage), bits(&fresh));
        assert_eq!(
            bits(&e.embed_query("how big can the cache be").unwrap()),
            bits(&fresh)
        );
    }

    /// At most [`KEPT_QUERIES`] vectors are kept, the oldest going first; a text is kept once.
    #[test]
    fn kept_queries_are_bounded_and_the_oldest_go() {
        let kept = KeptQueries::default();
        let keep = |q: String, v: f32| kept.try_get(&q, || Ok::<_, ()>(vec![v]));
        for i in 0..KEPT_QUERIES + 3 {
            keep(format!("q{i}"), i as f32).unwrap();
        }
        assert_eq!(keep("q10".into(), -1.0), Ok(vec![10.0]));
        assert_eq!(kept.len(), KEPT_QUERIES);
        // Asked without making: what is kept, else the miss (and nothing kept).
        let kept_of = |q: String| kept.try_get(&q, || Err(())).ok();
        assert!((0..3).all(|i| kept_of(format!("q{i}")).is_none()));
        assert_eq!(kept_of("q3".into()), Some(vec![3.0]));
        assert_eq!(kept_of("q10".into()), Some(vec![10.0]));
        let last = KEPT_QUERIES + 2;
        assert_eq!(kept_of(format!("q{last}")), Some(vec![last as f32]));
        assert_eq!(kept.len(), KEPT_QUERIES);
    }

    /// Folding the weights one at a time gives the plan tract's own analysis gives: the same
    /// hidden states, bit for bit, for both models (`make models`).
    #[test]
    fn folded_weights_give_the_same_bits() {
        for model in ["all-MiniLM-L6-v2", "multilingual-e5-small"] {
            let dir = super::super::models_root().join(model);
            let files = ModelFiles::from_dir(&dir).expect("run `make models`");
            let tokenizer = Tokenizing::load(&files.tokenizer).unwrap();
            // Six dense layers a block: query, key, value, output and the feed-forward two.
            let mut graph = tract_onnx::onnx()
                .model_for_proto_model(&decode_onnx(&files.onnx).unwrap())
                .unwrap();
            let blocks = if model.starts_with("all-MiniLM") {
                6
            } else {
                12
            };
            assert_eq!(fold_weights(&mut graph).unwrap(), 6 * blocks, "{model}");
            let plans = [true, false]
                .map(|fold| plan_for_proto_with(decode_onnx(&files.onnx).unwrap(), fold).unwrap());
            for text in [
                "query: how big can the cache be",
                "passage: Кэш хранит ответы 5 минут.",
            ] {
                let enc = tokenizer.encode(text).unwrap();
                let [a, b] = [0, 1].map(|i| run_encoding(&plans[i], &enc).unwrap());
                let bits = |t: &TVec<TValue>| -> Vec<u32> {
                    let v = t[0].to_plain_array_view::<f32>().unwrap();
                    v.iter().map(|x| x.to_bits()).collect()
                };
                assert_eq!(bits(&a), bits(&b), "{model}: {text}");
            }
        }
    }
}
