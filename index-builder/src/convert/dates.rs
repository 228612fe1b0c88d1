//! A document's own dates. A normative document states when it was adopted or approved, when
//! it takes effect and which revision it is, on its first page ("Дата введения 2017-06-17",
//! "утвержден … от 12 марта 2020 г.", "Редакция от 01.01.2021", "Effective date: 2020-03-01");
//! the PDF's or the Word file's properties only say when that file was produced, which for a
//! code scanned or exported long after it was adopted is the wrong date to filter by.

/// The dates a document's text gives, `YYYY-MM-DD`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stated {
    /// Adopted, approved, signed or issued.
    pub adopted: Option<String>,
    /// Takes effect.
    pub effective: Option<String>,
    /// The revision the text is in.
    pub revised: Option<String>,
}

impl Stated {
    /// The document's date (what date filters read): its revision, else when it took effect,
    /// else when it was adopted.
    pub fn date(&self) -> Option<String> {
        self.revised
            .clone()
            .or_else(|| self.effective.clone())
            .or_else(|| self.adopted.clone())
    }

    /// When it was made: adopted, else in effect.
    pub fn created(&self) -> Option<String> {
        self.adopted.clone().or_else(|| self.effective.clone())
    }

    pub fn is_empty(&self) -> bool {
        self.adopted.is_none() && self.effective.is_none() && self.revised.is_none()
    }
}

/// How far into a document its dates are looked for (characters): the first page or two.
pub const SCAN_CHARS: usize = 6_000;

/// What kind of date each phrase introduces.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Adopted,
    Effective,
    Revised,
}

/// The phrases, lowercase, and the kind of date that follows each (within a few words).
const PHRASES: &[(&str, Kind)] = &[
    ("дата введения в действие", Kind::Effective),
    ("дата введения", Kind::Effective),
    ("введен в действие", Kind::Effective),
    ("вводится в действие", Kind::Effective),
    ("вступает в силу", Kind::Effective),
    ("вступил в силу", Kind::Effective),
    ("редакция от", Kind::Revised),
    ("в редакции от", Kind::Revised),
    ("ред. от", Kind::Revised),
    ("с изменениями от", Kind::Revised),
    ("изменение", Kind::Revised),
    ("утвержден", Kind::Adopted),
    ("утверждена", Kind::Adopted),
    ("утверждено", Kind::Adopted),
    ("утверждены", Kind::Adopted),
    ("принят", Kind::Adopted),
    ("одобрен", Kind::Adopted),
    ("подписан", Kind::Adopted),
    ("effective date", Kind::Effective),
    ("effective from", Kind::Effective),
    ("effective", Kind::Effective),
    ("in force from", Kind::Effective),
    ("revision date", Kind::Revised),
    ("revised", Kind::Revised),
    ("last updated", Kind::Revised),
    ("updated", Kind::Revised),
    ("approved", Kind::Adopted),
    ("adopted", Kind::Adopted),
    ("issued", Kind::Adopted),
    ("published", Kind::Adopted),
];

/// The dates `text`'s first [`SCAN_CHARS`] characters state. Each phrase takes the first date
/// within 120 characters after it (the issuer and the act's type come between "Утвержден"
/// and its date); the first phrase of each kind wins, except revisions, where the latest wins
/// (a list of amendments). An act's header date (`ПОСТАНОВЛЕНИЕ … от 16 февраля 2008 г. N
/// 87`) is its adoption date.
pub fn stated(text: &str) -> Stated {
    let head: String = text.chars().take(SCAN_CHARS).collect();
    let lower = head.to_lowercase();
    let mut out = Stated::default();
    for (phrase, kind) in PHRASES {
        let mut from = 0;
        while let Some(i) = lower[from..].find(phrase) {
            let at = from + i + phrase.len();
            from = at;
            // A phrase inside a word ("утвержденный" is fine, "непринят" is not).
            let before = lower[..from - phrase.len()].chars().next_back();
            if before.is_some_and(char::is_alphanumeric) {
                continue;
            }
            let window: String = lower[at..].chars().take(120).collect();
            let Some(date) = first_date(&window) else {
                continue;
            };
            let slot = match kind {
                Kind::Adopted => &mut out.adopted,
                Kind::Effective => &mut out.effective,
                Kind::Revised => &mut out.revised,
            };
            match (kind, slot.as_ref()) {
                (Kind::Revised, Some(old)) if *old >= date => {}
                (Kind::Revised, _) | (_, None) => *slot = Some(date),
                _ => {}
            }
        }
    }
    if out.adopted.is_none() {
        // An act's header: "от 16 февраля 2008 г. N 87" on a line of its own near the top.
        for line in head.lines().take(30) {
            let l = line.trim().to_lowercase();
            if let Some(rest) = l.strip_prefix("от ") {
                if (l.contains('№') || l.contains(" n ")) && l.len() < 80 {
                    if let Some((y, m, d)) = date_at(rest.trim_start()) {
                        out.adopted = Some(format!("{y:04}-{m:02}-{d:02}"));
                        break;
                    }
                }
            }
        }
    }
    out
}

