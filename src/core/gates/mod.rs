//! Many gates, and everything between them: quinn-proto's `Endpoint` to the [`Gate`]'s
//! `Connection`. [`Gates`] owns the scope → gate map (one gate per credential, and per limiter
//! bucket for a learning wrapper), the credentials' route tables, scouting, moving calls to
//! their bucket's gate, forgetting idle gates, the rules between wrappers that share a
//! credential, and what a gate tells the fleet and takes from it. Like the gate it is sans-IO:
//! the driver hands in `now` and what happened to a call (by its [`CallRef`], which stays the
//! same when the call moves), and performs what [`poll_action`](Gates::poll_action) says; one
//! timer serves every gate ([`poll_timeout`](Gates::poll_timeout)).

pub mod compat;
pub mod fleet;
pub mod home;
pub mod profile;
pub mod scope;

mod moves;
mod sweep;

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::rc::Rc;

use self::fleet::Shared;
use self::home::Home;
use self::profile::{Keeping, Profile, Refused, Request, StoreId};
use self::scope::{fingerprint, sendable, Scope};
use crate::core::authority::threads::{Settings, ThreadAuthority};
use crate::core::authority::Answer;
use crate::core::authority::Op;
use crate::core::base::map::{Map, Set};
use crate::core::base::slab::{Id, Mirror, Slab};
use crate::core::gate::action::{Action as GateAction, End, Event, OpId};
use crate::core::gate::call::CallSpec;
use crate::core::gate::figures::Figures;
use crate::core::gate::line::Rank;
use crate::core::gate::store_link::StoreSettings;
use crate::core::gate::{BodyFacts, CallId, Gate, EARLY_MS};
use crate::core::parse::feedback::Feedback;
use crate::core::rules::allowance::{Allowance, Rate};
use crate::core::rules::budget::RefillingConfig;
use crate::core::rules::classify::{Body, Failure};
use crate::core::rules::learn::{Estimate, Learner};
use crate::core::rules::quota::Usage;
use crate::core::rules::routes::{route_of, Role, Routes};
use crate::core::Millis;

/// A gate's number among the gates.
pub type GateId = Id;
/// A call's number, the driver's handle on it wherever it goes.
pub type CallRef = Id;
/// A wrapper's number.
pub type WrapperId = Id;
/// A credential's 128-bit keyed fingerprint (see [`fingerprint`]).
pub type Print = (u64, u64);

/// Gates looked at for eviction each time a gate is made: enough to keep up with any stream of
/// new keys, few enough to cost nothing.
pub const SWEEP_PER_GATE: usize = 2;

/// One thing for the driver to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send the call's request now; report with `responded` or `failed` (see the gate's
    /// [`Send`](GateAction::Send)).
    Send {
        /// The call.
        call: CallRef,
        /// The attempt's time limit in whole milliseconds, or 0 for none.
        timeout_ms: Millis,
    },
    /// Dispose of the call's last response body; report with `disposed`.
    Dispose {
        /// The call.
        call: CallRef,
        /// Read the body's `code` and `detail`.
        read: bool,
    },
    /// (A probe.) Read the `/usage` answer; report with `usage`.
    ReadUsage {
        /// The probe.
        call: CallRef,
    },
    /// A gate's `/usage` probe was made: prepare `GET /usage` beside `origin`'s request, with
    /// its credential.
    StartProbe {
        /// The probe.
        probe: CallRef,
        /// The call whose answer raised the suspicion.
        origin: CallRef,
    },
    /// Run `op` on the gate's store; report with `store_answered`.
    Store {
        /// The gate.
        gate: GateId,
        /// The operation's number.
        id: OpId,
        /// What to run.
        op: Op,
    },
    /// Put these facts in the store, for the credential's gates in other processes.
    Share {
        /// The store.
        store: StoreId,
        /// The credential.
        credential: Scope,
        /// What to put.
        facts: Vec<Shared>,
    },
    /// Read what the fleet learned of the gate's credential; report with `recalled`.
    Recall {
        /// The gate that asks.
        gate: GateId,
        /// The store.
        store: StoreId,
        /// The credential.
        credential: Scope,
    },
    /// Tell the hook: the call's wrapper for an event about a call, else every wrapper that
    /// used the gate ([`users`](Gates::users)). The event's own call number is `call`'s.
    Event {
        /// The gate.
        gate: GateId,
        /// The call it is about, if any.
        call: Option<CallRef>,
        /// What happened.
        event: Event,
    },
    /// The call is over: settle the caller's promise. The gates have forgotten it.
    Settle {
        /// The call.
        call: CallRef,
        /// How.
        end: End,
    },
    /// The gate was forgotten (idle): drop whatever the driver keeps for it.
    Forgotten {
        /// The gate.
        gate: GateId,
    },
}

