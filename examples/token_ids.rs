//! Prints, for each line of stdin, the token ids the embedding model reads for it, as a JSON
//! array per line: `make bench-web` feeds them to onnxruntime-web so both runtimes embed the
//! same inputs. `cargo run --release --example token_ids [MODEL_DIR] < queries.txt`
use std::io::{BufRead, Write};

fn main() {
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(docloupe::embed::default_model_dir);
    let files = docloupe::ModelFiles::from_dir(&dir).unwrap_or_else(|e| {
        eprintln!("token_ids: {e} (run `make models`)");
        std::process::exit(1)
    });
    let embedder = docloupe::Embedder::new(&files).unwrap_or_else(|e| {
        eprintln!("token_ids: {e}");
        std::process::exit(1)
    });
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("stdin is text");
        let ids = embedder.token_ids(&line).unwrap_or_else(|e| {
            eprintln!("token_ids: {e}");
            std::process::exit(1)
        });
        writeln!(out, "{}", serde_json::to_string(&ids).unwrap()).unwrap();
    }
}
