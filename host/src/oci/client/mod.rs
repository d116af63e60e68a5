//! A client of the OCI distribution API (the registry HTTP API Docker, GHCR, ECR,
//! Harbor and the CNCF distribution registry serve): manifests and blobs, pulled and
//! pushed, with anonymous access, basic auth and the registry token flow.
//!
//! Every byte pulled is checked: a manifest against the digest asked for (and the one
//! the registry claims), a blob against its descriptor's digest and size while it
//! streams in, with caps checked before a download starts.

mod auth;
mod push;

use std::collections::HashMap;
use std::io::Read;
use std::sync::Mutex;
use std::time::Duration;

use sha2::{Digest, Sha256};
use ureq::http;

use super::artifact::{self, Descriptor, Manifest};
use super::reference::Reference;
use super::settings::Registries;
use crate::error::{Error, Result};

/// Largest manifest read: real ones are a few kilobytes.
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;
/// How long to wait for a connection, and then for each answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);
/// Bytes read at a time from a blob.
const CHUNK: usize = 256 << 10;
/// Most characters of a registry's error body quoted.
const QUOTED: usize = 300;

/// Called as a blob downloads: bytes so far, bytes in all.
pub type Progress<'a> = &'a mut (dyn FnMut(u64, u64) + Send);

/// A registry client for one operation (it keeps the tokens it was given).
#[derive(Debug)]
pub struct Client {
    agent: ureq::Agent,
    registries: Registries,
    /// `Authorization` values by registry and scope.
    auth: Mutex<HashMap<(String, String), String>>,
}

/// A registry's JSON answer of at most [`MAX_MANIFEST_BYTES`], or `REGISTRY_ERROR` saying
/// what it should have been (`what()`) and why it is not.
fn json_of<T: serde::de::DeserializeOwned>(
    response: http::Response<ureq::Body>,
    what: impl FnOnce() -> String,
) -> Result<T> {
    response
        .into_body()
        .with_config()
        .limit(MAX_MANIFEST_BYTES)
        .read_json()
        .map_err(|e| fail("REGISTRY_ERROR", format!("{}: {e}", what()), false))
}

fn fail(code: &'static str, message: String, transient: bool) -> Error {
    Error::Registry {
        code,
        message,
        transient,
    }
}

/// What a request is for: its scope in the token flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Pull,
    Push,
    /// The registry's list of repositories (`/v2/_catalog`).
    Catalog,
}

/// A page of `/v2/_catalog`.
#[derive(serde::Deserialize)]
struct Catalog {
    #[serde(default)]
    repositories: Vec<String>,
}

/// `/v2/NAME/tags/list`.
#[derive(serde::Deserialize)]
struct Tags {
    tags: Option<Vec<String>>,
}

impl Client {
    /// A client for the registries `registries` configures.
    pub fn new(registries: Registries) -> Self {
        let agent = ureq::Agent::config_builder()
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_recv_response(Some(ANSWER_TIMEOUT))
            .timeout_recv_body(Some(ANSWER_TIMEOUT))
            .http_status_as_error(false)
            .build()
            .new_agent();
        Self {
            agent,
            registries,
            auth: Mutex::default(),
        }
    }

    fn base(&self, r: &Reference) -> String {
        let scheme = if self.registries.is_insecure(&r.registry) {
            "http"
        } else {
            "https"
        };
        format!("{scheme}://{}", r.api_host())
    }

