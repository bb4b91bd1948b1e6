//! Sending one notice: an email over SMTP (`lettre`), or a JSON post to a WeCom or DingTalk robot
//! or to a generic webhook (`reqwest`). Every send is bounded by the settings' timeouts.

use std::time::Duration;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use sha2::Sha256;

use super::props::{EmailSettings, HookSettings, NotifierSettings};

/// Bound of one SMTP exchange step (connect, each command); JavaMail's default is infinite.
pub const SMTP_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a notice was not delivered; each variant names the step.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// Building the email (an address the builder refuses).
    #[error("building the email failed")]
    BuildEmail(#[source] lettre::error::Error),
    /// Setting up TLS for the SMTP server.
    #[error("setting up TLS for {host} failed")]
    Tls {
        /// The SMTP host.
        host: String,
        /// lettre's error.
        #[source]
        source: lettre::transport::smtp::Error,
    },
    /// The SMTP exchange (connect, authenticate, send).
    #[error("sending the email through {host}:{port} failed")]
    Smtp {
        /// The SMTP host.
        host: String,
        /// Its port.
        port: u16,
        /// lettre's error.
        #[source]
        source: lettre::transport::smtp::Error,
    },
    /// Building the HTTP client.
    #[error("building the HTTP client failed")]
    HttpClient(#[source] reqwest::Error),
    /// Posting to the webhook (connect, timeout, reading the answer).
    #[error("posting to {url} failed")]
    Post {
        /// The URL, its query values redacted (they may hold a token).
        url: String,
        /// reqwest's error.
        #[source]
        source: reqwest::Error,
    },
    /// The webhook answered with an error.
    #[error("{url} answered {status}: {body}")]
    Refused {
        /// The URL, its query values redacted.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The answer (WeCom and DingTalk say why in `errmsg`).
        body: String,
    },
    /// The whole send took longer than its bound.
    #[error("the send took longer than {0:?}")]
    TimedOut(Duration),
}

/// Sends `text` as `settings` say; `now_millis` signs DingTalk URLs.
pub async fn send(
    settings: &NotifierSettings,
    text: &str,
    now_millis: i64,
) -> Result<(), SendError> {
    match settings {
        NotifierSettings::Email(email) => send_email(email, text).await,
        NotifierSettings::Wechat(hook) => {
            post(hook, hook.url.clone(), &robot_body(text), true).await
        }
        NotifierSettings::Dingtalk {
            hook,
            keyword,
            secret,
        } => {
            let text = match keyword {
                Some(k) => format!("{k}{text}"),
                None => text.to_owned(),
            };
            let url = match secret {
                Some(secret) => signed_url(&hook.url, secret.expose(), now_millis),
                None => hook.url.clone(),
            };
            post(hook, url, &robot_body(&text), true).await
        }
        NotifierSettings::Webhook(hook) => {
            post(
                hook,
                hook.url.clone(),
                &serde_json::json!({ "text": text }),
                false,
            )
            .await
        }
    }
}

/// The bound of a whole send: the sum of its steps' bounds, and some slack for the DNS lookup.
pub fn bound(settings: &NotifierSettings) -> Duration {
    match settings {
        // Connect, greeting, EHLO, STARTTLS, AUTH, MAIL, RCPT..., DATA, QUIT: bounded each.
        NotifierSettings::Email(_) => SMTP_TIMEOUT * 4,
        NotifierSettings::Wechat(h)
        | NotifierSettings::Webhook(h)
        | NotifierSettings::Dingtalk { hook: h, .. } => {
            h.connect_timeout + h.read_timeout + Duration::from_secs(1)
        }
    }
}

/// WeCom's and DingTalk's text message: `{"msgtype":"text","text":{"content":...}}`.
fn robot_body(text: &str) -> serde_json::Value {
    serde_json::json!({ "msgtype": "text", "text": { "content": text } })
}

/// What Java's `URLEncoder` leaves alone: letters, digits, `-`, `.`, `_`, `*`.
const FORM: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'*');

/// DingTalk's signature of a timestamp: `urlencode(base64(HmacSHA256(key = secret,
/// message = "{timestamp}\n{secret}")))`, as ElasticJob's `DingtalkJobErrorHandler` computes it.
pub fn dingtalk_sign(secret: &str, timestamp_millis: i64) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(format!("{timestamp_millis}\n{secret}").as_bytes());
    let signature = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    utf8_percent_encode(&signature, FORM).to_string()
}

/// The webhook with `&timestamp=..&sign=..` appended (ElasticJob appends `&` always, the robot URL
/// carrying `?access_token=`; a URL without a query gets `?`).
fn signed_url(url: &reqwest::Url, secret: &str, now_millis: i64) -> reqwest::Url {
    let sign = dingtalk_sign(secret, now_millis);
    let separator = if url.query().is_some() { '&' } else { '?' };
    let text = format!("{url}{separator}timestamp={now_millis}&sign={sign}");
    reqwest::Url::parse(&text).unwrap_or_else(|_| url.clone())
}

