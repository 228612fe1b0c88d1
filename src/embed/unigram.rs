//! A Unigram (SentencePiece) tokenizer model in a compact form, for `tokenizers`.
//!
//! `tokenizers`' own `Unigram` keeps its pieces in a byte trie with a hash map in every node:
//! for multilingual E5's XLM-R vocabulary (250,002 pieces in 100 languages) that is 782,761
//! maps, ≈ 270 MiB resident (measured natively; the wasm engine holds the same structure), to
//! look up pieces that take 2.6 MB as text. [`CompactUnigram`] keeps the pieces back to back in
//! one buffer and a list of their ids in byte order (4 MiB resident); walking that sorted list
//! one byte at a time (each step narrows a range by binary search) finds every piece that
//! begins a text, shortest first, as the trie does. Everything else (normalizer, pre-tokenizer, added tokens, post-processor) is still
//! `tokenizers`', through its generic `TokenizerImpl`; only the model is replaced, and it
//! picks the same pieces (Viterbi over the same scores, the same ties, unknown characters fused
//! into one unknown token): `tests/model_quality.rs` checks the ids and offsets against the
//! stock model on English, Russian and mixed-script text.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer};
use tokenizers::decoders::DecoderWrapper;
use tokenizers::models::unigram::UnigramTrainer;
use tokenizers::normalizers::NormalizerWrapper;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::processors::PostProcessorWrapper;
use tokenizers::{Model, Token, TokenizerImpl};

/// `tokenizers`' whole pipeline with [`CompactUnigram`] as its model: what a Unigram
/// `tokenizer.json` deserializes into.
pub type CompactTokenizer = TokenizerImpl<
    CompactUnigram,
    NormalizerWrapper,
    PreTokenizerWrapper,
    PostProcessorWrapper,
    DecoderWrapper,
>;

/// SentencePiece's penalty of an unknown character below the lowest piece score.
const UNK_PENALTY: f64 = 10.0;

/// The `model` object of a Unigram `tokenizer.json`, compact. See the module docs.
#[derive(Debug, Clone)]
pub struct CompactUnigram {
    /// Every piece's bytes, in id order, back to back.
    bytes: Vec<u8>,
    /// Piece `i` is `bytes[ends[i - 1]..ends[i]]` (`ends[-1]` = 0).
    ends: Vec<u32>,
    scores: Vec<f64>,
    /// Piece ids ordered by their bytes; a piece listed twice keeps its last id only (as
    /// `tokenizers`' piece → id map, whose later insert wins).
    sorted: Vec<u32>,
    min_score: f64,
    unk_id: Option<u32>,
}

impl CompactUnigram {
    pub fn new(
        vocab: Vec<(String, f64)>,
        unk_id: Option<usize>,
    ) -> std::result::Result<Self, String> {
        if vocab.len() >= u32::MAX as usize {
            return Err("vocabulary too large".into());
        }
        if unk_id.is_some_and(|u| u >= vocab.len()) {
            return Err("unk_id outside the vocabulary".into());
        }
        let total: usize = vocab.iter().map(|(p, _)| p.len()).sum();
        if total >= u32::MAX as usize {
            return Err("vocabulary too large".into());
        }
        let mut bytes = Vec::with_capacity(total);
        let mut ends = Vec::with_capacity(vocab.len());
        let mut scores = Vec::with_capacity(vocab.len());
        let mut min_score = f64::INFINITY;
        for (piece, score) in &vocab {
            bytes.extend_from_slice(piece.as_bytes());
            ends.push(bytes.len() as u32);
            scores.push(*score);
            if *score < min_score {
                min_score = *score;
            }
        }
        drop(vocab);
        let mut model = CompactUnigram {
            bytes,
            ends,
            scores,
            sorted: Vec::new(),
            min_score,
            unk_id: unk_id.map(|u| u as u32),
        };
        let mut sorted: Vec<u32> = (0..model.ends.len() as u32).collect();
        // By bytes, and a repeated piece's last id first, which dedup keeps.
        sorted.sort_by(|&a, &b| model.piece(a).cmp(model.piece(b)).then(b.cmp(&a)));
        sorted.dedup_by(|later, first| model.piece(*later) == model.piece(*first));
        model.sorted = sorted;
        Ok(model)
    }

