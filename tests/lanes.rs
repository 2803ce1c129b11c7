//! Lanes on one key, on the virtual clock: the queue's start-time fair queuing (shares within one
//! token of the weights over any busy window, no lane starves, no token unused while anyone
//! waits, the prediction `maxWaitMs` relies on), and the issue's own case through the
//! production `Gates`: 40 background calls, then 8 live ones, at 2/s.
#![cfg(not(target_arch = "wasm32"))]

mod profiles;

use odds_gate::core::gate::action::End;
use odds_gate::core::gate::queue::{Lane, Place, Queue};
use odds_gate::core::gate::store_link::StoreSettings;
use odds_gate::core::gates::ids::WrapperId;
use odds_gate::core::gates::profile::{Keeping, Profile};
use odds_gate::core::gates::Gates;
use odds_gate::core::rules::allowance::{Allowance, Rate};
use odds_gate::core::sim::home::{SharedMemory, SimHome};
use odds_gate::core::sim::server::{Allowances, Limiter};
use odds_gate::core::sim::world::{SimCall, World};
use odds_gate::core::sim::{simulate, Coordination, SimLane, SimOptions};
use odds_gate::core::Millis;
use proptest::prelude::*;

const SNAPSHOT: &str = "http://api/v1/events/e1/odds/snapshot";

fn profile(rate: Rate) -> Profile {
    profiles::profile(Allowance::Fixed(rate), Keeping::Memory { threads: false })
}

/// One process; a lane for each weight (`None`: the wrapper's own lane 0) on one key at `rate`,
/// answered by a server that allows exactly that.
fn world(rate: Rate, weights: &[Option<f64>]) -> (World, Vec<WrapperId>) {
    let mut gates = Gates::new(Box::new(SimHome::alone(1)));
    let wrappers = weights
        .iter()
        .map(|w| match w {
            Some(weight) => gates.lane(profile(rate), (*weight, false), None),
            None => gates.wrapper(profile(rate)),
        })
        .collect();
    (World::new(vec![gates], server(rate)), wrappers)
}

/// A server that allows exactly `rate` on one key, answering 20 ms after each request.
fn server(rate: Rate) -> Box<Allowances> {
    let limiter = Limiter {
        name: None,
        path: String::new(),
        rate,
    };
    let mut server = Allowances::new(vec![limiter], 1_000.0);
    server.latency_ms = 20.0;
    Box::new(server)
}

/// 40 background calls at 0, 8 live ones at 1 s, at burst 2 at 2/s, in one process: when the
/// last live call and the last call of all are done, and the 429s.
fn background_then_live(weights: &[Option<f64>]) -> (Millis, Millis, usize) {
    let (w, lanes) = world(Rate::new(2.0, 2.0).unwrap(), weights);
    background_then_live_on(w, (0, lanes[0]), (0, lanes[1]))
}

/// The same calls in `w` (a world at 2/s), the background ones by `background` (process,
/// wrapper) and the live ones by `live`.
fn background_then_live_on(
    mut w: World,
    background: (usize, WrapperId),
    live: (usize, WrapperId),
) -> (Millis, Millis, usize) {
    let background: Vec<usize> = (0..40)
        .map(|_| {
            w.start_at(
                0.0,
                SimCall::get(background.0, background.1, "key", SNAPSHOT),
            )
        })
        .collect();
    let live: Vec<usize> = (0..8)
        .map(|_| w.start_at(1_000.0, SimCall::get(live.0, live.1, "key", SNAPSHOT)))
        .collect();
    w.run();
    let done = |calls: &[usize]| {
        calls
            .iter()
            .map(|i| {
                assert_eq!(w.log.settled[i].1, End::Deliver);
                w.log.settled[i].0
            })
            .fold(0.0, f64::max)
    };
    let throttled = w.log.responses.iter().filter(|r| r.2 == 429).count();
    (done(&live), done(&background).max(done(&live)), throttled)
}

#[test]
fn live_calls_go_before_a_queue_of_background_refreshes_and_the_queue_stays_at_the_floor() {
    // One line: the live calls wait behind all 40.
    let (live, all, throttled) = background_then_live(&[None, None]);
    assert_eq!(throttled, 0);
    assert_eq!(
        (live, all),
        (23_040.0, 23_040.0),
        "one queue: live and all done"
    );
    // Lanes of weight 1 and 9: nine live calls for each background one once they come (the
    // live calls done at 4.54 s). The floor is 23 s (2 at once, then 46 at 2/s), and the last
    // answer's 20 ms after its refill anchored on the one before (23.04 s, one queue or lanes).
    let (live, all_laned, throttled) = background_then_live(&[Some(1.0), Some(9.0)]);
    assert_eq!(throttled, 0);
    assert_eq!(live, 4_540.0, "lanes: live done");
    assert_eq!(all_laned, all, "the lanes cost the queue nothing");
}

