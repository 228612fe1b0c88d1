//! Citations: a CSL-JSON bibliography (`--references refs.json`, as Zotero or Better BibTeX
//! export it) matched to the documents, so results can be cited as `[@citekey, p. 12]`.
//!
//! A document is matched, in this order, by a `citekey` in its front matter, by its file name
//! (`smith2020.pdf` ↔ `smith2020`), or by a file attached to the entry (`file` /
//! `attachments`, compared by relative path, then by file name). An unmatched document gets
//! a `MetadataMissing` warning with a hint, never an error.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use docloupe::bundle::Citation;
use serde::Serialize;
use serde_json::Value;

/// The bibliography, indexed for matching.
#[derive(Debug, Default)]
pub struct References {
    entries: Vec<Citation>,
    by_key: HashMap<String, usize>,
    by_key_folded: HashMap<String, usize>,
    /// Attached file path (forward slashes, lowercase) → entry.
    by_path: HashMap<String, usize>,
    /// Attached file name (lowercase) → entry.
    by_name: HashMap<String, usize>,
    /// Where the references came from, for hints.
    pub source: String,
}

/// A structured warning in the build report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MetadataWarning {
    /// `MetadataMissing`.
    pub code: &'static str,
    pub document_path: String,
    pub message: String,
    pub hint: String,
}

impl References {
    pub fn load(path: &Path, warnings: &mut Vec<String>) -> Result<References> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read references {}", path.display()))?;
        Self::parse(&text, &path.display().to_string(), warnings)
    }

    /// Parses CSL-JSON: an array of entries (or one entry object, or `{"items": [...]}`).
    /// Entries without an id or citation key are skipped with a warning.
    pub fn parse(text: &str, source: &str, warnings: &mut Vec<String>) -> Result<References> {
        // Zotero on Windows and other exporters begin the file with a byte order mark.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let json: Value = serde_json::from_str(text).with_context(|| {
            format!("references {source} are not valid JSON (CSL-JSON expected)")
        })?;
        let items = match json {
            Value::Array(items) => items,
            Value::Object(mut o) if o.contains_key("items") => match o.remove("items") {
                Some(Value::Array(items)) => items,
                _ => bail!("references {source}: \"items\" must be an array of CSL-JSON entries"),
            },
            o @ Value::Object(_) => vec![o],
            _ => bail!("references {source}: expected a CSL-JSON array of entries"),
        };
        let mut refs = References {
            source: source.to_owned(),
            ..Default::default()
        };
        for (i, item) in items.iter().enumerate() {
            let Some(c) = citation(item) else {
                warnings.push(format!(
                    "references {source}: entry {i} has no citation-key or id; skipped"
                ));
                continue;
            };
            if refs.by_key.contains_key(&c.citekey) {
                warnings.push(format!(
                    "references {source}: citation key {:?} appears twice; the first entry is used",
                    c.citekey
                ));
                continue;
            }
            let n = refs.entries.len();
            refs.by_key.insert(c.citekey.clone(), n);
            refs.by_key_folded
                .entry(c.citekey.to_lowercase())
                .or_insert(n);
            for file in attachments(item) {
                let file = file.replace('\\', "/").to_lowercase();
                if let Some(name) = file.rsplit('/').next() {
                    refs.by_name.entry(name.to_owned()).or_insert(n);
                }
                refs.by_path.entry(file).or_insert(n);
            }
            refs.entries.push(c);
        }
        Ok(refs)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entry for the document at `rel` (relative path, forward slashes) whose front
    /// matter names `citekey`, if any.
    pub fn find(&self, rel: &str, citekey: Option<&str>) -> Option<&Citation> {
        let by = |i: &usize| &self.entries[*i];
        if let Some(key) = citekey {
            let key = key.trim().trim_start_matches('@');
            if let Some(c) = self.by_key.get(key).map(by) {
                return Some(c);
            }
        }
        let name = rel.rsplit('/').next().unwrap_or(rel);
        let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
        if let Some(c) = self
            .by_key
            .get(stem)
            .or_else(|| self.by_key_folded.get(&stem.to_lowercase()))
            .map(by)
        {
            return Some(c);
        }
        let rel = rel.to_lowercase();
        // An attachment path is usually absolute on the exporting machine: match the longest
        // suffix of it that is this document's relative path.
        if let Some(c) = self
            .by_path
            .iter()
            .filter(|(p, _)| p.ends_with(&format!("/{rel}")) || **p == rel)
            .min_by_key(|(p, i)| (p.len(), **i))
            .map(|(_, i)| by(i))
        {
            return Some(c);
        }
        self.by_name.get(&name.to_lowercase()).map(by)
    }

    pub fn missing(&self, rel: &str) -> MetadataWarning {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
        let front_matter = if matches!(ext, "md" | "markdown") {
            "add `citekey: <key>` to its front matter, "
        } else {
            ""
        };
        MetadataWarning {
            code: "MetadataMissing",
            document_path: rel.to_owned(),
            message: format!(
                "no entry of {} matches {rel}; its results carry no citation",
                self.source
            ),
            hint: format!(
                "{front_matter}rename it to <citekey>.{ext} after its entry's citation key, or attach it to its entry in Zotero and export the references again"
            ),
        }
    }
}

