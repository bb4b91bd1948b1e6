//! The page, its script and its style, compiled into the binary: the console needs no network
//! beyond the operator's own (no CDN), and one file to install. The security headers are set on
//! every answer by the filter chain (`guard.rs`).

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use super::ConsoleState;

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const SVG: &str = "image/svg+xml";
const ICON: &str = include_str!("assets/icon.svg");

/// Every asset: its path, its content type, its text.
const ASSETS: [(&str, &str, &str); 6] = [
    ("/", HTML, include_str!("assets/index.html")),
    ("/app.js", JS, include_str!("assets/app.js")),
    ("/workflow.js", JS, include_str!("assets/workflow.js")),
    ("/style.css", CSS, include_str!("assets/style.css")),
    ("/favicon.ico", SVG, ICON),
    ("/icon.svg", SVG, ICON),
];

pub(super) fn routes() -> Router<ConsoleState> {
    ASSETS
        .into_iter()
        .fold(Router::new(), |router, (path, content_type, body)| {
            router.route(path, get(move || async move { page(content_type, body) }))
        })
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
