//! Multi-read requests: a fast `list_subtree` (breadth-first, one level at a time, each level read
//! in batches with several in flight, instead of two round trips per node) and `get_many`.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use zookeeper_client as zk;

use super::convert::{self, Call};
use crate::model::Silence;
use crate::registry::{join_path, ListedNode, OpKind, RegistryError, Result, Stat};

/// Nodes per multi-read request (two reads each). Small enough that a batch of typical coordination
/// nodes stays far below the server's 1 MB packet limit.
const BATCH: usize = 128;
/// Multi-read requests in flight at once.
const IN_FLIGHT: usize = 8;

/// Every node at and below `root`, parents before children, siblings in ascending order.
pub(crate) async fn list_subtree(
    client: &zk::Client,
    root: &str,
    bound: Duration,
    silence: &Silence,
) -> Result<Vec<ListedNode>> {
    let mut out = Vec::new();
    let mut level = vec![root.to_owned()];
    while !level.is_empty() {
        let batches: Vec<Vec<(ListedNode, Vec<String>)>> =
            // Owned chunks: a borrowed one makes the future not provably `Send` (rust#102211).
            futures::stream::iter(level.chunks(BATCH).map(<[String]>::to_vec))
                .map(|chunk| async move { read_batch(client, &chunk, root, bound, silence).await })
                .buffered(IN_FLIGHT)
                .try_collect()
                .await?;
        let mut next = Vec::new();
        for (node, mut children) in batches.into_iter().flatten() {
            children.sort_unstable();
            next.extend(children.iter().map(|c| join_path(&node.path, c)));
            out.push(node);
        }
        level = next;
    }
    Ok(out)
}

/// Reads data, stat and child names of every path of `chunk` in one request. A node deleted since
/// its parent was listed is left out; a missing `root` is an error.
async fn read_batch(
    client: &zk::Client,
    chunk: &[String],
    root: &str,
    bound: Duration,
    silence: &Silence,
) -> Result<Vec<(ListedNode, Vec<String>)>> {
    let call = Call::new(OpKind::List, &chunk[0], bound);
    let mut reader = client.new_multi_reader();
    for path in chunk {
        reader.add_get_data(path).map_err(|e| call.error(e))?;
        reader.add_get_children(path).map_err(|e| call.error(e))?;
    }
    let results = commit(&mut reader, &call, chunk.len() * 2, silence).await?;
    let mut out = Vec::with_capacity(chunk.len());
    let mut results = results.into_iter();
    for path in chunk {
        let (data, children) = (results.next(), results.next());
        let node_call = Call::new(OpKind::List, path, bound);
        match (data, children) {
            (
                Some(zk::MultiReadResult::Data { data, stat }),
                Some(zk::MultiReadResult::Children { children }),
            ) => out.push((
                ListedNode {
                    path: path.clone(),
                    data,
                    stat: convert::stat(&stat),
                },
                children,
            )),
            (Some(zk::MultiReadResult::Error { err }), _)
            | (_, Some(zk::MultiReadResult::Error { err })) => {
                let err = node_call.error(err);
                // Deleted between its parent's listing and this read: not part of the tree.
                if !(err.is_no_node() && path != root) {
                    return Err(err);
                }
            }
            (data, children) => {
                return Err(RegistryError::Backend {
                    op: OpKind::List,
                    path: path.clone(),
                    reason: format!("unexpected multi-read results {data:?} and {children:?}"),
                })
            }
        }
    }
    Ok(out)
}

/// Sends one multi-read request under `call`'s bound and checks that it answered each of its
/// `reads`. Each request counts in the session's [`Silence`] on its own: a long listing whose
/// batches keep answering is no silence.
async fn commit(
    reader: &mut zk::MultiReader<'_>,
    call: &Call<'_>,
    reads: usize,
    silence: &Silence,
) -> Result<Vec<zk::MultiReadResult>> {
    let _waiting = silence.call();
    let results = tokio::time::timeout(call.bound, reader.commit())
        .await
        .map_err(|_| call.timed_out())?
        .map_err(|e| call.error(e))?;
    if results.len() != reads {
        return Err(RegistryError::Backend {
            op: call.op,
            path: call.path.to_owned(),
            reason: format!(
                "multi-read returned {} results for {reads} reads",
                results.len()
            ),
        });
    }
    Ok(results)
}

/// One node's read: its data and stat, or why not.
type Read = Result<(Vec<u8>, Stat)>;

/// Reads every path of `paths` in multi-read requests of [`BATCH`] paths, [`IN_FLIGHT`] at once:
/// one result per path, in order. An error of the request itself (a lost connection, the bound)
/// fails the whole call; a missing node is that path's own `NoNode`.
pub(crate) async fn get_many(
    client: &zk::Client,
    paths: &[String],
    bound: Duration,
    silence: &Silence,
) -> Result<Vec<Read>> {
    let batches: Vec<Vec<Read>> =
        futures::stream::iter(paths.chunks(BATCH).map(<[String]>::to_vec))
            .map(|chunk| async move { get_batch(client, &chunk, bound, silence).await })
            .buffered(IN_FLIGHT)
            .try_collect()
            .await?;
    Ok(batches.into_iter().flatten().collect())
}

async fn get_batch(
    client: &zk::Client,
    chunk: &[String],
    bound: Duration,
    silence: &Silence,
) -> Result<Vec<Read>> {
    let call = Call::new(OpKind::GetMany, &chunk[0], bound);
    let mut reader = client.new_multi_reader();
    for path in chunk {
        reader.add_get_data(path).map_err(|e| call.error(e))?;
    }
    let results = commit(&mut reader, &call, chunk.len(), silence).await?;
    Ok(chunk
        .iter()
        .zip(results)
        .map(|(path, result)| {
            let node_call = Call::new(OpKind::Get, path, bound);
            match result {
                zk::MultiReadResult::Data { data, stat } => Ok((data, convert::stat(&stat))),
                zk::MultiReadResult::Error { err } => Err(node_call.error(err)),
                other => Err(RegistryError::Backend {
                    op: OpKind::GetMany,
                    path: path.clone(),
                    reason: format!("unexpected multi-read result {other:?}"),
                }),
            }
        })
        .collect())
}
