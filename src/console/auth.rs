//! Who a console request comes from: the tokens and their roles, the login sessions behind the
//! page's cookie, and the delay that slows a client guessing tokens.
//!
//! - A token is compared in constant time (the SHA-256 digests of the given and the configured
//!   token, so neither their contents nor their lengths show in the time taken).
//! - A login (`POST /api/login` with `Authorization: Bearer TOKEN`) opens a session: a random
//!   256-bit id, sent back as an `HttpOnly; SameSite=Strict` cookie. The cookie never holds the
//!   token; at most [`MAX_SESSIONS`] sessions live at once, each for [`SESSION_TTL`].
//! - Every failed attempt doubles the wait of the client's next attempt (from [`FIRST_DELAY`] up
//!   to [`MAX_DELAY`]), counted per IP address in a table of at most [`MAX_CLIENTS`] entries; the
//!   wait is a `tokio` sleep in the request's future, and a success forgets the client.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use crate::secret::Secret;

/// Sessions alive at once; the oldest is dropped to make room.
pub(crate) const MAX_SESSIONS: usize = 1024;
/// How long a session lasts after its login.
pub(crate) const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Clients whose failures are remembered; the stalest is forgotten to make room.
pub(crate) const MAX_CLIENTS: usize = 4096;
/// The wait after a first failure.
pub(crate) const FIRST_DELAY: Duration = Duration::from_millis(250);
/// The longest wait between two attempts of one client.
pub(crate) const MAX_DELAY: Duration = Duration::from_secs(30);
/// Failures are forgotten after this long without one.
const FORGET_AFTER: Duration = Duration::from_secs(15 * 60);

/// What a request may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Reads everything the console shows.
    Viewer,
    /// Also writes: edits configs, triggers, disables, shuts down.
    Operator,
}

impl Role {
    /// The role's name in answers and the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
        }
    }
}

/// Who a request comes from, as the audit log names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Principal {
    /// The token's name (`operator`, `viewer`) or `anonymous` (no token configured).
    pub(crate) name: &'static str,
    /// What it may do.
    pub(crate) role: Role,
}

/// The configured tokens. `Debug` prints `***` for each.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tokens {
    operator: Option<Secret<[u8; 32]>>,
    viewer: Option<Secret<[u8; 32]>>,
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Equal in time independent of where the inputs differ.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Tokens {
    /// From the operator's and the viewer's token (either may be absent).
    pub(crate) fn new(operator: Option<&Secret<String>>, viewer: Option<&Secret<String>>) -> Self {
        Self {
            operator: operator.map(|t| Secret::new(digest(t.expose()))),
            viewer: viewer.map(|t| Secret::new(digest(t.expose()))),
        }
    }

    /// Whether any token is configured (else every request is anonymous).
    pub(crate) fn any(&self) -> bool {
        self.operator.is_some() || self.viewer.is_some()
    }

    /// Whose token `given` is. Both are compared, whatever the first answer.
    pub(crate) fn check(&self, given: &str) -> Option<Principal> {
        let given = digest(given);
        let operator = self
            .operator
            .as_ref()
            .is_some_and(|t| same(t.expose(), &given));
        let viewer = self
            .viewer
            .as_ref()
            .is_some_and(|t| same(t.expose(), &given));
        if operator {
            Some(Principal {
                name: "operator",
                role: Role::Operator,
            })
        } else if viewer {
            Some(Principal {
                name: "viewer",
                role: Role::Viewer,
            })
        } else {
            None
        }
    }
}

/// The open login sessions, by id.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    open: Mutex<HashMap<String, (Principal, Instant)>>,
}

impl Sessions {
    /// Opens a session for `who`; returns its id (64 hex digits).
    pub(crate) fn open(&self, who: Principal) -> String {
        let mut bytes = [0u8; 32];
        crate::secret::random_bytes(&mut bytes);
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let now = Instant::now();
        let mut open = self.open.lock();
        open.retain(|_, (_, expires)| *expires > now);
        if open.len() >= MAX_SESSIONS {
            let oldest = open
                .iter()
                .min_by_key(|(_, (_, expires))| *expires)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                open.remove(&oldest);
            }
        }
        open.insert(id.clone(), (who, now + SESSION_TTL));
        id
    }

    /// Who session `id` belongs to, when it is open.
    pub(crate) fn get(&self, id: &str) -> Option<Principal> {
        let open = self.open.lock();
        let (who, expires) = open.get(id)?;
        (*expires > Instant::now()).then(|| who.clone())
    }

    /// Ends session `id`.
    pub(crate) fn close(&self, id: &str) {
        self.open.lock().remove(id);
    }
}

/// One client's failures.
#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    /// The earliest instant its next attempt is checked.
    next: Instant,
    last: Instant,
}

/// The per-client delay between attempts after failures.
#[derive(Debug, Default)]
pub(crate) struct Throttle {
    clients: Mutex<HashMap<IpAddr, Failures>>,
}

