//! HTTP jobs (ElasticJob's `HTTP` type): one HTTP request per item.
//!
//! The request comes from the job's `props`, with ElasticJob's keys:
//!
//! | key | meaning | default |
//! | --- | --- | --- |
//! | `http.uri` | `http://` or `https://` URI | required |
//! | `http.method` | `GET`, `POST`, `PUT`, `DELETE`, … (case-insensitive) | required |
//! | `http.data` | the body of a `POST` or `PUT`; the query string of any other method | none |
//! | `http.connect.timeout.milliseconds` | time to connect (TCP and TLS) | 3000 |
//! | `http.read.timeout.milliseconds` | time to wait for each read of the response | 5000 |
//! | `http.content.type` | the `Content-Type` header | none |
//! | `shardcron.http.timeout.milliseconds` | the whole request, from connecting to the last byte read (ours) | 60000 |
//! | `shardcron.http.redirect` | which redirects are followed: `same-host`, `any-host` or `none` (ours) | `same-host` |
//!
//! The item's [`ShardingContext`], as ElasticJob's JSON, travels in the `shardingContext` header.
//! A bad value is refused when the job is built, with an [`HttpJobError`] naming the key.
//!
//! **Unlike ElasticJob**, which only logs a non-2xx answer, a response status of **400 or more
//! fails the item** with [`JobError::Failed`] naming the method, URI and status (and the start of
//! the body): a job whose endpoint rejects it should show up as failed in the history and reach
//! the error handler. Redirects to the same host are followed (at most 10); a redirect to another
//! host fails the item unless `shardcron.http.redirect` is `any-host` (a URI whose query carries a
//! token must not be sent on to wherever its server points); no `Referer` is sent. A final
//! 1xx–3xx status succeeds.
//!
//! Bounded: at most [`MAX_BODY_BYTES`] of the response body are read (the rest is left unread and
//! the connection closed), and the whole request ends within the total timeout however slowly
//! the body trickles in. A connection that cannot be made, a timeout and a response that cannot
//! be read fail the item. Failures and logs show the URI with its password and query values
//! redacted ([`crate::secret::redact_url`]).
//! A job that captures its output (`shardcron.output`, [`output`](super::output)) records the
//! status line and the body as read (at most [`MAX_BODY_BYTES`], then the capture's own bound).
//! When the item is cancelled the request is dropped, which closes its connection, and the item
//! fails with [`JobError::Cancelled`]. `https` uses rustls with the Mozilla root certificates.
//!
//! Here the job as its props configure it; in `request.rs` one item's request and its answer.
//!
//! [`ShardingContext`]: super::ShardingContext
//! [`JobError::Failed`]: super::JobError::Failed
//! [`JobError::Cancelled`]: super::JobError::Cancelled

mod request;

pub(crate) use request::read_capped;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::HeaderValue;
use reqwest::{Method, Url};

/// The `props` key of the URI.
pub const URI_PROP: &str = "http.uri";
/// The `props` key of the method.
pub const METHOD_PROP: &str = "http.method";
/// The `props` key of the body (or query string).
pub const DATA_PROP: &str = "http.data";
/// The `props` key of the connect timeout.
pub const CONNECT_TIMEOUT_PROP: &str = "http.connect.timeout.milliseconds";
/// The `props` key of the read timeout.
pub const READ_TIMEOUT_PROP: &str = "http.read.timeout.milliseconds";
/// The `props` key of the content type.
pub const CONTENT_TYPE_PROP: &str = "http.content.type";
/// The `props` key of the total timeout (ours).
pub const TOTAL_TIMEOUT_PROP: &str = "shardcron.http.timeout.milliseconds";
/// The `props` key of the redirect policy (ours).
pub const REDIRECT_PROP: &str = "shardcron.http.redirect";
/// The header carrying the sharding context JSON, as ElasticJob names it.
pub const SHARDING_CONTEXT_HEADER: &str = "shardingContext";

/// ElasticJob's default connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_millis(3000);
/// ElasticJob's default read timeout.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_millis(5000);

/// The default bound of a whole request.
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(60);

/// The most of a response body read; the rest is never read.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// How many redirects are followed at most (reqwest's default).
const MAX_REDIRECTS: usize = 10;

/// How much of an error response's body goes into the failure.
const BODY_EXCERPT_CHARS: usize = 200;

/// Which redirects an HTTP job follows (`shardcron.http.redirect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectPolicy {
    /// `same-host`: only to the host of the URI that redirects (any port or scheme).
    SameHost,
    /// `any-host`: to any host.
    AnyHost,
    /// `none`: never; a redirect fails the item.
    None,
}

