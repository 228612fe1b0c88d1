//! The embedding models' BERT encoder in plain Rust, over the int8 weights where the ONNX file
//! holds them.
//!
//! tract folds every int8 weight of `model.int8.onnx` into an f32 constant when it builds its
//! plan (MiniLM: 22 MB of int8 become 86 MB of f32), and wasm memory never shrinks, so a loaded
//! model cost 84 MiB of a Worker isolate's 128 MB (`docs/measurements/2026-12-07-worker-models.md`;
//! tract 0.23.9 and 0.23.10 have no int8 weight-only matmul). This runs the same graph,
//! `prebuild/models.py`'s `build_model`, reading its weights by their initializer names:
//!
//! - each dense layer's int8 weight `q` [in, out], its per-column scale and per-row factor
//!   (`W = row[i] · q[i, o] · scale[o]`) stays int8 in the file's own bytes (decoded without a
//!   copy: the file is the weights' storage), and `x·W` is computed as
//!   `scale[o] · Σᵢ (x[i]·row[i]) · q[i, o]`, the activations in f32;
//! - the word-embedding table stays int8 (rows gathered and scaled as the graph does);
//! - everything else (biases, norms, position and type tables) is copied out as f32.
//!
//! The arithmetic is written out in a fixed order, with `libm::expf` and a branch-free `erf`,
//! so the same text gives the same bits on every target, natively and in wasm with or without
//! simd128. Against tract's f32 plan the hidden states differ by rounding (4.4e-6 at most over
//! `make bench-web`'s 40 queries; the test below allows 2e-4), so bundles built natively on
//! tract are searched with it unchanged and the quality figures do not move.
//!
//! Memory, loaded in wasm: MiniLM 32 MiB against tract's 84 MiB
//! (`docs/measurements/2026-12-08-int8-encoder.md`).

use bytes::Bytes;

use crate::error::{Error, Result};

