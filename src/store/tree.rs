//! The mirror's storage: a path trie held in one vector of slots (`trie.rs`, shared with
//! the embedded server's tree), each slot 80 bytes with its [`MirrorNode`].
//!
//! A slot holds one path segment and the indices of its children sorted by name, so a lookup
//! walks the path segment by segment with a binary search at each level and a listing of children
//! reads one short slice. No slot stores its full path: ten thousand jobs mean about 150,000
//! nodes, and a hash map keyed by full paths (plus a second one for child lists) cost about 4.4 KB
//! per job where this costs about 1.8 KB (see ARCHITECTURE.md).
//!
//! A slot without a node is a placeholder: an ancestor of mirrored nodes that is not itself
//! mirrored (a feed may see `/a/b` before `/a`). Placeholders vanish with their last child.

use std::sync::Arc;

use super::shared_data::SharedData;
use super::trie::{segments, Trie, ROOT};
use super::MirrorNode;

/// The trie. Not synchronised: the mirror wraps it in a lock.
#[derive(Debug)]
pub(super) struct Tree {
    trie: Trie<MirrorNode>,
    nodes: usize,
    /// Small data values shared by every node that holds them.
    shared: SharedData,
}

impl Default for Tree {
    fn default() -> Self {
        Self {
            trie: Trie::new(None),
            nodes: 0,
            shared: SharedData::default(),
        }
    }
}

impl Tree {
    /// The number of mirrored nodes (placeholders not counted).
    pub(super) fn len(&self) -> usize {
        self.nodes
    }

    /// `data` as shared bytes (see [`SharedData`]).
    pub(super) fn share(&mut self, data: Vec<u8>) -> Arc<[u8]> {
        self.shared.share(&data)
    }

    /// The node mirrored at `path`.
    pub(super) fn get(&self, path: &str) -> Option<&MirrorNode> {
        self.trie.value(self.trie.find(path)?)
    }

    /// The slot at `path` relative to `slot` (from the root when `slot` is `None`).
    pub(super) fn slot(&self, slot: Option<u32>, path: &str) -> Option<u32> {
        self.trie.find_from(slot.unwrap_or(ROOT), path)
    }

    /// The node in `slot`, if one is mirrored there (not a placeholder).
    pub(super) fn node(&self, slot: u32) -> Option<&MirrorNode> {
        self.trie.value(slot)
    }

    /// The children of `slot`, sorted by name: their names and slots.
    pub(super) fn kids(&self, slot: u32) -> impl Iterator<Item = (&str, u32)> {
        self.trie
            .kids(slot)
            .iter()
            .map(|k| (self.trie.name(*k), *k))
    }

    /// Names of the children of `path`, sorted.
    pub(super) fn children(&self, path: &str) -> Vec<String> {
        self.trie.find(path).map_or_else(Vec::new, |at| {
            self.trie.kid_names(at).map(str::to_owned).collect()
        })
    }

    /// `path` and the paths of every slot below it, parents first (`path` itself even when
    /// nothing is there).
    pub(super) fn subtree(&self, path: &str) -> Vec<String> {
        match self.trie.find(path) {
            Some(at) => self
                .trie
                .below(at, path)
                .into_iter()
                .map(|(p, _)| p)
                .collect(),
            None => vec![path.to_owned()],
        }
    }

    /// Stores `node` at `path` (creating placeholders for missing ancestors) and returns the node
    /// it replaced.
    pub(super) fn set(&mut self, path: &str, node: MirrorNode) -> Option<MirrorNode> {
        let mut at = ROOT;
        for seg in segments(path) {
            at = match self.trie.child(at, seg) {
                Some(child) => child,
                None => {
                    let i = self.trie.search(at, seg).unwrap_err();
                    self.trie.add_child(at, i, seg, None)
                }
            };
        }
        let old = self.trie.put(at, node);
        if old.is_none() {
            self.nodes += 1;
        }
        old
    }

    /// Removes the node at `path` (not its children) and returns it; the slot goes too unless
    /// children hang below it, and so do placeholder ancestors left with nothing below them.
    pub(super) fn remove(&mut self, path: &str) -> Option<MirrorNode> {
        // The slots from the root down to the node: the way back up for pruning.
        let mut chain = self.trie.chain(path)?;
        let at = *chain.last().expect("the root");
        let old = self.trie.take(at)?;
        self.nodes -= 1;
        while let [.., parent, at] = chain[..] {
            if self.trie.value(at).is_some() || !self.trie.kids(at).is_empty() {
                break;
            }
            if let Ok(i) = self.trie.search(parent, self.trie.name(at)) {
                self.trie.remove_child(parent, i);
            }
            chain.pop();
        }
        Some(old)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::MirrorStat;

    fn node(version: i32) -> MirrorNode {
        MirrorNode {
            data: Arc::from(&b"x"[..]),
            stat: MirrorStat {
                version,
                ..MirrorStat::default()
            },
            pending: false,
        }
    }

    #[test]
    fn a_slot_stays_small() {
        // Ten thousand jobs are about 150,000 slots: each byte here is 150 KB.
        assert_eq!(Trie::<MirrorNode>::slot_bytes(), 80);
    }

    #[test]
    fn a_node_below_an_unmirrored_parent_makes_a_placeholder_that_goes_with_it() {
        let mut t = Tree::default();
        assert!(t.set("/a/b", node(0)).is_none());
        assert!(t.get("/a").is_none());
        assert_eq!(t.children("/a"), ["b"]);
        assert_eq!(t.children("/"), ["a"]);
        assert_eq!(t.len(), 1);
        assert_eq!(t.remove("/a/b").map(|n| n.stat.version), Some(0));
        assert!(t.children("/").is_empty());
        assert_eq!(t.trie.slots_in_use(), 1, "only the root slot is left");
    }

    #[test]
    fn long_names_sort_with_short_ones_and_freed_slots_are_reused() {
        let mut t = Tree::default();
        let long = "a-job-name-longer-than-twenty-two-bytes";
        for p in ["/j/b", &format!("/j/{long}"), "/j/a", "/j/c"] {
            t.set(p, node(1));
        }
        assert_eq!(t.children("/j"), ["a", long, "b", "c"]);
        assert_eq!(t.set("/j/a", node(2)).map(|n| n.stat.version), Some(1));
        assert_eq!(t.get("/j/a").map(|n| n.stat.version), Some(2));
        let slots = t.trie.slots_allocated();
        t.remove(&format!("/j/{long}"));
        t.set("/j/d", node(1));
        assert_eq!(t.trie.slots_allocated(), slots, "the freed slot holds /j/d");
        assert_eq!(t.subtree("/j"), ["/j", "/j/a", "/j/b", "/j/c", "/j/d"]);
        assert_eq!(t.subtree("/absent"), ["/absent"]);
    }

    #[test]
    fn removing_a_parent_keeps_its_children_and_the_root_can_be_mirrored() {
        let mut t = Tree::default();
        t.set("/", node(0));
        t.set("/p", node(0));
        t.set("/p/k", node(0));
        assert!(t.remove("/p").is_some());
        assert!(t.remove("/p").is_none());
        assert_eq!(t.children("/p"), ["k"]);
        assert_eq!(t.subtree("/"), ["/", "/p", "/p/k"]);
        assert!(t.remove("/p/k").is_some());
        assert_eq!(t.subtree("/"), ["/"]);
        assert!(t.get("/").is_some());
        assert_eq!(t.len(), 1);
    }
}
