//! Secrets the guest never sees: API keys kept by the host and put into a skill's
//! outgoing requests only for the host they were granted for.
//!
//! - [`SecretStore`] keeps them in `secrets.json` in the data directory, readable by the
//!   owner only (0600), written atomically. `evo secret set|list|rm` manage it; no
//!   command prints a value.
//! - A skill asks for a secret *for a host* in its manifest (`capabilities.secrets`) and
//!   writes the placeholder `placeholder` (`{{secret:NAME}}`) into a header or the
//!   query of a request; the host replaces it only in a request to that host, after the
//!   request was admitted (see `engine::wasm::http`).
//! - [`Secrets`] is a snapshot of the values with a scanner over all of them: request
//!   bodies and headers going anywhere are refused when they carry a value, responses are
//!   redacted before the guest reads them, and what a skill returns, logs or emits is
//!   redacted before anyone else sees it.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use aho_corasick::{AhoCorasick, MatchKind};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

mod disguise;
use disguise::disguises;

/// The file, inside the data directory.
pub const SECRETS_FILE: &str = "secrets.json";
/// The shortest value accepted: a shorter one would be found, and redacted, in
/// ordinary text.
pub const MIN_SECRET_CHARS: usize = 8;
/// The longest value accepted.
pub const MAX_SECRET_BYTES: usize = 8 * 1024;

/// `{{secret:NAME}}`: what a skill writes where the value of secret `NAME` goes.
#[cfg(any(test, feature = "internals"))]
pub fn placeholder(name: &str) -> String {
    format!("{{{{secret:{name}}}}}")
}

pub use evo_manifest::check_secret_name as check_name;

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    version: u32,
    secrets: BTreeMap<String, Stored>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Stored {
    value: String,
    set_at: u64,
}

/// A secret as listed: never its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SecretInfo {
    /// The name.
    pub name: String,
    /// When it was last set, Unix milliseconds.
    pub set_at: u64,
    /// How many characters the value has.
    pub chars: usize,
}

#[derive(Debug)]
struct Cached {
    stamp: Option<(SystemTime, u64)>,
    checked: Instant,
    secrets: Arc<Secrets>,
}

/// How long a snapshot is used before the file is looked at again: a secret set in
/// another process reaches a running host within this.
pub(crate) const RECHECK: Duration = Duration::from_secs(1);

/// The secrets of one data directory.
#[derive(Debug)]
pub struct SecretStore {
    path: PathBuf,
    /// The last snapshot, the file's (mtime, length) when it was read, and when that
    /// was last checked.
    cached: Mutex<Option<Cached>>,
}

