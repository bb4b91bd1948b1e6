//! What a script child's spawn costs with and without a `pre_exec` hook, in a process of a given
//! resident size: std spawns through posix_spawn (a vfork-like clone) without a hook and through
//! fork with one, and fork's cost grows with the pages the parent has mapped. shardcron's script
//! jobs spawn with a hook (the child writes its keeper record before exec, `src/job/keeper.rs`).
//!
//! Built and run by `benches/spawn_cost.sh` (std only, so `rustc` alone builds it; not a cargo
//! target). Prints, per resident size, the µs a spawn and reap of `/bin/true` takes, each way,
//! the best of three rounds of 300.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Instant;

extern "C" {
    fn getpid() -> i32;
    fn write(fd: i32, buf: *const u8, count: usize) -> isize;
}

fn spawn_and_reap(hook: bool, rounds: usize) -> f64 {
    let started = Instant::now();
    for _ in 0..rounds {
        let mut command = Command::new("/bin/true");
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if hook {
            // What the engine's hook does: getpid and one 16-byte write (here to an fd that is
            // not open, so the write fails at once; the cost is the fork, not the write).
            // SAFETY: only async-signal-safe calls, on stack data.
            unsafe {
                command.pre_exec(|| {
                    let record = [getpid() as u8; 16];
                    write(-1, record.as_ptr(), record.len());
                    Ok(())
                });
            }
        }
        command
            .spawn()
            .expect("spawning /bin/true")
            .wait()
            .expect("reaping it");
    }
    started.elapsed().as_micros() as f64 / rounds as f64
}

fn main() {
    let mut ballast: Vec<Vec<u8>> = Vec::new();
    let mut resident = 0;
    for target in [8usize, 16, 32, 64] {
        // Touch every page, so that it is resident and mapped.
        while resident < target {
            ballast.push(vec![1u8; 1 << 20]);
            resident += 1;
        }
        let best = |hook| {
            (0..3)
                .map(|_| spawn_and_reap(hook, 300))
                .fold(f64::MAX, f64::min)
        };
        let (plain, hooked) = (best(false), best(true));
        println!(
            "resident +{target} MiB: posix_spawn {plain:.0} µs, fork (pre_exec hook) {hooked:.0} µs a spawn and reap"
        );
    }
    std::hint::black_box(&ballast);
}
