use super::*;

#[test]
fn stop_lists_are_sorted_for_binary_search() {
    assert!(STOP_EN.windows(2).all(|w| w[0] < w[1]));
    assert!(KEYWORDS.windows(2).all(|w| w[0] < w[1]));
    assert!(KEYWORDS.iter().all(|k| STOP_EN.contains(k)));
    assert!(
        STOP_RU.windows(2).all(|w| w[0] < w[1]),
        "{:?}",
        STOP_RU.windows(2).find(|w| w[0] >= w[1])
    );
}

#[test]
fn russian_word_forms_share_a_term() {
    let a = Analyzer::new();
    assert_eq!(a.terms("документации"), a.terms("документация"));
    assert_eq!(a.terms("Документация"), a.terms("документацию"));
    assert_eq!(a.terms("ёлка"), a.terms("елки"));
}

#[test]
fn english_word_forms_share_a_term() {
    let a = Analyzer::new();
    assert_eq!(a.terms("configuring caches"), a.terms("configure cache"));
}

#[test]
fn stop_words_vanish_and_identifiers_split() {
    let a = Analyzer::new();
    assert_eq!(
        a.terms("the cache.max_bytes option"),
        vec!["cach", "max", "byte", "option"]
    );
    assert_eq!(a.terms("и в что"), Vec::<String>::new());
}

#[test]
fn keywords_are_terms_from_version_2_and_not_before() {
    let (v1, v2) = (Analyzer::for_version(1), Analyzer::for_version(2));
    assert_eq!(v1.terms("If expressions"), vec!["express"]);
    assert_eq!(v2.terms("If expressions"), vec!["if", "express"]);
    assert_eq!(v2.terms("cast it as an i32"), vec!["cast", "as", "i32"]);
    assert_eq!(
        v2.terms("for x in the list"),
        vec!["for", "x", "in", "list"]
    );
    assert_eq!(v1.terms("for x in the list"), vec!["x", "list"]);
}

#[test]
fn a_longer_query_drops_its_keywords_and_a_short_one_keeps_them() {
    let terms = |a: &Analyzer, q: &str| -> Vec<String> {
        a.query_tokens(q).into_iter().map(|t| t.term).collect()
    };
    let (v1, v2) = (Analyzer::for_version(1), Analyzer::for_version(2));
    assert_eq!(terms(&v2, "for loop"), vec!["for", "loop"]);
    assert_eq!(
        terms(&v2, "if let else branches"),
        vec!["if", "let", "els", "branch"]
    );
    assert_eq!(
        terms(&v2, "how to iterate over a map in Go"),
        vec!["iter", "over", "map", "go"]
    );
    assert_eq!(terms(&v1, "for loop"), vec!["loop"]);
    // Offsets still point into the query.
    let t = v2.query_tokens("a for loop");
    assert_eq!((t[0].start, t[0].end, t[1].start), (2, 5, 6));
}

#[test]
fn abbreviations_are_told_from_words_and_their_definitions_found() {
    for a in ["ОДПУ", "ГВС", "TLS", "СНиП", "iOS", "GitHub", "МКД"] {
        assert!(looks_like_abbreviation(a), "{a}");
    }
    for w in ["одного", "Linux", "ОДПУАБВГ", "A", "X11", "Водоснабжение"]
    {
        assert!(!looks_like_abbreviation(w), "{w}");
    }
    let text = "Термины и сокращения\nОДПУ — общедомовой прибор учёта;\nГВС: горячее \
                водоснабжение.\nИндивидуальный прибор учёта (ИПУ) ставят в квартире. \
                ХВС (холодное водоснабжение) подают по вводу. Показания ОДПУ снимают \
                ежемесячно. По ГОСТ (2020) и СП - 3.";
    assert_eq!(defined_abbreviations(text), ["ОДПУ", "ГВС", "ИПУ", "ХВС"]);
    assert!(defined_abbreviations("Счётчики ОДПУ ставят на вводе.").is_empty());
    assert_eq!(definition_term("одпу"), "\u{1}одпу");
}