/// A call the gates have made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    /// Its number.
    pub call: CallRef,
    /// Its body is a stream that each attempt sends a copy of.
    pub split: bool,
}

/// What a gate looks like now, for `stats()` and `describe()`.
#[derive(Debug, Clone)]
pub struct GateView<'a> {
    /// Its scope.
    pub scope: &'a Scope,
    /// Its figures.
    pub figures: Figures,
    /// Its allowance now (a learning gate's estimate).
    pub rate: Rate,
    /// What it learned, if it learns.
    pub learned: Option<Estimate>,
    /// Where its state lives.
    pub keeping: Keeping,
    /// Store operations sent, failures, and whether the store answers now.
    pub store: Option<(u64, u64, bool)>,
    /// Whether a wake-up is due.
    pub timer_armed: bool,
}

/// One gate and what the gates keep beside it.
struct Entry {
    scope: Scope,
    gate: Gate,
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
    prints: Map<Print, GateId>,
    gates: Set<GateId>,
    retired: Figures,
    holders: usize,
}

/// A gate's wake-up, earliest first in a max-heap.
#[derive(Debug, Clone, Copy)]
struct Wake {
    at: Millis,
    gate: GateId,
}

impl Ord for Wake {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .at
            .total_cmp(&self.at)
            .then(other.gate.cmp(&self.gate))
    }
}
impl PartialOrd for Wake {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Wake {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Wake {}

/// Every gate of one thread, and the rules between them.
pub struct Gates {
    home: Box<dyn Home>,
    keys: (u64, u64),
    entries: Slab<Entry>,
    scopes: Map<Scope, GateId>,
    /// Each credential's routes.
    routes: Map<Scope, Routes>,
    /// Gates in the order they are next looked at for eviction.
    sweep: VecDeque<GateId>,
    calls: Slab<Placed>,
    wrappers: Slab<Wrapper>,
    /// Each store's identity and settings, by [`StoreId`].
    identities: Vec<String>,
    stores: Vec<StoreSettings>,
    actions: VecDeque<Action>,
    /// Gates that may have something to do, in the order they were touched.
    ready: VecDeque<GateId>,
    wakes: BinaryHeap<Wake>,
    /// Gates with a wake-up due.
    armed: usize,
    ranks: Rank,
    uses: u64,
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
            sweep: VecDeque::new(),
            calls: Slab::default(),
            wrappers: Slab::default(),
            stores: Vec::new(),
            identities: Vec::new(),
            actions: VecDeque::new(),
            ready: VecDeque::new(),
            wakes: BinaryHeap::new(),
            armed: 0,
            ranks: 0,
            uses: 0,
        }
    }

    /// A number for a store a wrapper brings, known as `identity` (two stores of the same
    /// identity hold the same shared state, so their wrappers may share gates), with its
    /// settings. A gate's operations go through the store of the wrapper that made it.
    pub fn store(&mut self, identity: &str, settings: StoreSettings) -> StoreId {
        self.identities.push(identity.to_owned());
        self.stores.push(settings);
        self.stores.len() - 1
    }

    /// A store's identity.
    pub fn store_identity(&self, store: StoreId) -> Option<&str> {
        self.identities.get(store).map(String::as_str)
    }

    /// A new wrapper asking for `profile`, held once (see [`release`](Self::release)).
    pub fn wrapper(&mut self, profile: Profile) -> WrapperId {
        self.wrappers.insert(Wrapper {
            profile,
            prints: Map::default(),
            gates: Set::default(),
            retired: Figures::default(),
            holders: 1,
        })
    }

    /// One more holder of `wrapper` (a batch shares its wrapper's gates).
    pub fn hold(&mut self, wrapper: WrapperId) {
        if let Some(w) = self.wrappers.get_mut(wrapper) {
            w.holders += 1;
        }
    }

