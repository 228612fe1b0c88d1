//! Which files of a split bundle each query reads: `split_cost DIR < queries.txt` prints one
//! JSON line per query, `{"query", "rounds": [[file, ...], ...]}`, for a fresh engine (a cold
//! visitor). For tuning shard sizes (`index-builder split --lexical-shard-bytes ...`); the
//! browser's real bytes are in `make bench-web`.

use std::io::BufRead;

use docloupe::{Engine, Error, SearchRequest};

fn main() -> anyhow::Result<()> {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("usage: split_cost DIR"));
    let core = std::fs::read(dir.join("core.bin"))?;
    for line in std::io::stdin().lock().lines() {
        let query = line?;
        let mut engine = Engine::split(&core)?;
        let req = SearchRequest::from_json(
            &serde_json::json!({"query": query, "mode": "fulltext"}).to_string(),
        )?;
        let mut rounds: Vec<Vec<String>> = Vec::new();
        loop {
            match engine.search(&req) {
                Err(Error::FilesNeeded(files)) => {
                    for f in &files {
                        engine.add_split_file(f, &std::fs::read(dir.join(f))?)?;
                    }
                    rounds.push(files);
                }
                Err(e) => return Err(e.into()),
                Ok(_) => break,
            }
        }
        println!("{}", serde_json::json!({"query": query, "rounds": rounds}));
    }
    Ok(())
}
