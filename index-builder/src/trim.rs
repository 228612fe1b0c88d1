//! A multilingual model cut down to a collection's scripts (`index-builder trim-model`).
//!
//! Multilingual E5 reads 100 languages through XLM-R's 250,002 SentencePiece pieces, and most
//! of its bytes are their rows of the word-embedding table (250,037 × 384 int8 of its 120 MB).
//! A site in English and Russian needs the pieces of Latin and Cyrillic text only. The trimmed
//! model keeps every piece whose letters all belong to the chosen scripts (digits,
//! punctuation, symbols and marks of any script stay, as do the special tokens and the
//! lowest-scoring piece, whose score sets the unknown character's penalty), renumbers them in
//! their old order, and keeps the same rows of the embedding table; nothing else in the graph
//! changes. So a text written in those scripts comes out as the same pieces (a Unigram
//! segmentation can only use pieces whose characters occur in the text), the same rows and the
//! same vector, bit for bit; a letter of another script becomes the unknown token, as a
//! character missing from the full vocabulary does. The model's id stays, and its ONNX file
//! names the full model's files (see [`docloupe::embed::identity`]), so the bundles built with
//! the full model are searched with the trimmed one.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use docloupe::embed;
use prost::Message;
use tract_onnx::pb;

/// A writing system whose letters a trimmed vocabulary keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Script {
    Latin,
    Cyrillic,
    Greek,
}

impl Script {
    pub const ALL: [Script; 3] = [Script::Latin, Script::Cyrillic, Script::Greek];

