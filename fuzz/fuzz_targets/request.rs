//! A request's JSON → validation → search over a small real bundle (built once from the test
//! fixtures by `make fuzz`, with some documents restricted to groups; its path in
//! DOCLOUPE_FUZZ_BUNDLE), every mode, as a reader without groups and as one in a group.
#![no_main]

use std::sync::OnceLock;

use docloupe::{Access, Engine, SearchRequest};
use libfuzzer_sys::fuzz_target;

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let path = std::env::var("DOCLOUPE_FUZZ_BUNDLE")
            .expect("DOCLOUPE_FUZZ_BUNDLE: a bundle built from tests/fixtures/docs");
        Engine::lexical(&std::fs::read(path).expect("the fuzz bundle reads")).expect("it loads")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let engine = engine();
    let _ = engine.search_json(text);
    if let Ok(req) = SearchRequest::from_json(text) {
        let dims = engine
            .header()
            .embedding
            .as_ref()
            .map_or(0, |m| m.dims as usize);
        let _ = engine.search_with_query_vector(&req, vec![0.05; dims]);
        // The bundle restricts documents: the same request as a reader who sees part of them.
        let reader = SearchRequest {
            access: Access::groups(["ops"]),
            ..req
        };
        let _ = engine.search(&reader);
        let _ = engine.search_with_query_vector(&reader, vec![0.05; dims]);
    }
});
