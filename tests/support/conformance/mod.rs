//! The registry conformance suite: what every [`Backend`](super::backend::Backend) must do the same way, as async functions
//! over `&dyn Backend`, and [`conformance_tests!`](crate::conformance_tests) that turns them into
//! one `#[tokio::test]` each for a backend.
//!
//! Every case opens its own namespace ([`unique_namespace`]) so cases can share one server.
//! Nothing sleeps: waits go through [`wait_for`] (the kit's [`next_matching`]), which fails naming
//! what it expected.

use std::fmt::Debug;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use shardcron::registry::{NodeEventKind, WatchEvent};
use tokio::sync::mpsc::UnboundedReceiver;

use super::wait::next_matching;

mod nodes;
mod sessions;

// The macro names cases as `support::conformance::case`; test binaries that do not run the
// suite leave these re-exports unused.
#[allow(unused_imports)]
pub use nodes::*;
#[allow(unused_imports)]
pub use sessions::*;

/// How long a wait may take before the test fails; generous for a real ZooKeeper's session expiry.
pub const WAIT: Duration = Duration::from_secs(30);

/// Receives until an item matches `pred`, failing with `what` and everything seen on a timeout or
/// when the channel ends.
pub async fn wait_for<T: Debug>(
    rx: &mut UnboundedReceiver<T>,
    mut pred: impl FnMut(&T) -> bool,
    what: &str,
) -> T {
    next_matching(async || rx.recv().await, &mut pred, what, WAIT).await
}

/// The next `n` node events (session events skipped), as `(kind, path)`.
pub async fn node_events(
    rx: &mut UnboundedReceiver<WatchEvent>,
    n: usize,
    what: &str,
) -> Vec<(NodeEventKind, String)> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let what = format!("{what} (node event {} of {n})", out.len() + 1);
        if let WatchEvent::Node { kind, path } =
            wait_for(rx, |e| matches!(e, WatchEvent::Node { .. }), &what).await
        {
            out.push((kind, path));
        }
    }
    out
}

/// `(kind, path)` shorthand for expected event lists.
pub fn ev(kind: NodeEventKind, path: &str) -> (NodeEventKind, String) {
    (kind, path.to_owned())
}

/// The wall clock in milliseconds since the Unix epoch.
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}
/// Expands to one `#[tokio::test]` per conformance case for `$backend`, in a module `$module`;
/// with `requires PEER`, each case first `require!`s that peer.
#[macro_export]
macro_rules! conformance_tests {
    ($module:ident, $backend:expr $(, requires $peer:expr)?) => {
        $crate::conformance_tests!(@cases $module, $backend, { $($crate::require!($peer);)? }, [
            create_get_set_delete_round_trip,
            children_are_sorted_names_and_listings_put_parents_first,
            get_many_reads_every_path_in_order_and_a_missing_one_is_its_own_no_node,
            a_check_at_any_version_needs_only_the_node_and_a_create_delete_pair_asserts_absence,
            creating_under_a_missing_parent_fails_with_no_node,
            creating_an_existing_node_fails_with_node_exists,
            stale_versions_fail_with_bad_version,
            deleting_a_node_with_children_fails_with_not_empty,
            sequential_creates_get_increasing_ten_digit_suffixes,
            ephemeral_nodes_vanish_when_their_session_closes,
            ephemeral_nodes_vanish_when_their_session_expires,
            ephemeral_nodes_cannot_have_children,
            a_failing_multi_applies_nothing_and_names_the_failing_op,
            a_successful_multi_applies_every_op_in_order,
            recursive_watches_see_every_change_below_them_in_order,
            recursive_watches_do_not_see_changes_outside_their_subtree,
            a_disconnected_session_reconnects_and_works_again,
            server_time_is_close_to_the_wall_clock,
            connectors_open_sessions_rooted_at_their_namespace,
        ]);
    };
    (@cases $module:ident, $backend:expr, $guard:block, [$($case:ident),* $(,)?]) => {
        mod $module {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    $guard
                    let backend = $backend;
                    $crate::conformance::$case(&backend).await;
                }
            )*
        }
    };
}