    /// A holder of `wrapper` is gone; with the last, the wrapper is forgotten.
    pub fn release(&mut self, wrapper: WrapperId) {
        let last = self.wrappers.get_mut(wrapper).is_some_and(|w| {
            w.holders -= 1;
            w.holders == 0
        });
        if last {
            self.wrappers.remove(wrapper);
        }
    }

    /// What `wrapper` asks for.
    pub fn profile(&self, wrapper: WrapperId) -> Option<&Profile> {
        self.wrappers.get(wrapper).map(|w| &w.profile)
    }

    /// Whether `wrapper` learns its allowance (its calls' URLs are read, for their routes).
    pub fn learns(&self, wrapper: WrapperId) -> bool {
        self.profile(wrapper).is_some_and(Profile::learns)
    }

    /// Whether memory is shared by the process's threads here.
    pub fn shares_memory(&self) -> bool {
        self.home.shares_memory()
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
        // bucket, and a new call's number may be one an ended call's settlement still names.
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
            scout: false,
            behind_scout: false,
        };
        let mut route = None;
        if profile.learns() {
            let path = route_of(request.method, request.url);
            let credential = self
                .entries
                .get(gate)
                .map(|e| (e.scope.clone(), e.gate.names_buckets()));
            if let Some((credential, scouting)) = credential {
                let routes = self.routes.entry(credential.clone()).or_default();
                match routes.bucket(&path) {
                    Some(bucket) => {
                        let scope = credential.in_bucket(bucket);
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

    /// When the gates next need waking, if ever.
    pub fn poll_timeout(&mut self) -> Option<Millis> {
        while let Some(wake) = self.wakes.peek() {
            let due = self.entries.get(wake.gate).and_then(|e| e.due);
            if due == Some(wake.at) {
                return Some(wake.at);
            }
            self.wakes.pop();
        }
        None
    }

    /// The timer fired at `now`: every gate whose wake-up is due handles it (what follows comes
    /// from [`poll_action`](Self::poll_action)).
    pub fn handle_timeout(&mut self, now: Millis) {
        while let Some(&wake) = self.wakes.peek() {
            if wake.at > now + EARLY_MS {
                break;
            }
            self.wakes.pop();
            let Some(entry) = self.entries.get_mut(wake.gate) else {
                continue;
            };
            if entry.due != Some(wake.at) {
                continue;
            }
            entry.due = None;
            self.armed -= 1;
            entry.gate.handle_timeout(now);
            self.touch(wake.gate);
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

    /// `call`'s attempt got a response (see [`Gate::responded`]).
    pub fn responded(
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
    pub fn failed(&mut self, now: Millis, call: CallRef, failure: Failure) {
        self.on_call(call, |g, c| g.failed(now, c, failure));
    }

    /// The body of `call`'s last response is disposed of.
    pub fn disposed(&mut self, now: Millis, call: CallRef, body: Option<BodyFacts>) {
        self.on_call(call, |g, c| g.disposed(now, c, body));
    }

    /// A probe's `/usage` answer, as read.
    pub fn usage(&mut self, now: Millis, call: CallRef, usage: Option<Usage>) {
        self.on_call(call, |g, c| g.usage(now, c, usage));
    }

    /// The caller gave up on `call`: it leaves its gate. The driver settles it.
    pub fn cancel(&mut self, now: Millis, call: CallRef) {
        let Some(&Placed {
            gate, call: local, ..
        }) = self.calls.get(call)
        else {
            return;
        };
        if let Some(entry) = self.entries.get_mut(gate) {
            entry.gate.cancel(now, local);
            entry.refs.remove(local);
        }
        self.calls.remove(call);
        self.touch(gate);
    }

    /// Whether `call`'s attempt is out (it ends through its own signal).
    pub fn in_flight(&self, call: CallRef) -> bool {
        let Some(placed) = self.calls.get(call) else {
            return false;
        };
        self.entries
            .get(placed.gate)
            .is_some_and(|e| e.gate.in_flight(placed.call))
    }

    /// Whether `call` is still the gates' (not settled, not cancelled).
    pub fn holds(&self, call: CallRef) -> bool {
        self.calls.contains(call)
    }

    /// The store answered operation `op` of `gate` (`None`: it failed or was too late).
    pub fn store_answered(&mut self, now: Millis, gate: GateId, op: OpId, answer: Option<Answer>) {
        if let Some(entry) = self.entries.get_mut(gate) {
            entry.gate.store_answered(now, op, answer);
            self.touch(gate);
        }
    }

    /// Declares the quota available again on every gate `wrapper` used.
    pub fn reset_quota(&mut self, now: Millis, wrapper: WrapperId) {
        for gate in self.gates_of(wrapper) {
            if let Some(entry) = self.entries.get_mut(gate) {
                entry.gate.reset_quota(now);
                self.touch(gate);
            }
        }
    }

    /// Ends the cooldown on every gate `wrapper` used.
    pub fn clear_cooldown(&mut self, now: Millis, wrapper: WrapperId) {
        for gate in self.gates_of(wrapper) {
            if let Some(entry) = self.entries.get_mut(gate) {
                entry.gate.clear_cooldown(now);
                entry.gate.handle_timeout(now);
                self.touch(gate);
            }
        }
    }

    /// The gates `wrapper` used, most recently used first.
    pub fn gates_of(&self, wrapper: WrapperId) -> Vec<GateId> {
        let Some(w) = self.wrappers.get(wrapper) else {
            return Vec::new();
        };
        let mut gates: Vec<GateId> = w
            .gates
            .iter()
            .copied()
            .filter(|&g| self.entries.contains(g))
            .collect();
        gates.sort_unstable_by_key(|&g| {
            std::cmp::Reverse(self.entries.get(g).map_or(0, |e| e.used))
        });
        gates
    }

    /// The figures of the gates `wrapper` used that have since been forgotten.
    pub fn retired(&self, wrapper: WrapperId) -> Figures {
        self.wrappers
            .get(wrapper)
            .map(|w| w.retired.clone())
            .unwrap_or_default()
    }

    /// The wrappers that used `gate`.
    pub fn users(&self, gate: GateId) -> Vec<WrapperId> {
        self.entries
            .get(gate)
            .map(|e| e.users.iter().map(|&(w, _)| w).collect())
            .unwrap_or_default()
    }

    /// The wrapper `call` was made by.
    pub fn wrapper_of(&self, call: CallRef) -> Option<WrapperId> {
        self.calls.get(call).and_then(|p| p.wrapper)
    }

    /// The gate `call` is in now.
    pub fn gate_of(&self, call: CallRef) -> Option<GateId> {
        self.calls.get(call).map(|p| p.gate)
    }

    /// A gate's scope.
    pub fn scope(&self, gate: GateId) -> Option<&Scope> {
        self.entries.get(gate).map(|e| &e.scope)
    }

    /// The gate of `scope`, if it has one.
    pub fn find(&self, scope: &Scope) -> Option<GateId> {
        self.scopes.get(scope).copied()
    }

    /// Where a gate's state lives, its allowance now, and its retry budget's capacity: what a
    /// store operation carries.
    pub fn keeping(&self, gate: GateId) -> Option<(Keeping, Rate, Option<f64>)> {
        let e = self.entries.get(gate)?;
        let budget = e.gate.budget_config().map(|b| b.capacity);
        Some((e.keeping, e.gate.rate(), budget))
    }

    /// A gate's retry budget settings, if it has a budget.
    pub fn budget(&self, gate: GateId) -> Option<RefillingConfig> {
        self.entries.get(gate)?.gate.budget_config()
    }

    /// What a gate looks like now.
    pub fn view(&mut self, now: Millis, gate: GateId) -> Option<GateView<'_>> {
        let e = self.entries.get_mut(gate)?;
        Some(GateView {
            figures: e.gate.figures(now),
            rate: e.gate.rate(),
            learned: e.gate.learned(now),
            keeping: e.keeping,
            store: e.gate.store_counts(),
            timer_armed: e.due.is_some(),
            scope: &e.scope,
        })
    }

    /// Gates alive now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No gate is alive.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Takes in a gate made elsewhere as `scope`'s, its state kept as `keeping` says: the
    /// harness of the gate's own tests drives one this way.
    pub fn insert(&mut self, scope: Scope, gate: Gate, keeping: Keeping) -> GateId {
        let id = self.entries.insert(Entry {
            scope: scope.clone(),
            gate,
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
    pub fn start_on(&mut self, now: Millis, gate: GateId, spec: CallSpec) -> Option<CallRef> {
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

    /// The gate of `scope`, to look at or change directly (tests; what is changed this way is
    /// performed at the next event).
    pub fn gate_mut(&mut self, scope: &Scope) -> Option<&mut Gate> {
        let gate = *self.scopes.get(scope)?;
        self.entries.get_mut(gate).map(|e| &mut e.gate)
    }

    /// The gate for `scope`, made from `wrapper`'s profile on first use (when `wrapper` knows
    /// the credential by `print`, that is remembered beside it). Asking for a different
    /// allowance, budget or store for a scope that already has a gate is refused.
    fn gate_for(
        &mut self,
        now: Millis,
        wrapper: WrapperId,
        scope: &Scope,
        print: Option<Print>,
    ) -> Result<GateId, Refused> {
        let Some(profile) = self.wrappers.get(wrapper).map(|w| w.profile.clone()) else {
            return Err(Refused::Gone);
        };
        if let Some(&gate) = self.scopes.get(scope) {
            if let Some(e) = self.entries.get_mut(gate) {
                compat::check(scope, &mut e.gate, e.keeping, &profile, &self.identities)
                    .map_err(Refused::Mismatch)?;
            }
            self.know(wrapper, gate, print);
            return Ok(gate);
        }
        self.evict_idle(now, SWEEP_PER_GATE);
        let gate = self.make(now, scope, &profile)?;
        let gate = self.entries.insert(Entry {
            scope: scope.clone(),
            gate,
            keeping: profile.keeping,
            refs: Mirror::default(),
            users: Vec::new(),
            used: self.uses,
            due: None,
            ready: false,
        });
        self.scopes.insert(scope.clone(), gate);
        self.sweep.push_back(gate);
        self.know(wrapper, gate, print);
        if let (Keeping::Store(store), true) = (profile.keeping, profile.learns()) {
            let credential = scope.credential();
            self.actions.push_back(Action::Recall {
                gate,
                store,
                credential,
            });
        }
        Ok(gate)
    }

    /// `wrapper` uses `gate` (knowing it by `print`, for a credential's gate).
    fn know(&mut self, wrapper: WrapperId, gate: GateId, print: Option<Print>) {
        let Some(entry) = self.entries.get_mut(gate) else {
            return;
        };
        match entry.users.iter_mut().find(|(w, _)| *w == wrapper) {
            Some(user) => user.1 = user.1.or(print),
            None => entry.users.push((wrapper, print)),
        }
        if let Some(w) = self.wrappers.get_mut(wrapper) {
            w.gates.insert(gate);
        }
    }

    /// A new gate for `scope` as `profile` asks: in a store, in memory the process's threads
    /// share, or in this thread's; learning if the profile learns.
    fn make(&mut self, now: Millis, scope: &Scope, profile: &Profile) -> Result<Gate, Refused> {
        let (rate, ceiling) = match profile.allowance {
            Allowance::Fixed(rate) => (rate, None),
            Allowance::Learned(ceiling) => (Learner::new(ceiling).rate(now), Some(ceiling)),
        };
        let random = self.home.random();
        let gate = match profile.keeping {
            Keeping::Store(store) => {
                let settings = self.stores[store];
                Gate::shared(rate, profile.budget, settings, now, random)
            }
            Keeping::Memory { threads: true } => {
                let settings = Settings {
                    rate,
                    budget: profile.budget,
                    learn: profile.learns(),
                };
                match self.home.slot(scope) {
                    None => Gate::new(rate, profile.budget, now, random).for_threads(),
                    Some(slot) => {
                        let (thread, offset) = (self.home.thread(), self.home.offset());
                        match ThreadAuthority::join(slot, settings, thread, offset) {
                            Ok(authority) => Gate::threaded(authority, random),
                            Err(theirs) => {
                                let mismatch = compat::thread_mismatch(scope, theirs, profile);
                                return Err(Refused::Mismatch(mismatch));
                            }
                        }
                    }
                }
            }
            Keeping::Memory { threads: false } => Gate::new(rate, profile.budget, now, random),
        };
        Ok(match ceiling {
            Some(ceiling) => gate.learning(ceiling, now),
            None => gate,
        })
    }

    /// One of `gate`'s actions, with its calls' numbers the driver's.
    fn translate(&mut self, now: Millis, gate: GateId, action: GateAction) {
        let Some(entry) = self.entries.get_mut(gate) else {
            return;
        };
        let call_ref = |c: CallId| entry.refs.get(c).copied();
        let action = match action {
            GateAction::Send { call, timeout_ms } => {
                call_ref(call).map(|call| Action::Send { call, timeout_ms })
            }
            GateAction::Dispose { call, read } => {
                call_ref(call).map(|call| Action::Dispose { call, read })
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
            GateAction::Store { id, op } => Some(Action::Store { gate, id, op }),
            GateAction::Route { call, heard } => return self.routed(now, gate, call, heard),
            GateAction::Event(event) => {
                let call = event.call().and_then(call_ref);
                if let (Event::Learned(_), Keeping::Store(store)) = (&event, entry.keeping) {
                    let estimate = Shared::Estimate(entry.scope.as_str().into(), entry.gate.rate());
                    self.share(
                        store,
                        &entry_credential(&self.entries, gate),
                        vec![estimate],
                    );
                }
                let event = match call {
                    Some(call) => event.renumbered(call),
                    None => event,
                };
                Some(Action::Event { gate, call, event })
            }
            GateAction::Settle { call, end } => {
                let Some(call) = entry.refs.remove(call) else {
                    return;
                };
                self.calls.remove(call);
                Some(Action::Settle { call, end })
            }
        };
        self.actions.extend(action);
    }

    /// Sets `gate`'s wake-up to what it asks for now.
    fn reschedule(&mut self, now: Millis, gate: GateId) {
        let Some(entry) = self.entries.get_mut(gate) else {
            return;
        };
        let due = entry.gate.poll_timeout(now);
        if due == entry.due {
            return;
        }
        match (entry.due, due) {
            (None, Some(_)) => self.armed += 1,
            (Some(_), None) => self.armed -= 1,
            _ => {}
        }
        entry.due = due;
        if let Some(at) = due {
            self.wakes.push(Wake { at, gate });
        }
        if self.wakes.len() > 2 * self.armed + 64 {
            // Wake-ups that changed before they came pile up: keep the live ones.
            let entries = &self.entries;
            self.wakes
                .retain(|w| entries.get(w.gate).is_some_and(|e| e.due == Some(w.at)));
        }
    }

    /// Puts `facts` about `credential` (and its first bucket, once known) in `store`.
    fn share(&mut self, store: StoreId, credential: &Scope, mut facts: Vec<Shared>) {
        if let Some(first) = self.first_bucket(credential) {
            facts.push(Shared::First(first));
        }
        self.actions.push_back(Action::Share {
            store,
            credential: credential.clone(),
            facts,
        });
    }

    /// The first limiter bucket `credential`'s answers named, if its gate heard one.
    fn first_bucket(&self, credential: &Scope) -> Option<String> {
        let gate = self.scopes.get(credential)?;
        self.entries.get(*gate)?.gate.bucket().map(str::to_owned)
    }

    /// What the fleet learned of `gate`'s credential: its first bucket (for the credential's
    /// own gate), the gate's estimate (taken when it has heard no answer of its own), and every
    /// route's bucket.
    pub fn recalled(&mut self, now: Millis, gate: GateId, facts: Vec<Shared>) {
        let Some(entry) = self.entries.get_mut(gate) else {
            return;
        };
        let credential = entry.scope.credential();
        for fact in &facts {
            match fact {
                Shared::First(bucket) if entry.scope == credential => {
                    entry.gate.assume_bucket(bucket);
                }
                Shared::Estimate(scope, rate) if scope == entry.scope.as_str() => {
                    entry.gate.adopt_estimate(now, *rate);
                }
                _ => {}
            }
        }
        let first = self.first_bucket(&credential);
        let routes = self.routes.entry(credential).or_default();
        for fact in facts {
            if let Shared::Route(route, bucket) = fact {
                let heard = crate::core::gate::action::Heard::Bucket(bucket);
                routes.heard(&route, &heard, first.as_deref());
            }
        }
        self.touch(gate);
    }
}

/// The credential of `gate`'s scope.
fn entry_credential(entries: &Slab<Entry>, gate: GateId) -> Scope {
    entries
        .get(gate)
        .map_or_else(Scope::anonymous, |e| e.scope.credential())
}