    /// Sends a request to `r`'s registry, authenticating when it asks (basic or a
    /// bearer token for the repository's scope), once.
    fn send(
        &self,
        r: &Reference,
        access: Access,
        method: http::Method,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<http::Response<ureq::Body>> {
        let scope = match access {
            Access::Catalog => "registry:catalog:*".to_owned(),
            Access::Push => format!("repository:{}:pull,push", r.repository),
            Access::Pull => format!("repository:{}:pull", r.repository),
        };
        let key = (r.registry.clone(), scope.clone());
        let mut tried = false;
        loop {
            let known = self
                .auth
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(&key)
                .cloned();
            let mut request = http::Request::builder().method(method.clone()).uri(url);
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            if let Some(auth) = &known {
                request = request.header("Authorization", auth);
            }
            let request = request
                .body(body)
                .map_err(|e| fail("INVALID_REFERENCE", format!("{url}: {e}"), false))?;
            let response = self
                .agent
                .run(request)
                .map_err(|e| self.unreachable(r, &e))?;
            let status = response.status().as_u16();
            if status != 401 || tried {
                if status == 401 || status == 403 {
                    return Err(self.refused(r, status, known.is_some()));
                }
                return Ok(response);
            }
            tried = true;
            let challenge = response
                .headers()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            let auth = self.authenticate(r, &challenge, &scope)?;
            self.auth
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(key.clone(), auth);
        }
    }

    fn unreachable(&self, r: &Reference, e: &ureq::Error) -> Error {
        let how = if self.registries.is_insecure(&r.registry) {
            "over plain HTTP, as [registries] insecure lists it"
        } else {
            "over HTTPS (a registry served over plain HTTP must be listed in [registries] insecure)"
        };
        fail(
            "REGISTRY_UNREACHABLE",
            format!(
                "the registry {} could not be reached {how}: {e}",
                r.registry
            ),
            true,
        )
    }

    fn refused(&self, r: &Reference, status: u16, with_credentials: bool) -> Error {
        let given = if with_credentials {
            "refused the credentials given"
        } else {
            "asks for credentials and none are set for it"
        };
        fail(
            "REGISTRY_AUTH",
            format!(
                "the registry {} {given} (HTTP {status}) for {}",
                r.registry, r.repository
            ),
            false,
        )
    }

    /// An unexpected answer, with the registry's own words.
    /// `response` when the registry answered 200; `missing()` when it answered 404;
    /// else what it said, as [`Self::unexpected`].
    fn found(
        &self,
        r: &Reference,
        response: http::Response<ureq::Body>,
        missing: impl FnOnce() -> Error,
    ) -> Result<http::Response<ureq::Body>> {
        match response.status().as_u16() {
            200 => Ok(response),
            404 => Err(missing()),
            _ => Err(self.unexpected(&r.to_string(), response)),
        }
    }

    fn unexpected(&self, what: &str, mut response: http::Response<ureq::Body>) -> Error {
        let status = response.status().as_u16();
        let text: String = response
            .body_mut()
            .with_config()
            .limit(64 << 10)
            .read_to_string()
            .unwrap_or_default()
            .chars()
            .take(QUOTED)
            .collect();
        fail(
            "REGISTRY_ERROR",
            format!(
                "{what}: the registry answered HTTP {status}: {}",
                text.trim()
            ),
            status >= 500 || status == 429,
        )
    }

    /// The repositories of `registry`, as its `/v2/_catalog` lists them (at most
    /// `limit`, following its pages); `None` when it offers no listing (many public
    /// registries do not).
    pub fn catalog(&self, registry: &str, limit: usize) -> Result<Option<Vec<String>>> {
        let r = Reference {
            registry: registry.to_owned(),
            repository: String::new(),
            tag: None,
            digest: None,
        };
        let mut names = Vec::new();
        let mut next = Some(format!("{}/v2/_catalog?n=100", self.base(&r)));
        while let Some(url) = next.take() {
            let response = self.send(&r, Access::Catalog, http::Method::GET, &url, &[], &[])?;
            match response.status().as_u16() {
                200 => {}
                404 | 405 | 501 => return Ok(None),
                _ => return Err(self.unexpected(&format!("{registry}'s catalog"), response)),
            }
            let link = header(&response, "link");
            let page: Catalog = json_of(response, || {
                format!("{registry}'s catalog is not a list of repositories")
            })?;
            names.extend(page.repositories);
            if names.len() >= limit {
                names.truncate(limit);
                break;
            }
            // `Link: </v2/_catalog?last=…&n=100>; rel="next"`, relative to the registry.
            next = link
                .and_then(|l| {
                    l.split_once('<')
                        .and_then(|(_, rest)| rest.split_once('>'))
                        .map(|(path, _)| path.to_owned())
                })
                .filter(|path| path.starts_with("/v2/_catalog"))
                .map(|path| format!("{}{path}", self.base(&r)));
        }
        Ok(Some(names))
    }

    /// The tags of `r`'s repository.
    pub fn tags(&self, r: &Reference) -> Result<Vec<String>> {
        let url = format!("{}/v2/{}/tags/list?n=1000", self.base(r), r.repository);
        let response = self.send(r, Access::Pull, http::Method::GET, &url, &[], &[])?;
        if response.status().as_u16() != 200 {
            return Err(self.unexpected(&format!("{}'s tags", r.repository), response));
        }
        let tags: Tags = json_of(response, || {
            format!("{}'s tags are not a list", r.repository)
        })?;
        Ok(tags.tags.unwrap_or_default())
    }

    /// The manifest `r` names (its digest and bytes checked), following an index to
    /// the one manifest for Wasm in it.
    pub fn manifest(&self, r: &Reference) -> Result<(String, Manifest)> {
        let (digest, manifest) = self.fetch_manifest(r, r.target())?;
        if !manifest.manifests.is_empty() {
            let chosen = choose(&manifest.manifests).ok_or_else(|| {
                fail(
                    "ARTIFACT_INVALID",
                    format!(
                        "{r} is an index of {} manifests, none of them for Wasm; name one by its digest",
                        manifest.manifests.len()
                    ),
                    false,
                )
            })?;
            let pinned = r.at(&chosen.digest);
            let (digest, manifest) = self.fetch_manifest(&pinned, &chosen.digest)?;
            if !manifest.manifests.is_empty() {
                return Err(fail(
                    "ARTIFACT_INVALID",
                    format!("{r}: an index inside an index"),
                    false,
                ));
            }
            return Ok((digest, manifest));
        }
        Ok((digest, manifest))
    }

    /// The manifest at `target` (a tag or digest) in `r`'s repository, and its digest.
    fn fetch_manifest(&self, r: &Reference, target: &str) -> Result<(String, Manifest)> {
        let url = format!("{}/v2/{}/manifests/{target}", self.base(r), r.repository);
        let accept = [
            artifact::MANIFEST,
            artifact::DOCKER_MANIFEST,
            artifact::INDEX,
        ]
        .join(", ");
        let response = self.send(
            r,
            Access::Pull,
            http::Method::GET,
            &url,
            &[("Accept", &accept)],
            &[],
        )?;
        let response = self.found(r, response, || {
            fail(
                "ARTIFACT_NOT_FOUND",
                format!("{r}: the registry has no {target} in {}", r.repository),
                false,
            )
        })?;
        let claimed = header(&response, "docker-content-digest");
        let content_type = header(&response, "content-type");
        let mut bytes = Vec::new();
        response
            .into_body()
            .into_reader()
            .take(MAX_MANIFEST_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| {
                fail(
                    "REGISTRY_UNREACHABLE",
                    format!("{r}: reading the manifest failed: {e}"),
                    true,
                )
            })?;
        if bytes.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(fail(
                "ARTIFACT_TOO_LARGE",
                format!("{r}: its manifest is larger than {MAX_MANIFEST_BYTES} bytes"),
                false,
            ));
        }
        let digest = artifact::digest_of(&bytes);
        if let Some(expected) = r
            .digest
            .as_deref()
            .filter(|_| target.starts_with("sha256:"))
            && digest != expected
        {
            return Err(mismatch(&format!("{r}: the manifest"), expected, &digest));
        }
        if let Some(claimed) = claimed.filter(|c| c.starts_with("sha256:"))
            && claimed != digest
        {
            return Err(mismatch(
                &format!("{r}: the manifest the registry calls"),
                &claimed,
                &digest,
            ));
        }
        let mut manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| {
            fail(
                "ARTIFACT_INVALID",
                format!("{r}: its manifest is not an OCI manifest: {e}"),
                false,
            )
        })?;
        if manifest.media_type.is_none() {
            manifest.media_type =
                content_type.map(|t| t.split(';').next().unwrap_or("").trim().to_owned());
        }
        Ok((digest, manifest))
    }

    /// The blob `descriptor` names in `r`'s repository, refused before the download when
    /// larger than `cap`, and checked against its digest and size as it streams in.
    pub fn blob(
        &self,
        r: &Reference,
        descriptor: &Descriptor,
        cap: u64,
        progress: Option<Progress<'_>>,
    ) -> Result<Vec<u8>> {
        if descriptor.size > cap {
            return Err(fail(
                "ARTIFACT_TOO_LARGE",
                format!(
                    "{r}: its {} blob is {} bytes; at most {cap} are accepted",
                    descriptor.media_type, descriptor.size
                ),
                false,
            ));
        }
        if !super::reference::is_digest(&descriptor.digest) {
            return Err(fail(
                "ARTIFACT_INVALID",
                format!(
                    "{r}: a blob's digest {:?} is not sha256: and 64 hex digits",
                    descriptor.digest
                ),
                false,
            ));
        }
        let url = format!(
            "{}/v2/{}/blobs/{}",
            self.base(r),
            r.repository,
            descriptor.digest
        );
        let response = self.send(r, Access::Pull, http::Method::GET, &url, &[], &[])?;
        let response = self.found(r, response, || {
            fail(
                "ARTIFACT_INVALID",
                format!(
                    "{r}: the registry lacks the blob {} its manifest names",
                    descriptor.digest
                ),
                false,
            )
        })?;
        let mut reader = response.into_body().into_reader();
        let mut hasher = Sha256::new();
        let mut bytes = Vec::with_capacity(usize::try_from(descriptor.size).unwrap_or(0));
        let mut chunk = vec![0_u8; CHUNK];
        let mut quiet = |_: u64, _: u64| {};
        let progress = progress.unwrap_or(&mut quiet);
        loop {
            let n = reader.read(&mut chunk).map_err(|e| {
                fail(
                    "REGISTRY_UNREACHABLE",
                    format!("{r}: the download of {} broke off: {e}", descriptor.digest),
                    true,
                )
            })?;
            if n == 0 {
                break;
            }
            if (bytes.len() + n) as u64 > descriptor.size {
                return Err(fail(
                    "DIGEST_MISMATCH",
                    format!(
                        "{r}: the blob {} is longer than the {} bytes its manifest says; nothing was installed",
                        descriptor.digest, descriptor.size
                    ),
                    false,
                ));
            }
            hasher.update(&chunk[..n]);
            bytes.extend_from_slice(&chunk[..n]);
            progress(bytes.len() as u64, descriptor.size);
        }
        let digest = format!("sha256:{}", hex::encode(hasher.finalize()));
        if digest != descriptor.digest || bytes.len() as u64 != descriptor.size {
            return Err(mismatch(
                &format!("{r}: the blob"),
                &descriptor.digest,
                &digest,
            ));
        }
        Ok(bytes)
    }

    /// The referrers of `digest` in `r`'s repository, as the referrers API lists them
    /// (an index); `None` when the registry has no referrers API (it answers 404, the
    /// distribution spec says, and then the fallback tag holds them).
    pub fn referrers(&self, r: &Reference, digest: &str) -> Result<Option<Manifest>> {
        let url = format!("{}/v2/{}/referrers/{digest}", self.base(r), r.repository);
        let response = self.send(
            r,
            Access::Pull,
            http::Method::GET,
            &url,
            &[("Accept", artifact::INDEX)],
            &[],
        )?;
        match response.status().as_u16() {
            200 => {}
            // 404 is what the spec says; some registries answer an unknown route so.
            400 | 404 | 405 | 501 => return Ok(None),
            _ => return Err(self.unexpected(&format!("{r}: its referrers"), response)),
        }
        let index: Manifest = json_of(response, || {
            format!("{r}: its referrers are not an image index")
        })?;
        Ok(Some(index))
    }

    /// The manifest or index `r` names as stored (an index is not followed), with its
    /// digest checked; `None` when the registry has none.
    pub fn stored(&self, r: &Reference) -> Result<Option<Manifest>> {
        match self.fetch_manifest(r, r.target()) {
            Ok((_, manifest)) => Ok(Some(manifest)),
            Err(Error::Registry {
                code: "ARTIFACT_NOT_FOUND",
                ..
            }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The manifest of an index to take: the one for Wasm, or the only one.
fn choose(manifests: &[Descriptor]) -> Option<&Descriptor> {
    manifests
        .iter()
        .find(|m| {
            m.platform
                .as_ref()
                .and_then(|p| p.get("architecture"))
                .and_then(|a| a.as_str())
                == Some("wasm")
        })
        .or(match manifests {
            [only] => Some(only),
            _ => None,
        })
}

fn header(response: &http::Response<ureq::Body>, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn mismatch(what: &str, expected: &str, got: &str) -> Error {
    fail(
        "DIGEST_MISMATCH",
        format!(
            "{what} {expected}, but its bytes' digest is {got}: tampered with or damaged; nothing was installed"
        ),
        false,
    )
}
