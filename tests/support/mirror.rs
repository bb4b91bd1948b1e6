//! Mirror test helpers: a listing and a mirror in one comparable shape, a barrier that waits until
//! a feed applied everything written before it, and the events a feed has queued.

use std::collections::BTreeMap;

use shardcron::registry::mirror::{Mirror, MirrorEvent, MirrorFeed};
use shardcron::registry::{CreateMode, Registry};

use super::conformance::wait_for;

/// What the comparison looks at: data, data version, creating and modifying zxid.
pub type Comparable = BTreeMap<String, (Vec<u8>, i32, i64, i64)>;

pub async fn listing(s: &dyn Registry) -> Comparable {
    listing_at(s, "/").await
}

/// The registry's subtree at `root` (empty when it is absent).
pub async fn listing_at(s: &dyn Registry, root: &str) -> Comparable {
    let nodes = match s.list_subtree(root).await {
        Err(e) if e.is_no_node() => Vec::new(),
        nodes => nodes.expect("listing a subtree"),
    };
    nodes
        .into_iter()
        .map(|n| (n.path, (n.data, n.stat.version, n.stat.czxid, n.stat.mzxid)))
        .collect()
}

pub fn mirrored(mirror: &Mirror) -> Comparable {
    let nodes = mirror.snapshot("/");
    nodes
        .into_iter()
        .map(|(p, n)| {
            (
                p,
                (n.data.to_vec(), n.stat.version, n.stat.czxid, n.stat.mzxid),
            )
        })
        .collect()
}

/// Writes `/{name}` and waits until the feed reports it, so every earlier change was applied.
pub async fn barrier(s: &dyn Registry, feed: &mut MirrorFeed, name: &str) {
    let path = format!("/{name}");
    s.create(&path, b"", CreateMode::Persistent)
        .await
        .expect("writing the barrier");
    let is_marker = |e: &MirrorEvent| matches!(e, MirrorEvent::Created { path: p } if *p == path);
    wait_for(
        feed.events(),
        is_marker,
        &format!("the mirror to apply {path}"),
    )
    .await;
}

/// The events already queued: those of the listing a feed starts with.
pub fn drain(feed: &mut MirrorFeed) -> Vec<MirrorEvent> {
    let mut out = Vec::new();
    while let Ok(e) = feed.events().try_recv() {
        out.push(e);
    }
    out
}
