//! One snapshot per change, shared by every open page: the event streams of the overview and of a
//! job ask [`Shared::event`] for the answer at the current change count, and the first to ask
//! computes it (from the mirror, plus the history's last outcomes) while the others wait for it
//! and reuse it. A hundred open pages on one change cost one read, not a hundred.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::types::JobName;

/// Answers shared at most this long (next fire times and last outcomes move on with time even
/// while the registry is quiet).
const FRESH: Duration = Duration::from_secs(1);
/// Pages (the overview and each job) remembered at once; beyond, the memory is cleared.
const MAX_PAGES: usize = 256;

/// A page's event: its name (`overview`, `job`, `error`) and its JSON data.
pub(crate) type PageEvent = (&'static str, Arc<str>);

#[derive(Debug)]
struct Entry {
    changes: u64,
    at: Instant,
    event: PageEvent,
}

/// The latest event of every page, by page (`None`: the overview).
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pages: Mutex<HashMap<Option<JobName>, Entry>>,
}

impl Shared {
    /// The event of `page` at change count `changes`: the one already computed when it is fresh,
    /// else what `compute` answers (kept for the next asker).
    pub(crate) async fn event(
        &self,
        page: Option<&JobName>,
        changes: u64,
        compute: impl Future<Output = PageEvent>,
    ) -> PageEvent {
        let mut pages = self.pages.lock().await;
        let key = page.cloned();
        if let Some(entry) = pages.get(&key) {
            if entry.changes == changes && entry.at.elapsed() < FRESH {
                return entry.event.clone();
            }
        }
        let event = compute.await;
        if pages.len() >= MAX_PAGES && !pages.contains_key(&key) {
            pages.clear();
        }
        pages.insert(
            key,
            Entry {
                changes,
                at: Instant::now(),
                event: event.clone(),
            },
        );
        event
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(start_paused = true)]
    async fn pages_asking_at_one_change_share_one_read() {
        let shared = Shared::default();
        let reads = AtomicUsize::new(0);
        let read = || async {
            reads.fetch_add(1, Ordering::SeqCst);
            ("overview", Arc::from("{}"))
        };
        for _ in 0..100 {
            shared.event(None, 7, read()).await;
        }
        assert_eq!(
            reads.load(Ordering::SeqCst),
            1,
            "one read for a hundred pages"
        );
        shared.event(None, 8, read()).await;
        assert_eq!(reads.load(Ordering::SeqCst), 2, "a change is read again");
        tokio::time::advance(FRESH).await;
        shared.event(None, 8, read()).await;
        assert_eq!(
            reads.load(Ordering::SeqCst),
            3,
            "an old answer is read again"
        );
        let job = JobName::new("orders").unwrap();
        shared.event(Some(&job), 8, read()).await;
        assert_eq!(reads.load(Ordering::SeqCst), 4, "each page has its own");
    }
}
