//! Who asks: the bearer token or the session cookie checked (a wrong token slows its client), and
//! the routes that open, close and show a login session.

use super::*;

/// Who the request comes from, or the refusal to answer.
pub(super) async fn authenticate(
    state: &ConsoleState,
    headers: &HeaderMap,
    login: bool,
    client: IpAddr,
) -> Result<Principal, Response> {
    let access = &state.access;
    if let Some(token) = bearer(headers) {
        return check_token(state, client, &token).await;
    }
    if !login {
        if let Some(who) = session_id(headers).and_then(|id| access.sessions.get(&id)) {
            return Ok(who);
        }
    }
    if !access.tokens.any() {
        return Ok(Principal {
            name: "anonymous",
            role: Role::Operator,
        });
    }
    Err(refusal(
        StatusCode::UNAUTHORIZED,
        "a token is required: log in, or send Authorization: Bearer TOKEN",
    ))
}

/// Checks `token` after the client's turn ([`crate::console::auth::Throttle`]).
async fn check_token(
    state: &ConsoleState,
    client: IpAddr,
    token: &str,
) -> Result<Principal, Response> {
    let access = &state.access;
    match access.throttle.turn(client) {
        None => {
            return Err(refusal(
                StatusCode::TOO_MANY_REQUESTS,
                "too many wrong tokens from this address: wait and try again",
            ))
        }
        Some(wait) if !wait.is_zero() => tokio::time::sleep(wait).await,
        Some(_) => {}
    }
    match access.tokens.check(token) {
        Some(who) => {
            access.throttle.succeeded(client);
            Ok(who)
        }
        None if !access.tokens.any() => Ok(Principal {
            name: "anonymous",
            role: Role::Operator,
        }),
        None => {
            access.throttle.failed(client);
            tracing::warn!(%client, "the console refused a wrong token");
            Err(refusal(StatusCode::UNAUTHORIZED, "wrong token"))
        }
    }
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    value.strip_prefix("Bearer ").map(|t| t.trim().to_owned())
}

/// The session id of the request's cookie.
pub(super) fn session_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == SESSION_COOKIE).then(|| value.trim().to_owned())
        })
}

/// `POST /api/login` (`Authorization: Bearer TOKEN`, a JSON body): opens a session and sets its
/// cookie; answers the role.
pub(in crate::console) async fn login(
    State(state): State<ConsoleState>,
    axum::Extension(who): axum::Extension<Principal>,
) -> Response {
    let id = state.access.sessions.open(who.clone());
    let cookie = format!(
        "{SESSION_COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        crate::console::auth::SESSION_TTL.as_secs()
    );
    let mut response = Json(json!({ "name": who.name, "role": who.role.as_str() })).into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// `POST /api/logout`: ends the request's session and clears its cookie.
pub(in crate::console) async fn logout(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
) -> Response {
    if let Some(id) = session_id(&headers) {
        state.access.sessions.close(&id);
    }
    let mut response = Json(json!({ "loggedOut": true })).into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static(
            "shardcron_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0",
        ),
    );
    response
}

/// `GET /api/session`: who the request is authenticated as.
pub(in crate::console) async fn session(
    axum::Extension(who): axum::Extension<Principal>,
) -> Response {
    Json(json!({ "name": who.name, "role": who.role.as_str() })).into_response()
}
