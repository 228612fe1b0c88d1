//! Titles that name the document. A PDF's or a Word file's title property is often not its
//! title: a download site's boilerplate ("Скачать …"), a URL, a site's name, a slogan, a file
//! name, or nothing; and its first line is often not the title either (the issuer above an
//! act, "Зарегистрировано в Минюсте …"). The title is chosen from the document's structure
//! and layout first, and from a short list of boilerplate patterns second:
//!
//! 1. a standard's designation and name, where its first page sets the designation on a line
//!    of its own (`СП 47.13330.2016 Инженерные изыскания для строительства. Основные
//!    положения`);
//! 2. a legal act's type, issuer, date, number and name, where its first lines lay out an
//!    act's header (`Постановление Правительства РФ от 16.02.2008 № 87 "О составе разделов
//!    проектной документации и требованиях к их содержанию"`);
//! 3. the title property, when it is not boilerplate and its words are the document's own (a
//!    slogan or a site's name is not in the text), completed from the first lines when the
//!    tool that wrote it cut it;
//! 4. the format's own candidate: the `Title`-styled paragraph or first heading (DOCX);
//! 5. the lines set in the first page's largest type (PDF);
//! 6. the first line that reads like a title.
//!
//! A title taken from lines never ends mid-phrase: a line the next one continues (it ends on
//! a preposition, a conjunction, a comma or a hyphen, or the next begins in lower case) is
//! joined to it.

/// One line of a document's first page (PDF) or first paragraphs (DOCX), in reading order.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub text: String,
    /// The type size (PDF, scaled points); 0 where the format does not say.
    pub size: f32,
}

impl Line {
    pub fn new(text: impl Into<String>, size: f32) -> Line {
        Line {
            text: text.into(),
            size,
        }
    }
}

/// What a converter knows of a document's title.
pub struct Evidence<'a> {
    /// The title property (PDF `Title`, DOCX `dc:title`).
    pub property: Option<&'a str>,
    /// The first lines, in reading order.
    pub lines: &'a [Line],
    /// The format's own candidate after the property (DOCX: the `Title` style or the first
    /// heading).
    pub styled: Option<&'a str>,
    /// The text of the first pages, for checking that a property's words are the document's.
    pub text: &'a str,
}

/// Lines read for a standard's designation or an act's header.
const HEAD_LINES: usize = 40;
/// A title longer than this is not a title.
const MAX_TITLE_CHARS: usize = 300;

/// The title, or `None` when nothing in the document reads like one (the caller falls back to
/// the file name).
pub fn choose(e: &Evidence) -> Option<String> {
    let head = &e.lines[..e.lines.len().min(HEAD_LINES)];
    let property = e
        .property
        .map(str::trim)
        .filter(|p| !is_boilerplate(p) && words_are_in(p, e.text));
    if let Some(t) = standard(head) {
        // A property that names the same standard with more words wins.
        let designation = normalized(designation_at(&t).map_or(t.as_str(), |(d, _)| d));
        return Some(match property {
            Some(p) if p.len() > t.len() && normalized(p).starts_with(&designation) => p.to_owned(),
            _ => t,
        });
    }
    if let Some(t) = legal_act(head) {
        return Some(t);
    }
    if let Some(p) = property {
        return Some(complete_from_lines(p, head));
    }
    if let Some(s) = e
        .styled
        .map(str::trim)
        .filter(|s| !s.is_empty() && !is_boilerplate(s))
    {
        return Some(s.to_owned());
    }
    largest_type(e.lines).or_else(|| first_title_line(head))
}