impl SecretStore {
    /// The store of `data_dir` (the file need not exist).
    pub fn new(data_dir: &Path) -> Self {
        Self {
            path: data_dir.join(SECRETS_FILE),
            cached: Mutex::new(None),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<File> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| Error::Config {
                path: self.path.clone(),
                line: Some(e.line()),
                key: None,
                message: format!(
                    "the secrets file is not valid JSON ({e}); set the secrets again after moving it aside"
                ),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(File {
                version: 1,
                ..File::default()
            }),
            Err(e) => Err(Error::io_at(&self.path)(e)),
        }
    }

    fn write(&self, file: &File) -> Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(Error::io_at(dir))?;
        let mut builder = tempfile::Builder::new();
        builder.prefix(".secrets-");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            builder.permissions(std::fs::Permissions::from_mode(0o600));
        }
        let mut temp = builder.tempfile_in(dir).map_err(Error::io_at(dir))?;
        let bytes = serde_json::to_vec_pretty(file).map_err(|e| Error::Engine(e.to_string()))?;
        temp.write_all(&bytes)
            .and_then(|()| temp.as_file().sync_all())
            .map_err(Error::io_at(temp.path()))?;
        temp.persist(&self.path)
            .map_err(|e| Error::io_at(&self.path)(e.error))?;
        *self.cached.lock().unwrap_or_else(|e| e.into_inner()) = None;
        Ok(())
    }

    /// Sets `name` to `value`, replacing what it was.
    pub fn set(&self, name: &str, value: &str) -> Result<()> {
        check_name(name).map_err(|message| Error::Secret {
            code: "SECRET_INVALID",
            message,
        })?;
        let value = value.trim_end_matches(['\r', '\n']);
        if value.chars().count() < MIN_SECRET_CHARS {
            return Err(Error::Secret {
                code: "SECRET_INVALID",
                message: format!(
                    "the value of {name} has {} characters; a secret needs at least {MIN_SECRET_CHARS}, or redacting it would mangle ordinary text",
                    value.chars().count()
                ),
            });
        }
        if value.len() > MAX_SECRET_BYTES || value.contains(['\r', '\n', '\0']) {
            return Err(Error::Secret {
                code: "SECRET_INVALID",
                message: format!(
                    "the value of {name} must be one line of at most {MAX_SECRET_BYTES} bytes"
                ),
            });
        }
        let mut file = self.read()?;
        file.version = 1;
        file.secrets.insert(
            name.to_owned(),
            Stored {
                value: value.to_owned(),
                set_at: crate::unix_millis(),
            },
        );
        self.write(&file)
    }

    /// Removes `name`.
    pub fn remove(&self, name: &str) -> Result<()> {
        let mut file = self.read()?;
        if file.secrets.remove(name).is_none() {
            return Err(not_set(name));
        }
        self.write(&file)
    }

    /// The secrets, by name, without their values.
    pub fn list(&self) -> Result<Vec<SecretInfo>> {
        Ok(self
            .read()?
            .secrets
            .into_iter()
            .map(|(name, stored)| SecretInfo {
                name,
                set_at: stored.set_at,
                chars: stored.value.chars().count(),
            })
            .collect())
    }

    /// The values as they are now (as of at most `RECHECK` ago); the file is read
    /// again only when it changed.
    pub fn snapshot(&self) -> Result<Arc<Secrets>> {
        let mut cached = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cached) = cached.as_ref()
            && cached.checked.elapsed() < RECHECK
        {
            return Ok(cached.secrets.clone());
        }
        let stamp = std::fs::metadata(&self.path)
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())));
        if let Some(cached) = cached.as_mut()
            && cached.stamp == stamp
        {
            cached.checked = Instant::now();
            return Ok(cached.secrets.clone());
        }
        let values = self
            .read()?
            .secrets
            .into_iter()
            .map(|(name, stored)| (name, stored.value))
            .collect();
        let secrets = Arc::new(Secrets::new(values));
        *cached = Some(Cached {
            stamp,
            checked: Instant::now(),
            secrets: secrets.clone(),
        });
        Ok(secrets)
    }
}

/// The error for a secret that is not in the store.
pub(crate) fn not_set(name: &str) -> Error {
    Error::Secret {
        code: "SECRET_NOT_FOUND",
        message: format!("no secret named {name} is set; set it with `evo secret set {name}`"),
    }
}

/// The values of every secret, and a scanner that finds any of them, in the clear or in
/// disguise: base64, base64url and base32 at each alignment, hex, and escaped one byte
/// or every byte at a time (percent-encoding, JSON's `\u00XX`, quoted-printable).
#[derive(Debug, Default)]
pub struct Secrets {
    names: Vec<String>,
    values: Vec<String>,
    /// The secret (index into `names`) each of the scanner's patterns belongs to.
    owners: Vec<usize>,
    /// The longest pattern, in bytes.
    longest: usize,
    scanner: Option<AhoCorasick>,
}

impl Secrets {
    /// Secrets with these values, by name.
    pub fn new(values: BTreeMap<String, String>) -> Self {
        let (names, values): (Vec<_>, Vec<_>) = values.into_iter().unzip();
        let mut patterns = Vec::new();
        let mut owners = Vec::new();
        for (owner, value) in values.iter().enumerate() {
            for pattern in std::iter::once(value.clone()).chain(disguises(value)) {
                patterns.push(pattern);
                owners.push(owner);
            }
        }
        // An escaped value takes up to 6 bytes a byte (`\u0041`), and quoted-printable
        // breaks its lines (3 bytes each) every 76 characters.
        let escaped = values
            .iter()
            .map(|v| 6 * v.len() + 3 * (v.len() / 12 + 1))
            .max()
            .unwrap_or(0);
        let longest = patterns
            .iter()
            .map(String::len)
            .max()
            .unwrap_or(0)
            .max(escaped);
        let scanner = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
            .ok()
            .filter(|_| !patterns.is_empty());
        Self {
            names,
            values,
            owners,
            longest,
            scanner,
        }
    }

