//! Text analysis shared by the index builder and the query side: the *same* function turns
//! document text and query text into terms, so a term can only match if both sides agree.
//!
//! Pipeline per token: split on anything that is not a letter or digit → lowercase (ё→е) →
//! drop English and Russian stop words (since version 2, keeping the ones that are programming
//! keywords: [`KEYWORDS`]) → stem with Snowball, choosing the stemmer by the
//! token's script (Cyrillic → Russian, Latin → English). Choosing by script rather than by
//! document language keeps index- and query-time analysis identical even though a query's
//! language is unknown, and handles English identifiers inside Russian pages.

use rust_stemmers::{Algorithm, Stemmer};
use serde::{Deserialize, Serialize};

/// Version of the analysis rules. Stored in every bundle; bump on any change that alters terms.
/// A bundle is queried with the rules it was built with ([`Analyzer::for_version`]).
///
/// 1. Snowball's stop words (trimmed), Snowball stemmers.
/// 2. The stop words that are programming keywords ([`KEYWORDS`]) are terms.
/// 3. Text as a reader sees it: invisible format characters (soft hyphen, zero-width space and
///    joiners, the byte order mark) do not break a word, and full-width forms (`ｃａｃｈｅ`) are
///    their ASCII letters and digits. (Decomposed accents are not composed: the tables cost the
///    lexical wasm build more than its budget had left.)
pub const ANALYZER_VERSION: u32 = 3;

/// English stop words that version 2 keeps as terms: keywords of the languages documentation
/// is written about, which are page titles and searches of their own ("If expressions",
/// "for loops", `as` casts, `x in list`). Chosen on the docs questions' dev split against a
/// longer list (`do`, `is`, `this`, `where`, `while`, `with` too), which did worse there.
/// Sorted.
pub const KEYWORDS: &[&str] = &["as", "for", "if", "in"];

/// A query keeps its [`KEYWORDS`] while it has at most this many other terms
/// ([`Analyzer::query_tokens`]).
pub const KEYWORD_QUERY_WORDS: usize = 3;

/// Tokens longer than this (in chars) are dropped: base64 blobs, hashes, minified code.
const MAX_TOKEN_CHARS: usize = 40;

/// Languages the analyzer knows. Recorded per document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord, Hash)]
pub enum Language {
    En,
    Ru,
}

impl Language {
    pub fn code(self) -> &'static str {
        match self {
            Language::En => "en",
            Language::Ru => "ru",
        }
    }

    pub fn from_code(code: &str) -> Option<Language> {
        match code.trim().to_ascii_lowercase().as_str() {
            "en" | "en-us" | "en-gb" | "english" => Some(Language::En),
            "ru" | "ru-ru" | "russian" => Some(Language::Ru),
            _ => None,
        }
    }

    /// Guesses a text's language from its letters: Russian when at least 30 % of them are
    /// Cyrillic (documentation in Russian is full of Latin identifiers, hence the low bar).
    pub fn detect(text: &str) -> Language {
        let (mut cyr, mut letters) = (0usize, 0usize);
        for c in text.chars().filter(|c| c.is_alphabetic()) {
            letters += 1;
            if is_cyrillic(c) {
                cyr += 1;
            }
        }
        if letters > 0 && cyr * 10 >= letters * 3 {
            Language::Ru
        } else {
            Language::En
        }
    }
}

/// A term with the character range of the word it came from (for snippets and highlights).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub term: String,
    /// Offsets in chars (not bytes) into the analyzed text.
    pub start: usize,
    pub end: usize,
}

/// The analyzer. Cheap to clone; holds the two Snowball stemmers.
pub struct Analyzer {
    en: Stemmer,
    ru: Stemmer,
    /// Whether [`KEYWORDS`] are terms (version 2 on).
    keywords: bool,
    /// Whether text is read as displayed (version 3 on): format characters inside words,
    /// full-width forms.
    as_displayed: bool,
}

impl Default for Analyzer {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analyzer")
            .field("keywords", &self.keywords)
            .finish()
    }
}

impl Analyzer {
    /// The current rules ([`ANALYZER_VERSION`]): what the builder indexes with.
    pub fn new() -> Self {
        Analyzer::for_version(ANALYZER_VERSION)
    }

    /// The rules of `version`, which a bundle records: its queries must be analyzed as its
    /// text was. Versions above [`ANALYZER_VERSION`] are refused when the bundle is read
    /// ([`AnalyzerConfig::validate`]).
    pub fn for_version(version: u32) -> Self {
        Analyzer {
            en: Stemmer::create(Algorithm::English),
            ru: Stemmer::create(Algorithm::Russian),
            keywords: version >= 2,
            as_displayed: version >= 3,
        }
    }

