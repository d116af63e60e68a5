//! TLS to PostgreSQL: libpq's `sslmode` and `sslrootcert` in `[storage] url`, on rustls
//! (tokio-postgres knows neither `verify-ca` nor `verify-full`, nor a root file).
//!
//! | `sslmode` | encrypted | the server's certificate |
//! | --- | --- | --- |
//! | `disable` (or none) | no | — |
//! | `require` | yes | not checked, unless `sslrootcert` names a CA (then as `verify-ca`) |
//! | `verify-ca` | yes | signed by a CA of `sslrootcert` (else Mozilla's roots) |
//! | `verify-full` | yes | as `verify-ca`, and issued for the host connected to |
//!
//! `prefer` and `allow` are refused: they fall back to plain text without a word.

use std::path::Path;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

/// How to reach the server.
pub(super) struct Tls {
    /// Whether to encrypt.
    pub mode: SslMode,
    /// The connector (used only when `mode` encrypts).
    pub connector: MakeRustlsConnect,
}

/// What checking the server's certificate takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Nothing,
    Ca,
    Full,
}

/// `url` without `sslmode` and `sslrootcert`, and how to connect as they say; or what
/// is wrong with them.
pub(super) fn from_url(url: &str) -> Result<(String, Tls), String> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut kept = Vec::new();
    let (mut sslmode, mut root) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => sslmode = Some(decode(value)),
            "sslrootcert" => root = Some(decode(value)),
            _ => kept.push(pair),
        }
    }
    let check = match sslmode.as_deref() {
        None | Some("disable") => None,
        Some("require") if root.is_some() => Some(Check::Ca),
        Some("require") => Some(Check::Nothing),
        Some("verify-ca") => Some(Check::Ca),
        Some("verify-full") => Some(Check::Full),
        Some(mode @ ("prefer" | "allow")) => {
            return Err(format!(
                "sslmode={mode} falls back to plain text without a word: use sslmode=require, verify-ca or verify-full (or disable)"
            ));
        }
        Some(other) => {
            return Err(format!(
                "sslmode={other} is not one of disable, require, verify-ca, verify-full"
            ));
        }
    };
    let roots = roots(root.as_deref().map(Path::new))?;
    let config = client_config(check.unwrap_or(Check::Full), roots)?;
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    let tls = Tls {
        mode: if check.is_some() {
            SslMode::Require
        } else {
            SslMode::Disable
        },
        connector: MakeRustlsConnect::new(config),
    };
    Ok((url, tls))
}

/// `%XX` escapes decoded (a path in a URL).
fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The CAs of the PEM file `path`, else Mozilla's roots.
fn roots(path: Option<&Path>) -> Result<RootCertStore, String> {
    let Some(path) = path else {
        return Ok(RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        });
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .and_then(Iterator::collect)
        .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
    let mut store = RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(certs);
    if added == 0 {
        return Err(format!(
            "sslrootcert {}: holds no CA certificate (a PEM file of `-----BEGIN CERTIFICATE-----` blocks)",
            path.display()
        ));
    }
    Ok(store)
}

fn client_config(check: Check, roots: RootCertStore) -> Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let webpki = || {
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots.clone()), provider.clone())
            .build()
            .map_err(|e| e.to_string())
    };
    let config = match check {
        Check::Full => builder.with_root_certificates(roots.clone()),
        Check::Ca => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyName(webpki()?))),
        Check::Nothing => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unchecked(provider.clone()))),
    };
    Ok(config.with_no_client_auth())
}

/// `verify-ca`: the chain is checked against the roots; the name is not.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `require` without a CA: encrypted, the certificate taken as it is (libpq's rule); the
/// handshake's signatures are still checked.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
