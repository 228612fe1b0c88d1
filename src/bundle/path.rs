//! What a document path may be. A result's `documentPath` becomes a link on a reader's page
//! (`<docloupe-search>`, a generated site, a docs generator's recipe), so a path that a
//! browser would read as anything but a page below the site root is refused twice: the
//! builder skips such a file with a warning, and a bundle that holds one is corrupt.

/// Why `path` cannot be a document path, or `None` when it can: a relative, forward-slash
/// path inside the collection. Refused: empty, absolute (`/x`, `C:…`), any `..` or `.`
/// segment or empty segment, a backslash (read as `/` by browsers), a control character, and
/// anything a URL parser reads as a scheme (`javascript:alert(1).md`, `https:x`).
pub fn document_path_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("is empty");
    }
    if path.starts_with('/') {
        return Some("is absolute");
    }
    if path.contains('\\') {
        return Some("contains a backslash");
    }
    if path.chars().any(char::is_control) {
        return Some("contains a control character");
    }
    if path.chars().any(is_format_char) {
        // U+202E shows `rtl-\u{202e}gnp.md` as `rtl-dm.png`; a zero-width space makes two
        // paths that read alike.
        return Some("contains an invisible formatting character (bidi control, zero-width)");
    }
    if path
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Some("has an empty, '.' or '..' segment");
    }
    if url_scheme(path).is_some() {
        return Some("starts like a URL scheme (name:)");
    }
    None
}

pub use crate::analyze::is_format_char;

/// Whether `c` reorders the text around it (the bidi embeddings, overrides, isolates and
/// marks): what makes `abc\u{202E}txt.exe` read as `abcexe.txt`.
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{61C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

/// The scheme of an absolute URL (`javascript` in `javascript:x`), `None` for a relative one:
/// an ASCII letter, then letters, digits, `+`, `-`, `.`, up to a `:` that comes before any
/// `/`, `?` or `#` (the URL standard's scheme state).
pub fn url_scheme(url: &str) -> Option<&str> {
    let end = url.find([':', '/', '?', '#'])?;
    let scheme = &url[..end];
    let mut chars = scheme.chars();
    let valid = url[end..].starts_with(':')
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(scheme)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_pass() {
        for ok in [
            "a.md",
            "guide/install.md",
            "ru/руководство.md",
            "12:30 notes.md",
            "a b/c#d?.md",
            "notes/a:b.md",
        ] {
            assert_eq!(document_path_problem(ok), None, "{ok}");
        }
    }

    #[test]
    fn anything_a_browser_reads_otherwise_is_refused() {
        for bad in [
            "",
            "/etc/passwd.md",
            "../up.md",
            "a/../b.md",
            "./a.md",
            "a//b.md",
            "a\\b.md",
            "javascript:alert(1).md",
            "JavaScript:x.md",
            "https:x.md",
            "c:x.md",
            "a\nb.md",
            "data:text/html,x.md",
            // Regression (hostile inputs): bidi and zero-width characters were let through.
            "rtl-\u{202E}gnp.md",
            "a\u{200B}b.md",
            "\u{FEFF}a.md",
            "a\u{2066}b\u{2069}.md",
        ] {
            assert!(document_path_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn schemes_are_read_as_the_url_standard_does() {
        assert_eq!(url_scheme("javascript:x"), Some("javascript"));
        assert_eq!(url_scheme("a+b-c.d:x"), Some("a+b-c.d"));
        assert_eq!(url_scheme("1a:x"), None);
        assert_eq!(url_scheme("a/b:c"), None);
        assert_eq!(url_scheme("?a:b"), None);
        assert_eq!(url_scheme("java script:x"), None);
        assert_eq!(url_scheme("plain"), None);
    }
}