#[test]
fn a_background_lane_under_a_saturated_heavier_lane_gets_its_share() {
    let rate = Rate::new(1.0, 10.0).unwrap();
    let (mut w, lanes) = world(rate, &[Some(1.0), Some(9.0)]);
    for _ in 0..200 {
        w.start_at(0.0, SimCall::get(0, lanes[1], "key", SNAPSHOT));
        w.start_at(0.0, SimCall::get(0, lanes[0], "key", SNAPSHOT));
    }
    // Of the first 100 admissions, the background lane's are every tenth.
    w.run();
    let first: Vec<usize> = w.log.sent.iter().take(100).map(|s| s.index).collect();
    let background = first.iter().filter(|&&i| i % 2 == 1).count();
    assert_eq!(first.len(), 100);
    // Each lane's own figures: its admissions and their wait, and nothing left waiting.
    let gates = &w.processes[0].gates;
    let (background_lane, background_figures, waiting) = gates.lane_of(lanes[0]).unwrap();
    let (live_lane, live_figures, _) = gates.lane_of(lanes[1]).unwrap();
    assert_eq!((background_lane.weight, live_lane.weight), (1.0, 9.0));
    assert_eq!(
        (background_figures.admitted, live_figures.admitted, waiting),
        (200, 200, 0)
    );
    // The first call goes at once and leaves the queue idle: every lane then starts at the
    // clock (before, the live lane kept the turn it had, and the background's first came one
    // admission sooner).
    assert_eq!(
        (background_figures.waited_ms, live_figures.waited_ms),
        (6_914_640.0, 2_661_360.0)
    );
    assert_eq!(background, 10, "{background} of 100");
}

/// `lines` threads of one process sharing memory (`Sharing::Threads`), or processes sharing a
/// store 1 ms away, each with a background lane (weight 1) and a live lane (weight 9) on one
/// key at `rate` that the server allows exactly: the world, and each queue's (background, live)
/// wrappers. Unnamed lanes are made in the same order everywhere; `named` ones ("background",
/// "live") in the other order every other line.
fn shared_world(
    lines: u32,
    rate: Rate,
    sharing: Sharing,
    named: bool,
) -> (World, Vec<(WrapperId, WrapperId)>) {
    let shared_memory = SharedMemory::default();
    let mut processes = Vec::new();
    let mut lanes = Vec::new();
    for line in 1..=lines {
        let (mut gates, keeping) = match sharing {
            Sharing::Threads => {
                let home = SimHome::sharing(line.into(), line, shared_memory.clone());
                (
                    Gates::new(Box::new(home)),
                    Keeping::Memory { threads: true },
                )
            }
            Sharing::Store => {
                let mut gates = Gates::new(Box::new(SimHome::alone(line.into())));
                let store = gates.store("fake", StoreSettings::DEFAULT);
                (gates, Keeping::Store(store))
            }
        };
        let shared = Profile {
            keeping,
            ..profile(rate)
        };
        let pair = match (named, line % 2) {
            (false, _) => {
                let background = gates.lane(shared.clone(), (1.0, false), None);
                (background, gates.lane(shared, (9.0, false), None))
            }
            (true, 0) => {
                let live = gates.lane(shared.clone(), (9.0, false), Some("live"));
                (gates.lane(shared, (1.0, false), Some("background")), live)
            }
            (true, _) => {
                let background = gates.lane(shared.clone(), (1.0, false), Some("background"));
                (background, gates.lane(shared, (9.0, false), Some("live")))
            }
        };
        lanes.push(pair);
        processes.push(gates);
    }
    let mut world = World::new(processes, server(rate));
    world.store.latency = 1.0;
    (world, lanes)
}

/// Where the queues of [`shared_world`] share the key's state.
#[derive(Debug, Clone, Copy)]
enum Sharing {
    Threads,
    Store,
}

