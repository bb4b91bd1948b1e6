//! The console's filter chain: one layer in front of every route, in this order.
//!
//! 1. **Host**: a request whose `Host` is not a name the console serves is refused with `421`
//!    (pages, API and event stream alike), so a DNS-rebinding page cannot reach it.
//! 2. **No token in a URL**: a query naming `token` is refused with `400` (URLs land in logs,
//!    history and `Referer`).
//! 3. **Authenticate** (`/api` only): `Authorization: Bearer TOKEN`, else the session cookie set by
//!    `POST /api/login`, else, when no token is configured at all, the anonymous operator
//!    (loopback only: [`super::ConsoleOptions::check`]). A wrong token slows its client
//!    ([`super::auth::Throttle`]).
//! 4. **Authorise**: a state-changing request must be JSON from the console's own origin, and
//!    come from the operator role (`403` for a viewer).
//! 5. **Audit**: the principal rides in the request; write handlers take [`Audited`] operations,
//!    which record who did what in the audit log.
//!
//! Every answer then gets the security headers ([`secure_headers`]).

mod identity;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::api::refusal;
use super::auth::{Principal, Role};
use super::ConsoleState;
use crate::ops::{Actor, Ops};
use identity::authenticate;
pub(super) use identity::{login, logout, session};

/// The cookie that holds a login session's id.
pub(crate) const SESSION_COOKIE: &str = "shardcron_session";

/// The `Content-Security-Policy` of every answer: nothing from elsewhere, never framed.
pub(crate) const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; \
     script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
     form-action 'self'";

/// The names (and ports) the console answers to.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hosts {
    /// `(name, port)`: `None` is any port.
    allowed: Vec<(String, Option<u16>)>,
}

impl Hosts {
    /// The listen address, `localhost`, `127.0.0.1` and `[::1]` on the listen port, and every
    /// `extra` name (`name` for any port, `name:port` for one).
    pub(crate) fn new(listen: SocketAddr, extra: &[String]) -> Self {
        let port = Some(listen.port());
        let mut allowed = vec![
            ("localhost".to_owned(), port),
            ("127.0.0.1".to_owned(), port),
            ("[::1]".to_owned(), port),
        ];
        if !listen.ip().is_unspecified() {
            allowed.push((host_name(listen.ip()), port));
        }
        for name in extra {
            match split_host(name) {
                Some((name, port)) => allowed.push((name, port)),
                None => allowed.push((name.to_ascii_lowercase(), None)),
            }
        }
        Self { allowed }
    }

    /// Whether the `Host` header value `host` names this console.
    pub(crate) fn allows(&self, host: &str) -> bool {
        let Some((name, port)) = split_host(host) else {
            return false;
        };
        // A browser leaves the default port out.
        let port = port.unwrap_or(80);
        self.allowed
            .iter()
            .any(|(n, p)| *n == name && p.is_none_or(|p| p == port))
    }
}

/// How an address is written in a `Host` header.
fn host_name(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// `name[:port]` or `[v6][:port]`, the name lower-cased without a trailing dot.
pub(crate) fn split_host(value: &str) -> Option<(String, Option<u16>)> {
    let value = value.trim();
    let (name, port) = if let Some(rest) = value.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (format!("[{}]", inside.to_ascii_lowercase()), port)
    } else {
        match value.rsplit_once(':') {
            Some((name, port)) => (name.to_ascii_lowercase(), Some(port)),
            None => (value.to_ascii_lowercase(), None),
        }
    };
    let name = name.trim_end_matches('.').to_owned();
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._[]:".contains(c));
    if !valid {
        return None;
    }
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    Some((name, port))
}

/// The chain described in the module docs, then the security headers.
pub(super) async fn chain(
    State(state): State<ConsoleState>,
    request: Request,
    next: Next,
) -> Response {
    let mut response = filter(&state, request, next).await;
    secure_headers(response.headers_mut());
    response
}

async fn filter(state: &ConsoleState, mut request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !state.access.hosts.allows(host) {
        return refusal(
            StatusCode::MISDIRECTED_REQUEST,
            "this console does not serve that host name (start it with --allowed-host NAME to add one)",
        );
    }
    if names_token(request.uri().query()) {
        return refusal(
            StatusCode::BAD_REQUEST,
            "a token is never accepted in a URL: send Authorization: Bearer TOKEN, or log in",
        );
    }
    if !request.uri().path().starts_with("/api/") {
        return next.run(request).await;
    }
    let client = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip());
    let login = request.uri().path() == "/api/login";
    let principal = match authenticate(state, request.headers(), login, client).await {
        Ok(p) => p,
        Err(refused) => return refused,
    };
    if request.method() != Method::GET && request.method() != Method::HEAD {
        if let Err(why) = same_origin_json(request.headers()) {
            return refusal(StatusCode::FORBIDDEN, why);
        }
        let session_call = matches!(request.uri().path(), "/api/login" | "/api/logout");
        if !session_call && principal.role != Role::Operator {
            return refusal(
                StatusCode::FORBIDDEN,
                "the viewer role reads only: this needs the operator token",
            );
        }
    }
    request.extensions_mut().insert(principal);
    next.run(request).await
}

