//! [`ItemSet`]: a set of a job's items as the machine keeps its own runs'. Most jobs have one
//! item, so each of a job's five sets ([`LocalRuns`](super::execution::LocalRuns)) holds one
//! item inline and takes a tree only beyond: a one-item job's every fire fills and empties them
//! without an allocation, and ten thousand jobs hold 16 bytes a set rather than 24.

use std::collections::BTreeSet;
use std::ops::RangeBounds;

use crate::types::ShardItem;

/// A set of items, ascending.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ItemSet(Repr);

#[derive(Clone, Default, PartialEq, Eq)]
enum Repr {
    #[default]
    Empty,
    One(ShardItem),
    // Boxed on purpose: the tree inline would make every set 32 bytes rather than 16, for the
    // rare job with several items running at once.
    #[allow(clippy::box_collection)]
    Many(Box<BTreeSet<ShardItem>>),
}

impl ItemSet {
    /// An empty set.
    pub const fn new() -> Self {
        Self(Repr::Empty)
    }

    /// Whether it holds no item.
    pub fn is_empty(&self) -> bool {
        match &self.0 {
            Repr::Empty => true,
            Repr::One(_) => false,
            Repr::Many(set) => set.is_empty(),
        }
    }

    /// How many items it holds.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Empty => 0,
            Repr::One(_) => 1,
            Repr::Many(set) => set.len(),
        }
    }

    /// Whether it holds `item`.
    pub fn contains(&self, item: &ShardItem) -> bool {
        match &self.0 {
            Repr::Empty => false,
            Repr::One(one) => one == item,
            Repr::Many(set) => set.contains(item),
        }
    }

    /// Adds `item`; whether it was new.
    pub fn insert(&mut self, item: ShardItem) -> bool {
        match &mut self.0 {
            Repr::Empty => {
                self.0 = Repr::One(item);
                true
            }
            Repr::One(one) if *one == item => false,
            Repr::One(one) => {
                let set = BTreeSet::from([*one, item]);
                self.0 = Repr::Many(Box::new(set));
                true
            }
            Repr::Many(set) => set.insert(item),
        }
    }

    /// Removes `item`; whether it was there. The last item's removal frees the tree.
    pub fn remove(&mut self, item: &ShardItem) -> bool {
        match &mut self.0 {
            Repr::Empty => false,
            Repr::One(one) if one == item => {
                self.0 = Repr::Empty;
                true
            }
            Repr::One(_) => false,
            Repr::Many(set) => {
                let removed = set.remove(item);
                self.shrink();
                removed
            }
        }
    }

    /// Keeps the items `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&ShardItem) -> bool) {
        match &mut self.0 {
            Repr::Empty => {}
            Repr::One(one) if keep(one) => {}
            Repr::One(_) => self.0 = Repr::Empty,
            Repr::Many(set) => {
                set.retain(|i| keep(i));
                self.shrink();
            }
        }
    }

    /// Removes every item.
    pub fn clear(&mut self) {
        self.0 = Repr::Empty;
    }

    /// The items, ascending.
    pub fn iter(&self) -> Iter<'_> {
        match &self.0 {
            Repr::Empty => Iter::Slice([].iter()),
            Repr::One(one) => Iter::Slice(std::slice::from_ref(one).iter()),
            Repr::Many(set) => Iter::Tree(set.iter()),
        }
    }

    /// The items within `range`, ascending.
    pub fn range(&self, range: impl RangeBounds<ShardItem>) -> impl Iterator<Item = &ShardItem> {
        let bounds = (range.start_bound().cloned(), range.end_bound().cloned());
        self.iter().filter(move |i| bounds.contains(*i))
    }

    /// A tree of one item or none goes back inline (its memory with it).
    fn shrink(&mut self) {
        if let Repr::Many(set) = &self.0 {
            let mut left = set.iter();
            self.0 = match (left.next(), left.next()) {
                (None, _) => Repr::Empty,
                (Some(one), None) => Repr::One(*one),
                _ => return,
            };
        }
    }
}

