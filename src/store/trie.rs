//! A path trie held in one vector of slots: the storage of both node trees, the mirror's
//! (`store/tree.rs`) and the embedded server's (`registry/embedded/tree.rs`).
//!
//! A slot holds one path segment, the indices of its children sorted by name, and optionally a
//! node value `T` (a slot without one is a placeholder, which only the mirror makes). A lookup walks
//! the path segment by segment with a binary search at each level; a listing of children reads one
//! short slice. No slot stores its full path: ten thousand jobs mean about 150,000 nodes, and a
//! hash map keyed by full paths costs a bucket (with the load factor's slack), a path string and,
//! for child listings, a second copy of every name. Here a node costs its slot (32 bytes plus the
//! value: the segment inline when up to 15 bytes and a longer one held once for the whole trie
//! (`trie/name.rs`), up to two children's 4-byte indices inline and more as an exact boxed slice,
//! no spare capacity) and 4 bytes in its parent's slice when that has more than two. Freed slots
//! are reused.
//!
//! The trie knows nothing of the values' rules: callers walk it by slot index and decide.

mod name;

use hashbrown::{DefaultHashBuilder, HashMap, HashTable};
use std::hash::BuildHasher;

use name::{Name, Names};

/// Index of the root slot, which always exists.
pub(crate) const ROOT: u32 = 0;

/// A slot's children, sorted by name: up to two inline (most parents have one or two: the
/// heap block of even one index would cost 32 bytes), more as an exact boxed slice (children
/// change rarely). 16 bytes either way.
#[derive(Debug)]
enum Kids {
    /// Unused places hold [`NO_SLOT`], after the used ones.
    Few([u32; 2]),
    Many(Box<[u32]>),
}

/// No slot: the filler of [`Kids::Few`], never a slot index.
const NO_SLOT: u32 = u32::MAX;

impl Kids {
    const NONE: Kids = Kids::Few([NO_SLOT; 2]);

    fn from_vec(kids: Vec<u32>) -> Self {
        match kids[..] {
            [] => Self::NONE,
            [a] => Kids::Few([a, NO_SLOT]),
            [a, b] => Kids::Few([a, b]),
            _ => Kids::Many(kids.into_boxed_slice()),
        }
    }

    fn as_slice(&self) -> &[u32] {
        match self {
            Kids::Few(ids) => &ids[..ids.iter().take_while(|i| **i != NO_SLOT).count()],
            Kids::Many(ids) => ids,
        }
    }

    /// The indices as a vector, leaving none (a boxed slice is reused, not copied: the namespace
    /// root may have ten thousand children).
    fn take(&mut self) -> Vec<u32> {
        match std::mem::replace(self, Self::NONE) {
            Kids::Many(ids) => ids.into_vec(),
            few => few.as_slice().to_vec(),
        }
    }

    fn insert(&mut self, at: usize, index: u32) {
        // A first or second child stays inline: no allocation (most inserts are these).
        if let Kids::Few(ids) = self {
            if ids[1] == NO_SLOT {
                ids.copy_within(at..1, at + 1);
                ids[at] = index;
                return;
            }
        }
        let mut kids = self.take();
        kids.reserve_exact(1);
        kids.insert(at, index);
        *self = Self::from_vec(kids);
    }

    /// Removes the index at `at` and returns it.
    fn remove(&mut self, at: usize) -> u32 {
        if let Kids::Few(ids) = self {
            let index = ids[at];
            ids.copy_within(at + 1.., at);
            ids[1] = NO_SLOT;
            return index;
        }
        let mut kids = self.take();
        let index = kids.remove(at);
        *self = Self::from_vec(kids);
        index
    }
}

#[derive(Debug)]
struct Slot<T> {
    name: Name,
    kids: Kids,
    value: Option<T>,
}

impl<T> Slot<T> {
    fn new(name: Name, value: Option<T>) -> Self {
        Self {
            name,
            kids: Kids::NONE,
            value,
        }
    }
}

/// The segments of an absolute path (none for `/`).
pub(crate) fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

