//! Builders for views in decision tests.

use crate::types::{InstanceId, JobName, ShardItem};
use crate::view::{ItemView, JobView, ServerStatus};

pub(crate) fn job() -> JobName {
    JobName::new("orders").unwrap()
}

pub(crate) fn inst(s: &str) -> InstanceId {
    InstanceId::parse(s).unwrap()
}

pub(crate) fn view(instances: &[&InstanceId], leader: Option<&InstanceId>) -> JobView {
    JobView {
        job: Some(job()),
        instances: instances.iter().map(|i| (*i).clone()).collect(),
        servers: instances
            .iter()
            .map(|i| (i.ip().to_owned(), ServerStatus::Enabled))
            .collect(),
        leader: leader.cloned(),
        ..Default::default()
    }
}

pub(crate) fn disabled(mut v: JobView, ip: &str) -> JobView {
    v.servers.insert(ip.to_owned(), ServerStatus::Disabled);
    v
}

/// Assigns items: `owned(v, &[(0, &a), (1, &b)])`.
pub(crate) fn owned(mut v: JobView, items: &[(u32, &InstanceId)]) -> JobView {
    for (i, who) in items {
        v.items.entry(ShardItem(*i)).or_default().owner = Some((*who).clone());
    }
    v
}

pub(crate) fn with_item(mut v: JobView, i: u32, f: impl FnOnce(&mut ItemView)) -> JobView {
    f(v.items.entry(ShardItem(i)).or_default());
    v
}

/// Gives an instance labels, as its `instances/{id}` YAML would.
pub(crate) fn labelled(mut v: JobView, who: &InstanceId, labels: &[&str]) -> JobView {
    v.labels.insert(
        who.clone(),
        labels.iter().map(|l| (*l).to_owned()).collect(),
    );
    v
}
