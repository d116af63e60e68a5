//! The web console `evo serve --http` serves at `/`: a page per view (overview, skills,
//! calls, security, memory) over the server's own `/v1` API. Its files are compiled
//! into the binary; nothing is built or fetched at run time.
//!
//! On a server with a token, a browser cannot send `Authorization: Bearer` when it
//! loads a page, so the console signs in once: `POST /login` with the token sets a
//! cookie (`HttpOnly`, `SameSite=Strict`, this server's path `/` only) that the gate
//! accepts in place of the header. The cookie holds a random session id the server
//! keeps for 12 hours, not the token nor anything derived from it; signing out ends the
//! session, and "Sign out everywhere" ends them all. Five wrong tokens in a minute from
//! one address make it wait out the minute. A page asked for without either answers
//! 401 with the sign-in form.

use axum::Router;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Form, FromRequest, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;

use super::gate::Gate;
use super::pages::{html, local_path, login_page, with_policy};
use super::signin::Scope;
use super::signin::{Refused, SESSION_LIFETIME};

const INDEX: &str = include_str!("console/index.html");
const SCRIPT: &str = include_str!("console/console.js");
const STYLE: &str = include_str!("console/console.css");
const ICON: &str = include_str!("console/evo.svg");

/// The console's routes, over `gate` (which knows the token, if there is one).
pub(super) fn router(gate: Gate) -> Router {
    let page = if gate.has_token() {
        INDEX.replace(
            "<!--SIGN-OUT-->",
            r#"<form method="post" action="/logout"><button type="submit" class="plain">Sign out</button> <button type="submit" class="plain" name="everywhere" value="1" title="End every browser's sign-in to this server">Sign out everywhere</button></form>"#,
        )
    } else {
        INDEX.to_owned()
    };
    let page: std::sync::Arc<str> = page.into();
    let manages = gate.manages();
    // What the page may offer: changing the server is the admin token's, and only on a
    // server that has one.
    let document = move |scope: Option<axum::Extension<Scope>>| {
        let admin = scope.is_some_and(|s| s.0 == Scope::Admin);
        let access = match (manages, admin) {
            (false, _) => "none",
            (true, false) => "call",
            (true, true) => "admin",
        };
        let page = page.replace("<body>", &format!(r#"<body data-manage="{access}">"#));
        async move { with_policy(html(StatusCode::OK, page)) }
    };
    Router::new()
        .route("/", get(document.clone()))
        .route("/skills", get(document.clone()))
        .route("/skills/{name}", get(document.clone()))
        .route("/calls", get(document.clone()))
        .route("/security", get(document.clone()))
        .route("/memory", get(document))
        .route(
            "/assets/console.js",
            get(|| async { asset("text/javascript", SCRIPT) }),
        )
        .route(
            "/assets/console.css",
            get(|| async { asset("text/css", STYLE) }),
        )
        .route(
            "/assets/evo.svg",
            get(|| async { asset("image/svg+xml", ICON) }),
        )
        // Browsers ask for it whatever the page says.
        .route(
            "/favicon.ico",
            get(|| async { asset("image/svg+xml", ICON) }),
        )
        .route("/login", get(login_form).post(login))
        .route("/logout", axum::routing::post(logout))
        .with_state(gate)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    with_policy(
        (
            [
                (header::CONTENT_TYPE, content_type),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            body,
        )
            .into_response(),
    )
}

#[derive(Deserialize)]
struct Next {
    #[serde(default)]
    next: Option<String>,
}

async fn login_form(
    State(gate): State<Gate>,
    axum::extract::Query(query): axum::extract::Query<Next>,
) -> Response {
    let next = query.next.as_deref().unwrap_or("/");
    if !gate.has_token() {
        return Redirect::to(local_path(next)).into_response();
    }
    login_page(StatusCode::OK, next, None)
}

#[derive(Deserialize)]
struct SignIn {
    token: String,
    #[serde(default)]
    next: Option<String>,
}

async fn login(State(gate): State<Gate>, request: Request) -> Response {
    let secure = forwarded_https(request.headers());
    let client = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip());
    let Ok(Form(form)) = Form::<SignIn>::from_request(request, &()).await else {
        return login_page(
            StatusCode::BAD_REQUEST,
            "/",
            Some("The form was not sent whole: enter the token and sign in again."),
        );
    };
    let next = form.next.as_deref().unwrap_or("/");
    let session = match gate.sign_in(&form.token, client).await {
        Ok(session) => session,
        Err(Refused::WrongToken) => {
            tracing::warn!(target: "evo::security", client = ?client, "console sign-in with a wrong token");
            return login_page(
                StatusCode::UNAUTHORIZED,
                next,
                Some(
                    "That is not the token this server was started with (evo serve --token or EVO_TOKEN).",
                ),
            );
        }
        Err(Refused::Throttled(wait)) => {
            tracing::warn!(target: "evo::security", client = ?client, "console sign-in refused: too many wrong tokens");
            let seconds = wait.as_secs() + 1;
            let mut response = login_page(
                StatusCode::TOO_MANY_REQUESTS,
                next,
                Some(&format!(
                    "Too many wrong tokens from this address: try again in {seconds} s."
                )),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            return response;
        }
    };
    let mut response = Redirect::to(local_path(next)).into_response();
    let cookie = format!(
        "{}={session}; Path=/; Max-Age={}; HttpOnly; SameSite=Strict{}",
        gate.cookie_name(),
        SESSION_LIFETIME.as_secs(),
        if secure { "; Secure" } else { "" }
    );
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

#[derive(Deserialize)]
struct SignOut {
    #[serde(default)]
    everywhere: Option<String>,
}

/// `POST /logout` ends this browser's session; with `everywhere=1`, every session (for
/// whoever holds the server's highest token).
async fn logout(
    State(gate): State<Gate>,
    scope: Option<axum::Extension<Scope>>,
    headers: HeaderMap,
    form: Result<Form<SignOut>, axum::extract::rejection::FormRejection>,
) -> Response {
    // A sign-out sent without a form (`curl -X POST`) signs this browser out.
    if form.is_ok_and(|Form(form)| form.everywhere.is_some()) {
        let scope = scope.map_or(Scope::Call, |s| s.0);
        match gate.sign_out_everywhere(scope).await {
            Some(ended) => {
                tracing::warn!(target: "evo::security", ended, "console: signed out everywhere");
            }
            None => {
                return super::reply::failure(
                    "ADMIN_REQUIRED",
                    "signing every browser out needs the admin token".into(),
                    Some(
                        "sign in with the admin token (--admin-token or EVO_ADMIN_TOKEN), or restart the server",
                    ),
                );
            }
        }
    } else {
        gate.sign_out(&headers).await;
    }
    let mut response = Redirect::to(if gate.has_token() { "/login" } else { "/" }).into_response();
    let cleared = format!(
        "{}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0",
        gate.cookie_name()
    );
    if let Ok(value) = HeaderValue::from_str(&cleared) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// Whether a proxy in front says the browser reached it over HTTPS: the cookie is then
/// marked `Secure`, so it is never sent in the clear.
fn forwarded_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::pages::{escape, is_page};

    #[test]
    fn pages_are_the_views_and_nothing_else() {
        for path in [
            "/",
            "/skills",
            "/skills/calculate",
            "/calls",
            "/security",
            "/memory",
        ] {
            assert!(is_page(path), "{path}");
        }
        for path in [
            "/skills/",
            "/skills/a/b",
            "/v1/skills",
            "/metrics",
            "/mcp",
            "/login",
        ] {
            assert!(!is_page(path), "{path}");
        }
    }

    #[test]
    fn the_sign_in_form_sends_nobody_to_another_site() {
        assert_eq!(local_path("/calls?status=error"), "/calls?status=error");
        for next in [
            "//evil.example/",
            "https://evil.example",
            "/\\evil.example",
            "calls",
            "/a\nb",
        ] {
            assert_eq!(local_path(next), "/", "{next:?}");
        }
    }

    #[test]
    fn text_put_in_the_form_is_escaped() {
        assert_eq!(
            escape(r#""><script>x</script>'&"#),
            "&quot;&gt;&lt;script&gt;x&lt;/script&gt;&#39;&amp;"
        );
    }
}
