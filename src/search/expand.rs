//! Typo-tolerant and prefix-aware terms: what the query's words become before BM25.
//!
//! A word the index knows is searched as it is. A word it does not know (a typo, mostly) is
//! searched through its closest index terms: at most [`MAX_ALTERNATIVES`] within one edit
//! (insert, delete, substitute, swap of neighbours) for words of 3–4 letters, two edits from 5
//! on, each counted at [`ONE_EDIT_WEIGHT`] or [`TWO_EDIT_WEIGHT`] of a real match, so a page
//! with the word as typed always ranks above one that only has a correction. The last word of
//! a query that does not end in a space or punctuation may be being typed: the most frequent
//! terms it begins that are more common than it ([`MAX_COMPLETIONS`]) join at
//! [`PREFIX_WEIGHT`]. The same candidates feed the "did you mean" suggestions
//! ([`super::suggest`]).
//!
//! Candidates come from the vocabulary (a whole bundle's term list; a split bundle's
//! vocabulary shards of the word's [`correction_keys`], fetched only when a word is unknown)
//! and completions from the term range of
//! the prefix (the lexical shard it falls in), so a correctly spelled query costs nothing more.

use std::cmp::Reverse;

use super::corpus::Corpus;
use super::distance::Osa;
use crate::analyze::{fold, Token};
use crate::index::lexical::{bm25_idf, QueryTerm};
use crate::index::spelling::{correction_keys, keep_best};

/// Closest terms kept for an unknown word.
pub const MAX_ALTERNATIVES: usize = 3;
/// Completions kept for the word being typed.
pub const MAX_COMPLETIONS: usize = 4;
/// What a match through a stand-in counts for, against 1 for the word itself.
pub const ONE_EDIT_WEIGHT: f32 = 0.6;
pub const TWO_EDIT_WEIGHT: f32 = 0.4;
pub const PREFIX_WEIGHT: f32 = 0.8;
/// A prefix that begins more index terms than this is too short to complete (a split bundle
/// would fetch many shards for it): about two lexical shards' worth.
pub const MAX_PREFIX_TERMS: usize = 512;
/// Unknown words corrected per query at most: each is a pass over the vocabulary.
pub const MAX_WORDS_CORRECTED: usize = 4;
/// Typos are a word or two of a query: when more of its words than this (and more than it
/// has known ones) are unknown, the query is in another language or about something the
/// collection does not hold, and closest spellings would be noise (an English question over
/// Russian pages matched `points` to `pzpn`), so none are searched or suggested.
pub const MAX_UNKNOWN_WORDS: usize = 2;
/// Shortest word that gets corrections (shorter ones are too many other words' neighbours)
/// and shortest prefix that gets completions.
const MIN_CORRECTED: usize = 3;
const MIN_PREFIX: usize = 2;

/// The edits a word of `len` characters may be corrected by.
pub fn max_edits(len: usize) -> usize {
    if len <= 4 {
        1
    } else {
        2
    }
}

/// Characters at the end of a typed word that may be left out when it is measured against a
/// stem (index terms are stems: `configuratin` is compared with `configur` as well as with
/// its own stem).
pub const FREE_TAIL: usize = 3;

