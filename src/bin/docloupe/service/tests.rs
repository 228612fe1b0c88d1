use super::*;

#[test]
fn projects_are_namespace_slash_name() {
    assert!(valid_project("acme/docs"));
    assert!(valid_project("npm/cli-docs"));
    for bad in ["acme", "/docs", "acme/", "a/b/c", "ac me/docs"] {
        assert!(!valid_project(bad), "{bad}");
    }
}

#[test]
fn the_bucket_refills_and_says_how_long_to_wait() {
    let mut b = Bucket {
        per_minute: 2,
        tokens: 2.0,
        at: Instant::now(),
    };
    assert_eq!(b.take(), None);
    assert_eq!(b.take(), None);
    let wait = b.take().unwrap();
    assert!((1..=30).contains(&wait), "{wait}");
    assert_eq!(
        Bucket {
            per_minute: 0,
            tokens: 0.0,
            at: Instant::now()
        }
        .take(),
        None
    );
}

#[test]
fn timestamps_are_rfc3339_utc() {
    let t = now_rfc3339();
    assert_eq!(t.len(), 20, "{t}");
    assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
}
