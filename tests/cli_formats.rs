//! Spec: `docloupe search` — the `/search` command — prints the same answer three ways: text
//! for a terminal, markdown for a chat, JSON in `search_documents`' shape. Golden files in
//! `tests/fixtures/golden/` (times masked); `UPDATE_GOLDEN=1 cargo test --test cli_formats`
//! rewrites them, for review in the diff. The hybrid goldens run on the portable kernels, whose
//! arithmetic is the same on every CPU, for the documents (the bundle) as for the query, so
//! the model-derived scores in them are too.

mod common;
mod formats;

use std::path::Path;

fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
    }
    let expected =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(actual, expected, "{name} differs from its golden file");
}

/// Runs `docloupe search` on the fixture bundle (built on the portable kernels, so the
/// documents' vectors are the same on every CPU too); stdout with times masked, and the
/// status.
fn search(args: &[&str]) -> (String, Option<i32>) {
    let (_tmp, bundle) = common::portable_fixture_bundle_file();
    let out = common::docloupe_search(&bundle)
        .args(["--models", common::model_dir().to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let masked = mask_times(&text);
    (masked, out.status.code())
}

/// Replaces times ("12 ms", "0.004s") with fixed text: they vary run to run.
fn mask_times(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for line in s.split_inclusive('\n') {
        let mut line = line.to_owned();
        if let Some(i) = line.find("\"search_time\": \"") {
            let start = i + "\"search_time\": \"".len();
            if let Some(len) = line[start..].find('"') {
                line.replace_range(start..start + len, "T");
            }
        }
        // "…, 12 ms)" and "· 12 ms" in the headers.
        if let Some(end) = line.find(" ms") {
            let start = line[..end]
                .rfind(|c: char| !c.is_ascii_digit())
                .map_or(0, |i| i + 1);
            if start < end {
                line.replace_range(start..end, "N");
            }
        }
        out.push_str(&line);
    }
    out
}

const QUERY: [&str; 3] = ["configure", "the", "cache"];

/// The golden query in `format`: hybrid on the portable kernels (so the scores are the same on
/// any x86-64), 2 documents of up to 2 fragments.
fn hybrid_two_by_two(format: &str) -> (String, Option<i32>) {
    let options = [
        "--kernels",
        "portable",
        "--mode",
        "hybrid",
        "-f",
        format,
        "-l",
        "2",
        "-k",
        "2",
    ];
    search(&[&options[..], &QUERY].concat())
}

#[test]
fn text_is_grouped_by_document_with_breadcrumbs_and_path_line() {
    let (out, code) = hybrid_two_by_two("text");
    assert_eq!(code, Some(0));
    golden("search.txt", &out);
    assert!(
        out.contains("en/caching.md:14-20#configure-the-cache-size"),
        "{out}"
    );
    assert!(
        !out.contains('\x1b'),
        "no colours when stdout is not a terminal"
    );
}

#[test]
fn markdown_pastes_into_a_chat() {
    let (out, code) = hybrid_two_by_two("markdown");
    assert_eq!(code, Some(0));
    golden("search.md", &out);
    assert!(out.contains("**cache**"), "{out}");
}

#[test]
fn json_is_the_search_documents_shape() {
    let (out, code) = hybrid_two_by_two("json");
    assert_eq!(code, Some(0));
    golden("search.json", &out);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["success"], true);
    assert_eq!(v["results"].as_array().unwrap().len(), 2);
}

#[test]
fn the_search_options_reach_the_engine() {
    let json = |args: &[&str]| -> serde_json::Value {
        let (out, _) = search(&[&["-f", "json", "--mode", "fulltext"][..], args].concat());
        serde_json::from_str(&out).unwrap()
    };
    let paths = |v: &serde_json::Value| -> Vec<String> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["file_path"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(paths(&json(&["--source", "ru/", "кэш"]))
        .iter()
        .all(|p| p.starts_with("ru/")));
    assert!(paths(&json(&["-t", "pdf,docx", "cache"])).is_empty());
    assert!(!paths(&json(&["--types", "md", "cache"])).is_empty());
    let dated = json(&[
        "--date-from",
        "2024-03-01",
        "--date-to",
        "2024-03-31",
        "cache",
    ]);
    assert!(dated["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|d| d["updated_at"].as_str().unwrap().starts_with("2024-03")));
    let one = json(&["-l", "1", "-k", "1", "-c", "false", "cache"]);
    let doc = &one["results"][0];
    assert_eq!(one["results"].as_array().unwrap().len(), 1);
    assert_eq!(doc["context_chunks"].as_array().unwrap().len(), 1, "{doc}");
    let (out, code) = search(&["-f", "json", "--date-from", "2024-13-01", "cache"]);
    assert_eq!(code, Some(1));
    golden("error.json", &out);
}

/// Issue 25 #6: `-c`/`--context` works bare and with a value, and the context it asks for is
/// in the text and markdown outputs too, not only in JSON.
#[test]
fn context_is_shown_in_every_format_when_asked() {
    let fulltext = ["--mode", "fulltext", "-l", "1", "-k", "1"];
    for format in ["text", "markdown"] {
        // The flags after the query: a bare `-c` before it would take the next word as its
        // value (and refuse it, clearly: "invalid value 'configure' for '--context'").
        let run = |extra: &[&str]| {
            let (out, code) = search(&[&fulltext[..], &["-f", format], &QUERY, extra].concat());
            assert_eq!(code, Some(0), "{format} {extra:?}: {out}");
            out
        };
        let with = run(&["-c"]);
        assert!(with.contains("(after line"), "{format}: {with}");
        assert_eq!(run(&["--context"]), with);
        assert_eq!(run(&[]), with, "context is the default");
        let without = run(&["--context=false"]);
        assert!(!without.contains("(after line"), "{format}: {without}");
        assert_eq!(run(&["-c", "false"]), without);
    }
    let (out, code) = search(&["-c", "configure", "the", "cache"]);
    assert_eq!(code, Some(2), "{out}");
}

/// Issue 25 #6: the /search command file puts `--format markdown` first; the user's own
/// `--format=json` after it wins instead of a clap error.
#[test]
fn a_later_format_replaces_the_command_files_default() {
    let (out, code) = search(&[
        "--mode",
        "fulltext",
        "--format",
        "markdown",
        "--format=json",
        "cache",
    ]);
    assert_eq!(code, Some(0), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["success"], true);
}

/// Issue 25 #2: `--page` and `--offset` page through documents; the header says which.
#[test]
fn pages_of_documents_from_the_cli() {
    let docs = |extra: &[&str]| -> Vec<String> {
        let (out, code) = search(
            &[
                &["-f", "json", "--kernels", "portable"][..],
                extra,
                &["cache"],
            ]
            .concat(),
        );
        assert_eq!(code, Some(0), "{out}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let three = docs(&["-l", "3"]);
    assert_eq!(three.len(), 3);
    let paged: Vec<String> = (1..=3)
        .flat_map(|p| docs(&["-l", "1", "--page", &p.to_string()]))
        .collect();
    assert_eq!(paged, three);
    assert_eq!(docs(&["-l", "2", "--offset", "1"]), three[1..]);
    let (out, _) = search(&["--kernels", "portable", "-l", "1", "-p", "2", "cache"]);
    assert!(out.starts_with("document 2 of "), "{out}");
    assert!(
        out.contains("\n2. "),
        "numbered from the page's first: {out}"
    );
}

/// The words bash makes of `line`, as the /search command file's shell line does.
fn shell_words(line: &str) -> Vec<String> {
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("printf '%s\\0' {line}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "bash cannot split {line:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .split_terminator('\0')
        .map(str::to_owned)
        .collect()
}

/// Issue 25 #6: every `/search` example in `.claude/commands/search.md` (and the README's)
/// runs as the command file runs it: its own `--format markdown` first, then the example's
/// arguments.
#[test]
fn every_search_command_example_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let command = std::fs::read_to_string(root.join(".claude/commands/search.md")).unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let examples: Vec<&str> = command
        .lines()
        .chain(readme.lines())
        .flat_map(|l| l.split('`'))
        .filter_map(|piece| piece.strip_prefix("/search "))
        .filter(|e| !e.starts_with('['))
        .collect();
    assert!(examples.len() >= 5, "{examples:?}");
    for example in examples {
        let args = shell_words(example);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (out, code) = search(&[&["--format", "markdown"][..], &args].concat());
        assert_eq!(code, Some(0), "/search {example}: {out}");
        if args.iter().any(|a| a.starts_with("--format=json")) {
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(v["success"], true, "/search {example}");
        } else {
            assert!(out.starts_with("**"), "/search {example}: {out}");
        }
    }
}

/// The README's shell examples (issue 25): every `target/release/…` command of its `sh`
/// blocks, optional `[…]` parts left out, runs in a folder holding `docs/` (the fixture
/// collection) and `paper.pdf`, and exits 0.
#[test]
fn every_readme_shell_example_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    // Each command of the `sh` blocks, its continuation lines (indented, or after a `\`)
    // joined to it.
    let mut commands: Vec<String> = Vec::new();
    let mut in_sh = false;
    let mut continues = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_sh = line == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let line = line.split("  #").next().unwrap().trim_end();
        let text = line.trim().trim_end_matches('\\').trim_end();
        match commands.last_mut() {
            Some(last) if continues || line.starts_with(' ') => {
                last.push(' ');
                last.push_str(text);
            }
            _ => commands.push(text.to_owned()),
        }
        continues = line.ends_with('\\');
    }
    commands.retain(|c| c.contains("target/release/") && !c.starts_with("make "));
    let optional = |c: &str| {
        let mut out = String::new();
        let mut depth = 0;
        for ch in c.chars() {
            match ch {
                '[' if !out.ends_with('\'') && !out.ends_with('"') => depth += 1,
                ']' if depth > 0 => depth -= 1,
                _ if depth == 0 => out.push(ch),
                _ => {}
            }
        }
        out.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    assert!(commands.len() >= 8, "{commands:#?}");
    let tmp = tempfile::tempdir().unwrap();
    let copy = |from: &Path, to: &Path| {
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let dir = to.join(entry.file_name());
            std::fs::create_dir_all(&dir).unwrap();
            for f in std::fs::read_dir(entry.path()).unwrap() {
                let f = f.unwrap();
                std::fs::copy(f.path(), dir.join(f.file_name())).unwrap();
            }
        }
    };
    copy(&common::fixtures(), &tmp.path().join("docs"));
    std::fs::write(
        tmp.path().join("paper.pdf"),
        formats::pdf(
            &[&[&["A paper"], &["Its one paragraph."]]],
            &[],
            Some("A paper"),
        ),
    )
    .unwrap();
    let bin = common::docloupe_bin();
    let bin_dir = bin.parent().unwrap().to_str().unwrap();
    for command in &commands {
        let mut run = optional(command).replace("target/release/", &format!("{bin_dir}/"));
        if run.contains("index-builder build") {
            // The test model, as every test builds with (the searches then load it by name).
            run.push_str(&format!(" --model {}", common::model_dir().display()));
        }
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("set -o pipefail; {run}"))
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "README: {command}\nran: {run}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A bundle that cannot be read, or is not a bundle, is one clear line that names the file
/// once (it used to read "cannot load X: cannot read bundle X: ...").
#[test]
fn a_bad_bundle_path_is_named_once() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing.bundle");
    let garbage = tmp.path().join("garbage.bundle");
    std::fs::write(&garbage, b"not a bundle at all").unwrap();
    for (path, says) in [
        (&missing, "cannot read bundle"),
        (&garbage, "not a docloupe bundle"),
    ] {
        let out = common::docloupe_search(path)
            .args(["--mode", "fulltext", "anything"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", path.display());
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains(says), "{stderr}");
        assert_eq!(
            stderr.matches(path.to_str().unwrap()).count(),
            1,
            "{stderr}"
        );
    }
}

/// `--bundle` may name the folder `index-builder split` wrote: the CLI then reads the core and
/// only the pieces a query needs, and answers exactly as from the bundle file, in every format,
/// mode and batch (issue 23: the CLI should not decode the whole bundle per call).
#[test]
fn a_split_folder_answers_as_its_bundle_file() {
    let (tmp, bundle) = common::portable_fixture_bundle_file();
    let split = split_beside(&bundle);
    let run = |from: &std::path::Path, args: &[&str], stdin: Option<&str>| {
        let mut cmd = common::docloupe_search(from);
        cmd.args([
            "--models",
            common::model_dir().to_str().unwrap(),
            "--kernels",
            "portable",
        ]);
        cmd.args(args).stdin(std::process::Stdio::piped());
        cmd.stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let input = stdin.unwrap_or("").to_owned();
        let mut pipe = child.stdin.take().unwrap();
        std::thread::spawn(move || std::io::Write::write_all(&mut pipe, input.as_bytes()));
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        // Batch answers carry the engine's timings; the other formats say "N ms".
        let lines: Vec<serde_json::Value> = match stdin {
            Some(_) => text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect(),
            None => vec![serde_json::Value::String(mask_times(&text))],
        };
        lines
            .into_iter()
            .map(|mut v| {
                v.as_object_mut().map(|o| o.remove("timings"));
                v
            })
            .collect::<Vec<_>>()
    };
    for mode in ["fulltext", "semantic", "hybrid"] {
        for format in ["text", "json"] {
            let args = [
                "--mode", mode, "-f", format, "how", "big", "may", "the", "cache", "grow",
            ];
            let (file, folder) = (run(&bundle, &args, None), run(&split, &args, None));
            assert_eq!(folder, file, "{mode} {format}");
            assert!(
                format!("{file:?}").contains("caching.md"),
                "{mode}: {file:?}"
            );
        }
    }
    let batch: String = [
        "configure the cache",
        "cahce",
        "установка",
        "how big may the cache grow",
    ]
    .iter()
    .flat_map(|q| {
        ["fulltext", "semantic", "hybrid"].map(|m| {
            format!(
                "{}\n",
                serde_json::json!({"query": q, "mode": m, "limit": 3})
            )
        })
    })
    .collect();
    let (file, folder) = (
        run(&bundle, &["--jsonl"], Some(&batch)),
        run(&split, &["--jsonl"], Some(&batch)),
    );
    assert_eq!(file.len(), 12);
    assert_eq!(folder, file);
    // A folder that is not a split layout is named once, as an unreadable bundle is.
    let out = common::docloupe_search(tmp.path())
        .args(["--mode", "fulltext", "cache"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("core.bin"), "{stderr}");
}

/// `index-builder split <bundle>` into a folder `split` beside it.
fn split_beside(bundle: &Path) -> std::path::PathBuf {
    let split = bundle.with_file_name("split");
    let status = std::process::Command::new(common::index_builder_bin())
        .arg("split")
        .arg(bundle)
        .arg("--out")
        .arg(&split)
        .status()
        .unwrap();
    assert!(status.success());
    split
}

/// A large bundle's decoded vectors are kept under `$DOCLOUPE_CACHE/vectors` (here for any
/// bundle: `DOCLOUPE_VECTOR_CACHE=always`) and read back by the next process, from the bundle
/// file or its split folder, which share them; the answers are the ones decoded vectors give.
/// A damaged file is decoded past and written again, a planted symlink is neither read nor
/// written through, `off` keeps nothing, and only the four most recently used files stay.
#[test]
fn kept_vectors_answer_as_decoded_ones() {
    use std::os::unix::fs::MetadataExt;
    use std::time::{Duration, SystemTime};
    // Coded vectors, as a large bundle has (the fixture's few are kept flat otherwise).
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("coded.bundle");
    let portable = ["--kernels", "portable", "--compact-threshold", "1"];
    common::build(&common::fixtures(), &bundle, &portable);
    let split = split_beside(&bundle);
    let cache = tmp.path().join("cache");
    let kept = cache.join("vectors");
    let run = |from: &Path, policy: &str| {
        let out = common::docloupe_search(from)
            .env("DOCLOUPE_CACHE", &cache)
            .env("DOCLOUPE_VECTOR_CACHE", policy)
            .args(["--models", common::model_dir().to_str().unwrap()])
            .args(["--kernels", "portable", "--mode", "hybrid", "-f", "json"])
            .args(["how", "big", "may", "the", "cache", "grow"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let stdout = mask_times(&String::from_utf8(out.stdout).unwrap());
        (stdout, String::from_utf8(out.stderr).unwrap())
    };
    let files = || -> Vec<std::path::PathBuf> {
        let mut files: Vec<_> = std::fs::read_dir(&kept)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        files.sort();
        files
    };
    let old = |path: &Path, secs: u64| {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    };

    let (decoded, err) = run(&bundle, "off");
    assert!(decoded.contains("caching.md"), "{decoded}");
    assert!(files().is_empty() && err.is_empty(), "{err}");

    // Decoded and kept, then read back from the file and the folder: the same file, left in
    // place (same inode) and marked used.
    assert_eq!(run(&split, "always"), (decoded.clone(), String::new()));
    let [file] = &files()[..] else {
        panic!("{:?}", files())
    };
    let inode = std::fs::metadata(file).unwrap().ino();
    old(file, 1_000);
    for from in [&bundle, &split] {
        assert_eq!(run(from, "always"), (decoded.clone(), String::new()));
    }
    let meta = std::fs::metadata(file).unwrap();
    assert_eq!(meta.ino(), inode, "written again");
    assert!(meta.modified().unwrap() > SystemTime::UNIX_EPOCH + Duration::from_secs(1_000));

    // Damaged: refused with a note, decoded, and written again whole.
    let good = std::fs::read(file).unwrap();
    let mut bad = good.clone();
    *bad.last_mut().unwrap() ^= 0x01;
    std::fs::write(file, &bad).unwrap();
    let (answer, err) = run(&bundle, "always");
    assert_eq!(answer, decoded);
    assert!(
        err.contains("decoding the vectors again") && err.contains("checksum"),
        "{err}"
    );
    assert_eq!(std::fs::read(file).unwrap(), good);

    // A symlink planted in its place (to a good file) is not read: the vectors are decoded
    // and written, replacing the link, and what it pointed to is left as it was.
    let outside = tmp.path().join("outside.vec");
    std::fs::write(&outside, &good).unwrap();
    std::fs::remove_file(file).unwrap();
    std::os::unix::fs::symlink(&outside, file).unwrap();
    assert_eq!(run(&split, "always").0, decoded);
    assert!(std::fs::symlink_metadata(file)
        .unwrap()
        .file_type()
        .is_file());
    assert_eq!(std::fs::read(&outside).unwrap(), good);

    // Five older files: after the next write, the four most recently used stay.
    for (i, secs) in [(1, 5_000), (2, 4_000), (3, 3_000), (4, 2_000), (5, 1_000)] {
        let other = kept.join(format!("{i}.v1.vec"));
        std::fs::write(&other, b"x").unwrap();
        old(&other, secs);
    }
    std::fs::remove_file(file).unwrap();
    assert_eq!(run(&bundle, "always").0, decoded);
    let names: Vec<String> = files()
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let own = file.file_name().unwrap().to_string_lossy().into_owned();
    // Sorted by name, as `files` lists them: where the bundle's own file falls depends on its
    // hash.
    let mut kept_names = ["1.v1.vec", "2.v1.vec", "3.v1.vec", own.as_str()];
    kept_names.sort();
    assert_eq!(names, kept_names);
}
