//! Popular queries answered again: the answer to a search is kept for a TTL (`serve
//! --cache-ttl-seconds`, 5 minutes by default) under its access scope, its tool and the
//! request's text, so one user's answer reaches only callers with the same rights. A reload
//! that swaps a bundle empties it. At most `entries` answers are kept; the oldest go first.
//! (A map and a queue of insertion order: what this needs of a cache, TTL and a bound, is
//! a few lines, not a dependency.)

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Caller, Outcome, Scope};

/// The key of a call: who may see what, which tool, what was asked.
pub(crate) fn cache_key(caller: &Caller, tool: &str, args: &Value, text: Option<&str>) -> String {
    let scope = match &caller.scope {
        Scope::All => "*".to_owned(),
        Scope::Allowed(list) | Scope::Hidden(list) => {
            let mut list = list.clone();
            list.sort();
            list.dedup();
            list.join("\n")
        }
    };
    // The documents the caller may see inside a bundle: a user in other groups has other
    // answers to the same request.
    let access = match &caller.access {
        docloupe::Access::Public => String::new(),
        docloupe::Access::Groups(g) => g.join("\n"),
        docloupe::Access::Everything => "*".to_owned(),
    };
    let asked = text.map_or_else(|| args.to_string(), str::to_owned);
    format!("{scope}\0{access}\0{tool}\0{asked}")
}

struct Entries {
    map: HashMap<String, (Instant, Outcome)>,
    order: VecDeque<(Instant, String)>,
}

pub(crate) struct Cache {
    ttl: Duration,
    entries: usize,
    inner: Mutex<Entries>,
}

impl Cache {
    pub(crate) fn new(ttl: Duration, entries: usize) -> Cache {
        Cache {
            ttl,
            entries,
            inner: Mutex::new(Entries {
                map: HashMap::new(),
                order: VecDeque::new(),
            }),
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<Outcome> {
        let inner = self.inner.lock().ok()?;
        let (at, outcome) = inner.map.get(key)?;
        (at.elapsed() < self.ttl).then(|| outcome.clone())
    }

    pub(crate) fn put(&self, key: String, outcome: &Outcome) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let now = Instant::now();
        // Expired entries and, past the bound, the oldest ones leave first.
        while let Some((at, _)) = inner.order.front() {
            if at.elapsed() < self.ttl && inner.map.len() < self.entries {
                break;
            }
            if let Some((at, old)) = inner.order.pop_front() {
                // Only if the map still holds that insertion (not a newer one of the key).
                if inner.map.get(&old).is_some_and(|(t, _)| *t == at) {
                    inner.map.remove(&old);
                }
            }
        }
        inner.order.push_back((now, key.clone()));
        inner.map.insert(key, (now, outcome.clone()));
    }

    pub(crate) fn clear(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.map.clear();
            inner.order.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::{error_outcome, Bucket};
    use std::sync::Arc;

    fn caller(scope: Scope) -> Caller {
        Caller {
            user: None,
            scope,
            limiter: Arc::new(Mutex::new(Bucket::new(0))),
            access: docloupe::Access::Public,
        }
    }

    #[test]
    fn callers_in_other_groups_never_share_an_answer() {
        let args = serde_json::json!({"query": "salaries"});
        let key = |access: docloupe::Access| {
            let c = Caller {
                access,
                ..caller(Scope::All)
            };
            cache_key(&c, "search_docs", &args, None)
        };
        let (public, hr, hr_legal, everything) = (
            key(docloupe::Access::Public),
            key(docloupe::Access::groups(["hr"])),
            key(docloupe::Access::groups(["legal", "hr"])),
            key(docloupe::Access::Everything),
        );
        let keys = [&public, &hr, &hr_legal, &everything];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(
            hr_legal,
            key(docloupe::Access::groups(["hr", "legal", "hr"]))
        );
    }

    #[test]
    fn answers_are_kept_per_scope_for_the_ttl_and_the_bound() {
        let cache = Cache::new(Duration::from_millis(200), 2);
        let args = serde_json::json!({"query": "cache"});
        let a = cache_key(
            &caller(Scope::Hidden(vec!["x/a".into()])),
            "search_docs",
            &args,
            None,
        );
        let ab = cache_key(
            &caller(Scope::Hidden(vec!["x/b".into(), "x/a".into()])),
            "search_docs",
            &args,
            None,
        );
        let ba = cache_key(
            &caller(Scope::Hidden(vec!["x/a".into(), "x/b".into()])),
            "search_docs",
            &args,
            None,
        );
        let all = cache_key(&caller(Scope::All), "search_docs", &args, None);
        assert_eq!(ab, ba, "the same rights share answers");
        assert!(a != ab && ab != all && a != all);
        let answer = error_outcome(serde_json::json!({"n": 1}), "X");
        cache.put(a.clone(), &answer);
        assert!(cache.get(&a).is_some());
        assert!(cache.get(&ab).is_none() && cache.get(&all).is_none());
        // The bound: a third entry pushes the first out.
        cache.put(ab.clone(), &answer);
        cache.put(all.clone(), &answer);
        assert!(cache.get(&a).is_none());
        assert!(cache.get(&ab).is_some() && cache.get(&all).is_some());
        std::thread::sleep(Duration::from_millis(250));
        assert!(cache.get(&all).is_none(), "past the TTL");
        cache.put(a.clone(), &answer);
        cache.clear();
        assert!(cache.get(&a).is_none());
    }
}