fn string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => {
            Some(s.split_whitespace().collect::<Vec<_>>().join(" ")).filter(|s| !s.is_empty())
        }
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// One CSL-JSON entry as a citation.
fn citation(item: &Value) -> Option<Citation> {
    let citekey = item
        .get("citation-key")
        .or_else(|| item.get("citationKey"))
        .or_else(|| item.get("id"))
        .and_then(string)?;
    let authors = item
        .get("author")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|a| {
                    if let Some(l) = a.get("literal").and_then(string) {
                        return Some(l);
                    }
                    let family = a.get("family").and_then(string);
                    let given = a.get("given").and_then(string);
                    match (family, given) {
                        (Some(f), Some(g)) => Some(format!("{f}, {g}")),
                        (Some(f), None) => Some(f),
                        (None, Some(g)) => Some(g),
                        (None, None) => None,
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let split = |v: Option<&Value>| -> Vec<String> {
        let mut out: Vec<String> = match v {
            Some(Value::String(s)) => s
                .split([',', ';'])
                .filter_map(|t| string(&Value::String(t.to_owned())))
                .collect(),
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|t| string(t).or_else(|| t.get("tag").and_then(string)))
                .collect(),
            _ => Vec::new(),
        };
        out.sort();
        out.dedup();
        out
    };
    Some(Citation {
        citekey,
        title: item.get("title").and_then(string),
        authors,
        year: item.get("issued").and_then(year),
        doi: item.get("DOI").or_else(|| item.get("doi")).and_then(string),
        url: item.get("URL").or_else(|| item.get("url")).and_then(string),
        tags: split(item.get("keyword").or_else(|| item.get("tags"))),
        collections: split(item.get("collections")),
    })
}

/// The year of a CSL date: `{"date-parts": [[2020, 5]]}`, `{"raw": "2020-05"}` or
/// `{"literal": "Spring 2020"}`.
fn year(issued: &Value) -> Option<i32> {
    let part = issued
        .get("date-parts")
        .and_then(|p| p.get(0))
        .and_then(|p| p.get(0));
    if let Some(y) = part.and_then(|p| match p {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }) {
        return i32::try_from(y).ok();
    }
    let text = issued
        .get("raw")
        .or_else(|| issued.get("literal"))
        .and_then(Value::as_str)
        .or_else(|| issued.as_str())?;
    text.split(|c: char| !c.is_ascii_digit())
        .find(|p| p.len() == 4)
        .and_then(|p| p.parse().ok())
}

/// Paths of the files attached to an entry: `file` (one path, or several separated by `;`)
/// and `attachments` (`[{"path": ...}]`).
fn attachments(item: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(f) = item.get("file").and_then(Value::as_str) {
        out.extend(
            f.split(';')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        );
    }
    if let Some(list) = item.get("attachments").and_then(Value::as_array) {
        out.extend(
            list.iter()
                .filter_map(|a| {
                    a.get("path")
                        .or_else(|| a.get("localPath"))
                        .and_then(Value::as_str)
                })
                .map(str::to_owned),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const REFS: &str = r#"[
      {"id": "smith2020", "type": "article-journal", "title": "Caching  at the edge",
       "author": [{"family": "Smith", "given": "Ada"}, {"literal": "The Cache Group"}],
       "issued": {"date-parts": [[2020, 5, 1]]}, "DOI": "10.1000/xyz",
       "keyword": "caching, edge; cdn", "collections": ["Thesis"]},
      {"id": "http://zotero.org/users/1/items/ABC", "citation-key": "doe2019", "title": "Guide",
       "issued": {"raw": "2019-03"}, "URL": "https://example.org/guide",
       "file": "/home/ada/Zotero/storage/ABC/Doe - Guide.pdf"},
      {"type": "book", "title": "no key"},
      {"id": "smith2020", "title": "duplicate"}
    ]"#;

    /// Regression (hostile inputs, issue 59): a CSL-JSON file starting with a byte order mark
    /// was refused at "line 1 column 1".
    #[test]
    fn a_byte_order_mark_before_the_json_is_skipped() {
        let mut w = Vec::new();
        let refs = References::parse(&format!("\u{feff}{REFS}"), "refs.json", &mut w).unwrap();
        let plain = References::parse(REFS, "refs.json", &mut Vec::new()).unwrap();
        assert_eq!(
            format!("{:?}", refs.entries),
            format!("{:?}", plain.entries)
        );
        assert!(!w.iter().any(|w| w.contains("not valid JSON")), "{w:?}");
    }

    #[test]
    fn csl_json_entries_become_citations() {
        let mut w = Vec::new();
        let refs = References::parse(REFS, "refs.json", &mut w).unwrap();
        assert_eq!(refs.len(), 2);
        assert_eq!(w.len(), 2, "{w:?}");
        let c = refs.find("papers/smith2020.pdf", None).unwrap();
        assert_eq!(c.citekey, "smith2020");
        assert_eq!(c.title.as_deref(), Some("Caching at the edge"));
        assert_eq!(c.authors, vec!["Smith, Ada", "The Cache Group"]);
        assert_eq!(c.year, Some(2020));
        assert_eq!(c.doi.as_deref(), Some("10.1000/xyz"));
        assert_eq!(c.tags, vec!["caching", "cdn", "edge"]);
        assert_eq!(c.collections, vec!["Thesis"]);
        // citation-key wins over a URI id; found by front matter and by attachment.
        let d = refs.find("notes.md", Some("@doe2019")).unwrap();
        assert_eq!((d.citekey.as_str(), d.year), ("doe2019", Some(2019)));
        assert_eq!(
            refs.find("library/Doe - Guide.pdf", None).unwrap().citekey,
            "doe2019"
        );
        assert_eq!(
            refs.find("SMITH2020.docx", None).unwrap().citekey,
            "smith2020"
        );
        assert!(refs.find("other.pdf", None).is_none());
        let m = refs.missing("x/other.pdf");
        assert_eq!(m.code, "MetadataMissing");
        assert!(m.hint.contains("<citekey>.pdf"), "{}", m.hint);
        assert!(!m.hint.contains("front matter"), "{}", m.hint);
        assert!(refs.missing("a.md").hint.contains("front matter"));
    }

    #[test]
    fn bad_references_are_a_clear_error() {
        let mut w = Vec::new();
        let e = References::parse("{not json", "r.json", &mut w).unwrap_err();
        assert!(format!("{e:#}").contains("r.json"), "{e:#}");
        assert!(References::parse("42", "r.json", &mut w).is_err());
    }
}