/// The first date in `s` (lowercase), `YYYY-MM-DD`.
fn first_date(s: &str) -> Option<String> {
    s.char_indices()
        .filter(|&(i, _)| {
            !s[..i]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric)
        })
        .find_map(|(i, _)| date_at(&s[i..]))
        .map(|(y, m, d)| format!("{y:04}-{m:02}-{d:02}"))
}

/// The date `s` (lowercase) begins with, in any of the forms documents write: `2017-06-17`,
/// `17.06.2017`, `12 марта 2020`, `March 1, 2020`, `1 March 2020`.
pub fn date_at(s: &str) -> Option<(u32, u32, u32)> {
    numeric_date(s)
        .or_else(|| russian_date(s))
        .or_else(|| english_date(s))
}

fn valid(y: u32, m: u32, d: u32) -> Option<(u32, u32, u32)> {
    ((1900..=2100).contains(&y) && (1..=12).contains(&m) && (1..=31).contains(&d))
        .then_some((y, m, d))
}

/// `2017-06-17`, `17.06.2017`, `17/06/2017` at the start of `s`.
fn numeric_date(s: &str) -> Option<(u32, u32, u32)> {
    let digits = |t: &str| -> Option<(u32, usize)> {
        let n = t.chars().take_while(char::is_ascii_digit).count();
        (n > 0).then(|| (t[..n].parse().ok()).map(|v| (v, n)))?
    };
    let (a, n1) = digits(s)?;
    let sep = s[n1..].chars().next()?;
    if !matches!(sep, '-' | '.' | '/') {
        return None;
    }
    let rest = &s[n1 + 1..];
    let (b, n2) = digits(rest)?;
    if !rest[n2..].starts_with(sep) {
        return None;
    }
    let (c, n3) = digits(&rest[n2 + 1..])?;
    if rest[n2 + 1 + n3..]
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit())
    {
        return None;
    }
    match (n1, n2, n3) {
        (4, 1..=2, 1..=2) => valid(a, b, c),
        (1..=2, 1..=2, 4) => valid(c, b, a),
        _ => None,
    }
}

const MONTHS_RU: [&str; 12] = [
    "январ",
    "феврал",
    "март",
    "апрел",
    "ма",
    "июн",
    "июл",
    "август",
    "сентябр",
    "октябр",
    "ноябр",
    "декабр",
];

/// `12 марта 2020`, `«16» февраля 2008 г.` at the start of `s` (lowercase).
fn russian_date(s: &str) -> Option<(u32, u32, u32)> {
    let s = s.trim_start_matches(['«', '"']);
    let n = s.chars().take_while(char::is_ascii_digit).count();
    if !(1..=2).contains(&n) {
        return None;
    }
    let d: u32 = s[..n].parse().ok()?;
    let rest = s[n..].trim_start_matches(['»', '"']).trim_start();
    let word: String = rest.chars().take_while(|c| c.is_alphabetic()).collect();
    let m = MONTHS_RU.iter().position(|p| {
        word.starts_with(p)
            && (word.len() - p.len() <= 4)
            && (*p != "ма" || word == "мая" || word == "май")
    })? as u32
        + 1;
    let rest = rest[word.len()..].trim_start();
    let y_len = rest.chars().take_while(char::is_ascii_digit).count();
    if y_len != 4 {
        return None;
    }
    valid(rest[..4].parse().ok()?, m, d)
}

