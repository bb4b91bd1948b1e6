//! The machine's link to its session and its `instances/{me}` node: disconnection, pauses, the
//! session check before a late fire, and what a deletion of this instance's node means.
//!
//! Whether the node was removed by an operator is decided from facts the mirror holds, never by
//! asking the registry: the deletion is an operator's only when the node removed was owned by this
//! very session (the mirror keeps the ephemeral owner of a node it removes), the mirror had shown
//! it as this session's and the link is up. A deletion of an older
//! session's node (a stale event of a re-list, or the old node expiring after a quick restart),
//! a deletion seen while disconnected, or one of a node never seen: in doubt, the node is
//! created again and the job keeps running, as it does after a deletion this machine's own
//! take-over made (counted, since a take-over judged on a lagging mirror may remove this session's
//! own node and create it again). A node an older session of this instance still holds
//! is taken over at once (deleted and created in one multi-op), never waited for, unless this
//! session's own create already succeeded (`Written`: registration replaced the older node
//! itself, and the mirror has not caught up).

use crate::model::{CreateMode, Op, SessionState};
use crate::paths::JobNode;

use super::{
    Command, Facts, Held, JobMachine, Link, Outcome, Purpose, Registration, SkipReason, WriteMode,
};

impl JobMachine {
    pub(super) fn session_changed(
        &mut self,
        state: SessionState,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        match state {
            // The first sign of disconnection: nothing starts from now on.
            SessionState::Disconnected => {
                self.link = Link::Disconnected;
                self.cancel_gated(out);
            }
            SessionState::Connected => {
                // Reconnected within the timeout: the same session lives.
                self.link = Link::Connected;
                self.release_held(facts, out);
                self.release_gated(out);
            }
            _ => {
                // Expired or closed: this session's subtree is about to be replaced.
                self.link = Link::Disconnected;
                if !self.runs.is_empty() {
                    out.push(Command::CancelAll);
                }
                self.cancel_gated(out);
            }
        }
    }

    /// The node was not scheduled for `for_`: past the fencing budget a survivor may have taken
    /// the running items over, so they stop before anything else; past the late-fire bound the
    /// session is checked before the next start.
    pub(super) fn paused(&mut self, for_: std::time::Duration, out: &mut Vec<Command>) {
        if for_ >= self.fence.pause_cancels_after() && !self.runs.is_empty() {
            out.push(Command::CancelAll);
        }
        if for_ > self.fence.late_fire_bound() && self.link == Link::Connected {
            self.link = Link::Suspect;
            out.push(Command::CheckSession);
        }
    }

    pub(super) fn session_checked(
        &mut self,
        alive: bool,
        facts: &dyn Facts,
        out: &mut Vec<Command>,
    ) {
        if alive {
            if self.link == Link::Suspect {
                self.link = Link::Connected;
            }
            self.release_held(facts, out);
            self.release_gated(out);
        } else {
            // No answer in time: the session may be gone (then the RegistryActor replaces this
            // subtree) or the registry slow. Nothing starts on it; the next fire checks again.
            if self.link == Link::Connected {
                self.link = Link::Suspect;
            }
            if !self.runs.is_empty() {
                out.push(Command::CancelAll);
            }
            self.cancel_gated(out);
            if self.held.take().is_some() {
                self.skipped(SkipReason::SessionLost, 0, out);
            }
        }
    }

    /// Runs the fire held for the session check, if the link is up.
    fn release_held(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        if self.link != Link::Connected {
            return;
        }
        if let Some(held) = self.held.take() {
            let Held {
                source, scheduled, ..
            } = *held;
            let only = facts.view().items_owned_by(&self.me).into_iter().collect();
            self.fire_only(source, scheduled, Some(only), facts, out);
        }
    }

    /// `instances/{me}` was created or changed: whose is it?
    pub(super) fn instance_seen(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        if self.leaving || self.draining {
            return;
        }
        match facts.instance_owner() {
            Some(owner) if owner == self.session => self.registration = Registration::Confirmed,
            Some(owner) => self.older_seen(owner, out),
            None => {}
        }
    }

