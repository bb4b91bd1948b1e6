//! The machine's overlap policies (`shardcron.overlap`, [`Overlap`]): what a fire does with an
//! item whose previous run still runs (here, or on its previous owner after a reshard).
//!
//! ```text
//!  skip          fire ─ item running ─▶ Skipped{missed: overlap_skip}
//!  buffer_one    fire ─ item running ─▶ flagged misfire (once) ─ run ends ─▶ one catch-up run
//!  buffer_all    fire ─ item running ─▶ one more fire owed (flagged misfire) ─ run ends ─▶ a
//!                  │                    catch-up run per fire owed, one after another
//!                  └ `shardcron.overlap.buffer` fires owed already ─▶ Skipped{missed:
//!                                                                    overlap_buffer_full}
//!  cancel_other  fire ─ item running here ─▶ Cancel(items), then as buffer_one
//!  allow_all     fire ─▶ the item runs beside its previous run (no `running` markers are written:
//!                        monitorExecution is off)
//! ```
//!
//! `buffer_all`'s fires owed live in the machine: the registry's `misfire` flag (ElasticJob's)
//! says at least one is owed, not how many. They are this instance's for this session: an item
//! moved to another instance owes nothing here (its new owner runs its next fires), and a crash
//! loses them as ElasticJob loses a flagged misfire. A job under another policy keeps an empty
//! map: its fires and runs take no step of this file but the policy's test.

use std::collections::{BTreeMap, BTreeSet};

use crate::config::Overlap;
use crate::model::ExecutionSource;
use crate::types::ShardItem;

use super::{Command, Facts, JobMachine, SkipReason};

/// The fires each item still owes under `buffer_all`: one pointer and no allocation until the
/// first fire is owed, so that ten thousand idle machines stay small.
// Boxed on purpose: an empty BTreeMap is 24 bytes in every idle machine, the box 8.
#[allow(clippy::box_collection)]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Owed(Option<Box<BTreeMap<ShardItem, u32>>>);

impl Owed {
    /// Whether no item owes a fire.
    pub(super) fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|owed| owed.is_empty())
    }

    /// The count of `item`, created at 0.
    fn owe(&mut self, item: ShardItem) -> &mut u32 {
        self.0
            .get_or_insert_with(Box::default)
            .entry(item)
            .or_insert(0)
    }

    /// The fires `item` owes.
    fn get(&self, item: ShardItem) -> u32 {
        self.0
            .as_ref()
            .and_then(|owed| owed.get(&item).copied())
            .unwrap_or(0)
    }

    /// Owes nothing, and gives the memory back.
    pub(super) fn clear(&mut self) {
        self.0 = None;
    }
}

impl JobMachine {
    /// `shardcron.overlap: cancel_other`: a fire found `flagged` items still running; those
    /// running here are cancelled, and run for the fire as soon as they end (flagged misfire, as
    /// `buffer_one` runs them). Items running on another instance cannot be cancelled from here:
    /// they wait as with `buffer_one`.
    pub(super) fn cancel_other(&self, flagged: &[ShardItem], out: &mut Vec<Command>) {
        let here: Vec<ShardItem> = (flagged.iter())
            .filter(|i| self.local.running.contains(i))
            .copied()
            .collect();
        if !here.is_empty() {
            out.push(Command::Cancel(here));
        }
    }

    /// A fire from `source` found `skipped` items still running. Under `buffer_all` each owes
    /// one more fire, up to the bound; past it the fire is missed for that item. A catch-up
    /// fire that finds its item running is one of the fires owed: it stays owed, not owed twice.
    pub(super) fn overlapped(
        &mut self,
        skipped: &[ShardItem],
        source: ExecutionSource,
        out: &mut Vec<Command>,
    ) {
        let Overlap::BufferAll(bound) = self.config.policy().overlap else {
            self.skipped(SkipReason::StillRunning, skipped.len(), out);
            return;
        };
        if source == ExecutionSource::Misfire {
            self.skipped(SkipReason::StillRunning, skipped.len(), out);
            return;
        }
        let mut full = 0;
        for item in skipped {
            let owed = self.buffered.owe(*item);
            if *owed < bound.get() {
                *owed += 1;
            } else {
                full += 1;
            }
        }
        if full < skipped.len() {
            self.skipped(SkipReason::StillRunning, skipped.len() - full, out);
        }
        if full > 0 {
            self.skipped(SkipReason::BufferFull, full, out);
        }
    }

    /// A catch-up run starts for `ran`: each of them owes one fire less.
    pub(super) fn unbuffer(&mut self, ran: &[ShardItem]) {
        let Some(owed) = self.buffered.0.as_mut() else {
            return;
        };
        for item in ran {
            if let Some(n) = owed.get_mut(item) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    owed.remove(item);
                }
            }
        }
    }

    /// A run ended: the items still owing fires that no run holds join the catch-up; those moved
    /// to another instance owe nothing here any more.
    pub(super) fn buffered_due(&mut self, facts: &dyn Facts, catch_up: &mut BTreeSet<ShardItem>) {
        let Some(owed) = self.buffered.0.as_mut() else {
            return;
        };
        owed.retain(|item, _| facts.owns(*item));
        let running = &self.local.running;
        catch_up.extend(owed.keys().filter(|i| !running.contains(i)));
    }

    /// The job's config changed: fires owed are kept up to the new bound under `buffer_all`,
    /// dropped under any other policy (which owes at most the misfire flag).
    pub(super) fn overlap_changed(&mut self) {
        match self.config.policy().overlap {
            Overlap::BufferAll(bound) => {
                for owed in self.buffered.0.iter_mut().flat_map(|m| m.values_mut()) {
                    *owed = (*owed).min(bound.get());
                }
            }
            _ => self.buffered.clear(),
        }
    }

    /// The fires `item` owes under `buffer_all` (0 under any other policy).
    pub fn fires_owed(&self, item: ShardItem) -> u32 {
        self.buffered.get(item)
    }
}
