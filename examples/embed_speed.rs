//! Times single-text embedding at a few lengths: `cargo run --release --example embed_speed`.
use std::time::Instant;

fn main() {
    let name = std::env::args().nth(1).unwrap_or("model.int8.onnx".into());
    let files = docloupe::ModelFiles::from_dir_with(&docloupe::embed::default_model_dir(), &name)
        .expect("make models");
    let e = docloupe::Embedder::new(&files).unwrap();
    for words in [8usize, 48, 100, 200] {
        let text = "the quick brown fox jumps over a lazy dog ".repeat(words / 8 + 1);
        let text: String = text.split(' ').take(words).collect::<Vec<_>>().join(" ");
        let n = e.count_tokens(&text).unwrap();
        e.embed(&text).unwrap();
        let runs = 20;
        let t = Instant::now();
        for _ in 0..runs {
            e.embed(&text).unwrap();
        }
        let ms = t.elapsed().as_secs_f64() * 1000.0 / runs as f64;
        let t = Instant::now();
        for _ in 0..runs {
            e.count_tokens(&text).unwrap();
        }
        let tok_ms = t.elapsed().as_secs_f64() * 1000.0 / runs as f64;
        println!("{n:>4} tokens: embed {ms:6.1} ms, count_tokens {tok_ms:.3} ms");
    }
}
