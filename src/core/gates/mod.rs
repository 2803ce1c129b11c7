//! Many gates, and everything between them: quinn-proto's `Endpoint` to the [`Gate`]'s
//! `Connection`. [`Gates`] owns the scope → gate map (one gate per credential, and per limiter
//! limiter for a learning wrapper), the credentials' route tables, scouting, moving calls to
//! their limiter's gate, forgetting idle gates, the rules between wrappers that share a
//! credential, and what a gate tells the fleet and takes from it. Like the gate it is sans-IO:
//! the driver hands in `now` and what happened to a call (by its [`CallRef`], which stays the
//! same when the call moves), and performs what [`poll_action`](Gates::poll_action) says; one
//! timer serves every gate ([`poll_timeout`](Gates::poll_timeout)).
//!
//! Its catalogue, wherever each is written:
//! - **Set-up** (`wrappers.rs`): `store`, `wrapper`, `lane`, `lane_of_wrapper`, `retain` and
//!   `release` (a wrapper's holders), `reset_quota`, `clear_cooldown`; `insert` takes a gate
//!   made elsewhere (the gate's own tests).
//! - **Inputs**, what happened (here): `start` (a wrapper's call) and `start_on` (a call on a
//!   given gate); of an attempt, `attempt_ended` (the driver's one door), which reaches
//!   `responded` / `responded_with` (a response), `failed` (none) or `cancel`; `disposed` (a
//!   response body nobody will read, and what it said); `usage` (a probe's `/usage`); `abort`
//!   (the caller's signal); `store_answered` (the store's answer to an operation); in
//!   `sharing.rs`, `recalled` (what the fleet keeps of a credential, for a gate just made); in
//!   `wake.rs`, `handle_timeout` (the one timer fired).
//! - **Outputs**: `poll_action` (the next [`Action`]: send, settle, a store operation, an event,
//!   a gate forgotten), `poll_timeout` (when to wake next; `sweep_timeout` in `sweep.rs`, the
//!   sweep's share of it).
//! - **Queries**, which change nothing the calls see: in `view.rs`, `gates_of`, `lane_of`,
//!   `retired`, `gate_of`, `find`, `holds`, `budget`, `view`, `len`, `gate_mut`; in
//!   `report.rs`, `stats`, `observed` and `facts` (what `stats()`, the metrics and
//!   `describe()` show); `profile` and `shares_memory` in `wrappers.rs`.

pub mod action;
pub(crate) mod compat;
pub mod fleet;
pub(crate) mod home;
#[cfg(feature = "serde")]
pub mod hook;
pub mod ids;
pub(crate) mod lane_name;
pub(crate) mod memos;
pub mod profile;
#[cfg(feature = "serde")]
pub mod report;
pub mod scope;
pub mod view;

mod moves;
mod sharing;
mod sweep;
mod wake;
mod wrappers;

use std::collections::VecDeque;
use std::rc::Rc;

use self::action::{Action, Refused, Started};
use self::home::Home;
use self::ids::{CallRef, GateId, WrapperId};
use self::memos::Memos;
use self::profile::{Keeping, Profile, Request};
use self::scope::{fingerprint, sendable, Print, Scope};
use crate::core::base::map::{Map, Set};
use crate::core::base::slab::{Mirror, Slab};
use crate::core::base::timeline::Timeline;
use crate::core::gate::action::{Event, GateAction, OpId};
use crate::core::gate::call::CallSpec;
use crate::core::gate::figures::Counts;
use crate::core::gate::ids::CallId;
use crate::core::gate::queue::{Lane, Rank};
use crate::core::gate::respond::BodyFacts;
use crate::core::gate::store_link::{StoreReply, StoreSettings};
use crate::core::gate::Gate;
use crate::core::parse::feedback::Feedback;
use crate::core::rules::classify::{Body, Ended, Failure};
use crate::core::rules::fair::LaneId;
use crate::core::rules::quota::{asks_account, Usage};
use crate::core::rules::routes::{route_of, LimiterFeedback, Role, Routes};
use crate::core::Millis;

