//! Why a fire ran nothing ([`SkipReason`]) and why its work was dropped ([`MissReason`]): the
//! reasons the machine's `Skipped` command carries, as metric labels.

/// Why a fire ran nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// A run started after the fire's instant already covers it (fires queued behind a stall).
    Coalesced,
    /// The registry is disconnected: no work starts.
    Disconnected,
    /// The session check after a pause found the session gone.
    SessionLost,
    /// This instance's node still belongs to an older session: its runs may be failed over.
    NotRegistered,
    /// Items were still running at the fire: they are flagged misfire or skipped.
    StillRunning,
    /// The fire came while another waited for the session check.
    AlreadyHeld,
    /// A new plan was committed between the fire's planning and its start write.
    PlanChanged,
    /// Items were still running and already had as many fires buffered as
    /// `shardcron.overlap.buffer` keeps (`buffer_all`).
    BufferFull,
}

impl SkipReason {
    /// Metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Coalesced => "coalesced",
            Self::Disconnected => "disconnected",
            Self::SessionLost => "session_lost",
            Self::NotRegistered => "not_registered",
            Self::StillRunning => "still_running",
            Self::AlreadyHeld => "already_held",
            Self::PlanChanged => "plan_changed",
            Self::BufferFull => "buffer_full",
        }
    }
}

/// Why a fire was dropped: its work will not run (counted in `shardcron_fires_missed_total`).
/// A skip whose items are flagged misfire (`buffer_one`, `cancel_other`) or buffered
/// (`buffer_all`) is not a miss: they run after the current run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissReason {
    /// `shardcron.overlap: skip` (or ElasticJob's `misfire: false`): items still ran at the fire.
    OverlapSkip,
    /// Collapsed into another fire (queued behind a stall, or held for a session check).
    Coalesced,
    /// This instance could not start work at the fire (disconnected, session lost, stale node,
    /// plan changed).
    CannotStart,
    /// `shardcron.overlap: buffer_all`: the item's buffer of fires was full.
    OverlapBufferFull,
}

impl MissReason {
    /// Metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OverlapSkip => "overlap_skip",
            Self::Coalesced => "coalesced",
            Self::CannotStart => "cannot_start",
            Self::OverlapBufferFull => "overlap_buffer_full",
        }
    }
}
