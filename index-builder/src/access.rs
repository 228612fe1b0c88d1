//! `index-builder build --access FILE`: which groups of readers may see which documents, by
//! path. The bundle stores each restricted document's requirements
//! ([`docloupe::bundle::AccessSection`]); `docloupe serve` answers each user from the
//! documents their groups open.
//!
//! ```toml
//! # Documents no rule matches (absent: every reader).
//! default = ["staff"]
//!
//! [[rule]]
//! paths = ["hr/", "finance/**/*.xlsx"]
//! groups = ["hr", "finance"]      # a reader needs one of them
//!
//! [[rule]]
//! paths = ["hr/handbook.md"]
//! groups = ["*"]                  # every reader
//! ```
//!
//! Patterns are globs over document paths relative to the folder (`*` stays within a folder
//! name, `**` crosses folders); a pattern ending in `/` is everything under that folder.
//! Where several rules match a document the last one decides, so a later rule makes an
//! exception to an earlier one. A page's own `access:` front matter is a second requirement
//! on top of the rule's: it can narrow who reads the page, never widen it.

use std::path::Path;

use anyhow::{bail, Context, Result};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;

/// The group that stands for every reader.
pub const EVERYONE: &str = "*";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AccessFile {
    default: Option<Vec<String>>,
    #[serde(default)]
    rule: Vec<RuleEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleEntry {
    paths: Vec<String>,
    groups: Vec<String>,
}

/// The access file, ready to label documents.
#[derive(Debug)]
pub struct AccessRules {
    /// For documents no rule matches: `None` is every reader.
    default: Option<Vec<String>>,
    /// In file order: the patterns and the groups they give (`None`: every reader).
    rules: Vec<(GlobSet, Option<Vec<String>>)>,
}

impl AccessRules {
    /// Reads an access file; every mistake in it stops the build (a typo must never open a
    /// document to everyone).
    pub fn load(path: &Path) -> Result<AccessRules> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the access file {}", path.display()))?;
        AccessRules::parse(&text).with_context(|| format!("in the access file {}", path.display()))
    }

    pub fn parse(text: &str) -> Result<AccessRules> {
        let file: AccessFile = toml::from_str(text).context("it is not a valid access file")?;
        let default = match file.default {
            None => None,
            Some(g) => groups(&g).context("default")?,
        };
        let mut rules = Vec::new();
        for (i, r) in file.rule.into_iter().enumerate() {
            let at = || format!("rule {}", i + 1);
            if r.paths.is_empty() {
                bail!("{}: paths lists no pattern", at());
            }
            let mut set = GlobSetBuilder::new();
            for p in &r.paths {
                let pattern = p.trim_start_matches("./").trim_start_matches('/');
                let pattern = match pattern.strip_suffix('/') {
                    Some(folder) => format!("{folder}/**"),
                    None => pattern.to_owned(),
                };
                let glob = GlobBuilder::new(&pattern)
                    .literal_separator(true)
                    .build()
                    .with_context(|| format!("{}: {p:?} is not a glob", at()))?;
                set.add(glob);
            }
            let set = set.build().with_context(at)?;
            rules.push((set, groups(&r.groups).with_context(at)?));
        }
        Ok(AccessRules { default, rules })
    }

    /// The groups the file gives the document at `path` (relative, forward slashes), one of
    /// which a reader needs; `None`: every reader.
    pub fn groups_for(&self, path: &str) -> Option<&[String]> {
        self.rules
            .iter()
            .rev()
            .find(|(set, _)| set.is_match(path))
            .map_or(self.default.as_deref(), |(_, g)| g.as_deref())
    }
}

/// A rule's groups: valid names, or `"*"` alone (every reader: `None`).
fn groups(list: &[String]) -> Result<Option<Vec<String>>> {
    if list.is_empty() {
        bail!("groups lists no group (\"*\" is every reader)");
    }
    if list.iter().any(|g| g == EVERYONE) {
        if list.len() > 1 {
            bail!("\"*\" (every reader) goes alone, not beside other groups");
        }
        return Ok(None);
    }
    if let Some(bad) = list.iter().find(|g| !docloupe::bundle::valid_group(g)) {
        bail!(
            "{bad:?} is not a group name (1 to {} letters, digits, '-', '_', '.', '@')",
            docloupe::bundle::MAX_GROUP_CHARS
        );
    }
    let mut g = list.to_vec();
    g.sort();
    g.dedup();
    Ok(Some(g))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_matching_rule_decides_and_the_default_covers_the_rest() {
        let rules = AccessRules::parse(
            r#"
default = ["staff"]
[[rule]]
paths = ["hr/", "finance/**/*.xlsx"]
groups = ["hr", "finance", "hr"]
[[rule]]
paths = ["hr/handbook.md", "/public/*"]
groups = ["*"]
"#,
        )
        .unwrap();
        let g = |p: &str| rules.groups_for(p).map(|g| g.join(","));
        assert_eq!(g("hr/pay/2026.md").as_deref(), Some("finance,hr"));
        assert_eq!(g("finance/q1/totals.xlsx").as_deref(), Some("finance,hr"));
        assert_eq!(g("finance/q1/notes.md").as_deref(), Some("staff"));
        assert_eq!(g("hr/handbook.md"), None);
        assert_eq!(g("public/index.md"), None);
        // `*` stays within a folder.
        assert_eq!(g("public/deep/page.md").as_deref(), Some("staff"));
        assert_eq!(g("hrx/page.md").as_deref(), Some("staff"));
    }

    #[test]
    fn mistakes_stop_the_build() {
        for bad in [
            "default = []",
            "default = [\"a b\"]",
            "[[rule]]\npaths = []\ngroups = [\"hr\"]",
            "[[rule]]\npaths = [\"a/\"]\ngroups = []",
            "[[rule]]\npaths = [\"a/\"]\ngroups = [\"*\", \"hr\"]",
            "[[rule]]\npaths = [\"a/[\"]\ngroups = [\"hr\"]",
            "[[rule]]\npath = [\"a/\"]\ngroups = [\"hr\"]",
            "defaults = [\"hr\"]",
        ] {
            assert!(AccessRules::parse(bad).is_err(), "{bad}");
        }
        let open = AccessRules::parse("").unwrap();
        assert_eq!(open.groups_for("any.md"), None);
    }
}
