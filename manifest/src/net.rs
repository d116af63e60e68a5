//! Outbound hosts: what a skill asks to reach and what an operator allows, as patterns
//! of scheme, host and port, like Spin's `allowed_outbound_hosts`.

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// The scheme's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }

    /// The port a URL of this scheme uses when it names none.
    pub fn default_port(self) -> u16 {
        match self {
            Self::Http => 80,
            Self::Https => 443,
        }
    }
}

/// A set of origins: a scheme, a host — a name, `*.` and a domain (any name below it),
/// an IP literal, or `*` for any host — and a port (the scheme's default when not
/// written, `*` for any). Whatever the pattern, a name that resolves into the machine
/// or a private network is reached only by a pattern naming that address (see
/// [`HostPattern::names_address`]).
///
/// ```
/// use evo_manifest::HostPattern;
///
/// let github = HostPattern::parse("https://*.github.com").unwrap();
/// assert!(github.matches_origin("https", "api.github.com", 443));
/// assert!(!github.matches_origin("https", "github.com.evil.example", 443));
/// assert!(!github.matches_origin("http", "api.github.com", 80));
/// assert!(github.covers(&HostPattern::parse("api.github.com").unwrap()));
/// let web = HostPattern::parse("https://*").unwrap();
/// assert!(web.matches_origin("https", "example.org", 443) && web.covers(&github));
/// assert_eq!(HostPattern::parse("http://127.0.0.1:8080").unwrap().to_string(), "http://127.0.0.1:8080");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostPattern {
    /// The scheme.
    pub scheme: Scheme,
    /// The host, lower-case; for a wildcard, the domain below which any name matches
    /// (empty for `*`, any host).
    pub host: String,
    /// Whether the pattern is `*.` and `host`.
    pub wildcard: bool,
    /// The port; `None` for any (`:*`).
    pub port: Option<u16>,
}

impl HostPattern {
    /// Parses `[scheme://]host[:port]`; the scheme defaults to `https`. Paths, queries
    /// and user names are refused.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let split = text
            .split_once("://")
            .map(|(scheme, rest)| (scheme.to_ascii_lowercase(), rest));
        let (scheme, rest) = match split.as_ref().map(|(s, r)| (s.as_str(), *r)) {
            Some(("http", rest)) => (Scheme::Http, rest),
            Some(("https", rest)) => (Scheme::Https, rest),
            Some((other, _)) => {
                return Err(format!(
                    "{text:?}: the scheme {other:?} is not allowed; use http or https"
                ));
            }
            None => (Scheme::Https, text),
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', '@']) || rest.is_empty() {
            return Err(format!(
                "{text:?} is not a host: write scheme://host[:port], without a path, query or user"
            ));
        }
        // An IPv6 literal is bracketed: [::1]:8080.
        let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
            let (address, after) = inner
                .split_once(']')
                .ok_or_else(|| format!("{text:?}: an IPv6 address needs its closing `]`"))?;
            (address.to_owned(), after.strip_prefix(':'))
        } else {
            match rest.rsplit_once(':') {
                Some((host, port)) => (host.to_owned(), Some(port)),
                None => (rest.to_owned(), None),
            }
        };
        let port = match port {
            Some("*") => None,
            Some(port) => Some(
                port.parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| format!("{text:?}: {port:?} is not a port"))?,
            ),
            None => Some(scheme.default_port()),
        };
        let host = host.to_ascii_lowercase();
        let (wildcard, host) = match host.strip_prefix("*.") {
            Some(domain) => (true, domain.to_owned()),
            None if host == "*" => (true, String::new()),
            None => (false, host),
        };
        let valid_name = |name: &str| {
            !name.is_empty()
                && name.split('.').all(|label| {
                    !label.is_empty()
                        && !label.starts_with('-')
                        && !label.ends_with('-')
                        && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                })
        };
        let any = wildcard && host.is_empty();
        if !any && host.parse::<IpAddr>().is_err() && !valid_name(&host) {
            return Err(format!(
                "{text:?}: {host:?} is not a host name; use a name such as api.example.com, *.example.com for the names below a domain, or an IP address"
            ));
        }
        if wildcard && !any && (host.parse::<IpAddr>().is_ok() || !host.contains('.')) {
            return Err(format!(
                "{text:?}: `*.` goes before a domain with at least two labels, such as *.example.com"
            ));
        }
        Ok(Self {
            scheme,
            host,
            wildcard,
            port,
        })
    }

    /// Whether a request to `scheme://host:port` is inside the pattern.
    pub fn matches_origin(&self, scheme: &str, host: &str, port: u16) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        scheme == self.scheme.as_str()
            && self.port.is_none_or(|p| p == port)
            && if self.is_any_host() {
                true
            } else if self.wildcard {
                host.strip_suffix(&self.host)
                    .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
            } else {
                host == self.host
            }
    }

    /// Whether every origin `other` matches, this one matches too.
    pub fn covers(&self, other: &HostPattern) -> bool {
        if self.scheme != other.scheme || self.port.is_some() && self.port != other.port {
            return false;
        }
        if self.is_any_host() {
            return true;
        }
        match (self.wildcard, other.wildcard) {
            (false, false) => self.host == other.host,
            (false, true) => false,
            (true, _) => {
                other.host == self.host && other.wildcard
                    || other
                        .host
                        .strip_suffix(&self.host)
                        .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
            }
        }
    }

    /// Whether the pattern is `*`: any host.
    pub fn is_any_host(&self) -> bool {
        self.wildcard && self.host.is_empty()
    }

    /// Whether the pattern names its host outright as an address (an IP literal or
    /// `localhost`): the only way a grant reaches loopback and private networks, so
    /// that no name can be made to resolve into the operator's network.
    pub fn names_address(&self) -> bool {
        !self.wildcard && (self.host == "localhost" || self.host.parse::<IpAddr>().is_ok())
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let star = match (self.wildcard, self.host.is_empty()) {
            (true, true) => "*",
            (true, false) => "*.",
            (false, _) => "",
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        write!(f, "{}://{star}{host}", self.scheme.as_str())?;
        match self.port {
            None => write!(f, ":*"),
            Some(port) if port != self.scheme.default_port() => write!(f, ":{port}"),
            Some(_) => Ok(()),
        }
    }
}

