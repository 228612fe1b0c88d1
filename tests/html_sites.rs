//! Spec (issue 62): a built site's HTML pages are documents, read as the site serves them.
//! `tests/fixtures/html-site` is a small site in the shapes generators write (furniture around
//! `<main>`, Sphinx's ids on `<section>`, heading links, a canonical duplicate, a redirect, a
//! noindex page, a Russian page, filters) with one page of hostile markup; hostile files too
//! large or too deep for a fixture are made here. None of them may abort the build, and
//! nothing of a page is ever markup again.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use docloupe::{Engine, SearchResponse};
use serde_json::{json, Value};

fn site() -> std::path::PathBuf {
    common::fixtures().with_file_name("html-site")
}

/// `index-builder build DIR --out OUT --no-embeddings --quiet`, which must succeed within
/// `seconds`; returns its report.
fn build(dir: &Path, out: &Path, seconds: u64) -> Value {
    let mut child = Command::new(common::index_builder_bin())
        .arg("build")
        .arg(dir)
        .arg("--out")
        .arg(out)
        .args(["--no-embeddings", "--quiet"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("index-builder runs");
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the build did not finish within {seconds} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the build failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("IngestResult JSON")
}

fn engine(bundle: &Path) -> Engine {
    Engine::from_bundle(&std::fs::read(bundle).unwrap(), None).expect("the bundle loads")
}

fn ask(e: &Engine, body: Value) -> SearchResponse {
    e.search_json(&body.to_string())
        .unwrap_or_else(|x| panic!("{body}: {x:?}"))
}

fn landing(r: &SearchResponse) -> Vec<(String, String)> {
    r.results
        .iter()
        .map(|x| (x.document_path.clone(), x.anchor.clone()))
        .collect()
}

#[test]
fn a_built_site_is_indexed_as_it_is_served() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("site.bundle");
    let report = build(&site(), &out, 60);
    assert_eq!(report["documentsProcessed"], 5, "{report}");
    let warnings = common::warnings(&report);
    for (page, why) in [
        ("guide/install/print.html", "same canonical URL"),
        ("drafts/secret.html", "noindex"),
        ("old/index.html", "redirect"),
        ("404.html", "not-found page"),
    ] {
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with(page) && w.contains(why)),
            "{page}: {warnings:?}"
        );
    }
    let e = engine(&out);
    // No mode named, a bundle without vectors: the fulltext answer, not a refusal.
    let r = ask(&e, json!({"query": "cache size", "limit": 3}));
    assert_eq!(r.applied_strategy, "bm25_docs_only");
    let top = &r.results[0];
    assert_eq!(
        (top.document_path.as_str(), top.anchor.as_str()),
        ("guide/caching.html", "cache-size"),
        "Sphinx puts the id on the <section>"
    );
    assert_eq!(
        top.title, "Pull-through cache",
        "the title without the site's suffix"
    );
    assert_eq!(top.section_path, ["Pull-through cache", "Cache size"]);
    assert_eq!(top.document_type, "html");
    // A heading whose link is its text keeps its words; a heading without an id lands on its
    // parent's.
    let r = ask(
        &e,
        json!({"query": "offline installer tarball", "limit": 1}),
    );
    assert_eq!(
        landing(&r),
        [(
            "guide/install/index.html".into(),
            "run-the-installer".into()
        )]
    );
    assert_eq!(r.results[0].date.as_deref(), Some("2026-05-17"));
    let r = ask(&e, json!({"query": "firewall ports notary", "limit": 1}));
    assert_eq!(
        landing(&r),
        [("guide/install/index.html".into(), "prerequisites".into())]
    );
    assert_eq!(
        r.results[0].section_path,
        ["Installing Harbor", "Prerequisites", "Firewall ports"]
    );
    // `<html lang="ru">`: Russian analysis for that page (обновите ~ обновить).
    let r = ask(&e, json!({"query": "обновите серверы", "limit": 1}));
    assert_eq!(landing(&r), [("ru/index.html".into(), "обновление".into())]);
    // data-docloupe-filter: tags, and key:value pairs as tags.
    for tag in ["install", "version:2.11"] {
        let r = ask(
            &e,
            json!({"query": "harbor", "filters": {"tags": [tag]}, "limit": 20}),
        );
        assert!(!r.results.is_empty(), "{tag}");
        assert!(
            r.results
                .iter()
                .all(|x| x.document_path == "guide/install/index.html"),
            "{tag}: {:?}",
            landing(&r)
        );
    }
    assert_eq!(
        ask(
            &e,
            json!({"query": "harbor", "filters": {"documentTypes": ["html"]}})
        )
        .facets
        .document_types
        .get("html")
        .copied(),
        Some(2),
        "the home page and the install guide say harbor (the others only in their titles' site names)"
    );
    // What the site shows around the content, and what a page never shows, is never found.
    for word in [
        "TRACKERSECRET",
        "STYLESECRET",
        "HEADERWORDS",
        "SIDEBARWORDS",
        "FOOTERWORDS",
        "HIDDENWORDS",
        "IGNOREDWORDS",
        "SPHINXNAVWORDS",
        "REDIRECTWORDS",
        "NOTFOUNDWORDS",
        "NOINDEXWORDS",
        "SCRIPTSECRET",
        "BODYLOAD",
        "ZQIMGVKW",
        "HOVER",
        "JSLINK",
        "SVGSCRIPT",
        "IFRAMEWORDS",
        "NOSCRIPTWORDS",
        "TEMPLATEWORDS",
    ] {
        let r = ask(&e, json!({"query": word, "mode": "fulltext"}));
        assert!(r.results.is_empty(), "{word}: {:?}", landing(&r));
    }
}