/// Index terms within [`max_edits`] of the query word (`term` its analyzed form, `typed` the
/// word as written, lowercased), whose document frequency is at least `min_df`: closest
/// first, then the ones that share the longest beginning with the typed word (the same word
/// family: «сервера» → «сервер», not «сервис»), then the most frequent; at most `limit`. A
/// term counts as close to the word's stem, or to the typed word less a short tail the
/// stemmer would have removed.
pub fn close_terms<'a>(
    vocabulary: &[(&'a str, usize)],
    term: &str,
    typed: &str,
    min_df: usize,
    limit: usize,
    osa: &mut Osa,
) -> Vec<(&'a str, usize, usize)> {
    let word: Vec<char> = term.chars().collect();
    let (by_term, by_typed) = (correction_keys(term), correction_keys(typed));
    let typed: Vec<char> = typed.chars().collect();
    let max = max_edits(typed.len().max(word.len()));
    // What the stemmer may have cut: nothing from a word of four letters or fewer.
    let tail = FREE_TAIL.min(typed.len().saturating_sub(4));
    let shared = |cand: &str| {
        cand.chars()
            .zip(typed.iter())
            .take_while(|(a, b)| a == *b)
            .count()
    };
    // A byte-length gap over 4× the edits (a char is at most 4 bytes) is beyond them.
    let (term_bytes, typed_bytes) = (
        term.len(),
        typed.iter().map(|c| c.len_utf8()).sum::<usize>(),
    );
    let near = |cand: &str| {
        cand.len().abs_diff(term_bytes) <= 4 * max
            || (cand.len() <= typed_bytes + 4 * max && typed_bytes <= cand.len() + 4 * (max + tail))
    };
    let filed = |cand: &str| {
        correction_keys(cand)
            .iter()
            .any(|k| by_term.contains(k) || by_typed.contains(k))
    };
    // (order, shared beginning, df, term, distance): sorted on the first four.
    type Close<'a> = (usize, Reverse<usize>, Reverse<usize>, &'a str, usize);
    let mut close: Vec<Close> = Vec::new();
    for &(cand, cdf) in vocabulary {
        if cdf < min_df || cand == term || !near(cand) || !filed(cand) {
            continue;
        }
        let (a, stem) = (
            osa.distance(&word, cand, max),
            osa.stem_distance(cand, &typed, max, tail),
        );
        let d = match (a, stem.map(|(b, _)| b)) {
            (Some(a), Some(b)) => a.min(b),
            (Some(d), None) | (None, Some(d)) => d,
            (None, None) => continue,
        };
        // Leaving out the tail costs an edit in the order (not in the distance reported): a
        // stem that is the typed word less its last letters is no closer than a word one
        // edit away («virtul» → «virtual», not «virtu» of «virtues»; «destructr» →
        // «destructor», not «destruct»).
        let order = match stem {
            Some((b, true)) if a.is_none_or(|a| b < a) => (b + 1).min(a.unwrap_or(usize::MAX)),
            _ => d,
        };
        keep_best(
            &mut close,
            (order, Reverse(shared(cand)), Reverse(cdf), cand, d),
            limit,
        );
    }
    close
        .into_iter()
        .map(|(_, _, Reverse(df), cand, d)| (cand, d, df))
        .collect()
}

/// The word at `token` as typed: lowercased and folded as the analyzer folds.
pub fn typed_word(query: &str, token: &Token) -> String {
    query
        .chars()
        .skip(token.start)
        .take(token.end - token.start)
        .flat_map(char::to_lowercase)
        .map(fold)
        .collect()
}

/// Whether `token` may be being typed: the query ends inside it (no space or punctuation
/// after it).
pub(super) fn being_typed(query: &str, token: &Token) -> bool {
    query.chars().last().is_some_and(char::is_alphanumeric) && token.end == query.chars().count()
}

/// Whether a word may be a misspelling worth correcting: long enough, not a number.
pub(super) fn correctable(term: &str) -> bool {
    term.chars().count() >= MIN_CORRECTED && !term.chars().all(|c| c.is_ascii_digit())
}

/// Whether the query's word at `token`, as written, is an abbreviation (`ОДПУ`, `СНиП`):
/// never corrected nor suggested away ([`crate::analyze::looks_like_abbreviation`]).
pub(super) fn abbreviation(query: &str, token: &Token) -> bool {
    let word: String = query
        .chars()
        .skip(token.start)
        .take(token.end - token.start)
        .collect();
    crate::analyze::looks_like_abbreviation(&word)
}