/// Whether a line is about the file rather than the document: a download site's banner, a
/// URL or a file name, a registration stamp, a legal database's note, a page counter, a
/// placeholder, or nothing but digits and punctuation.
pub fn is_boilerplate(s: &str) -> bool {
    let l = s.trim().to_lowercase();
    if !l.chars().any(char::is_alphabetic) {
        return true;
    }
    const STARTS: &[&str] = &[
        "скачать",
        "скачано с",
        "download",
        "зарегистрировано в минюсте",
        "зарегистрирован в минюсте",
        "документ предоставлен",
        "источник публикации",
        "примечание к документу",
        "актуально на",
        "дата сохранения",
        "microsoft word - ",
        "microsoft powerpoint - ",
        "untitled",
        "без названия",
        "документ1",
        "document1",
        "страница ",
        "page ",
        "www.",
        "http://",
        "https://",
    ];
    if STARTS.iter().any(|p| l.starts_with(p)) {
        return true;
    }
    // Legal databases and download sites that stamp their name on what they serve.
    const SITES: &[&str] = &[
        "консультантплюс",
        "consultantplus",
        "consultant.ru",
        "garant.ru",
        "гарант.ру",
        "docs.cntd.ru",
        "meganorm",
        "stroyinf",
        "скачать бесплатно",
        "free download",
    ];
    if SITES.iter().any(|p| l.contains(p)) {
        return true;
    }
    // A short line that carries a web address is a header or a footer.
    if (l.contains("www.") || l.contains("http://") || l.contains("https://"))
        && l.chars().count() <= 80
    {
        return true;
    }
    // A domain or a file name on its own.
    let one_word = !l.contains(char::is_whitespace);
    const ENDINGS: &[&str] = &[
        ".pdf", ".doc", ".docx", ".rtf", ".txt", ".htm", ".html", ".ru", ".com", ".org", ".net",
        ".рф",
    ];
    one_word && ENDINGS.iter().any(|ext| l.ends_with(ext))
}

/// Whether most of `title`'s terms (three in four, as the analyzer stems them) occur in
/// `text`: a slogan or a site's name in the title property does not, a title in other word
/// forms than the page's ("Caching at the Edge" over "edge caches") does.
fn words_are_in(title: &str, text: &str) -> bool {
    let analyzer = docloupe::analyze::Analyzer::new();
    let words = analyzer.terms(title);
    if words.is_empty() {
        return normalized(text).contains(&normalized(title));
    }
    let known: std::collections::HashSet<String> = analyzer.terms(text).into_iter().collect();
    let found = words.iter().filter(|w| known.contains(*w)).count();
    found * 4 >= words.len() * 3
}

/// Lowercase, `ё` as `е`, runs of whitespace as one space.
fn normalized(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
        .replace('ё', "е")
}

/// The kinds of normative document whose designation leads their title, each compound one
/// before the kind it begins with.
const STANDARD_KINDS: &[&str] = &[
    "ГОСТ Р ИСО/МЭК",
    "ГОСТ Р ИСО",
    "ГОСТ Р МЭК",
    "ГОСТ Р ЕН",
    "ГОСТ ISO",
    "ГОСТ IEC",
    "ГОСТ EN",
    "ГОСТ Р",
    "ГОСТ",
    "СанПиН",
    "СНиП",
    "СП",
    "СН",
    "ТР ТС",
    "ТР ЕАЭС",
    "ТУ",
    "ОСТ",
    "РД",
    "СТО",
    "ВСН",
    "МДС",
    "НПБ",
    "ПБ",
    "ISO/IEC",
    "ISO",
    "IEC",
    "DIN EN",
    "DIN",
    "BS EN",
    "EN",
    "ASTM",
];

/// The designation `line` begins with (`СП 47.13330.2016`, `ГОСТ Р 51872-2002`, `СНиП
/// 2.04.01-85*`, `ISO 9001:2015`) and the rest of the line: a kind (in any case), a space,
/// then a number of at least two characters with a digit, made of digits, letters after a
/// digit (`1033/пр` aside), dots, dashes, slashes, colons and an asterisk.
fn designation_at(line: &str) -> Option<(&str, &str)> {
    let line = line.trim();
    for kind in STANDARD_KINDS {
        let Some(rest) = strip_prefix_any_case(line, kind) else {
            continue;
        };
        let Some(rest) = rest.strip_prefix([' ', '\u{a0}']) else {
            continue;
        };
        let rest = rest.trim_start();
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || ".-–/:*".contains(c)))
            .unwrap_or(rest.len());
        let number = rest[..end].trim_end_matches(['.', '-', '–', ':', '/']);
        if number.len() >= 2 && number.starts_with(|c: char| c.is_ascii_digit()) {
            let taken = line.len() - rest.len() + number.len();
            return Some((&line[..taken], line[taken..].trim()));
        }
    }
    None
}