/// Gates looked at for eviction each time a gate is made: enough to keep up with any stream of
/// new keys, few enough to cost nothing.
pub(crate) const SWEEP_PER_GATE: usize = 2;
/// When no new gates come to sweep the old ones, a sweep runs this often while any gate is
/// left (on a timer that does not keep the process alive)...
pub const SWEEP_EVERY_MS: Millis = 10_000.0;
/// ...and looks at a sixth of the gates (at least this many), so that every gate is looked at
/// within a minute and no sweep holds the thread for long.
pub const SWEEP_AT_LEAST: usize = 1_024;

/// A wrapper's admissions, across its gates (`stats().lane`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LaneFigures {
    /// Its calls admitted (first attempts and retries).
    pub admitted: u64,
    /// How long they waited in the queue in all, in ms.
    pub waited_ms: Millis,
    /// The longest of those waits, in ms.
    pub longest_ms: Millis,
}

/// One gate and what the gates keep beside it. The gate is boxed: the slots of the gates'
/// slab grow by doubling, and an empty slot costs its size.
struct Entry {
    scope: Scope,
    gate: Box<Gate>,
    keeping: Keeping,
    /// The gate's calls by its own numbers.
    refs: Mirror<CallRef>,
    /// The wrappers that used it, with the fingerprint they know it by.
    users: Vec<(WrapperId, Option<Print>)>,
    /// When it was last used (a count of calls made).
    used: u64,
    /// Its next wake-up.
    due: Option<Millis>,
    /// It may have something to do (it is in the gates' ready list).
    ready: bool,
}

/// Where a call is.
#[derive(Debug, Clone)]
struct Placed {
    gate: GateId,
    call: CallId,
    /// The wrapper that made it (none for a call started on a given gate).
    wrapper: Option<WrapperId>,
    route: Option<Rc<str>>,
}

/// A wrapper: what it asks for, the gates it used, and the figures of those since forgotten.
struct Wrapper {
    profile: Profile,
    /// The lane its calls wait in.
    lane: Lane,
    /// Its calls' admissions, wherever they were.
    lane_figures: LaneFigures,
    prints: Map<Print, GateId>,
    gates: Set<GateId>,
    retired: Counts,
    holders: usize,
}

/// Every gate of one thread, and the rules between them.
pub struct Gates {
    home: Box<dyn Home>,
    keys: (u64, u64),
    entries: Slab<Entry>,
    scopes: Map<Scope, GateId>,
    /// Each credential's routes, boxed: the table's slots are a scope and a pointer, as the
    /// limiters' are, so both tables share one copy of the table's code, and an empty slot
    /// costs a pointer rather than the routes.
    routes: Map<Scope, Box<Routes>>,
    /// How many gates each credential has for limiters other than its first (at most
    /// [`MAX_LIMITERS`](crate::core::rules::routes::MAX_LIMITERS)).
    limiters: Map<Scope, usize>,
    /// Gates in the order they are next looked at for eviction.
    sweep: VecDeque<GateId>,
    /// When the next timed sweep is due (set while any gate is left).
    sweep_due: Option<Millis>,
    /// The timed sweeps' round: gates each looks at (a sixth of those there when the round
    /// began, or more if more came), and the sweeps left in it.
    sweep_round: (usize, u32),
    /// What forgotten gates in this thread's memory left: estimates, budgets not full.
    memos: Memos,
    calls: Slab<Placed>,
    wrappers: Slab<Wrapper>,
    /// Each store's identity and settings, by [`StoreId`].
    identities: Vec<String>,
    stores: Vec<StoreSettings>,
    actions: VecDeque<Action>,
    /// Gates that may have something to do, in the order they were touched.
    ready: VecDeque<GateId>,
    /// Each gate's wake-ups, earliest first (equal times by gate number); see `wake.rs`.
    wakes: Timeline<GateId>,
    /// Gates with a wake-up due.
    armed: usize,
    ranks: Rank,
    uses: u64,
    /// Lanes made so far (lane 0 is every wrapper's own).
    lanes: LaneId,
}