impl Serialize for HostPattern {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HostPattern {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A host a skill asks to reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostRequest {
    /// The origins.
    pub host: HostPattern,
    /// Why the skill needs it, shown to the operator at install.
    #[serde(default)]
    pub reason: String,
}

/// A secret a skill asks the host to put into its requests to `host`: the skill writes
/// `{{secret:NAME}}` in a header or the query, and the host replaces it in a request to
/// `host` only. The skill never gets the value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretRequest {
    /// The secret's name (`GITHUB_TOKEN`), as set with `evo secret set`.
    pub name: String,
    /// The origins the value may be sent to; inside the hosts the skill asks for.
    pub host: HostPattern,
    /// Why the skill needs it, shown to the operator at install.
    #[serde(default)]
    pub reason: String,
}

/// Checks a secret's name: `A-Z`, digits and `_`, starting with a letter, at most 64.
pub fn check_secret_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a secret name: use capital letters, digits and `_`, starting with a letter, at most 64 (GITHUB_TOKEN)"
        ))
    }
}

/// Whether `ip` is an address a public name must not resolve to: loopback, private,
/// link-local, unique-local, carrier-grade NAT, unspecified, broadcast, documentation
/// or multicast — the operator's own network and the machine itself.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_internal(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_with_defaults_and_refuse_what_is_not_a_host() {
        let p = HostPattern::parse("api.github.com").unwrap();
        assert_eq!(
            (p.scheme, p.host.as_str(), p.port, p.wildcard),
            (Scheme::Https, "api.github.com", Some(443), false)
        );
        assert_eq!(
            HostPattern::parse("http://[::1]:8080").unwrap().to_string(),
            "http://[::1]:8080"
        );
        assert_eq!(
            HostPattern::parse("HTTPS://*.Example.COM/")
                .unwrap()
                .to_string(),
            "https://*.example.com"
        );
        for bad in [
            "ftp://example.com",
            "https://example.com/path",
            "https://user@example.com",
            "*.*",
            "https://*:",
            "https://*.com",
            "https://*.10.0.0.1",
            "http://example.com:0",
            "http://example.com:99999",
            "http://exa mple.com",
            "",
        ] {
            assert!(HostPattern::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_host_of_star_is_any_host_but_never_names_an_address() {
        let any = HostPattern::parse("*").unwrap();
        assert_eq!(any.to_string(), "https://*");
        assert!(any.matches_origin("https", "example.org", 443));
        assert!(any.matches_origin("https", "10.0.0.1", 443));
        assert!(!any.matches_origin("https", "example.org", 8443));
        assert!(!any.names_address());
        let every = HostPattern::parse("http://*:*").unwrap();
        assert!(every.covers(&HostPattern::parse("http://*.example.com:8080").unwrap()));
        assert!(every.covers(&HostPattern::parse("http://*").unwrap()));
        assert!(
            !HostPattern::parse("http://*.example.com:*")
                .unwrap()
                .covers(&every)
        );
    }

    #[test]
    fn a_port_of_star_is_any_port() {
        let any = HostPattern::parse("http://127.0.0.1:*").unwrap();
        assert_eq!(any.to_string(), "http://127.0.0.1:*");
        assert!(any.matches_origin("http", "127.0.0.1", 41234));
        assert!(any.covers(&HostPattern::parse("http://127.0.0.1:8080").unwrap()));
        assert!(
            !HostPattern::parse("http://127.0.0.1:8080")
                .unwrap()
                .covers(&any)
        );
    }

    #[test]
    fn wildcards_match_names_below_the_domain_only() {
        let p = HostPattern::parse("https://*.example.com").unwrap();
        assert!(p.matches_origin("https", "a.example.com", 443));
        assert!(p.matches_origin("https", "a.b.example.com.", 443));
        assert!(!p.matches_origin("https", "example.com", 443));
        assert!(!p.matches_origin("https", "badexample.com", 443));
        assert!(!p.matches_origin("https", "a.example.com", 8443));
        assert!(p.covers(&HostPattern::parse("https://*.api.example.com").unwrap()));
        assert!(p.covers(&HostPattern::parse("https://*.example.com").unwrap()));
        assert!(!p.covers(&HostPattern::parse("https://example.com").unwrap()));
        assert!(
            !HostPattern::parse("https://a.example.com")
                .unwrap()
                .covers(&p)
        );
    }

    #[test]
    fn only_literal_addresses_reach_the_internal_network() {
        assert!(
            HostPattern::parse("http://127.0.0.1:9000")
                .unwrap()
                .names_address()
        );
        assert!(
            HostPattern::parse("http://localhost:9000")
                .unwrap()
                .names_address()
        );
        assert!(
            !HostPattern::parse("https://internal.example.com")
                .unwrap()
                .names_address()
        );
        for internal in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "0.0.0.0",
        ] {
            assert!(is_internal(internal.parse().unwrap()), "{internal}");
        }
        for public in ["93.184.216.34", "2606:4700::1111", "8.8.8.8"] {
            assert!(!is_internal(public.parse().unwrap()), "{public}");
        }
    }
}