#[test]
fn hostile_markup_is_text_never_markup() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("site.bundle");
    build(&site(), &out, 60);
    let e = engine(&out);
    let r = ask(
        &e,
        json!({"query": "escaped markup stays text", "limit": 1}),
    );
    let hit = &r.results[0];
    assert_eq!(hit.document_path, "reference/hostile.html");
    // Entities are decoded once: what the page shows as `<script>` is that text, and an
    // escaped entity stays one.
    let text = &hit.snippet;
    for shown in [
        r#"<script>alert("entity")</script>"#,
        "&lt;b&gt;",
        "<img src=x onerror=alert(2)>",
        "😀",
    ] {
        assert!(text.contains(shown), "{shown:?} in {text:?}");
    }
    assert_eq!(hit.title, "Hostile <b>page</b>");
    // An id holding markup is the anchor the page has, verbatim (hosts encode it).
    let r = ask(&e, json!({"query": "unclosed bold italic", "limit": 1}));
    assert_eq!(
        landing(&r),
        [(
            "reference/hostile.html".into(),
            "\"><script>alert(3)</script>".into()
        )]
    );
    // Everything after <plaintext> is text, tags included.
    let r = ask(
        &e,
        json!({"query": "everything after plaintext", "limit": 1}),
    );
    assert!(r.results[0]
        .snippet
        .contains("<b>not bold</b> <script>alert(4)</script>"));
}

/// Pages too big, too deep or too broken for a fixture: each is skipped with a warning or read
/// as text, and the build goes on with the rest.
#[test]
fn huge_deep_and_broken_pages_never_abort_the_build() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("site");
    std::fs::create_dir_all(&docs).unwrap();
    let page = |body: &str| format!("<!doctype html><html><body><main>{body}</main></body></html>");
    let write = |name: &str, bytes: &[u8]| std::fs::write(docs.join(name), bytes).unwrap();
    write(
        "good.html",
        page("<h1 id=good>Good page</h1><p>The zebrafish survives.</p>").as_bytes(),
    );
    // 100,000 nested elements: the parser is quadratic in depth, so this is refused unread.
    write(
        "deep.html",
        page(&format!(
            "{}deep{}",
            "<div>".repeat(100_000),
            "</div>".repeat(100_000)
        ))
        .as_bytes(),
    );
    // Unclosed inline elements nest as deep without a single closing tag.
    write(
        "deep-inline.html",
        page(&"<b><i><span>".repeat(40_000)).as_bytes(),
    );
    // Under the 16 MiB limit: 15 MB of paragraphs, read and chunked.
    let para = "<p>Lighthouse keepers log the weather every hour of the night.</p>\n";
    write(
        "huge.html",
        page(&para.repeat(15_000_000 / para.len())).as_bytes(),
    );
    // Over the limit: skipped before it is read.
    write("over.html", &vec![b'a'; 17 << 20]);
    // Half a million entities, a 4 MB attribute, 20,000 headings, a comment never closed,
    // bytes that are not UTF-8, NULs, and a binary file named .html.
    write(
        "entities.html",
        page(&"&amp;&lt;&#x41;&nbsp;".repeat(500_000)).as_bytes(),
    );
    write(
        "attribute.html",
        page(&format!(
            "<p title=\"{}\">long attribute</p>",
            "x".repeat(4 << 20)
        ))
        .as_bytes(),
    );
    write(
        "headings.html",
        page(
            &(0..20_000)
                .map(|i| format!("<h2 id=h{i}>Heading {i}</h2><p>body {i}</p>"))
                .collect::<String>(),
        )
        .as_bytes(),
    );
    write(
        "comment.html",
        b"<html><body><main><p>quartermaster</p><!-- never closed <p>inside</p>",
    );
    let mut latin1 = page("<p>caf\u{e9} ").into_bytes();
    latin1.extend_from_slice(b"\xe9\xff\xfe <b>bytes</b>\x00\x00 nul</p>");
    write("latin1.html", &latin1);
    write(
        "binary.html",
        &(0..65_536u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect::<Vec<_>>(),
    );
    let out = tmp.path().join("site.bundle");
    let report = build(&docs, &out, 300);
    let warnings = common::warnings(&report);
    for refused in ["deep.html", "deep-inline.html", "over.html"] {
        assert!(
            warnings.iter().any(|w| w.starts_with(refused)),
            "{refused}: {warnings:?}"
        );
    }
    let e = engine(&out);
    for (query, page) in [
        ("zebrafish survives", "good.html"),
        ("lighthouse keepers weather", "huge.html"),
        ("heading 19999", "headings.html"),
        ("long attribute", "attribute.html"),
        ("quartermaster", "comment.html"),
    ] {
        let r = ask(&e, json!({"query": query, "limit": 1}));
        assert_eq!(
            r.results.first().map(|x| x.document_path.as_str()),
            Some(page),
            "{query}"
        );
    }
    // The attribute's value is not content.
    let r = ask(&e, json!({"query": "xxxxxxxxxxxx", "mode": "fulltext"}));
    assert!(r.results.is_empty());
}
