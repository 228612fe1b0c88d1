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
use super::distance::Osa;
use crate::analyze::{Analyzer, Token};
use crate::index::spelling::{count_words, most_frequent, SURFACE_SAMPLE};

pub const MAX_SUGGESTIONS: usize = 3;
/// Close terms looked at per word, for its [`MAX_SUGGESTIONS`] replacements.
const CANDIDATES: usize = 12;
/// Fewer results than this and rare query words are also offered alternatives.
const FEW_RESULTS: usize = 3;
/// A replacement for a word that does occur must be this many times more frequent.
const RARE_FACTOR: usize = 10;

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
            &[
                corpus.text(c),
                &doc.title,
                &meta.location.section_path.join(" "),
            ],
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

#[cfg(test)]
mod tests {
    use super::Osa;

    /// What a split bundle stores for each term is what a whole one reads from its chunks.
    #[test]
    fn stored_surface_forms_are_what_the_chunks_give() {
        use crate::search::corpus::{Corpus, Data};
        let bundle = crate::bundle::decode(include_bytes!(
            "../../tests/fixtures/bundles/v10-coded.bundle"
        ))
        .unwrap();
        let forms = crate::bundle::split::surface_forms(&bundle).unwrap();
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
}
