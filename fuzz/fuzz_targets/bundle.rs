//! Bundle bytes → decode + validate → fulltext, semantic and hybrid searches (a fixed query
//! vector stands in for the model) as readers in several groups → the split layout, opened
//! shard by shard. Nothing may
//! panic, hang or allocate without bound, whatever the bytes.
#![no_main]

use docloupe::search::Mode;
use docloupe::{Access, Engine, SearchRequest};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(engine) = Engine::lexical(data) else {
        return;
    };
    let dims = engine
        .header()
        .embedding
        .as_ref()
        .map_or(0, |m| m.dims.min(4096) as usize);
    let vector: Vec<f32> = (0..dims).map(|i| ((i % 7) as f32 - 3.0) / 8.0).collect();
    // Each reader: a bundle's access section decides what each one sees.
    let readers = [
        Access::Public,
        Access::groups(["ops"]),
        Access::groups(["ru-team", "sre"]),
        Access::Everything,
    ];
    for (i, (query, mode)) in [
        ("cache size", Mode::Fulltext),
        ("configure the cache", Mode::Semantic),
        ("how do I purge an entry", Mode::Hybrid),
        ("сервер", Mode::Fulltext),
        ("cahce sezi", Mode::Fulltext),
    ]
    .into_iter()
    .enumerate()
    {
        let req = SearchRequest {
            access: readers[i % readers.len()].clone(),
            ..SearchRequest::new(query).mode(mode).limit(10)
        };
        let _ = match mode {
            Mode::Fulltext => engine.search(&req),
            _ => engine.search_with_query_vector(&req, vector.clone()),
        };
    }
    if let Some(bundle) = engine.bundle() {
        if let Ok(files) = docloupe::bundle::split::split(bundle, data) {
            let mut split = None;
            for (name, bytes) in &files {
                if name == "core.bin" {
                    split = Engine::split(bytes).ok();
                }
            }
            if let Some(mut split) = split {
                for (name, bytes) in &files {
                    let _ = split.add_split_file(name, bytes);
                }
                let _ = split.search(&SearchRequest::new("cache").mode(Mode::Fulltext));
                let hybrid = SearchRequest::new("cache").mode(Mode::Hybrid);
                let _ = split.search_with_query_vector(&hybrid, vector.clone());
            }
        }
    }
});
