//! `createFetch`'s engine. For every call: find the credential's gate, join its line, and once
//! admitted call the inner `fetch`; learn from the response's headers; then, as the core's
//! policy decides, hand back the very same `Response` (body unread), or dispose of its body
//! and retry through the same gate, or give up with a typed error.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::{future_to_promise, spawn_local};

use super::attempt::{self, Attempted};
use super::body;
use super::clock;
use super::errors::{abandoned_error, quota_error, range_error, type_error};
use super::figures;
use super::headers::{self, Credential};
use super::options::{self, Config};
use super::parked::Parked;
use super::probe;
use super::random::{fingerprint_key, OsRandom};
use super::read::{get, set};
use super::registry::gate_for;
use super::shared_gate::{Entry, Refusal, SharedGate};
use super::wait::Slot;
use super::Exported;
use crate::core::budget::BatchBudget;
use crate::core::classify::Outcome;
use crate::core::feedback::{honours_retry_after, parse_feedback, skim_feedback, Feedback};
use crate::core::gate::Ticket;
use crate::core::policy::{Abandoned, Budgets, Call, Reason, Verdict};
use crate::core::quota::{looks_exhausted, QuotaState};
use crate::core::scope::{fingerprint, Scope};
use crate::core::Millis;

/// A gated `fetch`. The package's `createFetch` wraps it in a plain function.
#[wasm_bindgen]
pub struct Transport {
    config: Rc<Config>,
    /// Gates this wrapper (and its batches) have used, most recent first, by credential
    /// fingerprint: the figures it reports, and no SHA-256 per call for a key seen before.
    gates: Rc<RefCell<Vec<Known>>>,
    batch: Option<Rc<RefCell<Batch>>>,
    /// Calls admitted at once whose attempt the package's fast path is making.
    parked: RefCell<Parked<(Flight, Ticket)>>,
}

/// A gate a wrapper has used, and the fingerprint of its credential.
type Known = (u64, Rc<SharedGate>);

/// One refresh round: a deadline for every call in it and, optionally, a retry allowance.
struct Batch {
    deadline: Millis,
    budget: Option<BatchBudget>,
}

/// What an attempt came to, before anything asynchronous: the policy's verdict and what the
/// caller would get if it is delivered.
struct Concluded {
    verdict: Verdict,
    outcome: Outcome,
    result: Result<JsValue, JsValue>,
}

/// Where a call's future picks up: in line, or after a fast-path attempt the gate could not
/// conclude at once.
enum Resume {
    Line(Entry),
    Concluded(Concluded),
}

/// After a verdict: the call is over, or it goes back in line.
enum Next {
    Done(JsValue),
    Again(Entry),
}

/// What one call carries from attempt to attempt.
struct Flight {
    config: Rc<Config>,
    gate: Rc<SharedGate>,
    batch: Option<Rc<RefCell<Batch>>>,
    input: JsValue,
    init: JsValue,
    signal: Option<web_sys::AbortSignal>,
    call: Option<Call>,
    credential: Credential,
}