    /// Terms of `text`, in order, stop words removed.
    pub fn terms(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.each_token(text, self.keywords, |t| out.push(t.term));
        out
    }

    /// A query's terms with their char offsets: [`Analyzer::tokens`], less the [`KEYWORDS`]
    /// when the query has more than [`KEYWORD_QUERY_WORDS`] other terms. A short query names
    /// the keyword ("if expressions", "for loop"); in a longer question the same words are
    /// its scaffolding ("how do I loop over a map in Go"), and they are the commonest terms
    /// of the index: the longest posting lists to fetch in the split layout, and a match in
    /// nearly every page.
    pub fn query_tokens(&self, query: &str) -> Vec<Token> {
        let tokens = self.tokens(query);
        let keywords = tokens
            .iter()
            .filter(|t| KEYWORDS.contains(&t.term.as_str()))
            .count();
        if self.keywords && tokens.len() - keywords > KEYWORD_QUERY_WORDS {
            return self.tokens_with(query, false);
        }
        tokens
    }

    /// Terms with their char offsets.
    pub fn tokens(&self, text: &str) -> Vec<Token> {
        self.tokens_with(text, self.keywords)
    }

    fn tokens_with(&self, text: &str, keywords: bool) -> Vec<Token> {
        let mut out = Vec::new();
        self.each_token(text, keywords, |t| out.push(t));
        out
    }

    fn each_token(&self, text: &str, keywords: bool, mut emit: impl FnMut(Token)) {
        let mut word = String::new();
        let mut start = 0usize;
        let mut pos = 0usize;
        for c in text.chars() {
            let c = if self.as_displayed {
                full_width_to_ascii(c)
            } else {
                c
            };
            if self.as_displayed && is_format_char(c) {
                // Invisible: neither a letter nor a break (`in\u{AD}dex` is `index`).
                pos += 1;
                continue;
            }

            if c.is_alphanumeric() {
                if word.is_empty() {
                    start = pos;
                }
                push_folded(&mut word, c);
            } else if !word.is_empty() {
                if let Some(term) = self.normalize(&word, keywords) {
                    emit(Token {
                        term,
                        start,
                        end: pos,
                    });
                }
                word.clear();
            }
            pos += 1;
        }
        if !word.is_empty() {
            if let Some(term) = self.normalize(&word, keywords) {
                emit(Token {
                    term,
                    start,
                    end: pos,
                });
            }
        }
    }

    /// Lowercased word → term, or `None` for stop words (less [`KEYWORDS`] when `keywords`)
    /// and junk. Natively each thread keeps what it worked out for the words it has seen
    /// ([`TERMS`]): a request of the second stage analyzes the text of every chunk in its
    /// pool, and stop-word look-ups and stemming were a tenth of a loaded server's time.
    fn normalize(&self, word: &str, keywords: bool) -> Option<String> {
        #[cfg(not(target_arch = "wasm32"))]
        if word.len() <= 4 * MAX_TOKEN_CHARS {
            let known = TERMS.with(|t| t.borrow()[keywords as usize].get(word).cloned());
            if let Some(term) = known {
                return term;
            }
            let term = self.normalize_word(word, keywords);
            TERMS.with(|t| {
                let map = &mut t.borrow_mut()[keywords as usize];
                if map.len() >= KEPT_TERMS {
                    map.clear();
                }
                map.insert(word.to_owned(), term.clone());
            });
            return term;
        }
        self.normalize_word(word, keywords)
    }

    /// [`Analyzer::normalize`], worked out.
    fn normalize_word(&self, word: &str, keywords: bool) -> Option<String> {
        if word.chars().count() > MAX_TOKEN_CHARS || is_stop_word(word, keywords) {
            return None;
        }
        let has_cyr = word.chars().any(is_cyrillic);
        let all_letters = word.chars().all(char::is_alphabetic);
        let term = if has_cyr && all_letters {
            self.ru.stem(word).into_owned()
        } else if !has_cyr && all_letters && word.is_ascii() {
            self.en.stem(word).into_owned()
        } else {
            // Mixed letters and digits ("utf8", "c11", "x64") are identifiers: keep them whole.
            word.to_owned()
        };
        if term.is_empty() {
            None
        } else {
            Some(term)
        }
    }
}

/// Words a thread keeps the term of ([`Analyzer::normalize`]), for each `keywords` setting
/// (words of at most [`MAX_TOKEN_CHARS`] characters: about 5 MB a thread for words of the
/// usual length, 25 MB at most); past it the thread starts over. (The term of a word depends on the word and the setting alone: every
/// analyzer version stems and drops stop words alike.)
#[cfg(not(target_arch = "wasm32"))]
const KEPT_TERMS: usize = 1 << 15;

