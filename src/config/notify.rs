//! The `props` of the notifying error handlers, read with ElasticJob's keys and checked once, at
//! config validation, so that a wrong value is refused with the prop's name instead of failing at
//! the first error to report.
//!
//! | `jobErrorHandlerType` | props (ElasticJob's keys; * = required) |
//! | --- | --- |
//! | `EMAIL` | `email.host`*, `email.port`*, `email.username`*, `email.password`*, `email.from`*, `email.to`* (comma-separated), `email.cc`, `email.bcc`, `email.useSsl` (true), `email.ssl.trust`, `email.subject` ("ElasticJob error message"), `email.debug` (false) |
//! | `WECHAT` | `wechat.webhook`*, `wechat.connectTimeoutMilliseconds` (3000), `wechat.readTimeoutMilliseconds` (5000) |
//! | `DINGTALK` | `dingtalk.webhook`*, `dingtalk.keyword`, `dingtalk.secret`, `dingtalk.connectTimeoutMilliseconds` (3000), `dingtalk.readTimeoutMilliseconds` (5000) |
//! | `WEBHOOK` (ours) | `webhook.url`*, `webhook.connectTimeoutMilliseconds` (3000), `webhook.readTimeoutMilliseconds` (5000) |
//!
//! Stricter than Java, which reads any boolean other than `true` as false and checks no address:
//! booleans must read `true` or `false`, addresses and URLs must parse.

use std::collections::BTreeMap;
use std::time::Duration;

use lettre::message::Mailbox;

use crate::secret::Secret;

/// `jobErrorHandlerType` of the email notifier.
pub const EMAIL: &str = "EMAIL";
/// `jobErrorHandlerType` of the WeCom (WeChat Work) robot notifier.
pub const WECHAT: &str = "WECHAT";
/// `jobErrorHandlerType` of the DingTalk robot notifier.
pub const DINGTALK: &str = "DINGTALK";
/// `jobErrorHandlerType` of the generic JSON webhook (Slack-compatible `{"text": ...}`), ours.
pub const WEBHOOK: &str = "WEBHOOK";

/// The notifier names, as `jobErrorHandlerType` takes them.
pub const NOTIFIERS: [&str; 4] = [EMAIL, WECHAT, DINGTALK, WEBHOOK];

/// ElasticJob's default email subject.
pub const DEFAULT_SUBJECT: &str = "ElasticJob error message";
const DEFAULT_CONNECT_MS: u64 = 3000;
const DEFAULT_READ_MS: u64 = 5000;

/// One refused prop: its field as config validation names it (`props.email.port`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropError {
    /// `props.` and the key.
    pub field: &'static str,
    /// What is wrong.
    pub problem: String,
}

/// A prop's key and the field name validation reports it under.
#[derive(Debug, Clone, Copy)]
struct Key {
    key: &'static str,
    field: &'static str,
}

macro_rules! key {
    ($k:literal) => {
        Key {
            key: $k,
            field: concat!("props.", $k),
        }
    };
}

/// Where an email goes and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailSettings {
    /// `email.host`.
    pub host: String,
    /// `email.port`.
    pub port: u16,
    /// `email.username`.
    pub username: String,
    /// `email.password` (prints `***`).
    pub password: Secret<String>,
    /// `email.useSsl` (true): implicit TLS (SMTPS); false: plain SMTP, upgraded with STARTTLS
    /// when the server offers it.
    pub use_ssl: bool,
    /// `email.ssl.trust`: hosts whose certificate is accepted unchecked (`*` for any), as
    /// JavaMail's `mail.smtp.ssl.trust`.
    pub ssl_trust: Option<String>,
    /// `email.subject`.
    pub subject: String,
    /// `email.from`.
    pub from: Mailbox,
    /// `email.to`, comma-separated.
    pub to: Vec<Mailbox>,
    /// `email.cc`, comma-separated.
    pub cc: Vec<Mailbox>,
    /// `email.bcc`, comma-separated.
    pub bcc: Vec<Mailbox>,
    /// `email.debug` (false): log each sending at info level with its recipients.
    pub debug: bool,
}

