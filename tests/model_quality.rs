//! Spec: the shipped int8 model matches the fp32 model it was quantized from, and tells
//! related text from unrelated text.

mod common;

use docloupe::{Embedder, ModelFiles};

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn int8_model_agrees_with_fp32_on_english_and_russian() {
    let int8 = common::embedder();
    let fp32 =
        Embedder::new(&ModelFiles::from_dir_with(&common::model_dir(), "model.fp32.onnx").unwrap())
            .unwrap();
    let sentences = [
        "How do I configure the cache?",
        "The cache size can be set with the cache.max_bytes option in the configuration file.",
        "Install the package with npm and run the build script.",
        "Документация по установке пакета",
        "Как настроить размер кэша в файле конфигурации?",
    ];
    for s in sentences {
        let c = cosine(&int8.embed(s).unwrap(), &fp32.embed(s).unwrap());
        assert!(c >= 0.999, "{s:?}: cosine {c}");
    }
}

#[test]
fn a_related_pair_scores_clearly_above_an_unrelated_one() {
    let e = common::embedder();
    let q = e.embed("How do I configure the cache size?").unwrap();
    let related = cosine(
        &q,
        &e.embed(
            "The cache size can be set with the cache.max_bytes option in the configuration file.",
        )
        .unwrap(),
    );
    let unrelated = cosine(
        &q,
        &e.embed("Bananas are a good source of potassium.").unwrap(),
    );
    assert!(related > 0.5, "related {related}");
    assert!(unrelated < 0.15, "unrelated {unrelated}");
}

#[test]
fn a_batch_gives_exactly_the_single_vectors_in_order() {
    let e = common::embedder();
    let texts = [
        "short",
        "a somewhat longer sentence about installing packages on Linux",
    ];
    let batch = e.embed_batch(&texts).unwrap();
    assert_eq!(batch.len(), texts.len());
    for (t, v) in texts.iter().zip(&batch) {
        assert_eq!(v, &e.embed(t).unwrap(), "{t}");
        assert!((cosine(v, v) - 1.0).abs() < 1e-5, "unit length");
    }
    assert_eq!(e.dims(), 384);
}

#[test]
fn one_text_always_gets_the_same_vector() {
    // The builder embeds chunk by chunk, relying on this: identical chunks get identical
    // vectors, whichever thread or order they come in.
    let e = common::embedder();
    let a = e.embed("install the package").unwrap();
    e.embed("something else entirely, and longer than the first")
        .unwrap();
    assert_eq!(a, e.embed("install the package").unwrap());
}