/// `s` without `prefix` at its start, letters compared in either case.
fn strip_prefix_any_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let mut chars = s.char_indices();
    for p in prefix.chars() {
        let (_, c) = chars.next()?;
        if !c.to_lowercase().eq(p.to_lowercase()) {
            return None;
        }
    }
    let at = chars.next().map_or(s.len(), |(i, _)| i);
    Some(&s[at..])
}

/// A standard's title: its designation on a line of its own (or before a name in capitals)
/// among the first lines, and the name that follows it, in capitals or in the designation's
/// type, up to the English name, an edition note or body text.
fn standard(lines: &[Line]) -> Option<String> {
    let (at, designation, rest) = lines.iter().enumerate().find_map(|(i, l)| {
        let (d, rest) = designation_at(&l.text)?;
        // A designation in running text ("по ГОСТ 21.101 …") is not a title.
        (rest.is_empty() || is_capitals(rest)).then(|| (i, d.to_owned(), rest.to_owned()))
    })?;
    let cyrillic = |s: &str| s.chars().any(|c| ('\u{400}'..='\u{4ff}').contains(&c));
    let russian = cyrillic(&designation);
    let size = lines[at].size;
    let mut name: Vec<String> = Vec::new();
    if !rest.is_empty() {
        name.push(sentence_case(&rest));
    }
    for l in &lines[at + 1..] {
        let t = l.text.trim();
        let skip = t.is_empty() || is_kind_line(t) || is_edition_note(t) || is_boilerplate(t);
        if skip || designation_at(t).is_some() {
            if name.is_empty() && !is_edition_note(t) {
                continue;
            }
            break;
        }
        // The English name under a Russian one.
        if russian && !cyrillic(t) && t.chars().any(|c| c.is_ascii_alphabetic()) {
            break;
        }
        let same_type = size > 0.0 && l.size > 0.0 && (l.size - size).abs() <= size * 0.25;
        if is_capitals(t) || same_type {
            name.push(sentence_case(t));
            continue;
        }
        // A name set in ordinary case on the line after the designation.
        if name.is_empty() && size == 0.0 && starts_upper(t) && t.chars().count() <= 200 {
            name.push(t.to_owned());
            continue;
        }
        break;
    }
    let name = join_name(&name);
    Some(if name.is_empty() {
        designation
    } else {
        format!("{designation} {name}")
    })
}

/// "Свод правил", "Национальный стандарт Российской Федерации", "Межгосударственный
/// стандарт", "Строительные нормы и правила": the line that names the kind of document.
fn is_kind_line(t: &str) -> bool {
    let l = t.to_lowercase();
    t.chars().count() <= 80
        && [
            "свод правил",
            "стандарт",
            "строительные нормы",
            "санитарные правила",
            "технический регламент",
            "international standard",
            "standard",
        ]
        .iter()
        .any(|k| l.starts_with(k) || l.contains(&format!(" {k}")))
}

/// "Издание официальное", "Актуализированная редакция СНиП …", "Дата введения …": notes
/// about the edition, not part of the name.
fn is_edition_note(t: &str) -> bool {
    let l = t.to_lowercase();
    [
        "издание официальное",
        "официальное издание",
        "актуализированная редакция",
        "дата введения",
        "введен впервые",
        "взамен",
        "редакция",
        "(ред.",
        "с изменени",
        "official edition",
        "edition",
    ]
    .iter()
    .any(|k| l.starts_with(k))
}

/// Pieces of a name joined: "Инженерные изыскания для строительства", "Основные положения"
/// → "Инженерные изыскания для строительства. Основные положения"; a piece the next
/// continues (see [`continues_next`]) is joined with a space.
fn join_name(pieces: &[String]) -> String {
    let mut out = String::new();
    for p in pieces.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        if out.is_empty() {
            out.push_str(p);
            continue;
        }
        if continues_next(&out) || p.starts_with(char::is_lowercase) {
            out.push(' ');
            out.push_str(&lower_first(p));
        } else {
            if !out.ends_with(['.', '!', '?', ':']) {
                out.push('.');
            }
            out.push(' ');
            out.push_str(p);
        }
    }
    out
}

