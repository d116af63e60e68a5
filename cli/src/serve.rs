//! `evo serve`: every skill as an MCP tool, over stdio or streamable HTTP.

use crate::args::{Grants, Sources};
#[cfg(not(feature = "full"))]
use crate::{Failure, Globals};

/// Serve the skills to MCP clients: over stdio (what desktop and IDE agents start),
/// or over streamable HTTP with `--http`, beside a JSON API under /v1 and a web
/// console at /.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Add Evo to an MCP client (Claude Desktop, Cursor, VS Code, …):\n  \
    { \"mcpServers\": { \"evo\": { \"command\": \"evo\", \"args\": [\"serve\"] } } }\n\n\
Examples:\n  \
    evo serve\n  \
    evo serve --tool calculate --tool 'pdf*'\n  \
    evo serve --http 127.0.0.1:8765\n  \
    EVO_TOKEN=$(openssl rand -hex 32) evo serve --http 0.0.0.0:8765"
)]
#[cfg_attr(
    not(feature = "full"),
    allow(dead_code, reason = "read only by `evo serve`, which this build lacks")
)]
pub(crate) struct ServeArgs {
    /// Serve over streamable HTTP at ADDR (MCP at /mcp, the API at /v1, the web console
    /// at /) instead of stdio: HOST:PORT, or a PORT on 127.0.0.1. Any address but
    /// loopback needs --token (a browser signs in to the console with it).
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<String>,
    /// The bearer token HTTP clients must send; required to bind a non-loopback
    /// address.
    #[arg(long, env = "EVO_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    token: Option<String>,
    /// The bearer token that also changes the server over HTTP and in the console:
    /// install, uninstall, update, grant and revoke. Without it the API changes nothing.
    /// Use a different value from --token.
    #[arg(
        long = "admin-token",
        env = "EVO_ADMIN_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    admin_token: Option<String>,
    /// Offer MCP clients the management tools (install from a registry, uninstall,
    /// list, show and change a skill's grants, search registries); the user confirms
    /// every change. Default: `serve.manage` in evo.toml.
    #[arg(long)]
    manage: bool,
    /// Also accept calls and changes from web pages of ORIGIN (e.g.
    /// `https://app.example.com`, `http://localhost:6274`); loopback pages on other ports
    /// may only read. Repeat for more.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
    /// Serve only skill NAME (a trailing * matches a prefix); repeat for more.
    /// Default: `serve.tools` in evo.toml, else every skill that is not internal.
    #[arg(long = "tool", value_name = "NAME")]
    tools: Vec<String>,
    #[command(flatten)]
    sources: Sources,
    #[command(flatten)]
    grants: Grants,
}

/// `evo serve` in a build without it.
#[cfg(not(feature = "full"))]
pub(crate) async fn run(_serve: ServeArgs, _globals: &Globals) -> Result<(), Failure> {
    Err(evo_host::Error::FeatureNotBuilt {
        feature: "serve",
        what: "`evo serve`".into(),
    }
    .into())
}

#[cfg(feature = "full")]
pub(crate) use served::run;

#[cfg(feature = "full")]
mod served {
    use std::net::SocketAddr;
    use std::sync::Arc;

    use evo_host::serve::Shared;
    use evo_host::serve::http::{HttpOptions, StartError};

    use super::ServeArgs;
    use crate::args;
    use crate::{Failure, Globals};

    pub(crate) async fn run(serve: ServeArgs, globals: &Globals) -> Result<(), Failure> {
        let mut config = args::config(globals, &serve.sources, &serve.grants)?;
        if !serve.tools.is_empty() {
            config.serve.tools = serve.tools.clone();
            config.set_source(
                "serve.tools",
                evo_host::config::Source::Flag {
                    flag: "--tool".into(),
                },
            );
        }
        if serve.manage {
            config.serve.manage = true;
            config.set_source(
                "serve.manage",
                evo_host::config::Source::Flag {
                    flag: "--manage".into(),
                },
            );
        }
        let host = args::host_with(config, globals).await?;
        let shared = Shared::new(host);
        match serve.http {
            None => {
                let (read, write, streams) = evo_host::serve::stdio::std_streams();
                evo_host::serve::stdio::serve(shared, read, write, terminated()).await;
                // Standard input and output as they were (blocking), for whoever shares them.
                drop(streams);
                // The runtime would wait for its thread blocked reading stdin (when it is not
                // a pipe), which only the client can end: the session is over, so exit now.
                crate::write_stdout(format_args!(""));
                std::process::exit(0);
            }
            Some(addr) => {
                let addr = resolve(&addr).await?;
                let options = HttpOptions {
                    addr,
                    token: serve.token.filter(|t| !t.is_empty()),
                    admin_token: serve.admin_token.filter(|t| !t.is_empty()),
                    allowed_origins: serve.allow_origins,
                };
                if options.admin_token.is_some() && options.admin_token == options.token {
                    return Err(Failure::usage(
                        "INVALID_ARGUMENT",
                        "--admin-token is the same as --token: whoever may call skills could also install and grant".into(),
                        Some("give the admin token a value of its own, e.g. $(openssl rand -hex 32)"),
                    ));
                }
                http(shared, options).await
            }
        }
    }

    async fn http(shared: Arc<Shared>, options: HttpOptions) -> Result<(), Failure> {
        let skills = shared.served_skills().len();
        let result = evo_host::serve::http::serve(shared, options, terminated(), |addr| {
            eprintln!(
                "evo serve: {skills} tools; MCP at http://{addr}/mcp, the API at http://{addr}/v1 (OpenAPI: /v1/openapi.json), the console at http://{addr}/"
            );
        })
        .await;
        match result {
            Ok(()) => Ok(()),
            Err(e @ StartError::TokenRequired(_)) => Err(Failure::usage(
                "TOKEN_REQUIRED",
                e.to_string(),
                Some(
                    "set a token (--token or EVO_TOKEN) that clients send as `Authorization: Bearer …`, or bind 127.0.0.1",
                ),
            )),
            Err(e @ StartError::WeakToken { which, .. }) => Err(Failure::usage(
                "TOKEN_WEAK",
                e.to_string(),
                Some(if which == "admin token" {
                    "generate one, e.g. EVO_ADMIN_TOKEN=$(openssl rand -hex 16) (32 hex digits, 128 bits)"
                } else {
                    "generate one, e.g. EVO_TOKEN=$(openssl rand -hex 16) (32 hex digits, 128 bits)"
                }),
            )),
            Err(e @ StartError::Bind { .. }) => Err(Failure::usage(
                "BIND_FAILED",
                e.to_string(),
                Some("pick a free port, or stop what is listening there"),
            )),
        }
    }

    /// `HOST:PORT` (a name or an address), or a bare `PORT` on loopback.
    async fn resolve(addr: &str) -> Result<SocketAddr, Failure> {
        let spec = if addr.parse::<u16>().is_ok() {
            format!("127.0.0.1:{addr}")
        } else {
            addr.to_owned()
        };
        let bad = |why: String| {
            Failure::usage(
                "INVALID_ARGUMENT",
                format!("--http {addr}: {why}"),
                Some("give HOST:PORT, e.g. 127.0.0.1:8765 or localhost:8765, or only a port"),
            )
        };
        let mut found = tokio::net::lookup_host(&spec)
            .await
            .map_err(|e| bad(e.to_string()))?;
        found
            .next()
            .ok_or_else(|| bad("the name has no address".into()))
    }

    /// Resolves on SIGTERM or Ctrl-C.
    async fn terminated() {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}
