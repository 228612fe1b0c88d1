//! Suggestions: alternative queries built from the bundle's own vocabulary.
//!
//! A query word whose term occurs nowhere (typically a misspelling), or a rare word when the
//! query found almost nothing, is replaced by the closest terms of the index (optimal string
//! alignment distance ≤ 1 for short words, ≤ 2 otherwise; nearer first, then more frequent).
//! Index terms are stems, so each replacement is written as a surface word that produced the
//! stem in the collection's text, e.g. `cahce` → `cache`, not `cach`: of the stem's
//! [`SURFACE_FORMS`] most frequent words, the one nearest the word as typed (`handliang` →
//! `handling`, not the commoner `handle`).

use std::collections::BTreeMap;

use super::corpus::Corpus;
use crate::analyze::{Analyzer, Token};

pub const MAX_SUGGESTIONS: usize = 3;
/// Close terms looked at per word, for its [`MAX_SUGGESTIONS`] replacements.
const CANDIDATES: usize = 12;
/// Fewer results than this and rare query words are also offered alternatives.
const FEW_RESULTS: usize = 3;
/// A replacement for a word that does occur must be this many times more frequent.
const RARE_FACTOR: usize = 10;
/// Chunks read to find a stem's surface forms.
const SURFACE_SAMPLE: usize = 32;
/// Surface forms kept per stem, the most frequent first.
pub const SURFACE_FORMS: usize = 3;

/// Query words looked up at most: each costs a pass over the vocabulary, so a long
/// nonsense query (500 characters against 160k terms took seconds) costs what 4 words do.
const MAX_WORDS_LOOKED_UP: usize = 4;

