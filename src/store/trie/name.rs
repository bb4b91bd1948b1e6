//! A slot's name: one path segment in 16 bytes. Up to 15 bytes are held inline (almost every
//! segment: `config`, `0`, `instance`, an IP address, a job name); a longer one is held once in
//! the trie's table of shared names and counted, so an instance id such as
//! `192.168.100.200@-@12345`, which names a node under every job's `instances`, costs its bytes
//! once for the whole trie and four bytes in each slot.
//!
//! A 16-byte name against the 24 bytes of an inline buffer of 22: ten thousand jobs are about
//! 150,000 slots, so each byte of a slot is about 150 KB resident.

use hashbrown::{DefaultHashBuilder, HashTable};
use std::hash::BuildHasher;

/// The longest name held inline.
const INLINE: usize = 15;

/// An inline name's length: an enum of 16 values, so that [`Name`]'s two variants share the
/// other byte values of this one as their tag (the type stays 16 bytes).
#[derive(Debug, Clone, Copy)]
#[repr(u8)]
pub(super) enum Len {
    L0,
    L1,
    L2,
    L3,
    L4,
    L5,
    L6,
    L7,
    L8,
    L9,
    L10,
    L11,
    L12,
    L13,
    L14,
    L15,
}

const LENS: [Len; INLINE + 1] = [
    Len::L0,
    Len::L1,
    Len::L2,
    Len::L3,
    Len::L4,
    Len::L5,
    Len::L6,
    Len::L7,
    Len::L8,
    Len::L9,
    Len::L10,
    Len::L11,
    Len::L12,
    Len::L13,
    Len::L14,
    Len::L15,
];

/// A slot's name. Not `Clone`: a shared name is counted, and only [`Names`] makes and releases
/// one.
#[derive(Debug)]
pub(super) enum Name {
    Inline {
        bytes: [u8; INLINE],
        len: Len,
    },
    /// An index into [`Names`].
    Shared(u32),
}

impl Name {
    /// The root's and a freed slot's name.
    pub(super) const EMPTY: Name = Name::Inline {
        bytes: [0; INLINE],
        len: Len::L0,
    };
}

/// One shared name and how many slots hold it.
#[derive(Debug)]
struct Entry {
    name: Box<str>,
    holders: u32,
}

/// The trie's table of names longer than [`INLINE`] bytes.
#[derive(Debug, Default)]
pub(super) struct Names {
    /// `None`: a freed place, listed in `free`.
    entries: Vec<Option<Entry>>,
    free: Vec<u32>,
    /// The entries' indices, hashed by name.
    index: HashTable<u32>,
    hasher: DefaultHashBuilder,
}

impl Names {
    /// `s` as a name: inline, or one more holder of its shared entry (made if it is new).
    pub(super) fn make(&mut self, s: &str) -> Name {
        if s.len() <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            return Name::Inline {
                bytes,
                len: LENS[s.len()],
            };
        }
        let hash = self.hasher.hash_one(s);
        let entries = &self.entries;
        let same = |i: &u32| entry(entries, *i).name.as_ref() == s;
        if let Some(i) = self.index.find(hash, same).copied() {
            if let Some(e) = self.entries[i as usize].as_mut() {
                e.holders += 1;
            }
            return Name::Shared(i);
        }
        let fresh = Some(Entry {
            name: s.into(),
            holders: 1,
        });
        let i = match self.free.pop() {
            Some(i) => {
                self.entries[i as usize] = fresh;
                i
            }
            None => {
                self.entries.push(fresh);
                u32::try_from(self.entries.len() - 1).expect("under 4 billion long names")
            }
        };
        let (entries, hasher) = (&self.entries, &self.hasher);
        self.index
            .insert_unique(hash, i, |k| hasher.hash_one(&*entry(entries, *k).name));
        Name::Shared(i)
    }

    /// A slot no longer holds `name`: a shared entry without holders is freed.
    pub(super) fn release(&mut self, name: Name) {
        let Name::Shared(i) = name else { return };
        let Some(e) = self.entries[i as usize].as_mut() else {
            return;
        };
        e.holders -= 1;
        if e.holders > 0 {
            return;
        }
        let hash = self.hasher.hash_one(&*e.name);
        if let Ok(found) = self.index.find_entry(hash, |k| *k == i) {
            found.remove();
        }
        self.entries[i as usize] = None;
        self.free.push(i);
    }

    /// The bytes of `name`; compared bytewise, they order exactly as `str` does.
    pub(super) fn bytes<'a>(&'a self, name: &'a Name) -> &'a [u8] {
        match name {
            Name::Inline { bytes, len } => &bytes[..*len as usize],
            Name::Shared(i) => entry(&self.entries, *i).name.as_bytes(),
        }
    }

    pub(super) fn str<'a>(&'a self, name: &'a Name) -> &'a str {
        match name {
            // Whole bytes of a `&str`, cut at its end: valid UTF-8.
            Name::Inline { .. } => std::str::from_utf8(self.bytes(name)).unwrap_or_default(),
            Name::Shared(i) => &entry(&self.entries, *i).name,
        }
    }

    /// The number of shared names held.
    #[cfg(test)]
    pub(super) fn shared(&self) -> usize {
        self.entries.len() - self.free.len()
    }
}

/// The live entry at `i` (a name's index always points at one).
fn entry(entries: &[Option<Entry>], i: u32) -> &Entry {
    entries[i as usize]
        .as_ref()
        .expect("a shared name's entry lives while a slot holds it")
}
