//! Test support shared by the integration test binaries: the backends the conformance suite runs on
//! (embedded and a real ZooKeeper server started per test binary), and small waiting helpers.
//!
//! Each test binary does `mod support;` and uses what it needs, hence the `dead_code` allowance.
#![allow(dead_code, unreachable_pub)]

pub mod backend;
pub mod conformance;
pub mod embedded;
pub mod http;
pub mod prometheus;
pub mod smtp;
pub mod zk;
