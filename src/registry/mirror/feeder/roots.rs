//! The feed's roots while it runs: requests to add or drop roots, carried out in order, and the
//! re-listing of the roots whose watch may have missed changes.

use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{list, uncovered, Feeder, Flow, Root, RELIST_AT_ONCE};
use crate::registry::mirror::feed::{Control, Done};

impl Feeder {
    /// Re-lists every root with a gap, [`RELIST_AT_ONCE`] listings side by side, each swapped in
    /// as it comes.
    pub(super) async fn relist_gaps(&mut self) -> Flow {
        let roots: Vec<Arc<str>> = (self.roots.iter())
            .filter(|(_, r)| r.gap)
            .map(|(root, _)| root.clone())
            .collect();
        let registry = self.registry.clone();
        let mut listings = futures::stream::iter(roots)
            .map(|root| {
                let registry = registry.clone();
                async move {
                    let listing = list(&*registry, &root).await;
                    (root, listing)
                }
            })
            .buffered(RELIST_AT_ONCE);
        while let Some((root, listing)) = listings.next().await {
            match listing {
                Ok(listing) => self.swap_in(&root, listing),
                Err(e) => {
                    if let Flow::End = self.failed("re-listing after a gap", e, &root) {
                        return Flow::End;
                    }
                }
            }
        }
        Flow::Continue
    }

    /// The session reconnected: the roots with a gap are listed after this feed's share of the
    /// spread ([`RelistSpread`](crate::registry::mirror::RelistSpread)), at once without one. A
    /// root that hears an event meanwhile is listed before the event is applied.
    pub(super) async fn relist_spread(&mut self) -> Flow {
        if self.gaps == 0 {
            return Flow::Continue;
        }
        let delay = (self.options.relist_spread).map_or(Default::default(), |s| s.delay(self.gaps));
        if delay.is_zero() {
            return self.relist_gaps().await;
        }
        let at = Instant::now() + delay;
        self.relist_at = Some(self.relist_at.map_or(at, |t| t.min(at)));
        Flow::Continue
    }

    /// Every root may have missed changes (the session reconnected): each gets a gap, listed as
    /// [`Feeder::relist_spread`] says.
    pub(super) async fn relist_all(&mut self) -> Flow {
        let roots: Vec<Arc<str>> = self.roots.keys().cloned().collect();
        for root in roots {
            self.open_gap(&root);
        }
        self.relist_spread().await
    }

    /// Carries out `first` and every request already queued behind it, in order: the roots of
    /// consecutive additions are watched and listed together.
    pub(super) async fn requests(
        &mut self,
        first: Control,
        queue: &mut mpsc::UnboundedReceiver<Control>,
    ) -> Flow {
        let mut next = Some(first);
        while let Some(request) = next.take() {
            match request {
                Control::Add(mut roots, done) => {
                    let mut dones: Vec<Done> = vec![done];
                    while let Ok(request) = queue.try_recv() {
                        match request {
                            Control::Add(more, done) => {
                                roots.extend(more);
                                dones.push(done);
                            }
                            other => {
                                next = Some(other);
                                break;
                            }
                        }
                    }
                    let flow = self.add(roots).await;
                    dones.into_iter().for_each(|done| done());
                    if let Flow::End = flow {
                        return flow;
                    }
                }
                Control::Remove(root, done) => {
                    self.remove(&root);
                    done();
                    next = queue.try_recv().ok();
                }
                Control::Relist => {
                    if let Flow::End = self.relist_all().await {
                        return Flow::End;
                    }
                    next = queue.try_recv().ok();
                }
            }
        }
        Flow::Continue
    }

    /// Watches and lists the roots not covered yet. A watch that cannot start ends the feed (its
    /// subtree would go stale unseen; a new session starts every watch again).
    pub(super) async fn add(&mut self, roots: Vec<String>) -> Flow {
        let roots = uncovered(&self.roots, roots);
        if roots.is_empty() {
            return Flow::Continue;
        }
        for (root, watch) in roots.iter().zip(self.watch(&roots).await) {
            match watch {
                Ok(watch) => {
                    let root = Arc::from(root.as_str());
                    self.roots.insert(
                        root,
                        Root {
                            gap: false,
                            _watch: watch,
                        },
                    );
                }
                Err(e) => {
                    tracing::warn!(%root, error = %e, "cannot watch a new root; ending the feed");
                    self.mirror.set_synced(false);
                    return Flow::End;
                }
            }
        }
        let listings = roots.iter().map(|r| list(&*self.registry, r));
        for (root, listing) in roots.iter().zip(futures::future::join_all(listings).await) {
            match listing {
                Ok(listing) => self.swap_in(root, listing),
                Err(e) => {
                    self.open_gap(root);
                    if let Flow::End = self.failed("listing a new root", e, root) {
                        return Flow::End;
                    }
                }
            }
        }
        if roots.iter().any(|r| r == "/") {
            // The namespace's watch covers every other root: theirs would only double events.
            let others: Vec<Arc<str>> = self
                .roots
                .keys()
                .filter(|r| &***r != "/")
                .cloned()
                .collect();
            for root in others {
                self.forget(&root);
            }
        }
        Flow::Continue
    }

    /// Stops the watch of `root` and drops its nodes from the mirror, telling nobody.
    pub(super) fn remove(&mut self, root: &str) {
        if root == "/" || !self.roots.contains_key(root) {
            return;
        }
        self.forget(root);
        for path in self.mirror.subtree(root).into_iter().rev() {
            self.mirror.remove(&path);
        }
        if self.gaps == 0 {
            self.mirror.set_synced(true);
        }
    }

    /// Stops the watch of `root`, keeping its nodes.
    pub(super) fn forget(&mut self, root: &str) {
        // Dropping the root drops its guard, which ends its watch.
        if let Some(r) = self.roots.remove(root) {
            if r.gap {
                self.gaps -= 1;
            }
        }
    }

    pub(super) async fn retry_relist(&mut self, root: &Arc<str>) -> Flow {
        match list(&*self.registry, root).await {
            Ok(listing) => {
                self.swap_in(root, listing);
                Flow::Continue
            }
            Err(e) => self.failed("re-listing after a gap", e, root),
        }
    }
}
