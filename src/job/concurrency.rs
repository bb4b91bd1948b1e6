//! The per-job limit on items running at once on this instance
//! ([`ItemConcurrency`](crate::config::ItemConcurrency)): [`Admission`] decides who runs and who
//! waits (pure, table-tested), [`ItemGate`] carries the decisions out for the item tasks of every
//! run of the job.
//!
//! An item waits inside its own task (never in an actor's handler) until the gate admits it, in
//! arrival order. A waiting item whose cancellation fires leaves the queue without running.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::oneshot;

/// Who runs and who waits: a count of running items, a FIFO of waiting tickets and the limit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Admission {
    limit: Option<usize>,
    running: usize,
    waiting: VecDeque<u64>,
    next: u64,
}

impl Admission {
    /// An admission with `limit` (`None`: no limit).
    pub fn new(limit: Option<usize>) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    /// An item asks to run: its ticket, and whether it runs now (else it waits its turn).
    pub fn request(&mut self) -> (u64, bool) {
        self.next += 1;
        let ticket = self.next;
        if self.waiting.is_empty() && self.has_room() {
            self.running += 1;
            (ticket, true)
        } else {
            self.waiting.push_back(ticket);
            (ticket, false)
        }
    }

    /// A running item ended: the tickets that run now.
    pub fn release(&mut self) -> Vec<u64> {
        self.running = self.running.saturating_sub(1);
        self.pump()
    }

    /// A waiting ticket gave up (its item was cancelled): whether it was still waiting.
    pub fn withdraw(&mut self, ticket: u64) -> bool {
        let before = self.waiting.len();
        self.waiting.retain(|t| *t != ticket);
        before != self.waiting.len()
    }

    /// The limit changed (config applied live): the tickets that run now.
    pub fn set_limit(&mut self, limit: Option<usize>) -> Vec<u64> {
        self.limit = limit;
        self.pump()
    }

    /// Items running now.
    pub fn running(&self) -> usize {
        self.running
    }

    /// Tickets waiting, first first.
    pub fn waiting(&self) -> impl Iterator<Item = u64> + '_ {
        self.waiting.iter().copied()
    }

    fn has_room(&self) -> bool {
        self.limit.is_none_or(|l| self.running < l)
    }

    fn pump(&mut self) -> Vec<u64> {
        let mut admitted = Vec::new();
        while self.has_room() {
            let Some(t) = self.waiting.pop_front() else {
                break;
            };
            self.running += 1;
            admitted.push(t);
        }
        admitted
    }
}

#[derive(Debug, Default)]
struct GateState {
    admission: Admission,
    /// Waiting tickets' wake-ups. A vector, not a map: it is empty but for items beyond the
    /// limit, and a gate exists for every job (an empty `HashMap` is twice its size).
    wakers: Vec<(u64, oneshot::Sender<()>)>,
}

impl GateState {
    fn take_waker(&mut self, ticket: u64) -> Option<oneshot::Sender<()>> {
        let at = self.wakers.iter().position(|(t, _)| *t == ticket)?;
        let (_, waker) = self.wakers.remove(at);
        if self.wakers.is_empty() {
            self.wakers = Vec::new();
        }
        Some(waker)
    }

    fn wake(&mut self, admitted: Vec<u64>) {
        for t in admitted {
            if let Some(w) = self.take_waker(t) {
                // A receiver gone (its item cancelled) is handled by its guard: it releases.
                let _ = w.send(());
            }
        }
    }
}

/// One job's gate, shared by its run tasks. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct ItemGate(Arc<Mutex<GateState>>);

/// A running item's place; dropping it lets the next waiting item in.
#[derive(Debug)]
pub struct Permit(ItemGate);

impl Drop for Permit {
    fn drop(&mut self) {
        let mut s = self.0 .0.lock();
        let admitted = s.admission.release();
        s.wake(admitted);
    }
}

/// An item's place: running already, or waiting its turn.
#[derive(Debug)]
pub enum Entry {
    /// It may run.
    Admitted(Permit),
    /// It waits; [`Entry::admitted`] completes at its turn.
    Waiting(Waiting, oneshot::Receiver<()>),
}

impl Entry {
    /// Completes when the item may run.
    pub async fn admitted(self) -> Permit {
        match self {
            Self::Admitted(p) => p,
            Self::Waiting(mut waiting, rx) => {
                // The sender lives in the gate as long as the ticket waits; it is only dropped
                // unsent by `Waiting::drop` itself.
                let _ = rx.await;
                waiting.admitted = true;
                Permit(waiting.gate.clone())
            }
        }
    }
}