    /// The name of the secret whose value (or a disguise of it) `pattern` is.
    fn name_of(&self, pattern: aho_corasick::PatternID) -> &str {
        &self.names[self.owners[pattern.as_usize()]]
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The value of `name`.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| self.values[i].as_str())
    }

    /// The longest form of a value the scanner looks for, escaped ones included, in
    /// bytes (0 when there are none): how much of a stream to hold back to find one
    /// split across chunks.
    pub fn longest(&self) -> usize {
        self.longest
    }

    /// The name of the first secret whose value is in `bytes`, as written or escaped.
    pub fn find(&self, bytes: &[u8]) -> Option<&str> {
        let scanner = self.scanner.as_ref()?;
        if let Some(found) = scanner.find(bytes) {
            return Some(self.name_of(found.pattern()));
        }
        let view = disguise::unescape(bytes)?;
        let found = scanner.find(&view.bytes)?;
        Some(self.name_of(found.pattern()))
    }

    /// Where the secrets are in `bytes`, as written or escaped: ranges of `bytes` in
    /// order, not overlapping, each with the name of the secret found there.
    fn hits(&self, bytes: &[u8]) -> Vec<(std::ops::Range<usize>, &str)> {
        let Some(scanner) = &self.scanner else {
            return Vec::new();
        };
        let mut hits: Vec<_> = scanner
            .find_iter(bytes)
            .map(|hit| (hit.range(), hit.pattern()))
            .collect();
        if let Some(view) = disguise::unescape(bytes) {
            hits.extend(scanner.find_iter(&view.bytes).map(|hit| {
                let range = view.from[hit.start()].0..view.from[hit.end() - 1].1;
                (range, hit.pattern())
            }));
            hits.sort_by_key(|(range, _)| (range.start, std::cmp::Reverse(range.end)));
        }
        let mut merged: Vec<(std::ops::Range<usize>, &str)> = Vec::new();
        for (range, pattern) in hits {
            match merged.last_mut() {
                Some((last, _)) if range.start < last.end => last.end = last.end.max(range.end),
                _ => merged.push((range, self.name_of(pattern))),
            }
        }
        merged
    }

    /// `text` with every secret value (as written or escaped) replaced by
    /// `[REDACTED:NAME]`; the names of the secrets found.
    pub fn redact<'a>(&self, text: &'a str) -> (Cow<'a, str>, Vec<&str>) {
        let hits = self.hits(text.as_bytes());
        if hits.is_empty() {
            return (Cow::Borrowed(text), Vec::new());
        }
        let out = replaced(text.as_bytes(), &hits);
        let text = String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        (Cow::Owned(text), names(&hits))
    }

    /// Overwrites every secret value in `bytes` (as written or escaped) with `*`,
    /// keeping the length (a body whose `content-length` was already sent); the names of
    /// the secrets found.
    pub fn mask(&self, bytes: &mut [u8]) -> Vec<&str> {
        let hits = self.hits(bytes);
        for (range, _) in &hits {
            bytes[range.clone()].fill(b'*');
        }
        names(&hits)
    }

    /// `bytes` with every secret value (as written or escaped) replaced by
    /// `[REDACTED:NAME]`.
    pub fn redact_bytes(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        let hits = self.hits(bytes);
        (!hits.is_empty()).then(|| replaced(bytes, &hits))
    }
}

/// `bytes` with each of the `hits` replaced by `[REDACTED:NAME]`.
fn replaced(bytes: &[u8], hits: &[(std::ops::Range<usize>, &str)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut last = 0;
    for (range, name) in hits {
        out.extend_from_slice(&bytes[last..range.start]);
        out.extend_from_slice(format!("[REDACTED:{name}]").as_bytes());
        last = range.end;
    }
    out.extend_from_slice(&bytes[last..]);
    out
}

/// The names of the secrets `hits` found, each once.
fn names<'a>(hits: &[(std::ops::Range<usize>, &'a str)]) -> Vec<&'a str> {
    let mut found = Vec::new();
    for (_, name) in hits {
        if !found.contains(name) {
            found.push(*name);
        }
    }
    found
}

/// Replaces every `{{secret:NAME}}` in `text` with `value(NAME)`, or says why one may not
/// be; `None` when `text` has no placeholder.
pub(crate) fn substitute(
    text: &str,
    mut value: impl FnMut(&str) -> std::result::Result<String, String>,
) -> std::result::Result<Option<String>, String> {
    const OPEN: &str = "{{secret:";
    if !text.contains(OPEN) {
        return Ok(None);
    }
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        out.push_str(&rest[..start]);
        let after = &rest[start + OPEN.len()..];
        let end = after
            .find("}}")
            .ok_or_else(|| "a `{{secret:` placeholder is not closed with `}}`".to_owned())?;
        let name = after[..end].trim();
        check_name(name)?;
        out.push_str(&value(name)?);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(Some(out))
}

#[cfg(test)]
mod tests;
