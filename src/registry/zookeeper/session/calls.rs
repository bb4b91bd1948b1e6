//! The [`Registry`] calls of a [`ZkSession`]: each one bounded by the call timeout, counted and
//! its error named; multi-ops built as one ZooKeeper transaction and their results read back.

use super::*;

#[async_trait]
impl Registry for ZkSession {
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String> {
        let call = self.call(OpKind::Create, path);
        self.run(call, async {
            let client = self.client(path)?;
            let (_, sequence) = client
                .create(path, data, &self.options(mode))
                .await
                .map_err(|e| call.error(e))?;
            Ok(if mode.is_sequential() {
                format!("{path}{sequence}")
            } else {
                path.to_owned()
            })
        })
        .await
    }

    async fn get(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        let call = self.call(OpKind::Get, path);
        self.run(call, async {
            let client = self.client(path)?;
            let (data, stat) = client.get_data(path).await.map_err(|e| call.error(e))?;
            Ok((data, convert::stat(&stat)))
        })
        .await
    }

    async fn set(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        let call = self.call(OpKind::Set, path).at(version);
        self.run(call, async {
            let client = self.client(path)?;
            let stat = client
                .set_data(path, data, version)
                .await
                .map_err(|e| call.error(e))?;
            Ok(convert::stat(&stat))
        })
        .await
    }

    async fn delete(&self, path: &str, version: Option<i32>) -> Result<()> {
        let call = self.call(OpKind::Delete, path).at(version);
        self.run(call, async {
            let client = self.client(path)?;
            client
                .delete(path, version)
                .await
                .map_err(|e| call.error(e))
        })
        .await
    }

    async fn children(&self, path: &str) -> Result<Vec<String>> {
        let call = self.call(OpKind::Children, path);
        self.run(call, async {
            let client = self.client(path)?;
            let mut names = client
                .list_children(path)
                .await
                .map_err(|e| call.error(e))?;
            names.sort_unstable();
            Ok(names)
        })
        .await
    }

    async fn exists(&self, path: &str) -> Result<Option<Stat>> {
        let call = self.call(OpKind::Exists, path);
        self.run(call, async {
            let client = self.client(path)?;
            let stat = client.check_stat(path).await.map_err(|e| call.error(e))?;
            Ok(stat.as_ref().map(convert::stat))
        })
        .await
    }

    async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>> {
        let first = ops.first().map(Op::path).unwrap_or("/");
        let call = self.call(OpKind::Multi, first);
        self.run(call, async {
            let client = self.client("/")?;
            let mut writer = client.new_multi_writer();
            for (index, op) in ops.iter().enumerate() {
                add_op(&mut writer, op, self).map_err(|source| multi_failed(index, op, source))?;
            }
            let results = match writer.commit().await {
                Ok(results) => results,
                Err(zk::MultiWriteError::OperationFailed { index, source }) => {
                    let op = &ops[index];
                    let source = Call::new(op.kind(), op.path(), self.call_timeout)
                        .at(op_version(op))
                        .error(source);
                    return Err(multi_failed(index, op, source));
                }
                Err(zk::MultiWriteError::RequestFailed { source }) => {
                    return Err(call.error(source))
                }
            };
            self.own_counts.record_multi_ops(ops.iter().map(Op::kind));
            self.shared_counts
                .record_multi_ops(ops.iter().map(Op::kind));
            Ok(results.into_iter().map(op_result).collect())
        })
        .await
    }

    async fn watch_recursive(&self, path: &str) -> Result<WatchStream> {
        let (tx, rx) = mpsc::unbounded_channel();
        let guard = self.watch_recursive_into(path, tx).await?;
        // The watch lasts as long as its receiver: the forwarder drops it when a send fails.
        guard.detach();
        Ok(rx)
    }

    async fn watch_recursive_into(
        &self,
        path: &str,
        into: mpsc::UnboundedSender<WatchEvent>,
    ) -> Result<WatchGuard> {
        let call = self.call(OpKind::Watch, path);
        self.run(call, async {
            let client = self.client(path)?;
            let watcher = client
                .watch(path, zk::AddWatchMode::PersistentRecursive)
                .await
                .map_err(|e| call.error(e))?;
            let stop = CancellationToken::new();
            let new = watching::NewWatch {
                path: path.to_owned(),
                watcher,
                tx: into,
                stop: stop.clone(),
            };
            // The forwarder ends only with the session: a watch sent after it is dropped
            // unheard, as any watch of a session that ended.
            let _ = self.forwarder().send(new);
            Ok(WatchGuard::new(stop))
        })
        .await
    }

