//! The registry conformance suite, run on every backend. The cases live in
//! `support/conformance.rs`; each backend gets one test per case.

#[macro_use]
extern crate support;

conformance_tests!(embedded, support::embedded::backend());
conformance_tests!(zookeeper, support::zk::backend(), requires support::Peer::ZooKeeper);
