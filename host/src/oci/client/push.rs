//! Pushing to a registry: blobs through the upload flow, manifests, and referrers
//! (a manifest with a subject, which a registry with the referrers API lists).

use ureq::http;

use super::auth::percent;
use super::{Access, Client, fail, header};
use crate::error::Result;
use crate::oci::artifact::{self, Descriptor, Manifest};
use crate::oci::reference::Reference;

impl Client {
    /// Pushes `bytes` as the blob `descriptor` names, unless the repository has it.
    pub fn push_blob(&self, r: &Reference, descriptor: &Descriptor, bytes: &[u8]) -> Result<()> {
        let base = self.base(r);
        let url = format!("{base}/v2/{}/blobs/{}", r.repository, descriptor.digest);
        let response = self.send(r, Access::Push, http::Method::HEAD, &url, &[], &[])?;
        if response.status().as_u16() == 200 {
            return Ok(());
        }
        let url = format!("{base}/v2/{}/blobs/uploads/", r.repository);
        let response = self.send(r, Access::Push, http::Method::POST, &url, &[], &[])?;
        if response.status().as_u16() != 202 {
            return Err(self.unexpected(&format!("{r}: starting an upload"), response));
        }
        let location = header(&response, "location").ok_or_else(|| {
            fail(
                "REGISTRY_ERROR",
                format!("{r}: the registry started an upload without saying where"),
                false,
            )
        })?;
        let location = if location.starts_with('/') {
            format!("{base}{location}")
        } else {
            location
        };
        let join = if location.contains('?') { '&' } else { '?' };
        let url = format!("{location}{join}digest={}", percent(&descriptor.digest));
        let response = self.send(
            r,
            Access::Push,
            http::Method::PUT,
            &url,
            &[("Content-Type", "application/octet-stream")],
            bytes,
        )?;
        if response.status().as_u16() != 201 {
            return Err(self.unexpected(&format!("{r}: uploading {}", descriptor.digest), response));
        }
        Ok(())
    }

    /// Pushes `manifest` under `target` (a tag, or its digest); returns its digest.
    pub fn push_manifest(
        &self,
        r: &Reference,
        target: &str,
        manifest: &Manifest,
    ) -> Result<String> {
        self.put_manifest(r, target, manifest)
            .map(|(digest, _)| digest)
    }

    /// Pushes `manifest` under `target`; returns its digest and the `OCI-Subject` the
    /// registry answered with.
    fn put_manifest(
        &self,
        r: &Reference,
        target: &str,
        manifest: &Manifest,
    ) -> Result<(String, Option<String>)> {
        let bytes = manifest.to_bytes();
        let url = format!("{}/v2/{}/manifests/{target}", self.base(r), r.repository);
        let media_type = manifest.media_type.as_deref().unwrap_or(artifact::MANIFEST);
        let response = self.send(
            r,
            Access::Push,
            http::Method::PUT,
            &url,
            &[("Content-Type", media_type)],
            &bytes,
        )?;
        if response.status().as_u16() != 201 {
            return Err(self.unexpected(&format!("{r}: storing the manifest"), response));
        }
        Ok((
            artifact::digest_of(&bytes),
            header(&response, "oci-subject"),
        ))
    }

    /// Pushes `manifest`, which has a subject, under its digest; returns its digest and
    /// whether the registry listed it among its subject's referrers (a registry with
    /// the referrers API answers `OCI-Subject`; for one without, the caller keeps the
    /// fallback index).
    pub fn push_referrer(&self, r: &Reference, manifest: &Manifest) -> Result<(String, bool)> {
        let digest = artifact::digest_of(&manifest.to_bytes());
        let (digest, subject) = self.put_manifest(r, &digest, manifest)?;
        let listed =
            subject.is_some_and(|s| manifest.subject.as_ref().is_some_and(|m| m.digest == s));
        Ok((digest, listed))
    }
}