/// A slot with at least this many children also gets a hash index of their names (and loses it
/// below half as many): a namespace's root holds every job, and a binary search among ten
/// thousand names is fourteen string comparisons on every lookup that passes through it.
const WIDE: usize = 64;

/// The hash index of a wide slot's children: their slot indices, hashed by name.
type WideIndex = HashTable<u32>;

/// The trie. Not synchronised: its owner guards it.
#[derive(Debug)]
pub(crate) struct Trie<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    /// The name indexes of wide slots, by slot: a few (a namespace root, a job with many
    /// items), four bytes a child (plus the table's slack) beside the sorted list.
    wide: HashMap<u32, WideIndex>,
    hasher: DefaultHashBuilder,
    /// The names longer than a slot holds inline, each held once.
    names: Names,
}

impl<T> Trie<T> {
    /// A trie holding only the root slot, with `root` as its value.
    pub(crate) fn new(root: Option<T>) -> Self {
        Self {
            slots: vec![Slot::new(Name::EMPTY, root)],
            free: Vec::new(),
            wide: HashMap::new(),
            hasher: DefaultHashBuilder::default(),
            names: Names::default(),
        }
    }

    fn hash(hasher: &DefaultHashBuilder, name: &[u8]) -> u64 {
        hasher.hash_one(name)
    }

    /// Keeps `parent`'s name index in step with a child `index` just added (`added`) or about
    /// to be removed: built when the slot gets wide, dropped when it gets narrow again.
    fn index_child(&mut self, parent: u32, index: u32, added: bool) {
        let kids = self.slots[parent as usize].kids.as_slice().len();
        let (slots, hasher, names) = (&self.slots, &self.hasher, &self.names);
        let rehash = |k: &u32| Self::hash(hasher, names.bytes(&slots[*k as usize].name));
        match self.wide.get_mut(&parent) {
            Some(table) if added => {
                let hash = Self::hash(hasher, names.bytes(&slots[index as usize].name));
                table.insert_unique(hash, index, rehash);
            }
            Some(_) if kids <= WIDE / 2 => {
                self.wide.remove(&parent);
            }
            Some(table) => {
                let hash = Self::hash(hasher, names.bytes(&slots[index as usize].name));
                if let Ok(entry) = table.find_entry(hash, |k| *k == index) {
                    entry.remove();
                }
            }
            None if added && kids >= WIDE => {
                let mut table = WideIndex::with_capacity(kids);
                for k in slots[parent as usize].kids.as_slice() {
                    table.insert_unique(rehash(k), *k, rehash);
                }
                self.wide.insert(parent, table);
            }
            None => {}
        }
    }

    /// Where `name` is (`Ok`), or would be inserted (`Err`), among the children of `slot`.
    pub(crate) fn search(&self, slot: u32, name: &str) -> Result<usize, usize> {
        self.slots[slot as usize]
            .kids
            .as_slice()
            .binary_search_by(|k| self.name_bytes(*k).cmp(name.as_bytes()))
    }

    /// The child of `slot` named `name`.
    pub(crate) fn child(&self, slot: u32, name: &str) -> Option<u32> {
        if self.kids(slot).len() >= WIDE / 2 {
            if let Some(table) = self.wide.get(&slot) {
                let hash = Self::hash(&self.hasher, name.as_bytes());
                let named = |k: &u32| self.name_bytes(*k) == name.as_bytes();
                return table.find(hash, named).copied();
            }
        }
        let i = self.search(slot, name).ok()?;
        Some(self.kids(slot)[i])
    }

    /// The slot at `path`, placeholder or not.
    pub(crate) fn find(&self, path: &str) -> Option<u32> {
        self.find_from(ROOT, path)
    }

    /// The slot at `path` taken relative to `slot` (`""` is `slot` itself).
    pub(crate) fn find_from(&self, slot: u32, path: &str) -> Option<u32> {
        segments(path).try_fold(slot, |at, seg| self.child(at, seg))
    }

    /// The slots from the root down to `path`, both included, or `None` when it is absent.
    pub(crate) fn chain(&self, path: &str) -> Option<Vec<u32>> {
        // Room for the deepest job node below a namespace: one allocation, not three.
        let mut chain = Vec::with_capacity(8);
        chain.push(ROOT);
        for seg in segments(path) {
            let at = *chain.last().expect("the root");
            chain.push(self.child(at, seg)?);
        }
        Some(chain)
    }

