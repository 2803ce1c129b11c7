//! A process's cache in the simulator: the core's machine and the run's calls as it numbers
//! them, and how a gate's end reads to it (`cache.rs` drives them).

use crate::core::base::map::Map;
use crate::core::gate::action::End;
use crate::core::gates::scope::RequestKey;
use crate::core::rules::cache::Refusal;
use crate::core::rules::cache_flow::{CacheFlow, CallId, Ended};

/// A process's cache: the machine, and its calls by the run's indexes.
#[derive(Debug)]
pub(super) struct SimCache {
    pub(super) flow: CacheFlow<RequestKey>,
    /// The run's index of each call the machine knows.
    pub(super) indexes: Map<CallId, usize>,
    /// The machine's number of each call that leads a request.
    pub(super) leaders: Map<usize, CallId>,
}

impl SimCache {
    /// A cache driven by `flow`, knowing no call yet.
    pub(super) fn new(flow: CacheFlow<RequestKey>) -> Self {
        SimCache {
            flow,
            indexes: Map::default(),
            leaders: Map::default(),
        }
    }
}

/// How a led request's end reads to the machine: the gate's refusals as such, an answer by its
/// `status` (0: the inner fetch rejected), anything else a failure.
pub(super) fn ended_of(end: &End, status: u16) -> Ended {
    match end {
        End::Exhausted { .. } => Ended::Failed {
            refusal: Some(Refusal::Quota),
        },
        End::Abandoned { abandoned, .. } => Ended::Failed {
            refusal: Some(Refusal::Abandoned(abandoned.reason)),
        },
        End::Deliver if status > 0 => Ended::Responded {
            status,
            json: true,
            refusal: None,
        },
        _ => Ended::Failed { refusal: None },
    }
}
