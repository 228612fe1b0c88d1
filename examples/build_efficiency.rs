//! How close a build's embedding comes to this machine's matrix-multiply peak:
//!
//! ```text
//! cargo run --release --example build_efficiency -- BUNDLE BUILD_SECONDS [THREADS]
//! ```
//!
//! 1. The peak: tract's optimized f32 matmul (the kernels the model runs on) at the model's
//!    own shapes, `[t × 384] · [384 × n]` for t = 64, 128, 256 and n = 384 (attention
//!    projections) and 1,536 (feed-forward), on one thread, best of several runs: GFLOP/s per
//!    core.
//! 2. The work: every chunk of BUNDLE is tokenized as the build embedded it (breadcrumb and
//!    body, the model's passage prefix, cut at its token limit), and its forward pass counted
//!    in FLOPs: per layer `2·t·(4·h² + 2·h·f)` for the projections and feed-forward plus
//!    `4·t²·h` for attention scores and mixing (h = 384, f = 1,536; 6 layers for MiniLM, 12
//!    for E5).
//! 3. The fraction: that work over BUILD_SECONDS (the build's wall time, which also parses,
//!    indexes and writes) against the peak × THREADS (default: every core).
use std::time::Instant;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::einsum::EinSum;

const HIDDEN: usize = 384;
const FFN: usize = 1536;

fn matmul_gflops(t: usize, n: usize) -> f64 {
    let mut model = TypedModel::default();
    let a = model.add_source("a", f32::fact([t, HIDDEN])).unwrap();
    let w: Tensor = tract_ndarray::Array2::<f32>::from_shape_fn((HIDDEN, n), |(i, j)| {
        ((i * 31 + j * 17) % 101) as f32 / 101.0 - 0.5
    })
    .into();
    let w = model.add_const("w", w).unwrap();
    let out = model
        .wire_node(
            "gemm",
            EinSum::new("mk,kn->mn".parse().unwrap(), f32::datum_type()),
            &[a, w],
        )
        .unwrap();
    model.select_output_outlets(&out).unwrap();
    let plan = model.into_optimized().unwrap().into_runnable().unwrap();
    let input: Tensor = tract_ndarray::Array2::<f32>::from_shape_fn((t, HIDDEN), |(i, j)| {
        ((i * 7 + j * 13) % 29) as f32 / 29.0
    })
    .into();
    let flop = 2.0 * (t * HIDDEN * n) as f64;
    let reps = (2e9 / flop).max(10.0) as usize;
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        for _ in 0..reps {
            plan.run(tvec!(input.clone().into())).unwrap();
        }
        best = best.min(start.elapsed().as_secs_f64() / reps as f64);
    }
    flop / best / 1e9
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [bundle_path, seconds, rest @ ..] = &args[..] else {
        eprintln!("usage: build_efficiency BUNDLE BUILD_SECONDS [THREADS]");
        std::process::exit(2);
    };
    let seconds: f64 = seconds.parse().unwrap();
    let threads: usize = rest.first().map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |s| s.parse().unwrap(),
    );

    println!("tract f32 matmul, one thread, [t × {HIDDEN}] · [{HIDDEN} × n]:");
    let mut peak = 0f64;
    for t in [64, 128, 256] {
        for n in [HIDDEN, FFN] {
            let g = matmul_gflops(t, n);
            peak = peak.max(g);
            println!("  t = {t:>3}, n = {n:>4}: {g:6.1} GFLOP/s");
        }
    }

    let bytes = std::fs::read(bundle_path).unwrap();
    let bundle = docloupe::bundle::decode(&bytes).unwrap();
    let info = bundle
        .header
        .embedding
        .clone()
        .expect("a bundle built with a model");
    let layers = if info.id.contains("e5") { 12 } else { 6 };
    let files = docloupe::ModelFiles::from_dir(&docloupe::embed::model_dir_for(&info)).unwrap();
    let embedder = docloupe::Embedder::new(&files).unwrap();
    let limit = info.max_tokens as usize;
    let (mut tokens, mut flop) = (0usize, 0f64);
    for (meta, text) in bundle.docs.chunks.iter().zip(bundle.text.all().unwrap()) {
        let input = docloupe::bundle::embedding_input(&meta.location.section_path, text);
        let t = embedder.count_tokens(&input).unwrap().min(limit);
        tokens += t;
        let (t, h, f) = (t as f64, HIDDEN as f64, FFN as f64);
        flop += layers as f64 * (2.0 * t * (4.0 * h * h + 2.0 * h * f) + 4.0 * t * t * h);
    }
    let chunks = bundle.docs.chunks.len();
    let achieved = flop / seconds / 1e9;
    println!(
        "{chunks} chunks, {tokens} tokens ({:.0} per chunk), {:.1} GFLOP to embed them ({} layers)",
        tokens as f64 / chunks.max(1) as f64,
        flop / 1e9,
        layers
    );
    println!(
        "build: {seconds:.1} s, {:.0} chunks/s, {:.0} tokens/s, {achieved:.1} GFLOP/s",
        chunks as f64 / seconds,
        tokens as f64 / seconds
    );
    println!(
        "peak {peak:.1} GFLOP/s per core × {threads} = {:.1}; the build reaches {:.0} % of it",
        peak * threads as f64,
        100.0 * achieved / (peak * threads as f64)
    );
}