/// The ONNX messages this reads (field numbers from onnx.proto3); prost skips every other
/// field, the graph's nodes included. `raw_data` decodes as a slice of the input's bytes.
#[derive(Clone, PartialEq, prost::Message)]
struct OnnxModel {
    #[prost(message, optional, tag = "7")]
    graph: Option<OnnxGraph>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct OnnxGraph {
    #[prost(message, repeated, tag = "5")]
    initializer: Vec<OnnxTensor>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct OnnxTensor {
    #[prost(int64, repeated, tag = "1")]
    dims: Vec<i64>,
    #[prost(int32, tag = "2")]
    data_type: i32,
    #[prost(string, tag = "8")]
    name: String,
    #[prost(bytes = "bytes", tag = "9")]
    raw_data: Bytes,
}

const FLOAT: i32 = 1;
const INT8: i32 = 3;
const INT64: i32 = 7;

/// The word-embedding table's int8 rows: what marks a file as `build_model`'s int8 graph.
const WORD_TABLE: &str = "embeddings.word_embeddings.weight_quant";

/// Whether `onnx` is a graph this encoder runs (an int8 `build_model` graph); other files (the
/// fp32 export, a foreign model) are tract's.
pub(crate) fn runs(onnx: &[u8]) -> bool {
    // The name as a length-delimited string field (tag 8) of an initializer.
    let mut needle = vec![0x42, WORD_TABLE.len() as u8];
    needle.extend_from_slice(WORD_TABLE.as_bytes());
    onnx.windows(needle.len()).any(|w| w == needle)
}

/// The initializers by name, each taken once.
struct Tensors(std::collections::HashMap<String, OnnxTensor>);

impl Tensors {
    fn take(&mut self, name: &str, data_type: i32, dims: &[usize]) -> Result<OnnxTensor> {
        let t = self
            .0
            .remove(name)
            .ok_or_else(|| bad(format!("no initializer {name}")))?;
        let got: Vec<i64> = t.dims.clone();
        let want: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
        let width = match data_type {
            FLOAT => 4,
            INT8 => 1,
            _ => 8,
        };
        let bytes = dims.iter().try_fold(width, |a: usize, &d| a.checked_mul(d));
        if t.data_type != data_type || got != want || Some(t.raw_data.len()) != bytes {
            return Err(bad(format!(
                "{name}: type {} shape {got:?} with {} bytes; expected type {data_type} shape \
                 {want:?}",
                t.data_type,
                t.raw_data.len()
            )));
        }
        Ok(t)
    }

    fn floats(&mut self, name: &str, dims: &[usize]) -> Result<Vec<f32>> {
        let t = self.take(name, FLOAT, dims)?;
        Ok(t.raw_data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    /// One float, of shape [] or [1].
    fn scalar(&mut self, name: &str) -> Result<f32> {
        let one = self.0.get(name).is_some_and(|t| t.dims == [1]);
        Ok(self.floats(name, if one { &[1] } else { &[] })?[0])
    }

    /// A tensor's shape as the file gives it (its rank and sizes checked).
    fn shape_of(&self, name: &str, rank: usize) -> Result<Vec<usize>> {
        let t = self
            .0
            .get(name)
            .ok_or_else(|| bad(format!("no initializer {name}")))?;
        if t.dims.len() != rank || t.dims.iter().any(|&d| d <= 0 || d > 1 << 24) {
            return Err(bad(format!("{name} has shape {:?}", t.dims)));
        }
        Ok(t.dims.iter().map(|&d| d as usize).collect())
    }
}

fn bad(msg: String) -> Error {
    Error::Model(format!("ONNX model does not load: {msg}"))
}

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

impl Norm {
    fn load(t: &mut Tensors, prefix: &str, width: usize) -> Result<Norm> {
        Ok(Norm {
            gamma: t.floats(&format!("{prefix}.weight"), &[width])?,
            beta: t.floats(&format!("{prefix}.bias"), &[width])?,
        })
    }

    /// The graph's layer norm over each row of `x`, in place: `d = x − mean`,
    /// `(d / sqrt(mean(d²) + eps)) · γ + β`.
    fn apply(&self, x: &mut [f32], eps: f32) {
        let n = self.gamma.len();
        for row in x.chunks_exact_mut(n) {
            let mean = sum(row) / n as f32;
            row.iter_mut().for_each(|v| *v -= mean);
            let var = row.iter().fold(0f32, |a, &d| a + d * d) / n as f32;
            let std = (var + eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(&self.gamma).zip(&self.beta) {
                *v = *v / std * g + b;
            }
        }
    }
}

/// A dense layer, `x·W + b`, its weight int8 in the file's bytes.
struct Dense {
    inputs: usize,
    outputs: usize,
    /// The file's [inputs][outputs] weights rearranged in place into strips of [`OUTPUTS`]
    /// columns, each strip [inputs][its columns] (see [`Bert::into_strips`]), so that
    /// [`matmul_i8`] reads each strip front to back.
    q: Bytes,
    scale: Vec<f32>,
    row: Vec<f32>,
    bias: Vec<f32>,
}

impl Dense {
    fn load(t: &mut Tensors, prefix: &str) -> Result<Dense> {
        let shape = t.shape_of(&format!("{prefix}.weight_quant"), 2)?;
        let (inputs, outputs) = (shape[0], shape[1]);
        let q = t
            .take(&format!("{prefix}.weight_quant"), INT8, &shape)?
            .raw_data;
        let zero = t.take(&format!("{prefix}.weight_zero_point"), INT8, &[outputs])?;
        if zero.raw_data.iter().any(|&z| z != 0) {
            return Err(bad(format!("{prefix}: a zero point other than 0")));
        }
        Ok(Dense {
            inputs,
            outputs,
            q,
            scale: t.floats(&format!("{prefix}.weight_scale"), &[outputs])?,
            row: t.floats(&format!("{prefix}.weight_row_scale"), &[inputs, 1])?,
            bias: t.floats(&format!("{prefix}.bias"), &[outputs])?,
        })
    }

    /// `y = x·W + b` for `x`'s rows ([rows][inputs]); `y` is [rows][outputs].
    fn apply(&self, x: &[f32], y: &mut Vec<f32>) {
        let rows = x.len() / self.inputs;
        let scaled: Vec<f32> = x
            .chunks_exact(self.inputs)
            .flat_map(|r| r.iter().zip(&self.row).map(|(a, s)| a * s))
            .collect();
        y.clear();
        y.resize(rows * self.outputs, 0.0);
        matmul_i8(&scaled, &self.q, self.inputs, self.outputs, y);
        for r in y.chunks_exact_mut(self.outputs) {
            for ((v, s), b) in r.iter_mut().zip(&self.scale).zip(&self.bias) {
                *v = *v * s + b;
            }
        }
    }
}

/// Outputs and tokens of one tile of [`matmul_i8`]: its `TOKENS × OUTPUTS` sums stay in
/// registers (eight 4-lane vectors) while the inputs go by.
const OUTPUTS: usize = 8;
const TOKENS: usize = 4;

/// `y[t][o] = Σᵢ x[t][i] · q[i][o]` over `x`'s rows. For each strip of [`OUTPUTS`] columns the
/// int8 weights are widened to f32 once ([`lanes::widen8`]), then every tile of [`TOKENS`] rows
/// sums along the inputs in order: each sum is `s + x·w`, rounded after the product and after
/// the sum, in one fixed order, so every target (simd128, SSE2, plain Rust) gives the same bits.
fn matmul_i8(x: &[f32], q: &[u8], inputs: usize, outputs: usize, y: &mut [f32]) {
    use lanes::V;
    let rows = x.len() / inputs;
    let mut panel = vec![0f32; inputs * OUTPUTS];
    let mut last = [0u8; OUTPUTS];
    for o0 in (0..outputs).step_by(OUTPUTS) {
        let width = OUTPUTS.min(outputs - o0);
        let strip = &q[inputs * o0..inputs * (o0 + width)];
        for (p, qi) in panel
            .chunks_exact_mut(OUTPUTS)
            .zip(strip.chunks_exact(width))
        {
            let bytes = if width == OUTPUTS {
                qi
            } else {
                // A narrow last strip, padded with zero weights.
                last[..width].copy_from_slice(qi);
                last[width..].fill(0);
                &last[..]
            };
            let (lo, hi) = lanes::widen8(bytes);
            lo.store(&mut p[..4]);
            hi.store(&mut p[4..]);
        }
        for t0 in (0..rows).step_by(TOKENS) {
            let tile = TOKENS.min(rows - t0);
            // A short last tile repeats its last row, whose sums are not stored.
            let row = |r: usize| &x[(t0 + r.min(tile - 1)) * inputs..][..inputs];
            let (x0, x1, x2, x3) = (row(0), row(1), row(2), row(3));
            let mut acc = [V::zero(); 2 * TOKENS];
            let xs = x0.iter().zip(x1).zip(x2).zip(x3);
            for ((((&a0, &a1), &a2), &a3), w) in xs.zip(panel.chunks_exact(OUTPUTS)) {
                let (w0, w1) = (V::load(&w[..4]), V::load(&w[4..]));
                for (r, a) in [a0, a1, a2, a3].into_iter().enumerate() {
                    let a = V::splat(a);
                    acc[2 * r] = acc[2 * r].add_product(a, w0);
                    acc[2 * r + 1] = acc[2 * r + 1].add_product(a, w1);
                }
            }
            for r in 0..tile {
                let mut out = [0f32; OUTPUTS];
                acc[2 * r].store(&mut out[..4]);
                acc[2 * r + 1].store(&mut out[4..]);
                y[(t0 + r) * outputs + o0..][..width].copy_from_slice(&out[..width]);
            }
        }
    }
}

/// Four f32 lanes: simd128 in wasm, SSE2 on x86-64 (every x86-64 CPU has it), plain arrays
/// elsewhere; the same IEEE operations lane by lane in each, so the same bits. LLVM does not
/// vectorize [`matmul_i8`]'s tile by itself for wasm (measured: scalar `f32.mul`s).
mod lanes {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    mod imp {
        use core::arch::wasm32::*;

        #[derive(Clone, Copy)]
        pub struct V(v128);

        impl V {
            #[inline(always)]
            pub fn zero() -> V {
                V(f32x4_splat(0.0))
            }
            #[inline(always)]
            pub fn splat(x: f32) -> V {
                V(f32x4_splat(x))
            }
            #[inline(always)]
            pub fn load(s: &[f32]) -> V {
                let s = &s[..4];
                // SAFETY: four f32s in bounds; v128_load takes unaligned addresses.
                V(unsafe { v128_load(s.as_ptr() as *const v128) })
            }
            #[inline(always)]
            pub fn store(self, s: &mut [f32]) {
                let s = &mut s[..4];
                // SAFETY: four f32s in bounds; unaligned stores are allowed.
                unsafe { v128_store(s.as_mut_ptr() as *mut v128, self.0) }
            }
            #[inline(always)]
            pub fn add_product(self, a: V, b: V) -> V {
                V(f32x4_add(self.0, f32x4_mul(a.0, b.0)))
            }
        }

        #[inline(always)]
        pub fn widen8(b: &[u8]) -> (V, V) {
            let b = &b[..8];
            // SAFETY: eight bytes in bounds.
            let x = unsafe { v128_load64_zero(b.as_ptr() as *const u64) };
            let h = i16x8_extend_low_i8x16(x);
            (
                V(f32x4_convert_i32x4(i32x4_extend_low_i16x8(h))),
                V(f32x4_convert_i32x4(i32x4_extend_high_i16x8(h))),
            )
        }
    }

    #[cfg(target_arch = "x86_64")]
    mod imp {
        use core::arch::x86_64::*;

        #[derive(Clone, Copy)]
        pub struct V(__m128);

        impl V {
            #[inline(always)]
            pub fn zero() -> V {
                // SAFETY (every SSE2 call here): SSE2 is part of x86-64's baseline.
                V(unsafe { _mm_setzero_ps() })
            }
            #[inline(always)]
            pub fn splat(x: f32) -> V {
                V(unsafe { _mm_set1_ps(x) })
            }
            #[inline(always)]
            pub fn load(s: &[f32]) -> V {
                let s = &s[..4];
                // SAFETY: four f32s in bounds; an unaligned load.
                V(unsafe { _mm_loadu_ps(s.as_ptr()) })
            }
            #[inline(always)]
            pub fn store(self, s: &mut [f32]) {
                let s = &mut s[..4];
                // SAFETY: four f32s in bounds; an unaligned store.
                unsafe { _mm_storeu_ps(s.as_mut_ptr(), self.0) }
            }
            #[inline(always)]
            pub fn add_product(self, a: V, b: V) -> V {
                V(unsafe { _mm_add_ps(self.0, _mm_mul_ps(a.0, b.0)) })
            }
        }

        #[inline(always)]
        pub fn widen8(b: &[u8]) -> (V, V) {
            let b = &b[..8];
            // SAFETY: eight bytes in bounds; an unaligned 64-bit load.
            let x = unsafe { _mm_loadl_epi64(b.as_ptr() as *const __m128i) };
            // Sign-extend: each byte into the high half of a 16-bit lane, shifted back down.
            unsafe {
                let h = _mm_srai_epi16::<8>(_mm_unpacklo_epi8(x, x));
                let lo = _mm_srai_epi32::<16>(_mm_unpacklo_epi16(h, h));
                let hi = _mm_srai_epi32::<16>(_mm_unpackhi_epi16(h, h));
                (V(_mm_cvtepi32_ps(lo)), V(_mm_cvtepi32_ps(hi)))
            }
        }
    }

    #[cfg(not(any(
        all(target_arch = "wasm32", target_feature = "simd128"),
        target_arch = "x86_64"
    )))]
    mod imp {
        #[derive(Clone, Copy)]
        pub struct V([f32; 4]);

        impl V {
            #[inline(always)]
            pub fn zero() -> V {
                V([0.0; 4])
            }
            #[inline(always)]
            pub fn splat(x: f32) -> V {
                V([x; 4])
            }
            #[inline(always)]
            pub fn load(s: &[f32]) -> V {
                V([s[0], s[1], s[2], s[3]])
            }
            #[inline(always)]
            pub fn store(self, s: &mut [f32]) {
                s[..4].copy_from_slice(&self.0);
            }
            #[inline(always)]
            pub fn add_product(self, a: V, b: V) -> V {
                V(std::array::from_fn(|k| self.0[k] + a.0[k] * b.0[k]))
            }
        }

        #[inline(always)]
        pub fn widen8(b: &[u8]) -> (V, V) {
            let f = |k: usize| b[k] as i8 as f32;
            (V([f(0), f(1), f(2), f(3)]), V([f(4), f(5), f(6), f(7)]))
        }
    }

    pub use imp::{widen8, V};
}

/// erf(x) as a ratio of two polynomials in x² over x ∈ [−4, 4] (±1 beyond; Eigen's float
/// approximation, within a few units in the last place). No branch, unlike `libm::erff`, so it
/// vectorizes: a 128-token passage takes 1.2 million of them (6 layers × 128 × 1,536).
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = x2 * p + -2.101_024e-6;
    p = x2 * p + -5.692_506_4e-5;
    p = x2 * p + -7.349_906_3e-4;
    p = x2 * p + -2.954_6e-3;
    p = x2 * p + -1.609_603_3e-2;
    let p = x * p;
    let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
    q = x2 * q + -1.682_827e-3;
    q = x2 * q + -7.373_329_2e-3;
    q = x2 * q + -1.426_474e-2;
    p / q
}

