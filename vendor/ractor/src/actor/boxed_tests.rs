// Copyright (c) Sean Lawlor
//
// This source code is licensed under both the MIT license found in the
// LICENSE-MIT file in the root directory of this source tree.

//! shardcron's patch: an actor that boxes each message's handling (`Actor::BOX_EACH_MESSAGE`)
//! behaves as any other: messages in order, a stop after them, a kill that interrupts a handling,
//! and its children's supervision events.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::concurrency::{sleep, Duration};
use crate::{Actor, ActorProcessingErr, ActorRef, ActorStatus, SupervisionEvent};

struct Boxed {
    seen: Arc<AtomicU32>,
}

enum Msg {
    Add(u32),
    Hang,
}
#[cfg(feature = "cluster")]
impl crate::Message for Msg {}

#[cfg_attr(feature = "async-trait", crate::async_trait)]
impl Actor for Boxed {
    type Msg = Msg;
    type State = u32;
    type Arguments = ();
    const BOX_EACH_MESSAGE: bool = true;

    async fn pre_start(&self, _: ActorRef<Msg>, _: ()) -> Result<u32, ActorProcessingErr> {
        Ok(0)
    }

    async fn handle(
        &self,
        _: ActorRef<Msg>,
        msg: Msg,
        sum: &mut u32,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            Msg::Add(n) => {
                // The handling waits once, so that it is a boxed future that is polled again.
                sleep(Duration::from_millis(1)).await;
                *sum = *sum * 10 + n;
                self.seen.store(*sum, Ordering::SeqCst);
            }
            Msg::Hang => sleep(Duration::from_secs(3600)).await,
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _: ActorRef<Msg>,
        evt: SupervisionEvent,
        sum: &mut u32,
    ) -> Result<(), ActorProcessingErr> {
        if let SupervisionEvent::ActorTerminated(..) = evt {
            *sum += 1000;
            self.seen.store(*sum, Ordering::SeqCst);
        }
        Ok(())
    }
}

#[crate::concurrency::test]
async fn a_boxing_actor_handles_its_messages_in_order_and_stops_after_them() {
    let seen = Arc::new(AtomicU32::new(0));
    let (actor, handle) = Actor::spawn(None, Boxed { seen: seen.clone() }, ())
        .await
        .unwrap();
    for n in 1..=3 {
        actor.cast(Msg::Add(n)).unwrap();
    }
    actor.drain().unwrap();
    handle.await.unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 123);
    assert_eq!(actor.get_status(), ActorStatus::Stopped);
}

#[crate::concurrency::test]
async fn a_kill_interrupts_a_boxed_handling() {
    let seen = Arc::new(AtomicU32::new(0));
    let (actor, handle) = Actor::spawn(None, Boxed { seen }, ()).await.unwrap();
    actor.cast(Msg::Hang).unwrap();
    sleep(Duration::from_millis(10)).await;
    actor.kill();
    crate::concurrency::timeout(Duration::from_secs(5), handle)
        .await
        .expect("the kill ended the hung handling")
        .unwrap();
}

#[crate::concurrency::test]
async fn a_boxing_supervisor_hears_its_child_end() {
    let seen = Arc::new(AtomicU32::new(0));
    let (parent, parent_handle) = Actor::spawn(None, Boxed { seen: seen.clone() }, ())
        .await
        .unwrap();
    let (child, child_handle) = Actor::spawn_linked(
        None,
        Boxed {
            seen: Arc::new(AtomicU32::new(0)),
        },
        (),
        parent.get_cell(),
    )
    .await
    .unwrap();
    child.stop(None);
    child_handle.await.unwrap();
    crate::common_test::periodic_check(
        || seen.load(Ordering::SeqCst) == 1000,
        Duration::from_secs(5),
    )
    .await;
    parent.stop(None);
    parent_handle.await.unwrap();
}
