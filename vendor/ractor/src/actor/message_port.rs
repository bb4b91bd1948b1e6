// Copyright (c) Sean Lawlor
//
// This source code is licensed under both the MIT license found in the
// LICENSE-MIT file in the root directory of this source tree.

//! shardcron's patch: an actor's message port on `futures`' unbounded channel instead of tokio's.
//!
//! tokio's unbounded channel allocates, at its creation, its shared state (padded to cache lines:
//! 512 bytes) and a first block of 32 message slots (800 bytes for ractor's `MuxedMessage`):
//! 1.3 KB for every actor, most of it never used by an actor that holds a message or two at a
//! time. `futures`' channel is a lock-free linked queue: about 130 bytes at its creation (its
//! state and the queue's stub node), one node a message while it is queued. Its receiver wakes
//! through an `AtomicWaker`, as tokio's does.

use futures::channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};
use std::task::{Context, Poll};

use futures::StreamExt;

/// The sending side of a message port.
pub(crate) struct MessageSender<T>(UnboundedSender<T>);

/// The receiving side of a message port (the actor's processing loop).
pub(crate) struct MessageReceiver<T>(UnboundedReceiver<T>);

/// The error of a send to a closed port: the message back.
#[derive(Debug)]
pub(crate) struct MessageSendError<T>(pub(crate) T);

/// A message port.
pub(crate) fn message_port<T>() -> (MessageSender<T>, MessageReceiver<T>) {
    let (tx, rx) = unbounded();
    (MessageSender(tx), MessageReceiver(rx))
}

impl<T> MessageSender<T> {
    /// Queues `message`, or gives it back when the receiver is closed or gone.
    pub(crate) fn send(&self, message: T) -> Result<(), MessageSendError<T>> {
        self.0
            .unbounded_send(message)
            .map_err(|e| MessageSendError(e.into_inner()))
    }
}

impl<T> MessageReceiver<T> {
    /// The next message; `None` once every sender is gone (or the port closed) and the queue is
    /// empty. Cancel-safe: a message is taken from the queue only by the poll that returns it.
    #[cfg(test)]
    pub(crate) async fn recv(&mut self) -> Option<T> {
        self.0.next().await
    }

    /// The next message if there is one, `Ready(None)` once every sender is gone (or the port
    /// closed) and the queue is empty; otherwise `Pending`, and `cx`'s waker is woken by the next
    /// send.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.0.poll_next_unpin(cx)
    }

    /// The next message if one is queued.
    pub(crate) fn try_recv(&mut self) -> Result<T, ()> {
        self.0.try_recv().map_err(|_| ())
    }

    /// Refuses further sends; queued messages can still be taken.
    pub(crate) fn close(&mut self) {
        self.0.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[crate::concurrency::test]
    async fn messages_come_out_in_the_order_they_went_in() {
        let (tx, mut rx) = message_port();
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
        let (tx, mut rx) = message_port();
        let waiter = crate::concurrency::spawn(async move { rx.recv().await });
        crate::concurrency::sleep(crate::concurrency::Duration::from_millis(10)).await;
        tx.send(7).unwrap();
        assert_eq!(waiter.await.unwrap(), Some(7));
    }

    #[crate::concurrency::test]
    async fn a_closed_port_refuses_sends_and_keeps_what_it_queued() {
        let (tx, mut rx) = message_port();
        tx.send(1).unwrap();
        rx.close();
        assert_eq!(tx.send(2).unwrap_err().0, 2);
        assert_eq!(rx.try_recv(), Ok(1));
        assert_eq!(rx.recv().await, None);
    }

    #[crate::concurrency::test]
    async fn the_receiver_ends_once_the_sender_is_gone_and_the_queue_is_empty() {
        let (tx, mut rx) = message_port();
        tx.send(1).unwrap();
        drop(tx);
        assert_eq!(rx.recv().await, Some(1));
        assert_eq!(rx.recv().await, None);
    }
}