#[wasm_bindgen]
impl Transport {
    /// Validates the options; see the package's `index.d.ts` for each one.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<Transport, JsValue> {
        Ok(Transport {
            config: Rc::new(options::config(&options)?),
            gates: Rc::new(RefCell::new(Vec::new())),
            batch: None,
            parked: RefCell::default(),
        })
    }

    /// `fetch(input, init)` through the credential's gate.
    pub fn fetch(&self, input: JsValue, init: JsValue) -> Exported {
        // Join the line now, in call order; only the waiting and the network are asynchronous.
        let signal = signal(&input, &init);
        let promise = match self.start(input, init, signal) {
            Ok((flight, entry)) => future_to_promise(flight.run(Resume::Line(entry))),
            Err(error) => js_sys::Promise::reject(&error),
        };
        Ok(promise.into())
    }

    /// The package's fast path. Joins the line as `fetch` does; a call the gate admits at once
    /// (with no store to ask) comes back as a number, a handle for `attemptTimeout` and
    /// `settle` while `attempt.js` sends it; any other call as `fetch`'s promise.
    /// `signal` is the caller's, found as `fetch` would find it.
    pub fn call(
        &self,
        input: JsValue,
        init: JsValue,
        signal: Option<web_sys::AbortSignal>,
    ) -> Exported {
        let (flight, entry) = match self.start(input, init, signal) {
            Ok(started) => started,
            Err(error) => return Ok(js_sys::Promise::reject(&error).into()),
        };
        Ok(match entry {
            Entry::Admitted(ticket) if flight.gate.store().is_none() => {
                let mut parked = self.parked.borrow_mut();
                JsValue::from(parked.park((flight, ticket)))
            }
            entry => future_to_promise(flight.run(Resume::Line(entry))).into(),
        })
    }

    /// Counts the attempt of a call `call` admitted and gives its timeout in ms: 0 for none.
    #[wasm_bindgen(js_name = attemptTimeout)]
    pub fn attempt_timeout(&self, handle: u32) -> f64 {
        let mut parked = self.parked.borrow_mut();
        match parked.get_mut(handle) {
            Some((flight, _)) => flight.sent(),
            None => 0.0,
        }
    }

    /// Concludes a fast-path attempt that ended as `attempt.js` says (`how`): the response,
    /// a rejection, or, when the call must wait or retry, a promise of what it comes to.
    /// `status` is the response's (`how` 0), read on the JavaScript side.
    pub fn settle(
        &self,
        handle: u32,
        value: JsValue,
        how: u8,
        status: u16,
    ) -> Result<JsValue, JsValue> {
        let parked = self.parked.borrow_mut().take(handle);
        let (mut flight, ticket) = parked.ok_or_else(|| range_error("Unknown call handle"))?;
        let concluded = flight.conclude(ticket, Attempted::from_js(value, how, status))?;
        if flight.gate.store().is_none() && matches!(concluded.verdict, Verdict::Deliver) {
            return concluded.result;
        }
        Ok(future_to_promise(flight.run(Resume::Concluded(concluded))).into())
    }

    /// The `fetch` option, or undefined for the global `fetch`.
    #[wasm_bindgen(js_name = innerFetch)]
    pub fn inner_fetch(&self) -> Exported {
        Ok(self
            .config
            .fetch
            .clone()
            .map_or(JsValue::UNDEFINED, JsValue::from))
    }

    /// Whether calls are retried (any `retry` option but `false`).
    #[wasm_bindgen(getter)]
    pub fn retrying(&self) -> bool {
        self.config.retry.is_some()
    }

    /// A `fetchImpl` for one refresh round sharing this wrapper's gates: every call in it
    /// gives up rather than be admitted after `deadlineMs` from now, and the round's retries
    /// are limited to `retryBudget` in all.
    pub fn batch(&self, options: JsValue) -> Result<Transport, JsValue> {
        let (deadline_ms, retry_budget) = options::batch(&options)?;
        Ok(Transport {
            config: self.config.clone(),
            gates: self.gates.clone(),
            batch: Some(Rc::new(RefCell::new(Batch {
                deadline: clock::now() + deadline_ms,
                budget: retry_budget.map(BatchBudget::new),
            }))),
            parked: RefCell::default(),
        })
    }

    /// Live figures of every gate this wrapper has used.
    pub fn stats(&self) -> Exported {
        let gates: Vec<_> = self.gates.borrow().iter().map(|(_, g)| g.clone()).collect();
        let stats = figures::stats(&gates);
        if let Some(batch) = &self.batch {
            let batch = batch.borrow();
            let object = js_sys::Object::new();
            set(
                &object,
                "remainingMs",
                (batch.deadline - clock::now()).max(0.0).into(),
            );
            let left = batch.budget.as_ref().map(|b| b.left());
            set(
                &object,
                "retriesLeft",
                left.map_or(JsValue::NULL, JsValue::from),
            );
            let _ = js_sys::Reflect::set(&stats, &"batch".into(), &object);
        }
        Ok(stats)
    }

    /// The configuration summary, as an object with a `text` rendering.
    pub fn describe(&self) -> Exported {
        Ok(figures::describe(&self.config))
    }

    /// Declares the quota available again on every gate this wrapper has used.
    #[wasm_bindgen(js_name = resetQuota)]
    pub fn reset_quota(&self) {
        for (_, gate) in self.gates.borrow().iter() {
            gate.with(|g| g.reset_quota());
            gate.share_quota(0.0);
        }
    }
}

impl Transport {
    fn start(
        &self,
        input: JsValue,
        init: JsValue,
        signal: Option<web_sys::AbortSignal>,
    ) -> Result<(Flight, Entry), JsValue> {
        let (credential, method) = headers::request(&input, &init);
        let gate = self.gate(&credential)?;
        let call = self.config.retry.as_ref().map(|policy| {
            let replayable = policy.rules.may_replay(&method, credential.idempotency_key);
            let batch_deadline = self.batch.as_ref().map(|b| b.borrow().deadline);
            policy.start(clock::now(), batch_deadline, replayable)
        });
        let mut flight = Flight {
            config: self.config.clone(),
            gate,
            batch: self.batch.clone(),
            input,
            init,
            signal,
            call,
            credential,
        };
        let entry = flight.enter()?;
        Ok((flight, entry))
    }

