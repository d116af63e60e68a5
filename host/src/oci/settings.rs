//! What `evo.toml` says about registries (`[registries]`) and whom to trust
//! (`[trust]`), and the credentials a registry is given.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::secrets::Secrets;
use crate::settings::{Invalid, Section, beside};

impl Section for RegistrySettings {
    const TABLE: &'static str = "registries";

    fn check(&mut self, _: &std::path::Path) -> std::result::Result<(), Invalid> {
        for host in &self.insecure {
            check_registry_host(host).map_err(|why| Invalid::new("registries.insecure", why))?;
        }
        for (host, entry) in &self.credentials {
            let key = format!("registries.credentials.{host}");
            check_registry_host(host).map_err(|why| Invalid::new(&key, why))?;
            crate::secrets::check_name(&entry.secret).map_err(|e| {
                Invalid::new(
                    &key,
                    format!("secret: {e} (the `evo secret` holding the password or token)"),
                )
            })?;
        }
        Ok(())
    }
}

impl Section for TrustSettings {
    const TABLE: &'static str = "trust";

    /// Keys are read relative to the file that names them.
    fn check(&mut self, base: &std::path::Path) -> std::result::Result<(), Invalid> {
        for key in &mut self.keys {
            beside(base, key);
        }
        Ok(())
    }
}

/// `[registries]`: how to reach registries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RegistrySettings {
    /// Registries (`host:port`) reached over plain HTTP; every other one over HTTPS.
    pub insecure: Vec<String>,
    /// Credentials by registry host: a user name and the `evo secret` holding the
    /// password or token.
    pub credentials: BTreeMap<String, CredentialSettings>,
}

/// `[registries.credentials."HOST"]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialSettings {
    /// The user name.
    pub username: String,
    /// The `evo secret` holding the password or token.
    pub secret: String,
}

/// `[trust]`: whose signatures to accept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrustSettings {
    /// Public keys (PEM, ECDSA P-256, as cosign writes them) whose signatures are
    /// trusted; each is known by its file's name without the extension.
    pub keys: Vec<PathBuf>,
    /// Refuse artifacts no trusted key signed.
    pub require_signature: bool,
}

/// The registries' settings and where their credentials come from.
#[derive(Debug, Clone)]
pub struct Registries {
    settings: RegistrySettings,
    secrets: Arc<Secrets>,
    /// Docker's `config.json`, for registries `evo.toml` gives no credentials for.
    docker_config: Option<PathBuf>,
}

impl Registries {
    /// The registries `settings` describes, with credentials from `secrets` and from
    /// Docker's `config.json` (`$DOCKER_CONFIG/config.json`, else
    /// `~/.docker/config.json`).
    pub fn new(settings: RegistrySettings, secrets: Arc<Secrets>) -> Self {
        let docker_config = std::env::var_os("DOCKER_CONFIG")
            .map(PathBuf::from)
            .or_else(|| dirs::home_dir().map(|home| home.join(".docker")))
            .map(|dir| dir.join("config.json"));
        Self {
            settings,
            secrets,
            docker_config,
        }
    }

    /// Whether `registry` is reached over plain HTTP.
    pub fn is_insecure(&self, registry: &str) -> bool {
        self.settings.insecure.iter().any(|r| r == registry)
    }

    /// The user name and password for `registry`: from `evo.toml`, else Docker's
    /// `config.json`; `None` for anonymous access.
    pub fn credential(&self, registry: &str) -> Result<Option<(String, String)>> {
        if let Some(entry) = self.settings.credentials.get(registry) {
            let password = self
                .secrets
                .value(&entry.secret)
                .ok_or_else(|| crate::secrets::not_set(&entry.secret))?;
            return Ok(Some((entry.username.clone(), password.to_owned())));
        }
        Ok(self
            .docker_config
            .as_ref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .and_then(|text| docker_credential(&text, registry)))
    }
}

/// The credential Docker's `config.json` (`text`) holds for `registry`: `auths` keyed
/// by host (or by URL, as `docker login` writes Docker Hub's), each with `auth`
/// (base64 of `user:password`) or `username` and `password`.
fn docker_credential(text: &str, registry: &str) -> Option<(String, String)> {
    let config: serde_json::Value = serde_json::from_str(text).ok()?;
    let auths = config.get("auths")?.as_object()?;
    let host_of = |key: &str| {
        let key = key
            .strip_prefix("https://")
            .or_else(|| key.strip_prefix("http://"))
            .unwrap_or(key);
        key.split('/').next().unwrap_or(key).to_owned()
    };
    let wanted = |key: &str| {
        let host = host_of(key);
        host == registry || (registry == "docker.io" && host == "index.docker.io")
    };
    let entry = auths.iter().find(|(key, _)| wanted(key))?.1;
    if let Some(auth) = entry.get("auth").and_then(|a| a.as_str()) {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth)
            .ok()?;
        let text = String::from_utf8(decoded).ok()?;
        let (user, password) = text.split_once(':')?;
        return Some((user.to_owned(), password.to_owned()));
    }
    let user = entry.get("username")?.as_str()?;
    let password = entry.get("password")?.as_str()?;
    Some((user.to_owned(), password.to_owned()))
}

/// The error for a `[registries]` or `[trust]` value, for the config reader.
pub(crate) fn check_registry_host(host: &str) -> std::result::Result<(), String> {
    let valid = !host.is_empty()
        && !host.contains('/')
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "{host:?} is not a registry host; write host or host:port, e.g. \"127.0.0.1:5000\""
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_credentials_are_read_as_docker_login_writes_them() {
        let config = r#"{"auths": {
            "https://index.docker.io/v1/": {"auth": "YWxpY2U6czNjcmV0"},
            "127.0.0.1:5000": {"username": "bob", "password": "hunter22"}
        }}"#;
        assert_eq!(
            docker_credential(config, "docker.io"),
            Some(("alice".into(), "s3cret".into()))
        );
        assert_eq!(
            docker_credential(config, "127.0.0.1:5000"),
            Some(("bob".into(), "hunter22".into()))
        );
        assert_eq!(docker_credential(config, "ghcr.io"), None);
    }
}
