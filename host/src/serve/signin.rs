//! The console's sign-in: tokens strong enough not to be guessed, guesses throttled per
//! client, and sessions the server keeps.
//!
//! A browser signs in once with a token (`POST /login`) and then carries a cookie. The
//! cookie is a random session id, not derived from the token: the server keeps each
//! session (by the id's SHA-256) with the scope its token gave and an expiry, so a
//! session ends when it expires, when its browser signs out, when someone signed in
//! signs out everywhere, and when the server restarts (with a new token or the same).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// The fewest bits a token may carry: `openssl rand -hex 16` gives 128.
pub const MIN_TOKEN_BITS: u32 = 128;

/// How long a sign-in lasts.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);

/// Wrong tokens one client may send within [`GUESS_WINDOW`] before it must wait.
pub const MAX_GUESSES: u32 = 5;

/// The window [`MAX_GUESSES`] counts in; a client past it waits until the window ends.
pub const GUESS_WINDOW: Duration = Duration::from_secs(60);

/// The most sessions kept at once; the oldest goes first.
const MAX_SESSIONS: usize = 1_000;

/// The most clients whose wrong guesses are remembered at once.
const MAX_CLIENTS: usize = 10_000;

/// About how many bits `token` carries: its length times the bits of a character drawn
/// from the kinds it uses (digits, lower case, upper case, anything else), or from only
/// its own characters when it uses fewer than eight (`aaaa…`, `abab…`). Right for a
/// random token (`openssl rand -hex 16`: 32 characters of 36 kinds, 165), far too high
/// for a long word, and low for a short one, which is what matters.
pub fn token_bits(token: &str) -> u32 {
    let mut chars: Vec<char> = token.chars().collect();
    let length = chars.len() as f64;
    let kinds = [
        (chars.iter().any(char::is_ascii_digit), 10.0),
        (chars.iter().any(char::is_ascii_lowercase), 26.0),
        (chars.iter().any(char::is_ascii_uppercase), 26.0),
        (chars.iter().any(|c| !c.is_ascii_alphanumeric()), 33.0),
    ];
    chars.sort_unstable();
    chars.dedup();
    let alphabet: f64 = if chars.len() < 8 {
        chars.len() as f64
    } else {
        kinds.iter().filter(|(used, _)| *used).map(|(_, n)| n).sum()
    };
    (alphabet.max(1.0).log2() * length) as u32
}

/// Why a sign-in was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The token is none of the server's.
    WrongToken,
    /// The client sent too many wrong tokens; it may try again after this long.
    Throttled(Duration),
}

/// How long a node trusts what it knows of a session before asking the shared database
/// again: a session ended on one node ends on the others within this bound.
pub const RECHECK: Duration = Duration::from_secs(2);

/// The sessions and the wrong guesses of one server; on a shared database, the sessions
/// of every node that has the same tokens.
#[derive(Debug)]
pub struct SignIns {
    /// What each token's sessions are stored under: a SHA-256 of the token under a
    /// label of its own. A session stored under a token the server no longer has (one
    /// restarted with a new token) is over.
    tokens: Vec<([u8; 32], Scope)>,
    sessions: Mutex<HashMap<[u8; 32], Session>>,
    guesses: Mutex<HashMap<Option<IpAddr>, Guesses>>,
    #[cfg(feature = "postgres")]
    shared: Option<std::sync::Arc<crate::storage::Pg>>,
}

#[derive(Debug, Clone, Copy)]
struct Session {
    scope: Scope,
    expires: Instant,
    /// When the shared database last said the session is open.
    checked: Instant,
}

#[derive(Debug, Clone, Copy)]
struct Guesses {
    wrong: u32,
    since: Instant,
}

impl SignIns {
    /// The sign-ins of a server with these tokens (each with the scope it gives).
    pub fn new(tokens: &[(Option<&str>, Scope)]) -> Self {
        Self {
            tokens: tokens
                .iter()
                .filter_map(|(token, scope)| Some((fingerprint(token.as_deref()?), *scope)))
                .collect(),
            sessions: Mutex::default(),
            guesses: Mutex::default(),
            #[cfg(feature = "postgres")]
            shared: None,
        }
    }

    /// Keeps the sessions in `pg` too, for every node on it.
    #[cfg(feature = "postgres")]
    pub fn shared(mut self, pg: Option<std::sync::Arc<crate::storage::Pg>>) -> Self {
        self.shared = pg;
        self
    }

