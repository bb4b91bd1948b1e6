//! The mirror's storage: a path trie held in one vector of slots.
//!
//! A slot holds one path segment and the indices of its children sorted by name, so a lookup
//! walks the path segment by segment with a binary search at each level and a listing of children
//! reads one short vector. No slot stores its full path: ten thousand jobs mean about 150,000
//! nodes, and a hash map keyed by full paths (plus a second one for child lists) cost about 4.4 KB
//! per job where this costs about 2 KB (see ARCHITECTURE.md).
//!
//! A slot without a node is a placeholder: an ancestor of mirrored nodes that is not itself
//! mirrored (a feed may see `/a/b` before `/a`). Placeholders vanish with their last child.

use std::collections::HashSet;
use std::sync::Arc;

use super::MirrorNode;

/// Index of the root slot, which always exists.
const ROOT: u32 = 0;

/// A node name: one path segment, stored inline when short (almost all are: `config`, `0`,
/// `instance`, an IP address, an instance id, a job name).
#[derive(Debug, Clone)]
enum Name {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<str>),
}

/// The longest name stored without an allocation.
const INLINE: usize = 22;

impl Name {
    fn new(s: &str) -> Self {
        if s.len() <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            Name::Inline {
                len: s.len() as u8,
                bytes,
            }
        } else {
            Name::Heap(s.into())
        }
    }

    fn as_bytes(&self) -> &[u8] {
        match self {
            Name::Inline { len, bytes } => &bytes[..*len as usize],
            Name::Heap(s) => s.as_bytes(),
        }
    }

    /// The name as text. It was made from a `&str` and is compared bytewise, which orders
    /// exactly as `str` does.
    fn to_text(&self) -> String {
        String::from_utf8_lossy(self.as_bytes()).into_owned()
    }
}

#[derive(Debug)]
struct Slot {
    name: Name,
    /// Children, sorted by name; a boxed slice, exactly as long as needed (children change
    /// rarely, and most slots have none or one).
    kids: Box<[u32]>,
    node: Option<MirrorNode>,
}

impl Slot {
    fn empty(name: &str) -> Self {
        Self {
            name: Name::new(name),
            kids: Box::default(),
            node: None,
        }
    }
}

/// Inserts `value` at `at` in a boxed slice.
fn insert_at(slice: &mut Box<[u32]>, at: usize, value: u32) {
    let mut v = std::mem::take(slice).into_vec();
    v.reserve_exact(1);
    v.insert(at, value);
    *slice = v.into_boxed_slice();
}

/// Removes the element at `at` from a boxed slice.
fn remove_at(slice: &mut Box<[u32]>, at: usize) {
    let mut v = std::mem::take(slice).into_vec();
    v.remove(at);
    *slice = v.into_boxed_slice();
}

/// The trie. Not synchronised: the mirror wraps it in a lock.
#[derive(Debug)]
pub(super) struct Tree {
    slots: Vec<Slot>,
    free: Vec<u32>,
    nodes: usize,
    /// Small data values shared by every node that holds them: an instance id is the data of
    /// each item's owner node, of each running marker and of the leader node, in every job.
    shared: HashSet<Arc<[u8]>>,
    /// The size of `shared` after its last sweep of values no node holds any more.
    swept: usize,
}

/// The longest data shared by value; longer data (a job's config) is one job's own.
const SHARED_DATA: usize = 96;

impl Default for Tree {
    fn default() -> Self {
        Self {
            slots: vec![Slot::empty("")],
            free: Vec::new(),
            nodes: 0,
            shared: HashSet::new(),
            swept: 0,
        }
    }
}

/// The segments of an absolute path (none for `/`).
fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

impl Tree {
    /// The number of mirrored nodes (placeholders not counted).
    pub(super) fn len(&self) -> usize {
        self.nodes
    }

    /// `data` as shared bytes: empty and small values are stored once however many nodes hold
    /// them. Values no node holds are swept out whenever the table has doubled since the last
    /// sweep, so it stays within twice the distinct values in use.
    pub(super) fn share(&mut self, data: Vec<u8>) -> Arc<[u8]> {
        if data.len() > SHARED_DATA {
            return data.into();
        }
        if let Some(v) = self.shared.get(&data[..]) {
            return v.clone();
        }
        if self.shared.len() >= 2 * self.swept.max(32) {
            // Held only here: no node (and no reader's copy) uses the value any more.
            self.shared.retain(|v| Arc::strong_count(v) > 1);
            self.swept = self.shared.len();
        }
        let v: Arc<[u8]> = data.into();
        self.shared.insert(v.clone());
        v
    }

