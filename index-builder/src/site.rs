//! Site: a readable HTML rendering of a documentation folder, for the demo and for anyone
//! who has markdown but no site generator.
//!
//! Every heading that is a section in the bundle gets the bundle's anchor as its `id` (the
//! same `Slugger`, fed the same headings in the same order as `ingest::parse_markdown`), so a
//! result's `documentPath` + `anchor` lands on the exact section of `path.html#anchor`.
//! Raw HTML in the markdown is shown as text, never passed through: documentation that
//! quotes `<script>` must not run it.

use std::path::Path;

use anyhow::{Context, Result};
use docloupe::bundle::url_scheme;
use pulldown_cmark::{html, CodeBlockKind, CowStr, Event, Parser, Tag, TagEnd};

use crate::ingest::{self, collapse, markdown_options_for, Format, Slugger};

/// One rendered page.
pub struct Page {
    /// Relative path of the output, `guide/install.html` for `guide/install.md`.
    pub path: String,
    pub title: String,
    pub html: String,
}

/// Where a document's page lives: its relative path with `.md`/`.markdown` replaced by `.html`,
/// other formats' with `.html` appended (`notes.txt.html`), so no two documents share a page.
pub fn page_path(rel: &str) -> String {
    let stem = rel
        .strip_suffix(".md")
        .or_else(|| rel.strip_suffix(".markdown"))
        .unwrap_or(rel);
    format!("{stem}.html")
}

/// A plain-text document: its title, then the text as it is (line breaks kept).
fn render_text(title: &str, source: &str) -> String {
    format!(
        "<h1>{}</h1>\n<pre class=\"plain-text\">{}</pre>\n",
        escape(title),
        escape(source)
    )
}

/// The markdown body (front matter already cut off) as HTML, headings carrying the bundle's
/// anchors. Nothing from the document becomes markup that runs: raw HTML is text, heading
/// attributes other than the id and classes are dropped (`{onfocus=…}` would be a live event
/// handler), and a link or image whose target is not http(s), mailto or relative
/// ([`safe_url`]) keeps its text but loses the link.
pub fn render_body(body: &str) -> String {
    // As `ingest::parse_markdown` reads it (the same line ends, the same tables), so the
    // headings and their anchors are the bundle's.
    let body = &*ingest::unify_line_ends(body);
    let (options, _) = markdown_options_for(body);
    let events: Vec<Event> = Parser::new_ext(body, options).collect();
    let mut slugs = Slugger::default();
    let mut out = Vec::with_capacity(events.len());
    let mut depth = 0usize;
    // For each open link and image: whether its start was dropped (so is its end).
    let (mut links, mut images) = (Vec::new(), Vec::new());
    for (i, event) in events.iter().enumerate() {
        let event = match event {
            Event::Start(Tag::Heading {
                level, id, classes, ..
            }) => {
                let id = if depth == 0 {
                    Some(CowStr::from(match id {
                        Some(id) => slugs.reserve(id),
                        None => slugs.slug(&collapse(&heading_text(&events[i + 1..]))),
                    }))
                } else {
                    id.clone()
                };
                depth += 1;
                Event::Start(Tag::Heading {
                    level: *level,
                    id,
                    classes: classes.clone(),
                    attrs: Vec::new(),
                })
            }
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                depth += 1;
                let Some(dest) = safe_url(dest_url) else {
                    links.push(true);
                    continue;
                };
                links.push(false);
                Event::Start(Tag::Link {
                    link_type: *link_type,
                    dest_url: CowStr::from(link_target(&dest)),
                    title: title.clone(),
                    id: id.clone(),
                })
            }
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                depth += 1;
                let Some(dest) = safe_url(dest_url) else {
                    images.push(true);
                    continue;
                };
                images.push(false);
                Event::Start(Tag::Image {
                    link_type: *link_type,
                    dest_url: CowStr::from(dest),
                    title: title.clone(),
                    id: id.clone(),
                })
            }
            Event::End(end @ (TagEnd::Link | TagEnd::Image)) => {
                depth = depth.saturating_sub(1);
                let open = if *end == TagEnd::Link {
                    &mut links
                } else {
                    &mut images
                };
                if open.pop().unwrap_or(false) {
                    continue;
                }
                Event::End(*end)
            }
            // A raw HTML block reads best as what it is: code.
            Event::Start(Tag::HtmlBlock) => {
                depth += 1;
                Event::Start(Tag::CodeBlock(CodeBlockKind::Indented))
            }
            Event::End(TagEnd::HtmlBlock) => {
                depth = depth.saturating_sub(1);
                Event::End(TagEnd::CodeBlock)
            }
            Event::Start(tag) => {
                depth += 1;
                Event::Start(tag.clone())
            }
            Event::End(end) => {
                depth = depth.saturating_sub(1);
                Event::End(*end)
            }
            // Shown, not run (the bundle drops raw HTML from the indexed text altogether).
            Event::Html(h) | Event::InlineHtml(h) => Event::Text(h.clone()),
            other => other.clone(),
        };
        out.push(event);
    }
    let mut html_out = String::with_capacity(body.len() * 3 / 2);
    html::push_html(&mut html_out, out.into_iter());
    html_out
}

