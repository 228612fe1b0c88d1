//! The bounded pool searches run on, beside the async runtime that speaks HTTP and MCP: at
//! most `workers` searches at once, at most `queue` more waiting; past that a call is refused
//! at once ([`Busy`], a 503 with `Retry-After`) instead of queueing without bound.

use std::sync::Arc;

use tokio::sync::Semaphore;

pub(crate) struct Pool {
    admitted: Arc<Semaphore>,
    running: Arc<Semaphore>,
}

/// The pool is full: every worker is searching and the queue is full.
#[derive(Debug, PartialEq)]
pub(crate) enum Busy {
    Full,
    /// The search could not finish (its thread was lost).
    Failed,
}

impl Pool {
    pub(crate) fn new(workers: usize, queue: usize) -> Pool {
        let workers = workers.max(1);
        Pool {
            admitted: Arc::new(Semaphore::new(workers + queue)),
            running: Arc::new(Semaphore::new(workers)),
        }
    }

    /// Runs `work` on a search thread once one is free, or answers `Busy::Full` at once.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Busy> {
        let admitted = self
            .admitted
            .clone()
            .try_acquire_owned()
            .map_err(|_| Busy::Full)?;
        let running = self
            .running
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Busy::Failed)?;
        // The permits go with the work: a client that hangs up does not free a thread that
        // is still searching.
        tokio::task::spawn_blocking(move || {
            let _held = (admitted, running);
            work()
        })
        .await
        .map_err(|_| Busy::Failed)
    }

    /// Searches running or waiting now.
    pub(crate) fn in_use(&self, capacity: usize) -> usize {
        capacity.saturating_sub(self.admitted.available_permits())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_workers_and_queue_a_call_is_refused_at_once() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let pool = Arc::new(Pool::new(1, 1));
            let (release, wait) = std::sync::mpsc::channel::<()>();
            let wait = Arc::new(std::sync::Mutex::new(wait));
            let blocked = {
                let (pool, wait) = (pool.clone(), wait.clone());
                tokio::spawn(
                    async move { pool.run(move || wait.lock().unwrap().recv().unwrap()).await },
                )
            };
            // Let the first call take the worker, then a second one queues.
            while pool.running.available_permits() > 0 {
                tokio::task::yield_now().await;
            }
            let queued = {
                let pool = pool.clone();
                tokio::spawn(async move { pool.run(|| 2).await })
            };
            while pool.admitted.available_permits() > 0 {
                tokio::task::yield_now().await;
            }
            assert_eq!(pool.in_use(2), 2);
            assert_eq!(pool.run(|| 3).await, Err(Busy::Full));
            release.send(()).unwrap();
            assert_eq!(blocked.await.unwrap(), Ok(()));
            assert_eq!(queued.await.unwrap(), Ok(2));
            assert_eq!(pool.run(|| 4).await, Ok(4));
        });
    }
}