    fn piece(&self, id: u32) -> &[u8] {
        let i = id as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }

    fn id_of(&self, piece: &[u8]) -> Option<u32> {
        self.sorted
            .binary_search_by(|&id| self.piece(id).cmp(piece))
            .ok()
            .map(|i| self.sorted[i])
    }

    /// Calls `found(length, id)` for every piece that `text` begins with, shortest first.
    fn prefixes(&self, text: &[u8], mut found: impl FnMut(usize, u32)) {
        // Invariant: sorted[lo..hi] are the pieces that begin with text[..depth].
        let (mut lo, mut hi) = (0, self.sorted.len());
        for (depth, &byte) in text.iter().enumerate() {
            let range = &self.sorted[lo..hi];
            // Within the range, a piece of length `depth` (text[..depth] itself) sorts first,
            // then the others by their byte at `depth`.
            let below = |id: &u32| {
                let p = self.piece(*id);
                p.len() <= depth || p[depth] < byte
            };
            let upto = |id: &u32| {
                let p = self.piece(*id);
                p.len() <= depth || p[depth] <= byte
            };
            let start = lo + range.partition_point(below);
            let end = lo + range.partition_point(upto);
            if start == end {
                return;
            }
            (lo, hi) = (start, end);
            let first = self.sorted[lo];
            if self.piece(first).len() == depth + 1 {
                found(depth + 1, first);
            }
        }
    }

    /// The best segmentation of `sentence` (SentencePiece's Viterbi, as `tokenizers`' Unigram
    /// `encode_optimized`): (start, end, piece id or `None` for a run of unknown characters).
    fn segment(&self, sentence: &str) -> tokenizers::Result<Vec<(usize, usize, Option<u32>)>> {
        #[derive(Clone, Copy)]
        struct Best {
            id: Option<u32>,
            score: f64,
            start: Option<usize>,
        }
        let text = sentence.as_bytes();
        let size = text.len();
        let unk_score = self.min_score - UNK_PENALTY;
        let mut best = vec![
            Best {
                id: None,
                score: 0.0,
                start: None
            };
            size + 1
        ];
        let offer = |best: &mut [Best], start: usize, end: usize, id: Option<u32>, s: f64| {
            let node = &mut best[end];
            if node.start.is_none() || s > node.score {
                *node = Best {
                    id,
                    score: s,
                    start: Some(start),
                };
            }
        };
        let mut start = 0;
        for (at, ch) in sentence.char_indices() {
            debug_assert_eq!(at, start);
            let so_far = best[start].score;
            let char_len = ch.len_utf8();
            let mut single = false;
            self.prefixes(&text[start..], |len, id| {
                offer(
                    &mut best,
                    start,
                    start + len,
                    Some(id),
                    self.scores[id as usize] + so_far,
                );
                single |= len == char_len;
            });
            if !single {
                if self.unk_id.is_none() {
                    return Err("Unigram: a character has no piece and there is no unk_id".into());
                }
                offer(&mut best, start, start + char_len, None, unk_score + so_far);
            }
            start += char_len;
        }
        // Back from the end; consecutive unknown tokens fuse into one (an unknown character, or
        // the unknown piece itself, as `tokenizers` does).
        let unknown = |id: Option<u32>| id.is_none() || id == self.unk_id;
        let mut out: Vec<(usize, usize, Option<u32>)> = Vec::new();
        let mut end = size;
        while end > 0 {
            let node = best[end];
            // Every char boundary is reached (by a piece or an unknown character).
            let Some(start) = node.start else {
                return Err("Unigram: no path through the text".into());
            };
            match out.last_mut() {
                Some(last) if unknown(node.id) && unknown(last.2) => *last = (start, last.1, None),
                _ => out.push((start, end, if unknown(node.id) { None } else { node.id })),
            }
            end = start;
        }
        out.reverse();
        Ok(out)
    }
}

impl Model for CompactUnigram {
    type Trainer = UnigramTrainer;