/// A sum in eight lanes, then the lanes in order (fixed on every target).
fn sum(v: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let mut chunks = v.chunks_exact(8);
    for c in &mut chunks {
        lanes.iter_mut().zip(c).for_each(|(l, x)| *l += x);
    }
    lanes.iter().fold(0f32, |a, l| a + l) + chunks.remainder().iter().fold(0f32, |a, x| a + x)
}

struct Layer {
    query: Dense,
    key: Dense,
    value: Dense,
    attention_out: Dense,
    attention_norm: Norm,
    intermediate: Dense,
    out: Dense,
    out_norm: Norm,
}

/// A loaded encoder: `hidden` outputs per token.
pub(crate) struct Bert {
    hidden: usize,
    heads: usize,
    eps: f32,
    attention_div: f32,
    mask_neg: f32,
    sqrt2: f32,
    vocab: usize,
    /// [vocab][hidden] int8 and [vocab] scales.
    words: Bytes,
    word_scale: Vec<f32>,
    /// [max positions][hidden].
    positions: Vec<f32>,
    /// [token types][hidden].
    types: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

impl std::fmt::Debug for Bert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bert")
            .field("hidden", &self.hidden)
            .field("layers", &self.layers.len())
            .field("vocab", &self.vocab)
            .finish()
    }
}