    /// Where `name` is, or would be inserted, among the children of `slot`.
    fn search(&self, slot: u32, name: &[u8]) -> Result<usize, usize> {
        self.slots[slot as usize]
            .kids
            .binary_search_by(|k| self.slots[*k as usize].name.as_bytes().cmp(name))
    }

    fn find(&self, path: &str) -> Option<u32> {
        let mut at = ROOT;
        for seg in segments(path) {
            let i = self.search(at, seg.as_bytes()).ok()?;
            at = self.slots[at as usize].kids[i];
        }
        Some(at)
    }

    /// The node mirrored at `path`.
    pub(super) fn get(&self, path: &str) -> Option<&MirrorNode> {
        self.slots[self.find(path)? as usize].node.as_ref()
    }

    /// Names of the children of `path`, sorted.
    pub(super) fn children(&self, path: &str) -> Vec<String> {
        self.find(path).map_or_else(Vec::new, |at| {
            self.slots[at as usize]
                .kids
                .iter()
                .map(|k| self.slots[*k as usize].name.to_text())
                .collect()
        })
    }

    /// `path` and the paths of every slot below it, parents first (`path` itself even when
    /// nothing is there).
    pub(super) fn subtree(&self, path: &str) -> Vec<String> {
        let mut out = vec![path.to_owned()];
        let Some(at) = self.find(path) else {
            return out;
        };
        let mut queue = vec![at];
        let mut next = 0;
        while next < queue.len() {
            let slot = &self.slots[queue[next] as usize];
            let base = out[next].trim_end_matches('/').to_owned();
            for k in &slot.kids {
                queue.push(*k);
                out.push(format!("{base}/{}", self.slots[*k as usize].name.to_text()));
            }
            next += 1;
        }
        out
    }

    /// Stores `node` at `path` (creating placeholders for missing ancestors) and returns the node
    /// it replaced.
    pub(super) fn set(&mut self, path: &str, node: MirrorNode) -> Option<MirrorNode> {
        let mut at = ROOT;
        for seg in segments(path) {
            at = match self.search(at, seg.as_bytes()) {
                Ok(i) => self.slots[at as usize].kids[i],
                Err(i) => self.add_child(at, i, seg),
            };
        }
        let old = self.slots[at as usize].node.replace(node);
        if old.is_none() {
            self.nodes += 1;
        }
        old
    }

    fn add_child(&mut self, parent: u32, at: usize, name: &str) -> u32 {
        let slot = Slot::empty(name);
        let index = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                u32::try_from(self.slots.len() - 1).expect("under 4 billion mirrored nodes")
            }
        };
        insert_at(&mut self.slots[parent as usize].kids, at, index);
        index
    }

    /// Removes the node at `path` (not its children) and returns it; the slot goes too unless
    /// children hang below it, and so do placeholder ancestors left with nothing below them.
    pub(super) fn remove(&mut self, path: &str) -> Option<MirrorNode> {
        // The slots from the root down to the node: the way back up for pruning.
        let mut chain = vec![ROOT];
        for seg in segments(path) {
            let at = *chain.last().expect("the root");
            let i = self.search(at, seg.as_bytes()).ok()?;
            chain.push(self.slots[at as usize].kids[i]);
        }
        let at = *chain.last().expect("the root");
        let old = self.slots[at as usize].node.take()?;
        self.nodes -= 1;
        while let [.., parent, at] = chain[..] {
            let slot = &self.slots[at as usize];
            if slot.node.is_some() || !slot.kids.is_empty() {
                break;
            }
            if let Ok(i) = self.search(parent, slot.name.as_bytes()) {
                remove_at(&mut self.slots[parent as usize].kids, i);
            }
            self.slots[at as usize] = Slot::empty("");
            self.free.push(at);
            chain.pop();
        }
        Some(old)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::registry::mirror::MirrorStat;

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
        assert!(std::mem::size_of::<Slot>() <= 96);
    }

    #[test]
    fn small_data_is_stored_once_and_unused_values_are_swept() {
        let mut t = Tree::default();
        let a = t.share(b"10.0.0.1@-@7".to_vec());
        let b = t.share(b"10.0.0.1@-@7".to_vec());
        assert!(Arc::ptr_eq(&a, &b));
        let long = vec![b'x'; SHARED_DATA + 1];
        assert!(!Arc::ptr_eq(&t.share(long.clone()), &t.share(long)));
        drop((a, b));
        for i in 0..100 {
            let _ = t.share(format!("value {i}").into_bytes());
        }
        assert!(t.shared.len() < 100, "values no node holds were swept");
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
        assert_eq!(
            t.slots.len() - t.free.len(),
            1,
            "only the root slot is left"
        );
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
        let slots = t.slots.len();
        t.remove(&format!("/j/{long}"));
        t.set("/j/d", node(1));
        assert_eq!(t.slots.len(), slots, "the freed slot holds /j/d");
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