/// The URL for messages: its password and query values redacted (robot URLs carry their token
/// in the query).
fn shown(url: &reqwest::Url) -> String {
    crate::secret::redact_url(url.as_str())
}

/// The most of a webhook's answer read (the robots answer a line of JSON); the rest is not read.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

async fn post(
    hook: &HookSettings,
    url: reqwest::Url,
    body: &serde_json::Value,
    robot: bool,
) -> Result<(), SendError> {
    // A robot URL carries its token: a redirect to another host is not followed, no Referer is sent.
    let client = reqwest::Client::builder()
        .connect_timeout(hook.connect_timeout)
        .timeout(hook.connect_timeout + hook.read_timeout)
        .redirect(crate::job::http::RedirectPolicy::SameHost.to_reqwest())
        .referer(false)
        .build()
        .map_err(SendError::HttpClient)?;
    let failed = |source: reqwest::Error| SendError::Post {
        url: shown(&hook.url),
        // reqwest's message quotes the URL, token and all.
        source: source.without_url(),
    };
    // The body is built here rather than with reqwest's `json` feature: one serde_json call.
    let response = client
        .post(url)
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/json; charset=utf-8",
        )
        .body(body.to_string())
        .send()
        .await
        .map_err(failed)?;
    let status = response.status();
    let text = crate::job::http::read_capped(response, MAX_ANSWER_BYTES)
        .await
        .map_err(failed)?;
    // WeCom and DingTalk answer 200 with `errcode` 0 on success, another code with `errmsg` else.
    let refused_by_robot = robot
        && serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("errcode").cloned())
            .is_none_or(|code| code.as_i64() != Some(0) && code.as_str() != Some("0"));
    if !status.is_success() || (robot && status.as_u16() != 200) || refused_by_robot {
        return Err(SendError::Refused {
            url: shown(&hook.url),
            status: status.as_u16(),
            body: crate::secret::redact_text(&text.chars().take(300).collect::<String>()),
        });
    }
    Ok(())
}

async fn send_email(s: &EmailSettings, text: &str) -> Result<(), SendError> {
    let mut message = Message::builder()
        .from(s.from.clone())
        .subject(s.subject.clone());
    for to in &s.to {
        message = message.to(to.clone());
    }
    for cc in &s.cc {
        message = message.cc(cc.clone());
    }
    for bcc in &s.bcc {
        message = message.bcc(bcc.clone());
    }
    let message = message
        .body(text.to_owned())
        .map_err(SendError::BuildEmail)?;
    let trusted = s
        .ssl_trust
        .as_deref()
        .is_some_and(|t| t == "*" || t.split_whitespace().any(|h| h == s.host));
    let tls_error = |source| SendError::Tls {
        host: s.host.clone(),
        source,
    };
    let parameters = TlsParameters::builder(s.host.clone())
        .dangerous_accept_invalid_certs(trusted)
        .build_rustls()
        .map_err(tls_error)?;
    let tls = if s.use_ssl {
        Tls::Wrapper(parameters)
    } else {
        Tls::Opportunistic(parameters)
    };
    let transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(s.host.clone())
        .port(s.port)
        .tls(tls)
        .credentials(Credentials::new(
            s.username.clone(),
            s.password.expose().clone(),
        ))
        .timeout(Some(SMTP_TIMEOUT))
        .build();
    transport
        .send(message)
        .await
        .map_err(|source| SendError::Smtp {
            host: s.host.clone(),
            port: s.port,
            source,
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dingtalk_signature_is_hmac_sha256_of_timestamp_and_secret_base64_then_urlencoded() {
        // Expected values computed with Python's hmac, hashlib, base64 and urllib.parse.quote_plus,
        // which encodes as Java's URLEncoder does.
        let table: &[(&str, i64, &str)] = &[
            (
                "SEC000",
                1_700_000_000_000,
                "ltBBey5eZrWKh1cPzFIdz3v3xpkc4Tjx4lLsPSHqdtA%3D",
            ),
            (
                "this is secret",
                1_600_000_000_123,
                "hmZeBQ%2BBO34hCBHyaguEvv3lgoG%2F01g%2BlfEO9Jri4Xg%3D",
            ),
        ];
        for &(secret, ts, expected) in table {
            assert_eq!(dingtalk_sign(secret, ts), expected, "{secret} at {ts}");
        }
    }

    #[test]
    fn a_signed_url_keeps_the_token_and_appends_timestamp_and_sign() {
        let url =
            reqwest::Url::parse("https://oapi.dingtalk.com/robot/send?access_token=t").unwrap();
        let signed = signed_url(&url, "s", 42);
        assert_eq!(
            signed.as_str(),
            format!(
                "https://oapi.dingtalk.com/robot/send?access_token=t&timestamp=42&sign={}",
                dingtalk_sign("s", 42)
            )
        );
        let bare = reqwest::Url::parse("http://127.0.0.1:9/hook").unwrap();
        assert!(signed_url(&bare, "s", 42)
            .as_str()
            .starts_with("http://127.0.0.1:9/hook?timestamp=42&sign="));
    }
}
