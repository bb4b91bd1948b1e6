// Copyright (c) Sean Lawlor
//
// This source code is licensed under both the MIT license found in the
// LICENSE-MIT file in the root directory of this source tree.

//! shardcron's patch: an unbounded single-consumer port that allocates no queue until its first
//! message, for an actor's supervision port.
//!
//! tokio's unbounded channel allocates its shared state (512 bytes) and its first block of 32
//! slots when it is created: for an 80-byte `SupervisionEvent` about 3.1 KB for every actor,
//! though an actor without children or monitored actors never receives a supervision event. This
//! port keeps a `VecDeque` behind a mutex (empty until used) and an `AtomicWaker`: about 100
//! bytes. Its receiver is polled (`poll_recv`), so that the actor's loop waits on its ports with
//! no future of theirs to keep. The
//! message port is not this one (bench scenario 1's p99 doubled with this port in its place) but
//! `message_port`, on `futures`' lock-free channel.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::task::AtomicWaker;

struct Shared<T> {
    queue: Mutex<VecDeque<T>>,
    waker: AtomicWaker,
    /// The receiver closed or dropped: sends fail.
    receiver_closed: AtomicBool,
    /// The sender dropped: `recv` ends once the queue is empty.
    sender_dropped: AtomicBool,
}

/// The sending side (one sender: the actor's properties).
pub(crate) struct LazySender<T> {
    shared: Arc<Shared<T>>,
}

/// The receiving side (the actor's processing loop).
pub(crate) struct LazyReceiver<T> {
    shared: Arc<Shared<T>>,
}

/// The error of a send to a closed port: the message back.
#[derive(Debug)]
pub(crate) struct LazySendError<T>(pub(crate) T);

/// A port whose queue is allocated at its first message.
pub(crate) fn lazy_port<T>() -> (LazySender<T>, LazyReceiver<T>) {
    let shared = Arc::new(Shared {
        queue: Mutex::new(VecDeque::new()),
        waker: AtomicWaker::new(),
        receiver_closed: AtomicBool::new(false),
        sender_dropped: AtomicBool::new(false),
    });
    (
        LazySender {
            shared: shared.clone(),
        },
        LazyReceiver { shared },
    )
}

fn lock<T>(shared: &Shared<T>) -> std::sync::MutexGuard<'_, VecDeque<T>> {
    // A panic while the lock is held cannot leave the queue half-changed (push/pop only).
    shared
        .queue
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<T> LazySender<T> {
    /// Queues `message`, or gives it back when the receiver is closed.
    pub(crate) fn send(&self, message: T) -> Result<(), LazySendError<T>> {
        if self.shared.receiver_closed.load(Ordering::Acquire) {
            return Err(LazySendError(message));
        }
        lock(&self.shared).push_back(message);
        self.shared.waker.wake();
        Ok(())
    }
}

impl<T> Drop for LazySender<T> {
    fn drop(&mut self) {
        self.shared.sender_dropped.store(true, Ordering::Release);
        self.shared.waker.wake();
    }
}

impl<T> LazyReceiver<T> {
    /// The next message; `None` once the sender is gone and the queue is empty. Cancel-safe: a
    /// message is taken from the queue only by the call that returns it.
    #[cfg(test)]
    pub(crate) async fn recv(&mut self) -> Option<T> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// The next message if there is one, `Ready(None)` once the sender is gone and the queue is
    /// empty; otherwise `Pending`, and `cx`'s waker is woken by the next send or the sender's
    /// drop.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if let Some(message) = lock(&self.shared).pop_front() {
            return Poll::Ready(Some(message));
        }
        // Registered before the second look, so that a send between the two is not missed.
        self.shared.waker.register(cx.waker());
        if let Some(message) = lock(&self.shared).pop_front() {
            return Poll::Ready(Some(message));
        }
        if self.shared.sender_dropped.load(Ordering::Acquire) {
            // A message queued just before the drop is still taken.
            return Poll::Ready(lock(&self.shared).pop_front());
        }
        Poll::Pending
    }

    /// The next message if one is queued.
    pub(crate) fn try_recv(&mut self) -> Result<T, ()> {
        lock(&self.shared).pop_front().ok_or(())
    }

    /// Refuses further sends; queued messages can still be taken.
    pub(crate) fn close(&mut self) {
        self.shared.receiver_closed.store(true, Ordering::Release);
    }
}

impl<T> Drop for LazyReceiver<T> {
    fn drop(&mut self) {
        self.shared.receiver_closed.store(true, Ordering::Release);
    }
}

impl<T> From<LazySendError<T>> for crate::MessagingErr<T> {
    fn from(e: LazySendError<T>) -> Self {
        Self::SendErr(e.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[crate::concurrency::test]
    async fn messages_come_out_in_the_order_they_went_in() {
        let (tx, mut rx) = lazy_port();
        for n in 0..100 {
            tx.send(n).unwrap();
        }
        for n in 0..100 {
            assert_eq!(rx.recv().await, Some(n));
        }
        assert!(rx.try_recv().is_err());
    }

    #[crate::concurrency::test]
    async fn a_waiting_receiver_wakes_at_a_send_from_another_task() {
        let (tx, mut rx) = lazy_port();
        let waiter = crate::concurrency::spawn(async move { rx.recv().await });
        crate::concurrency::sleep(crate::concurrency::Duration::from_millis(10)).await;
        tx.send(7).unwrap();
        assert_eq!(waiter.await.unwrap(), Some(7));
    }

    #[crate::concurrency::test]
    async fn a_receive_that_is_cancelled_loses_no_message() {
        let (tx, mut rx) = lazy_port::<u32>();
        // Polled once and dropped while waiting, as a losing branch of a select is.
        let pending =
            crate::concurrency::timeout(crate::concurrency::Duration::from_millis(5), rx.recv())
                .await;
        assert!(pending.is_err());
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        assert_eq!(rx.recv().await, Some(1));
        assert_eq!(rx.recv().await, Some(2));
    }

    #[crate::concurrency::test]
    async fn a_closed_receiver_refuses_sends_and_a_dropped_sender_ends_the_stream() {
        let (tx, mut rx) = lazy_port();
        tx.send(1).unwrap();
        drop(tx);
        assert_eq!(rx.recv().await, Some(1));
        assert_eq!(rx.recv().await, None);

        let (tx, mut rx) = lazy_port();
        rx.close();
        assert_eq!(tx.send(5).unwrap_err().0, 5);
        drop(rx);
        assert!(tx.send(6).is_err());
    }
}
