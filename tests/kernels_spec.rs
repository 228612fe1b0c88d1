//! Spec: a process can run the models on tract's portable kernels (whose answers equal the
//! portable wasm build's byte for byte; checked over the parity set by tests/wasm/run.sh), but
//! only if it says so before the first model loads, and it is told when it asks too late.
//!
//! One test: the choice is process-wide, and the tests of one file share a process.

use docloupe::embed::{kernels, use_kernels, Kernels};
use docloupe::search::rerank::{CrossEncoder, Rerank, RerankerFiles};

#[test]
fn portable_kernels_are_chosen_before_the_first_model_and_then_fixed() {
    assert_eq!("portable".parse::<Kernels>(), Ok(Kernels::Portable));
    assert_eq!("fast".parse::<Kernels>(), Ok(Kernels::Fast));
    let bad = "avx".parse::<Kernels>().unwrap_err();
    assert!(bad.contains("expected fast or portable"), "{bad}");

    use_kernels(Kernels::Portable).expect("x86-64 has portable kernels");
    assert_eq!(kernels(), Kernels::Portable);
    use_kernels(Kernels::Portable).expect("asking again for the same kernels is fine");

    // A model loads and ranks on them (the committed reranker needs no model download).
    let files = RerankerFiles::default_model().unwrap().unwrap();
    let model = CrossEncoder::new(&files).unwrap();
    let relevant = model
        .score(
            "how big can the cache be",
            "The cache holds at most 512 MB; older entries are evicted first.",
        )
        .unwrap();
    let unrelated = model
        .score(
            "how big can the cache be",
            "Пакеты публикуются командой npm publish.",
        )
        .unwrap();
    assert!(relevant > unrelated, "{relevant} vs {unrelated}");

    let late = use_kernels(Kernels::Fast).unwrap_err().to_string();
    assert!(late.contains("choose before loading a model"), "{late}");
    assert_eq!(kernels(), Kernels::Portable);
}
