//! `shardingItemParameters`: the per-item parameter string, `0=Beijing,1=Shanghai,2=Guangzhou`.
//!
//! Parsed as ElasticJob's `ShardingItemParameters` does: entries split on `,`, each entry split on
//! `=` into exactly two parts, key and value trimmed. Consequences, kept for compatibility:
//!
//! - A value cannot contain `=` or `,` (Java splits `0=a=b` into three parts and refuses it).
//! - A value cannot be empty (`0=`): Java's `split` drops the empty part and refuses the entry.
//! - A trailing comma is ignored (Java's `split` drops trailing empty entries).
//!
//! Where Java is lax we refuse: a duplicate key (Java keeps the last silently), and a key outside
//! `0..shardingTotalCount` (Java keeps a parameter no item will ever see).

use std::collections::BTreeMap;

use crate::ShardItem;

/// One malformed entry of `shardingItemParameters`; every variant names the entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ItemParameterError {
    /// Not `key=value` with exactly one `=` and a non-empty value.
    #[error("entry {entry:?} is not item=value (one '=', a non-empty value without '=' or ',')")]
    NotKeyValue {
        /// The entry as written.
        entry: String,
    },
    /// The key is not an integer.
    #[error("entry {entry:?}: item {key:?} is not an integer")]
    KeyNotInteger {
        /// The entry as written.
        entry: String,
        /// The refused key.
        key: String,
    },
    /// The key is not one of the job's items.
    #[error("entry {entry:?}: item {item} is outside 0..{total} (shardingTotalCount)")]
    KeyOutOfRange {
        /// The entry as written.
        entry: String,
        /// The refused item number.
        item: i64,
        /// The job's `shardingTotalCount`.
        total: u32,
    },
    /// The key appeared before.
    #[error("entry {entry:?}: item {item} has a parameter already")]
    DuplicateKey {
        /// The entry as written.
        entry: String,
        /// The repeated item.
        item: u32,
    },
}

/// Parses `shardingItemParameters` for a job of `total` items, reporting every bad entry.
///
/// ```
/// use shardcron::{config::parse_item_parameters, ShardItem};
/// let items = parse_item_parameters("0=Beijing, 1 = Shanghai", 3).unwrap();
/// assert_eq!(items[&ShardItem(1)], "Shanghai");
/// assert!(parse_item_parameters("0=a,0=b", 3).is_err());
/// ```
pub fn parse_item_parameters(
    text: &str,
    total: u32,
) -> Result<BTreeMap<ShardItem, String>, Vec<ItemParameterError>> {
    let mut items = BTreeMap::new();
    let mut errors = Vec::new();
    let text = text.trim().trim_end_matches(',');
    if text.is_empty() {
        return Ok(items);
    }
    for entry in text.split(',') {
        match parse_entry(entry, total) {
            Ok((item, value)) => {
                if items.insert(item, value).is_some() {
                    errors.push(ItemParameterError::DuplicateKey {
                        entry: entry.to_owned(),
                        item: item.get(),
                    });
                }
            }
            Err(error) => errors.push(error),
        }
    }
    if errors.is_empty() {
        Ok(items)
    } else {
        Err(errors)
    }
}

fn parse_entry(entry: &str, total: u32) -> Result<(ShardItem, String), ItemParameterError> {
    let not_key_value = || ItemParameterError::NotKeyValue {
        entry: entry.to_owned(),
    };
    let (key, value) = entry.split_once('=').ok_or_else(not_key_value)?;
    let (key, value) = (key.trim(), value.trim());
    if value.is_empty() || value.contains('=') {
        return Err(not_key_value());
    }
    // Java's Integer.parseInt accepts a sign and leading zeros; so does i64's FromStr.
    let item: i64 = key.parse().map_err(|_| ItemParameterError::KeyNotInteger {
        entry: entry.to_owned(),
        key: key.to_owned(),
    })?;
    match u32::try_from(item) {
        Ok(item) if item < total => Ok((ShardItem(item), value.to_owned())),
        _ => Err(ItemParameterError::KeyOutOfRange {
            entry: entry.to_owned(),
            item,
            total,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row: the text, `shardingTotalCount`, and the expected (item, value) pairs.
    type Row = (&'static str, u32, Vec<(u32, String)>);

    fn ok(text: &str, total: u32) -> Vec<(u32, String)> {
        let items = parse_item_parameters(text, total).unwrap_or_else(|e| panic!("{text}: {e:?}"));
        items.into_iter().map(|(k, v)| (k.get(), v)).collect()
    }

    #[test]
    fn well_formed_parameters_map_items_to_trimmed_values() {
        let s = |v: &str| v.to_owned();
        let table: &[Row] = &[
            ("", 3, vec![]),
            ("   ", 3, vec![]),
            (
                "0=Beijing,1=Shanghai,2=Guangzhou",
                3,
                vec![(0, s("Beijing")), (1, s("Shanghai")), (2, s("Guangzhou"))],
            ),
            (" 0 = a , 2=b ", 3, vec![(0, s("a")), (2, s("b"))]),
            ("0=a,", 1, vec![(0, s("a"))]),
            ("01=x,+2=y", 3, vec![(1, s("x")), (2, s("y"))]),
            ("0=a b c", 1, vec![(0, s("a b c"))]),
        ];
        for (text, total, expected) in table {
            assert_eq!(&ok(text, *total), expected, "{text:?}");
        }
    }

    #[test]
    fn malformed_parameters_report_every_bad_entry() {
        let table: &[(&str, u32, &[&str])] = &[
            ("0", 3, &["\"0\" is not item=value"]),
            ("0=", 3, &["\"0=\" is not item=value"]),
            ("0=a=b", 3, &["\"0=a=b\" is not item=value"]),
            ("0=a,,1=b", 3, &["\"\" is not item=value"]),
            ("x=a", 3, &["item \"x\" is not an integer"]),
            ("=a", 3, &["item \"\" is not an integer"]),
            ("3=a", 3, &["item 3 is outside 0..3"]),
            ("-1=a", 3, &["item -1 is outside 0..3"]),
            ("0=a,0=b", 3, &["\"0=b\": item 0 has a parameter already"]),
            (
                "x=a,5=b,1",
                3,
                &["not an integer", "outside 0..3", "\"1\" is not item=value"],
            ),
        ];
        for (text, total, expected) in table {
            let errors = parse_item_parameters(text, *total).expect_err(text);
            let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
            assert_eq!(messages.len(), expected.len(), "{text:?}: {messages:?}");
            for (message, wanted) in messages.iter().zip(expected.iter()) {
                assert!(message.contains(wanted), "{text:?}: {message}");
            }
        }
    }
}