    fn gate(&self, credential: &Credential) -> Result<Rc<SharedGate>, JsValue> {
        let (key, auth) = (
            credential.api_key.as_deref(),
            credential.authorization.as_deref(),
        );
        let print = fingerprint(key, auth, fingerprint_key());
        let mut gates = self.gates.borrow_mut();
        if let Some(index) = gates.iter().position(|(p, _)| *p == print) {
            if index > 0 {
                let known = gates.remove(index);
                gates.insert(0, known);
            }
            return Ok(gates[0].1.clone());
        }
        let store = self.config.store.clone();
        let scope = Scope::of(key, auth);
        let gate = gate_for(&scope, self.config.rate, self.config.budget, store)?;
        gates.insert(0, (print, gate.clone()));
        Ok(gate)
    }
}

impl Flight {
    /// The call's deadline: its own time budget or its batch's; none with `retry: false`.
    fn deadline(&self) -> Millis {
        match (&self.call, &self.batch) {
            (Some(call), _) => call.deadline(),
            (None, Some(batch)) => batch.borrow().deadline,
            (None, None) => f64::INFINITY,
        }
    }

    /// Joins the gate's line, turning a refusal into the error the caller sees.
    fn enter(&mut self) -> Result<Entry, JsValue> {
        let refused = match self.gate.enter(self.signal.as_ref(), self.deadline()) {
            Ok(entry) => return Ok(entry),
            Err(refusal) => refusal,
        };
        Err(self.refused(refused))
    }

    fn refused(&self, refusal: Refusal) -> JsValue {
        match refusal {
            Refusal::Aborted(reason) => reason,
            Refusal::Exhausted(end) => quota_error(end),
            Refusal::StoreDown => self.give_up(Reason::StoreUnavailable),
            Refusal::Late => {
                let reason = self
                    .call
                    .as_ref()
                    .map_or(Reason::Deadline, Call::deadline_reason);
                self.give_up(reason)
            }
        }
    }

    fn give_up(&self, reason: Reason) -> JsValue {
        let abandoned = match &self.call {
            Some(call) => call.abandon(reason),
            None => Abandoned {
                reason,
                attempts: 0,
                status: None,
                retry_after_ms: None,
            },
        };
        self.abandon(abandoned, None)
    }

    /// Counts a call given up, tells `onEvent`, and makes the error the caller gets.
    fn abandon(&self, abandoned: Abandoned, cause: Option<JsValue>) -> JsValue {
        self.gate.with(|g| g.record_abandoned(abandoned.reason));
        self.config
            .events
            .emit("abandoned", self.gate.scope().as_str(), |e| {
                set(e, "reason", abandoned.reason.as_str().into());
                set(e, "attempts", abandoned.attempts.into());
            });
        abandoned_error(abandoned, cause)
    }

    /// Attempts until the policy delivers or gives up. (One future type for every path: each
    /// is another copy of the task machinery in the wasm.)
    async fn run(mut self, from: Resume) -> Result<JsValue, JsValue> {
        let mut entry = match from {
            Resume::Line(entry) => entry,
            Resume::Concluded(concluded) => match Box::pin(self.follow(concluded)).await? {
                Next::Done(value) => return Ok(value),
                Next::Again(next) => next,
            },
        };
        loop {
            let ticket = entry.admitted().await.map_err(|r| self.refused(r))?;
            let fetch = match &self.config.fetch {
                Some(fetch) => fetch.clone(),
                None => global_fetch()?,
            };
            let timeout = self.sent();
            let signal = self.signal.as_ref();
            let attempted = attempt::send(&fetch, &self.input, &self.init, signal, timeout).await;
            let concluded = self.conclude(ticket, attempted)?;
            // Boxed: a call waiting in line then holds a small future, not room for the
            // largest state of what follows an attempt.
            match Box::pin(self.follow(concluded)).await? {
                Next::Done(value) => return Ok(value),
                Next::Again(next) => entry = next,
            }
        }
    }

    /// Counts an attempt going out and gives its timeout in whole ms: 0 for none
    /// (`retry: false`), else at least 1.
    fn sent(&mut self) -> Millis {
        // A call exists exactly when there is a policy.
        let (Some(call), Some(policy)) = (&mut self.call, &self.config.retry) else {
            return 0.0;
        };
        call.sent();
        let left = call.deadline() - clock::now();
        policy.attempt_timeout_ms.min(left).ceil().max(1.0)
    }

