//! Access labels (`index-builder build --access`, front matter `access:`) and what a reader
//! sees of a bundle that restricts documents to groups. The bar: a reader's answer is the
//! answer of a bundle built from the documents they may read alone — results, snippets,
//! highlights, totals, facets, scores, typo corrections, completions and suggestions — so
//! nothing in it can tell that a restricted document exists.

mod common;

use std::path::{Path, PathBuf};

use docloupe::{Access, Engine, SearchRequest};
use serde_json::{json, Value};

/// A team's docs: open pages, and pages for HR, legal and engineering. The restricted pages
/// hold words no open page has (`quokkafication`, `zanzibar`), words open pages have too
/// (`deploy`, `cache`), and words that are near an open page's (`deployment` / `deployments`).
fn team_pages() -> Vec<(&'static str, String)> {
    let page = |title: &str, body: &str| format!("# {title}\n\n{body}\n");
    vec![
        (
            "guide/cache.md",
            page(
                "Cache settings",
                "Configure the cache directory and how long entries are kept. The cache \
                 speeds up every deploy.\n\n## Clearing the cache\n\nRun the clean command \
                 to remove stale entries before a deployment.",
            ),
        ),
        (
            "guide/deploy.md",
            page(
                "Deploying the site",
                "Build the site, then deploy it to the static host. Each deployment keeps \
                 the previous one for rollback.\n\n## Rollback\n\nPoint the host at the \
                 previous build.",
            ),
        ),
        (
            "hr/salaries.md",
            page(
                "Salary bands",
                "Salary bands for 2026: the quokkafication review moves every band. \
                 Payroll runs on the 25th; the zanzibar bonus is paid in March. A senior \
                 band carries a certain cachet, and the deployer bonus too.\n\n## \
                 Deploying new bands\n\nHR deploys the new bands after the review.",
            ),
        ),
        (
            "hr/handbook.md",
            page(
                "Employee handbook",
                "Holidays, sick leave and how to ask for equipment. Open to everyone.",
            ),
        ),
        (
            "legal/contracts.md",
            format!(
                "---\naccess: [legal, executives]\n---\n{}",
                page(
                    "Vendor contracts",
                    "Contracts with the zanzibar hosting vendor: the cache appliance lease \
                     and the deployment support terms, renewed yearly.",
                )
            ),
        ),
        (
            "eng/oncall.md",
            format!(
                "---\naccess: eng\ntags: [ops]\n---\n{}",
                page(
                    "On-call runbook",
                    "When a deployment fails, page the on-call engineer, roll back, and \
                     clear the cache of the failed build.",
                )
            ),
        ),
    ]
}

const ACCESS_FILE: &str = r#"
[[rule]]
paths = ["hr/"]
groups = ["hr"]

[[rule]]
paths = ["hr/handbook.md"]
groups = ["*"]

[[rule]]
paths = ["legal/"]
groups = ["legal"]
"#;

/// Who may read each page under [`ACCESS_FILE`] and the front matter.
fn readable(path: &str, groups: &[&str]) -> bool {
    let has = |g: &str| groups.contains(&g);
    match path {
        "hr/salaries.md" => has("hr"),
        // The file's rule (legal) and the page's own (legal or executives): both.
        "legal/contracts.md" => has("legal"),
        "eng/oncall.md" => has("eng"),
        _ => true,
    }
}

struct Built {
    _dir: tempfile::TempDir,
    docs: PathBuf,
    bundle: PathBuf,
    report: Value,
}

