use super::*;

fn page(body: &str) -> String {
    format!("<!doctype html><html lang=\"en\"><head><title>Install — Demo docs</title></head><body>{body}</body></html>")
}

fn sections(doc: &ParsedDoc) -> Vec<(String, String, String)> {
    doc.sections
        .iter()
        .map(|s| {
            let text: Vec<&str> = s.blocks.iter().map(|b| b.text.as_str()).collect();
            (s.headings.join(" > "), s.anchor.clone(), text.join(" / "))
        })
        .collect()
}

#[test]
fn real_ids_and_the_content_element_are_read_and_furniture_is_not() {
    let html = page(
        r##"<nav>Home Guide</nav><header>Site header</header>
        <main><h1 id="install">Install<a class="headerlink" href="#install">¶</a></h1>
        <p>Run the <code>setup</code> command.</p>
        <section id="from-source"><h2>From source</h2><p>Clone it.</p>
          <h3 id="Weird_ID.1">Build &amp; test</h3><pre>make
make test</pre>
          <h3>No id here</h3><p>Inherits.</p></section>
        <script>alert(1)</script><button>Copy</button><div hidden>secret</div>
        <p data-docloupe-ignore>ignored</p></main><footer>Footer text</footer>"##,
    );
    let doc = convert(&html, "stem").unwrap();
    assert_eq!(doc.title, "Install", "site suffix left out");
    assert_eq!(
        sections(&doc),
        vec![
            ("".into(), "install".into(), "Run the setup command.".into()),
            (
                "From source".into(),
                "from-source".into(),
                "Clone it.".into()
            ),
            (
                "From source > Build & test".into(),
                "Weird_ID.1".into(),
                "make\nmake test".into()
            ),
            (
                "From source > No id here".into(),
                "from-source".into(),
                "Inherits.".into()
            ),
        ]
    );
    assert_eq!(doc.front.lang, Some(Language::En));
}

#[test]
fn body_fallback_leaves_out_page_furniture_and_one_article_is_the_content() {
    let doc = convert(
        &page("<header>Brand</header><div><h2 id=a>A</h2><p>Text a</p></div><footer>f</footer>"),
        "x",
    )
    .unwrap();
    assert_eq!(
        sections(&doc),
        vec![("A".into(), "a".into(), "Text a".into())]
    );
    let doc = convert(
        &page("<main><div class=toc>On this page: A</div><article><h2 id=a>A</h2><p>Body</p></article></main>"),
        "x",
    )
    .unwrap();
    assert_eq!(
        sections(&doc),
        vec![("A".into(), "a".into(), "Body".into())]
    );
}

