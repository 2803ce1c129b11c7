//! Lanes in a simulated run (`simulate({ lanes })`, `odds-gate simulate --lane`): groups of
//! workers whose calls wait in lanes of their own on the one shared gate, each made with
//! [`Gates::lane`](crate::core::gates::Gates::lane) as `fetchImpl.lane()` makes it, and each
//! lane's figures after the run.

use std::ops::Range;

use super::world::World;
use crate::core::gates::ids::WrapperId;
use crate::core::gates::lane_name;
use crate::core::rules::allowance::{at_least, positive, ConfigError};
use crate::core::rules::ranges::SIM_CALLS;
use crate::core::Millis;

/// A lane of workers, beside the wrapper's own (`SimOptions::workers`).
#[derive(Debug, Clone, PartialEq)]
pub struct SimLane {
    /// Its name; `None`: as an unnamed `lane()` is called (`lane-<n>`).
    pub name: Option<String>,
    /// Its share against the other lanes' (the wrapper's own workers: 1).
    pub weight: f64,
    /// Its workers, each fetching `snapshots` one after another.
    pub workers: u32,
    /// Snapshots each of its workers fetches.
    pub snapshots: u32,
    /// When its workers start, in virtual ms.
    pub start_ms: Millis,
}

impl SimLane {
    /// Checks the lane's fields; each error names its field as written in the lane
    /// (`weight`); [`ConfigError::Item`] says which lane.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(name) = &self.name {
            lane_name::check("name", name)?;
        }
        positive("weight", self.weight)?;
        let count = |field, n: u32| match SIM_CALLS.holds(n.into()) {
            Some(_) => Ok(()),
            None => Err(ConfigError::OutOfRange {
                field,
                expected: "an integer from 1 to 100000",
                got: n.into(),
            }),
        };
        count("workers", self.workers)?;
        count("snapshots", self.snapshots)?;
        at_least("startMs", self.start_ms, 0.0, "a finite number >= 0")?;
        Ok(())
    }
}

/// One lane's share of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneReport {
    /// Its name (`default` for the wrapper's own workers).
    pub name: String,
    /// Its weight.
    pub weight: f64,
    /// Its workers: their numbers in the timeline.
    pub workers: Range<u32>,
    /// When they started.
    pub start_ms: Millis,
    /// Its calls (workers x snapshots).
    pub calls: u64,
    /// Its attempts the gate let through.
    pub admitted: u64,
    /// Of those, answered 429.
    pub throttled: u64,
    /// When its last call was done (settled).
    pub done_ms: Millis,
    /// Its admissions' mean wait in the queue, in ms.
    pub mean_wait_ms: Millis,
    /// Their longest wait in the queue, in ms.
    pub max_wait_ms: Millis,
}

/// For JavaScript: its workers as `firstWorker` and `workers` (how many), the rest as named.
#[cfg(feature = "serde")]
impl serde::Serialize for LaneReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut lane = s.serialize_struct("LaneReport", 11)?;
        lane.serialize_field("name", &self.name)?;
        lane.serialize_field("weight", &self.weight)?;
        lane.serialize_field("firstWorker", &self.workers.start)?;
        lane.serialize_field("workers", &self.workers.len())?;
        lane.serialize_field("startMs", &self.start_ms)?;
        lane.serialize_field("calls", &self.calls)?;
        lane.serialize_field("admitted", &self.admitted)?;
        lane.serialize_field("throttled", &self.throttled)?;
        lane.serialize_field("doneMs", &self.done_ms)?;
        lane.serialize_field("meanWaitMs", &self.mean_wait_ms)?;
        lane.serialize_field("maxWaitMs", &self.max_wait_ms)?;
        lane.end()
    }
}

/// A group of workers: the wrapper's own, or a lane's, with the wrapper their calls go through.
pub(super) struct Group {
    pub wrapper: WrapperId,
    pub name: Option<String>,
    pub workers: Range<u32>,
    pub start_ms: Millis,
}

/// Each group's figures, from the run's log (`worker_of`: the worker of each call, by index)
/// and the lanes' own figures in process 0, where the lanes' gate is.
pub(super) fn report(world: &World, worker_of: &[u32], groups: &[Group]) -> Vec<LaneReport> {
    let gates = &world.processes[0].gates;
    groups
        .iter()
        .filter_map(|group| {
            let (lane, figures, _) = gates.lane_of(group.wrapper)?;
            let mine = |index: usize| {
                worker_of
                    .get(index)
                    .is_some_and(|w| group.workers.contains(w))
            };
            let sent = world.log.sent.iter().filter(|s| mine(s.index));
            let throttled = sent.filter(|s| s.status == Some(429)).count();
            let done_ms = (world.log.settled.iter())
                .filter(|(i, _)| mine(*i))
                .map(|(_, (at, _))| *at)
                .fold(0.0, f64::max);
            let mean_wait_ms = match figures.admitted {
                0 => 0.0,
                n => figures.waited_ms / n as f64,
            };
            let name = group.name.clone();
            Some(LaneReport {
                name: name.unwrap_or_else(|| lane_name::unnamed(lane)),
                weight: lane.weight,
                workers: group.workers.clone(),
                start_ms: group.start_ms,
                calls: (0..worker_of.len()).filter(|&i| mine(i)).count() as u64,
                admitted: figures.admitted,
                throttled: throttled as u64,
                done_ms,
                mean_wait_ms,
                max_wait_ms: figures.longest_ms,
            })
        })
        .collect()
}
