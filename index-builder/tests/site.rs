//! Spec: `index-builder site` renders a folder as pages whose headings carry the bundle's
//! anchors, so every result of a search over the bundle links to an existing section.

use std::path::Path;
use std::process::{Command, Output};

fn builder(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_index-builder"))
        .args(args)
        .output()
        .expect("index-builder runs")
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn every_chunks_anchor_is_an_id_on_its_documents_page() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/docs");
    let tmp = tempfile::tempdir().unwrap();
    let (bundle, site) = (tmp.path().join("b.bundle"), tmp.path().join("site"));
    let (d, b, s) = (
        docs.to_str().unwrap(),
        bundle.to_str().unwrap(),
        site.to_str().unwrap(),
    );
    ok(builder(&[
        "build",
        d,
        "--out",
        b,
        "--no-embeddings",
        "--quiet",
    ]));
    let report: serde_json::Value = serde_json::from_str(&ok(builder(&[
        "site", d, "--out", s, "--title", "Fixtures",
    ])))
    .unwrap();
    assert!(report["pages"].as_u64().unwrap() >= 5, "{report}");

    let mut checked = 0;
    for line in ok(builder(&["dump", b])).lines() {
        let chunk: serde_json::Value = serde_json::from_str(line).unwrap();
        let doc = chunk["documentPath"].as_str().unwrap();
        let anchor = chunk["anchor"].as_str().unwrap();
        let page = site.join(doc.strip_suffix(".md").unwrap().to_owned() + ".html");
        let html = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{page:?}: {e}"));
        if !anchor.is_empty() {
            assert!(
                html.contains(&format!(" id=\"{anchor}\"")),
                "{doc}#{anchor} missing"
            );
            checked += 1;
        }
        assert!(html.contains("<docloupe-search>"), "{doc}: no search box");
    }
    assert!(checked >= 10, "{checked} anchors checked");
    assert!(site.join("index.html").exists() && site.join("site.css").exists());
}

#[test]
fn a_folder_without_markdown_is_an_error_and_leaves_no_site() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("site");
    let o = builder(&[
        "site",
        tmp.path().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no documents"));
    assert!(!out.exists());
}

/// Regression (hostile documents): heading attributes, `javascript:` links and a file named
/// like a URL scheme never become live script on the generated pages.
#[test]
fn hostile_markdown_runs_no_script_on_its_pages() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("page.md"),
        "# Page\n\n## Focus {tabindex=0 autofocus onfocus=document.title='x'}\n\ntext\n\n\
         [click](javascript:alert(1)) <javascript:alert(2)> [ok](other.md)\n",
    )
    .unwrap();
    std::fs::write(docs.join("javascript:alert(1).md"), "# Trap\n\ntext\n").unwrap();
    std::fs::write(docs.join("other.md"), "# Other\n\ntext\n").unwrap();
    let site = tmp.path().join("site");
    let report: serde_json::Value = serde_json::from_str(&ok(builder(&[
        "site",
        docs.to_str().unwrap(),
        "--out",
        site.to_str().unwrap(),
    ])))
    .unwrap();
    assert_eq!(report["pages"], 2, "{report}");
    assert!(
        report["warnings"][0]
            .as_str()
            .unwrap()
            .contains("javascript:alert(1).md\": skipped, its path starts like a URL scheme"),
        "{report}"
    );
    for page in ["page.html", "other.html", "index.html"] {
        let html = std::fs::read_to_string(site.join(page)).unwrap();
        let lower = html.to_ascii_lowercase();
        assert!(
            !lower.contains("onfocus") && !lower.contains("autofocus"),
            "{html}"
        );
        assert!(!lower.contains("href=\"javascript"), "{html}");
        assert!(
            html.contains("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'self'; script-src 'self' 'wasm-unsafe-eval';"),
            "{page}: {html}"
        );
        assert!(html.contains("href=\"./other.html\""), "{page}: {html}");
    }
    // The same file is never built into a bundle either.
    let bundle = tmp.path().join("b.bundle");
    let report: serde_json::Value = serde_json::from_str(&ok(builder(&[
        "build",
        docs.to_str().unwrap(),
        "--out",
        bundle.to_str().unwrap(),
        "--no-embeddings",
        "--quiet",
    ])))
    .unwrap();
    assert_eq!(report["documentsProcessed"], 2, "{report}");
}
