//! Configuration values the operator sets for this skill, over `wasi:config`: what a
//! skill needs to know about where it runs (an API's base URL, a team name, a limit)
//! and is not secret. For API keys, see [`crate::http::secret`].
//!
//! ```toml
//! # evo.toml
//! [skill_config.weather]
//! api_base = "https://api.example.com/v2"
//! units = "metric"
//! ```
//!
//! ```no_run
//! # fn run() -> Result<(), evo_guest::Error> {
//! let base = evo_guest::config::get("api_base")?.unwrap_or_else(|| "https://api.example.com".into());
//! # Ok(()) }
//! ```

use crate::__private::config_bindings::wasi::config::store;
use crate::Error;

fn failed(error: store::Error) -> Error {
    let (store::Error::Upstream(message) | store::Error::Io(message)) = error;
    Error::failed(format!("configuration: {message}"))
}

/// The value of `key`, or `None` when the operator did not set it.
pub fn get(key: &str) -> Result<Option<String>, Error> {
    store::get(key).map_err(failed)
}

/// Every key and value set for this skill.
pub fn all() -> Result<Vec<(String, String)>, Error> {
    store::get_all().map_err(failed)
}