/// The wait after `count` failures: [`FIRST_DELAY`] doubled per further failure, at most
/// [`MAX_DELAY`].
pub(crate) fn delay_after(count: u32) -> Duration {
    if count == 0 {
        return Duration::ZERO;
    }
    FIRST_DELAY
        .saturating_mul(1u32 << (count - 1).min(16))
        .min(MAX_DELAY)
}

impl Throttle {
    /// How long `client` must wait before its attempt is checked; reserves that turn, so
    /// attempts made in parallel are spaced too. `None` when the wait would exceed
    /// [`MAX_DELAY`] (refuse at once rather than hold a connection).
    pub(crate) fn turn(&self, client: IpAddr) -> Option<Duration> {
        let now = Instant::now();
        let mut clients = self.clients.lock();
        let Some(f) = clients.get_mut(&client) else {
            return Some(Duration::ZERO);
        };
        let at = f.next.max(now);
        if at - now > MAX_DELAY {
            return None;
        }
        f.next = at + delay_after(f.count);
        Some(at - now)
    }

    /// Counts a failed attempt of `client`.
    pub(crate) fn failed(&self, client: IpAddr) {
        let now = Instant::now();
        let mut clients = self.clients.lock();
        if !clients.contains_key(&client) && clients.len() >= MAX_CLIENTS {
            clients.retain(|_, f| now.duration_since(f.last) < FORGET_AFTER);
            if clients.len() >= MAX_CLIENTS {
                let stalest = clients
                    .iter()
                    .min_by_key(|(_, f)| f.last)
                    .map(|(ip, _)| *ip);
                if let Some(ip) = stalest {
                    clients.remove(&ip);
                }
            }
        }
        let f = clients.entry(client).or_insert(Failures {
            count: 0,
            next: now,
            last: now,
        });
        if now.duration_since(f.last) >= FORGET_AFTER {
            f.count = 0;
        }
        f.count = f.count.saturating_add(1);
        f.last = now;
        f.next = f.next.max(now + delay_after(f.count));
    }

    /// Forgets `client`'s failures after a success.
    pub(crate) fn succeeded(&self, client: IpAddr) {
        self.clients.lock().remove(&client);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_token_has_its_role_and_a_wrong_one_none() {
        let tokens = Tokens::new(
            Some(&Secret::new("op".to_owned())),
            Some(&Secret::new("view".to_owned())),
        );
        assert_eq!(tokens.check("op").map(|p| p.role), Some(Role::Operator));
        assert_eq!(tokens.check("view").map(|p| p.role), Some(Role::Viewer));
        assert_eq!(tokens.check("o"), None);
        assert_eq!(tokens.check(""), None);
        assert!(!format!("{tokens:?}").contains("op\""));
        assert!(!Tokens::default().any());
    }

    #[test]
    fn the_delay_doubles_per_failure_up_to_its_cap() {
        assert_eq!(delay_after(0), Duration::ZERO);
        assert_eq!(delay_after(1), FIRST_DELAY);
        assert_eq!(delay_after(3), FIRST_DELAY * 4);
        assert_eq!(delay_after(40), MAX_DELAY);
    }

    #[tokio::test(start_paused = true)]
    async fn failed_attempts_space_a_clients_next_ones_and_a_success_forgets_them() {
        let throttle = Throttle::default();
        let ip: IpAddr = "10.0.0.9".parse().unwrap();
        assert_eq!(throttle.turn(ip), Some(Duration::ZERO));
        throttle.failed(ip);
        throttle.failed(ip);
        assert_eq!(throttle.turn(ip), Some(FIRST_DELAY * 2));
        // A second attempt made meanwhile waits for the turn after.
        assert_eq!(throttle.turn(ip), Some(FIRST_DELAY * 4));
        let other: IpAddr = "10.0.0.8".parse().unwrap();
        assert_eq!(throttle.turn(other), Some(Duration::ZERO));
        throttle.succeeded(ip);
        assert_eq!(throttle.turn(ip), Some(Duration::ZERO));
    }

    #[test]
    fn the_client_table_stays_bounded() {
        let throttle = Throttle::default();
        for i in 0..(MAX_CLIENTS as u32 + 10) {
            throttle.failed(IpAddr::from(i.to_be_bytes()));
        }
        assert_eq!(throttle.clients.lock().len(), MAX_CLIENTS);
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_belongs_to_its_login_until_it_closes_or_expires() {
        let sessions = Sessions::default();
        let who = Principal {
            name: "viewer",
            role: Role::Viewer,
        };
        let id = sessions.open(who.clone());
        assert_eq!(id.len(), 64);
        assert_eq!(sessions.get(&id), Some(who.clone()));
        assert_eq!(sessions.get("nope"), None);
        sessions.close(&id);
        assert_eq!(sessions.get(&id), None);
        let id = sessions.open(who);
        tokio::time::advance(SESSION_TTL).await;
        assert_eq!(sessions.get(&id), None);
    }
}
