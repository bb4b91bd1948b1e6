//! Handing freed heap back to the system after a burst.
//!
//! glibc's allocator keeps the chunks a program frees in its arenas for reuse, and returns them to
//! the system only from the top of a heap. A node's start (registration of thousands of jobs, then
//! their plans) frees a lot in the middle: bench scenario 4 (10,000 jobs on one node) kept 20 MiB
//! of free chunks resident, 143 MiB in all, where `malloc_trim` brings it to 134 MiB in 1.7 ms. So
//! the RegistryActor looks every [`UPKEEP_EVERY`]: when the arenas hold more than
//! [`WORTH_RELEASING`] free, it trims them. A node in its steady state frees and reuses far less
//! than that, so it never pays for a trim (which holds the arena locks while it runs); several
//! nodes of one process trim at most once per period between them. Other allocators and systems:
//! nothing to do.

use std::time::Duration;

/// How often a node looks at its process's free heap.
pub(crate) const UPKEEP_EVERY: Duration = Duration::from_secs(10);

/// Free bytes in the arenas past which a trim is worth its cost.
pub(crate) const WORTH_RELEASING: usize = 16 << 20;

/// Trims the allocator's arenas when they hold more than [`WORTH_RELEASING`] free: returns the
/// free bytes it found when it trimmed, `None` when it did not (little free, trimmed by another
/// node of this process within the period, or not glibc).
pub(crate) fn release_freed() -> Option<usize> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::sync::Mutex;
        use std::time::Instant;
        static LAST: Mutex<Option<Instant>> = Mutex::new(None);
        // SAFETY: mallinfo only reads the allocator's statistics.
        let free = unsafe { libc::mallinfo() }.fordblks;
        // A field of C `int`: wraps past 2 GiB, where trimming is worth it anyway.
        let free = usize::try_from(free).unwrap_or(usize::MAX);
        if free < WORTH_RELEASING {
            return None;
        }
        let mut last = LAST
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.is_some_and(|t| t.elapsed() < UPKEEP_EVERY / 2) {
            return None;
        }
        *last = Some(Instant::now());
        // SAFETY: malloc_trim releases free pages only; no pointer the program holds changes.
        unsafe { libc::malloc_trim(0) };
        Some(free)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    None
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_freed_memory_is_handed_back_once_per_period() {
        let burst: Vec<Vec<u8>> = (0..40_000).map(|i| vec![i as u8; 1000]).collect();
        // Allocated after the burst, so that its chunks are not the top of the heap (which glibc
        // returns on its own).
        let after = vec![1u8; 1000];
        drop(burst);
        let released = release_freed();
        assert!(
            released.is_some_and(|free| free >= WORTH_RELEASING),
            "40 MB freed in 1 KB chunks is trimmed: {released:?}"
        );
        assert_eq!(
            release_freed(),
            None,
            "trimmed once per period, however many nodes ask"
        );
        drop(after);
    }
}
