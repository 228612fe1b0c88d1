use pulldown_cmark::Options;

use super::*;

fn block(text: &str, line: u32, page: Option<u32>) -> Item {
    Item::Block(Block {
        text: text.into(),
        line_start: line,
        line_end: line,
        page,
    })
}

fn heading(level: u8, title: &str) -> Item {
    Item::Heading {
        level,
        title: title.into(),
        id: None,
        page: None,
    }
}

#[test]
fn headings_become_breadcrumbs_and_an_outline() {
    let (sections, outline) = assemble(
        "Manual",
        vec![
            block("front", 1, None),
            heading(1, "Manual"),
            block("intro", 2, None),
            heading(2, "Install"),
            heading(3, "Linux"),
            block("apt", 4, None),
            heading(2, "Install"),
            block("again", 6, None),
        ],
    );
    let got: Vec<(Vec<String>, String, &str)> = sections
        .iter()
        .map(|s| {
            (
                s.headings.clone(),
                s.anchor.clone(),
                s.blocks[0].text.as_str(),
            )
        })
        .collect();
    let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        got,
        vec![
            (v(&[]), "".into(), "front"),
            (v(&[]), "manual".into(), "intro"),
            (v(&["Install", "Linux"]), "linux".into(), "apt"),
            (v(&["Install"]), "install-1".into(), "again"),
        ]
    );
    // The tree keeps headings without text of their own.
    let levels: Vec<(u8, &str)> = outline
        .iter()
        .map(|h| (h.level, h.title.as_str()))
        .collect();
    assert_eq!(
        levels,
        vec![(1, "Manual"), (2, "Install"), (3, "Linux"), (2, "Install")]
    );
}

#[test]
fn plain_text_is_one_section_of_paragraphs_with_their_lines() {
    let doc = parse_text(
        "Release notes\n\n1.2 fixed\n  the widget.\n\n\nLast.\n",
        "changes",
    );
    assert_eq!(doc.title, "Release notes");
    assert_eq!(doc.sections.len(), 1);
    let blocks: Vec<(&str, u32, u32)> = doc.sections[0]
        .blocks
        .iter()
        .map(|b| (b.text.as_str(), b.line_start, b.line_end))
        .collect();
    assert_eq!(
        blocks,
        vec![
            ("Release notes", 1, 1),
            ("1.2 fixed the widget.", 3, 4),
            ("Last.", 7, 7)
        ]
    );
    assert_eq!(
        parse_text("A sentence, not a title.\n", "stem").title,
        "stem"
    );
    assert_eq!(parse_text("", "empty").sections[0].blocks, vec![]);
}

fn parse(src: &str) -> ParsedDoc {
    parse_markdown(src, "stem", &mut Vec::new(), "t.md")
}

#[test]
fn sections_carry_breadcrumbs_anchors_and_lines() {
    let doc = parse("---\ntitle: Guide\ndate: 2024-03-05\ntags: [a, b]\n---\n# Guide\n\nIntro text.\n\n## Install\n\nRun it.\n\n### On Linux\n\nUse apt.\n\n## Install\n\nAgain.\n");
    assert_eq!(doc.title, "Guide");
    assert_eq!(doc.front.date.as_deref(), Some("2024-03-05"));
    assert_eq!(doc.front.tags, vec!["a", "b"]);
    let s: Vec<(Vec<String>, String, u32)> = doc
        .sections
        .iter()
        .map(|s| (s.headings.clone(), s.anchor.clone(), s.blocks[0].line_start))
        .collect();
    assert_eq!(
        s,
        vec![
            (vec![], "guide".to_owned(), 8),
            (vec!["Install".to_owned()], "install".to_owned(), 12),
            (
                vec!["Install".to_owned(), "On Linux".to_owned()],
                "on-linux".to_owned(),
                16
            ),
            (vec!["Install".to_owned()], "install-1".to_owned(), 20),
        ]
    );
}

#[test]
fn title_falls_back_to_first_heading_then_file_name() {
    assert_eq!(parse("## Sub\n\ntext").title, "Sub");
    assert_eq!(parse("just text").title, "stem");
}

#[test]
fn slugs_follow_github() {
    let mut s = Slugger::default();
    assert_eq!(s.slug("Hello, World!"), "hello-world");
    assert_eq!(s.slug("Установка пакета"), "установка-пакета");
    assert_eq!(s.slug("Hello, World!"), "hello-world-1");
    assert_eq!(s.slug("`npm ci` vs. install"), "npm-ci-vs-install");
    // Collisions with explicit suffixes follow github-slugger: the counter per base
    // skips taken names and only grows.
    let mut s = Slugger::default();
    let got: Vec<String> = ["a-1", "a", "a", "a", "a-1", "a-2"]
        .iter()
        .map(|h| s.slug(h))
        .collect();
    assert_eq!(got, ["a-1", "a", "a-2", "a-3", "a-1-1", "a-2-1"]);
}