/// The terms that mark a definition of each abbreviation the query writes
/// ([`crate::analyze::definition_term`]), as words of their own: a chunk that defines it
/// scores for it beside the word itself. A query of the abbreviation alone weighs them as a
/// word; in a longer query, less.
pub fn definitions(query: &str, tokens: &[Token]) -> Vec<QueryTerm> {
    let weight = if tokens.len() == 1 { 1.0 } else { 0.3 };
    tokens
        .iter()
        .filter(|t| abbreviation(query, t))
        .map(|t| {
            let term = crate::analyze::definition_term(&t.term);
            QueryTerm {
                word: term.clone(),
                term,
                weight,
            }
        })
        .collect()
}

/// Whether the query's unknown words look like typos (few, among known words) rather than
/// another language ([`MAX_UNKNOWN_WORDS`]); `dfs` are the tokens' document frequencies.
pub fn looks_misspelt(tokens: &[Token], dfs: &[usize]) -> bool {
    let unknown = tokens
        .iter()
        .zip(dfs)
        .filter(|(t, &df)| df == 0 && correctable(&t.term))
        .count();
    let known = dfs.iter().filter(|&&df| df > 0).count();
    unknown <= MAX_UNKNOWN_WORDS.max(known)
}

/// The query's terms as BM25 reads them: each known word as it is; an unknown one through
/// its closest terms (or as it is, when none is close); and, when the query ends inside a
/// word, that word's most frequent completions.
pub fn expand(corpus: &Corpus, query: &str, tokens: &[Token]) -> Vec<QueryTerm> {
    let dfs: Vec<usize> = tokens.iter().map(|t| corpus.doc_freq(&t.term)).collect();
    if corpus.pending() {
        // A split bundle without these words' shards yet: every word looks unknown. Ask for
        // the shards first (the search stops at its next checkpoint and comes back).
        return tokens.iter().map(|t| QueryTerm::exact(&t.term)).collect();
    }
    let mut out: Vec<QueryTerm> = Vec::with_capacity(tokens.len());
    let mut osa = Osa::default();
    let misspelt = looks_misspelt(tokens, &dfs);
    // Per word, its typed form where it is corrected (the first few unknown ones); the
    // candidates of all of them, stems and typed forms, are read in one go.
    let mut typed: Vec<Option<String>> = Vec::with_capacity(tokens.len());
    let mut words: Vec<&str> = Vec::new();
    for (t, &df) in tokens.iter().zip(&dfs) {
        let fix = df == 0
            && misspelt
            && correctable(&t.term)
            && !abbreviation(query, t)
            && words.len() < MAX_WORDS_CORRECTED;
        typed.push(fix.then(|| typed_word(query, t)));
        if fix {
            words.push(&t.term);
        }
    }
    words.extend(typed.iter().flatten().map(String::as_str));
    let vocabulary = corpus.correction_candidates(&words);
    for (t, typed) in tokens.iter().zip(&typed) {
        let exact = QueryTerm::exact(&t.term);
        let Some(typed) = typed else {
            out.push(exact);
            continue;
        };
        let close = close_terms(&vocabulary, &t.term, typed, 1, MAX_ALTERNATIVES, &mut osa);
        if close.is_empty() {
            out.push(exact);
        }
        let close = close.into_iter().map(|(cand, d, df)| {
            let weight = if d <= 1 {
                ONE_EDIT_WEIGHT
            } else {
                TWO_EDIT_WEIGHT
            };
            (cand, weight, df)
        });
        out.extend(stand_ins(corpus.idf_chunks(), &t.term, close));
    }
    // The word being typed: the query ends inside it.
    if let Some(last) = tokens.last() {
        let typing = being_typed(query, last);
        let prefix = typed_word(query, last);
        if typing
            && prefix.chars().count() >= MIN_PREFIX
            && prefix.chars().all(char::is_alphanumeric)
        {
            // A completion counts only where it is more common than what was typed: "conf"
            // becomes "configuration", "package" stays "package" (not "packagejson").
            let typed = dfs[dfs.len() - 1];
            let mut best = Vec::new();
            for (t, df) in corpus.terms_with_prefix(&prefix, MAX_PREFIX_TERMS) {
                if df > typed && !out.iter().any(|q| q.term == t) {
                    keep_best(&mut best, (Reverse(df), t), MAX_COMPLETIONS);
                }
            }
            let completions = best
                .into_iter()
                .map(|(Reverse(df), t)| (t, PREFIX_WEIGHT, df));
            out.extend(stand_ins(corpus.idf_chunks(), &last.term, completions));
        }
    }
    out
}