/// Whether a line of a title is cut before its end: it ends on a hyphen, a comma, an opening
/// bracket or quote, or on a word that cannot end a title (a preposition, a conjunction).
fn continues_next(s: &str) -> bool {
    let s = s.trim_end();
    if s.ends_with(['-', ',', '(', '«', '"', '—', '–', '/', '&']) {
        return true;
    }
    let last = s
        .rsplit(char::is_whitespace)
        .next()
        .unwrap_or("")
        .to_lowercase();
    const OPEN: &[&str] = &[
        "и",
        "в",
        "во",
        "на",
        "для",
        "по",
        "с",
        "со",
        "к",
        "ко",
        "о",
        "об",
        "от",
        "из",
        "при",
        "или",
        "а",
        "но",
        "без",
        "до",
        "за",
        "над",
        "под",
        "через",
        "между",
        "их",
        "of",
        "for",
        "and",
        "or",
        "the",
        "a",
        "an",
        "to",
        "in",
        "on",
        "with",
        "by",
        "from",
        "at",
        "as",
    ];
    OPEN.contains(&last.as_str())
}

/// Whether `s`'s letters (at least three) are all capitals.
fn is_capitals(s: &str) -> bool {
    let mut letters = s.chars().filter(|c| c.is_alphabetic()).peekable();
    letters.peek().is_some()
        && s.chars().filter(|c| c.is_alphabetic()).count() >= 3
        && letters.all(|c| !c.is_lowercase())
}

fn starts_upper(s: &str) -> bool {
    s.chars()
        .find(|c| c.is_alphabetic())
        .is_some_and(char::is_uppercase)
}

/// Abbreviations kept in capitals when a line of capitals is put in sentence case.
const KEEP_CAPS: &[&str] = &[
    "РФ", "СССР", "СНГ", "ЕАЭС", "ЖКХ", "МКД", "ГВС", "ХВС", "ОДПУ", "ИПУ", "ТЭЦ", "ЛЭП", "ПУЭ",
    "НДС", "ИНН", "СП", "ГОСТ", "СНИП", "ISO", "IEC",
];

/// A line of capitals in sentence case: its first letter a capital, the rest lower case but
/// for the abbreviations in [`KEEP_CAPS`] and words with digits. Other lines as they are.
pub fn sentence_case(s: &str) -> String {
    let s = s.trim();
    if !is_capitals(s) {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut first = true;
    for (i, word) in s.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let bare: String = word.chars().filter(|c| c.is_alphanumeric()).collect();
        let keep = word.chars().any(|c| c.is_ascii_digit())
            || (!bare.is_empty()
                && KEEP_CAPS
                    .iter()
                    .any(|k| k.eq_ignore_ascii_case(&bare) || *k == bare));
        for c in word.chars() {
            if !c.is_alphabetic() || keep {
                out.push(c);
            } else if first {
                out.extend(c.to_uppercase());
            } else {
                out.extend(c.to_lowercase());
            }
            if c.is_alphabetic() {
                first = false;
            }
        }
    }
    out
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(f) if !is_capitals(s) => f.to_lowercase().chain(chars).collect(),
        _ => s.to_owned(),
    }
}

/// The types of act a header names, as a title names them.
const ACT_KINDS: &[(&str, &str)] = &[
    (
        "ФЕДЕРАЛЬНЫЙ КОНСТИТУЦИОННЫЙ ЗАКОН",
        "Федеральный конституционный закон",
    ),
    ("ФЕДЕРАЛЬНЫЙ ЗАКОН", "Федеральный закон"),
    ("ПОСТАНОВЛЕНИЕ", "Постановление"),
    ("РАСПОРЯЖЕНИЕ", "Распоряжение"),
    ("ПРИКАЗ", "Приказ"),
    ("УКАЗ", "Указ"),
    ("РЕШЕНИЕ", "Решение"),
    ("ОПРЕДЕЛЕНИЕ", "Определение"),
    ("ПИСЬМО", "Письмо"),
    ("ЗАКОН", "Закон"),
];

