//! Who is asking: a bearer token looked up by its SHA-256 in the tokens file (the file never
//! holds a token), or, on a server started without `--tokens`, the client's address (for its
//! rate limit only: an open server lets every client search every bundle, and shows no
//! document that access labels restrict).

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::service::{valid_project, Bucket, Caller, Scope};

/// The tokens file (TOML): one `[[user]]` table per token.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokensFile {
    #[serde(default)]
    user: Vec<UserEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserEntry {
    /// The name the query log records.
    name: String,
    /// The token's SHA-256, 64 hex digits (`printf %s "$TOKEN" | sha256sum`).
    token_sha256: String,
    /// The projects (namespace/name) the user may search; absent: every served bundle.
    projects: Option<Vec<String>>,
    /// Calls per minute (default: `--rate-limit`; 0: no limit).
    rate_limit: Option<u32>,
    /// Whether the user may read `/metrics` (which names every served bundle).
    #[serde(default)]
    metrics: bool,
    /// The groups the user is in: inside a bundle built with access labels they see the
    /// documents without labels and those their groups open (absent: no group).
    #[serde(default)]
    groups: Vec<String>,
}

/// A known user.
pub(crate) struct User {
    pub(crate) caller: Arc<Caller>,
    pub(crate) metrics: bool,
}

/// Who may call.
pub(crate) enum Users {
    /// No tokens file: anyone, one rate-limit bucket per client address.
    Open {
        per_minute: u32,
        buckets: Mutex<HashMap<IpAddr, Arc<Caller>>>,
    },
    /// By token hash.
    Tokens(HashMap<[u8; 32], User>),
}

/// Client addresses an open server remembers for their rate limits before it starts over.
const MAX_OPEN_CLIENTS: usize = 10_000;

/// What authentication decided.
pub(crate) enum Who<'a> {
    /// An open server's caller (the metrics are open too).
    Anyone(Arc<Caller>),
    User(&'a User),
    /// No token, or one the tokens file does not hold.
    Nobody,
}

impl Users {
    pub(crate) fn open(per_minute: u32) -> Users {
        Users::Open {
            per_minute,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Reads a tokens file; every mistake in it stops the server from starting.
    pub(crate) fn from_file(path: &Path, default_rate: u32) -> Result<Users> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the tokens file {}", path.display()))?;
        let file: TokensFile = toml::from_str(&text)
            .with_context(|| format!("the tokens file {} is not valid", path.display()))?;
        let mut users = HashMap::new();
        for (i, u) in file.user.into_iter().enumerate() {
            let at = format!("{} user {} ({:?})", path.display(), i + 1, u.name);
            if u.name.trim().is_empty() || u.name.chars().count() > 100 {
                bail!("{at}: name must be 1 to 100 characters");
            }
            let hash = parse_hash(&u.token_sha256).with_context(|| {
                format!("{at}: token_sha256 must be the token's SHA-256 in 64 hex digits")
            })?;
            let scope = match u.projects {
                None => Scope::All,
                Some(projects) => {
                    if let Some(p) = projects.iter().find(|p| !valid_project(p)) {
                        bail!("{at}: project {p:?} is not namespace/name");
                    }
                    Scope::Hidden(projects)
                }
            };
            if let Some(g) = u.groups.iter().find(|g| !docloupe::bundle::valid_group(g)) {
                bail!(
                    "{at}: group {g:?} is not a group name (1 to {} letters, digits, '-', '_', '.', '@')",
                    docloupe::bundle::MAX_GROUP_CHARS
                );
            }
            let user = User {
                caller: Arc::new(Caller {
                    user: Some(u.name),
                    scope,
                    limiter: Arc::new(Mutex::new(Bucket::new(
                        u.rate_limit.unwrap_or(default_rate),
                    ))),
                    access: docloupe::Access::groups(u.groups),
                }),
                metrics: u.metrics,
            };
            if users.insert(hash, user).is_some() {
                bail!("{at}: the same token hash is listed twice");
            }
        }
        if users.is_empty() {
            bail!(
                "the tokens file {} lists no [[user]]: no one could search",
                path.display()
            );
        }
        Ok(Users::Tokens(users))
    }

    pub(crate) fn is_open(&self) -> bool {
        matches!(self, Users::Open { .. })
    }

    /// The caller behind an `Authorization` header value (or none), from `client`.
    pub(crate) fn who(&self, authorization: Option<&[u8]>, client: IpAddr) -> Who<'_> {
        match self {
            Users::Open {
                per_minute,
                buckets,
            } => {
                let mut buckets = buckets
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if buckets.len() >= MAX_OPEN_CLIENTS && !buckets.contains_key(&client) {
                    buckets.clear();
                }
                let caller = buckets
                    .entry(client)
                    .or_insert_with(|| {
                        Arc::new(Caller {
                            user: None,
                            scope: Scope::All,
                            limiter: Arc::new(Mutex::new(Bucket::new(*per_minute))),
                            // Without tokens nobody is known to be in a group: documents
                            // with access labels are never shown.
                            access: docloupe::Access::Public,
                        })
                    })
                    .clone();
                Who::Anyone(caller)
            }
            Users::Tokens(users) => {
                let token = authorization.and_then(bearer);
                match token.and_then(|t| users.get(&sha256(t))) {
                    Some(user) => Who::User(user),
                    None => Who::Nobody,
                }
            }
        }
    }
}

