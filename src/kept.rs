//! [`Kept`]: what an engine works out for a key, kept for the next request with the same key.

use std::sync::{Mutex, PoisonError};

/// Values made for keys (a reader's view, a request's scope, a query's vector), kept for the
/// next request with the same key: at most `N`, past which the oldest goes and is made again
/// when next asked for. A list searched in order: a few hundred entries at most, each found
/// in about a microsecond, where the value took milliseconds to make. (A bound and a lock
/// are all this needs of a cache: no crate.)
#[derive(Debug)]
pub(crate) struct Kept<K, V, const N: usize>(Mutex<Vec<(K, V)>>);

impl<K, V, const N: usize> Default for Kept<K, V, N> {
    fn default() -> Self {
        Kept(Mutex::new(Vec::new()))
    }
}

impl<K: PartialEq + Clone, V: Clone, const N: usize> Kept<K, V, N> {
    /// The value kept for `key`, else `make()`, kept (once, if another request made it
    /// meanwhile).
    #[cfg(feature = "access")]
    pub(crate) fn get(&self, key: &K, make: impl FnOnce() -> V) -> V {
        match self.try_get(key, || Ok::<V, std::convert::Infallible>(make())) {
            Ok(v) => v,
        }
    }

    /// [`Kept::get`] for a `make` that may fail: a failure is returned and nothing is kept.
    pub(crate) fn try_get<E>(&self, key: &K, make: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        let lock = || self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, v)) = lock().iter().find(|(k, _)| k == key) {
            return Ok(v.clone());
        }
        let value = make()?;
        let mut kept = lock();
        if N > 0 && !kept.iter().any(|(k, _)| k == key) {
            if kept.len() >= N {
                kept.remove(0);
            }
            kept.push((key.clone(), value.clone()));
        }
        Ok(value)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}