/// The stand-ins for `word`, given as (term, weight, document frequency), each weighted so
/// that it counts with the idf of the commonest of them: a rare close spelling or completion
/// (`parameter1` for a misspelt `parameters`) does not outweigh the word's common reading.
fn stand_ins<'t>(
    n: usize,
    word: &str,
    terms: impl Iterator<Item = (&'t str, f32, usize)>,
) -> Vec<QueryTerm> {
    let terms: Vec<(&str, f32, f32)> = terms.map(|(t, w, df)| (t, w, bm25_idf(n, df))).collect();
    let common = terms.iter().map(|x| x.2).fold(f32::INFINITY, f32::min);
    terms
        .into_iter()
        .map(|(term, weight, idf)| QueryTerm {
            term: term.to_owned(),
            weight: if idf > 0.0 {
                weight * (common / idf).min(1.0)
            } else {
                weight
            },
            word: word.to_owned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(vocabulary: &[(&'static str, usize)], term: &str, typed: &str) -> Vec<&'static str> {
        close_terms(vocabulary, term, typed, 1, 3, &mut Osa::default())
            .into_iter()
            .map(|(t, _, _)| t)
            .collect()
    }

    /// A term that shares no correction key with the word is no correction of it, however
    /// close: two edits in its first four characters.
    #[test]
    fn corrections_come_from_the_words_own_keys() {
        let vocabulary = [("configur", 50)];
        assert_eq!(close(&vocabulary, "ocnfigur", "ocnfigur"), ["configur"]);
        assert_eq!(close(&vocabulary, "ocnfiugr", "ocnfiugr"), ["configur"]);
        assert_eq!(
            close(&vocabulary, "ocnifgur", "ocnifgur"),
            Vec::<&str>::new()
        );
    }

    #[test]
    fn nearer_terms_first_then_the_same_word_family_then_the_more_frequent() {
        // «сервера» stems to «сервер», unknown here; «серверн» (серверный) shares its
        // beginning, «сервис» is commoner and as far.
        let v = [("сервис", 90), ("серверн", 2), ("север", 40)];
        assert_eq!(
            close(&v, "сервер", "сервера"),
            ["серверн", "север", "сервис"]
        );
        let v = [("cache", 5), ("catch", 50), ("cachet", 1)];
        assert_eq!(close(&v, "cahc", "cahce"), ["cache", "catch", "cachet"]);
    }

    #[test]
    fn a_stem_is_close_to_a_typed_word_with_a_tail() {
        let v = [("configur", 3), ("figur", 9)];
        assert_eq!(close(&v, "configuratin", "configuratin"), ["configur"]);
        // Short words get one edit.
        let v = [("cat", 3), ("coat", 3)];
        assert_eq!(close(&v, "cst", "cst"), ["cat"]);
    }

    /// Leaving out the tail costs an edit in the order: a stem the typed word begins with is
    /// no nearer than a word one edit away, and the commoner comes first.
    #[test]
    fn a_stem_reached_through_the_tail_ranks_as_one_edit_away() {
        let v = [("virtu", 3), ("virtual", 900)];
        assert_eq!(close(&v, "virtul", "virtul"), ["virtual", "virtu"]);
        let v = [("destruct", 40), ("destructor", 700)];
        assert_eq!(
            close(&v, "destructr", "destructr"),
            ["destructor", "destruct"]
        );
        // The two are as near: where the stem is the commoner, it comes first.
        let v = [("destruct", 900), ("destructor", 700)];
        assert_eq!(
            close(&v, "destructr", "destructr"),
            ["destruct", "destructor"]
        );
    }
}