/// An HTTP endpoint and its time bounds. Its `Debug` shows the URL with its query values
/// redacted (robot URLs carry their `access_token` there).
#[derive(Clone, PartialEq, Eq)]
pub struct HookSettings {
    /// The URL posted to.
    pub url: reqwest::Url,
    /// Bound of the connection.
    pub connect_timeout: Duration,
    /// Bound of the wait for the answer once connected.
    pub read_timeout: Duration,
}

impl std::fmt::Debug for HookSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookSettings")
            .field("url", &crate::secret::redact_url(self.url.as_str()))
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .finish()
    }
}

/// One job's notifier, from its `jobErrorHandlerType` and `props`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotifierSettings {
    /// `EMAIL`.
    Email(EmailSettings),
    /// `WECHAT`: a WeCom group robot.
    Wechat(HookSettings),
    /// `DINGTALK`: a DingTalk group robot, with its keyword and signing secret.
    Dingtalk {
        /// `dingtalk.webhook` and the timeouts.
        hook: HookSettings,
        /// `dingtalk.keyword`: put before the text (DingTalk drops messages without it).
        keyword: Option<String>,
        /// `dingtalk.secret`: the URL is signed with it (prints `***`).
        secret: Option<Secret<String>>,
    },
    /// `WEBHOOK`: `{"text": ...}` to any URL.
    Webhook(HookSettings),
}

impl NotifierSettings {
    /// The `jobErrorHandlerType` these settings belong to.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Email(_) => EMAIL,
            Self::Wechat(_) => WECHAT,
            Self::Dingtalk { .. } => DINGTALK,
            Self::Webhook(_) => WEBHOOK,
        }
    }

    /// Reads the settings of the notifier `handler` names from `props`: `None` when `handler` is
    /// not a notifier, every refused prop otherwise.
    pub fn from_props(
        handler: &str,
        props: &BTreeMap<String, String>,
    ) -> Option<Result<Self, Vec<PropError>>> {
        let mut r = Reader {
            props,
            errors: Vec::new(),
        };
        let settings = match handler {
            EMAIL => r.email().map(Self::Email),
            WECHAT => r
                .hook(
                    key!("wechat.webhook"),
                    key!("wechat.connectTimeoutMilliseconds"),
                    key!("wechat.readTimeoutMilliseconds"),
                )
                .map(Self::Wechat),
            DINGTALK => r
                .hook(
                    key!("dingtalk.webhook"),
                    key!("dingtalk.connectTimeoutMilliseconds"),
                    key!("dingtalk.readTimeoutMilliseconds"),
                )
                .map(|hook| Self::Dingtalk {
                    hook,
                    // Put before the text as written, spaces included, as Java does.
                    keyword: props
                        .get("dingtalk.keyword")
                        .filter(|k| !k.is_empty())
                        .cloned(),
                    secret: r.optional(key!("dingtalk.secret")).map(Secret::new),
                }),
            WEBHOOK => r
                .hook(
                    key!("webhook.url"),
                    key!("webhook.connectTimeoutMilliseconds"),
                    key!("webhook.readTimeoutMilliseconds"),
                )
                .map(Self::Webhook),
            _ => return None,
        };
        Some(match settings {
            Some(s) if r.errors.is_empty() => Ok(s),
            _ => Err(r.errors),
        })
    }
}

struct Reader<'a> {
    props: &'a BTreeMap<String, String>,
    errors: Vec<PropError>,
}