impl Gates {
    /// No gates yet, in `home`.
    pub fn new(mut home: Box<dyn Home>) -> Gates {
        let keys = home.keys();
        Gates {
            home,
            keys,
            entries: Slab::default(),
            scopes: Map::default(),
            routes: Map::default(),
            limiters: Map::default(),
            sweep: VecDeque::new(),
            sweep_due: None,
            sweep_round: (0, 0),
            memos: Memos::default(),
            calls: Slab::default(),
            wrappers: Slab::default(),
            stores: Vec::new(),
            identities: Vec::new(),
            actions: VecDeque::new(),
            ready: VecDeque::new(),
            wakes: Timeline::default(),
            armed: 0,
            ranks: 0,
            uses: 0,
            lanes: 0,
        }
    }

    /// Makes a call of `wrapper` at `now`: finds (or makes) the gate its credential and route
    /// draw from, and starts the call there. What follows comes from
    /// [`poll_action`](Self::poll_action), a refusal by the gate included.
    pub fn start(
        &mut self,
        now: Millis,
        wrapper: WrapperId,
        request: &Request,
    ) -> Result<Started, Refused> {
        for (name, value) in [
            ("X-API-Key", request.api_key),
            ("Authorization", request.authorization),
        ] {
            if value.is_some_and(|v| !sendable(v)) {
                return Err(Refused::Unsendable(name));
            }
        }
        // What the gates decided comes first: a scout's answer may have named its route's
        // limiter, and a new call's number may be one an ended call's settlement still names.
        for gate in self.ready.clone() {
            self.flush(now, gate);
        }
        let Some(w) = self.wrappers.get(wrapper) else {
            return Err(Refused::Gone);
        };
        let print = fingerprint(request.api_key, request.authorization, self.keys);
        let mut gate = match w.prints.get(&print) {
            Some(&gate) => gate,
            None => {
                let scope = Scope::of(request.api_key, request.authorization);
                let gate = self.gate_for(now, wrapper, &scope, Some(print))?;
                if let Some(w) = self.wrappers.get_mut(wrapper) {
                    w.prints.insert(print, gate);
                }
                gate
            }
        };
        let Some(w) = self.wrappers.get(wrapper) else {
            return Err(Refused::Gone);
        };
        let profile = &w.profile;
        let replayable = profile.policy.as_ref().is_some_and(|policy| {
            policy
                .rules
                .may_replay(request.method, request.idempotency_key, request.body)
        });
        let mut spec = CallSpec {
            policy: profile.policy.clone(),
            batch: request.batch.clone(),
            replayable,
            max_wait_ms: profile.max_wait_ms,
            max_waiting: profile.max_waiting,
            reports_wait: profile.reports_wait,
            account: asks_account(request.method, request.url),
            scout: false,
            behind_scout: false,
            lane: w.lane,
            typed_errors: profile.typed_errors,
            route: None,
        };
        let (learns, mut route) = (profile.learns(), None);
        if profile.reads_routes() {
            let path = route_of(request.method, request.url);
            let credential = self
                .entries
                .get(gate)
                .map(|e| (e.scope.clone(), e.gate.names_limiters()));
            if let (Some((credential, scouting)), true) = (credential, learns) {
                let routes = self.routes.entry(credential.clone()).or_default();
                match routes.limiter(&path) {
                    Some(limiter) => {
                        let scope = credential.in_limiter(limiter);
                        gate = self.gate_for(now, wrapper, &scope, None)?;
                    }
                    None if scouting => match routes.role(&path) {
                        Role::Scout => spec.scout = true,
                        Role::BehindScout => spec.behind_scout = true,
                        Role::Free => {}
                    },
                    None => {}
                }
            }
            route = Some(Rc::from(path));
        }
        spec.route = route.clone();
        // Limiters are told apart by route only for a wrapper that learns.
        let route = route.filter(|_| learns);
        let call = self.calls.insert(Placed {
            gate,
            call: 0,
            wrapper: Some(wrapper),
            route,
        });
        let rank = self.ranks;
        self.ranks += 1;
        self.uses += 1;
        self.flush(now, gate);
        let Some(entry) = self.entries.get_mut(gate) else {
            self.calls.remove(call);
            return Err(Refused::Gone);
        };
        entry.used = self.uses;
        let local = entry.gate.start(now, spec, rank);
        entry.refs.insert(local, call);
        if let Some(placed) = self.calls.get_mut(call) {
            placed.call = local;
        }
        self.touch(gate);
        let split = replayable && request.body == Body::Stream;
        Ok(Started { call, split })
    }