/// A Russian legal act's header among the first lines: the issuer in capitals, the act's type
/// on a line of its own (`ПОСТАНОВЛЕНИЕ`), `от <date> [г.] № <number>`, and the name (in
/// capitals, or the first line after that starts in upper case), as `Постановление
/// Правительства РФ от 16.02.2008 № 87 "О составе разделов …"`. A date or a number is
/// needed: a line "ПРИКАЗ" alone is not a header.
fn legal_act(lines: &[Line]) -> Option<String> {
    let (at, kind) = lines.iter().enumerate().find_map(|(i, l)| {
        let t = l.text.trim().trim_end_matches('.');
        ACT_KINDS
            .iter()
            .find(|(k, _)| t.to_uppercase() == *k)
            .map(|(_, name)| (i, *name))
    })?;
    let mut issuer: Vec<&str> = Vec::new();
    for l in lines[..at].iter().rev() {
        let t = l.text.trim();
        if is_capitals(t) && !is_boilerplate(t) && t.chars().count() <= 200 {
            issuer.insert(0, t);
        } else if !t.is_empty() || !issuer.is_empty() {
            break;
        }
    }
    let (mut date, mut number) = (None, None);
    let mut name: Vec<String> = Vec::new();
    for l in &lines[at + 1..] {
        let t = l.text.trim();
        if name.is_empty() {
            if t.is_empty() {
                continue;
            }
            if let Some((d, n)) = date_and_number(t) {
                date = date.or(d);
                number = number.or(n);
                continue;
            }
            // A place ("Москва", "г. Москва") between the number and the name.
            if t.chars().count() <= 24 && !is_capitals(t) && !t.starts_with(['О', 'о']) {
                continue;
            }
        }
        if t.is_empty() {
            break;
        }
        if is_capitals(t) {
            name.push(t.to_owned());
            continue;
        }
        if name.is_empty() && starts_upper(t) && t.chars().count() <= MAX_TITLE_CHARS {
            name.push(t.to_owned());
        }
        break;
    }
    // The name's lines of capitals are one phrase: in sentence case as a whole.
    let name = sentence_case(&name.join(" "));
    let name = name.trim_end_matches('.').trim();
    if name.is_empty() || (date.is_none() && number.is_none()) {
        return None;
    }
    let mut title = kind.to_owned();
    if let Some(by) = issuer_genitive(&issuer.join(" ")) {
        title.push(' ');
        title.push_str(&by);
    }
    if let Some(d) = date {
        title.push_str(&format!(" от {d}"));
    }
    if let Some(n) = number {
        title.push_str(&format!(" № {n}"));
    }
    title.push_str(&format!(" \"{name}\""));
    Some(title)
}

/// `от 16 февраля 2008 г. N 87`, `от 12.03.2020 № 123/пр`: the date (`DD.MM.YYYY`) and the
/// number where a line gives them.
fn date_and_number(t: &str) -> Option<(Option<String>, Option<String>)> {
    let lower = t.to_lowercase();
    let rest = lower.strip_prefix("от ")?;
    let date = super::dates::date_at(rest).map(|(y, m, d)| format!("{d:02}.{m:02}.{y:04}"));
    let number = t
        .find(['№', 'N'])
        .map(|i| t[i..].trim_start_matches(['№', 'N']).trim())
        .and_then(|n| n.split_whitespace().next())
        .filter(|n| n.chars().any(|c| c.is_ascii_digit()))
        .map(str::to_owned);
    (date.is_some() || number.is_some()).then_some((date, number))
}

/// The issuer as a title names it, in the genitive: "ПРАВИТЕЛЬСТВО РОССИЙСКОЙ ФЕДЕРАЦИИ" →
/// "Правительства РФ", "МИНИСТЕРСТВО СТРОИТЕЛЬСТВА И ЖИЛИЩНО-КОММУНАЛЬНОГО ХОЗЯЙСТВА
/// РОССИЙСКОЙ ФЕДЕРАЦИИ" → "Министерства строительства и жилищно-коммунального хозяйства
/// РФ": the head noun (and the adjectives before it) put in the genitive; what follows it is
/// in the genitive already.
fn issuer_genitive(issuer: &str) -> Option<String> {
    let issuer = issuer.trim();
    if issuer.is_empty() {
        return None;
    }
    let s = sentence_case(issuer).replace("российской федерации", "РФ");
    let mut words: Vec<String> = s.split(' ').map(str::to_owned).collect();
    for w in words.iter_mut() {
        let (genitive, head) = genitive(w);
        *w = genitive;
        if head {
            break;
        }
    }
    Some(words.join(" "))
}