/// The items of an [`ItemSet`], ascending.
#[derive(Debug, Clone)]
pub enum Iter<'a> {
    /// None or the one inline.
    Slice(std::slice::Iter<'a, ShardItem>),
    /// Those of the tree.
    Tree(std::collections::btree_set::Iter<'a, ShardItem>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a ShardItem;

    fn next(&mut self) -> Option<&'a ShardItem> {
        match self {
            Self::Slice(it) => it.next(),
            Self::Tree(it) => it.next(),
        }
    }
}

impl<'a> IntoIterator for &'a ItemSet {
    type Item = &'a ShardItem;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl IntoIterator for ItemSet {
    type Item = ShardItem;
    type IntoIter = std::collections::btree_set::IntoIter<ShardItem>;

    fn into_iter(self) -> Self::IntoIter {
        let set: BTreeSet<ShardItem> = match self.0 {
            Repr::Empty => BTreeSet::new(),
            Repr::One(one) => BTreeSet::from([one]),
            Repr::Many(set) => *set,
        };
        set.into_iter()
    }
}

impl Extend<ShardItem> for ItemSet {
    fn extend<T: IntoIterator<Item = ShardItem>>(&mut self, items: T) {
        for item in items {
            self.insert(item);
        }
    }
}

impl FromIterator<ShardItem> for ItemSet {
    fn from_iter<T: IntoIterator<Item = ShardItem>>(items: T) -> Self {
        let mut set = Self::new();
        set.extend(items);
        set
    }
}

impl<const N: usize> From<[ShardItem; N]> for ItemSet {
    fn from(items: [ShardItem; N]) -> Self {
        items.into_iter().collect()
    }
}

impl From<BTreeSet<ShardItem>> for ItemSet {
    fn from(items: BTreeSet<ShardItem>) -> Self {
        items.into_iter().collect()
    }
}

impl std::fmt::Debug for ItemSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(set: &ItemSet) -> Vec<u32> {
        set.iter().map(|i| i.0).collect()
    }

    #[test]
    fn one_item_is_held_inline_and_two_in_a_tree_ascending() {
        let mut set = ItemSet::new();
        assert!(set.insert(ShardItem(5)) && !set.insert(ShardItem(5)));
        assert!(matches!(set.0, Repr::One(ShardItem(5))));
        assert!(set.insert(ShardItem(2)));
        assert!(matches!(set.0, Repr::Many(_)));
        assert_eq!((items(&set), set.len()), (vec![2, 5], 2));
        assert!(set.contains(&ShardItem(2)) && !set.contains(&ShardItem(3)));
    }

    #[test]
    fn removals_give_the_tree_back_once_one_item_or_none_is_left() {
        let mut set = ItemSet::from([ShardItem(1), ShardItem(2), ShardItem(3)]);
        assert!(set.remove(&ShardItem(2)) && !set.remove(&ShardItem(2)));
        assert!(matches!(set.0, Repr::Many(_)));
        assert!(set.remove(&ShardItem(1)));
        assert!(matches!(set.0, Repr::One(ShardItem(3))));
        assert!(set.remove(&ShardItem(3)) && set.is_empty());
        assert_eq!(set, ItemSet::default());
    }

    #[test]
    fn retain_range_and_the_owned_iterator_see_the_items_ascending() {
        let mut set: ItemSet = (0..6).map(ShardItem).collect();
        set.retain(|i| i.0 % 2 == 0);
        assert_eq!(items(&set), vec![0, 2, 4]);
        let low: Vec<u32> = set.range(..ShardItem(3)).map(|i| i.0).collect();
        assert_eq!(low, vec![0, 2]);
        set.retain(|i| i.0 == 4);
        assert!(matches!(set.0, Repr::One(ShardItem(4))));
        let owned: Vec<u32> = set.clone().into_iter().map(|i| i.0).collect();
        assert_eq!(owned, vec![4]);
        set.retain(|_| false);
        assert!(set.is_empty() && set.iter().next().is_none());
    }
}
