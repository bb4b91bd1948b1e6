//! What a script child's spawn costs, three ways, in a process of a given resident size:
//! - `posix_spawn`: std's spawn without a hook (a vfork-like clone), as before the fifteenth stop;
//! - `fork+hook`: with a `pre_exec` hook (the child writing its own keeper record before exec,
//!   3fdcca9, not kept): std then spawns through fork, whose cost grows with the parent's pages;
//! - `announced`: posix_spawn with the spawn's name in the child's environment, as the engine
//!   spawns now (`src/job/keeper.rs`, `src/job/announced.rs`; the two 16-byte records to the
//!   keeper around it are not counted).
//!
//! Built and run by `benches/spawn_cost.sh` (std only, so `rustc` alone builds it; not a cargo
//! target). Prints, per resident size, the µs a spawn and reap of `/bin/true` (stdout and stderr
//! piped, a group of its own) takes each way, the best of three rounds of 300.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Instant;

extern "C" {
    fn getpid() -> i32;
    fn write(fd: i32, buf: *const u8, count: usize) -> isize;
}

#[derive(Clone, Copy)]
enum Way {
    PosixSpawn,
    ForkHook,
    Announced,
}

fn spawn_and_reap(way: Way, rounds: usize) -> f64 {
    let started = Instant::now();
    for seq in 0..rounds {
        let mut command = Command::new("/bin/true");
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        match way {
            Way::PosixSpawn => {}
            Way::ForkHook => {
                // getpid and one 16-byte write (to an fd that is not open: the cost is the fork).
                // SAFETY: only async-signal-safe calls, on stack data.
                unsafe {
                    command.pre_exec(|| {
                        let record = [getpid() as u8; 16];
                        write(-1, record.as_ptr(), record.len());
                        Ok(())
                    });
                }
            }
            Way::Announced => {
                command.env("SHARDCRON_SPAWN", format!("{}.{seq}", std::process::id()));
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
        let best = |way| {
            (0..3)
                .map(|_| spawn_and_reap(way, 300))
                .fold(f64::MAX, f64::min)
        };
        let (plain, hooked, announced) = (
            best(Way::PosixSpawn),
            best(Way::ForkHook),
            best(Way::Announced),
        );
        println!(
            "resident +{target} MiB: posix_spawn {plain:.0} µs, fork+hook {hooked:.0} µs, \
             announced {announced:.0} µs a spawn and reap"
        );
    }
    std::hint::black_box(&ballast);
}
