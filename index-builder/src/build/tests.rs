use super::*;

/// Regression (files): the temporary bundle was `.{name}.{pid}.tmp`, opened with
/// `File::create`, which follows a symlink planted at that name and truncates its target.
#[test]
#[cfg(unix)]
fn a_symlink_planted_at_a_predictable_temp_name_is_never_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    let pid = std::process::id();
    for name in [
        format!(".docs.bundle.{pid}.tmp"),
        format!(".site.{pid}.tmp"),
    ] {
        std::os::unix::fs::symlink(&victim, tmp.path().join(name)).unwrap();
    }
    let out = tmp.path().join("docs.bundle");
    write_atomically(&out, b"bundle bytes").unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), b"bundle bytes");
    let site = tmp.path().join("site");
    write_dir_atomically(&site, &[("a.html".into(), b"<p>a</p>".to_vec())], "site").unwrap();
    assert!(site.join("a.html").is_file() && site.join(OUTPUT_MARKER).is_file());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    // What others read: a bundle and a site are not private temp files.
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o644
    );
    assert_eq!(
        std::fs::metadata(&site).unwrap().permissions().mode() & 0o777,
        0o755
    );
}

/// A directory written file by file: until `finish`, the old output is what readers
/// see, and a writer dropped unfinished (a failed split) leaves it and nothing else.
#[test]
fn a_dir_writer_swaps_in_whole_or_not_at_all() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("docs");
    write_dir_atomically(&out, &[("old.bin".into(), b"old".to_vec())], "split").unwrap();
    let listing = || {
        let mut names: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };

    let mut w = DirWriter::new(&out, "split").unwrap();
    w.write("a.bin", b"a").unwrap();
    w.write("sub/b.bin", b"b").unwrap();
    assert_eq!(std::fs::read(out.join("old.bin")).unwrap(), b"old");
    drop(w);
    assert_eq!(listing(), ["docs"], "the unfinished directory is gone");
    assert!(out.join("old.bin").is_file() && !out.join("a.bin").exists());

    let mut w = DirWriter::new(&out, "split").unwrap();
    w.write("a.bin", b"a").unwrap();
    w.write("sub/b.bin", b"b").unwrap();
    w.finish().unwrap();
    assert_eq!(listing(), ["docs"], "the old directory is removed");
    assert!(!out.join("old.bin").exists());
    assert_eq!(std::fs::read(out.join("sub/b.bin")).unwrap(), b"b");
    assert!(out.join(OUTPUT_MARKER).is_file());

    // Another command's output is never replaced.
    assert!(DirWriter::new(&out, "site").is_err());
}