fn write_pages(dir: &Path, pages: &[(&str, String)]) {
    for (path, text) in pages {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// The team's pages built with the access file (and `extra`).
fn labeled(extra: &[&str]) -> Built {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    write_pages(&docs, &team_pages());
    let access = dir.path().join("access.toml");
    std::fs::write(&access, ACCESS_FILE).unwrap();
    let bundle = dir.path().join("team.bundle");
    let mut args = vec!["--access", access.to_str().unwrap()];
    args.extend_from_slice(extra);
    let report = common::build(&docs, &bundle, &args);
    Built {
        _dir: dir,
        docs,
        bundle,
        report,
    }
}

/// The pages `groups` may read, built alone, without any access label.
fn readable_alone(groups: &[&str], extra: &[&str]) -> Vec<u8> {
    let pages: Vec<(&str, String)> = team_pages()
        .into_iter()
        .filter(|(p, _)| readable(p, groups))
        // The same bytes as in the labeled build (front matter included).
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    write_pages(&docs, &pages);
    // Front matter `access:` would label the page again: its line becomes a key docloupe
    // does not read, so the page keeps its lines (and line numbers), tags and title.
    for (p, text) in &pages {
        if let Some(rest) = text.strip_prefix("---\naccess:") {
            let rest = rest.split_once('\n').unwrap().1;
            std::fs::write(docs.join(p), format!("---\nnote: open\n{rest}")).unwrap();
        }
    }
    let out = dir.path().join("alone.bundle");
    common::build(&docs, &out, extra);
    std::fs::read(out).unwrap()
}

fn engine(bytes: &[u8]) -> Engine {
    Engine::from_bundle(bytes, Some(common::model_files())).unwrap()
}

/// The answer with its timings and document ids left out (a page whose front matter lost
/// its `access:` line has other bytes, so another sha256, and so other chunk ids).
fn answer(e: &Engine, req: &Value, access: Access) -> Value {
    let req = SearchRequest {
        access,
        ..SearchRequest::from_json(&req.to_string()).unwrap()
    };
    match e.search(&req) {
        Ok(r) => {
            let mut v = serde_json::to_value(r).unwrap();
            v.as_object_mut().unwrap().remove("timings");
            for r in v["results"].as_array_mut().unwrap() {
                let r = r.as_object_mut().unwrap();
                r.remove("docId");
                r.remove("chunkId");
                r.remove("fileSize");
            }
            v
        }
        Err(e) => json!({"error": e.to_string()}),
    }
}

fn requests() -> Vec<Value> {
    let mut out = Vec::new();
    for q in [
        "cache",
        "deploy",
        "deployment rollback",
        "zanzibar",
        "quokkafication review",
        // A typo of a restricted word, of an open one, and of both.
        "quokkafikation",
        "deploymnt",
        "zanzibr cahce",
        // Being typed: completions.
        "quokka",
        "deplo",
        "cach",
        // Near an open page's word and a restricted page's (`cache` / `cachet`, `deploy` /
        // `deployer`): the stand-ins and their weights are the open pages' alone.
        "cachw settings",
        "deployr the site",
        "salary bands payroll",
        "how do I get equipment",
        "vendor contracts",
    ] {
        for mode in ["fulltext", "hybrid", "semantic"] {
            out.push(json!({"query": q, "mode": mode, "limit": 10}));
        }
        out.push(json!({"query": q, "limit": 2, "offset": 1, "maxChunksPerDocument": 1}));
        out.push(json!({"query": q, "mode": "fulltext", "filters": {"tags": ["ops"]}}));
        out.push(json!({"query": q, "includeContext": true, "maxCharsPerChunk": 80}));
    }
    out
}

#[test]
fn a_reader_gets_the_answers_of_a_bundle_of_the_documents_they_may_read_alone() {
    let built = labeled(&[]);
    assert_eq!(built.report["documentsRestricted"], 3, "{}", built.report);
    let full = engine(&std::fs::read(&built.bundle).unwrap());
    for groups in [
        &[][..],
        &["hr"][..],
        &["legal"][..],
        &["executives"][..],
        &["eng", "hr"][..],
        &["eng", "hr", "legal"][..],
    ] {
        let alone = engine(&readable_alone(groups, &[]));
        let access = Access::groups(groups.iter().copied());
        for req in requests() {
            assert_eq!(
                answer(&full, &req, access.clone()),
                answer(&alone, &req, Access::Public),
                "groups {groups:?}, request {req}"
            );
        }
    }
    // The owner sees everything: the same answers as the bundle built without the file.
    let everything = engine(&readable_alone(&["eng", "hr", "legal"], &[]));
    for req in requests() {
        assert_eq!(
            answer(&full, &req, Access::Everything),
            answer(&everything, &req, Access::Public),
            "{req}"
        );
    }
}

/// An engine keeps each reader's scope, masked, for their next request (`filter::Masks`): one
/// that has answered other readers and other filters answers each as a fresh engine does.
#[test]
fn a_kept_scope_is_the_reader_and_the_filters_of_its_own_request() {
    let bytes = std::fs::read(labeled(&[]).bundle).unwrap();
    let fresh = |req: &Value, access: &Access| {
        let e = Engine::from_bundle(&bytes, None).unwrap();
        answer(&e, req, access.clone())
    };
    let used = Engine::from_bundle(&bytes, None).unwrap();
    let filters = [
        json!({}),
        json!({"tags": ["ops"]}),
        json!({"documentTypes": ["md"]}),
        json!({"tags": ["ops"], "documentTypes": ["md"]}),
    ];
    let readers = [
        Access::Public,
        Access::groups(["hr"]),
        Access::groups(["legal"]),
        Access::Everything,
    ];
    // Each reader with each filter, twice, in an order that changes both between requests.
    for round in 0..2 {
        for (i, filters) in filters.iter().enumerate() {
            for j in 0..readers.len() {
                let access = &readers[(i + j + round) % readers.len()];
                for q in ["deploy cache", "salary bands", "vendor contracts"] {
                    let req =
                        json!({"query": q, "mode": "fulltext", "limit": 50, "filters": filters});
                    assert_eq!(
                        answer(&used, &req, access.clone()),
                        fresh(&req, access),
                        "{access:?} {req}"
                    );
                }
            }
        }
    }
}

/// The leak cases spelt out, for a reader without groups.
#[test]
fn nothing_in_an_answer_reveals_a_restricted_document() {
    let built = labeled(&[]);
    let e = engine(&std::fs::read(&built.bundle).unwrap());
    let public = |req: Value| answer(&e, &req, Access::Public);
    let hr = |req: Value| answer(&e, &req, Access::groups(["hr"]));
    // A word only restricted pages hold: no result, no total, no facet.
    for mode in ["fulltext", "hybrid"] {
        let r = public(json!({"query": "quokkafication", "mode": mode}));
        let text = r.to_string();
        assert!(
            !text.contains("salaries") && !text.contains("Salary"),
            "{text}"
        );
        if mode == "fulltext" {
            assert_eq!(r["total"], 0, "{r}");
        }
        let r = hr(json!({"query": "quokkafication", "mode": mode}));
        assert_eq!(r["results"][0]["documentPath"], "hr/salaries.md", "{r}");
    }
    // A misspelling of a restricted word is neither corrected nor suggested.
    let r = public(json!({"query": "quokkafikation", "mode": "fulltext"}));
    assert_eq!(r["total"], 0, "{r}");
    assert!(!r.to_string().contains("quokkafication"), "{r}");
    let r = hr(json!({"query": "quokkafikation", "mode": "fulltext"}));
    assert_eq!(r["results"][0]["documentPath"], "hr/salaries.md", "{r}");
    assert_eq!(r["suggestions"][0], "quokkafication", "{r}");
    // A word being typed is not completed from a restricted page.
    let r = public(json!({"query": "quokka", "mode": "fulltext"}));
    assert_eq!(r["total"], 0, "{r}");
    let r = hr(json!({"query": "quokka", "mode": "fulltext"}));
    assert_eq!(r["results"][0]["documentPath"], "hr/salaries.md", "{r}");
    // A word both hold: the open pages only, counted alone in the total and the facets.
    let r = public(json!({"query": "zanzibar deploy cache", "mode": "fulltext", "limit": 50}));
    let paths: Vec<&str> = r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["documentPath"].as_str().unwrap())
        .collect();
    assert!(paths.iter().all(|p| p.starts_with("guide/")), "{paths:?}");
    assert_eq!(r["total"].as_u64().unwrap() as usize, paths.len(), "{r}");
    let facet_total: u64 = r["facets"]["documentTypes"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(facet_total, 2, "{r}");
    let mut shown = r.clone();
    shown.as_object_mut().unwrap().remove("query");
    assert!(!shown.to_string().contains("zanzibar"), "{r}");
}

#[test]
fn the_build_labels_by_rule_and_front_matter_and_skips_what_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    let mut pages = team_pages();
    pages.push((
        "eng/broken.md",
        "---\naccess: [eng\ntitle: x\n---\n# Broken\n\nText of a page whose access cannot be read.\n".into(),
    ));
    pages.push((
        "eng/badname.md",
        "---\naccess: \"<script>\"\n---\n# Bad name\n\nText.\n".into(),
    ));
    pages.push((
        "eng/number.md",
        "---\naccess: 7\n---\n# Number\n\nText.\n".into(),
    ));
    write_pages(&docs, &pages);
    let access = dir.path().join("access.toml");
    std::fs::write(&access, ACCESS_FILE).unwrap();
    let bundle = dir.path().join("b.bundle");
    let report = common::build(
        &docs,
        &bundle,
        &["--access", access.to_str().unwrap(), "--no-embeddings"],
    );
    let warnings = common::warnings(&report);
    for skipped in ["eng/broken.md", "eng/badname.md", "eng/number.md"] {
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with(skipped) && w.contains("skipped") && w.contains("access")),
            "{skipped}: {warnings:?}"
        );
    }
    assert_eq!(report["documentsProcessed"], 6, "{report}");
    assert_eq!(report["documentsRestricted"], 3, "{report}");
    let b = docloupe::bundle::decode(&std::fs::read(&bundle).unwrap()).unwrap();
    let section = b.access.as_ref().expect("an access section");
    let requirements = |path: &str| {
        let d = b
            .docs
            .documents
            .iter()
            .position(|d| d.path == path)
            .unwrap();
        section.requirements(d as u32)
    };
    assert_eq!(requirements("hr/salaries.md"), [vec!["hr"]]);
    assert!(requirements("hr/handbook.md").is_empty());
    assert!(requirements("guide/cache.md").is_empty());
    assert_eq!(
        requirements("legal/contracts.md"),
        [vec!["executives", "legal"], vec!["legal"]]
    );
    assert_eq!(requirements("eng/oncall.md"), [vec!["eng"]]);
    // `index-builder inspect` names the groups and counts the restricted documents.
    let inspect = std::process::Command::new(common::index_builder_bin())
        .arg("inspect")
        .arg(&bundle)
        .output()
        .unwrap();
    let inspect: Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(
        inspect["access"],
        json!({"groups": ["eng", "executives", "hr", "legal"], "documentsRestricted": 3})
    );

    // A mistake in the access file stops the build: a typo must never open a document.
    for bad in [
        "[[rule]]\npaths = [\"hr/\"]\ngroups = [\"h r\"]",
        "[[rule]]\npaths = [\"hr/\"]\ngroup = [\"hr\"]",
        "default = []",
    ] {
        std::fs::write(&access, bad).unwrap();
        let out = std::process::Command::new(common::index_builder_bin())
            .args(["build", "--no-embeddings", "--access"])
            .arg(&access)
            .arg(&docs)
            .arg("--out")
            .arg(dir.path().join("bad.bundle"))
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("access file"), "{bad}: {err}");
    }
    // `default` covers the documents no rule matches.
    std::fs::write(
        &access,
        "default = [\"staff\"]\n[[rule]]\npaths = [\"guide/\"]\ngroups = [\"*\"]\n",
    )
    .unwrap();
    let report = common::build(
        &docs,
        &bundle,
        &["--access", access.to_str().unwrap(), "--no-embeddings"],
    );
    assert_eq!(report["documentsRestricted"], 4, "{report}");
}