/// A ticket's waiting, undone if the item gives up.
#[derive(Debug)]
pub struct Waiting {
    gate: ItemGate,
    ticket: u64,
    admitted: bool,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.admitted {
            return;
        }
        let mut s = self.gate.0.lock();
        s.take_waker(self.ticket);
        if !s.admission.withdraw(self.ticket) {
            // Admitted between the wake and this drop: give the place to the next one.
            let admitted = s.admission.release();
            s.wake(admitted);
        }
    }
}

impl ItemGate {
    /// A gate with `limit` (`None`: no limit).
    pub fn new(limit: Option<usize>) -> Self {
        Self(Arc::new(Mutex::new(GateState {
            admission: Admission::new(limit),
            wakers: Vec::new(),
        })))
    }

    /// Changes the limit; waiting items that now fit start.
    pub fn set_limit(&self, limit: Option<usize>) {
        let mut s = self.0.lock();
        let admitted = s.admission.set_limit(limit);
        s.wake(admitted);
    }

    /// Takes this item's place in the queue now (so items enter in the order they ask), to be
    /// awaited with [`Entry::admitted`]. Dropping the entry before admission leaves the queue.
    pub fn enter(&self) -> Entry {
        let mut s = self.0.lock();
        let (ticket, now) = s.admission.request();
        if now {
            return Entry::Admitted(Permit(self.clone()));
        }
        let (tx, rx) = oneshot::channel();
        s.wakers.push((ticket, tx));
        Entry::Waiting(
            Waiting {
                gate: self.clone(),
                ticket,
                admitted: false,
            },
            rx,
        )
    }

    /// Items running and waiting now.
    pub fn load(&self) -> (usize, usize) {
        let s = self.0.lock();
        (s.admission.running(), s.admission.waiting().count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One step of a table: what happens, and the tickets it admits.
    enum Step {
        Request(bool),
        Release(&'static [u64]),
        Withdraw(u64, bool),
        Limit(Option<usize>, &'static [u64]),
    }

    #[test]
    fn items_beyond_the_limit_wait_in_arrival_order_and_a_live_limit_change_applies_at_once() {
        use Step::*;
        let tables: [(Option<usize>, &[Step]); 4] = [
            // SINGLE_THREAD: one at a time, the rest in order.
            (
                Some(1),
                &[
                    Request(true),
                    Request(false),
                    Request(false),
                    Release(&[2]),
                    Release(&[3]),
                    Release(&[]),
                ],
            ),
            // A waiting item cancelled leaves the queue; the next one keeps its place.
            (
                Some(2),
                &[
                    Request(true),
                    Request(true),
                    Request(false),
                    Request(false),
                    Withdraw(3, true),
                    Release(&[4]),
                    Withdraw(4, false),
                ],
            ),
            // Raised live: waiting items start at once, oldest first.
            (
                Some(1),
                &[
                    Request(true),
                    Request(false),
                    Request(false),
                    Limit(Some(3), &[2, 3]),
                    Limit(None, &[]),
                    Request(true),
                ],
            ),
            // Lowered live: running items go on, none starts until below the new limit.
            (
                None,
                &[
                    Request(true),
                    Request(true),
                    Request(true),
                    Limit(Some(1), &[]),
                    Request(false),
                    Release(&[]),
                    Release(&[]),
                    Release(&[4]),
                ],
            ),
        ];
        for (n, (limit, steps)) in tables.iter().enumerate() {
            let mut a = Admission::new(*limit);
            for (s, step) in steps.iter().enumerate() {
                let at = format!("table {n} step {s}");
                match step {
                    Request(now) => assert_eq!(a.request().1, *now, "{at}"),
                    Release(want) => assert_eq!(a.release(), *want, "{at}"),
                    Withdraw(t, was) => assert_eq!(a.withdraw(*t), *was, "{at}"),
                    Limit(l, want) => assert_eq!(a.set_limit(*l), *want, "{at}"),
                }
            }
        }
    }

    #[tokio::test]
    async fn a_cancelled_waiting_item_gives_its_turn_to_the_next() {
        let gate = ItemGate::new(Some(1));
        let first = gate.enter().admitted().await;
        let second = gate.enter();
        let third = tokio::spawn(gate.enter().admitted());
        assert_eq!(gate.load(), (1, 2));
        drop(second);
        assert_eq!(gate.load(), (1, 1), "the cancelled one left the queue");
        drop(first);
        let third = third.await.expect("third admitted");
        assert_eq!(gate.load(), (1, 0));
        drop(third);
        assert_eq!(gate.load(), (0, 0));
    }
}
