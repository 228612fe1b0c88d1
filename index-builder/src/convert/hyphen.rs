//! Words as written, not as typeset: a PDF's lines keep the hyphens the typesetter broke
//! words with ("инже-" at a line's end, "нерные" on the next), and soft hyphens (U+00AD) that
//! mark where it may; a search for "инженерные" finds neither, and a snippet shows the break.
//! [`Hyphens`] decides, for a line that ends in a hyphen after a letter and a next line that
//! begins with a lower-case letter, whether the two halves are one word (the hyphen goes) or a
//! compound that keeps its hyphen (`северо-западный`, `из-за`, `кто-то`, `well-known`): by
//! what the same document writes elsewhere first, by a short list of compound parts second.

use std::collections::HashSet;

/// The characters a typesetter ends a broken line with: the hyphen-minus, the soft hyphen, the
/// Unicode hyphen, and the not sign some PDF producers emit for a discretionary hyphen.
const BREAKS: [char; 4] = ['-', '\u{AD}', '\u{2010}', '\u{AC}'];

/// First parts that make a compound with a hyphen whatever follows (Russian compass points and
/// prefixes written with a hyphen, English ones).
const COMPOUND_HEADS: &[&str] = &[
    "северо",
    "юго",
    "северо-западно",
    "юго-западно",
    "северо-восточно",
    "юго-восточно",
    "кое",
    "кой",
    "из",
    "по",
    "во",
    "в",
    "кто",
    "что",
    "где",
    "как",
    "когда",
    "какой",
    "чей",
    "кто-либо",
    "пол",
    "вице",
    "экс",
    "лейб",
    "обер",
    "унтер",
    "штаб",
    "контр",
    "генерал",
    "mid",
    "non",
    "self",
    "well",
    "cross",
    "ex",
    "co",
    "re",
    "pre",
    "post",
    "anti",
    "multi",
    "semi",
    "sub",
    "inter",
    "intra",
    "pseudo",
    "quasi",
];

/// Second parts that join a word with a hyphen (Russian particles).
const COMPOUND_TAILS: &[&str] = &["то", "либо", "нибудь", "ка", "таки", "де", "с"];

/// What one document writes: which hyphenated words it writes inside lines, which words whole.
pub struct Hyphens {
    compounds: HashSet<String>,
    words: HashSet<String>,
}

impl Hyphens {
    /// What `text` (all of a document's extracted text) writes inside its lines.
    pub fn of(text: &str) -> Hyphens {
        let mut compounds = HashSet::new();
        let mut words = HashSet::new();
        for line in text.lines() {
            let line = line.trim_end();
            let mut tokens = line.split(|c: char| c.is_whitespace()).peekable();
            while let Some(t) = tokens.next() {
                let t = t.trim_matches(|c: char| !c.is_alphanumeric() && c != '-');
                if t.is_empty() {
                    continue;
                }
                // The last token of a line may be a break, not a compound.
                let last = tokens.peek().is_none();
                if t.contains('-') {
                    if !(last && t.ends_with('-')) {
                        compounds.insert(t.to_lowercase());
                    }
                } else {
                    words.insert(t.to_lowercase());
                }
            }
        }
        Hyphens { compounds, words }
    }

    /// A document that writes nothing: the lists alone decide.
    pub fn none() -> Hyphens {
        Hyphens {
            compounds: HashSet::new(),
            words: HashSet::new(),
        }
    }

    /// How `line` (without its line end) and the `next` line join, when `line` ends in a
    /// broken word: `Some(true)` the halves are one word (drop the hyphen), `Some(false)` a
    /// compound (keep it, no space), `None` not a broken word (join with a space).
    pub fn join(&self, line: &str, next: &str) -> Option<bool> {
        let line = line.trim_end();
        let brk = line.chars().next_back().filter(|c| BREAKS.contains(c))?;
        let head_word = line[..line.len() - brk.len_utf8()]
            .rsplit(|c: char| c.is_whitespace())
            .next()
            .unwrap_or("");
        let head = head_word.trim_start_matches(|c: char| !c.is_alphanumeric());
        if !head.chars().next_back().is_some_and(char::is_alphabetic) {
            return None;
        }
        let tail: String = next
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '-')
            .collect();
        if !tail.chars().next().is_some_and(char::is_lowercase) {
            return None;
        }
        if brk != '-' {
            // A soft or discretionary hyphen is never part of the word.
            return Some(true);
        }
        let (h, t) = (head.to_lowercase(), tail.to_lowercase());
        let tail_word = t.split('-').next().unwrap_or("");
        if self.compounds.contains(&format!("{h}-{t}")) {
            return Some(false);
        }
        if self.words.contains(&format!("{h}{tail_word}")) {
            return Some(true);
        }
        let head_last = h.rsplit('-').next().unwrap_or(&h);
        if COMPOUND_HEADS.contains(&h.as_str())
            || COMPOUND_HEADS.contains(&head_last)
            || COMPOUND_TAILS.contains(&tail_word)
            || head
                .chars()
                .filter(|c| c.is_alphabetic())
                .all(char::is_uppercase)
        {
            return Some(false);
        }
        Some(true)
    }
}

/// `text` without its soft hyphens (U+00AD), which mark where a word may break and are never
/// part of it.
pub fn without_soft_hyphens(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\u{AD}') {
        std::borrow::Cow::Owned(text.replace('\u{AD}', ""))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_broken_at_a_line_end_are_joined_and_compounds_keep_their_hyphen() {
        let h = Hyphens::of("Северо-западный район. Инженерные изыскания. Кто-то пришёл.");
        assert_eq!(h.join("Инже-", "нерные изыскания"), Some(true));
        assert_eq!(h.join("для строи\u{AD}", "тельства"), Some(true));
        assert_eq!(
            h.join("Северо-", "западный"),
            Some(false),
            "written so elsewhere"
        );
        assert_eq!(
            h.join("юго-", "восточный ветер"),
            Some(false),
            "a compass point"
        );
        assert_eq!(h.join("из-", "за дождя"), Some(false));
        assert_eq!(h.join("что-", "нибудь"), Some(false));
        assert_eq!(h.join("well-", "known name"), Some(false));
        // Not a break: a capital next, a number before the hyphen, a dash between words.
        assert_eq!(h.join("Глава 1 -", "общие положения"), None);
        assert_eq!(h.join("ГОСТ 21.101-", "2020"), None);
        assert_eq!(h.join("раздел 5 —", "методика"), None);
        assert_eq!(h.join("настоящий", "свод правил"), None);
        assert_eq!(h.join("Pre-", "Installation"), None);
        // What the document writes whole decides.
        let h = Hyphens::of("Водоснабжение и водоотведение.");
        assert_eq!(h.join("водо-", "снабжение"), Some(true));
    }
}
