//! How well the compact first pass ([`docloupe::index::vector::Coded`]) finds the exact
//! nearest neighbours, and what each way of finding them costs:
//!
//! ```text
//! cargo run --release --example first_pass -- BUNDLE QUERIES.jsonl [IDS.tsv] [K]
//! ```
//!
//! QUERIES.jsonl holds `{"_id", "text"}` lines (BEIR's layout); IDS.tsv, when given, keeps
//! only the queries whose id is in its first column (a split's qrels). The bundle's model
//! embeds each query. For every query the exact int8 scan's top K (default 100) is the truth;
//! the report gives, per shortlist size R, the recall@K and recall@10 of "the first pass's
//! best R, rescored exactly", the first pass alone (R = K, no rescoring), the engine's own
//! `shortlist(K)`, and an HNSW graph over the same vectors (the bundle's, or one built here
//! on one thread as formats 1–3 did), with median and p95 milliseconds per query.
//!
//! `REPLICATE=N` measures at N times the bundle's size: copy `i > 0` of each vector has
//! deterministic noise added (σ = 0.3 / √dims per dimension, a cosine of ≈ 0.95 to its source)
//! and is renormalized, so the copies crowd the real neighbours as near-duplicate pages do.
//! `HNSW=0` skips the graph (its one-thread build takes minutes at 100k vectors).
use std::collections::HashSet;
use std::time::Instant;

use docloupe::index::vector::{shortlist, Coded, QVec, VectorIndex, Vectors};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [bundle_path, queries_path, rest @ ..] = &args[..] else {
        eprintln!("usage: first_pass BUNDLE QUERIES.jsonl [IDS.tsv] [K]");
        std::process::exit(2);
    };
    let ids: Option<HashSet<String>> = rest.first().map(|p| {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .skip(1)
            .filter_map(|l| l.split('\t').next().map(str::to_string))
            .collect()
    });
    let k: usize = rest.get(1).map_or(100, |s| s.parse().unwrap());

    let bytes = std::fs::read(bundle_path).unwrap();
    let bundle = docloupe::bundle::decode(&bytes).unwrap();
    let info = bundle
        .header
        .embedding
        .clone()
        .expect("a bundle with vectors");
    let files = docloupe::ModelFiles::from_dir(&docloupe::embed::model_dir_for(&info)).unwrap();
    let embedder = docloupe::Embedder::new(&files).unwrap();
    let index = bundle.vectors.expect("vectors");
    let mut vectors: Vec<QVec> = index.vectors().collect();
    vectors.sort_by_key(|v| v.chunk);
    let replicate: u32 = std::env::var("REPLICATE").map_or(1, |s| s.parse().unwrap());
    if replicate > 1 {
        let base = vectors.clone();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut noise = || {
            // Sum of four uniforms: roughly normal, unit variance.
            (0..4)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                })
                .sum::<f32>()
                * 3f32.sqrt()
        };
        for copy in 1..replicate {
            for v in &base {
                let sigma = 0.3 / (v.data.len() as f32).sqrt();
                let mut f: Vec<f32> = v
                    .data
                    .iter()
                    .map(|&x| x as f32 * v.scale + sigma * noise())
                    .collect();
                docloupe::embed::normalize(&mut f);
                vectors.push(QVec::quantize(copy * base.len() as u32 + v.chunk, &f));
            }
        }
    }
    let n = vectors.len();

    let queries: Vec<String> = std::fs::read_to_string(queries_path)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            let id = v["_id"].as_str()?.to_string();
            if ids.as_ref().is_some_and(|ids| !ids.contains(&id)) {
                return None;
            }
            Some(v["text"].as_str()?.to_string())
        })
        .collect();
    eprintln!("{n} vectors, {} queries, k = {k}", queries.len());
    let qv: Vec<Vec<f32>> = queries
        .iter()
        .map(|q| embedder.embed_query(q).unwrap())
        .collect();

    let t = Instant::now();
    let coded = Coded::build(Vectors::from_qvecs(vectors.clone()).expect("one length"));
    let code_ms = t.elapsed().as_secs_f64() * 1e3;
    let with_hnsw = std::env::var("HNSW").map_or(true, |v| v != "0");
    let hnsw = match index {
        // The bundle's own graph, unless the copies made it incomplete.
        VectorIndex::Hnsw(_) if replicate == 1 => Some(index),
        _ if !with_hnsw => None,
        _ => {
            let t = Instant::now();
            let h = VectorIndex::build_hnsw(vectors.clone()).unwrap();
            println!(
                "HNSW built in {:.1} s (one thread)",
                t.elapsed().as_secs_f64()
            );
            Some(h)
        }
    };
    let flat = VectorIndex::Flat(Vectors::from_qvecs(vectors).expect("one length"));
    println!(
        "{n} vectors: codes {} bytes ({:.0} ms to compute), int8 vectors {} bytes",
        n * docloupe::index::vector::code_bytes(coded.low.len()),
        code_ms,
        n * (coded.low.len() + 8)
    );

    let truth: Vec<Vec<u32>> = qv
        .iter()
        .map(|q| flat.nearest(q, k).into_iter().map(|(c, _)| c).collect())
        .collect();
    let recall = |found: &[u32], truth: &[u32], at: usize| {
        let t: HashSet<u32> = truth.iter().take(at).copied().collect();
        found.iter().take(at).filter(|c| t.contains(c)).count() as f64 / t.len().max(1) as f64
    };
    let report = |name: &str, run: &dyn Fn(&[f32]) -> Vec<u32>| {
        let mut ms = Vec::new();
        let (mut r_k, mut r_10) = (0.0, 0.0);
        for (q, truth) in qv.iter().zip(&truth) {
            let t = Instant::now();
            let found = run(q);
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            r_k += recall(&found, truth, k);
            r_10 += recall(&found, truth, 10);
        }
        ms.sort_by(f64::total_cmp);
        let nq = qv.len().max(1) as f64;
        println!(
            "{name:<34} recall@{k} {:.4}  recall@10 {:.4}  {:.2} ms median, {:.2} ms p95",
            r_k / nq,
            r_10 / nq,
            ms[ms.len() / 2],
            ms[(ms.len() * 95 / 100).min(ms.len() - 1)]
        );
    };
    let chunks = |hits: Vec<(u32, f32)>| hits.into_iter().map(|(c, _)| c).collect::<Vec<_>>();
    report("exact int8 scan", &|q| chunks(flat.nearest(q, k)));
    report("first pass alone (no rescoring)", &|q| {
        coded.first_pass_best(q, k)
    });
    for r in [k, 2 * k, 4 * k, 8 * k, 16 * k] {
        report(&format!("first pass best {r}, rescored"), &|q| {
            let short = coded.first_pass_best(q, r);
            let mut hits: Vec<(u32, f32)> = flat
                .similarity(q, &short)
                .into_iter()
                .zip(&short)
                .map(|(s, &c)| (c, s.unwrap()))
                .collect();
            hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            hits.truncate(k);
            chunks(hits)
        });
    }
    report(
        &format!("engine: shortlist({k}) = {}", shortlist(k)),
        &|q| chunks(coded.nearest_where(q, k, None)),
    );
    if let Some(hnsw) = &hnsw {
        report("HNSW (ef_search 128)", &|q| chunks(hnsw.nearest(q, k)));
    }
}
