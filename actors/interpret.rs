//! The one interpreter loop of the machines an actor carries out (a job's `JobMachine`, its
//! distribute-once rounds): step the machine, carry out its commands in order, and when a command
//! (a write) returns an input, step the machine with it and carry out the commands that returns
//! before the ones queued after it. The machine decides; this only orders the IO.

use std::collections::VecDeque;

/// A machine and what carries out its commands.
pub(crate) trait Interpret: Send {
    /// What the machine takes.
    type Input: Send;
    /// What it returns.
    type Command: Send;

    /// One step of the machine.
    fn step(&mut self, input: Self::Input) -> Vec<Self::Command>;

    /// One command; a write answers the input its outcome makes.
    fn carry_out(
        &mut self,
        command: Self::Command,
    ) -> impl std::future::Future<Output = Option<Self::Input>> + Send;
}

/// Steps `machine` with `input` and carries out every command that follows from it.
pub(crate) async fn drive<M: Interpret>(machine: &mut M, input: M::Input) {
    let mut queue: VecDeque<M::Command> = machine.step(input).into();
    while let Some(command) = queue.pop_front() {
        if let Some(input) = machine.carry_out(command).await {
            let more = machine.step(input);
            more.into_iter().rev().for_each(|c| queue.push_front(c));
        }
    }
}
