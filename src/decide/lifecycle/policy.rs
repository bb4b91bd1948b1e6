//! The machine's run policies (`shardcron.` props, [`crate::config::RunPolicy`]): a run's timeout
//! and the grace after it. Timers are commands ([`Command::StartTimer`]) and come back as inputs
//! ([`Input::TimerFired`](super::Input::TimerFired)); a timer whose run has ended is ignored.
//!
//! ```text
//!  Launch ──▶ StartTimer(Timeout, after) ─ run ends first ─▶ (timer ignored)
//!                  │ fired
//!                  ▼
//!             TimeOut(run) + StartTimer(Grace, grace) ─ run ends first ─▶ (timer ignored)
//!                                   │ fired
//!                                   ▼
//!                              Abandon(run)
//! ```
//!
//! The timeout counts from the run's launch: an item that waits its turn under the job's item
//! concurrency spends its time waiting too (a run is one unit of work to its timeout).

use super::{Command, JobMachine, Timer};

impl JobMachine {
    /// A run was launched: start its timeout, if the job has one (a job without costs one test).
    pub(super) fn arm_timeout(&self, run_id: u64, out: &mut Vec<Command>) {
        if let Some(timeout) = self.config.policy().timeout {
            out.push(Command::StartTimer {
                run_id,
                timer: Timer::Timeout,
                after: timeout.after,
            });
        }
    }

    /// A timer ran out.
    pub(super) fn timer_fired(&mut self, run_id: u64, timer: Timer, out: &mut Vec<Command>) {
        let grace = self.config.policy().timeout.map(|t| t.grace);
        let Some((_, run)) = self.runs.iter_mut().find(|(id, _)| *id == run_id) else {
            // The run ended before its timer: nothing to do.
            return;
        };
        match timer {
            Timer::Timeout if !run.timed_out => {
                run.timed_out = true;
                out.push(Command::TimeOut { run_id });
                // A config change may have dropped the timeout since the launch: the default grace.
                out.push(Command::StartTimer {
                    run_id,
                    timer: Timer::Grace,
                    after: grace.unwrap_or(crate::config::DEFAULT_GRACE),
                });
            }
            Timer::Timeout => {}
            Timer::Grace => out.push(Command::Abandon { run_id }),
        }
    }
}