impl RedirectPolicy {
    fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "same-host" => Some(Self::SameHost),
            "any-host" => Some(Self::AnyHost),
            "none" => Some(Self::None),
            _ => None,
        }
    }

    /// The policy as reqwest applies it (at most 10 redirects).
    pub(crate) fn to_reqwest(self) -> reqwest::redirect::Policy {
        reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
            }
            let from = attempt.previous().last().and_then(|u| u.host_str());
            let refused = match self {
                Self::AnyHost => None,
                Self::SameHost if from == attempt.url().host_str() => None,
                Self::SameHost => Some("to another host"),
                Self::None => Some("at all"),
            };
            match refused {
                None => attempt.follow(),
                Some(why) => {
                    let to = crate::secret::redact_url(attempt.url().as_str());
                    attempt.error(format!(
                        "not following the redirect to {to}: redirects are not followed {why} \
                         ({REDIRECT_PROP} is {})",
                        self.as_str()
                    ))
                }
            }
        })
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::SameHost => "same-host",
            Self::AnyHost => "any-host",
            Self::None => "none",
        }
    }
}

/// Why an HTTP job could not be built from its configuration. Each variant names the key.
#[derive(Debug, thiserror::Error)]
pub enum HttpJobError {
    /// Reading a required key: it is absent or blank.
    #[error("props key {key:?} is missing; an HTTP job needs it")]
    MissingProp {
        /// The key.
        key: &'static str,
    },
    /// Parsing `http.uri`.
    #[error("props key {key:?}: {value:?} is not an http or https URI")]
    InvalidUri {
        /// The key.
        key: &'static str,
        /// The value as configured.
        value: String,
    },
    /// Parsing `http.method`.
    #[error("props key {key:?}: {value:?} is not an HTTP method")]
    InvalidMethod {
        /// The key.
        key: &'static str,
        /// The value as configured.
        value: String,
    },
    /// Parsing a timeout.
    #[error("props key {key:?}: {value:?} is not a positive number of milliseconds")]
    InvalidTimeout {
        /// The key.
        key: &'static str,
        /// The value as configured.
        value: String,
    },
    /// Parsing `shardcron.http.redirect`.
    #[error("props key {key:?}: {value:?} is not same-host, any-host or none")]
    InvalidRedirect {
        /// The key.
        key: &'static str,
        /// The value as configured.
        value: String,
    },
    /// Parsing `http.content.type`.
    #[error("props key {key:?}: {value:?} is not a valid header value")]
    InvalidContentType {
        /// The key.
        key: &'static str,
        /// The value as configured.
        value: String,
    },
    /// Building the HTTP client (its TLS configuration).
    #[error("building the HTTP client")]
    BuildClient {
        /// The client's error.
        #[source]
        source: reqwest::Error,
    },
}

/// A job that sends one HTTP request per item.
///
/// ```
/// use std::collections::BTreeMap;
/// use shardcron::job::http::HttpJob;
/// let props = BTreeMap::from([
///     ("http.uri".to_owned(), "https://example.com/sync".to_owned()),
///     ("http.method".to_owned(), "post".to_owned()),
///     ("http.data".to_owned(), r#"{"full":true}"#.to_owned()),
///     ("http.content.type".to_owned(), "application/json".to_owned()),
/// ]);
/// let job = HttpJob::from_props(&props).unwrap();
/// assert_eq!(job.method().as_str(), "POST");
/// assert_eq!(job.read_timeout().as_millis(), 5000);
/// ```
///
/// Its `Debug` shows the URI redacted (its query may carry a token), not the props it was built
/// from.
#[derive(Clone)]
pub struct HttpJob {
    url: Url,
    /// The URI without its password, for logs and failures.
    shown: String,
    method: Method,
    data: Option<String>,
    content_type: Option<HeaderValue>,
    connect_timeout: Duration,
    read_timeout: Duration,
    total_timeout: Duration,
    client: reqwest::Client,
    /// The `http.*` props it was built from.
    built_from: BTreeMap<String, String>,
    /// The job as the run's props configure it, when they differ from `built_from` (a config
    /// change applies from the next run, as in ElasticJob): built once per change.
    live: Arc<std::sync::Mutex<Option<Arc<HttpJob>>>>,
}

impl std::fmt::Debug for HttpJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpJob")
            .field("url", &self.shown)
            .field("method", &self.method)
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .field("total_timeout", &self.total_timeout)
            .finish_non_exhaustive()
    }
}

