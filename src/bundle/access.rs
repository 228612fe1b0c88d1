//! Who may read which documents (format 10). `index-builder build --access` (path rules) and
//! a markdown page's `access:` front matter label documents with the groups that may read
//! them; the bundle stores the labels in its `access` section, present only when some
//! document is restricted. A reader must hold, for every requirement of a document, one of
//! the requirement's groups: the access file's rule and the page's own `access:` are two
//! requirements, so the page can narrow what the file allows but never widen it.
//!
//! The engine answers a request from the documents its [`crate::search::Access`] opens
//! ([`crate::search::access`]), before anything is ranked or counted.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The `access` section.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AccessSection {
    /// Every group a requirement names, sorted, each once.
    pub groups: Vec<String>,
    /// The restricted documents in document order: (document index, its requirements), each
    /// requirement the groups (indices into `groups`, ascending) any one of which meets it.
    pub documents: Vec<(u32, Vec<Vec<u32>>)>,
}

/// The longest group name.
pub const MAX_GROUP_CHARS: usize = 64;
/// Requirements on one document at most (the access file's rule and the page's own).
pub const MAX_REQUIREMENTS: usize = 4;
/// Groups one requirement may list at most.
pub const MAX_GROUPS_PER_REQUIREMENT: usize = 64;

/// Whether `name` can be a group: 1 to [`MAX_GROUP_CHARS`] ASCII letters, digits, `-`, `_`,
/// `.` or `@` (names that a tokens file, a URL and a log line carry as they are).
pub fn valid_group(name: &str) -> bool {
    (1..=MAX_GROUP_CHARS).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.@".contains(&b))
}

impl AccessSection {
    /// The section for `documents`' requirements (per document index, in order; a document
    /// with none is open to every reader). `None` when no document is restricted. Group
    /// names must be valid ([`valid_group`]) and each requirement non-empty.
    pub fn of(documents: &[(u32, Vec<Vec<String>>)]) -> Result<Option<AccessSection>> {
        let mut groups: Vec<String> = documents
            .iter()
            .flat_map(|(_, reqs)| reqs.iter().flatten().cloned())
            .collect();
        groups.sort();
        groups.dedup();
        let index = |g: &str| groups.binary_search_by(|x| x.as_str().cmp(g)).unwrap() as u32;
        let mut out = Vec::new();
        for (d, reqs) in documents.iter().filter(|(_, r)| !r.is_empty()) {
            let mut coded: Vec<Vec<u32>> = reqs
                .iter()
                .map(|r| {
                    let mut ids: Vec<u32> = r.iter().map(|g| index(g)).collect();
                    ids.sort_unstable();
                    ids.dedup();
                    ids
                })
                .collect();
            coded.sort();
            coded.dedup();
            out.push((*d, coded));
        }
        if out.is_empty() {
            return Ok(None);
        }
        let section = AccessSection {
            groups,
            documents: out,
        };
        section
            .validate(usize::MAX)
            .map_err(|e| Error::Encode(e.to_string()))?;
        Ok(Some(section))
    }

    /// Checks what the engine relies on: valid, sorted, distinct groups; restricted
    /// documents in order and inside the document table; every requirement non-empty, its
    /// groups ascending and named in `groups`.
    pub fn validate(&self, n_docs: usize) -> Result<()> {
        let corrupt = |m: String| Err(Error::Corrupt(format!("access section: {m}")));
        if let Some(g) = self.groups.iter().find(|g| !valid_group(g)) {
            return corrupt(format!("group {g:?} is not a valid group name"));
        }
        if !self.groups.windows(2).all(|w| w[0] < w[1]) {
            return corrupt("groups are not sorted and distinct".into());
        }
        if self.documents.is_empty() {
            return corrupt("no restricted document".into());
        }
        let mut previous: Option<u32> = None;
        for (d, reqs) in &self.documents {
            if (*d as usize) >= n_docs || previous.is_some_and(|p| p >= *d) {
                return corrupt(format!(
                    "document {d} is out of order or past the documents"
                ));
            }
            previous = Some(*d);
            if reqs.is_empty() || reqs.len() > MAX_REQUIREMENTS {
                return corrupt(format!("document {d} has {} requirements", reqs.len()));
            }
            for r in reqs {
                let ascending = r.windows(2).all(|w| w[0] < w[1]);
                let known = r.iter().all(|&g| (g as usize) < self.groups.len());
                if r.is_empty() || r.len() > MAX_GROUPS_PER_REQUIREMENT || !ascending || !known {
                    return corrupt(format!("document {d} has a malformed requirement"));
                }
            }
        }
        Ok(())
    }