    /// The mirror shows `instances/{me}` held by an older session. After this session's create
    /// succeeded that is the mirror's lag (a listing read before the write): ours stands, and a
    /// take-over would delete it, a deletion this machine could not tell from an operator's once
    /// the older node's own deletion has been counted against its take-over.
    fn older_seen(&mut self, owner: i64, out: &mut Vec<Command>) {
        if self.registration != Registration::Written {
            self.take_over(owner, out);
        }
    }

    /// An older session of this instance still holds `instances/{me}`: replace it with ours in
    /// one multi-op (ElasticJob's persistEphemeral does the same). Until that write is done the
    /// job starts nothing: survivors would fail over this session's runs when the old node goes.
    fn take_over(&mut self, owner: i64, out: &mut Vec<Command>) {
        self.registration = Registration::Older(owner);
        self.own_deletions = self.own_deletions.saturating_add(1);
        let path = JobNode::Instance(self.me.clone()).to_path(&self.job);
        out.push(Command::Write {
            ops: vec![Op::delete(path), self.instance_create()],
            mode: WriteMode::Direct,
            then: Purpose::TakeOver,
        });
    }

    fn instance_create(&self) -> Op {
        let data = crate::sharding::instance_node_data(&self.me, self.labels());
        Op::create(
            JobNode::Instance(self.me.clone()).to_path(&self.job),
            data,
            CreateMode::Ephemeral,
        )
    }

    /// `instances/{me}` was deleted.
    pub(super) fn instance_deleted(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        if self.leaving || self.draining {
            return;
        }
        if self.own_deletions > 0 {
            // This machine's own take-over deleted it (and created ours in the same write): never
            // a shutdown. Unless ours already shows, create it, in case the count was stale (a
            // take-over reported failed that never applied): a create that finds it is harmless.
            self.own_deletions -= 1;
            if facts.instance_owner() == Some(self.session) {
                self.registration = Registration::Confirmed;
            } else {
                self.register_again(out);
            }
            return;
        }
        if facts.instance_owner() == Some(self.session) {
            // Ours stands: the event was about an older incarnation.
            self.registration = Registration::Confirmed;
            return;
        }
        // The removed node's own owner decides, not what this machine last confirmed: its
        // deletion may reach the job after a newer node was seen (a restart under the same id).
        let removed = facts.removed_instance_owner();
        if self.registration == Registration::Written && removed.is_some_and(|o| o != self.session)
        {
            // The older node registration replaced: ours, written after it, stands.
            return;
        }
        let ours = removed == Some(self.session);
        match (self.registration, self.link, ours) {
            (Registration::Confirmed, Link::Connected, true) => {
                out.push(Command::Warn(format!(
                    "instances/{} was deleted while session {:#x} owns it: an operator shut this \
                     instance down for the job; stopping the job here",
                    self.me, self.session
                )));
                self.leave(facts, out);
            }
            _ => self.register_again(out),
        }
    }

    /// Creates `instances/{me}` for this session.
    fn register_again(&mut self, out: &mut Vec<Command>) {
        self.registration = Registration::Unconfirmed;
        out.push(Command::Write {
            ops: vec![self.instance_create()],
            mode: WriteMode::Direct,
            then: Purpose::Register,
        });
    }

    pub(super) fn reregistered(
        &mut self,
        purpose: Purpose,
        outcome: Outcome,
        out: &mut Vec<Command>,
    ) {
        match (purpose, outcome) {
            // Ours stands, unconfirmed until the mirror shows it.
            (Purpose::TakeOver | Purpose::Register, Outcome::Done) => {
                if self.registration != Registration::Confirmed {
                    self.registration = Registration::Written;
                }
            }
            // The old node went meanwhile (nothing was deleted): create ours.
            (Purpose::TakeOver, Outcome::Conflict) => {
                self.own_deletions = self.own_deletions.saturating_sub(1);
                self.register_again(out)
            }
            (_, Outcome::Done | Outcome::Conflict | Outcome::Stale) => {}
            (_, Outcome::Failed(e)) => out.push(Command::Warn(format!(
                "creating instances/{} failed ({e}); retried at the next re-list",
                self.me
            ))),
        }
    }

    /// After a re-list: the node as the mirror now has it.
    pub(super) fn resynced(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        if self.leaving || self.draining {
            return;
        }
        match facts.instance_owner() {
            Some(owner) if owner == self.session => self.registration = Registration::Confirmed,
            Some(owner) => self.older_seen(owner, out),
            None => self.register_again(out),
        }
    }
}
