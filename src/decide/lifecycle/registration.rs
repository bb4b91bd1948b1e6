//! The machine's link to its session and its `instances/{me}` node: disconnection, pauses, the
//! session check before a late fire, and what a deletion of this instance's node means.
//!
//! Whether the node was removed by an operator is decided from facts the mirror holds, never by
//! asking the registry: the deletion is an operator's only when the mirror had shown the node
//! owned by this very session (its ephemeral owner) and the link is up. A deletion of an older
//! session's node (a stale event of a re-list, or the old node expiring after a quick restart),
//! a deletion seen while disconnected, or one of a node never seen: in doubt, the node is
//! created again and the job keeps running.

use crate::paths::JobNode;
use crate::registry::{CreateMode, Op, SessionState};

use super::{
    Command, Facts, JobMachine, Link, Outcome, Purpose, Registration, SkipReason, WriteMode,
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
            SessionState::Disconnected => self.link = Link::Disconnected,
            SessionState::Connected => {
                // Reconnected within the timeout: the same session lives.
                self.link = Link::Connected;
                self.release_held(facts, out);
            }
            _ => {
                // Expired or closed: this session's subtree is about to be replaced.
                self.link = Link::Disconnected;
                if !self.runs.is_empty() {
                    out.push(Command::CancelAll);
                }
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
        } else {
            // The session is gone: the RegistryActor replaces this subtree; nothing starts here.
            self.link = Link::Disconnected;
            if !self.runs.is_empty() {
                out.push(Command::CancelAll);
            }
            if self.held.take().is_some() {
                self.skipped_for(SkipReason::SessionLost, out);
            }
        }
    }

    fn skipped_for(&mut self, reason: SkipReason, out: &mut Vec<Command>) {
        let warn = !self.behind;
        self.behind = true;
        out.push(Command::Skipped {
            reason,
            items: 0,
            warn,
        });
    }

    /// Runs the fire held for the session check, if the link is up.
    fn release_held(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        if self.link != Link::Connected {
            return;
        }
        if let Some((source, scheduled)) = self.held.take() {
            let only = facts.view().items_owned_by(&self.me).into_iter().collect();
            self.fire_only(source, scheduled, Some(only), facts, out);
        }
    }

    /// `instances/{me}` was created or changed: whose is it?
    pub(super) fn instance_seen(&mut self, facts: &dyn Facts) {
        match facts.instance_owner() {
            Some(owner) if owner == self.session => self.registration = Registration::Confirmed,
            Some(owner) => self.registration = Registration::Older(owner),
            None => {}
        }
    }

    /// `instances/{me}` was deleted.
    pub(super) fn instance_deleted(&mut self, facts: &dyn Facts, out: &mut Vec<Command>) {
        if self.leaving || self.draining {
            return;
        }
        if facts.instance_owner() == Some(self.session) {
            // Ours stands: the event was about an older incarnation.
            self.registration = Registration::Confirmed;
            return;
        }
        match (self.registration, self.link) {
            (Registration::Confirmed, Link::Connected) => {
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
        let me = &self.me;
        let data = format!("jobInstanceId: {me}\nserverIp: {}\n", me.ip());
        out.push(Command::Write {
            ops: vec![Op::create(
                JobNode::Instance(me.clone()).to_path(&self.job),
                data,
                CreateMode::Ephemeral,
            )],
            mode: WriteMode::Direct,
            then: Purpose::Register,
        });
    }

    pub(super) fn reregistered(&mut self, outcome: Outcome, out: &mut Vec<Command>) {
        match outcome {
            // Unconfirmed until the mirror shows it; a node already there is judged by its
            // creation event's owner.
            Outcome::Done | Outcome::Conflict => {}
            Outcome::Failed(e) => out.push(Command::Warn(format!(
                "creating instances/{} again failed ({e}); retried at the next re-list",
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
            Some(owner) => self.registration = Registration::Older(owner),
            None => self.register_again(out),
        }
    }
}