#[cfg(not(target_arch = "wasm32"))]
type Terms = [std::collections::HashMap<String, Option<String>>; 2];

#[cfg(not(target_arch = "wasm32"))]
thread_local! {
    static TERMS: std::cell::RefCell<Terms> = std::cell::RefCell::default();
}

fn push_folded(word: &mut String, c: char) {
    for l in c.to_lowercase() {
        word.push(fold(l));
    }
}

/// What the analyzer folds a lowercase letter to (`ё` → `е`).
pub fn fold(c: char) -> char {
    if c == 'ё' {
        'е'
    } else {
        c
    }
}

/// Whether a word, as written, is an abbreviation: two to six letters, all capitals (`ОДПУ`,
/// `ГВС`, `TLS`), or with capitals after its first letter (`СНиП`, `iOS`, `GitHub`). Such words
/// are the vocabulary of technical documents, not misspellings of dictionary words: they are
/// never corrected.
pub fn looks_like_abbreviation(word: &str) -> bool {
    let letters = word.chars().count();
    if !(2..=6).contains(&letters) || !word.chars().all(char::is_alphabetic) {
        return false;
    }
    let upper = word.chars().filter(|c| c.is_uppercase()).count();
    upper == letters || (upper >= 2 && word.chars().skip(1).any(char::is_uppercase))
}

/// What marks a chunk as defining an abbreviation in the index: a term of its own, `\u{1}`
/// and the abbreviation's term, in the chunk's headings (no word of a text or a query is
/// analyzed into it).
pub const DEFINITION_MARK: char = '\u{1}';

/// The index term that marks a definition of the abbreviation whose term is `term`.
pub fn definition_term(term: &str) -> String {
    format!("{DEFINITION_MARK}{term}")
}

/// The abbreviations (in capitals, two to eight letters) that `text` defines, as written:
/// `ОДПУ — общедомовой прибор учёта`, `ГВС: горячее водоснабжение` at the start of a line,
/// sentence or list item, and `общедомовой прибор учёта (ОДПУ)` or `ОДПУ (общедомовой прибор
/// учёта)` anywhere, the expansion at least two words.
pub fn defined_abbreviations(text: &str) -> Vec<String> {
    let caps = |w: &str| {
        let n = w.chars().count();
        (2..=8).contains(&n) && w.chars().all(|c| c.is_alphabetic() && c.is_uppercase())
    };
    let words_in = |s: &str| {
        s.split_whitespace()
            .filter(|w| w.chars().any(char::is_alphabetic))
            .count()
    };
    let mut out: Vec<String> = Vec::new();
    let mut push = |w: &str| {
        if !out.iter().any(|o| o == w) {
            out.push(w.to_owned());
        }
    };
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].1.is_alphabetic() || (i > 0 && chars[i - 1].1.is_alphanumeric()) {
            i += 1;
            continue;
        }
        let start = chars[i].0;
        let mut j = i;
        while j < chars.len() && chars[j].1.is_alphanumeric() {
            j += 1;
        }
        let end = chars.get(j).map_or(text.len(), |c| c.0);
        let word = &text[start..end];
        i = j;
        if !caps(word) {
            continue;
        }
        let before = text[..start].trim_end();
        let after = text[end..].trim_start();
        // "(ОДПУ)" after its expansion.
        if let (Some(b), Some(a)) = (before.strip_suffix('('), after.strip_prefix(')')) {
            let _ = a;
            let expansion = b.rsplit(['.', ';', ':', '\n']).next().unwrap_or(b);
            if words_in(expansion) >= 2 {
                push(word);
            }
            continue;
        }
        // "ОДПУ (общедомовой прибор учёта)".
        if let Some(rest) = after.strip_prefix('(') {
            if let Some(close) = rest.find(')') {
                if words_in(&rest[..close]) >= 2 && !rest[..close].chars().any(char::is_numeric) {
                    push(word);
                }
            }
            continue;
        }
        // "ОДПУ — общедомовой прибор учёта" at the start of a line, sentence or item.
        let at_start = before.is_empty()
            || before.ends_with(['\n', ';', '.', ':', '•', '-', '—', '–', ')'])
            || text[..start].ends_with("\n");
        if at_start {
            if let Some(rest) = after.strip_prefix(['—', '–', '-', ':']) {
                let expansion = rest.split([';', '.', '\n']).next().unwrap_or(rest);
                if words_in(expansion) >= 2 {
                    push(word);
                }
            }
        }
    }
    out
}

/// A full-width form (U+FF01–U+FF5E, as East Asian input methods type Latin) as the ASCII
/// character it is a wide copy of.
fn full_width_to_ascii(c: char) -> char {
    match c {
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
        _ => c,
    }
}

