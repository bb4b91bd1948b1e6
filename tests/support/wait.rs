//! Waiting on state: every wait of the tests goes through here, and every one that times out fails
//! the same way, naming what was expected, the timeout, and the last state seen.
//!
//! | entry | re-checks | for |
//! | --- | --- | --- |
//! | [`wait_until`] | every [`POLL`] of tokio time (a check may itself await) | state in another process or behind a call |
//! | [`wait_until_woken`] | each time a given wake-up returns | state that changes with an event |
//! | [`wait_until_changed`] | on each change of a `watch` channel | state this process publishes |
//! | [`wait_until_blocking`] | every [`POLL`] of wall time, on the calling thread | tests that drive processes from plain threads |
//! | [`wait_until_blocking_every`] | every given interval | a check that opens a session each time |
//! | [`poll_blocking`] | as [`wait_until_blocking_every`], returning the last state instead of failing | a test that handles the timeout itself |
//! | [`next_matching`] | on each item a stream yields | events: watch streams, channels, feeds |
//!
//! A check answers with an [`Outcome`]: `bool`, `Option<T>` (`Some` ends the wait with `T`), or
//! `Result<T, Seen>` (`Err` carries the state so far, printed on a timeout; [`Later`] builds a
//! costly description only if it is printed).

use std::fmt::Debug;
use std::time::Duration;

use tokio::sync::watch;

/// How often a polling wait asks again.
pub const POLL: Duration = Duration::from_millis(50);

/// What a check answers: the wait ends with [`Outcome::Value`] or goes on, remembering what it saw.
pub trait Outcome {
    /// What the wait returns.
    type Value;
    /// What a timeout prints as the last state seen.
    type Seen: Debug;
    /// `Ok` ends the wait.
    fn into_result(self) -> Result<Self::Value, Self::Seen>;
}

impl Outcome for bool {
    type Value = ();
    type Seen = &'static str;
    fn into_result(self) -> Result<(), &'static str> {
        if self {
            Ok(())
        } else {
            Err("the condition did not hold")
        }
    }
}

impl<T> Outcome for Option<T> {
    type Value = T;
    type Seen = &'static str;
    fn into_result(self) -> Result<T, &'static str> {
        self.ok_or("the condition did not hold")
    }
}

impl<T, S: Debug> Outcome for Result<T, S> {
    type Value = T;
    type Seen = S;
    fn into_result(self) -> Result<T, S> {
        self
    }
}

/// A description of the state built only when a timeout prints it (a log dump, a server's log).
pub struct Later<F>(pub F);

impl<F: Fn() -> String> Debug for Later<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&(self.0)())
    }
}

/// Asks `check` every [`POLL`] until it holds; fails naming `what`, `within` and the last state
/// seen when it has not held after `within` of tokio time (a check that hangs is cut off too).
pub async fn wait_until<O: Outcome>(
    check: impl AsyncFnMut() -> O,
    what: &str,
    within: Duration,
) -> O::Value {
    wait_until_woken(check, async || tokio::time::sleep(POLL).await, what, within).await
}

/// [`wait_until`] that asks again each time `wake` returns (an event, a stream's next item, a
/// progress channel's change) instead of every [`POLL`].
pub async fn wait_until_woken<O: Outcome>(
    mut check: impl AsyncFnMut() -> O,
    mut wake: impl AsyncFnMut(),
    what: &str,
    within: Duration,
) -> O::Value {
    let mut seen = None;
    let waited = tokio::time::timeout(within, async {
        loop {
            match check().await.into_result() {
                Ok(value) => return value,
                Err(now) => seen = Some(now),
            }
            wake().await;
        }
    })
    .await;
    match waited {
        Ok(value) => value,
        Err(_) => timed_out(what, within, seen.as_ref().map(|s| s as &dyn Debug)),
    }
}

/// Checks the channel's value now and on each change until `check` holds; fails like
/// [`wait_until`] after `within` of tokio time, or when the sender is gone.
pub async fn wait_until_changed<V, O: Outcome>(
    rx: &mut watch::Receiver<V>,
    mut check: impl FnMut(&V) -> O,
    what: &str,
    within: Duration,
) -> O::Value {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let seen = match check(&rx.borrow_and_update()).into_result() {
            Ok(value) => return value,
            Err(seen) => seen,
        };
        match tokio::time::timeout_at(deadline, rx.changed()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => {
                panic!("the sender ended while waiting for: {what}; last seen: {seen:#?}")
            }
            Err(_) => timed_out(what, within, Some(&seen)),
        }
    }
}

/// Takes items from `next` (a channel's or stream's `recv`) until one satisfies `pred`, and returns
/// it; fails like [`wait_until`] after `within` of tokio time, listing every item passed over, or
/// when the stream ends.
pub async fn next_matching<T: Debug>(
    mut next: impl AsyncFnMut() -> Option<T>,
    mut pred: impl FnMut(&T) -> bool,
    what: &str,
    within: Duration,
) -> T {
    let mut seen = Vec::new();
    let found = tokio::time::timeout(within, async {
        while let Some(item) = next().await {
            if pred(&item) {
                return Some(item);
            }
            seen.push(item);
        }
        None
    })
    .await;
    match found {
        Ok(Some(item)) => item,
        Ok(None) => panic!(
            "the stream ended while waiting for: {what}
passed over: {seen:#?}"
        ),
        Err(_) => timed_out(what, within, Some(&seen)),
    }
}

/// [`wait_until`] for a plain thread: asks `check` every [`POLL`] of wall time.
pub fn wait_until_blocking<O: Outcome>(
    check: impl FnMut() -> O,
    what: &str,
    within: Duration,
) -> O::Value {
    wait_until_blocking_every(check, what, within, POLL)
}

/// [`wait_until_blocking`] asking every `every`: for a check that costs a session or a process.
pub fn wait_until_blocking_every<O: Outcome>(
    check: impl FnMut() -> O,
    what: &str,
    within: Duration,
    every: Duration,
) -> O::Value {
    poll_blocking(check, within, every).unwrap_or_else(|seen| timed_out(what, within, Some(&seen)))
}

/// Asks `check` every `every` of wall time for at most `within`, and returns the last state seen
/// instead of failing: for a wait whose timeout the test handles itself (a stall it then breaks).
pub fn poll_blocking<O: Outcome>(
    mut check: impl FnMut() -> O,
    within: Duration,
    every: Duration,
) -> Result<O::Value, O::Seen> {
    let deadline = std::time::Instant::now() + within;
    loop {
        let seen = match check().into_result() {
            Ok(value) => return Ok(value),
            Err(seen) => seen,
        };
        if std::time::Instant::now() >= deadline {
            return Err(seen);
        }
        std::thread::sleep(every);
    }
}

/// The one failure of every wait.
fn timed_out(what: &str, within: Duration, seen: Option<&dyn Debug>) -> ! {
    match seen {
        Some(seen) => {
            panic!("timed out after {within:?} waiting for: {what}\nlast seen: {seen:#?}")
        }
        None => panic!("timed out after {within:?} waiting for: {what} (the check never answered)"),
    }
}