impl Reader<'_> {
    fn fail(&mut self, key: Key, problem: impl Into<String>) {
        self.errors.push(PropError {
            field: key.field,
            problem: problem.into(),
        });
    }

    /// The trimmed value; empty counts as absent, as Java's `Strings.isNullOrEmpty`.
    fn optional(&self, key: Key) -> Option<String> {
        self.props
            .get(key.key)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    fn required(&mut self, key: Key) -> Option<String> {
        let value = self.optional(key);
        if value.is_none() {
            self.fail(key, "required by this jobErrorHandlerType");
        }
        value
    }

    fn boolean(&mut self, key: Key, default: bool) -> bool {
        match self.optional(key).map(|v| v.to_ascii_lowercase()) {
            None => default,
            Some(v) if v == "true" => true,
            Some(v) if v == "false" => false,
            Some(v) => {
                self.fail(key, format!("expected true or false, is {v:?}"));
                default
            }
        }
    }

    fn millis(&mut self, key: Key, default: u64) -> Duration {
        match self.optional(key) {
            None => Duration::from_millis(default),
            Some(v) => match v.parse::<u64>() {
                Ok(ms) if ms > 0 => Duration::from_millis(ms),
                _ => {
                    self.fail(
                        key,
                        format!("expected a positive whole number of milliseconds, is {v:?}"),
                    );
                    Duration::from_millis(default)
                }
            },
        }
    }

    fn url(&mut self, key: Key) -> Option<reqwest::Url> {
        let text = self.required(key)?;
        match reqwest::Url::parse(&text) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => Some(url),
            Ok(url) => {
                self.fail(
                    key,
                    format!(
                        "expected an http or https URL, the scheme is {:?}",
                        url.scheme()
                    ),
                );
                None
            }
            Err(e) => {
                // Not echoed: a webhook URL carries its token.
                self.fail(key, format!("the value is not a URL: {e}"));
                None
            }
        }
    }

    fn hook(&mut self, url: Key, connect: Key, read: Key) -> Option<HookSettings> {
        let url = self.url(url);
        let connect_timeout = self.millis(connect, DEFAULT_CONNECT_MS);
        let read_timeout = self.millis(read, DEFAULT_READ_MS);
        Some(HookSettings {
            url: url?,
            connect_timeout,
            read_timeout,
        })
    }

    fn mailboxes(&mut self, key: Key, required: bool) -> Vec<Mailbox> {
        let text = if required {
            self.required(key)
        } else {
            self.optional(key)
        };
        let mut out = Vec::new();
        for part in text.iter().flat_map(|t| t.split(',')).map(str::trim) {
            if part.is_empty() {
                continue;
            }
            match part.parse::<Mailbox>() {
                Ok(m) => out.push(m),
                Err(e) => self.fail(key, format!("{part:?} is not an email address: {e}")),
            }
        }
        out
    }

    fn email(&mut self) -> Option<EmailSettings> {
        let host = self.required(key!("email.host"));
        let port_key = key!("email.port");
        let port = self
            .required(port_key)
            .and_then(|p| match p.parse::<u16>() {
                Ok(n) if n > 0 => Some(n),
                _ => {
                    self.fail(
                        port_key,
                        format!("expected a port number from 1 to 65535, is {p:?}"),
                    );
                    None
                }
            });
        let username = self.required(key!("email.username"));
        // A password may hold spaces at its ends: only an absent or empty one is refused.
        let password_key = key!("email.password");
        let password = self
            .props
            .get(password_key.key)
            .filter(|p| !p.is_empty())
            .cloned();
        if password.is_none() {
            self.fail(password_key, "required by this jobErrorHandlerType");
        }
        let from = self.mailboxes(key!("email.from"), true).into_iter().next();
        let to = self.mailboxes(key!("email.to"), true);
        let cc = self.mailboxes(key!("email.cc"), false);
        let bcc = self.mailboxes(key!("email.bcc"), false);
        let use_ssl = self.boolean(key!("email.useSsl"), true);
        let debug = self.boolean(key!("email.debug"), false);
        let subject = self
            .optional(key!("email.subject"))
            .unwrap_or_else(|| DEFAULT_SUBJECT.to_owned());
        let ssl_trust = self.optional(key!("email.ssl.trust"));
        Some(EmailSettings {
            host: host?,
            port: port?,
            username: username?,
            password: Secret::new(password?),
            use_ssl,
            ssl_trust,
            subject,
            from: from?,
            to,
            cc,
            bcc,
            debug,
        })
    }
}

#[cfg(test)]
#[path = "notify_tests.rs"]
mod tests;