    /// Learns from an attempt's end and asks the policy what next. Synchronous, so the fast
    /// path concludes a delivered call without a future.
    fn conclude(&mut self, ticket: Ticket, attempted: Attempted) -> Result<Concluded, JsValue> {
        self.gate.responded(ticket);
        let (outcome, result) = match attempted {
            Attempted::CallerAborted(reason) => return Err(reason),
            Attempted::Failed { error, timeout } => {
                let outcome = if timeout {
                    Outcome::Timeout
                } else {
                    Outcome::Network
                };
                (outcome, Err(error))
            }
            Attempted::Response(response, status) => {
                let feedback = self.observe(&response, status)?;
                let outcome = Outcome::Response {
                    status,
                    retry_after_ms: feedback.and_then(|f| f.retry_after_ms),
                };
                (outcome, Ok(response))
            }
        };
        let verdict = match (&mut self.call, &self.config.retry) {
            (Some(call), Some(policy)) => {
                let mut batch = self.batch.as_ref().map(|b| b.borrow_mut());
                let shared = self.gate.store().is_some();
                self.gate.with(|g| {
                    let budgets = Budgets {
                        // With a store, the store's budget is charged in `follow`.
                        gate: if shared { None } else { g.budget_mut() },
                        batch: batch.as_mut().and_then(|b| b.budget.as_mut()),
                    };
                    policy.after(call, outcome, clock::now(), budgets, &mut OsRandom)
                })
            }
            _ => Verdict::Deliver,
        };
        Ok(Concluded {
            verdict,
            outcome,
            result,
        })
    }

    /// Acts on a verdict: delivers, gives up, or disposes of the response, waits out its own
    /// backoff and joins the line again.
    async fn follow(&mut self, concluded: Concluded) -> Result<Next, JsValue> {
        let Concluded {
            verdict,
            outcome,
            result,
        } = concluded;
        let retry = match self.charge_store(verdict, outcome).await {
            Verdict::Deliver => return result.map(Next::Done),
            Verdict::Abandon(abandoned) => Err(abandoned),
            Verdict::Retry {
                not_before,
                delay_ms,
                server_delay,
                ..
            } => Ok((not_before, delay_ms, server_delay)),
        };
        // The caller will never see this response: free its connection, and ask whether
        // the 429 meant the monthly quota.
        let error = match result {
            Ok(response) => {
                let text = body::discard(&response).await;
                if outcome_status(outcome) == Some(429) {
                    self.check_quota(text).await?;
                }
                None
            }
            Err(error) => Some(error),
        };
        match retry {
            Err(abandoned) => Err(self.abandon(abandoned, error)),
            Ok((not_before, delay_ms, server_delay)) => {
                let backoff = (!server_delay).then_some(delay_ms);
                self.gate.with(|g| g.record_retry(outcome, backoff));
                let attempts = self.call.as_ref().map_or(0, Call::attempts);
                self.config
                    .events
                    .emit("retry", self.gate.scope().as_str(), |e| {
                        set(e, "attempt", (attempts + 1).into());
                        set(e, "delayMs", delay_ms.into());
                        set(e, "serverDelay", server_delay.into());
                    });
                // A Retry-After already holds the whole gate; only our own backoff sleeps.
                if not_before > self.gate.with(|g| g.blocked_until()) {
                    super::sleep::until(not_before, self.signal.as_ref()).await?;
                }
                Ok(Next::Again(self.enter()?))
            }
        }
    }

    /// With a shared store, pays for a retry from the store's budget (giving the batch's retry
    /// back if the store refuses), and refunds a success.
    async fn charge_store(&mut self, verdict: Verdict, outcome: Outcome) -> Verdict {
        let Some(config) = self.config.budget.filter(|_| self.gate.store().is_some()) else {
            return verdict;
        };
        let Some(call) = &mut self.call else {
            return verdict;
        };
        match verdict {
            Verdict::Retry { kind, .. } => {
                let cost = config.cost(kind);
                if self.gate.charge(cost).await {
                    call.charged(cost);
                    return verdict;
                }
                if let Some(batch) = &self.batch {
                    if let Some(b) = batch.borrow_mut().budget.as_mut() {
                        b.refund();
                    }
                }
                Verdict::Abandon(call.abandon(Reason::RetryBudget))
            }
            Verdict::Deliver => {
                if matches!(outcome, Outcome::Response { status, .. } if status < 400) {
                    self.gate.refund(call.success_refund(&config));
                }
                verdict
            }
            Verdict::Abandon(_) => verdict,
        }
    }

