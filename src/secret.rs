//! Secrets: which values are secret, how they are shown (`***`), and how an edit keeps a secret the
//! user did not change.
//!
//! Every output that leaves the process (API answers, pages, the live stream, `/dump`, logs, history
//! causes, notifications) redacts at its edge with the functions here, so one list decides what is
//! secret:
//!
//! - a `props` key whose last dot-separated word names a secret (`email.password`,
//!   `dingtalk.secret`, `x.token`, `api.key`, ...), see [`is_secret_key`];
//! - a URL's password and the values of its query (robot and webhook URLs carry their
//!   `access_token` there), see [`redact_url`] and [`redact_text`].
//!
//! [`Secret`] holds a value whose `Debug` and `Display` print `***`, so a secret in a struct can not
//! reach a log line through a derived `Debug`.

use std::collections::BTreeMap;
use std::fmt;

/// What every redacted value is shown as.
pub const REDACTED: &str = "***";

/// The last words of a `props` key that mark its value secret (compared case-insensitively, with
/// `-` and `_` ignored).
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
    "accesstoken",
    "apikey",
    "key",
    "privatekey",
    "credential",
    "credentials",
    "auth",
    "authorization",
    "passphrase",
];

/// Whether the value of the `props` key `key` is a secret: its last dot-separated word (or the last
/// word ending in one of the secret words, as in `robotToken`) names one.
pub fn is_secret_key(key: &str) -> bool {
    let last = key.rsplit('.').next().unwrap_or(key);
    let word: String = last
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    SECRET_WORDS
        .iter()
        .any(|secret| word == *secret || (secret.len() >= 5 && word.ends_with(secret)))
}

/// `value` as it may be shown for the key `key`: `***` for a secret key, a URL with its password
/// and query values redacted, anything else unchanged.
pub fn redact_value(key: &str, value: &str) -> String {
    if value.is_empty() {
        return String::new();
    }
    if is_secret_key(key) {
        return REDACTED.to_owned();
    }
    redact_text(value)
}

/// Redacts every secret of `props` in place (see [`redact_value`]).
pub fn redact_props(props: &mut BTreeMap<String, String>) {
    for (key, value) in props.iter_mut() {
        let shown = redact_value(key, value);
        if shown != *value {
            *value = shown;
        }
    }
}

/// A copy of `props` with every secret redacted.
pub fn redacted_props(props: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut copy = props.clone();
    redact_props(&mut copy);
    copy
}

/// After an edit of a config whose secrets were shown redacted: every value of `edited` that is
/// still exactly what the user was shown for that key (`***`, or the redacted URL) takes back the
/// value `before` held, so saving a form does not overwrite a password with `***`.
pub fn keep_unchanged_secrets(
    before: &BTreeMap<String, String>,
    edited: &mut BTreeMap<String, String>,
) {
    for (key, value) in edited.iter_mut() {
        if let Some(old) = before.get(key) {
            let shown = redact_value(key, old);
            if shown != *old && *value == shown {
                value.clone_from(old);
            }
        }
    }
}

/// A URL with its password and every query value replaced by `***`; text that is not an absolute
/// URL is returned unchanged.
pub fn redact_url(url: &str) -> String {
    let Ok(mut parsed) = reqwest::Url::parse(url) else {
        return url.to_owned();
    };
    if parsed.cannot_be_a_base() {
        return url.to_owned();
    }
    let mut changed = false;
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some(REDACTED));
        changed = true;
    }
    if parsed.query().is_some() {
        let pairs: Vec<String> = parsed
            .query_pairs()
            .map(|(name, _)| format!("{name}={REDACTED}"))
            .collect();
        let query = pairs.join("&");
        parsed.set_query(if pairs.is_empty() { None } else { Some(&query) });
        changed = true;
    }
    if changed {
        parsed.to_string()
    } else {
        url.to_owned()
    }
}

