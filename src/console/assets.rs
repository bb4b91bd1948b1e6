//! The page, its script and its style, compiled into the binary: the console needs no network
//! beyond the operator's own (no CDN), and one file to install. The security headers are set on
//! every answer by the filter chain (`guard.rs`).

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use super::ConsoleState;

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const WORKFLOW_SCRIPT: &str = include_str!("assets/workflow.js");
const STYLE: &str = include_str!("assets/style.css");
const ICON: &str = include_str!("assets/icon.svg");

pub(super) fn routes() -> Router<ConsoleState> {
    Router::new()
        .route(
            "/",
            get(|| async { page("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            "/app.js",
            get(|| async { page("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/workflow.js",
            get(|| async { page("text/javascript; charset=utf-8", WORKFLOW_SCRIPT) }),
        )
        .route(
            "/style.css",
            get(|| async { page("text/css; charset=utf-8", STYLE) }),
        )
        .route(
            "/favicon.ico",
            get(|| async { page("image/svg+xml", ICON) }),
        )
        .route("/icon.svg", get(|| async { page("image/svg+xml", ICON) }))
}

fn page(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
}