/// `tokens` are the query's own (`analyzer.tokens(query)`), with char offsets into `query`.
pub fn suggestions(
    corpus: &Corpus,
    analyzer: &Analyzer,
    query: &str,
    tokens: &[Token],
    total: usize,
) -> Vec<String> {
    // (char range in the query, alternatives best first)
    let mut fixes: Vec<((usize, usize), Vec<String>)> = Vec::new();
    let dfs: Vec<usize> = tokens.iter().map(|t| corpus.doc_freq(&t.term)).collect();
    if !super::expand::looks_misspelt(tokens, &dfs) {
        // Mostly words the collection does not have: another language, not typos.
        return Vec::new();
    }
    let mut osa = Osa::default();
    // The words looked up, with the least frequency of their replacements and as typed;
    // their candidates are read in one go.
    let mut looked_up: Vec<(&Token, usize, String)> = Vec::new();
    for (t, &df) in tokens.iter().zip(&dfs) {
        if !super::expand::correctable(&t.term)
            || super::expand::abbreviation(query, t)
            || looked_up.len() == MAX_WORDS_LOOKED_UP
        {
            continue;
        }
        let min_df = if df == 0 {
            1
        } else if total < FEW_RESULTS {
            df.saturating_mul(RARE_FACTOR).max(RARE_FACTOR)
        } else {
            continue;
        };
        looked_up.push((t, min_df, super::expand::typed_word(query, t)));
    }
    let mut words: Vec<&str> = Vec::new();
    for (t, _, typed) in &looked_up {
        words.push(&t.term);
        words.push(typed);
    }
    let vocabulary = corpus.correction_candidates(&words);
    for (t, min_df, typed) in &looked_up {
        // Closest first, then the same word family, then the most frequent (a few more than
        // are shown: a term whose surface form cannot be found is skipped).
        let close =
            super::expand::close_terms(&vocabulary, &t.term, typed, *min_df, CANDIDATES, &mut osa);
        let typing = super::expand::being_typed(query, t);
        let words: Vec<String> = close
            .into_iter()
            .filter_map(|(stem, _, _)| {
                nearest_form(surfaces(corpus, analyzer, stem), typed, typing, &mut osa)
            })
            .take(MAX_SUGGESTIONS)
            .collect();
        if !words.is_empty() {
            fixes.push(((t.start, t.end), words));
        }
    }
    if fixes.is_empty() {
        return Vec::new();
    }
    let chars: Vec<char> = query.chars().collect();
    let rewrite = |choice: &dyn Fn(usize) -> usize| -> String {
        let mut out = String::new();
        let mut pos = 0;
        for (i, ((start, end), words)) in fixes.iter().enumerate() {
            out.extend(&chars[pos..*start]);
            out.push_str(&words[choice(i).min(words.len() - 1)]);
            pos = *end;
        }
        out.extend(&chars[pos..]);
        out
    };
    let mut out: Vec<String> = Vec::new();
    // Every word at its best replacement, then the runners-up one at a time.
    for rank in 0..MAX_SUGGESTIONS {
        for which in 0..fixes.len() {
            let s = rewrite(&|i| if i == which { rank } else { 0 });
            if s != query && !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out.truncate(MAX_SUGGESTIONS);
    out
}

/// The [`SURFACE_FORMS`] most frequent lowercase words in the collection whose term is
/// `stem`, the most frequent first: written at split time into the vocabulary shards
/// ([`surface_forms`]), so a split bundle spells its suggestions without fetching the chunks
/// (and their shards) a whole bundle reads them from.
fn surfaces(corpus: &Corpus, analyzer: &Analyzer, stem: &str) -> Vec<String> {
    if let Some(stored) = corpus.stored_surfaces(stem) {
        return stored;
    }
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for c in corpus.first_chunks_with(stem, SURFACE_SAMPLE) {
        let meta = corpus.chunk(c);
        let doc = corpus.document(corpus.doc_of(c));
        count_words(
            analyzer,
            &[corpus.text(c), &doc.title, &meta.section_path.join(" ")],
            |term| (term == stem).then_some(()),
            |(), word| *counts.entry(word).or_default() += 1,
        );
    }
    most_frequent(counts)
}

/// Of `forms`, the nearest to the word as `typed` (optimal string alignment), the more
/// frequent (earlier) on a tie; `None` for no forms. A word still being `typing` is measured
/// against each form's nearest beginning (`para` is as near `parameters` as `params`).
fn nearest_form(forms: Vec<String>, typed: &str, typing: bool, osa: &mut Osa) -> Option<String> {
    forms
        .into_iter()
        .enumerate()
        .min_by_key(|(i, form)| {
            let form_chars: Vec<char> = form.chars().collect();
            // Every two words are within the longer one's length of each other.
            let max = typed.chars().count().max(form_chars.len());
            let tail = if typing { form_chars.len() } else { 0 };
            let d = osa.stem_distance(typed, &form_chars, max, tail);
            (d.map_or(usize::MAX, |(d, _)| d), *i)
        })
        .map(|(_, form)| form)
}

/// Calls `found(key, lowercase word)` for every word of `texts` whose term `key` takes (the
/// word is only built for those).
fn count_words<K>(
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
fn most_frequent(counts: BTreeMap<String, usize>) -> Vec<String> {
    let mut best = Vec::new();
    for (word, n) in counts {
        let key = (std::cmp::Reverse(n), word.chars().count(), word);
        super::expand::keep_best(&mut best, key, SURFACE_FORMS);
    }
    best.into_iter().map(|(_, _, word)| word).collect()
}

/// Every term's surface forms, in term order, as [`surfaces`] finds them over a whole bundle
/// (none where no word of its sampled chunks makes the term). One pass over the chunks: a
/// chunk is read for the terms whose first [`SURFACE_SAMPLE`] postings hold it.
pub fn surface_forms(bundle: &crate::bundle::Bundle) -> crate::error::Result<Vec<Vec<String>>> {
    let lexical = &bundle.lexical;
    let analyzer = Analyzer::for_version(bundle.header.analyzer.version);
    // Per chunk, the terms it is sampled for.
    let mut sampled: Vec<Vec<u32>> = vec![Vec::new(); bundle.docs.chunks.len()];
    for (term, postings) in lexical.postings.iter().enumerate() {
        for (c, _) in postings.iter().take(SURFACE_SAMPLE) {
            if let Some(list) = sampled.get_mut(c as usize) {
                list.push(term as u32);
            }
        }
    }
    let mut counts: Vec<BTreeMap<String, usize>> = vec![BTreeMap::new(); lexical.terms.len()];
    // In chunk order, each text block inflated once and not kept.
    let mut text = crate::bundle::TextReader::new(&bundle.text);
    for (c, terms) in sampled.iter().enumerate().filter(|(_, t)| !t.is_empty()) {
        let meta = &bundle.docs.chunks[c];
        let Some(doc) = bundle.docs.documents.get(meta.doc as usize) else {
            continue;
        };
        let id = |term: &str| {
            lexical
                .term_id(term)
                .filter(|i| terms.contains(&(*i as u32)))
        };
        count_words(
            &analyzer,
            &[text.get(c)?, &doc.title, &meta.section_path.join(" ")],
            id,
            |i, word| *counts[i].entry(word).or_default() += 1,
        );
    }
    Ok(counts.into_iter().map(most_frequent).collect())
}

/// Optimal string alignment distance (Levenshtein plus adjacent transpositions), or `None`
/// when it exceeds `max`.
pub fn osa_distance(a: &str, b: &str, max: usize) -> Option<usize> {
    let a: Vec<char> = a.chars().collect();
    Osa::default().distance(&a, b, max)
}

/// [`osa_distance`] with buffers kept between calls: comparing a word with a whole vocabulary
/// allocates nothing per pair.
#[derive(Debug, Default)]
pub struct Osa {
    b: Vec<char>,
    /// The rows i − 2, i − 1 and i of the distance matrix.
    rows: [Vec<usize>; 3],
}

impl Osa {
    pub fn distance(&mut self, a: &[char], b: &str, max: usize) -> Option<usize> {
        self.b.clear();
        self.b.extend(b.chars());
        osa(&mut self.rows, a, &self.b, max, 0).map(|(d, _)| d)
    }

    /// The distance from the word `stem` to `word` less up to `free_tail` of its last
    /// characters (the least over those prefixes of `word`), or `None` when it exceeds `max`:
    /// how far a typed word is from an index term that is a stem, e.g. `configuratin` is one
    /// edit from `configur` + the tail `atin`.
    pub fn distance_to_stem(
        &mut self,
        stem: &str,
        word: &[char],
        max: usize,
        free_tail: usize,
    ) -> Option<usize> {
        self.stem_distance(stem, word, max, free_tail)
            .map(|(d, _)| d)
    }

    /// [`Osa::distance_to_stem`], and whether leaving out some of the tail is what made it
    /// (the whole `word` is farther).
    pub fn stem_distance(
        &mut self,
        stem: &str,
        word: &[char],
        max: usize,
        free_tail: usize,
    ) -> Option<(usize, bool)> {
        self.b.clear();
        self.b.extend(stem.chars());
        osa(&mut self.rows, &self.b, word, max, free_tail)
    }
}

/// Optimal string alignment distance from `a` to the nearest of `b` and its prefixes that lack
/// at most `free_tail` characters, and whether that is nearer than the whole `b`; `None` when
/// over `max`.
fn osa(
    rows: &mut [Vec<usize>; 3],
    a: &[char],
    b: &[char],
    max: usize,
    free_tail: usize,
) -> Option<(usize, bool)> {
    if a.len() > b.len() + max || b.len() > a.len() + max + free_tail {
        return None;
    }
    let w = b.len() + 1;
    for row in rows.iter_mut() {
        row.clear();
        row.resize(w, 0);
    }
    let [two, one, cur] = rows;
    for (j, cell) in one.iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        cur[0] = i;
        let mut row_min = cur[0];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (one[j] + 1).min(cur[j - 1] + 1).min(one[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(two[j - 2] + 1);
            }
            cur[j] = v;
            row_min = row_min.min(v);
        }
        // Every later row's cells are at least this row's least.
        if row_min > max {
            return None;
        }
        std::mem::swap(two, one);
        std::mem::swap(one, cur);
    }
    let dist = one[b.len().saturating_sub(free_tail)..]
        .iter()
        .copied()
        .min()
        .unwrap_or(usize::MAX);
    (dist <= max).then_some((dist, dist < one[b.len()]))
}

#[cfg(test)]
mod tests {
    use super::{osa_distance, Osa};

    /// What a split bundle stores for each term is what a whole one reads from its chunks.
    #[test]
    fn stored_surface_forms_are_what_the_chunks_give() {
        use crate::search::corpus::{Corpus, Data};
        let bundle = crate::bundle::decode(include_bytes!(
            "../../tests/fixtures/bundles/v4-coded.bundle"
        ))
        .unwrap();
        let forms = super::surface_forms(&bundle).unwrap();
        let analyzer = crate::analyze::Analyzer::for_version(bundle.header.analyzer.version);
        let terms = bundle.lexical.terms.clone();
        let data = Data::Whole(bundle);
        let corpus = Corpus::new(&data);
        assert_eq!(forms.len(), terms.len());
        for (term, form) in terms.iter().zip(&forms) {
            assert_eq!(form, &super::surfaces(&corpus, &analyzer, term), "{term}");
        }
        let cache = terms.iter().position(|t| t == "cach").unwrap();
        assert_eq!(forms[cache].first().map(String::as_str), Some("cache"));
    }

    #[test]
    fn the_form_nearest_the_typed_word_is_written_and_a_prefix_keeps_the_commonest() {
        let forms = || vec!["handle".to_string(), "handler".into(), "handling".into()];
        let mut osa = Osa::default();
        let mut near =
            |typed: &str, typing: bool| super::nearest_form(forms(), typed, typing, &mut osa);
        assert_eq!(near("handliang", false).as_deref(), Some("handling"));
        assert_eq!(near("handelr", false).as_deref(), Some("handler"));
        // A tie goes to the commoner (earlier) form.
        assert_eq!(near("handlx", false).as_deref(), Some("handle"));
        // Still being typed: every form begins with `handl`, so the commonest is written.
        assert_eq!(near("handl", true).as_deref(), Some("handle"));
        assert_eq!(near("handli", true).as_deref(), Some("handling"));
        assert_eq!(
            super::nearest_form(Vec::new(), "handl", false, &mut osa),
            None
        );
    }

    #[test]
    fn distances() {
        assert_eq!(osa_distance("cahc", "cach", 2), Some(1));
        assert_eq!(osa_distance("instal", "install", 2), Some(1));
        assert_eq!(osa_distance("abc", "abc", 0), Some(0));
        assert_eq!(osa_distance("kitten", "sitting", 2), None);
        assert_eq!(osa_distance("kitten", "sitting", 3), Some(3));
        assert_eq!(osa_distance("устоновка", "установка", 1), Some(1));
        assert_eq!(osa_distance("ab", "ba", 1), Some(1));
        assert_eq!(osa_distance("", "abc", 3), Some(3));
        assert_eq!(osa_distance("abc", "", 2), None);
    }

    #[test]
    fn a_typed_word_is_measured_against_a_stem_with_its_tail_free() {
        let mut osa = Osa::default();
        let w = |s: &str| s.chars().collect::<Vec<char>>();
        // `configuration` is indexed as `configur`: a typo in the tail costs nothing more.
        assert_eq!(
            osa.distance_to_stem("configur", &w("configuratin"), 2, 4),
            Some(0)
        );
        assert_eq!(
            osa.distance_to_stem("configur", &w("confguratin"), 2, 4),
            Some(1)
        );
        assert_eq!(
            osa.distance_to_stem("configur", &w("configuratin"), 2, 3),
            Some(1)
        );
        assert_eq!(osa.distance_to_stem("configur", &w("confi"), 2, 4), None);
        assert_eq!(
            osa.distance_to_stem("установк", &w("устоновка"), 1, 2),
            Some(1)
        );
        // No tail: the plain distance.
        assert_eq!(osa.distance_to_stem("cach", &w("cahc"), 2, 0), Some(1));
    }
}
