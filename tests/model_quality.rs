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

// ---- multilingual-e5-small, as `prebuild/e5.py` converts it ---------------------------------

/// The E5 model `make models` installs (`$DOCLOUPE_CACHE/models/multilingual-e5-small`).
fn e5() -> Embedder {
    let dir = docloupe::embed::models_root().join("multilingual-e5-small");
    assert!(
        dir.join("manifest.json").is_file(),
        "multilingual E5 missing at {}: run `make models`",
        dir.display()
    );
    Embedder::new(&ModelFiles::from_dir(&dir).expect("E5 loads")).expect("E5 runs")
}

/// `tests/fixtures/e5-reference.json`: an independent float64 numpy forward pass over the
/// model's dequantized weights (`python3 -m prebuild.e5 --check --reference`), for ten EN/RU sentences
/// with E5's `query: ` / `passage: ` prefixes, and the retrieval pairs among them.
fn e5_reference() -> serde_json::Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/e5-reference.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn e5_as_the_engine_runs_it_matches_the_float64_reference_in_english_and_russian() {
    let e = e5();
    let reference = e5_reference();
    assert_eq!(
        reference["modelSha256"].as_str(),
        Some(e.info().sha256.as_str()),
        "the reference was written for another conversion: rerun python3 -m prebuild.e5 --check --reference FILE"
    );
    let min = reference["minCosine"].as_f64().unwrap() as f32;
    let sentences = reference["sentences"].as_array().unwrap();
    let mut ours = Vec::new();
    for s in sentences {
        let text = s["text"].as_str().unwrap();
        // The engine adds the prefix itself: a query as a query, a passage as a passage.
        let v = match (text.strip_prefix("query: "), text.strip_prefix("passage: ")) {
            (Some(q), _) => e.embed_query(q).unwrap(),
            (None, Some(p)) => e.embed_passage(p).unwrap(),
            _ => panic!("{text:?} has no E5 prefix"),
        };
        let r: Vec<f32> = s["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        let c = cosine(&v, &r);
        assert!(c >= min, "{text:?}: cosine {c} with the reference");
        ours.push(v);
    }
    // Related above unrelated in each pair; a Russian query's English passage clearly so.
    let cross = reference["crossLingualPair"].as_u64().unwrap() as usize;
    let margin = reference["crossLingualMargin"].as_f64().unwrap() as f32;
    for (k, pair) in reference["pairs"].as_array().unwrap().iter().enumerate() {
        let [q, good, bad] = [0, 1, 2].map(|i| pair[i].as_u64().unwrap() as usize);
        let (related, unrelated) = (cosine(&ours[q], &ours[good]), cosine(&ours[q], &ours[bad]));
        let need = if k == cross { margin } else { 0.0 };
        assert!(
            related - unrelated > need,
            "pair {k}: related {related}, unrelated {unrelated}, needs a margin over {need}"
        );
    }
}

/// The E5 embedder tokenizes with `CompactUnigram` in place of `tokenizers`' own Unigram model
/// (the same pipeline around it): every text must come out as the same tokens, ids and
/// offsets as through the stock tokenizer.json.
#[test]
fn e5_compact_tokenizer_gives_the_stock_tokenizers_tokens() {
    use docloupe::embed::unigram::CompactTokenizer;
    use tokenizers::Tokenizer;

    let dir = docloupe::embed::models_root().join("multilingual-e5-small");
    let json = std::fs::read(dir.join("tokenizer.json")).expect("run `make models`");
    let stock = Tokenizer::from_bytes(&json).unwrap();
    let compact: CompactTokenizer = serde_json::from_slice(&json).unwrap();
    assert_eq!(compact.get_vocab_size(false), stock.get_vocab_size(false));

    // The project's own texts in English and Russian, and the awkward cases.
    let mut texts: Vec<String> = vec![
        String::new(),
        " ".into(),
        "   leading and trailing   ".into(),
        "<unk> <s> </s> <pad> <mask> literal specials".into(),
        "emoji 🦀🚀 and CJK 東京都 한국어 and Thai ภาษาไทย".into(),
        "private use \u{E000}\u{E001} runs of unknown \u{10FFFD}\u{10FFFD}x".into(),
        "combining e\u{301} and ﬁ ligature ＦＵＬＬ width №5 ½".into(),
        "std::vector<int> --save-dev LNK2019 Get-ChildItem $env:PATH".into(),
        "Суперкалифрагилистикэкспиалидоцийный антиконституционность".into(),
        "a".repeat(3000),
        "ж".repeat(700),
        "tab\tnew\nline\r\nmixed\u{a0}spaces".into(),
    ];
    for line in std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/questions/docs-questions.jsonl"
    ))
    .unwrap()
    .lines()
    {
        let q: serde_json::Value = serde_json::from_str(line).unwrap();
        texts.push(q["question"].as_str().unwrap().to_string());
    }
    let mut stack = vec![
        std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")),
        std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/ARCHITECTURE.md")),
        std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/docs")),
        std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/docs")),
        std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/hostile"
        )),
    ];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(std::fs::read_dir(path).unwrap().map(|e| e.unwrap().path()));
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            texts.extend(text.split("\n\n").map(str::to_string));
            texts.extend(text.lines().map(str::to_string));
        }
    }
    assert!(texts.len() > 1000, "{} texts", texts.len());
    for text in &texts {
        let a = stock.encode_fast(text.as_str(), true).unwrap();
        let b = compact.encode_fast(text.as_str(), true).unwrap();
        assert_eq!(a.get_ids(), b.get_ids(), "{text:?}");
        assert_eq!(a.get_tokens(), b.get_tokens(), "{text:?}");
        assert_eq!(a.get_offsets(), b.get_offsets(), "{text:?}");
    }
}
