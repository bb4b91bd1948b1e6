//! Small data values stored once however many nodes hold them, for both node trees (the mirror's
//! and the embedded server's).
//!
//! Many nodes of a namespace hold the same few bytes: an instance id is the data of each item's
//! owner node, of each running marker and of the leader node, in every job, and most parents hold
//! nothing. Stored per node, each such value is an allocation (32 to 80 bytes with the allocator's
//! overhead); shared, it is a 16-byte pointer. Longer values (a job's config) are one node's own.

use std::collections::HashSet;
use std::sync::Arc;

/// The longest data shared by value; longer data is stored as is.
pub(crate) const SHARED_DATA: usize = 96;

/// The table of shared values. Not synchronised: its owner guards it.
#[derive(Debug, Default)]
pub(crate) struct SharedData {
    values: HashSet<Arc<[u8]>>,
    /// The size of `values` after its last sweep of values no one holds any more.
    swept: usize,
}

impl SharedData {
    /// `data` as shared bytes: empty and small values are stored once however many nodes hold
    /// them. Values held only here are swept out whenever the table has doubled since the last
    /// sweep, so it stays within twice the distinct values in use.
    pub(crate) fn share(&mut self, data: &[u8]) -> Arc<[u8]> {
        if data.len() > SHARED_DATA {
            return data.into();
        }
        if let Some(v) = self.values.get(data) {
            return v.clone();
        }
        if self.values.len() >= 2 * self.swept.max(32) {
            // Held only here: no node (and no reader's copy) uses the value any more.
            self.values.retain(|v| Arc::strong_count(v) > 1);
            self.swept = self.values.len();
        }
        let v: Arc<[u8]> = data.into();
        self.values.insert(v.clone());
        v
    }

    /// The number of values in the table.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_data_is_stored_once_and_unused_values_are_swept() {
        let mut t = SharedData::default();
        let a = t.share(b"10.0.0.1@-@7");
        let b = t.share(b"10.0.0.1@-@7");
        assert!(Arc::ptr_eq(&a, &b));
        let long = vec![b'x'; SHARED_DATA + 1];
        assert!(!Arc::ptr_eq(&t.share(&long), &t.share(&long)));
        drop((a, b));
        for i in 0..100 {
            let _ = t.share(format!("value {i}").as_bytes());
        }
        assert!(t.len() < 100, "values no node holds were swept");
    }
}
