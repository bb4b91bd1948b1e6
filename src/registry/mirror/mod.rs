//! The mirror: an in-memory copy of a namespace subtree, readable from any task without a
//! registry call.
//!
//! A [`Mirror`] is fed by one recursive watch plus a listing ([`Mirror::feed`], in `feed.rs`), in
//! the manner of kube-runtime's watcher and reflector store: watch first, list, swap the listing in
//! by diffing, then apply events in order; re-list after every gap (ZooKeeper loses the events of a
//! disconnect). Consumers learn what changed from the [`MirrorEvent`]s of the [`MirrorFeed`], and
//! decide from the mirror, which is already updated when an event arrives.
//!
//! The store itself (the copy, its lock and its trie) is the core's [`store`](crate::store),
//! re-exported here; this module holds the feed, the IO that fills it.
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use std::sync::Arc;
//! use shardcron::registry::{embedded::EmbeddedServer, mirror::Mirror, CreateMode, Registry};
//! let session = Arc::new(EmbeddedServer::new().connector("demo").open());
//! session.create("/orders", b"SCRIPT", CreateMode::Persistent).await.unwrap();
//! let mirror = Mirror::new();
//! let _feed = mirror.feed(session, "/").await.unwrap();
//! assert!(mirror.is_synced());
//! assert_eq!(mirror.children("/"), ["orders"]);
//! # });
//! ```

mod feed;
mod feeder;

pub use crate::store::{Mirror, MirrorNode, MirrorStat, Under};
pub use feed::{
    Done, FeedHandle, FeedOptions, FeedRoots, LazyPaths, MirrorError, MirrorEvent, MirrorFeed,
    RelistSpread,
};
pub use feeder::RELIST_AT_ONCE;
