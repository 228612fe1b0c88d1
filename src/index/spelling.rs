//! Spelling data that the index files and the query side reads: the keys a word's
//! corrections are filed under (a split bundle's vocabulary shards) and the rules for a stem's
//! surface forms (the words that spell a suggestion). Both sides use the same functions, so a
//! split bundle files terms where every host looks for them.

use std::collections::BTreeMap;

use crate::analyze::Analyzer;

/// Characters of a word's beginning that its corrections are filed under
/// ([`correction_keys`]).
pub const KEY_CHARS: usize = 3;

/// A correction key: up to [`KEY_CHARS`] characters, `'\0'`-padded.
pub type CorrectionKey = [char; KEY_CHARS];

/// The keys a word is filed under for corrections: its first [`KEY_CHARS`] characters, and
/// the first ones left after deleting any one of them (deleting a later one leaves them as
/// they are). Two words one edit apart always share a key, wherever the edit is (delete the
/// edited character, or one of a swapped pair, from both); two edits apart, when at most one
/// of them falls in the first four characters. Corrections are looked for among the terms
/// that share a key with the typed word or its stem: a split bundle files its vocabulary
/// under these keys ([`correction_shard`]), so a misspelt word fetches a few small shards
/// instead of every term, and every host looks in the same place.
pub fn correction_keys(word: &str) -> [CorrectionKey; KEY_CHARS + 1] {
    let mut head = ['\0'; KEY_CHARS + 1];
    for (slot, c) in head.iter_mut().zip(word.chars()) {
        *slot = c;
    }
    let mut keys = [['\0'; KEY_CHARS]; KEY_CHARS + 1];
    for (skip, key) in keys.iter_mut().enumerate() {
        let kept = head.iter().enumerate().filter(|&(i, _)| i != skip);
        for (slot, (_, &c)) in key.iter_mut().zip(kept) {
            *slot = c;
        }
    }
    keys
}

/// The vocabulary shard (of `shards`) that files `key`: FNV-1a over its characters.
pub fn correction_shard(key: &CorrectionKey, shards: u32) -> u32 {
    let hash = key.iter().fold(0x811c_9dc5u32, |h, &c| {
        (h ^ c as u32).wrapping_mul(0x0100_0193)
    });
    hash % shards.max(1)
}

/// The vocabulary shards (of `n`) that file `words`' correction keys, each once.
pub fn correction_shards(words: &[&str], n: u32) -> Vec<u32> {
    let mut shards: Vec<u32> = Vec::new();
    for w in words {
        for k in correction_keys(w) {
            let i = correction_shard(&k, n);
            if !shards.contains(&i) {
                shards.push(i);
            }
        }
    }
    shards
}

/// Chunks read to find a stem's surface forms.
pub const SURFACE_SAMPLE: usize = 32;
/// Surface forms kept per stem, the most frequent first.
pub const SURFACE_FORMS: usize = 3;

/// Calls `found(key, lowercase word)` for every word of `texts` whose term `key` takes (the
/// word is only built for those).
pub fn count_words<K>(
    analyzer: &Analyzer,
    texts: &[&str],
    key: impl Fn(&str) -> Option<K>,
    mut found: impl FnMut(K, String),
) {
    for text in texts {
        let chars: Vec<char> = text.chars().collect();
        for t in analyzer.tokens(text) {
            if let Some(k) = key(&t.term) {
                let word: String = chars[t.start..t.end].iter().collect();
                found(k, word.to_lowercase());
            }
        }
    }
}

/// The [`SURFACE_FORMS`] most frequent words, the most frequent first; ties go to the
/// shorter, then alphabetical, word.
pub fn most_frequent(counts: BTreeMap<String, usize>) -> Vec<String> {
    let mut best = Vec::new();
    for (word, n) in counts {
        let key = (std::cmp::Reverse(n), word.chars().count(), word);
        keep_best(&mut best, key, SURFACE_FORMS);
    }
    best.into_iter().map(|(_, _, word)| word).collect()
}

/// Puts `item` into `best` (kept sorted, at most `k` long) if it is among the `k` least. The
/// lists here are a handful long: this costs less code than a sort (the lexical wasm build
/// is sized for first paint).
pub fn keep_best<T: Ord>(best: &mut Vec<T>, item: T, k: usize) {
    let at = best.partition_point(|x| *x < item);
    // An item kept already is not kept twice (a split bundle's candidates may repeat a term).
    if at < k && best.get(at) != Some(&item) {
        best.insert(at, item);
        best.truncate(k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every word within one edit (insert, delete, substitute, swap) shares a correction key
    /// with the word, at any position, so the vocabulary shards of its keys hold it.
    #[test]
    fn one_edit_anywhere_shares_a_correction_key() {
        let shares = |a: &str, b: &str| {
            let kb = correction_keys(b);
            correction_keys(a).iter().any(|k| kb.contains(k))
        };
        for word in [
            "configuration",
            "cache",
            "lambda",
            "abc",
            "ab",
            "сервер",
            "ёж",
            "x86",
        ] {
            let chars: Vec<char> = word.chars().collect();
            let mut variants: Vec<String> = Vec::new();
            for i in 0..=chars.len() {
                for c in ['a', 'z', 'я', '1'] {
                    let mut v = chars.clone();
                    v.insert(i, c);
                    variants.push(v.iter().collect());
                    if i < chars.len() {
                        let mut v = chars.clone();
                        v[i] = c;
                        variants.push(v.iter().collect());
                    }
                }
                if i < chars.len() {
                    let mut v = chars.clone();
                    v.remove(i);
                    variants.push(v.iter().collect());
                }
                if i + 1 < chars.len() {
                    let mut v = chars.clone();
                    v.swap(i, i + 1);
                    variants.push(v.iter().collect());
                }
            }
            for v in variants {
                assert!(shares(word, &v), "{word} / {v}");
            }
        }
        // Two edits share a key when at most one falls in the first four characters.
        assert!(shares("configuration", "cnfiguraton"));
        assert!(!shares("configuration", "ocnifguration"));
        assert!(!shares("cache", "xyz"));
        // The shard of a key is a pure function of it (split files are reproducible).
        let key = correction_keys("lambda")[3];
        assert_eq!(key, ['l', 'a', 'm']);
        assert_eq!(correction_shard(&key, 1), 0);
        assert_eq!(correction_shard(&key, 2048), correction_shard(&key, 2048));
    }
}
