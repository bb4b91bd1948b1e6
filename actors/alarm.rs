//! The TriggerActor's alarm: the one timer of a node's schedule, armed for the earliest instant
//! and answered by a `TriggerMsg::Tick` message.
//!
//! tokio's timer wheel has a resolution of one millisecond and rounds every deadline up to the next
//! tick, so a fire scheduled for a whole second starts up to a millisecond or two late. On the
//! system clock the alarm instead waits on one OS thread of its own (`recv_timeout`, a futex wait
//! with nanosecond deadlines), which wakes within tens of microseconds: the scheduler's own clock,
//! like tokio's timer driver, not a blocking call inside an actor. Under a tokio-driven clock
//! (tests on paused time) it arms tokio timers, so `tokio::time::advance` moves it.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use ractor::ActorRef;
use tokio::task::JoinHandle;

use super::mail::TriggerMsg;

/// Rings `TriggerMsg::Tick(generation)` once the armed delay has passed.
#[derive(Debug)]
pub(crate) enum Alarm {
    /// An OS thread waiting for the deadline; dropping the sender ends it.
    Thread(mpsc::Sender<Option<(Instant, u64)>>),
    /// A tokio timer (the one armed last).
    Tokio(Option<JoinHandle<Result<(), ractor::MessagingErr<TriggerMsg>>>>),
}

impl Alarm {
    /// An alarm for `target`, on its own thread when `real_time`.
    pub(crate) fn new(target: &ActorRef<TriggerMsg>, real_time: bool) -> Self {
        if !real_time {
            return Self::Tokio(None);
        }
        let (tx, rx) = mpsc::channel();
        let target = target.clone();
        let spawned = std::thread::Builder::new()
            .name("shardcron-alarm".into())
            .spawn(move || ring(&rx, &target));
        match spawned {
            Ok(_) => Self::Thread(tx),
            Err(e) => {
                tracing::warn!(error = %e, "no alarm thread; using tokio's millisecond timers");
                Self::Tokio(None)
            }
        }
    }

    /// Arms the alarm to ring `generation` after `delay`, replacing what was armed.
    pub(crate) fn arm(&mut self, target: &ActorRef<TriggerMsg>, delay: Duration, generation: u64) {
        match self {
            Self::Thread(tx) => {
                let _ = tx.send(Some((Instant::now() + delay, generation)));
            }
            Self::Tokio(timer) => {
                if let Some(t) = timer.take() {
                    t.abort();
                }
                *timer = Some(target.send_after(delay, move || TriggerMsg::Tick(generation)));
            }
        }
    }

    /// Disarms the alarm.
    pub(crate) fn disarm(&mut self) {
        match self {
            Self::Thread(tx) => {
                let _ = tx.send(None);
            }
            Self::Tokio(timer) => {
                if let Some(t) = timer.take() {
                    t.abort();
                }
            }
        }
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        self.disarm();
    }
}

/// The alarm thread: waits for the armed deadline or a new arming, whichever comes first; ends
/// when the alarm is dropped or the actor is gone.
fn ring(rx: &mpsc::Receiver<Option<(Instant, u64)>>, target: &ActorRef<TriggerMsg>) {
    let mut armed: Option<(Instant, u64)> = None;
    loop {
        let next = match armed {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some((at, generation)) => {
                let now = Instant::now();
                if now >= at {
                    armed = None;
                    if target.send_message(TriggerMsg::Tick(generation)).is_err() {
                        return;
                    }
                    continue;
                }
                rx.recv_timeout(at - now)
            }
        };
        match next {
            Ok(arming) => armed = arming,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}
