//! `fetch`: sends one HTTP request and returns the response, for the tests of outbound
//! HTTP. It asks for any plain-HTTP origin; what it gets is what the operator allows
//! (`--allow-host http://127.0.0.1:PORT`).

use evo_guest::http::{Request, send};
use evo_guest::{Error, JsonSchema, Manifest, Skill};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct Input {
    /// The URL.
    url: String,
    /// `GET` (the default), `POST`, …
    #[serde(default)]
    method: Option<String>,
    /// Headers to send.
    #[serde(default)]
    headers: Vec<(String, String)>,
    /// A body to send.
    #[serde(default)]
    body: Option<String>,
    /// Follow redirects (each hop is a new request, checked by the host; at most 5).
    #[serde(default)]
    follow: bool,
}

#[derive(Serialize, JsonSchema)]
struct Output {
    /// The status code.
    status: u16,
    /// The `location` header, for a redirect.
    location: Option<String>,
    /// The body, as text.
    body: String,
    /// The `user_agent` configuration value the operator set (`[skill_config.fetch]`),
    /// sent as the `user-agent` header.
    user_agent: Option<String>,
}

struct Fetch;

impl Skill for Fetch {
    type Input = Input;
    type Output = Output;

    fn manifest() -> Manifest {
        Manifest::new(
            "fetch",
            "Sends one HTTP request to a granted host and returns the response.",
        )
        .category("network")
        .tags(["http", "test"])
        .requests([
            "get https://example.com/api/status",
            "download the page at https://api.github.com/repos/rust-lang/rust",
            "call the weather API at api.example.com",
            "post this JSON to the webhook URL",
            "what does the /health endpoint return?",
            "hit the server's URL and show me the reply",
        ])
        .timeout_ms(3_000)
        .host("http://*:*", "the servers the tests start")
    }

    fn execute(input: Input) -> Result<Output, Error> {
        let mut request = Request {
            method: input.method.unwrap_or_else(|| "GET".into()),
            url: input.url,
            headers: input.headers,
            body: input.body.unwrap_or_default().into_bytes(),
        };
        let user_agent = evo_guest::config::get("user_agent")?;
        if let Some(agent) = &user_agent {
            request.headers.push(("user-agent".into(), agent.clone()));
        }
        let mut response = send(&request)?;
        let mut hops = 0;
        while input.follow && (300..400).contains(&response.status) {
            let Some(location) = response.header("location") else {
                break;
            };
            hops += 1;
            if hops > 5 {
                return Err(Error::failed("more than 5 redirects"));
            }
            request = Request::get(location);
            response = send(&request)?;
        }
        Ok(Output {
            status: response.status,
            location: response.header("location").map(str::to_owned),
            body: response.text(),
            user_agent,
        })
    }
}

evo_guest::export_skill!(Fetch);
