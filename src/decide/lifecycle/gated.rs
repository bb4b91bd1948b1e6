//! Runs the trigger hands back at their instant. A fire taken ahead (`ahead.rs`) launched its run
//! for the instant on the `running` markers its prepare queued, whether or not they have been
//! answered. When the instant comes and the registry has answered nothing for
//! [`UNANSWERED_BOUND`] while calls wait (an ensemble paused, a connection black-holed), the
//! trigger does not start that run: it hands it back ([`Input::HeldBack`]), and the run's task
//! waits at a gate with none of its items started. Under such a stall the plan those markers were
//! written under may have moved unseen, and another instance may own the items now.
//!
//! The machine opens the gate ([`Command::Go`]) once the link is up and none of the run's
//! markers waits for its answer: a marker refused meanwhile has already cancelled its items
//! (`marked.rs`), so they end without starting. While markers wait on a silent registry the
//! session is checked first; a failed check cancels every run, a disconnection cancels the gated
//! run's items (nothing starts while disconnected). A run whose markers have answered, or whose
//! registry answers again by the time its executor hears of it, goes at once.
//!
//! [`Input::HeldBack`]: super::Input::HeldBack
//! [`Command::Go`]: super::Command::Go

use super::{Command, Facts, JobMachine, Link, UNANSWERED_BOUND};

impl JobMachine {
    /// The trigger handed back the run `run_id` at its instant: the registry was silent.
    pub(super) fn held_back(&mut self, run_id: u64, facts: &dyn Facts, out: &mut Vec<Command>) {
        let silent = facts.registry_silent_for() >= UNANSWERED_BOUND;
        let (link, unconfirmed) = (self.link, &self.local.unconfirmed);
        let Some((_, run)) = self.runs.iter_mut().find(|(id, _)| *id == run_id) else {
            // It ended meanwhile (every item cancelled): its task ends too.
            out.push(Command::Go(run_id));
            return;
        };
        if link == Link::Disconnected {
            out.push(Command::Cancel(run.items.clone()));
            out.push(Command::Go(run_id));
            return;
        }
        let waiting = run.items.iter().any(|i| unconfirmed.contains(i));
        if link == Link::Connected && !(waiting && silent) {
            out.push(Command::Go(run_id));
            return;
        }
        run.gated = true;
        if link == Link::Connected {
            self.link = Link::Suspect;
            out.push(Command::CheckSession);
        }
    }

    /// Opens the gate of each gated run whose markers have all answered, if the link is up.
    pub(super) fn release_gated(&mut self, out: &mut Vec<Command>) {
        if self.link != Link::Connected {
            return;
        }
        let unconfirmed = &self.local.unconfirmed;
        for (id, run) in &mut self.runs {
            if run.gated && !run.items.iter().any(|i| unconfirmed.contains(i)) {
                run.gated = false;
                out.push(Command::Go(*id));
            }
        }
    }

    /// Cancels the items of every gated run and lets its task end: the link went down, or the
    /// session check failed, before they started.
    pub(super) fn cancel_gated(&mut self, out: &mut Vec<Command>) {
        for (id, run) in &mut self.runs {
            if run.gated {
                run.gated = false;
                out.push(Command::Cancel(run.items.clone()));
                out.push(Command::Go(*id));
            }
        }
    }
}