fn is_cyrillic(c: char) -> bool {
    matches!(c, '\u{0400}'..='\u{04FF}' | '\u{0500}'..='\u{052F}')
}

fn is_stop_word(word: &str, keywords: bool) -> bool {
    // The lists are sorted, so a binary search suffices.
    (STOP_EN.binary_search(&word).is_ok() && !(keywords && KEYWORDS.contains(&word)))
        || STOP_RU.binary_search(&word).is_ok()
}

/// English stop words (Snowball's list, trimmed of words that carry meaning in docs such as
/// "not", "no", "only", "off", "up", "down", "over", "again").
const STOP_EN: &[&str] = &[
    "a",
    "about",
    "after",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "nor",
    "of",
    "on",
    "once",
    "or",
    "other",
    "ought",
    "our",
    "ours",
    "ourselves",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Russian stop words (Snowball's list, trimmed of negations and words such as "нельзя").
const STOP_RU: &[&str] = &[
    "а",
    "без",
    "более",
    "бы",
    "был",
    "была",
    "были",
    "было",
    "быть",
    "в",
    "вам",
    "вас",
    "весь",
    "во",
    "вот",
    "все",
    "всего",
    "всех",
    "вы",
    "где",
    "да",
    "даже",
    "для",
    "до",
    "его",
    "ее",
    "ей",
    "ему",
    "если",
    "есть",
    "еще",
    "же",
    "за",
    "здесь",
    "и",
    "из",
    "или",
    "им",
    "их",
    "к",
    "как",
    "когда",
    "кто",
    "ли",
    "либо",
    "мне",
    "может",
    "мы",
    "на",
    "над",
    "надо",
    "наш",
    "него",
    "нее",
    "ней",
    "нем",
    "них",
    "но",
    "ну",
    "о",
    "об",
    "однако",
    "он",
    "она",
    "они",
    "оно",
    "от",
    "очень",
    "по",
    "под",
    "при",
    "с",
    "со",
    "так",
    "также",
    "такой",
    "там",
    "те",
    "тем",
    "то",
    "того",
    "тоже",
    "той",
    "только",
    "том",
    "ты",
    "у",
    "уже",
    "чем",
    "что",
    "чтобы",
    "эта",
    "эти",
    "это",
    "этого",
    "этой",
    "этом",
    "этот",
    "я",
];

/// Everything that decides which terms a text turns into and how they are scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalyzerConfig {
    pub version: u32,
    pub k1: f32,
    pub b: f32,
    /// Term-frequency weight of a word in the document title.
    pub title_weight: u32,
    /// ... in a heading on the chunk's section path (or the front-matter description).
    pub heading_weight: u32,
    /// ... in the chunk's body text.
    pub body_weight: u32,
}

impl Default for AnalyzerConfig {
    fn default() -> Self {
        AnalyzerConfig {
            version: ANALYZER_VERSION,
            k1: 1.2,
            b: 0.75,
            title_weight: 3,
            heading_weight: 2,
            body_weight: 1,
        }
    }
}

impl AnalyzerConfig {
    /// BM25's constants as scoring needs them: finite, k1 ≥ 0, b in 0..=1, the field weights
    /// small (a NaN or infinite constant made every score `null`).
    pub fn validate(&self) -> crate::error::Result<()> {
        if self.version > ANALYZER_VERSION {
            return Err(crate::error::Error::NewerAnalyzer {
                found: self.version,
                supported: ANALYZER_VERSION,
            });
        }
        let ok = self.k1.is_finite()
            && self.k1 >= 0.0
            && self.k1 <= 100.0
            && self.b.is_finite()
            && (0.0..=1.0).contains(&self.b)
            && [self.title_weight, self.heading_weight, self.body_weight]
                .iter()
                .all(|&w| w <= 1000);
        // No float in the message: formatting one pulls float printing into the lexical wasm
        // build (+7 KB brotli).
        if ok {
            Ok(())
        } else {
            Err(crate::error::Error::Corrupt(
                "analyzer constants (BM25 k1, b, field weights) out of range".into(),
            ))
        }
    }
}

/// Whether `c` is a Unicode format character (general category Cf, Unicode 15.1): bidi
/// controls, zero-width spaces and joiners, the soft hyphen, the byte order mark, tags. They
/// change how text around them displays without showing themselves.
pub fn is_format_char(c: char) -> bool {
    matches!(
        c,
        '\u{AD}'
            | '\u{600}'..='\u{605}'
            | '\u{61C}'
            | '\u{6DD}'
            | '\u{70F}'
            | '\u{890}'..='\u{891}'
            | '\u{8E2}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0001}'
            | '\u{E0020}'..='\u{E007F}'
    )
}

#[cfg(test)]
mod tests;