    pub fn name(self) -> &'static str {
        match self {
            Script::Latin => "latin",
            Script::Cyrillic => "cyrillic",
            Script::Greek => "greek",
        }
    }

    pub fn from_name(name: &str) -> Option<Script> {
        Script::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether letter `c` is of this script (its Unicode blocks, the compatibility forms
    /// NFKC leaves in place included).
    fn has(self, c: char) -> bool {
        let ranges: &[(u32, u32)] = match self {
            Script::Latin => &[
                (0x41, 0x5A),
                (0x61, 0x7A),
                (0xAA, 0xAA),
                (0xBA, 0xBA),
                (0xC0, 0x2FF),
                (0x1D00, 0x1DBF),
                (0x1E00, 0x1EFF),
                (0x2071, 0x209C),
                (0x2C60, 0x2C7F),
                (0xA720, 0xA7FF),
                (0xAB30, 0xAB6F),
                (0xFB00, 0xFB06),
                (0xFF21, 0xFF3A),
                (0xFF41, 0xFF5A),
            ],
            Script::Cyrillic => &[
                (0x400, 0x52F),
                (0x1C80, 0x1C8F),
                (0x2DE0, 0x2DFF),
                (0xA640, 0xA69F),
            ],
            Script::Greek => &[(0x370, 0x3FF), (0x1F00, 0x1FFF)],
        };
        let c = c as u32;
        ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
    }
}

/// Whether a text in `scripts` may hold `piece`: every letter in it is of one of them.
pub fn keeps(piece: &str, scripts: &[Script]) -> bool {
    piece
        .chars()
        .all(|c| !c.is_alphabetic() || scripts.iter().any(|s| s.has(c)))
}

/// A trimmed model: its files, and which old piece each new id is.
pub struct Trimmed {
    /// `manifest.json`, `model.int8.onnx`, `tokenizer.json`.
    pub files: Vec<(String, Vec<u8>)>,
    /// `old_ids[new]` = the id the full vocabulary gives that piece.
    pub old_ids: Vec<u32>,
    /// The full vocabulary's size.
    pub of: usize,
}

/// Trims the model in `dir` (as `make models` writes it) to `scripts`. The files must be the
/// ones its manifest names by sha256, and the model one not trimmed before.
pub fn trim_model(dir: &Path, scripts: &[Script]) -> Result<Trimmed> {
    if scripts.is_empty() {
        bail!("name at least one script to keep");
    }
    let read = |name: &str| {
        std::fs::read(dir.join(name))
            .with_context(|| format!("cannot read {}", dir.join(name).display()))
    };
    let manifest_bytes = read("manifest.json")?;
    let mut manifest: serde_json::Value = serde_json::from_slice(&manifest_bytes)
        .with_context(|| format!("bad manifest.json in {}", dir.display()))?;
    if manifest.get("vocabulary").is_some() {
        bail!(
            "{} is already trimmed (its manifest has a `vocabulary`): trim the full model",
            dir.display()
        );
    }
    let tokenizer_bytes = read("tokenizer.json")?;
    let onnx_bytes = read("model.int8.onnx")?;
    for (name, bytes) in [
        ("tokenizer.json", &tokenizer_bytes),
        ("model.int8.onnx", &onnx_bytes),
    ] {
        let want = manifest["files"][name].as_str().unwrap_or_default();
        if embed::sha256_hex(bytes) != want {
            bail!(
                "{} is not the file its manifest names (sha256 {want:?}): rebuild the model with `make models`",
                dir.join(name).display()
            );
        }
    }

    let mut tokenizer: serde_json::Value =
        serde_json::from_slice(&tokenizer_bytes).context("bad tokenizer.json")?;
    let model = &tokenizer["model"];
    if model["type"] != "Unigram" {
        bail!(
            "only a Unigram (SentencePiece) vocabulary can be trimmed, this tokenizer's model is {}",
            model["type"]
        );
    }
    let vocab = model["vocab"]
        .as_array()
        .context("tokenizer.json: the model has no vocab")?;
    let score = |p: &serde_json::Value| p[1].as_f64().unwrap_or(f64::INFINITY);
    let mut kept: Vec<bool> = vocab
        .iter()
        .map(|p| p[0].as_str().is_some_and(|s| keeps(s, scripts)))
        .collect();
    // The special tokens, the unknown token, and the lowest score (the unknown character's
    // penalty is counted from it).
    let specials = tokenizer["added_tokens"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["id"].as_u64());
    for id in specials.chain(model["unk_id"].as_u64()) {
        if let Some(k) = kept.get_mut(id as usize) {
            *k = true;
        }
    }
    if let Some(lowest) =
        (0..vocab.len()).min_by(|&a, &b| score(&vocab[a]).total_cmp(&score(&vocab[b])))
    {
        kept[lowest] = true;
    }
    let old_ids: Vec<u32> = (0..vocab.len() as u32)
        .filter(|&i| kept[i as usize])
        .collect();
    let new_id: BTreeMap<u64, u64> = old_ids
        .iter()
        .enumerate()
        .map(|(new, &old)| (u64::from(old), new as u64))
        .collect();
    let remap = |v: &mut serde_json::Value| -> Result<()> {
        let old = v
            .as_u64()
            .context("tokenizer.json: an id that is not a number")?;
        *v = new_id
            .get(&old)
            .with_context(|| format!("tokenizer.json: id {old} is not in the vocabulary"))?
            .to_owned()
            .into();
        Ok(())
    };
    let trimmed_vocab: Vec<serde_json::Value> =
        old_ids.iter().map(|&i| vocab[i as usize].clone()).collect();
    let of = vocab.len();
    tokenizer["model"]["vocab"] = trimmed_vocab.into();
    if !tokenizer["model"]["unk_id"].is_null() {
        remap(&mut tokenizer["model"]["unk_id"])?;
    }
    for t in tokenizer["added_tokens"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        remap(&mut t["id"])?;
    }
    remap_post_processor(&mut tokenizer["post_processor"], &remap)?;

    let tokenizer = serde_json::to_vec(&tokenizer)?;
    let provenance = [
        (embed::TRIMMED_FROM_MODEL, embed::sha256_hex(&onnx_bytes)),
        (
            embed::TRIMMED_FROM_TOKENIZER,
            embed::sha256_hex(&tokenizer_bytes),
        ),
        (embed::TRIMMED_TOKENIZER, embed::sha256_hex(&tokenizer)),
    ];
    let onnx = trim_embeddings(&onnx_bytes, &old_ids, &provenance)?;
    let mut names: Vec<&str> = scripts.iter().map(|s| s.name()).collect();
    names.sort_unstable();
    names.dedup();
    manifest["vocabulary"] = serde_json::json!({
        "scripts": names,
        "pieces": old_ids.len(),
        "of": of,
        "trimmedFrom": manifest["files"].clone(),
    });
    manifest["files"] = serde_json::json!({
        "model.int8.onnx": embed::sha256_hex(&onnx),
        "tokenizer.json": embed::sha256_hex(&tokenizer),
    });
    let mut manifest = serde_json::to_vec_pretty(&manifest)?;
    manifest.push(b'\n');
    Ok(Trimmed {
        files: vec![
            ("manifest.json".into(), manifest),
            ("model.int8.onnx".into(), onnx),
            ("tokenizer.json".into(), tokenizer),
        ],
        old_ids,
        of,
    })
}

/// The special tokens' ids in the post-processor (`TemplateProcessing`'s `special_tokens`,
/// `RobertaProcessing`'s and `BertProcessing`'s `cls` and `sep`, each step of a `Sequence`).
fn remap_post_processor(
    p: &mut serde_json::Value,
    remap: &dyn Fn(&mut serde_json::Value) -> Result<()>,
) -> Result<()> {
    match p["type"].as_str() {
        None => {}
        Some("TemplateProcessing") => {
            for token in p["special_tokens"].as_object_mut().into_iter().flatten() {
                for id in token.1["ids"].as_array_mut().into_iter().flatten() {
                    remap(id)?;
                }
            }
        }
        Some("RobertaProcessing" | "BertProcessing") => {
            for key in ["cls", "sep"] {
                remap(&mut p[key][1])?;
            }
        }
        Some("Sequence") => {
            for step in p["processors"].as_array_mut().into_iter().flatten() {
                remap_post_processor(step, remap)?;
            }
        }
        Some("ByteLevel") => {}
        Some(other) => {
            bail!("tokenizer.json: post-processor {other} is not one a trimmed model supports")
        }
    }
    Ok(())
}

/// The graph with the rows `old_ids` (in that order) of every table gathered by `input_ids`
/// (the word embeddings, and with int8 weights their per-row scales), and `metadata` added
/// (the provenance [`embed::identity`] reads).
fn trim_embeddings(onnx: &[u8], old_ids: &[u32], metadata: &[(&str, String)]) -> Result<Vec<u8>> {
    let mut model = pb::ModelProto::decode(onnx).context("model.int8.onnx is not an ONNX model")?;
    let graph = model
        .graph
        .as_mut()
        .context("model.int8.onnx has no graph")?;
    let tables: Vec<String> = graph
        .node
        .iter()
        .filter(|n| n.op_type == "Gather" && n.input.get(1).is_some_and(|i| i == "input_ids"))
        .filter_map(|n| n.input.first().cloned())
        .collect();
    if tables.is_empty() {
        bail!("model.int8.onnx gathers no table by input_ids: not a model this command knows");
    }
    for node in &graph.node {
        let gathers_ids =
            node.op_type == "Gather" && node.input.get(1).is_some_and(|i| i == "input_ids");
        if !gathers_ids && node.input.iter().any(|i| tables.contains(i)) {
            bail!(
                "model.int8.onnx: {} also reads a table the vocabulary indexes ({}): not a model this command can trim",
                node.op_type,
                node.name
            );
        }
    }
    let need = old_ids.last().map_or(0, |&i| i as usize + 1);
    for name in &tables {
        let t = graph
            .initializer
            .iter_mut()
            .find(|t| &t.name == name)
            .with_context(|| format!("model.int8.onnx: table {name} is not a stored tensor"))?;
        let rows = *t.dims.first().context("a table without dimensions")? as usize;
        if rows < need {
            bail!("model.int8.onnx: table {name} has {rows} rows, the vocabulary {need}");
        }
        if t.raw_data.is_empty() && !t.float_data.is_empty() {
            t.raw_data = t.float_data.iter().flat_map(|x| x.to_le_bytes()).collect();
            t.float_data.clear();
        }
        if t.raw_data.is_empty() || t.raw_data.len() % rows != 0 {
            bail!("model.int8.onnx: table {name} is not stored as raw rows");
        }
        let row = t.raw_data.len() / rows;
        let mut data = Vec::with_capacity(old_ids.len() * row);
        for &i in old_ids {
            let at = i as usize * row;
            data.extend_from_slice(&t.raw_data[at..at + row]);
        }
        t.raw_data = data;
        t.dims[0] = old_ids.len() as i64;
    }
    for (key, value) in metadata {
        model.metadata_props.push(pb::StringStringEntryProto {
            key: (*key).into(),
            value: value.clone(),
        });
    }
    Ok(model.encode_to_vec())
}