    /// The next thing to do at `now`, or `None` until the next event or wake-up. Admissions
    /// happen here, one at a time, as the gates' own do.
    pub fn poll_action(&mut self, now: Millis) -> Option<Action> {
        loop {
            if let Some(action) = self.actions.pop_front() {
                if let Action::Settle { call, .. } = action {
                    self.calls.remove(call);
                }
                return Some(action);
            }
            let gate = *self.ready.front()?;
            let next = self.entries.get_mut(gate).map(|e| e.gate.poll_action(now));
            match next {
                Some(Some(action)) => {
                    if let GateAction::Send { .. } = action {
                        // One attempt, then the other gates with something to do take a turn.
                        self.ready.rotate_left(1);
                    }
                    self.translate(now, gate, action);
                }
                Some(None) => {
                    self.ready.pop_front();
                    if let Some(entry) = self.entries.get_mut(gate) {
                        entry.ready = false;
                    }
                    self.reschedule(now, gate);
                }
                None => {
                    self.ready.pop_front();
                }
            }
        }
    }

    /// Hands out what `gate` already decided (in the gates' terms), before a call is made there:
    /// the new call may get the number of one whose settlement is still to be handed out.
    fn flush(&mut self, now: Millis, gate: GateId) {
        while let Some(action) = self.entries.get_mut(gate).and_then(|e| e.gate.decided()) {
            self.translate(now, gate, action);
        }
    }

    /// `gate` may have something to do: [`poll_action`](Self::poll_action) asks it.
    fn touch(&mut self, gate: GateId) {
        if let Some(entry) = self.entries.get_mut(gate) {
            if !entry.ready {
                entry.ready = true;
                self.ready.push_back(gate);
            }
        }
    }

    /// Runs `f` on the gate `call` is in, then performs what follows.
    fn on_call(&mut self, call: CallRef, f: impl FnOnce(&mut Gate, CallId)) {
        let Some(&Placed {
            gate, call: local, ..
        }) = self.calls.get(call)
        else {
            return;
        };
        if let Some(entry) = self.entries.get_mut(gate) {
            f(&mut entry.gate, local);
            self.touch(gate);
        }
    }

    /// `call`'s attempt ended as `ended` says: a response of `status`, its headers read by
    /// `header` (only a date or an epoch in them asks `wall_now`); a failure; or the caller's
    /// abort, which cancels the call.
    pub fn attempt_ended(
        &mut self,
        now: Millis,
        wall_now: &dyn Fn() -> Millis,
        call: CallRef,
        ended: Ended,
        status: u16,
        header: &dyn Fn(&str) -> Option<String>,
    ) {
        match (ended, ended.failure()) {
            (Ended::CallerAborted, _) => self.cancel(now, call),
            (_, Some(failure)) => self.failed(now, call, failure),
            (_, None) => self.responded(now, wall_now, call, status, header),
        }
    }

    /// `call`'s attempt got a response (see [`Gate::responded`]).
    pub(crate) fn responded(
        &mut self,
        now: Millis,
        wall_now: &dyn Fn() -> Millis,
        call: CallRef,
        status: u16,
        header: &dyn Fn(&str) -> Option<String>,
    ) {
        self.on_call(call, |g, c| g.responded(now, wall_now, c, status, header));
    }