/// The `http.*` entries of `props`: what an HTTP job is built from.
fn http_props(props: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    props
        .iter()
        .filter(|(k, _)| k.starts_with("http.") || k.starts_with("shardcron.http."))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

impl HttpJob {
    /// Reads the request from the job's `props` (see the module docs for the keys).
    pub fn from_props(props: &BTreeMap<String, String>) -> Result<Self, HttpJobError> {
        let required = |key: &'static str| {
            props
                .get(key)
                .map(|v| v.trim())
                .filter(|v| !v.is_empty())
                .ok_or(HttpJobError::MissingProp { key })
        };
        let uri = required(URI_PROP)?;
        let invalid_uri = || HttpJobError::InvalidUri {
            key: URI_PROP,
            value: uri.to_owned(),
        };
        let mut url = Url::parse(uri).map_err(|_| invalid_uri())?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(invalid_uri());
        }
        let method_text = required(METHOD_PROP)?;
        let method =
            Method::from_bytes(method_text.to_ascii_uppercase().as_bytes()).map_err(|_| {
                HttpJobError::InvalidMethod {
                    key: METHOD_PROP,
                    value: method_text.to_owned(),
                }
            })?;
        let data = props.get(DATA_PROP).filter(|d| !d.is_empty()).cloned();
        if let Some(query) = data.as_deref().filter(|_| !is_write(&method)) {
            // ElasticJob appends the data as the query string of a method without a body.
            let joined = match url.query() {
                Some(existing) if !existing.is_empty() => format!("{existing}&{query}"),
                _ => query.to_owned(),
            };
            url.set_query(Some(&joined));
        }
        let content_type = match props.get(CONTENT_TYPE_PROP).map(|v| v.trim()) {
            None | Some("") => None,
            Some(value) => Some(HeaderValue::from_str(value).map_err(|_| {
                HttpJobError::InvalidContentType {
                    key: CONTENT_TYPE_PROP,
                    value: value.to_owned(),
                }
            })?),
        };
        let connect_timeout = timeout(props, CONNECT_TIMEOUT_PROP, DEFAULT_CONNECT_TIMEOUT)?;
        let read_timeout = timeout(props, READ_TIMEOUT_PROP, DEFAULT_READ_TIMEOUT)?;
        let total_timeout = timeout(props, TOTAL_TIMEOUT_PROP, DEFAULT_TOTAL_TIMEOUT)?;
        let redirect = match props.get(REDIRECT_PROP) {
            None => RedirectPolicy::SameHost,
            Some(value) => {
                RedirectPolicy::parse(value).ok_or_else(|| HttpJobError::InvalidRedirect {
                    key: REDIRECT_PROP,
                    value: value.clone(),
                })?
            }
        };
        let client = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .read_timeout(read_timeout)
            .timeout(total_timeout)
            .redirect(redirect.to_reqwest())
            .referer(false)
            .build()
            .map_err(|source| HttpJobError::BuildClient { source })?;
        Ok(Self {
            shown: crate::secret::redact_url(url.as_str()),
            url,
            method,
            data,
            content_type,
            connect_timeout,
            read_timeout,
            total_timeout,
            client,
            built_from: http_props(props),
            live: Arc::default(),
        })
    }

    /// The URI requested (with `http.data` as its query string for a method without a body).
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The method.
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// The body sent with a `POST` or `PUT`.
    pub fn body(&self) -> Option<&str> {
        self.data.as_deref().filter(|_| is_write(&self.method))
    }

    /// The connect timeout.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The read timeout.
    pub fn read_timeout(&self) -> Duration {
        self.read_timeout
    }

    /// The bound of the whole request.
    pub fn total_timeout(&self) -> Duration {
        self.total_timeout
    }
}

/// Whether `method` carries `http.data` as its body, as in ElasticJob.
fn is_write(method: &Method) -> bool {
    *method == Method::POST || *method == Method::PUT
}

fn timeout(
    props: &BTreeMap<String, String>,
    key: &'static str,
    default: Duration,
) -> Result<Duration, HttpJobError> {
    let Some(value) = props.get(key) else {
        return Ok(default);
    };
    match value.trim().parse::<u64>() {
        // Java's 0 means "wait forever"; an item that can hang forever is refused instead.
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(HttpJobError::InvalidTimeout {
            key,
            value: value.clone(),
        }),
    }
}

#[cfg(test)]
mod tests;