    async fn get_many(&self, paths: &[String]) -> Result<Vec<Result<(Vec<u8>, Stat)>>> {
        let Some(first) = paths.first() else {
            return Ok(Vec::new());
        };
        let call = self.call(OpKind::GetMany, first);
        let outcome = match self.client(first) {
            Ok(client) => listing::get_many(&client, paths, self.call_timeout, &self.silence).await,
            Err(e) => Err(e),
        };
        self.own_counts.record(call.op, outcome.is_ok());
        self.shared_counts.record(call.op, outcome.is_ok());
        outcome
    }

    async fn list_subtree(&self, path: &str) -> Result<Vec<ListedNode>> {
        let call = self.call(OpKind::List, path);
        let client = self.client(path);
        // Each batch is bounded on its own: a large tree may take longer than one call's bound.
        let outcome = match client {
            Ok(client) => {
                listing::list_subtree(&client, path, self.call_timeout, &self.silence).await
            }
            Err(e) => Err(e),
        };
        self.own_counts.record(call.op, outcome.is_ok());
        self.shared_counts.record(call.op, outcome.is_ok());
        outcome
    }

    fn session_info(&self) -> SessionInfo {
        self.info
    }

    fn session_state(&self) -> watch::Receiver<SessionState> {
        self.state.subscribe()
    }

    fn silence(&self) -> Option<&Silence> {
        Some(&self.silence)
    }

    async fn close(&self) {
        let taken = self
            .client
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(client) = taken {
            let mut watcher = client.state_watcher();
            // The session ends when the last handle goes; wait for the server to confirm so that
            // the ephemerals are gone when `close` returns.
            drop(client);
            let confirmed = async {
                let mut s = watcher.state();
                while !s.is_terminated() {
                    s = watcher.changed().await;
                }
            };
            if tokio::time::timeout(self.call_timeout, confirmed)
                .await
                .is_err()
            {
                tracing::warn!(
                    target = %self.target,
                    "ZooKeeper did not confirm the session close within {:?}; its ephemerals go when it times out",
                    self.call_timeout
                );
            }
        }
        self.closed.cancel();
        self.state.send_if_modified(|current| {
            let change = !current.is_terminal();
            if change {
                *current = SessionState::Closed;
            }
            change
        });
    }
}

/// Adds one registry operation to a ZooKeeper transaction.
fn add_op(writer: &mut zk::MultiWriter<'_>, op: &Op, session: &ZkSession) -> Result<()> {
    validate_path(op.path())?;
    let call = Call::new(op.kind(), op.path(), session.call_timeout);
    match op {
        Op::Create { path, data, mode } => writer.add_create(path, data, &session.options(*mode)),
        Op::Set {
            path,
            data,
            version,
        } => writer.add_set_data(path, data, *version),
        Op::Delete { path, version } => writer.add_delete(path, *version),
        Op::Check { path, version } => writer.add_check_version(path, *version),
    }
    .map_err(|e| call.error(e))
}

fn op_version(op: &Op) -> Option<i32> {
    match op {
        Op::Set { version, .. } | Op::Delete { version, .. } => *version,
        Op::Check { version, .. } => Some(*version),
        Op::Create { .. } => None,
    }
}

fn multi_failed(index: usize, op: &Op, source: RegistryError) -> RegistryError {
    RegistryError::MultiFailed {
        index,
        kind: op.kind(),
        path: op.path().to_owned(),
        source: Box::new(source),
    }
}

fn op_result(result: zk::MultiWriteResult) -> OpResult {
    match result {
        zk::MultiWriteResult::Create { path, .. } => OpResult::Created(path),
        zk::MultiWriteResult::SetData { stat } => OpResult::Set(convert::stat(&stat)),
        zk::MultiWriteResult::Delete => OpResult::Deleted,
        zk::MultiWriteResult::Check => OpResult::Checked,
        // The enum is non-exhaustive; a multi of ours only holds the four kinds above.
        other => unreachable!("multi-op result {other:?} for an operation shardcron never sends"),
    }
}