    /// `call`'s attempt got a response whose headers are already read.
    pub fn responded_with(&mut self, now: Millis, call: CallRef, status: u16, feedback: Feedback) {
        self.on_call(call, |g, c| g.responded_with(now, c, status, feedback));
    }

    /// `call`'s attempt ended without a response.
    pub(crate) fn failed(&mut self, now: Millis, call: CallRef, failure: Failure) {
        self.on_call(call, |g, c| g.failed(now, c, failure));
    }

    /// The body of `call`'s last response, answered in `gate`, is disposed of, having said
    /// `body` when it was read whole: whether the driver keeps that answer as `gate`'s quota
    /// answer (see [`Gate::keeps_answer`], asked before the body tells the call's gate).
    pub fn disposed(
        &mut self,
        now: Millis,
        gate: GateId,
        call: CallRef,
        body: Option<BodyFacts>,
    ) -> bool {
        let entry = self.entries.get_mut(gate);
        let keeps = (body.as_ref()).is_some_and(|b| entry.is_some_and(|e| e.gate.keeps_answer(b)));
        self.on_call(call, |g, c| g.disposed(now, c, body));
        keeps
    }

    /// A probe's `/usage` answer, as read.
    pub(crate) fn usage(&mut self, now: Millis, call: CallRef, usage: Option<Usage>) {
        self.on_call(call, |g, c| g.usage(now, c, usage));
    }

    /// The caller gave up on `call`: it leaves its gate. The driver settles it.
    pub(crate) fn cancel(&mut self, now: Millis, call: CallRef) {
        let Some(&Placed {
            gate, call: local, ..
        }) = self.calls.get(call)
        else {
            return;
        };
        if self.entries.get(gate).is_some_and(|e| e.gate.scouts(local)) {
            // A scout's end frees its route now, while the call is still known: the gate's own
            // word of it comes once the call is gone, and the route's later calls would wait
            // for ever behind a scout that is no more.
            self.routed(now, gate, local, LimiterFeedback::Nothing, None);
        }
        if let Some(entry) = self.entries.get_mut(gate) {
            entry.gate.cancel(now, local);
            entry.refs.remove(local);
        }
        self.calls.remove(call);
        self.touch(gate);
    }

    /// `f` of the gate `call` is in and the call's number there, if the call is known.
    fn placed<R>(&self, call: CallRef, f: impl FnOnce(&Gate, CallId) -> R) -> Option<R> {
        let placed = self.calls.get(call)?;
        let entry = self.entries.get(placed.gate)?;
        Some(f(&entry.gate, placed.call))
    }

    /// The caller's signal aborted: `call` leaves its gate as `cancel` says,
    /// unless its attempt is out, which ends through the signal itself (and is then
    /// cancelled). Whether it left: the driver settles it.
    pub fn abort(&mut self, now: Millis, call: CallRef) -> bool {
        if self.placed(call, Gate::in_flight).unwrap_or(false) {
            return false;
        }
        self.cancel(now, call);
        true
    }

    /// The store answered operation `op` of `gate` (`None`: it failed or was too late).
    pub(crate) fn store_answered(
        &mut self,
        now: Millis,
        gate: GateId,
        op: OpId,
        reply: Option<StoreReply>,
    ) {
        if let Some(entry) = self.entries.get_mut(gate) {
            entry.gate.store_answered(now, op, reply);
            self.touch(gate);
        }
    }

    /// Takes in a gate made elsewhere as `scope`'s, its state kept as `keeping` says: the
    /// harness of the gate's own tests drives one this way.
    pub fn insert(&mut self, scope: Scope, gate: Gate, keeping: Keeping) -> GateId {
        let id = self.entries.insert(Entry {
            scope: scope.clone(),
            gate: Box::new(gate),
            keeping,
            refs: Mirror::default(),
            users: Vec::new(),
            used: self.uses,
            due: None,
            ready: false,
        });
        self.scopes.insert(scope, id);
        self.sweep.push_back(id);
        id
    }