/// Regression (hostile documents): `## a-1 … ## a-N` then N × `## a` took quadratic
/// time (169 KB of markdown: 29.5 s). The suffixes tried now number at most one per
/// heading in all.
#[test]
fn colliding_headings_slug_in_linear_steps() {
    let n = 20_000;
    let mut s = Slugger::default();
    let mut anchors = std::collections::BTreeSet::new();
    for i in 1..=n {
        anchors.insert(s.slug(&format!("a-{i}")));
    }
    for _ in 0..n {
        anchors.insert(s.slug("a"));
    }
    assert_eq!(anchors.len(), 2 * n, "every heading has its own anchor");
    assert!(
        s.probes <= 2 * n,
        "{} suffixes tried for {} headings",
        s.probes,
        2 * n
    );
}

#[test]
fn bad_yaml_warns_and_goes_on() {
    let mut w = Vec::new();
    let doc = parse_markdown(
        "---\ntitle: [unclosed\n---\n# Real\n\nbody\n",
        "s",
        &mut w,
        "x.md",
    );
    assert_eq!(doc.title, "Real");
    assert_eq!(w.len(), 1);
}

#[test]
fn front_matter_that_strict_yaml_rejects_keeps_its_simple_fields() {
    // As in MicrosoftDocs/cpp-docs take-view-class.md: a flow list continued at column 1.
    let mut w = Vec::new();
    let src = "---\ntitle: take_view class\ndescription: \"API reference.\"\nms.date: 10/19/2022\nhelpviewer_keywords: [\"a\",\n\"b\"]\n---\n# take_view class (C++)\n\ntext\n";
    let doc = parse_markdown(src, "s", &mut w, "x.md");
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(doc.title, "take_view class");
    assert_eq!(doc.front.description.as_deref(), Some("API reference."));
    assert_eq!(doc.front.date.as_deref(), Some("2022-10-19"));
}

/// Regression (hostile documents): 506 bytes of nested YAML aliases ran the build out of
/// memory. Front matter with aliases is read by its simple lines only.
#[test]
fn a_yaml_alias_bomb_is_not_expanded() {
    let mut yaml = String::from("title: Bomb\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for (i, name) in ["b", "c", "d", "e", "f", "g", "h", "i"].iter().enumerate() {
        let prev = ["a", "b", "c", "d", "e", "f", "g", "h"][i];
        yaml.push_str(&format!(
            "{name}: &{name} [{}]\n",
            vec![format!("*{prev}"); 9].join(",")
        ));
    }
    let src = format!("---\n{yaml}---\n# Body\n\ntext\n");
    assert!(src.len() < 700, "{}", src.len());
    let mut w = Vec::new();
    let doc = parse_markdown(&src, "s", &mut w, "bomb.md");
    assert_eq!(doc.title, "Bomb");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("aliases"), "{w:?}");
    // Plain front matter still loads in full.
    let mut w = Vec::new();
    let doc = parse_markdown(
        "---\ntitle: T\ntags:\n  - a\n  - b\n---\nx\n",
        "s",
        &mut w,
        "x.md",
    );
    assert_eq!(doc.front.tags, ["a", "b"]);
    assert!(w.is_empty());
}

/// Regression (hostile inputs, issue 59): a file swapped for a symbolic link after the
/// folder was walked was followed, so a file outside the folder was indexed under an
/// inside name. The file read must be the one the walk found; a link the walk finds is
/// named in the warnings, not skipped in silence.
#[test]
#[cfg(unix)]
fn a_file_swapped_for_a_link_after_the_walk_is_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(docs.join("sub")).unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("page.md"), "# Secret\n\nthe vault code\n").unwrap();
    std::fs::write(docs.join("page.md"), "# Page\n\npublic text\n").unwrap();
    std::fs::write(docs.join("sub/page.md"), "# Sub\n\npublic too\n").unwrap();
    let files = discover(&docs, &mut Vec::new());
    assert_eq!(files.len(), 2);
    assert_eq!(
        read_source(&files[0], 1 << 20).unwrap(),
        b"# Page\n\npublic text\n"
    );
    // The file itself swapped for a link.
    std::fs::remove_file(docs.join("page.md")).unwrap();
    std::os::unix::fs::symlink(outside.join("page.md"), docs.join("page.md")).unwrap();
    let read = read_source(&files[0], 1 << 20);
    assert!(
        read.as_ref().is_err_and(|e| e.contains("symbolic link")),
        "{read:?}"
    );
    // A folder above it swapped for a link to another folder.
    std::fs::rename(docs.join("sub"), tmp.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(&outside, docs.join("sub")).unwrap();
    let read = read_source(&files[1], 1 << 20);
    assert!(
        read.as_ref().is_err_and(|e| e.contains("replaced")),
        "{read:?}"
    );
    // Over the limit: refused before it is read.
    std::fs::remove_file(docs.join("page.md")).unwrap();
    std::fs::remove_file(docs.join("sub")).unwrap();
    std::fs::write(docs.join("page.md"), "# Page\n\npublic text\n").unwrap();
    assert!(read_source(&discover(&docs, &mut Vec::new())[0], 4)
        .is_err_and(|e| e.contains("over the 4 byte limit")));
    // A link the walk finds is named.
    std::os::unix::fs::symlink(outside.join("page.md"), docs.join("link.md")).unwrap();
    let mut warnings = Vec::new();
    assert_eq!(discover(&docs, &mut warnings).len(), 1);
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("link.md") && w.contains("symbolic link")),
        "{warnings:?}"
    );
}