/// A link or image target from a document as it may appear on a page: `Some` (cleaned) for
/// http, https, mailto and relative URLs, `None` for any other scheme (`javascript:`,
/// `data:`, `vbscript:`, …). Reads the scheme as a browser does: ASCII tab and line breaks
/// anywhere are ignored (`java\tscript:`), leading and trailing controls and spaces too, and
/// the scheme is case-insensitive.
pub fn safe_url(dest: &str) -> Option<String> {
    let cleaned: String = dest
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let url = cleaned.trim_matches(|c: char| c <= ' ');
    match url_scheme(url) {
        None => Some(url.to_owned()),
        Some(s) if ["http", "https", "mailto"].contains(&s.to_ascii_lowercase().as_str()) => {
            Some(url.to_owned())
        }
        Some(_) => None,
    }
}

/// A page's URL relative to a page `root` (`""` or `../`…) below the site root: each path
/// segment percent-encoded, after `./` at the top, so a file named `javascript:x.md` or
/// `a#b.md` links to that page and nothing else.
pub fn page_href(root: &str, path: &str) -> String {
    let mut out = if root.is_empty() {
        String::from("./")
    } else {
        root.to_owned()
    };
    for (i, segment) in path.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        for b in segment.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// A heading's text as `parse_markdown` collects it: text and code spans, breaks as spaces.
fn heading_text(events: &[Event]) -> String {
    let mut text = String::new();
    for event in events {
        match event {
            Event::End(TagEnd::Heading(_)) => break,
            Event::Text(t) | Event::Code(t) => text.push_str(t),
            Event::SoftBreak => text.push(' '),
            Event::HardBreak => text.push('\n'),
            _ => {}
        }
    }
    text
}

/// Links to other markdown pages point at their rendered pages; everything else is kept.
fn link_target(dest: &str) -> String {
    let (path, fragment) = match dest.find('#') {
        Some(i) => dest.split_at(i),
        None => (dest, ""),
    };
    let external = url_scheme(path).is_some() || path.starts_with('/');
    if !external && (path.ends_with(".md") || path.ends_with(".markdown")) {
        format!("{}{fragment}", page_path(path))
    } else {
        dest.to_owned()
    }
}

/// Escapes text for an HTML text node or a double-quoted attribute.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    html::push_html(&mut out, std::iter::once(Event::Text(CowStr::from(s))));
    out.replace('"', "&quot;")
}

/// Renders every document under `root` into pages (the caller writes them). Unreadable
/// files are skipped with a warning, as in a build.
pub fn render_site(root: &Path, warnings: &mut Vec<String>) -> Result<Vec<Page>> {
    let files = ingest::discover(root, warnings);
    let mut pages = Vec::with_capacity(files.len());
    // PDFs, Word files and workbooks are served as they are; the site renders the text formats.
    for file in files.into_iter().filter(|f| f.format.is_text()) {
        let source = match ingest::read_source(&file, file.format.max_bytes())
            .and_then(|b| crate::convert::decode_text(&b).map(|t| t.into_owned()))
        {
            Ok(s) => s,
            Err(e) => {
                warnings.push(format!("skipped {}: {e}", file.rel));
                continue;
            }
        };
        let source = ingest::unify_line_ends(&source).into_owned();
        let stem = Path::new(&file.rel)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut ignored = Vec::new();
        let parsed = ingest::parse_document(file.format, &source, &stem, &mut ignored, &file.rel);
        let html = match file.format {
            Format::Markdown => render_body(&source[ingest::body_offset(&source)..]),
            _ => render_text(&parsed.title, &source),
        };
        pages.push(Page {
            path: page_path(&file.rel),
            title: parsed.title,
            html,
        });
    }
    if pages.is_empty() {
        anyhow::bail!(
            "no documents (*.md, *.markdown, *.txt) under {}",
            root.display()
        );
    }
    Ok(pages)
}

/// The Content-Security-Policy every page carries as a `<meta>` tag: the strict policy
/// www/README.md documents (`CSP` in www/serve.mjs) without `frame-ancestors`, which a
/// `<meta>` policy cannot set (send it as a header). Script runs only from the site's own
/// files, so even markup that slipped into a page could not run.
pub const DEFAULT_CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
     worker-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' data:; \
     object-src 'none'; base-uri 'self'; form-action 'self'";