    /// A sign-in by `client` (its address; `None` when unknown: such clients share one
    /// allowance) with `token`: a new session's id, unless the token is none of the
    /// server's or the client guessed wrong too often.
    pub async fn sign_in(&self, client: Option<IpAddr>, token: &str) -> Result<String, Refused> {
        let given = fingerprint(token);
        let matched = self
            .tokens
            .iter()
            .find(|(fp, _)| bool::from(subtle::ConstantTimeEq::ct_eq(&fp[..], &given[..])));
        self.allowed(client, matched.is_some())?;
        let (fp, scope) = *matched.ok_or(Refused::WrongToken)?;
        let id = super::confirm::random_handle().ok_or(Refused::WrongToken)?;
        let now = Instant::now();
        let expires = now + SESSION_LIFETIME;
        {
            let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            sessions.retain(|_, s| now < s.expires);
            if sessions.len() >= MAX_SESSIONS
                && let Some(oldest) = sessions
                    .iter()
                    .min_by_key(|(_, s)| s.expires)
                    .map(|(key, _)| *key)
            {
                sessions.remove(&oldest);
            }
            let session = Session {
                scope,
                expires,
                checked: now,
            };
            sessions.insert(key(&id), session);
        }
        self.store(&id, fp).await;
        Ok(id)
    }

    /// Counts a wrong guess by `client`, and refuses a client past its allowance
    /// whatever it sent (so a guesser cannot tell when it is right).
    fn allowed(&self, client: Option<IpAddr>, right: bool) -> Result<(), Refused> {
        let now = Instant::now();
        let mut guesses = self.guesses.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(seen) = guesses.get(&client).copied() {
            let window_ends = seen.since + GUESS_WINDOW;
            if now >= window_ends {
                guesses.remove(&client);
            } else if seen.wrong >= MAX_GUESSES {
                return Err(Refused::Throttled(window_ends - now));
            }
        }
        if !right {
            if guesses.len() >= MAX_CLIENTS {
                guesses.retain(|_, g| now < g.since + GUESS_WINDOW);
            }
            if guesses.len() < MAX_CLIENTS || guesses.contains_key(&client) {
                let seen = guesses.entry(client).or_insert(Guesses {
                    wrong: 0,
                    since: now,
                });
                seen.wrong += 1;
            }
        }
        Ok(())
    }

    /// The scope of the session `id`, while it lasts.
    pub async fn scope(&self, id: &str) -> Option<Scope> {
        let key = key(id);
        let now = Instant::now();
        let known = {
            let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            sessions.get(&key).copied()
        };
        if let Some(session) = known
            && now < session.expires
            && (!self.is_shared() || now < session.checked + RECHECK)
        {
            return Some(session.scope);
        }
        let found = self.load(&key).await;
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        match found {
            Some(session) => {
                sessions.insert(key, session);
                Some(session.scope)
            }
            None => {
                sessions.remove(&key);
                None
            }
        }
    }

    /// Ends the session `id`.
    pub async fn sign_out(&self, id: &str) {
        let key = key(id);
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key);
        self.forget(Some(key)).await;
    }

    /// Ends every session; how many this node knew of.
    pub async fn sign_out_everywhere(&self) -> usize {
        let ended = {
            let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            let ended = sessions.len();
            sessions.clear();
            ended
        };
        self.forget(None).await;
        ended
    }

    fn is_shared(&self) -> bool {
        #[cfg(feature = "postgres")]
        return self.shared.is_some();
        #[cfg(not(feature = "postgres"))]
        false
    }

    /// Stores the session `id` of the token `fp` where the other nodes find it.
    async fn store(&self, id: &str, fp: [u8; 32]) {
        #[cfg(feature = "postgres")]
        if let Some(pg) = &self.shared {
            let (id, fp) = (hex::encode(key(id)), hex::encode(fp));
            let expires = i64::try_from(crate::unix_millis()).unwrap_or(i64::MAX)
                + SESSION_LIFETIME.as_millis() as i64;
            let stored = pg
                .run_async(move |client| async move {
                    client
                        .execute(
                            "DELETE FROM console_sessions WHERE expires_ms < $1",
                            &[&(expires - SESSION_LIFETIME.as_millis() as i64)],
                        )
                        .await?;
                    client
                        .execute(
                            "INSERT INTO console_sessions (id, token, expires_ms) VALUES ($1, $2, $3)",
                            &[&id, &fp, &expires],
                        )
                        .await
                })
                .await;
            if let Err(e) = stored {
                tracing::warn!(
                    "console: the session is open on this node only: [{}] {e}",
                    e.code()
                );
            }
        }
        #[cfg(not(feature = "postgres"))]
        let _ = (id, fp);
    }

    /// The session stored under `key` in the shared database, if it is open there and
    /// its token is still one of this server's.
    async fn load(&self, key: &[u8; 32]) -> Option<Session> {
        #[cfg(feature = "postgres")]
        if let Some(pg) = &self.shared {
            let id = hex::encode(key);
            let row: Option<(String, i64)> = pg
                .run_async(move |client| async move {
                    let row = client
                        .query_opt(
                            "SELECT token, expires_ms FROM console_sessions WHERE id = $1",
                            &[&id],
                        )
                        .await?;
                    Ok(row.map(|r| (r.get(0), r.get(1))))
                })
                .await
                .inspect_err(|e| {
                    tracing::warn!(
                        "console: cannot read the shared sessions: [{}] {e}",
                        e.code()
                    )
                })
                .ok()
                .flatten();
            let (token, expires_ms) = row?;
            let scope = self
                .tokens
                .iter()
                .find(|(fp, _)| hex::encode(fp) == token)
                .map(|(_, scope)| *scope)?;
            let left = u64::try_from(expires_ms)
                .ok()?
                .checked_sub(crate::unix_millis())?;
            let now = Instant::now();
            return Some(Session {
                scope,
                expires: now + Duration::from_millis(left),
                checked: now,
            });
        }
        let _ = key;
        None
    }

    /// Removes the session stored under `key`, or every session, from the shared
    /// database.
    async fn forget(&self, key: Option<[u8; 32]>) {
        #[cfg(feature = "postgres")]
        if let Some(pg) = &self.shared {
            let id = key.map(hex::encode);
            let removed = pg
                .run_async(move |client| async move {
                    match id {
                        Some(id) => {
                            client
                                .execute("DELETE FROM console_sessions WHERE id = $1", &[&id])
                                .await
                        }
                        None => client.execute("DELETE FROM console_sessions", &[]).await,
                    }
                })
                .await;
            if let Err(e) = removed {
                tracing::warn!(
                    "console: could not end the session on the other nodes: [{}] {e}",
                    e.code()
                );
            }
        }
        #[cfg(not(feature = "postgres"))]
        let _ = key;
    }
}

