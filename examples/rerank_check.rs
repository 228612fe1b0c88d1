//! Checks a reranker export with the engine's own runtime (tract): scores the held-out groups
//! of a mined training file with the fp32 and the int8 model and prints their score
//! correlation and each model's MRR.
//!
//! `cargo run --release --example rerank_check -- DIR GROUPS.jsonl [MAX_GROUPS]`
//! DIR holds manifest.json, tokenizer.json, model.fp32.onnx and model.int8.onnx
//! (prebuild/reranker/export.py). Held-out groups are those train.py holds out: the first 8
//! hex digits of sha256(query), as a number, divisible by 50.

use std::io::BufRead;

use docloupe::search::rerank::{CrossEncoder, Rerank, RerankerFiles};
use sha2::{Digest, Sha256};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, groups, rest @ ..] = args.as_slice() else {
        anyhow::bail!("usage: rerank_check DIR GROUPS.jsonl [MAX_GROUPS]");
    };
    let max: usize = rest.first().map_or(Ok(usize::MAX), |s| s.parse())?;
    let dir = std::path::Path::new(dir);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json"))?)?;
    let load = |onnx: &str| -> anyhow::Result<CrossEncoder> {
        Ok(CrossEncoder::new(&RerankerFiles {
            id: onnx.into(),
            onnx: std::fs::read(dir.join(onnx))?,
            tokenizer: std::fs::read(dir.join("tokenizer.json"))?,
            max_tokens: manifest["maxTokens"].as_u64().unwrap_or(128) as usize,
            blend_weight: None,
        })?)
    };
    let fp32 = load("model.fp32.onnx")?;
    let int8 = load("model.int8.onnx")?;

    let (mut a, mut b) = (Vec::new(), Vec::new());
    let (mut rr32, mut rr8, mut n) = (0.0, 0.0, 0usize);
    for line in std::io::BufReader::new(std::fs::File::open(groups)?).lines() {
        let g: serde_json::Value = serde_json::from_str(&line?)?;
        let q = g["query"].as_str().unwrap_or_default();
        let digest = Sha256::digest(q.as_bytes());
        if u32::from_be_bytes(digest[..4].try_into()?) % 50 != 0 {
            continue;
        }
        let mut passages = vec![g["positive"].as_str().unwrap_or_default()];
        passages.extend(
            g["negatives"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p.as_str()),
        );
        let s32: Vec<f32> = passages
            .iter()
            .map(|p| fp32.score(q, p))
            .collect::<Result<_, _>>()?;
        let s8: Vec<f32> = passages
            .iter()
            .map(|p| int8.score(q, p))
            .collect::<Result<_, _>>()?;
        let rank = |s: &[f32]| 1 + s[1..].iter().filter(|&&x| x >= s[0]).count();
        rr32 += 1.0 / rank(&s32) as f64;
        rr8 += 1.0 / rank(&s8) as f64;
        a.extend(s32);
        b.extend(s8);
        n += 1;
        if n >= max {
            break;
        }
    }
    println!(
        "{n} held-out groups, {} pairs: pearson {:.5}, spearman {:.5}; MRR fp32 {:.4}, int8 {:.4}",
        a.len(),
        pearson(&a, &b),
        pearson(&ranks(&a), &ranks(&b)),
        rr32 / n.max(1) as f64,
        rr8 / n.max(1) as f64
    );
    Ok(())
}

fn pearson(a: &[f32], b: &[f32]) -> f64 {
    let n = a.len() as f64;
    let ma = a.iter().map(|&x| x as f64).sum::<f64>() / n;
    let mb = b.iter().map(|&x| x as f64).sum::<f64>() / n;
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (&x, &y) in a.iter().zip(b) {
        let (dx, dy) = (x as f64 - ma, y as f64 - mb);
        sab += dx * dy;
        saa += dx * dx;
        sbb += dy * dy;
    }
    sab / (saa * sbb).sqrt()
}

fn ranks(v: &[f32]) -> Vec<f32> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&i, &j| v[i].total_cmp(&v[j]));
    let mut r = vec![0f32; v.len()];
    for (rank, i) in idx.into_iter().enumerate() {
        r[i] = rank as f32;
    }
    r
}