#[test]
fn metadata_filters_and_dates_come_from_the_page() {
    let html = r#"<html lang="ru-RU"><head><title>Страница</title>
        <meta name="description" content="Про  сервер">
        <meta property="article:modified_time" content="2024-05-06T10:00:00Z">
        <meta name="keywords" content="cli, deploy"></head>
        <body><main data-docloupe-filter="version:2.0, tag:ops">
        <span data-docloupe-filter="area">Backend</span>
        <p>Текст</p></main></body></html>"#;
    let doc = convert(html, "x").unwrap();
    assert_eq!(doc.front.lang, Some(Language::Ru));
    assert_eq!(doc.front.description.as_deref(), Some("Про сервер"));
    assert_eq!(doc.front.date.as_deref(), Some("2024-05-06"));
    assert_eq!(
        doc.front.tags,
        vec!["area:Backend", "cli", "deploy", "ops", "version:2.0"]
    );
    let doc = convert(
        &page(r#"<article><time datetime="2023-02-01">Feb 1</time><p>x</p></article>"#),
        "x",
    )
    .unwrap();
    assert_eq!(doc.front.date.as_deref(), Some("2023-02-01"));
}

#[test]
fn noindex_pages_and_redirects_are_not_documents() {
    let e = convert(
        r#"<html><head><meta name="robots" content="NOINDEX, follow"></head><body><p>x</p></body></html>"#,
        "x",
    )
    .unwrap_err();
    assert!(e.contains("noindex"), "{e}");
    let e = convert(
        r#"<html><head><meta http-equiv="Refresh" content="0; url=/new/"></head><body>Moved</body></html>"#,
        "x",
    )
    .unwrap_err();
    assert!(e.contains("redirect"), "{e}");
}

#[test]
fn markup_in_a_page_is_text_and_never_markup_again() {
    let doc = convert(
        &page(r#"<p onclick="steal()">a &lt;script&gt;alert(1)&lt;/script&gt; <a href="javascript:alert(2)">link</a></p><img src=x onerror=alert(3)>"#),
        "x",
    )
    .unwrap();
    let text = &doc.sections[0].blocks[0].text;
    assert_eq!(text, "a <script>alert(1)</script> link");
    assert!(!format!("{doc:?}").contains("javascript:"));
    assert!(!format!("{doc:?}").contains("onerror"));
}

#[test]
fn hostile_structure_is_read_without_recursion_or_blowup() {
    // Deep nesting makes the parsing algorithm quadratic: refused before it is parsed.
    let deep = format!("{}<p>bottom</p>", "<div>".repeat(100_000));
    let start = std::time::Instant::now();
    let e = convert(&deep, "deep").unwrap_err();
    assert!(e.contains("nest 100000 deep"), "{e}");
    assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
    // Within the limit it is read (and `<p>`s that close themselves do not count).
    let ok = format!(
        "{}<p>bottom</p>{}",
        "<section>".repeat(900),
        "<p>x".repeat(5000)
    );
    assert!(nesting_estimate(&ok) <= MAX_DEPTH);
    let doc = convert(&ok, "ok").unwrap();
    assert_eq!(doc.sections[0].blocks[0].text, "bottom");
    // Misnested formatting elements, each different (the adoption agency's worst case).
    let misnested: String = (0..2_000)
        .map(|i| format!("<b id={i}><i>x</b></i>"))
        .collect();
    let start = std::time::Instant::now();
    let doc = convert(&misnested, "m").unwrap();
    assert!(!doc.sections.is_empty());
    eprintln!("misnested: {:?}", start.elapsed());
    // Broken markup and unknown entities are text.
    let doc = convert(
        "<p>a &bogus; &amp &#x110000; <b <i>> </p></td></table>",
        "b",
    )
    .unwrap();
    assert!(doc.sections[0].blocks[0]
        .text
        .starts_with("a &bogus; & \u{fffd}"));
    // Nothing at all.
    assert!(convert("", "empty").unwrap().sections.is_empty());
}

#[test]
fn served_paths_and_canonical_keys() {
    assert_eq!(served_path("a/index.html"), "a/");
    assert_eq!(served_path("index.html"), "");
    assert_eq!(served_path("a.html"), "a.html");
    assert_eq!(served_path("xindex.html"), "xindex.html");
    assert_eq!(
        canonical_key("https://x.org/docs/a/?q=1#f", "a/index.html"),
        "/docs/a/"
    );
    assert_eq!(
        canonical_key("../b.html", "guide/a/index.html"),
        "/guide/b.html"
    );
    assert_eq!(canonical_key("//x.org", "a.html"), "/");
}

#[test]
fn the_survey_reads_a_page_as_its_conversion_does() {
    let s = survey(
        r#"<html><head><link rel="Canonical alternate" href=" /docs/a/ "></head><body><template><div data-docloupe-body>t</div></template><main>x</main></body></html>"#,
    );
    assert_eq!(
        s,
        Survey {
            body_marked: false,
            canonical: Some("/docs/a/".into())
        }
    );
    assert!(survey("<body><div data-docloupe-body>x</div></body>").body_marked);
    let deep = "<div>".repeat(MAX_DEPTH + 1);
    assert_eq!(survey(&deep), Survey::default());
}
