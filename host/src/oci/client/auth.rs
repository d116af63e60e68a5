//! How a client answers a registry's `WWW-Authenticate` challenge: basic auth, or a
//! bearer token from the token service the registry names, for the repository's scope.

use std::collections::HashMap;

use base64::Engine as _;

use super::{Client, fail};
use crate::error::Result;
use crate::oci::reference::Reference;

impl Client {
    /// The `Authorization` value answering `challenge` (a `WWW-Authenticate` header).
    pub(super) fn authenticate(
        &self,
        r: &Reference,
        challenge: &str,
        scope: &str,
    ) -> Result<String> {
        let credential = self.registries.credential(&r.registry)?;
        let basic = credential.as_ref().map(|(user, password)| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
            )
        });
        let (scheme, params) = challenge.split_once(' ').unwrap_or((challenge, ""));
        if scheme.eq_ignore_ascii_case("basic") {
            return basic.ok_or_else(|| self.refused(r, 401, false));
        }
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(fail(
                "REGISTRY_ERROR",
                format!(
                    "the registry {} asks for {challenge:?}, an authentication Evo does not speak (basic and bearer tokens)",
                    r.registry
                ),
                false,
            ));
        }
        let params = challenge_params(params);
        let Some(realm) = params.get("realm") else {
            return Err(fail(
                "REGISTRY_ERROR",
                format!(
                    "the registry {} asks for a token but names no realm to get it from",
                    r.registry
                ),
                false,
            ));
        };
        // Credentials go to the token service: never in clear text for a registry
        // reached over HTTPS.
        if realm.starts_with("http://") && !self.registries.is_insecure(&r.registry) {
            return Err(fail(
                "REGISTRY_ERROR",
                format!(
                    "the registry {} asks for its tokens to be fetched from {realm} over plain HTTP: refused, the credentials would travel in clear text",
                    r.registry
                ),
                false,
            ));
        }
        let mut url = format!("{realm}?scope={}", percent(scope));
        if let Some(service) = params.get("service") {
            url.push_str(&format!("&service={}", percent(service)));
        }
        let mut request = self.agent.get(&url);
        if let Some(basic) = &basic {
            request = request.header("Authorization", basic);
        }
        let mut response = request.call().map_err(|e| self.unreachable(r, &e))?;
        match response.status().as_u16() {
            200 => {}
            401 | 403 => return Err(self.refused(r, response.status().as_u16(), basic.is_some())),
            status => {
                return Err(fail(
                    "REGISTRY_ERROR",
                    format!("the token service {realm} answered HTTP {status}"),
                    status >= 500,
                ));
            }
        }
        let body: serde_json::Value = response
            .body_mut()
            .with_config()
            .limit(1 << 20)
            .read_json()
            .map_err(|e| {
                fail(
                    "REGISTRY_ERROR",
                    format!("the token service {realm} answered unreadably: {e}"),
                    false,
                )
            })?;
        let token = body
            .get("token")
            .or_else(|| body.get("access_token"))
            .and_then(|t| t.as_str())
            .ok_or_else(|| {
                fail(
                    "REGISTRY_ERROR",
                    format!("the token service {realm} gave no token"),
                    false,
                )
            })?;
        Ok(format!("Bearer {token}"))
    }
}

/// The `key="value"` pairs of a challenge.
fn challenge_params(text: &str) -> HashMap<String, String> {
    let mut params = HashMap::new();
    let mut rest = text.trim();
    while let Some((key, after)) = rest.split_once('=') {
        let key = key
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let after = after.trim_start();
        let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
            match quoted.find('"') {
                Some(end) => (&quoted[..end], &quoted[end + 1..]),
                None => (quoted, ""),
            }
        } else {
            match after.find(',') {
                Some(end) => (&after[..end], &after[end..]),
                None => (after, ""),
            }
        };
        params.insert(key, value.to_owned());
        rest = next.trim_start_matches(',').trim();
    }
    params
}

/// `text` percent-encoded for a query string.
pub(super) fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_read_as_registries_write_them() {
        let params = challenge_params(
            r#"realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/alpine:pull""#,
        );
        assert_eq!(params["realm"], "https://auth.docker.io/token");
        assert_eq!(params["service"], "registry.docker.io");
        assert_eq!(params["scope"], "repository:library/alpine:pull");
        assert_eq!(
            percent("repository:a/b:pull,push"),
            "repository%3Aa%2Fb%3Apull%2Cpush"
        );
    }
}