/// `text` with every URL in it (a word containing `://`) redacted by [`redact_url`]: for log
/// lines, error causes and notification bodies that quote a URL.
pub fn redact_text(text: &str) -> String {
    if !text.contains("://") {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.'))
            .map_or(0, |i| i + 1);
        let end = rest[at..]
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '<' || c == '>')
            .map_or(rest.len(), |i| at + i);
        out.push_str(&rest[..start]);
        let url = &rest[start..end];
        let trimmed = url.trim_end_matches([',', ';', ')', ']', '.']);
        out.push_str(&redact_url(trimmed));
        out.push_str(&url[trimmed.len()..]);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// An error and its sources, `: `-separated, with every URL in them redacted ([`redact_text`]):
/// how an error is shown in a log line or an answer (a driver's message may quote the URL it
/// failed on, token and all).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    redact_text(&text)
}

/// A secret value: `Debug` and `Display` print `***`; [`Secret::expose`] is the one way to read it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    /// Wraps a secret.
    pub fn new(value: T) -> Self {
        Secret(value)
    }

    /// The secret itself, for the one place that must use it (a connection, a signature).
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> From<T> for Secret<T> {
    fn from(value: T) -> Self {
        Secret(value)
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<T> fmt::Display for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Fills `buf` from the kernel's random source (`/dev/urandom`), for session ids and row ids.
/// Should the source be unreadable (no `/dev`), the buffer is filled from the standard library's
/// randomly keyed hasher and the time, and a warning is logged.
pub fn random_bytes(buf: &mut [u8]) {
    use std::io::Read;
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(buf));
    if let Err(e) = read {
        tracing::warn!(error = %e, "/dev/urandom is unreadable: using a weaker random source");
        use std::hash::{BuildHasher, Hasher};
        for chunk in buf.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            let bytes = h.finish().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_naming_a_secret_are_secret_and_others_are_not() {
        for key in [
            "email.password",
            "dingtalk.secret",
            "wechat.token",
            "robot.accessToken",
            "api_key",
            "x.apiKey",
            "db.Passwd",
            "http.auth",
        ] {
            assert!(is_secret_key(key), "{key} should be secret");
        }
        for key in [
            "email.host",
            "script.command.line",
            "http.url",
            "shardcron.timeout",
            "monkey",
        ] {
            assert!(!is_secret_key(key), "{key} should not be secret");
        }
    }

    #[test]
    fn a_url_loses_its_password_and_query_values() {
        assert_eq!(
            redact_url("https://oapi.dingtalk.com/robot/send?access_token=abc&x=1"),
            "https://oapi.dingtalk.com/robot/send?access_token=***&x=***"
        );
        assert_eq!(
            redact_url("postgres://app:s3cret@db:5432/jobs"),
            "postgres://app:***@db:5432/jobs"
        );
        assert_eq!(redact_url("http://host/path"), "http://host/path");
        assert_eq!(redact_url("not a url"), "not a url");
    }

    #[test]
    fn urls_inside_text_are_redacted_and_the_rest_is_kept() {
        assert_eq!(
            redact_text("send to https://h/r?access_token=t failed: 500."),
            "send to https://h/r?access_token=*** failed: 500."
        );
        assert_eq!(redact_text("no url here"), "no url here");
    }

    #[test]
    fn an_unchanged_redacted_secret_keeps_its_value_and_a_changed_one_is_taken() {
        let before: BTreeMap<String, String> = [
            ("email.password".to_owned(), "hunter2".to_owned()),
            (
                "dingtalk.webhook".to_owned(),
                "https://h/r?access_token=t".to_owned(),
            ),
            ("dingtalk.secret".to_owned(), "s".to_owned()),
        ]
        .into();
        let mut edited = redacted_props(&before);
        edited.insert("dingtalk.secret".to_owned(), "new".to_owned());
        keep_unchanged_secrets(&before, &mut edited);
        assert_eq!(edited["email.password"], "hunter2");
        assert_eq!(edited["dingtalk.webhook"], "https://h/r?access_token=t");
        assert_eq!(edited["dingtalk.secret"], "new");
    }

    #[test]
    fn a_secret_prints_stars_in_debug_and_display() {
        let secret = Secret::new("hunter2".to_owned());
        assert_eq!(format!("{secret:?} {secret}"), "*** ***");
        assert_eq!(secret.expose(), "hunter2");
    }
}
