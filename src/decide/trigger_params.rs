//! A trigger's parameters (`shardcronctl trigger JOB --param VALUE --items LIST`): the job
//! parameter its one run carries and the items it is limited to. They travel in
//! `shardcron/trigger/{instanceId}` (JSON), beside the plain `trigger/{instanceId}` node a Java
//! ElasticJob instance takes as an ordinary trigger; the instance that takes the trigger reads and
//! deletes them in the same step.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::types::ShardItem;

/// The most bytes a parameters record may hold (a job parameter is a short value, not a payload).
pub const MAX_PARAMS_BYTES: usize = 64 * 1024;
/// The most items a trigger may name.
pub const MAX_ITEMS: usize = 10_000;

/// The parameters of one trigger.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TriggerParams {
    /// The job parameter of the run, in place of the config's `jobParameter`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_parameter: Option<String>,
    /// Only these items run (those of them the instance owns); `None`: every owned item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<BTreeSet<u32>>,
    /// The workflow run a trigger of a whole root job starts (`m` and the trigger's epoch
    /// milliseconds, the same for every instance asked): its downstream jobs run after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_run: Option<String>,
}

impl TriggerParams {
    /// Whether they ask for nothing beyond a plain trigger.
    pub fn is_plain(&self) -> bool {
        self.job_parameter.is_none() && self.items.is_none() && self.workflow_run.is_none()
    }

    /// The items as sharding items.
    pub fn shard_items(&self) -> Option<BTreeSet<ShardItem>> {
        self.items
            .as_ref()
            .map(|items| items.iter().map(|i| ShardItem(*i)).collect())
    }

    /// Checks the bounds: the record's size, the number of items.
    pub fn check(&self) -> Result<(), String> {
        if self.items.as_ref().is_some_and(|i| i.len() > MAX_ITEMS) {
            return Err(format!("more than {MAX_ITEMS} items"));
        }
        if let Some(run) = &self.workflow_run {
            if !run.starts_with('m') || crate::decide::workflow::run::RunId::parse(run).is_none() {
                return Err(format!(
                    "workflowRun {run:?} is not a run started by hand (m and digits)"
                ));
            }
        }
        if self.items.as_ref().is_some_and(BTreeSet::is_empty) {
            return Err("an empty item list runs nothing".into());
        }
        if self.job_parameter.as_ref().map_or(0, String::len) > MAX_PARAMS_BYTES / 2 {
            return Err(format!(
                "the job parameter is longer than {} bytes",
                MAX_PARAMS_BYTES / 2
            ));
        }
        Ok(())
    }

    /// The record's data.
    pub fn encode(&self) -> Vec<u8> {
        // Strings and integers always serialise.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads a record's data, bounded before it is parsed.
    pub fn parse(data: &[u8]) -> Result<Self, String> {
        if data.len() > MAX_PARAMS_BYTES {
            return Err(format!(
                "{} bytes, over the {MAX_PARAMS_BYTES} a trigger's parameters may hold",
                data.len()
            ));
        }
        let params: Self =
            serde_json::from_slice(data).map_err(|e| format!("not trigger parameters: {e}"))?;
        params.check()?;
        Ok(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_round_trip_and_bad_records_are_refused_with_the_reason() {
        let p = TriggerParams {
            job_parameter: Some("date=2026-11-25".into()),
            items: Some([0, 2].into()),
            workflow_run: None,
        };
        assert_eq!(TriggerParams::parse(&p.encode()), Ok(p.clone()));
        assert_eq!(
            String::from_utf8(p.encode()).unwrap(),
            r#"{"jobParameter":"date=2026-11-25","items":[0,2]}"#
        );
        assert!(TriggerParams::default().is_plain());
        let cases: [(&[u8], &str); 5] = [
            (br#"{"workflowRun":"12345"}"#, "not a run started by hand"),
            (b"not json", "not trigger parameters"),
            (br#"{"jobParameter":"x","extra":1}"#, "unknown field"),
            (br#"{"items":[]}"#, "empty item list"),
            (&[b' '; MAX_PARAMS_BYTES + 1], "over the"),
        ];
        for (data, why) in cases {
            let err = TriggerParams::parse(data).unwrap_err();
            assert!(err.contains(why), "{err} should say {why}");
        }
    }
}