/// Wraps each page in the site's layout: a header with the site title and the search box,
/// a list of every page, the article. `head` is inserted into every `<head>` as it is (the
/// search component's script and configuration), after the `csp` policy's `<meta>` tag
/// (none when `csp` is empty).
pub fn layout(pages: &[Page], site_title: &str, head: &str, csp: &str) -> Vec<(String, Vec<u8>)> {
    let csp = if csp.is_empty() {
        String::new()
    } else {
        format!(
            "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n",
            escape(csp)
        )
    };
    let mut files = Vec::with_capacity(pages.len() + 2);
    for page in pages {
        let root = "../".repeat(page.path.matches('/').count());
        let nav = nav(pages, &root, Some(&page.path));
        let html = format!(
            "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n{csp}\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <link rel=\"icon\" href=\"data:,\">\n<title>{title} · {site}</title>\n<link rel=\"stylesheet\" href=\"{root}site.css\">\n{head}\n</head>\n\
             <body>\n<header class=\"site-header\"><a class=\"site-title\" href=\"{root}index.html\">{site}</a>\
             <docloupe-search></docloupe-search></header>\n<div class=\"site-body\">\n{nav}\n\
             <main id=\"content\"><article>\n{body}</article></main>\n</div>\n</body>\n</html>\n",
            title = escape(&page.title),
            site = escape(site_title),
            body = page.html,
        );
        files.push((page.path.clone(), html.into_bytes()));
    }
    let index = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n{csp}\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <link rel=\"icon\" href=\"data:,\">\n<title>{site}</title>\n<link rel=\"stylesheet\" href=\"site.css\">\n{head}\n</head>\n\
         <body>\n<header class=\"site-header\"><a class=\"site-title\" href=\"index.html\">{site}</a>\
         <docloupe-search></docloupe-search></header>\n<div class=\"site-body\">\n{nav}\n\
         <main id=\"content\"><article>\n<h1>{site}</h1>\n<p>{n} pages. Search with Ctrl+K or /.</p>\n</article></main>\n</div>\n</body>\n</html>\n",
        site = escape(site_title),
        nav = nav(pages, "", None),
        n = pages.len(),
    );
    // A top-level index.md is the home page; otherwise the list of pages is.
    if !pages.iter().any(|p| p.path == "index.html") {
        files.push(("index.html".into(), index.into_bytes()));
    }
    files.push(("site.css".into(), SITE_CSS.as_bytes().to_vec()));
    files
}

/// The page list, in path order, with each folder's name before its pages.
fn nav(pages: &[Page], root: &str, current: Option<&str>) -> String {
    let mut out = String::from("<nav class=\"site-nav\" aria-label=\"Pages\"><ul>\n");
    let mut folder = "";
    for p in pages {
        let here_folder = p.path.rsplit_once('/').map_or("", |(dir, _)| dir);
        if here_folder != folder {
            folder = here_folder;
            out.push_str(&format!(
                "<li class=\"nav-folder\">{}</li>\n",
                escape(folder)
            ));
        }
        let here = if current == Some(p.path.as_str()) {
            " aria-current=\"page\""
        } else {
            ""
        };
        out.push_str(&format!(
            "<li><a href=\"{}\"{here}>{}</a></li>\n",
            escape(&page_href(root, &p.path)),
            escape(&p.title)
        ));
    }
    out.push_str("</ul></nav>");
    out
}

/// `index-builder site DIR --out OUT`: renders and writes the whole site atomically.
pub fn write_site(
    root: &Path,
    out: &Path,
    title: &str,
    head: &str,
    csp: &str,
) -> Result<(usize, Vec<String>)> {
    let mut warnings = Vec::new();
    let pages = render_site(root, &mut warnings)?;
    let files = layout(&pages, title, head, csp);
    crate::output::write_dir_atomically(out, &files, "site")
        .with_context(|| format!("cannot write the site to {}", out.display()))?;
    Ok((pages.len(), warnings))
}