    /// Which documents (of `n_docs`) a reader holding `held` (sorted group names) may read:
    /// `None` when every one.
    pub fn readable(&self, n_docs: usize, held: &[String]) -> Option<Vec<bool>> {
        let has: Vec<bool> = self
            .groups
            .iter()
            .map(|g| held.binary_search(g).is_ok())
            .collect();
        let mut readable = vec![true; n_docs];
        let mut all = true;
        for (d, reqs) in &self.documents {
            let ok = reqs
                .iter()
                .all(|r| r.iter().any(|&g| has.get(g as usize) == Some(&true)));
            if !ok {
                if let Some(slot) = readable.get_mut(*d as usize) {
                    *slot = false;
                    all = false;
                }
            }
        }
        (!all).then_some(readable)
    }

    /// The requirements of document `d` by group name (none: open to every reader).
    pub fn requirements(&self, d: u32) -> Vec<Vec<&str>> {
        self.documents
            .binary_search_by_key(&d, |(doc, _)| *doc)
            .map(|i| {
                self.documents[i]
                    .1
                    .iter()
                    .map(|r| {
                        r.iter()
                            .map(|&g| self.groups[g as usize].as_str())
                            .collect()
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reqs(r: &[&[&str]]) -> Vec<Vec<String>> {
        r.iter()
            .map(|g| g.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    #[test]
    fn a_reader_needs_one_group_of_every_requirement() {
        let section = AccessSection::of(&[
            (0, vec![]),
            (1, reqs(&[&["hr"]])),
            (2, reqs(&[&["hr", "legal"], &["managers"]])),
            (3, reqs(&[&["legal"]])),
        ])
        .unwrap()
        .unwrap();
        section.validate(4).unwrap();
        assert_eq!(section.groups, ["hr", "legal", "managers"]);
        let held = |g: &[&str]| {
            let mut g: Vec<String> = g.iter().map(|s| s.to_string()).collect();
            g.sort();
            section.readable(4, &g)
        };
        assert_eq!(held(&[]), Some(vec![true, false, false, false]));
        assert_eq!(held(&["hr"]), Some(vec![true, true, false, false]));
        assert_eq!(
            held(&["hr", "managers"]),
            Some(vec![true, true, true, false])
        );
        assert_eq!(held(&["legal", "managers", "hr"]), None);
        assert_eq!(
            section.requirements(2),
            [vec!["hr", "legal"], vec!["managers"]]
        );
        assert!(section.requirements(0).is_empty());
    }

    #[test]
    fn no_restricted_document_is_no_section_and_bad_names_are_refused() {
        assert_eq!(AccessSection::of(&[(0, vec![])]).unwrap(), None);
        for bad in ["", "a b", "<script>", "é", &"x".repeat(65)] {
            assert!(!valid_group(bad), "{bad:?}");
            assert!(
                AccessSection::of(&[(0, reqs(&[&[bad]]))]).is_err(),
                "{bad:?}"
            );
        }
        assert!(valid_group("team.docs-2@acme_ru"));
    }

    #[test]
    fn a_crafted_section_is_refused() {
        let good = AccessSection::of(&[(1, reqs(&[&["a"]])), (2, reqs(&[&["b"]]))])
            .unwrap()
            .unwrap();
        let mut bad = Vec::new();
        let mut s = good.clone();
        s.documents[1].0 = 1;
        bad.push(s);
        let mut s = good.clone();
        s.documents[1].0 = 3;
        bad.push(s);
        let mut s = good.clone();
        s.documents[0].1[0] = vec![7];
        bad.push(s);
        let mut s = good.clone();
        s.documents[0].1 = vec![];
        bad.push(s);
        let mut s = good.clone();
        s.documents[0].1[0] = vec![];
        bad.push(s);
        let mut s = good.clone();
        s.groups.reverse();
        bad.push(s);
        let mut s = good.clone();
        s.documents.clear();
        bad.push(s);
        good.validate(3).unwrap();
        for s in bad {
            assert!(
                matches!(s.validate(3), Err(Error::Corrupt(_))),
                "{s:?} passed"
            );
        }
    }
}