    /// Makes a call on `gate` at `now` with `spec` as it is (no wrapper, no route): the gate's
    /// own rules, driven as every call is.
    pub(crate) fn start_on(
        &mut self,
        now: Millis,
        gate: GateId,
        spec: CallSpec,
    ) -> Option<CallRef> {
        let call = self.calls.insert(Placed {
            gate,
            call: 0,
            wrapper: None,
            route: None,
        });
        let rank = self.ranks;
        self.ranks += 1;
        self.flush(now, gate);
        let Some(entry) = self.entries.get_mut(gate) else {
            self.calls.remove(call);
            return None;
        };
        let local = entry.gate.start(now, spec, rank);
        entry.refs.insert(local, call);
        if let Some(placed) = self.calls.get_mut(call) {
            placed.call = local;
        }
        self.touch(gate);
        Some(call)
    }

    /// One of `gate`'s actions, with its calls' numbers the driver's.
    fn translate(&mut self, now: Millis, gate: GateId, action: GateAction) {
        let Some(entry) = self.entries.get_mut(gate) else {
            return;
        };
        let call_ref = |c: CallId| entry.refs.get(c).copied();
        let action = match action {
            GateAction::Send {
                call: local,
                timeout_ms,
                waited_ms,
            } => {
                let Some(call) = call_ref(local) else {
                    return;
                };
                let again = entry.gate.may_retry(local);
                let wrapper = self.calls.get(call).and_then(|p| p.wrapper);
                if let Some(w) = wrapper.and_then(|w| self.wrappers.get_mut(w)) {
                    w.lane_figures.admitted += 1;
                    w.lane_figures.waited_ms += waited_ms;
                    w.lane_figures.longest_ms = w.lane_figures.longest_ms.max(waited_ms);
                }
                Some(Action::Send {
                    call,
                    timeout_ms,
                    again,
                })
            }
            GateAction::Dispose { call, read } => {
                call_ref(call).map(|call| Action::Dispose { call, read, gate })
            }
            GateAction::ReadUsage { call } => call_ref(call).map(|call| Action::ReadUsage { call }),
            GateAction::StartProbe { probe, origin } => {
                let Some(origin) = call_ref(origin) else {
                    return;
                };
                let wrapper = self.calls.get(origin).and_then(|p| p.wrapper);
                let probe_ref = self.calls.insert(Placed {
                    gate,
                    call: probe,
                    wrapper,
                    route: None,
                });
                entry.refs.insert(probe, probe_ref);
                Some(Action::StartProbe {
                    probe: probe_ref,
                    origin,
                })
            }
            GateAction::Store { id, op } => {
                let Keeping::Store(store) = entry.keeping else {
                    return;
                };
                Some(Action::Store {
                    gate,
                    id,
                    op,
                    store,
                    scope: entry.scope.clone(),
                    rate: entry.gate.rate(),
                    budget: entry.gate.budget_config().map(|b| b.capacity),
                })
            }
            GateAction::Route {
                call,
                heard,
                answer,
            } => return self.routed(now, gate, call, heard, answer),
            GateAction::Event(event) => {
                let call = event.call().and_then(call_ref);
                let users = match call {
                    Some(_) => Vec::new(),
                    None => entry.users.iter().map(|&(w, _)| w).collect(),
                };
                if let (Event::Learned(_), Keeping::Store(store)) = (&event, entry.keeping) {
                    self.share_learned(store, gate);
                }
                let event = match call {
                    Some(call) => event.renumbered(call),
                    None => event,
                };
                Some(Action::Event {
                    gate,
                    call,
                    event,
                    users,
                })
            }
            GateAction::Settle { call, end, again } => {
                // The call's number is given back when the settlement is handed out: until the
                // driver has it, no new call may take that number.
                let Some(call) = entry.refs.remove(call) else {
                    return;
                };
                let answer = again.then_some(gate);
                Some(Action::Settle { call, end, answer })
            }
            GateAction::DropAnswer => Some(Action::DropAnswer { gate }),
        };
        self.actions.extend(action);
    }
}
