//! What a wrapper asks of the gates it uses (its [`Profile`]), and what one of its calls
//! brings ([`Request`]): plain values, read by the bindings from `createFetch`'s options and
//! from each `fetch(input, init)`.

use std::cell::RefCell;
use std::rc::Rc;

use crate::core::rules::allowance::Allowance;
use crate::core::rules::batch::Batch;
use crate::core::rules::budget::RefillingConfig;
use crate::core::rules::classify::Body;
use crate::core::rules::policy::RetryPolicy;
use crate::core::Millis;

/// A shared store's number among the gates' stores (see [`Gates::store`]).
///
/// [`Gates::store`]: super::Gates::store
pub type StoreId = usize;

/// Where a gate's state lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keeping {
    /// In this process: in memory every thread of the process shares (`threads: true`), or in
    /// the thread's own.
    Memory {
        /// Shared by the process's threads.
        threads: bool,
    },
    /// In a shared store other processes reach too.
    Store(StoreId),
}

/// What a wrapper asks of its gates.
#[derive(Debug, Clone)]
pub struct Profile {
    /// The key's allowance, or how it is learned.
    pub allowance: Allowance,
    /// The gate's shared retry budget; `None` for a wrapper that does not retry or has none.
    pub budget: Option<RefillingConfig>,
    /// Where the gates' state lives.
    pub keeping: Keeping,
    /// The retry policy; `None` for observe-and-admit (`retry: false`).
    pub policy: Option<Rc<RetryPolicy>>,
    /// Refuse a call whose admission is predicted later than this.
    pub max_wait_ms: Option<Millis>,
    /// Refuse a call when this many already wait.
    pub max_waiting: Option<usize>,
    /// Someone measures each admission's wait (a metrics histogram).
    pub reports_wait: bool,
    /// Its calls end with typed errors (see [`CallSpec::typed_errors`]).
    ///
    /// [`CallSpec::typed_errors`]: crate::core::gate::call::CallSpec::typed_errors
    pub typed_errors: bool,
}

impl Profile {
    /// Whether the wrapper learns its allowance (and so tells limiters apart by route).
    pub fn learns(&self) -> bool {
        matches!(self.allowance, Allowance::Learned(_))
    }
}

/// What one `fetch(input, init)` brings.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// `X-API-Key`, when sent.
    pub api_key: Option<&'a str>,
    /// `Authorization`, when sent.
    pub authorization: Option<&'a str>,
    /// An `Idempotency-Key` makes a non-idempotent method safe to replay.
    pub idempotency_key: bool,
    /// The method.
    pub method: &'a str,
    /// What kind of body it sends.
    pub body: Body,
    /// The URL, read only for a wrapper that learns (see [`Profile::learns`]); empty otherwise.
    pub url: &'a str,
    /// The refresh round it belongs to.
    pub batch: Option<Rc<RefCell<Batch>>>,
}