/// What a token's sessions are stored under.
fn fingerprint(token: &str) -> [u8; 32] {
    Sha256::digest(format!("evo console session\n{token}").as_bytes()).into()
}

/// Sessions are kept by their id's SHA-256, so a lookup's timing says nothing about
/// the ids kept, and the shared database holds nothing a browser could send.
fn key(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

/// What a request may do: call skills and read, or also change the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Scope {
    /// Call skills and read what the server shows.
    Call,
    /// Also install, uninstall, update, grant and revoke.
    Admin,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_tokens_carry_128_bits_and_words_do_not() {
        for strong in [
            "0123456789abcdef0123456789abcdef", // openssl rand -hex 16
            "q9Yw3+Vb1kZ0sX8Lm2Nc4A==",         // openssl rand -base64 16
            "call-token-0123456789abcdef",
        ] {
            assert!(
                token_bits(strong) >= MIN_TOKEN_BITS,
                "{strong}: {}",
                token_bits(strong)
            );
        }
        for weak in [
            "a",
            "s3cret",
            "s3cret-console",
            "password123",
            &"a".repeat(64),
            &"ab".repeat(32),
        ] {
            assert!(
                token_bits(weak) < MIN_TOKEN_BITS,
                "{weak}: {}",
                token_bits(weak)
            );
        }
    }

    #[tokio::test]
    async fn wrong_guesses_are_throttled_per_client_and_a_right_token_is_not_let_through_early() {
        let sign_ins = SignIns::new(&[
            (Some("call-0123456789abcdef0123"), Scope::Call),
            (Some("admin-0123456789abcdef0123"), Scope::Admin),
        ]);
        let client = Some(IpAddr::from([127, 0, 0, 1]));
        let other = Some(IpAddr::from([127, 0, 0, 2]));
        for _ in 0..MAX_GUESSES {
            assert_eq!(
                sign_ins.sign_in(client, "wrong").await,
                Err(Refused::WrongToken)
            );
        }
        // Past the allowance even the right token waits: a guesser learns nothing.
        assert!(matches!(
            sign_ins.sign_in(client, "call-0123456789abcdef0123").await,
            Err(Refused::Throttled(wait)) if wait <= GUESS_WINDOW
        ));
        // Another client is not held up.
        let id = sign_ins
            .sign_in(other, "admin-0123456789abcdef0123")
            .await
            .unwrap();
        assert_eq!(sign_ins.scope(&id).await, Some(Scope::Admin));
    }

    #[tokio::test]
    async fn a_session_ends_on_sign_out_and_everywhere() {
        let token = "call-0123456789abcdef0123";
        let sign_ins = SignIns::new(&[(Some(token), Scope::Call)]);
        let one = sign_ins.sign_in(None, token).await.unwrap();
        let two = sign_ins.sign_in(None, token).await.unwrap();
        assert_ne!(one, two);
        assert_eq!(one.len(), 32, "128 random bits in hex");
        sign_ins.sign_out(&one).await;
        assert_eq!(sign_ins.scope(&one).await, None);
        assert_eq!(sign_ins.scope(&two).await, Some(Scope::Call));
        assert_eq!(sign_ins.sign_out_everywhere().await, 1);
        assert_eq!(sign_ins.scope(&two).await, None);
        assert_eq!(sign_ins.scope("made-up").await, None);
    }
}
