//! The interface the conformance suite runs against: a backend opens sessions on a namespace and
//! can expire, disconnect and reconnect each of them.

use std::sync::Arc;

use async_trait::async_trait;
use shardcron::registry::{Connector, Registry};

/// Fault controls for one session opened by a [`Backend`].
#[async_trait]
pub trait SessionControl: Send + Sync {
    /// Ends the session on the server side, as a session timeout would.
    async fn expire(&self);
    /// Cuts the session's connection without ending the session.
    async fn disconnect(&self);
    /// Lets a cut connection through again.
    async fn reconnect(&self);
}

/// One session of a test, with its fault controls.
pub struct TestSession {
    /// The session.
    pub registry: Arc<dyn Registry>,
    /// Its fault controls.
    pub control: Box<dyn SessionControl>,
}

/// Two sessions on namespace `ns` of `b`: the first, with its controls, holding the ephemeral
/// node `path`, and another.
pub async fn ephemeral_and_other(
    b: &dyn Backend,
    ns: &str,
    path: &str,
) -> (TestSession, Arc<dyn Registry>) {
    let (owner, other) = (b.open(ns).await, b.open(ns).await.registry);
    let ephemeral = shardcron::registry::CreateMode::Ephemeral;
    owner.registry.create(path, b"", ephemeral).await.unwrap();
    (owner, other)
}

/// A registry backend under test.
#[async_trait]
pub trait Backend: Send + Sync {
    /// `embedded` or `zookeeper`, for messages.
    fn name(&self) -> &'static str;
    /// A connector for `namespace` (sessions it opens have no fault controls).
    async fn connector(&self, namespace: &str) -> Arc<dyn Connector>;
    /// Opens a session on `namespace` whose connection the test can cut.
    async fn open(&self, namespace: &str) -> TestSession;
}

/// `impl Registry for $ty` that answers every call with the registry in `self.$field`, except
/// `get_many` (and `list_subtree` when given), or `multi` alone, whose body is given with `$this`
/// for `self` and `$paths` (`$ops`) for its argument: for wrappers that add one behaviour (a held
/// read, a counted listing, a write overtaken) or one owned value (a proxy) to a session.
#[macro_export]
macro_rules! delegating_registry {
    ($ty:ty, $field:ident, get_many($this:ident, $paths:ident) $get_many:block) => {
        $crate::delegating_registry!($ty, $field, get_many($this, $paths) $get_many,
            list_subtree(this, path) { this.$field.list_subtree(path).await });
    };
    ($ty:ty, $field:ident, multi($this:ident, $ops:ident) $multi:block) => {
        $crate::delegating_registry!($ty, $field,
            get_many(this, paths) { this.$field.get_many(paths).await },
            list_subtree(this, path) { this.$field.list_subtree(path).await },
            multi($this, $ops) $multi);
    };
    ($ty:ty, $field:ident, get_many($this:ident, $paths:ident) $get_many:block,
        list_subtree($lthis:ident, $lpath:ident) $list:block) => {
        $crate::delegating_registry!($ty, $field, get_many($this, $paths) $get_many,
            list_subtree($lthis, $lpath) $list,
            multi(this, ops) { this.$field.multi(ops).await });
    };
    ($ty:ty, $field:ident, get_many($this:ident, $paths:ident) $get_many:block,
        list_subtree($lthis:ident, $lpath:ident) $list:block,
        multi($mthis:ident, $ops:ident) $multi:block) => {
        // In a block of its own so that the calls on `self.$field` see the trait.
        const _: () = {
            use shardcron::registry::Registry;

            #[async_trait::async_trait]
            impl Registry for $ty {
                async fn create(
                    &self,
                    path: &str,
                    data: &[u8],
                    mode: shardcron::registry::CreateMode,
                ) -> shardcron::registry::Result<String> {
                    self.$field.create(path, data, mode).await
                }
                async fn get(
                    &self,
                    path: &str,
                ) -> shardcron::registry::Result<(Vec<u8>, shardcron::registry::Stat)> {
                    self.$field.get(path).await
                }
                async fn set(
                    &self,
                    path: &str,
                    data: &[u8],
                    version: Option<i32>,
                ) -> shardcron::registry::Result<shardcron::registry::Stat> {
                    self.$field.set(path, data, version).await
                }
                async fn delete(
                    &self,
                    path: &str,
                    version: Option<i32>,
                ) -> shardcron::registry::Result<()> {
                    self.$field.delete(path, version).await
                }
                async fn children(&self, path: &str) -> shardcron::registry::Result<Vec<String>> {
                    self.$field.children(path).await
                }
                async fn exists(
                    &self,
                    path: &str,
                ) -> shardcron::registry::Result<Option<shardcron::registry::Stat>> {
                    self.$field.exists(path).await
                }
                async fn multi(
                    &self,
                    $ops: &[shardcron::registry::Op],
                ) -> shardcron::registry::Result<Vec<shardcron::registry::OpResult>> {
                    let $mthis = self;
                    $multi
                }
                async fn watch_recursive(
                    &self,
                    path: &str,
                ) -> shardcron::registry::Result<shardcron::registry::WatchStream> {
                    self.$field.watch_recursive(path).await
                }
                async fn get_many(
                    &self,
                    $paths: &[String],
                ) -> shardcron::registry::Result<
                    Vec<shardcron::registry::Result<(Vec<u8>, shardcron::registry::Stat)>>,
                > {
                    let $this = self;
                    $get_many
                }
                async fn list_subtree(
                    &self,
                    $lpath: &str,
                ) -> shardcron::registry::Result<Vec<shardcron::registry::ListedNode>> {
                    let $lthis = self;
                    $list
                }
                fn session_info(&self) -> shardcron::registry::SessionInfo {
                    self.$field.session_info()
                }
                fn session_state(
                    &self,
                ) -> tokio::sync::watch::Receiver<shardcron::registry::SessionState> {
                    self.$field.session_state()
                }
                fn silence(&self) -> Option<&shardcron::model::Silence> {
                    self.$field.silence()
                }
                async fn close(&self) {
                    self.$field.close().await
                }
            }
        };
    };
}

/// Expands to a module `$module` of one test per case for `$backend`, each case an
/// `async fn(&dyn Backend)` of the calling file; with `requires PEER`, each case first
/// `require!`s that peer.
#[macro_export]
macro_rules! backend_tests {
    ($module:ident, $backend:expr, [$($case:ident),* $(,)?] $(, requires $peer:expr)?) => {
        mod $module {
            use super::*;
            $crate::backend_tests!(@cases $backend, { $($crate::require!($peer);)? }, [$($case),*]);
        }
    };
    (@cases $backend:expr, $guard:block, [$($case:ident),*]) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                $guard
                let backend = $backend;
                super::$case(&backend).await;
            }
        )*
    };
}
