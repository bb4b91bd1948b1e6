//! A script child's process group: the child is started as the leader of a group of its own
//! (`setpgid(0, 0)` before exec), so that everything it starts (a shell's pipeline, a background
//! `sleep &`) can be signalled at once, and ended with it.
//!
//! [`ProcessGroup`] signals the group; dropped while armed (the run's future dropped, the task
//! aborted) it kills the whole group with SIGKILL. A child that moves itself into another group
//! or session (`setsid`, a daemon) leaves the group and is not reached, as with any process
//! supervisor that works by groups.
//!
//! The group id is the child's pid, which stays reserved while the group has a member or the
//! child is unreaped; the group is signalled before the child is reaped, or while one of its
//! members may still live, so a signal never reaches a stranger's group.

/// A running script's process group (its id is the child's pid).
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: i32,
    /// Killed when dropped while armed.
    armed: bool,
}

impl ProcessGroup {
    /// The group the child `pid` leads (it was spawned with `process_group(0)`). `None` when
    /// the pid does not fit a `pid_t`.
    pub fn led_by(pid: u32) -> Option<Self> {
        let pgid = i32::try_from(pid).ok().filter(|p| *p > 0)?;
        Some(Self { pgid, armed: true })
    }

    /// The group's id.
    pub fn id(&self) -> i32 {
        self.pgid
    }

    /// Asks every process of the group to stop (SIGTERM).
    pub fn terminate(&self) {
        self.signal(libc::SIGTERM);
    }

    /// Ends every process of the group (SIGKILL).
    pub fn kill(&self) {
        self.signal(libc::SIGKILL);
    }

    /// The child ended on its own and nobody asked the group to stop: processes it left running
    /// in the background (a script's `nohup ... &`) are its business, as they were before
    /// process groups; the group is no longer killed when dropped.
    pub fn disarm(&mut self) {
        self.armed = false;
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) with a negative pid signals a process group; it touches no memory.
        let rc = unsafe { libc::kill(-self.pgid, signal) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            // ESRCH: every process of the group has ended already, which is what was wanted.
            if e.raw_os_error() != Some(libc::ESRCH) {
                tracing::warn!(pgid = self.pgid, signal, error = %e,
                    "signalling a script's process group failed");
            }
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if self.armed {
            self.kill();
        }
    }
}