#[test]
fn a_split_layout_is_never_cut_from_a_restricted_bundle() {
    let built = labeled(&["--no-embeddings"]);
    let out = std::process::Command::new(common::index_builder_bin())
        .arg("split")
        .arg(&built.bundle)
        .arg("--out")
        .arg(built.docs.with_file_name("split"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("restricted") && err.contains("docloupe serve"),
        "{err}"
    );
    assert!(!built.docs.with_file_name("split").exists());
}

#[test]
fn the_command_line_searches_as_the_groups_it_is_given() {
    let built = labeled(&["--no-embeddings"]);
    let paths = |extra: &[&str]| -> Vec<String> {
        let out = common::docloupe_search(&built.bundle)
            .args(["--format", "json", "--limit", "20"])
            .args(extra)
            .arg("zanzibar cache deployment")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut p: Vec<String> = v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["file_path"].as_str().unwrap().to_owned())
            .collect();
        p.sort();
        p
    };
    assert_eq!(paths(&[]), ["guide/cache.md", "guide/deploy.md"]);
    assert_eq!(
        paths(&["--groups", "eng,hr"]),
        [
            "eng/oncall.md",
            "guide/cache.md",
            "guide/deploy.md",
            "hr/salaries.md"
        ]
    );
    assert_eq!(paths(&["--all-groups"]).len(), 5);
    let bad = common::docloupe_search(&built.bundle)
        .args(["--groups", "a b", "cache"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
}

/// A bundle without restricted documents has no access section: every reader sees it whole.
#[test]
fn without_labels_there_is_no_access_section() {
    let bytes = common::bundle_of(team_pages().into_iter().take(2), &["--no-embeddings"]);
    let b = docloupe::bundle::decode(&bytes).unwrap();
    assert!(b.access.is_none());
    assert!(b
        .header
        .sections
        .iter()
        .all(|s| s.kind != docloupe::bundle::SectionKind::Access));
}

/// What typo tolerance, completions and suggestions draw on, read through a reader's view,
/// is the vocabulary of a bundle of their documents alone: every term's frequency, the
/// terms under every prefix, the correction candidates, and the chunks surface forms come
/// from.
#[test]
fn the_vocabulary_a_reader_reaches_is_their_documents_alone() {
    use docloupe::search::access::View;
    use docloupe::search::corpus::{Corpus, Data};
    let built = labeled(&["--no-embeddings"]);
    let full =
        Data::Whole(docloupe::bundle::decode(&std::fs::read(&built.bundle).unwrap()).unwrap());
    for groups in [&[][..], &["hr"][..], &["eng", "legal"][..]] {
        let alone = Data::Whole(
            docloupe::bundle::decode(&readable_alone(groups, &["--no-embeddings"])).unwrap(),
        );
        let view = View::of(
            full.whole().unwrap(),
            &Access::groups(groups.iter().copied()),
        );
        assert!(view.is_some(), "{groups:?} cannot read everything");
        let seen = Corpus::new(&full).seen_through(view.as_ref());
        let own = Corpus::new(&alone);
        assert_eq!(seen.idf_chunks(), own.n_chunks(), "{groups:?}");
        let all_terms = &full.whole().unwrap().lexical.terms;
        let texts = |c: &Corpus, chunks: Vec<u32>| -> Vec<String> {
            chunks.into_iter().map(|i| c.text(i).to_owned()).collect()
        };
        for term in all_terms {
            assert_eq!(seen.doc_freq(term), own.doc_freq(term), "{groups:?} {term}");
            assert_eq!(
                texts(&seen, seen.first_chunks_with(term, 3)),
                texts(&own, own.first_chunks_with(term, 3)),
                "{groups:?} {term}"
            );
            for end in term.char_indices().map(|(i, _)| i).skip(1) {
                let prefix = &term[..end];
                for cap in [1, 4, 64] {
                    assert_eq!(
                        seen.terms_with_prefix(prefix, cap),
                        own.terms_with_prefix(prefix, cap),
                        "{groups:?} {prefix} {cap}"
                    );
                }
            }
        }
        let sorted = |v: Vec<(&str, usize)>| {
            let mut v: Vec<(String, usize)> =
                v.into_iter().map(|(t, n)| (t.to_owned(), n)).collect();
            v.sort();
            v
        };
        assert_eq!(
            sorted(seen.correction_candidates(&["word"])),
            sorted(own.correction_candidates(&["word"])),
            "{groups:?}"
        );
    }
}