#[test]
fn across_threads_and_processes_live_calls_of_one_go_before_background_refreshes_of_another() {
    // Queue 1 queues the 40 background calls, line 2 the 8 live ones a second later: the queues
    // follow one schedule, as the single line above does (4.54 s, 23.04 s in one process):
    // the same in threads, 3 ms later through a store 1 ms away.
    for (sharing, named, done) in [
        (Sharing::Threads, false, (4_540.0, 23_040.0)),
        (Sharing::Store, false, (4_543.0, 23_043.0)),
        (Sharing::Threads, true, (4_540.0, 23_040.0)),
        (Sharing::Store, true, (4_543.0, 23_043.0)),
    ] {
        let (w, lanes) = shared_world(2, Rate::new(2.0, 2.0).unwrap(), sharing, named);
        let (live, all, throttled) = background_then_live_on(w, (0, lanes[0].0), (1, lanes[1].1));
        assert_eq!(throttled, 0, "{sharing:?}");
        assert_eq!((live, all), done, "{sharing:?} {named}: live and all done");
    }
}

#[test]
fn four_threads_or_processes_with_two_lanes_each_share_by_the_weights() {
    for sharing in [Sharing::Threads, Sharing::Store] {
        for named in [false, true] {
            let (slow, per_line) = four_lines_saturated(sharing, named);
            // The lines' background lanes are one lane, as their live lanes are: one in ten.
            assert_eq!(slow, 20, "{sharing:?} {named}: background {slow} of 200");
            assert_eq!(per_line, [50; 4], "{sharing:?} {named}");
        }
    }
}

/// Four lines with 50 background and 50 live calls each: of the first 200 admissions, the
/// background lanes' and each queue's.
fn four_lines_saturated(sharing: Sharing, named: bool) -> (usize, Vec<usize>) {
    let rate = Rate::new(1.0, 10.0).unwrap();
    let (mut w, lanes) = shared_world(4, rate, sharing, named);
    // Each line's calls come in turn, a hundredth of a millisecond apart.
    let (mut background, mut of_line) = (Vec::new(), Vec::new());
    for k in 0..50 {
        for (line, &(slow, fast)) in lanes.iter().enumerate() {
            let at = (k * 4 + line) as f64 * 0.01;
            w.start_at(at, SimCall::get(line, fast, "key", SNAPSHOT));
            background.push(w.start_at(at, SimCall::get(line, slow, "key", SNAPSHOT)));
            of_line.extend([line, line]);
        }
    }
    w.run();
    let throttled = w.log.responses.iter().filter(|r| r.2 == 429).count();
    assert_eq!(throttled, 0, "{sharing:?}");
    let first: Vec<usize> = w.log.sent.iter().take(200).map(|s| s.index).collect();
    assert_eq!(first.len(), 200);
    let slow = first.iter().filter(|i| background.contains(i)).count();
    // Within a lane the queues' calls go by arrival, whichever line holds them.
    let per_line = (0..4)
        .map(|l| first.iter().filter(|&&i| of_line[i] == l).count())
        .collect();
    (slow, per_line)
}

#[test]
fn simulate_runs_lanes_through_the_same_gates_and_reports_each_lane() {
    let rate = Rate::new(2.0, 2.0).unwrap();
    let lane = |name: &str, weight, workers, start_ms| SimLane {
        name: Some(name.into()),
        weight,
        workers,
        snapshots: 1,
        start_ms,
    };
    let options = SimOptions {
        workers: 0,
        rate,
        coordination: Coordination::Shared,
        latency_ms: 20.0,
        lanes: vec![
            lane("background", 1.0, 40, 0.0),
            lane("live", 9.0, 8, 1_000.0),
        ],
        ..SimOptions::default()
    };
    let r = simulate(&options).unwrap();
    // The same figures as the world above: live done at 4.54 s, all at 23.04 s, no 429.
    let (live, all, _) = background_then_live(&[Some(1.0), Some(9.0)]);
    assert_eq!((r.attempts, r.throttled, r.completed), (48, 0, 48));
    let [background, urgent] = &r.lanes[..] else {
        panic!("two lanes: {:?}", r.lanes)
    };
    assert_eq!((urgent.name.as_str(), urgent.weight), ("live", 9.0));
    assert_eq!((urgent.workers.clone(), urgent.start_ms), (40..48, 1_000.0));
    assert_eq!((urgent.calls, urgent.admitted, urgent.throttled), (8, 8, 0));
    assert_eq!((background.calls, background.admitted), (40, 40));
    assert_eq!(urgent.done_ms, live);
    assert_eq!(background.done_ms.max(urgent.done_ms), all);
    // The last live call waited 3.52 s (its lane's eight admissions, and one background call's
    // in nine, at 2/s); the background calls waited far longer, on average and at most.
    assert_eq!(
        (urgent.max_wait_ms, urgent.mean_wait_ms),
        (3_520.0, 1_770.0),
        "live: {urgent:?}"
    );
    assert_eq!(
        (background.max_wait_ms, background.mean_wait_ms),
        (23_020.0, 12_981.5),
        "{background:?}"
    );

    // The wrapper's own workers beside the lanes are the `default` lane; unnamed lanes are
    // numbered as the gates made them.
    let options = SimOptions {
        workers: 2,
        lanes: vec![SimLane {
            name: None,
            ..lane("", 3.0, 2, 0.0)
        }],
        ..options
    };
    let r = simulate(&options).unwrap();
    let names: Vec<_> = r
        .lanes
        .iter()
        .map(|l| (l.name.as_str(), l.weight))
        .collect();
    assert_eq!(names, [("default", 1.0), ("lane-1", 3.0)]);
    assert_eq!(r.lanes[1].workers, 2..4);
    // Each lane's numbers are checked, naming the field.
    for (bad, field) in [
        (lane("x", 0.0, 1, 0.0), "weight"),
        (lane("x", 1.0, 0, 0.0), "workers"),
        (lane("x", 1.0, 1, -1.0), "startMs"),
        (lane("", 1.0, 1, 0.0), "name"),
        (lane(&"x".repeat(65), 1.0, 1, 0.0), "name"),
    ] {
        let options = SimOptions {
            lanes: vec![bad],
            ..options.clone()
        };
        let err = simulate(&options).unwrap_err().to_string();
        assert!(err.starts_with(&format!("`{field}`")), "{err}");
    }
}

