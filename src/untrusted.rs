//! Bounds on YAML read from the registry (a job's `config`, an `instances/{id}` node), checked
//! before any parse that builds values: whoever can write one znode must not be able to take down
//! every node that reads it.
//!
//! Two bounds:
//! - **Size**: at most [`MAX_REGISTRY_YAML_BYTES`], ZooKeeper's own `jute.maxbuffer` default, so a
//!   server configured to take more cannot hand a node more than a stock one would.
//! - **No aliases**: serde materialises every `*alias` as a deep copy of its anchor, so a few
//!   hundred KB of aliases of a 100 KB anchor become gigabytes (the "billion laughs"). SnakeYAML
//!   (ElasticJob) shares the anchored node instead and caps aliases of collections at 50, but with
//!   copies even 50 aliases nest into 2^25 times the text. ElasticJob never writes an alias
//!   (SnakeYAML anchors only a collection that the same object holds twice, and a job config holds
//!   none twice), so any alias is refused. Anchors alone are harmless and accepted.
//!
//! The alias scan reads the text's YAML events with libyaml (`unsafe-libyaml`, the parser under
//! `serde_yaml_ng`) and allocates nothing per event; text without a `*` cannot hold an alias and
//! is not scanned at all.

use std::mem::MaybeUninit;

#[allow(clippy::unsafe_removed_from_name)] // `sys` reads as the C library it binds
use unsafe_libyaml as sys;

/// The largest YAML read from the registry: ZooKeeper's default `jute.maxbuffer` (1 MiB - 1).
pub const MAX_REGISTRY_YAML_BYTES: usize = 0xfffff;

/// Why YAML from the registry was refused before parsing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UntrustedYamlError {
    /// The value is larger than [`MAX_REGISTRY_YAML_BYTES`].
    #[error("{bytes} bytes of YAML, more than the {max} accepted")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The bound.
        max: usize,
    },
    /// The value holds an alias, which would be copied in full wherever it appears.
    #[error(
        "YAML alias at line {line} column {column}: aliases (*name) are refused in registry data"
    )]
    Alias {
        /// 1-based line of the alias.
        line: usize,
        /// 1-based column of the alias.
        column: usize,
    },
}

/// Checks YAML that came from outside (the registry, a file, a request) before it is parsed.
///
/// ```
/// use shardcron::config::untrusted::{check_yaml, UntrustedYamlError};
/// assert!(check_yaml(b"cron: 0/5 * * * * ?\nprops: {a: '*b'}\n").is_ok());
/// assert_eq!(
///     check_yaml(b"a: &x [1, 2]\nb: *x\n"),
///     Err(UntrustedYamlError::Alias { line: 2, column: 4 })
/// );
/// ```
pub fn check_yaml(data: &[u8]) -> Result<(), UntrustedYamlError> {
    if data.len() > MAX_REGISTRY_YAML_BYTES {
        return Err(UntrustedYamlError::TooLarge {
            bytes: data.len(),
            max: MAX_REGISTRY_YAML_BYTES,
        });
    }
    // Every alias starts with `*`: most data (an instance node, a config whose cron has no `*`)
    // needs no scan.
    if !data.contains(&b'*') {
        return Ok(());
    }
    match first_alias(data) {
        Some((line, column)) => Err(UntrustedYamlError::Alias { line, column }),
        None => Ok(()),
    }
}

/// The 1-based line and column of the first alias event, if any. Text that is not YAML ends the
/// scan: the parse that follows reports it with its own message.
fn first_alias(data: &[u8]) -> Option<(usize, usize)> {
    let mut parser = Parser::new(data)?;
    loop {
        match parser.next()? {
            Scanned::Alias { line, column } => return Some((line + 1, column + 1)),
            Scanned::End => return None,
            Scanned::Other => {}
        }
    }
}

enum Scanned {
    Alias { line: usize, column: usize },
    End,
    Other,
}

/// A libyaml parser over borrowed bytes; boxed so that it never moves after initialisation.
struct Parser<'a> {
    sys: Box<MaybeUninit<sys::yaml_parser_t>>,
    _input: &'a [u8],
}