/// The token of `Bearer <token>` (the scheme is case-insensitive).
fn bearer(header: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = header.split_at_checked(7)?;
    (scheme.eq_ignore_ascii_case(b"bearer ") && !rest.is_empty()).then_some(rest)
}

fn sha256(token: &[u8]) -> [u8; 32] {
    Sha256::digest(token).into()
}

fn parse_hash(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8; 32]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn a_token_is_found_by_its_hash_and_nothing_else_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        std::fs::write(
            &path,
            format!(
                "[[user]]\nname = \"anna\"\ntoken_sha256 = \"{}\"\nprojects = [\"acme/handbook\"]\nrate_limit = 5\n",
                hex(&sha256(b"s3cret"))
            ),
        )
        .unwrap();
        let users = Users::from_file(&path, 120).unwrap();
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        match users.who(Some(b"Bearer s3cret"), ip) {
            Who::User(u) => {
                assert_eq!(u.caller.user.as_deref(), Some("anna"));
                assert_eq!(u.caller.scope, Scope::Hidden(vec!["acme/handbook".into()]));
                assert!(!u.metrics);
            }
            _ => panic!("the token is anna's"),
        }
        assert!(matches!(
            users.who(Some(b"bearer s3cret"), ip),
            Who::User(_)
        ));
        // The hash itself is not a token, nor is a wrong one, a prefix, or no header.
        for bad in [
            Some(hex(&sha256(b"s3cret")).into_bytes()),
            Some(b"Bearer s3cre".to_vec()),
            Some(b"Bearer ".to_vec()),
            Some(b"Basic s3cret".to_vec()),
            Some(b"s3cret".to_vec()),
            None,
        ] {
            assert!(
                matches!(users.who(bad.as_deref(), ip), Who::Nobody),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_bad_tokens_file_stops_the_server() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        let good = hex(&sha256(b"t"));
        for (text, says) in [
            (String::new(), "no [[user]]"),
            (
                "[[user]]\nname = \"a\"\ntoken_sha256 = \"abc\"\n".into(),
                "64 hex digits",
            ),
            (
                format!("[[user]]\nname = \"a\"\ntoken = \"t\"\ntoken_sha256 = \"{good}\"\n"),
                "not valid",
            ),
            (
                format!("[[user]]\nname = \"a\"\ntoken_sha256 = \"{good}\"\nprojects = [\"acme\"]\n"),
                "namespace/name",
            ),
            (
                format!("[[user]]\nname = \"a\"\ntoken_sha256 = \"{good}\"\n[[user]]\nname = \"b\"\ntoken_sha256 = \"{good}\"\n"),
                "twice",
            ),
        ] {
            std::fs::write(&path, &text).unwrap();
            let err = format!("{:#}", Users::from_file(&path, 1).err().unwrap());
            assert!(err.contains(says), "{text:?}: {err}");
        }
    }
}
