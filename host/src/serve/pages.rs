//! The console's pages as a browser meets them before it signs in: which paths are
//! pages, which may be fetched by anyone, the sign-in form, and the headers every
//! document of the console carries. The gate answers a signed-out browser with them;
//! the console serves them.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

const LOGIN: &str = include_str!("console/login.html");

/// What the console's documents may load and do: only this server's own script, style
/// and API; never framed by another page.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
     connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Whether `path` is one of the console's pages (each answers with the same document;
/// the script shows the page its path names).
pub(super) fn is_page(path: &str) -> bool {
    match path {
        "/" | "/skills" | "/calls" | "/security" | "/memory" => true,
        _ => path
            .strip_prefix("/skills/")
            .is_some_and(|name| !name.is_empty() && !name.contains('/')),
    }
}

/// Whether `path` may be fetched without signing in: the sign-in form and the files it
/// uses (style, icon), which hold nothing about this server.
pub(super) fn is_public(path: &str) -> bool {
    matches!(
        path,
        "/login" | "/assets/console.css" | "/assets/evo.svg" | "/favicon.ico"
    )
}

pub(super) fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

pub(super) fn with_policy(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, POLICY),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        // Not `no-referrer`: with it a browser sends `Origin: null` on the sign-in
        // form's POST, which the gate refuses.
        (header::REFERRER_POLICY, "same-origin"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// The sign-in form, answered with `status`, going on to `next` once signed in, with a
/// `problem` to show.
pub(super) fn login_page(status: StatusCode, next: &str, problem: Option<&str>) -> Response {
    let problem = problem.map_or(String::new(), |p| {
        format!(r#"<p class="problem" role="alert">{}</p>"#, escape(p))
    });
    let body = LOGIN
        .replace("<!--PROBLEM-->", &problem)
        .replace("<!--NEXT-->", &escape(local_path(next)));
    with_policy(html(status, body))
}

/// `next` when it is a path on this server, else `/`: the form never sends anyone to
/// another site.
pub(super) fn local_path(next: &str) -> &str {
    let local = next.starts_with('/')
        && !next.starts_with("//")
        && !next.contains('\\')
        && !next.chars().any(char::is_control);
    if local { next } else { "/" }
}

pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