const SITE_CSS: &str = include_str!("site.css");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_carry_the_bundles_anchors_and_raw_html_is_text() {
        let md = "# Title\n\nIntro <img src=x onerror=alert(1)>\n\n## Set up\n\ntext\n\n## Set up\n\nmore\n\n\
                  ### Custom {#mine}\n\nx\n\n<script>alert(1)</script>\n\nSee [install](install.md#windows) \
                  and [web](https://example.com/a.md).\n";
        let html = render_body(md);
        assert!(html.contains("<h1 id=\"title\">"), "{html}");
        assert!(html.contains("<h2 id=\"set-up\">"), "{html}");
        assert!(html.contains("<h2 id=\"set-up-1\">"), "{html}");
        assert!(html.contains("<h3 id=\"mine\">"), "{html}");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(html.contains("href=\"install.html#windows\""), "{html}");
        assert!(html.contains("href=\"https://example.com/a.md\""), "{html}");
    }

    #[test]
    fn heading_attributes_never_become_event_handlers() {
        let md = "## Focus {tabindex=0 autofocus onfocus=document.title='x' .note #here}\n\n\
                  > ### Quoted {onclick=alert(1)}\n\n- #### Listed {onmouseover=alert(1)}\n";
        let html = render_body(md);
        for bad in ["onfocus", "autofocus", "tabindex", "onclick", "onmouseover"] {
            assert!(!html.contains(bad), "{bad} in {html}");
        }
        assert!(html.contains("<h2 id=\"here\" class=\"note\">"), "{html}");
    }

    /// Every `href` and `src` value of `html`.
    fn targets(html: &str) -> Vec<String> {
        let mut out = Vec::new();
        for attr in ["href=\"", "src=\""] {
            for (i, _) in html.match_indices(attr) {
                let rest = &html[i + attr.len()..];
                out.push(rest[..rest.find('"').unwrap()].to_owned());
            }
        }
        out
    }

    #[test]
    fn only_http_mailto_and_relative_targets_stay_links() {
        let md = "[a](javascript:alert(1)) [b](JavaScript:alert(2)) [c](java&#9;script:alert(3)) \
                  [d](&#106;avascript:alert(4)) <javascript:alert(5)> \
                  [f](data:text/html;base64,PHNjcmlwdD4=) [g](vbscript:x) ![h](javascript:alert(8)) \
                  [![i](ok.png)](javascript:alert(9)) [j][ref] [[k]]\n\n\
                  [ref]: javascript:alert(10)\n\n\
                  [w](https://example.com/x) [m](mailto:a@b.c) [r](guide/x.md#y) [q](?a=1) [t](#top) <https://example.org> <a@b.c>\n";
        let html = render_body(md);
        let targets = targets(&html);
        assert_eq!(
            targets,
            [
                "https://example.com/x",
                "mailto:a@b.c",
                "guide/x.html#y",
                "?a=1",
                "#top",
                "https://example.org",
                "mailto:a@b.c",
                "ok.png"
            ],
            "{html}"
        );
        // The dropped links keep their text.
        for text in [
            ">a ",
            " b ",
            " c ",
            " d ",
            "javascript:alert(5)",
            " f ",
            " g ",
            " j ",
        ] {
            assert!(html.contains(text), "{text:?} dropped: {html}");
        }
        assert!(html.contains("alt=\"i\""), "{html}");
    }

    #[test]
    fn targets_are_judged_as_a_browser_reads_them() {
        for bad in [
            "javascript:x",
            " javascript:x",
            "\u{0}javascript:x",
            "jav\nascript:x",
            "JAVASCRIPT:x",
            "data:text/html,x",
            "file:///etc/passwd",
        ] {
            assert_eq!(safe_url(bad), None, "{bad:?}");
        }
        for good in [
            "https://a.b/c",
            "HTTP://a",
            "mailto:x@y",
            "a/b.md",
            "/abs",
            "#f",
            "//cdn/x",
        ] {
            assert!(safe_url(good).is_some(), "{good:?}");
        }
    }

    #[test]
    fn page_links_are_encoded_paths_below_the_site() {
        assert_eq!(
            page_href("", "javascript:alert(1).html"),
            "./javascript%3Aalert%281%29.html"
        );
        assert_eq!(page_href("../", "a b/c#d.html"), "../a%20b/c%23d.html");
        assert_eq!(page_href("", "ru/дом.html"), "./ru/%D0%B4%D0%BE%D0%BC.html");
        let pages = [Page {
            path: "javascript:alert(1).html".into(),
            title: "t".into(),
            html: String::new(),
        }];
        let files = layout(&pages, "S", "", DEFAULT_CSP);
        let page = String::from_utf8(files[0].1.clone()).unwrap();
        assert!(
            page.contains("href=\"./javascript%3Aalert%281%29.html\""),
            "{page}"
        );
        assert!(
            page.contains("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'self'; script-src 'self' 'wasm-unsafe-eval';"),
            "{page}"
        );
        let none = layout(&pages, "S", "", "");
        assert!(!String::from_utf8_lossy(&none[0].1).contains("Content-Security-Policy"));
    }

    #[test]
    fn pages_live_beside_their_sources() {
        assert_eq!(page_path("guide/install.md"), "guide/install.html");
        assert_eq!(page_path("a.markdown"), "a.html");
        assert_eq!(page_path("notes/changes.txt"), "notes/changes.txt.html");
        assert_eq!(
            escape("<a href=\"x\">&"),
            "&lt;a href=&quot;x&quot;&gt;&amp;"
        );
    }
}