const MONTHS_EN: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// `March 1, 2020`, `1 March 2020` at the start of `s` (lowercase).
fn english_date(s: &str) -> Option<(u32, u32, u32)> {
    let s = s.trim_start_matches([':', ' ']);
    let word: String = s.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    if let Some(m) = MONTHS_EN
        .iter()
        .position(|p| word == *p || (word.len() >= 3 && p.starts_with(&word)))
    {
        let rest = s[word.len()..].trim_start_matches(['.', ' ']);
        let n = rest.chars().take_while(char::is_ascii_digit).count();
        let d: u32 = rest.get(..n)?.parse().ok()?;
        let rest = rest[n..].trim_start_matches([',', ' ']);
        let y: u32 = rest.get(..4)?.parse().ok()?;
        return valid(y, m as u32 + 1, d);
    }
    let n = s.chars().take_while(char::is_ascii_digit).count();
    if !(1..=2).contains(&n) {
        return None;
    }
    let d: u32 = s[..n].parse().ok()?;
    let rest = s[n..].trim_start();
    let word: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    let m = MONTHS_EN
        .iter()
        .position(|p| word == *p || (word.len() >= 3 && p.starts_with(&word)))?;
    let rest = rest[word.len()..].trim_start_matches(['.', ',', ' ']);
    let y: u32 = rest.get(..4)?.parse().ok()?;
    valid(y, m as u32 + 1, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_normative_documents_own_dates_are_read() {
        let sp = "СВОД ПРАВИЛ\nСП 47.13330.2016\nИНЖЕНЕРНЫЕ ИЗЫСКАНИЯ ДЛЯ СТРОИТЕЛЬСТВА\n\
                  Дата введения 2017-07-01\nУТВЕРЖДЕН приказом Министерства строительства и \
                  жилищно-коммунального хозяйства Российской Федерации от 30 декабря 2016 г. № 1033/пр";
        let s = stated(sp);
        assert_eq!(s.effective.as_deref(), Some("2017-07-01"));
        assert_eq!(s.adopted.as_deref(), Some("2016-12-30"));
        assert_eq!(
            (s.date().as_deref(), s.created().as_deref()),
            (Some("2017-07-01"), Some("2016-12-30"))
        );
        // An act's header and its later revisions: the latest revision is the date.
        let act = "ПРАВИТЕЛЬСТВО РОССИЙСКОЙ ФЕДЕРАЦИИ\nПОСТАНОВЛЕНИЕ\nот 16 февраля 2008 г. N 87\n\
                   О СОСТАВЕ РАЗДЕЛОВ ПРОЕКТНОЙ ДОКУМЕНТАЦИИ\n(ред. от 21.12.2009)\nРедакция от 27.05.2022";
        let s = stated(act);
        assert_eq!(s.adopted.as_deref(), Some("2008-02-16"));
        assert_eq!(s.revised.as_deref(), Some("2022-05-27"));
        assert_eq!(s.date().as_deref(), Some("2022-05-27"));
        // English.
        let en =
            "Pump Station Design Standard\nApproved: March 3, 2019\nEffective date: 2019-06-01\n";
        let s = stated(en);
        assert_eq!(
            (s.adopted.as_deref(), s.effective.as_deref()),
            (Some("2019-03-03"), Some("2019-06-01"))
        );
        // A date far into the text, or none, is not the document's.
        assert!(stated(&format!(
            "{}Дата введения 2017-07-01",
            "слово ".repeat(2000)
        ))
        .is_empty());
        assert!(stated("Нормы проектирования без дат.").is_empty());
    }

    #[test]
    fn dates_are_read_in_every_form() {
        for (text, want) in [
            ("2017-06-17", (2017, 6, 17)),
            ("17.06.2017", (2017, 6, 17)),
            ("12 марта 2020 г.", (2020, 3, 12)),
            ("«16» февраля 2008", (2008, 2, 16)),
            ("1 мая 2021", (2021, 5, 1)),
            ("march 1, 2020", (2020, 3, 1)),
            ("1 march 2020", (2020, 3, 1)),
        ] {
            assert_eq!(date_at(text), Some(want), "{text}");
        }
        for not in [
            "32.01.2020",
            "2020-13-01",
            "12 мартобря 2020",
            "1.2.3",
            "12345",
        ] {
            assert_eq!(date_at(not), None, "{not}");
        }
    }
}