/// Whether a query string has a parameter named `token` (in any case, percent-encoded or not).
fn names_token(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        q.split('&').any(|pair| {
            let name = pair.split('=').next().unwrap_or("");
            let decoded = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
            let name = decoded.trim().to_ascii_lowercase();
            name == "token" || name.ends_with("_token") || name == "access_token"
        })
    })
}

/// A write must be JSON (a cross-site form cannot send it without a preflight this server never
/// answers) and, when the browser names its origin, come from the host the request was sent to
/// (which the chain checked first).
pub(crate) fn same_origin_json(headers: &HeaderMap) -> Result<(), &'static str> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !json {
        return Err("a state-changing request must be sent as application/json");
    }
    if let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
        let origin_host = origin.split_once("://").map(|(_, h)| h);
        if origin_host.is_none() || origin_host != host {
            return Err("a state-changing request must come from the console's own page");
        }
    }
    Ok(())
}

/// The headers every answer carries: never framed, never sniffed, no `Referer` sent on.
pub(crate) fn secure_headers(headers: &mut HeaderMap) {
    let set = [
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
    ];
    for (name, value) in set {
        headers.insert(name, HeaderValue::from_static(value));
    }
}

/// The operations API for a write, recording in the audit log (when the console has a history)
/// that the request's principal did it. Refuses a request the chain did not authorise to write.
#[derive(Debug)]
pub(super) struct Audited(pub(super) Ops);

impl FromRequestParts<ConsoleState> for Audited {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &ConsoleState,
    ) -> Result<Self, Self::Rejection> {
        let who = parts
            .extensions
            .get::<Principal>()
            .filter(|who| who.role == Role::Operator)
            .ok_or_else(|| refusal(StatusCode::FORBIDDEN, "this needs the operator token"))?;
        let ops = state.live.ops();
        Ok(Audited(match &state.history {
            Some(history) => ops.audited(
                history.clone(),
                Actor {
                    name: who.name.to_owned(),
                    role: Some(who.role.as_str().to_owned()),
                    via: "console".to_owned(),
                },
            ),
            None => ops,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::identity::session_id;
    use super::*;

    #[test]
    fn the_console_answers_its_own_names_only() {
        let hosts = Hosts::new("127.0.0.1:8899".parse().unwrap(), &["ops.example".into()]);
        for ok in [
            "127.0.0.1:8899",
            "localhost:8899",
            "LOCALHOST:8899",
            "[::1]:8899",
            "ops.example",
            "ops.example:443",
        ] {
            assert!(hosts.allows(ok), "{ok}");
        }
        for refused in [
            "evil.example",
            "127.0.0.1:8898",
            "localhost",
            "",
            "a b",
            "evil.example:8899",
        ] {
            assert!(!hosts.allows(refused), "{refused}");
        }
        let v6 = Hosts::new("[::1]:9000".parse().unwrap(), &["[fd00::1]:9000".into()]);
        assert!(
            v6.allows("[::1]:9000") && v6.allows("[fd00::1]:9000") && !v6.allows("[fd00::1]:1")
        );
    }

    #[test]
    fn a_token_in_a_query_is_spotted() {
        assert!(names_token(Some("job=x&token=a")));
        assert!(names_token(Some("TOKEN=a")));
        assert!(names_token(Some("%74oken=a")));
        assert!(names_token(Some("access_token=a")));
        assert!(!names_token(Some("job=tokens")));
        assert!(!names_token(None));
    }

    #[test]
    fn writes_must_be_json_from_the_consoles_own_origin() {
        let mut h = HeaderMap::new();
        assert!(same_origin_json(&h).is_err());
        h.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        assert!(same_origin_json(&h).is_ok());
        h.insert(header::HOST, "127.0.0.1:8899".parse().unwrap());
        h.insert(header::ORIGIN, "http://127.0.0.1:8899".parse().unwrap());
        assert!(same_origin_json(&h).is_ok());
        h.insert(header::ORIGIN, "http://evil.example".parse().unwrap());
        assert!(same_origin_json(&h).is_err());
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.append(
            header::COOKIE,
            "a=1; shardcron_session=abc ; b=2".parse().unwrap(),
        );
        assert_eq!(session_id(&h).as_deref(), Some("abc"));
        assert_eq!(session_id(&HeaderMap::new()), None);
    }
}