impl<'a> Parser<'a> {
    fn new(input: &'a [u8]) -> Option<Self> {
        let mut sys = Box::new(MaybeUninit::<sys::yaml_parser_t>::uninit());
        // SAFETY: `yaml_parser_initialize` zeroes and sets up the parser in place; on failure
        // (out of memory) nothing was allocated and the box is dropped without `delete`. The input
        // outlives the parser (`'a`), which reads it only through the pointer given here.
        unsafe {
            let parser = sys.as_mut_ptr();
            if sys::yaml_parser_initialize(parser).fail {
                return None;
            }
            sys::yaml_parser_set_encoding(parser, sys::YAML_UTF8_ENCODING);
            sys::yaml_parser_set_input_string(parser, input.as_ptr(), input.len() as _);
        }
        Some(Self { sys, _input: input })
    }

    /// The next event's kind; `None` on a syntax error (the scan stops at the first one).
    fn next(&mut self) -> Option<Scanned> {
        let mut event = MaybeUninit::<sys::yaml_event_t>::uninit();
        // SAFETY: the parser was initialised in `new`; a successful `yaml_parser_parse` fills
        // `event`, which is read (type and start mark only) and then deleted exactly once.
        unsafe {
            let parser = self.sys.as_mut_ptr();
            let event = event.as_mut_ptr();
            if sys::yaml_parser_parse(parser, event).fail {
                return None;
            }
            let scanned = match (*event).type_ {
                sys::YAML_ALIAS_EVENT => Scanned::Alias {
                    line: (*event).start_mark.line as usize,
                    column: (*event).start_mark.column as usize,
                },
                // After the end (or an error) libyaml answers "no event": the scan is over.
                sys::YAML_STREAM_END_EVENT | sys::YAML_NO_EVENT => Scanned::End,
                _ => Scanned::Other,
            };
            sys::yaml_event_delete(event);
            Some(scanned)
        }
    }
}

impl Drop for Parser<'_> {
    fn drop(&mut self) {
        // SAFETY: the parser was initialised in `new` (a failed one never becomes a `Parser`).
        unsafe { sys::yaml_parser_delete(self.sys.as_mut_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_inside_scalars_comments_and_quotes_are_not_aliases() {
        for text in [
            "cron: 0/5 * * * * ?\n",
            "cron: '* * * * * ?'\n",
            "cron: \"* * * * * ?\"\n",
            "script: |\n  ls *.txt\n  *x\n",
            "a: b # *comment\n",
            "props: {glob: 'a*b', n: 2*3}\n",
            "anchored: &only [1, 2]\n",
        ] {
            assert_eq!(check_yaml(text.as_bytes()), Ok(()), "{text:?}");
        }
    }

    #[test]
    fn every_kind_of_alias_is_refused_with_its_place() {
        for (text, line, column) in [
            ("a: &x 1\nb: *x\n", 2, 4),
            ("list: &l [1]\nmore: [*l, *l]\n", 2, 8),
            ("m: &m {k: v}\n? *m\n: v\n", 2, 3),
            ("- &s x\n- *s\n", 2, 3),
        ] {
            assert_eq!(
                check_yaml(text.as_bytes()),
                Err(UntrustedYamlError::Alias { line, column }),
                "{text:?}"
            );
        }
    }

    #[test]
    fn an_alias_bomb_is_refused_at_its_first_alias_without_expanding() {
        let anchor = "x".repeat(100 * 1024);
        let mut text = format!("big: &a '{anchor}'\nbomb: [");
        for _ in 0..50_000 {
            text.push_str("*a,");
        }
        text.push_str("*a]\n");
        assert!(text.len() < MAX_REGISTRY_YAML_BYTES);
        assert_eq!(
            check_yaml(text.as_bytes()),
            Err(UntrustedYamlError::Alias { line: 2, column: 8 })
        );
    }

    #[test]
    fn data_over_the_bound_is_refused_before_any_scan() {
        let text = vec![b'a'; MAX_REGISTRY_YAML_BYTES + 1];
        assert_eq!(
            check_yaml(&text),
            Err(UntrustedYamlError::TooLarge {
                bytes: MAX_REGISTRY_YAML_BYTES + 1,
                max: MAX_REGISTRY_YAML_BYTES
            })
        );
        assert_eq!(check_yaml(&text[1..]), Ok(()));
    }

    #[test]
    fn text_that_is_not_yaml_is_left_to_the_parser() {
        assert_eq!(check_yaml(b"a: [*\n"), Ok(()));
        assert_eq!(check_yaml(b"\xff\xfe*"), Ok(()));
    }
}