/// One word of an issuer in the genitive, and whether it was the head noun: adjectives
/// (`Федеральное` → `Федерального`) go on to the next word.
fn genitive(word: &str) -> (String, bool) {
    let l = word.to_lowercase();
    let n = word.chars().count();
    let cut = |k: usize, add: &str| word.chars().take(n - k).collect::<String>() + add;
    if l.ends_with("ое") || l.ends_with("ый") || l.ends_with("ой") {
        (cut(2, "ого"), false)
    } else if l.ends_with("ий") {
        (cut(2, "его"), false)
    } else if l.ends_with("ая") {
        (cut(2, "ой"), false)
    } else if l.ends_with("ия") || l.ends_with('я') {
        (cut(1, "и"), true)
    } else if l.ends_with('о') {
        (cut(1, "а"), true)
    } else if l.ends_with('а') {
        (cut(1, "ы"), true)
    } else if l.ends_with(['т', 'р', 'н', 'д', 'л', 'с']) {
        (format!("{word}а"), true)
    } else {
        (word.to_owned(), true)
    }
}

/// The run of lines set in the first page's largest type (within 10 %, and larger than the
/// page's smallest: a page in one size has no title by type), boilerplate aside, holding at
/// least eight letters: joined.
fn largest_type(lines: &[Line]) -> Option<String> {
    let mut sizes: Vec<f32> = lines
        .iter()
        .filter(|l| l.size > 0.0 && !is_boilerplate(&l.text))
        .map(|l| l.size)
        .collect();
    if sizes.is_empty() {
        return None;
    }
    sizes.sort_by(f32::total_cmp);
    let smallest = sizes[0];
    sizes.dedup_by(|a, b| (*a - *b).abs() <= *b * 0.1);
    for &size in sizes.iter().rev() {
        if size <= smallest * 1.1 {
            break;
        }
        let big = |l: &Line| (l.size - size).abs() <= size * 0.1 && !is_boilerplate(&l.text);
        let Some(start) = lines.iter().position(&big) else {
            continue;
        };
        let run: Vec<&str> = lines[start..]
            .iter()
            .take_while(|l| big(l))
            .map(|l| l.text.trim())
            .collect();
        let text = run.join(" ");
        let letters = text.chars().filter(|c| c.is_alphabetic()).count();
        if letters >= 8 && text.chars().count() <= MAX_TITLE_CHARS {
            return Some(sentence_case_if_russian_capitals(&text));
        }
    }
    None
}

/// Russian titles set in capitals read better in sentence case (English ones may be names in
/// capitals: kept).
fn sentence_case_if_russian_capitals(s: &str) -> String {
    if is_capitals(s) && s.chars().any(|c| ('\u{400}'..='\u{4ff}').contains(&c)) {
        sentence_case(s)
    } else {
        s.to_owned()
    }
}

/// The first line that reads like a title (boilerplate aside, at least three letters, not a
/// sentence), with the lines that continue it, at most [`MAX_TITLE_CHARS`].
fn first_title_line(lines: &[Line]) -> Option<String> {
    let start = lines.iter().position(|l| {
        let t = l.text.trim();
        !is_boilerplate(t) && t.chars().filter(|c| c.is_alphabetic()).count() >= 3
    })?;
    let mut title = lines[start].text.trim().to_owned();
    for l in &lines[start + 1..] {
        let t = l.text.trim();
        if t.is_empty() || !(continues_next(&title) || t.starts_with(char::is_lowercase)) {
            break;
        }
        title.push(' ');
        title.push_str(t);
    }
    let title = title
        .trim_end_matches([',', '-', '—', '–'])
        .trim()
        .to_owned();
    (title.chars().count() <= MAX_TITLE_CHARS && !title.ends_with('.')).then_some(title)
}

/// A title property that its writer cut (it ends mid-phrase), completed from the first lines
/// that begin with it.
fn complete_from_lines(property: &str, lines: &[Line]) -> String {
    if !continues_next(property) {
        return property.to_owned();
    }
    let want = normalized(property);
    for start in 0..lines.len() {
        let mut text = String::new();
        for l in &lines[start..] {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(l.text.trim());
            let n = normalized(&text);
            if n.len() > want.len() && n.starts_with(&want) && !continues_next(&text) {
                return text;
            }
            if !want.starts_with(&n) {
                break;
            }
        }
    }
    property.to_owned()
}

#[cfg(test)]
mod tests;