impl Bert {
    /// Reads the weights of `onnx` ([`runs`] says whether it is such a file). The int8 weights
    /// stay in `onnx`'s bytes, which the encoder keeps.
    pub(crate) fn load(onnx: Bytes) -> Result<Bert> {
        let model = <OnnxModel as prost::Message>::decode(onnx.clone())
            .map_err(|e| bad(format!("reading the protobuf: {e}")))?;
        let mut t = Tensors(
            model
                .graph
                .ok_or_else(|| bad("no graph".into()))?
                .initializer
                .into_iter()
                .map(|t| (t.name.clone(), t))
                .collect(),
        );
        let table = t.shape_of(WORD_TABLE, 2)?;
        let (vocab, hidden) = (table[0], table[1]);
        let (heads, head_dim) = {
            let shape = t.take("const_shape_heads", INT64, &[4])?.raw_data;
            let at =
                |i: usize| i64::from_le_bytes(shape[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
            (at(2), at(3))
        };
        if heads <= 0 || head_dim <= 0 || (heads * head_dim) as usize != hidden {
            return Err(bad(format!(
                "{heads} heads of {head_dim} for a hidden size of {hidden}"
            )));
        }
        let positions = t.shape_of("embeddings.position_embeddings.weight", 2)?;
        let types = t.shape_of("embeddings.token_type_embeddings.weight", 2)?;
        let mut layers = Vec::new();
        while t.0.contains_key(&format!(
            "encoder.layer.{}.attention.self.query.weight_quant",
            layers.len()
        )) {
            let p = format!("encoder.layer.{}", layers.len());
            let dense = |t: &mut Tensors, name: &str| Dense::load(t, &format!("{p}.{name}"));
            let layer = Layer {
                query: dense(&mut t, "attention.self.query")?,
                key: dense(&mut t, "attention.self.key")?,
                value: dense(&mut t, "attention.self.value")?,
                attention_out: dense(&mut t, "attention.output.dense")?,
                attention_norm: Norm::load(
                    &mut t,
                    &format!("{p}.attention.output.LayerNorm"),
                    hidden,
                )?,
                intermediate: dense(&mut t, "intermediate.dense")?,
                out: dense(&mut t, "output.dense")?,
                out_norm: Norm::load(&mut t, &format!("{p}.output.LayerNorm"), hidden)?,
            };
            let square = [&layer.query, &layer.key, &layer.value, &layer.attention_out];
            if square
                .iter()
                .any(|d| (d.inputs, d.outputs) != (hidden, hidden))
                || layer.intermediate.inputs != hidden
                || (layer.out.inputs, layer.out.outputs) != (layer.intermediate.outputs, hidden)
            {
                return Err(bad(format!(
                    "{p}: dense layers of other widths than {hidden}"
                )));
            }
            layers.push(layer);
        }
        if layers.is_empty() {
            return Err(bad("no encoder layers".into()));
        }
        let bert = Bert {
            hidden,
            heads: heads as usize,
            eps: t.scalar("const_ln_eps")?,
            attention_div: t.scalar("const_att_div")?,
            mask_neg: t.scalar("const_mask_neg")?,
            sqrt2: t.scalar("const_sqrt2")?,
            vocab,
            words: t.take(WORD_TABLE, INT8, &[vocab, hidden])?.raw_data,
            word_scale: t.floats("embeddings.word_embeddings.weight_scale", &[vocab, 1])?,
            positions: t.floats("embeddings.position_embeddings.weight", &positions)?,
            types: t.floats("embeddings.token_type_embeddings.weight", &types)?,
            embedding_norm: Norm::load(&mut t, "embeddings.LayerNorm", hidden)?,
            layers,
        };
        if positions[1] != hidden || types[1] != hidden {
            return Err(bad("position or type tables of another width".into()));
        }
        drop(t);
        bert.into_strips(onnx)
    }

    /// Rearranges every dense weight, where it lies in the file's bytes, into the strips
    /// [`matmul_i8`] reads front to back: read in the graph's layout, each 8-byte piece of a
    /// row was a cache line of its own (34 % of the embedding time natively went to those
    /// loads). No second copy of the weights: only one matrix's scratch.
    fn into_strips(mut self, onnx: Bytes) -> Result<Bert> {
        let base = onnx.as_ptr() as usize;
        let at = |b: &Bytes| b.as_ptr() as usize - base..b.as_ptr() as usize - base + b.len();
        let words = at(&self.words);
        let mut dense: Vec<&mut Dense> = Vec::new();
        for l in &mut self.layers {
            dense.extend([
                &mut l.query,
                &mut l.key,
                &mut l.value,
                &mut l.attention_out,
                &mut l.intermediate,
                &mut l.out,
            ]);
        }
        let ranges: Vec<_> = dense.iter().map(|d| at(&d.q)).collect();
        // The encoder's are the only references left to the file's bytes.
        self.words = Bytes::new();
        dense.iter_mut().for_each(|d| d.q = Bytes::new());
        let mut bytes = onnx
            .try_into_mut()
            .map_err(|_| bad("the model's bytes are shared".into()))?;
        let mut scratch = Vec::new();
        for (d, range) in dense.iter().zip(&ranges) {
            let (inputs, outputs) = (d.inputs, d.outputs);
            scratch.clear();
            scratch.extend_from_slice(&bytes[range.clone()]);
            let q = &mut bytes[range.clone()];
            for o0 in (0..outputs).step_by(OUTPUTS) {
                let width = OUTPUTS.min(outputs - o0);
                let strip = &mut q[inputs * o0..inputs * (o0 + width)];
                for (i, row) in strip.chunks_exact_mut(width).enumerate() {
                    row.copy_from_slice(&scratch[i * outputs + o0..][..width]);
                }
            }
        }
        let bytes = bytes.freeze();
        for (d, range) in dense.iter_mut().zip(ranges) {
            d.q = bytes.slice(range);
        }
        self.words = bytes.slice(words);
        Ok(self)
    }

    /// The last hidden state, [tokens][hidden], of one sequence.
    pub(crate) fn run(&self, ids: &[u32], types: &[u32], mask: &[u32]) -> Result<Vec<f32>> {
        let (n, hidden) = (ids.len(), self.hidden);
        let max_positions = self.positions.len() / hidden;
        if n == 0 || n > max_positions || types.len() != n || mask.len() != n {
            return Err(Error::Model(format!(
                "{n} tokens: the model reads 1 to {max_positions}, with a type and a mask each"
            )));
        }
        let mut h = vec![0f32; n * hidden];
        for (t, row) in h.chunks_exact_mut(hidden).enumerate() {
            let (id, ty) = (ids[t] as usize, types[t] as usize);
            if id >= self.vocab || ty >= self.types.len() / hidden {
                return Err(Error::Model(format!(
                    "token {id} of type {ty} is not in the model"
                )));
            }
            let q = &self.words[id * hidden..(id + 1) * hidden];
            let (scale, ty) = (
                self.word_scale[id],
                &self.types[ty * hidden..(ty + 1) * hidden],
            );
            let pos = &self.positions[t * hidden..(t + 1) * hidden];
            for (((v, &b), y), p) in row.iter_mut().zip(q).zip(ty).zip(pos) {
                *v = (b as i8 as f32 * scale + y) + p;
            }
        }
        self.embedding_norm.apply(&mut h, self.eps);
        let mask_bias: Vec<f32> = mask
            .iter()
            .map(|&m| (1.0 - m as f32) * self.mask_neg)
            .collect();
        let (mut q, mut k, mut v, mut tmp) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut context = vec![0f32; n * hidden];
        let mut inter = Vec::new();
        for layer in &self.layers {
            layer.query.apply(&h, &mut q);
            layer.key.apply(&h, &mut k);
            layer.value.apply(&h, &mut v);
            self.attend(&q, &k, &v, &mask_bias, &mut context);
            layer.attention_out.apply(&context, &mut tmp);
            tmp.iter_mut().zip(&h).for_each(|(a, b)| *a += b);
            layer.attention_norm.apply(&mut tmp, self.eps);
            std::mem::swap(&mut h, &mut tmp);
            layer.intermediate.apply(&h, &mut inter);
            for x in inter.iter_mut() {
                // The graph's GELU: (x · 0.5) · (erf(x / √2) + 1).
                *x = (*x * 0.5) * (erf(*x / self.sqrt2) + 1.0);
            }
            layer.out.apply(&inter, &mut tmp);
            tmp.iter_mut().zip(&h).for_each(|(a, b)| *a += b);
            layer.out_norm.apply(&mut tmp, self.eps);
            std::mem::swap(&mut h, &mut tmp);
        }
        Ok(h)
    }

    /// Multi-head attention of one sequence: `softmax(q·kᵀ / √d + mask)·v`, head by head, into
    /// `context` ([tokens][hidden], the heads side by side).
    fn attend(&self, q: &[f32], k: &[f32], v: &[f32], mask_bias: &[f32], context: &mut [f32]) {
        let (n, hidden) = (mask_bias.len(), self.hidden);
        let d = hidden / self.heads;
        let mut p = vec![0f32; n];
        for head in 0..self.heads {
            let col = head * d..(head + 1) * d;
            for t in 0..n {
                let qt = &q[t * hidden..][col.clone()];
                for (u, pu) in p.iter_mut().enumerate() {
                    let ku = &k[u * hidden..][col.clone()];
                    let dot = qt.iter().zip(ku).fold(0f32, |a, (x, y)| a + x * y);
                    *pu = dot / self.attention_div + mask_bias[u];
                }
                let max = p.iter().fold(f32::NEG_INFINITY, |a, &x| a.max(x));
                p.iter_mut().for_each(|x| *x = libm::expf(*x - max));
                let total = p.iter().fold(0f32, |a, x| a + x);
                p.iter_mut().for_each(|x| *x /= total);
                let ct = &mut context[t * hidden..][col.clone()];
                ct.iter_mut().for_each(|c| *c = 0.0);
                for (u, &pu) in p.iter().enumerate() {
                    let vu = &v[u * hidden..][col.clone()];
                    ct.iter_mut().zip(vu).for_each(|(c, x)| *c += pu * x);
                }
            }
        }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::super::encoder::{load_plan, run_encoding};
    use super::*;

    /// The encoder's hidden states are tract's for the same file within rounding, for MiniLM,
    /// E5 and the query tower (`make models`), and the int8 weights are the file's own bytes.
    #[test]
    fn the_encoder_gives_tracts_hidden_states() {
        let root = super::super::models_root();
        for (model, file) in [
            ("all-MiniLM-L6-v2", "model.int8.onnx"),
            ("all-MiniLM-L6-v2", "query.int8.onnx"),
            ("multilingual-e5-small", "model.int8.onnx"),
        ] {
            let dir = root.join(model);
            let files = super::super::ModelFiles::from_dir_with(&dir, file).expect("make models");
            assert!(runs(&files.onnx), "{model}/{file}");
            let bytes = Bytes::from(files.onnx.clone());
            let span = bytes.as_ptr() as usize..bytes.as_ptr() as usize + bytes.len();
            let bert = Bert::load(bytes).unwrap();
            let q = &bert.layers[0].query.q;
            assert!(
                span.contains(&(q.as_ptr() as usize)),
                "{model}: a copy of the weights"
            );
            let plan = load_plan(&files.onnx).unwrap();
            let tokenizer = tokenizers::Tokenizer::from_bytes(&files.tokenizer).unwrap();
            for text in [
                "how big can the cache be",
                "query: show output on screen and write it to a file at the same time",
                "passage: Кэш хранит ответы 5 минут, потом запрашивает снова.",
                "x",
            ] {
                let enc = tokenizer.encode(text, true).unwrap();
                let ours = bert
                    .run(enc.get_ids(), enc.get_type_ids(), enc.get_attention_mask())
                    .unwrap();
                let theirs = run_encoding(&plan, &enc).unwrap();
                let theirs = theirs[0].to_plain_array_view::<f32>().unwrap();
                let theirs: Vec<f32> = theirs.iter().copied().collect();
                assert_eq!(ours.len(), theirs.len());
                let worst = ours
                    .iter()
                    .zip(&theirs)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0f32, f32::max);
                assert!(worst < 2e-4, "{model}/{file} {text:?}: |Δ| {worst}");
            }
        }
    }

    /// The vector kernel gives the bits of the plain sum `s + x·w` taken in input order, for
    /// every shape of tile and strip (a short last tile, a narrow last strip): so do the
    /// simd128 and scalar builds of it, which is what makes the portable wasm build's answers
    /// equal the native engine's byte for byte (tests/wasm/run.sh).
    #[test]
    fn the_kernel_sums_in_input_order() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for (rows, inputs, outputs) in [(1, 3, 5), (4, 8, 8), (7, 16, 20), (9, 384, 36)] {
            let x: Vec<f32> = (0..rows * inputs)
                .map(|_| (next() % 20_000) as f32 / 7_919.0 - 1.3)
                .collect();
            let q: Vec<u8> = (0..inputs * outputs).map(|_| next() as u8).collect();
            // The strips' layout, as Bert::into_strips writes it.
            let mut strips = Vec::new();
            for o0 in (0..outputs).step_by(OUTPUTS) {
                let width = OUTPUTS.min(outputs - o0);
                for i in 0..inputs {
                    strips.extend_from_slice(&q[i * outputs + o0..][..width]);
                }
            }
            let mut y = vec![f32::NAN; rows * outputs];
            matmul_i8(&x, &strips, inputs, outputs, &mut y);
            for t in 0..rows {
                for o in 0..outputs {
                    let mut s = 0f32;
                    for i in 0..inputs {
                        s += x[t * inputs + i] * (q[i * outputs + o] as i8 as f32);
                    }
                    assert_eq!(
                        y[t * outputs + o].to_bits(),
                        s.to_bits(),
                        "{rows}×{inputs}×{outputs}"
                    );
                }
            }
        }
    }

    /// A file that is not one: no panic, a typed error.
    #[test]
    fn other_files_are_refused() {
        assert!(!runs(b"not a model"));
        for bytes in [&b""[..], b"\x3a\x02\x2a\x00", b"garbage \xff\xff"] {
            assert!(Bert::load(Bytes::copy_from_slice(bytes)).is_err());
        }
    }
}