/// Regression (hostile inputs, issue 59): 10 KB of nested `- ` overflowed the stack of
/// the YAML loader. Front matter nesting deeper than a small bound is not loaded.
#[test]
fn front_matter_nested_past_the_bound_is_not_loaded() {
    for yaml in [
        format!("title: T\nx:\n{}y\n", "- ".repeat(20_000)),
        format!("? {}y\n: z\n", "- ".repeat(20_000)),
    ] {
        let mut w = Vec::new();
        let doc = parse_markdown(
            &format!("---\n{yaml}---\n# Body\n\ntext\n"),
            "s",
            &mut w,
            "x.md",
        );
        assert_eq!(doc.sections.len(), 1);
        assert!(w.len() == 1 && w[0].contains("nests deeper"), "{w:?}");
    }
    // At the bound it loads.
    let mut yaml = String::from("title: T\nx:\n");
    for level in 0..MAX_YAML_DEPTH - 1 {
        yaml.push_str(&"  ".repeat(level));
        yaml.push_str("- \n");
    }
    let mut w = Vec::new();
    let doc = parse_markdown(&format!("---\n{yaml}---\nbody\n"), "s", &mut w, "x.md");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(doc.title, "T");
}

/// Regression (hostile inputs, issue 59): a page with CR-only line ends was one heading
/// without a body. Lone CRs end lines; the line numbers are an editor's.
#[test]
fn lone_carriage_returns_end_lines() {
    let doc = parse("# Title\r\rtext one\r\r## Sub\r\rtext two\r");
    let got: Vec<(&str, &str, u32)> = doc
        .sections
        .iter()
        .map(|s| {
            (
                s.anchor.as_str(),
                s.blocks[0].text.as_str(),
                s.blocks[0].line_start,
            )
        })
        .collect();
    assert_eq!(got, [("title", "text one", 3), ("sub", "text two", 7)]);
    assert_eq!(unify_line_ends("a\r\nb\rc"), "a\r\nb\nc");
    let text = parse_text("first\r\rsecond\r", "t");
    assert_eq!(text.sections[0].blocks.len(), 2);
}

/// Regression (hostile inputs, issue 59): tables that pad to millions of cells.
#[test]
fn tables_that_pad_past_the_bound_are_read_as_text() {
    let header = format!(
        "|{}|\n|{}|\n",
        vec!["h"; 362].join("|"),
        vec!["-"; 362].join("|")
    );
    let body = format!("{header}{}\n", "x\n".repeat(724)).repeat(20);
    assert!(table_cells(&body) > MAX_PADDED_CELLS + body.len() / 2);
    let mut w = Vec::new();
    let doc = parse_markdown(&body, "t", &mut w, "t.md");
    assert!(w.len() == 1 && w[0].contains("cells"), "{w:?}");
    assert!(!doc.sections.is_empty());
    let (options, refused) = markdown_options_for("| a | b |\n|---|:-:|\n| 1 | 2 |\n");
    assert!(options.contains(Options::ENABLE_TABLES) && refused.is_none());
    assert_eq!(table_cells("> | a | b |\n> |---|---|\n> | 1 | 2 |\n"), 4);
    assert_eq!(table_cells("a\n---\n"), 0);
}

/// Regression (hostile inputs, issue 59): a 64 KiB heading made a 64 KiB breadcrumb and
/// anchor in every chunk of its section.
#[test]
fn labels_and_anchors_are_bounded() {
    let long = format!("{} tail", "word ".repeat(200));
    let doc = parse(&format!("# {long}\n\ntext\n\n## {long}\n\nmore\n"));
    assert!(doc.title.chars().count() <= MAX_LABEL_CHARS + 1 && doc.title.ends_with('…'));
    assert!(doc.title.starts_with("word word"));
    let sub = &doc.sections[1];
    assert!(sub.headings[0].chars().count() <= MAX_LABEL_CHARS + 1);
    assert!(
        sub.anchor.len() <= MAX_ANCHOR_BYTES + 3,
        "{}",
        sub.anchor.len()
    );
    assert_eq!(bounded_label("short"), "short");
    let cyr = "ж".repeat(MAX_LABEL_CHARS * 2);
    assert_eq!(bounded_label(&cyr).chars().count(), MAX_LABEL_CHARS + 1);
}

#[test]
fn dates_normalize() {
    assert_eq!(normalize_date("11/04/2016").as_deref(), Some("2016-11-04"));
    assert_eq!(
        normalize_date("2024-03-05T10:00:00Z").as_deref(),
        Some("2024-03-05")
    );
    assert_eq!(normalize_date("soon"), None);
}