    /// Feeds a response's headers to the gate (and the quota watch). A `Retry-After` too
    /// large to honour exactly rejects the call, never a shorter wait.
    fn observe(&self, response: &JsValue, status: u16) -> Result<Option<Feedback>, JsValue> {
        // With `retry: false` only a 429 is read; with retries every response may pace us.
        if self.call.is_none() && status != 429 {
            return Ok(None);
        }
        let read = headers::feedback_lookup(response);
        let honoured = honours_retry_after(status);
        let header = |name: &str| {
            (honoured || name != "retry-after")
                .then(|| read(name))
                .flatten()
        };
        let parsed = if status == 429 {
            parse_feedback(&header, clock::wall_now())
        } else {
            skim_feedback(&header, clock::wall_now())
        };
        let feedback = match parsed {
            Ok(feedback) => feedback,
            Err(error) => {
                // Counted and recorded, but no cooldown: the call itself fails loudly instead.
                let readable = parse_feedback(
                    &|name| (name != "retry-after").then(|| read(name)).flatten(),
                    clock::wall_now(),
                );
                self.gate.observe(status, readable.unwrap_or_default());
                body::cancel(&get(response, "body"));
                return Err(range_error(&error.to_string()));
            }
        };
        let retry_after = feedback.retry_after_ms;
        self.gate.observe(status, feedback.clone());
        if status == 429 {
            self.config
                .events
                .emit("throttled", self.gate.scope().as_str(), |e| {
                    set(
                        e,
                        "retryAfterMs",
                        retry_after.map_or(JsValue::NULL, JsValue::from),
                    );
                });
        }
        // A run of bare 429s starts the probe. Without retries the 429 still goes back
        // untouched; the probe's answer is for later calls.
        if self
            .gate
            .with(|g| g.quota_suspect(status, retry_after.is_some()))
        {
            self.start_probe();
        }
        Ok(Some(feedback))
    }

    /// After a 429 the caller will not see: probe `/usage` once for the gate if it looks like
    /// the monthly quota, wait for the probe's answer, and fail fast when it confirms.
    async fn check_quota(&self, text: Option<String>) -> Result<(), JsValue> {
        let says = text.as_deref().is_some_and(body_says_quota);
        if says && self.gate.with(|g| g.quota_hint()) {
            self.start_probe();
        }
        let slot = Slot::default();
        if self.gate.probe_running(&slot) {
            slot.wait().await;
        }
        let now = clock::now();
        match self.gate.with(|g| g.quota(now)) {
            QuotaState::Exhausted { until } => {
                Err(quota_error(until.map(|u| clock::wall_now() + (u - now))))
            }
            _ => Ok(()),
        }
    }

    fn start_probe(&self) {
        self.gate.probe_started();
        let url = self.config.usage_url.clone().or_else(|| {
            headers::url(&self.input).and_then(|u| crate::core::quota::usage_url_for(&u))
        });
        let probe = probe::Probe {
            gate: self.gate.clone(),
            config: self.config.clone(),
            url,
            api_key: self.credential.api_key.clone(),
            authorization: self.credential.authorization.clone(),
        };
        spawn_local(probe.run());
    }
}

fn outcome_status(outcome: Outcome) -> Option<u16> {
    match outcome {
        Outcome::Response { status, .. } => Some(status),
        _ => None,
    }
}

/// Whether a 429 body (JSON `{ code, detail }`) speaks of the monthly quota.
fn body_says_quota(text: &str) -> bool {
    let Ok(json) = js_sys::JSON::parse(text) else {
        return false;
    };
    let field = |k| get(&json, k).as_string();
    looks_exhausted(field("code").as_deref(), field("detail").as_deref())
}

/// The `AbortSignal` of the call: `init.signal`, else that of a `Request` passed as `input`.
fn signal(input: &JsValue, init: &JsValue) -> Option<web_sys::AbortSignal> {
    [init, input]
        .into_iter()
        .filter(|v| v.is_object())
        .map(|v| get(v, "signal"))
        .find(|s| s.is_object())
        .map(JsCast::unchecked_into)
}

/// The global `fetch`, looked up at call time so a test or polyfill installed later is used.
pub fn global_fetch() -> Result<js_sys::Function, JsValue> {
    get(&js_sys::global(), "fetch")
        .dyn_into()
        .map_err(|_| type_error("No global `fetch`: pass one as the `fetch` option"))
}