/// Regression (hostile inputs, issue 59): a word split by a soft hyphen or a zero-width
/// space, or in full-width letters, found nothing. From version 3 they are the words a
/// reader sees; before it, as they were.
#[test]
fn text_is_read_as_displayed_from_version_3() {
    let a = Analyzer::new();
    let same = |shown: &str, typed: &str| assert_eq!(a.terms(shown), a.terms(typed), "{shown:?}");
    same("in\u{AD}dex", "index");
    same("cache\u{200B}able", "cacheable");
    same("\u{FEFF}config", "config");
    same("ｃａｃｈｅ ２０２４", "cache 2024");
    // Offsets still count every character, the invisible ones too.
    let t = a.tokens("a in\u{AD}dex");
    assert_eq!((t[0].start, t[0].end), (2, 8));
    // Bundles of version 2 are queried as they were built.
    let v2 = Analyzer::for_version(2);
    assert_eq!(v2.terms("in\u{AD}dex"), v2.terms("in dex"));
}

#[test]
fn offsets_are_in_chars() {
    let a = Analyzer::new();
    let t = a.tokens("Где документация?");
    assert_eq!(t.len(), 1);
    assert_eq!((t[0].start, t[0].end), (4, 16));
}

#[test]
fn language_detection() {
    assert_eq!(
        Language::detect("Установка пакета через `npm install`"),
        Language::Ru
    );
    assert_eq!(
        Language::detect("Install the package with npm"),
        Language::En
    );
}

/// A thread keeps the terms of the words it has analyzed, for each keyword setting apart:
/// with the words seen before in the other setting, in either order, and past the bound (the
/// thread starts over), the terms are those each analysis gives alone in a thread of its own.
#[test]
fn kept_terms_are_those_of_a_fresh_thread() {
    const TEXTS: [&str; 5] = [
        "for x in the list",
        "how to iterate over a map in Go for each key if it is set",
        "If expressions and for loops",
        "Как настроить кэш для развёртывания сайта",
        "Mixed utf8 x64 identifiers and a verylongwordthatgoesonandonandonandonandonandonandon",
    ];
    // Each text through version 1, version 2 and version 2's query rules.
    let one = |text: usize, way: usize| -> Vec<String> {
        let a = Analyzer::for_version(1 + (way > 0) as u32);
        match way {
            2 => a
                .query_tokens(TEXTS[text])
                .into_iter()
                .map(|t| t.term)
                .collect(),
            _ => a.terms(TEXTS[text]),
        }
    };
    let calls: Vec<(usize, usize)> = (0..TEXTS.len())
        .flat_map(|t| (0..3).map(move |w| (t, w)))
        .collect();
    let alone: Vec<Vec<String>> = calls
        .iter()
        .map(|&(t, w)| std::thread::spawn(move || one(t, w)).join().unwrap())
        .collect();
    let in_turn = move |order: &[(usize, usize)]| -> Vec<Vec<String>> {
        order.iter().map(|&(t, w)| one(t, w)).collect()
    };
    let reversed: Vec<(usize, usize)> = calls.iter().rev().copied().collect();
    let (forward, backward, after) = std::thread::spawn({
        let (calls, reversed) = (calls.clone(), reversed.clone());
        move || {
            let forward = in_turn(&calls);
            let backward = in_turn(&reversed);
            // Past the bound: more distinct words than a thread keeps.
            let a = Analyzer::for_version(2);
            for i in 0..super::KEPT_TERMS + 10 {
                a.terms(&format!("w{i}x"));
            }
            (forward, backward, in_turn(&calls))
        }
    })
    .join()
    .unwrap();
    assert_eq!(forward, alone);
    assert_eq!(backward.into_iter().rev().collect::<Vec<_>>(), alone);
    assert_eq!(after, alone);
}