    /// The children of `slot`, sorted by name.
    pub(crate) fn kids(&self, slot: u32) -> &[u32] {
        self.slots[slot as usize].kids.as_slice()
    }

    /// The name (last segment) of `slot`; `""` for the root.
    pub(crate) fn name(&self, slot: u32) -> &str {
        self.names.str(&self.slots[slot as usize].name)
    }

    fn name_bytes(&self, slot: u32) -> &[u8] {
        self.names.bytes(&self.slots[slot as usize].name)
    }

    /// The names of the children of `slot`, sorted.
    pub(crate) fn kid_names(&self, slot: u32) -> impl Iterator<Item = &str> {
        self.kids(slot).iter().map(|k| self.name(*k))
    }

    pub(crate) fn value(&self, slot: u32) -> Option<&T> {
        self.slots[slot as usize].value.as_ref()
    }

    pub(crate) fn value_mut(&mut self, slot: u32) -> Option<&mut T> {
        self.slots[slot as usize].value.as_mut()
    }

    /// Stores `value` in `slot` and returns the one it replaced.
    pub(crate) fn put(&mut self, slot: u32, value: T) -> Option<T> {
        self.slots[slot as usize].value.replace(value)
    }

    /// Takes the value out of `slot`, leaving a placeholder.
    pub(crate) fn take(&mut self, slot: u32) -> Option<T> {
        self.slots[slot as usize].value.take()
    }

    /// Adds a child `name` to `parent` at position `at` of its children (as [`Trie::search`]
    /// found it) and returns its slot, a freed one when there is one.
    pub(crate) fn add_child(
        &mut self,
        parent: u32,
        at: usize,
        name: &str,
        value: Option<T>,
    ) -> u32 {
        let slot = Slot::new(self.names.make(name), value);
        let index = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                u32::try_from(self.slots.len() - 1)
                    .ok()
                    .filter(|i| *i != NO_SLOT)
                    .expect("under 4 billion registry nodes")
            }
        };
        self.slots[parent as usize].kids.insert(at, index);
        self.index_child(parent, index, true);
        index
    }

    /// Removes the child at position `at` of `parent`'s children, which must have none of its
    /// own, frees its slot and returns its value.
    pub(crate) fn remove_child(&mut self, parent: u32, at: usize) -> Option<T> {
        let index = self.kids(parent)[at];
        self.index_child(parent, index, false);
        self.slots[parent as usize].kids.remove(at);
        let slot = std::mem::replace(
            &mut self.slots[index as usize],
            Slot::new(Name::EMPTY, None),
        );
        debug_assert!(
            slot.kids.as_slice().is_empty(),
            "a removed slot has no children"
        );
        self.free.push(index);
        self.names.release(slot.name);
        slot.value
    }

    /// `slot` (whose path is `path`) and every slot below it with its path, parents first
    /// (breadth first), children in name order.
    pub(crate) fn below(&self, slot: u32, path: &str) -> Vec<(String, u32)> {
        let mut out = vec![(path.to_owned(), slot)];
        let mut next = 0;
        while next < out.len() {
            let at = out[next].1;
            let base = out[next].0.trim_end_matches('/').to_owned();
            for k in self.kids(at) {
                out.push((format!("{base}/{}", self.name(*k)), *k));
            }
            next += 1;
        }
        out
    }

    /// The number of slots in use, placeholders and the root included.
    #[cfg(test)]
    pub(crate) fn slots_in_use(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// The number of names held in the shared table.
    #[cfg(test)]
    pub(crate) fn shared_names(&self) -> usize {
        self.names.shared()
    }

    /// The size of one slot.
    #[cfg(test)]
    pub(crate) fn slot_bytes() -> usize {
        std::mem::size_of::<Slot<T>>()
    }

    /// The number of slots allocated, free ones included.
    #[cfg(test)]
    pub(crate) fn slots_allocated(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests;