    fn tokenize(&self, sentence: &str) -> tokenizers::Result<Vec<Token>> {
        let unk = || -> tokenizers::Result<u32> {
            self.unk_id
                .ok_or_else(|| "Unigram: unknown character and no unk_id".into())
        };
        self.segment(sentence)?
            .into_iter()
            .map(|(start, end, id)| {
                let text = &sentence[start..end];
                let id = match id {
                    Some(id) => id,
                    // A fused run of unknown characters is looked up as a whole, as
                    // `tokenizers` does.
                    None => match self.id_of(text.as_bytes()) {
                        Some(id) => id,
                        None => unk()?,
                    },
                };
                Ok(Token::new(id, text.to_string(), (start, end)))
            })
            .collect()
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.id_of(token.as_bytes())
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        if (id as usize) < self.ends.len() {
            String::from_utf8(self.piece(id).to_vec()).ok()
        } else {
            None
        }
    }

    fn get_vocab(&self) -> HashMap<String, u32> {
        self.sorted
            .iter()
            .filter_map(|&id| Some((self.id_to_token(id)?, id)))
            .collect()
    }

    fn get_vocab_size(&self) -> usize {
        self.ends.len()
    }

    fn save(&self, _folder: &Path, _prefix: Option<&str>) -> tokenizers::Result<Vec<PathBuf>> {
        Err("CompactUnigram is read-only".into())
    }

    fn get_trainer(&self) -> UnigramTrainer {
        UnigramTrainer::default()
    }
}

impl<'de> Deserialize<'de> for CompactUnigram {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Json {
            #[serde(rename = "type")]
            kind: String,
            unk_id: Option<usize>,
            vocab: Vec<(String, f64)>,
            #[serde(default)]
            byte_fallback: bool,
        }
        let json = Json::deserialize(d)?;
        if json.kind != "Unigram" {
            return Err(serde::de::Error::custom(format!(
                "not a Unigram model: {}",
                json.kind
            )));
        }
        if json.byte_fallback {
            return Err(serde::de::Error::custom("Unigram with byte fallback"));
        }
        CompactUnigram::new(json.vocab, json.unk_id).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> CompactUnigram {
        let vocab = [
            ("<unk>", 0.0),
            ("▁", -2.0),
            ("a", -3.0),
            ("ab", -2.5),
            ("abc", -4.0),
            ("b", -3.0),
            ("c", -2.5),
            ("ab", -1.0), // listed twice: the later id wins
            ("▁abc", -3.5),
            ("é", -3.0),
        ];
        CompactUnigram::new(
            vocab.iter().map(|(p, s)| (p.to_string(), *s)).collect(),
            Some(0),
        )
        .unwrap()
    }

    #[test]
    fn every_piece_a_text_begins_with_is_found_shortest_first() {
        let m = model();
        let mut found = Vec::new();
        m.prefixes("abcd".as_bytes(), |len, id| found.push((len, id)));
        assert_eq!(found, vec![(1, 2), (2, 7), (3, 4)]);
        found.clear();
        m.prefixes("zz".as_bytes(), |len, id| found.push((len, id)));
        assert!(found.is_empty());
        assert_eq!(m.token_to_id("ab"), Some(7));
        assert_eq!(m.token_to_id("abcd"), None);
        assert_eq!(m.id_to_token(8).as_deref(), Some("▁abc"));
    }

    #[test]
    fn viterbi_picks_the_best_path_and_fuses_unknown_characters() {
        let m = model();
        let pieces = |s: &str| -> Vec<(String, u32)> {
            m.tokenize(s)
                .unwrap()
                .into_iter()
                .map(|t| (t.value, t.id))
                .collect()
        };
        // "ab" (−1.0) + "c" (−2.5) beats "abc" (−4.0) and "a" + "b" + "c".
        assert_eq!(pieces("abc"), vec![("ab".into(), 7), ("c".into(), 6)]);
        // "ab" (−1.0) beats "a" + "b" (−6.0).
        assert_eq!(pieces("ab"), vec![("ab".into(), 7)]);
        assert_eq!(pieces("▁abc"), vec![("▁abc".into(), 8)]);
        // Two unknown characters in a row are one unknown token, offsets intact.
        let t = m.tokenize("aжщé").unwrap();
        let got: Vec<_> = t.iter().map(|t| (t.id, t.offsets)).collect();
        assert_eq!(got, vec![(2, (0, 1)), (0, (1, 5)), (9, (5, 7))]);
        assert!(m.tokenize("").unwrap().is_empty());
    }
}