/// What happens to a line: a call joins a lane, or the head is admitted.
#[derive(Debug, Clone)]
enum Op {
    Join(usize),
    Admit,
}

fn ops() -> impl Strategy<Value = (Vec<f64>, Vec<Op>)> {
    let weights = prop::collection::vec(
        prop::sample::select(vec![0.1, 0.5, 1.0, 1.5, 2.0, 3.0, 9.0, 20.0]),
        2..5,
    );
    weights.prop_flat_map(|weights| {
        let lanes = weights.len();
        let op = prop_oneof![
            2 => (0..lanes).prop_map(Op::Join),
            1 => Just(Op::Admit),
        ];
        (Just(weights), prop::collection::vec(op, 1..300))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn shares_follow_the_weights_within_one_token_and_no_token_goes_unused(
        (weights, ops) in ops()
    ) {
        let lane = |i: usize| Lane { id: i as u32 + 1, weight: weights[i], reserve: false };
        let mut line = Queue::default();
        let mut waiting = vec![0usize; weights.len()];
        let mut of_call = Vec::new();
        // Per admission: the lane admitted, and which lanes had calls waiting just before.
        let mut admissions: Vec<(usize, Vec<bool>)> = Vec::new();
        for op in &ops {
            match *op {
                Op::Join(l) => {
                    let rank = of_call.len() as u64;
                    // The prediction is where the call then stands in the admission order.
                    let ahead = line.ahead(lane(l));
                    line.push(Place { rank, call: rank, visit: 1 }, lane(l));
                    let order = line.ordered(|_| true);
                    prop_assert_eq!(order.iter().position(|p| p.call == rank), Some(ahead));
                    of_call.push(l);
                    waiting[l] += 1;
                }
                Op::Admit => {
                    let busy: Vec<bool> = waiting.iter().map(|&n| n > 0).collect();
                    let head = line.front(|_| true);
                    // Work-conserving: somebody goes whenever anybody waits.
                    prop_assert_eq!(head.is_some(), busy.iter().any(|&b| b));
                    let Some(head) = head else { continue };
                    prop_assert_eq!(Some(head), line.ordered(|_| true).first().copied());
                    line.pop(head);
                    let l = of_call[head.call as usize];
                    waiting[l] -= 1;
                    admissions.push((l, busy));
                }
            }
            prop_assert_eq!(line.len(), waiting.iter().sum::<usize>());
        }
        // Over any run of admissions in which lanes a and b both had calls waiting throughout,
        // their admissions over their weights differ by at most one token of each.
        for a in 0..weights.len() {
            for b in a + 1..weights.len() {
                for i in 0..admissions.len() {
                    let (mut na, mut nb) = (0.0, 0.0);
                    for (l, busy) in &admissions[i..] {
                        if !(busy[a] && busy[b]) {
                            break;
                        }
                        na += f64::from(u8::from(*l == a));
                        nb += f64::from(u8::from(*l == b));
                        let gap = (na / weights[a] - nb / weights[b]).abs();
                        let bound = 1.0 / weights[a] + 1.0 / weights[b] + 1e-9;
                        prop_assert!(gap <= bound, "lanes {a} ({}) and {b} ({}): {na} and {nb}", weights[a], weights[b]);
                    }
                }
            }
        }
    }
}
