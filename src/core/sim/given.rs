//! `simulate(options)` as the caller gave it, and what it means: the defaults that fill in,
//! the ranges each number must be in, and which gates the workers share. The bindings only
//! read JavaScript values into [`SimGiven`]; every decision is made here.

use super::lanes::SimLane;
use super::model::{Coordination, Lookups, SimCache, SimOptions};
use super::month::SimQuotaGiven;
use super::server::Headers;
use crate::core::rules::allowance::{at_least, ConfigError, Rate};
use crate::core::rules::cache::CacheConfig;
use crate::core::rules::ranges::{COUNT, SIM_ATTEMPTS, SIM_CALLS, SIM_SPLIT};
use crate::core::rules::toggle::Toggle;

/// `simulate()`'s options as given (`None`: left out).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimGiven {
    /// One gate for every worker.
    pub shared: Option<bool>,
    /// `separateGates`.
    pub separate_gates: Option<Split>,
    /// The server rejects everything.
    pub always_reject: Option<bool>,
    /// Attempts per worker.
    pub max_attempts: Option<f64>,
    /// Retries allowed in all; `null` is none, as left out.
    pub retry_budget: Option<f64>,
    /// The wrapper's own workers.
    pub workers: Option<f64>,
    /// The allowance's burst.
    pub burst: Option<f64>,
    /// The allowance's refill.
    pub per_second: Option<f64>,
    /// The server's `Retry-After`, in ms.
    pub retry_after_ms: Option<f64>,
    /// The gates learn the allowance.
    pub learn: Option<bool>,
    /// Where the server sends its rate-limit headers.
    pub headers: Option<HeadersGiven>,
    /// Event lookups on a limiter of their own.
    pub lookups: Option<LookupsGiven>,
    /// Processes sharing a store.
    pub processes: Option<f64>,
    /// Threads of one process sharing memory.
    pub threads: Option<f64>,
    /// A store operation's round trip, in ms.
    pub store_latency_ms: Option<f64>,
    /// Snapshots each worker fetches.
    pub snapshots: Option<f64>,
    /// The server's latency, in ms.
    pub latency_ms: Option<f64>,
    /// Lanes of workers on the shared gate.
    pub lanes: Option<Vec<LaneGiven>>,
    /// Times each worker fetches its snapshots.
    pub polls: Option<f64>,
    /// How often a worker polls, in ms.
    pub poll_every_ms: Option<f64>,
    /// `cache`: `true`, `false`, or `{ ttlMs }`.
    pub cache: Option<Toggle<SimCacheGiven>>,
    /// `quota`: the key's monthly credits.
    pub quota: Option<SimQuotaGiven>,
}

/// `cache: { ttlMs, staleForMs }`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SimCacheGiven {
    /// How long the server's snapshots are fresh, in ms.
    pub ttl_ms: Option<f64>,
    /// How long past that an entry answers a call the gate would hold or refuse, in ms.
    pub stale_for_ms: Option<f64>,
}

impl SimCacheGiven {
    /// The cache `cache` asks for (`None`: none): `true` keeps nothing fresh (calls in flight share
    /// one request, as `createFetch({ cache: true })` without a `ttl_seconds`), `{ ttlMs }`
    /// keeps snapshots that long; either keeps them `staleForMs` longer (createFetch's 10
    /// minutes where left out) for calls the gate would hold or refuse.
    fn asked(given: Option<Toggle<SimCacheGiven>>) -> Result<Option<SimCache>, ConfigError> {
        let g = match given {
            None | Some(Toggle::Flag(false)) => return Ok(None),
            Some(Toggle::Flag(true)) => SimCacheGiven::default(),
            Some(Toggle::Given(g)) => g,
        };
        let ttl = g.ttl_ms.unwrap_or(0.0);
        let stale = g.stale_for_ms.unwrap_or(CacheConfig::DEFAULT.stale_for_ms);
        let number = "a finite number >= 0";
        Ok(Some(SimCache {
            ttl_ms: at_least("cache.ttlMs", ttl, 0.0, number)?,
            stale_for_ms: at_least("cache.staleForMs", stale, 0.0, number)?,
        }))
    }
}

/// `separateGates`: a flag (`true`: two processes) or a number of processes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Split {
    /// `true` or `false`.
    Flag(bool),
    /// How many.
    Count(f64),
}

/// `headers`: a flag (on every answer, or none) or `'throttled'` (on 429s only).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HeadersGiven {
    /// `true` or `false`.
    Flag(bool),
    /// `'throttled'`.
    Throttled,
}

/// `lookups: { calls, burst, perSecond }`, each required.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LookupsGiven {
    /// Lookups made.
    pub calls: Option<f64>,
    /// Their limiter's burst.
    pub burst: Option<f64>,
    /// Their limiter's refill.
    pub per_second: Option<f64>,
}

/// One of `lanes`: `{ name, weight, workers, snapshots, startMs }`, `workers` required.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LaneGiven {
    /// Its name.
    pub name: Option<String>,
    /// Its share.
    pub weight: Option<f64>,
    /// Its workers.
    pub workers: Option<f64>,
    /// Snapshots each of its workers fetches.
    pub snapshots: Option<f64>,
    /// When its workers start, in virtual ms.
    pub start_ms: Option<f64>,
}

impl SimGiven {
    /// The scenario asked for: [`SimOptions::default`]'s figures where left out, every number
    /// in its range. The error names the field (`lanes[1].weight`).
    pub fn options(self) -> Result<SimOptions, ConfigError> {
        let d = SimOptions::default();
        let snapshots = SIM_CALLS.given("snapshots", self.snapshots)?.unwrap_or(1);
        let lanes = (self.lanes.unwrap_or_default().into_iter().enumerate())
            .map(|(index, lane)| {
                let item = |error| ConfigError::Item {
                    list: "lanes",
                    index,
                    error: Box::new(error),
                };
                lane.lane(snapshots).map_err(item)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let separate = match self.separate_gates {
            Some(Split::Flag(true)) => Some(2),
            Some(Split::Flag(false)) | None => None,
            Some(Split::Count(n)) => SIM_SPLIT.given("separateGates", Some(n))?,
        };
        let processes = SIM_SPLIT.given("processes", self.processes)?;
        let threads = SIM_SPLIT.given("threads", self.threads)?;
        let coordination = Coordination::asked(
            self.shared,
            [separate, processes, threads],
            !lanes.is_empty(),
            self.lookups.is_some(),
        )
        .map_err(ConfigError::Shape)?;
        let lookups = self.lookups.map(LookupsGiven::lookups).transpose()?;
        let retry_budget = COUNT.given("retryBudget", self.retry_budget)?;
        let workers = match lanes.is_empty() {
            true => SIM_CALLS
                .given("workers", self.workers)?
                .unwrap_or(d.workers),
            false => (SIM_CALLS.from_zero().given("workers", self.workers)?).unwrap_or(0),
        };
        let quota = self.quota.map(SimQuotaGiven::quota).transpose()?;
        let polls = (SIM_CALLS.given("polls", self.polls)?).unwrap_or(d.polls);
        // A month's polls, left to their own pace, are spread evenly over its periods.
        let poll_every_ms = match (self.poll_every_ms, &quota) {
            (Some(ms), _) => ms,
            (None, Some(q)) => q.run_ms() / f64::from(polls),
            (None, None) => d.poll_every_ms,
        };
        let burst = self.burst.unwrap_or(d.rate.burst());
        let per_second = self.per_second.unwrap_or(d.rate.per_second());
        Ok(SimOptions {
            workers,
            rate: Rate::named(burst, per_second, ["burst", "perSecond"])?,
            retry_after_ms: self.retry_after_ms.unwrap_or(d.retry_after_ms),
            coordination,
            always_reject: self.always_reject.unwrap_or(d.always_reject),
            max_attempts: (SIM_ATTEMPTS.given("maxAttempts", self.max_attempts)?)
                .unwrap_or(d.max_attempts),
            retry_budget,
            learn: self.learn.unwrap_or(d.learn),
            headers: match self.headers {
                Some(HeadersGiven::Flag(true)) => Headers::Always,
                Some(HeadersGiven::Flag(false)) | None => Headers::Never,
                Some(HeadersGiven::Throttled) => Headers::OnThrottle,
            },
            snapshots,
            latency_ms: self.latency_ms.unwrap_or(d.latency_ms),
            lookups,
            store_latency_ms: self.store_latency_ms.unwrap_or(d.store_latency_ms),
            lanes,
            polls,
            poll_every_ms,
            cache: SimCacheGiven::asked(self.cache)?,
            quota,
        })
    }
}

impl LookupsGiven {
    /// The lookups asked for, checked.
    fn lookups(self) -> Result<Lookups, ConfigError> {
        let calls = self.calls.ok_or(ConfigError::Missing {
            field: "lookups.calls",
        })?;
        let calls = SIM_CALLS.from_zero().given("lookups.calls", Some(calls))?;
        let fields = ["lookups.burst", "lookups.perSecond"];
        Ok(Lookups {
            calls: calls.unwrap_or(0),
            rate: Rate::given([self.burst, self.per_second], fields)?,
        })
    }
}

impl LaneGiven {
    /// The lane asked for, checked: its weight 1, its start 0 ms and its workers' snapshots
    /// the run's (`snapshots`) where left out. Its errors name the field within the lane.
    fn lane(self, snapshots: u32) -> Result<SimLane, ConfigError> {
        let workers = SIM_CALLS.given("workers", self.workers)?;
        let lane = SimLane {
            name: self.name,
            weight: self.weight.unwrap_or(1.0),
            workers: workers.ok_or(ConfigError::Missing { field: "workers" })?,
            snapshots: (SIM_CALLS.given("snapshots", self.snapshots)?).unwrap_or(snapshots),
            start_ms: self.start_ms.unwrap_or(0.0),
        };
        lane.validate()?;
        Ok(lane)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rules::credits::Spread;

    fn refused(given: SimGiven) -> (String, bool) {
        let error = given.options().expect_err("refused");
        (error.to_string(), error.is_shape())
    }

    fn lanes(lanes: Vec<LaneGiven>) -> SimGiven {
        SimGiven {
            lanes: Some(lanes),
            ..SimGiven::default()
        }
    }

    fn lane(workers: f64) -> LaneGiven {
        LaneGiven {
            workers: Some(workers),
            ..LaneGiven::default()
        }
    }

    fn quota(quota: SimQuotaGiven) -> SimGiven {
        SimGiven {
            quota: Some(quota),
            ..SimGiven::default()
        }
    }

    fn month() -> SimQuotaGiven {
        SimQuotaGiven {
            limit: Some(100.0),
            ..SimQuotaGiven::default()
        }
    }

    #[test]
    fn a_quota_is_thirty_days_unspread_where_left_out_and_spreads_with_one_process() {
        let options = quota(month()).options().unwrap();
        assert_eq!(
            options.poll_every_ms,
            30.0 * 86_400_000.0,
            "one poll a month"
        );
        let q = options.quota.unwrap();
        assert_eq!(
            (q.limit, q.period_ms, q.used),
            (100.0, 30.0 * 86_400_000.0, 0.0)
        );
        assert_eq!(q.spread, None);
        let spread = SimQuotaGiven {
            spread: Some(true),
            ..month()
        };
        let q = quota(spread.clone()).options().unwrap().quota.unwrap();
        assert_eq!(q.spread.map(|(s, _)| s), Some(Spread::DEFAULT));
        let threads = SimGiven {
            threads: Some(2.0),
            ..quota(spread)
        };
        let refused = crate::core::sim::model::simulate(&threads.options().unwrap()).unwrap_err();
        assert!(refused
            .to_string()
            .starts_with("`quota.spread` is for one process"));
    }

    #[test]
    fn left_out_it_is_the_articles_run() {
        assert_eq!(SimGiven::default().options(), Ok(SimOptions::default()));
    }

    #[test]
    fn cache_true_shares_requests_in_flight_and_keeps_nothing_fresh() {
        let cache = |cache| {
            let given = SimGiven {
                cache,
                ..SimGiven::default()
            };
            given.options().unwrap().cache
        };
        let kept = |ttl_ms, stale_for_ms| {
            Some(SimCache {
                ttl_ms,
                stale_for_ms,
            })
        };
        assert_eq!(cache(None), None);
        assert_eq!(cache(Some(Toggle::Flag(false))), None);
        assert_eq!(cache(Some(Toggle::Flag(true))), kept(0.0, 600_000.0));
        let given = SimCacheGiven {
            ttl_ms: Some(2e3),
            stale_for_ms: Some(0.0),
        };
        assert_eq!(cache(Some(Toggle::Given(given))), kept(2e3, 0.0));
    }

    #[test]
    fn the_union_fields_mean_what_the_readme_says() {
        let split = |s| SimGiven {
            separate_gates: Some(s),
            ..SimGiven::default()
        };
        let coordination = |s| split(s).options().unwrap().coordination;
        assert_eq!(coordination(Split::Flag(true)), Coordination::Separate(2));
        assert_eq!(coordination(Split::Flag(false)), Coordination::Independent);
        assert_eq!(coordination(Split::Count(3.0)), Coordination::Separate(3));
        let headers = |h| {
            let given = SimGiven {
                headers: Some(h),
                ..SimGiven::default()
            };
            given.options().unwrap().headers
        };
        assert_eq!(headers(HeadersGiven::Flag(true)), Headers::Always);
        assert_eq!(headers(HeadersGiven::Flag(false)), Headers::Never);
        assert_eq!(headers(HeadersGiven::Throttled), Headers::OnThrottle);
    }

    #[test]
    fn lanes_take_the_runs_snapshots_and_share_one_gate_with_no_workers_of_its_own() {
        let given = SimGiven {
            snapshots: Some(3.0),
            ..lanes(vec![lane(2.0)])
        };
        let options = given.options().unwrap();
        assert_eq!(
            (options.workers, options.coordination),
            (0, Coordination::Shared)
        );
        let expected = SimLane {
            name: None,
            weight: 1.0,
            workers: 2,
            snapshots: 3,
            start_ms: 0.0,
        };
        assert_eq!(options.lanes, [expected]);
    }

    #[test]
    fn every_error_names_its_field_in_the_callers_words() {
        let whole = |field: &str, from: u32, to: u32, got: &str| {
            (
                format!("Expected `{field}` to be an integer from {from} to {to}, got {got}"),
                false,
            )
        };
        let cases = [
            (
                SimGiven {
                    workers: Some(1.5),
                    ..SimGiven::default()
                },
                whole("workers", 1, 100000, "1.5"),
            ),
            (
                SimGiven {
                    workers: Some(-1.0),
                    ..lanes(vec![lane(1.0)])
                },
                whole("workers", 0, 100000, "-1"),
            ),
            (
                SimGiven {
                    retry_budget: Some(-1.0),
                    ..SimGiven::default()
                },
                whole("retryBudget", 0, 1000000000, "-1"),
            ),
            (
                SimGiven {
                    separate_gates: Some(Split::Count(0.0)),
                    ..SimGiven::default()
                },
                whole("separateGates", 1, 1000, "0"),
            ),
            (
                lanes(vec![lane(1.0), lane(0.0)]),
                whole("lanes[1].workers", 1, 100000, "0"),
            ),
            (
                lanes(vec![LaneGiven::default()]),
                ("`lanes[0].workers` is required".into(), true),
            ),
            (
                lanes(vec![LaneGiven {
                    weight: Some(0.0),
                    ..lane(1.0)
                }]),
                (
                    "`lanes[0].weight` must be a finite number greater than 0, got 0".into(),
                    false,
                ),
            ),
            (
                SimGiven {
                    lookups: Some(LookupsGiven::default()),
                    ..SimGiven::default()
                },
                ("`lookups.calls` is required".into(), true),
            ),
            (
                SimGiven {
                    lookups: Some(LookupsGiven {
                        calls: Some(1.0),
                        burst: Some(1.0),
                        per_second: None,
                    }),
                    ..SimGiven::default()
                },
                ("`lookups.perSecond` is required".into(), true),
            ),
            (
                SimGiven {
                    shared: Some(true),
                    threads: Some(2.0),
                    ..SimGiven::default()
                },
                (
                    "Choose one of `shared`, `separateGates`, `processes` and `threads`: one \
                     gate, one per process, processes sharing a store, or threads sharing memory"
                        .into(),
                    true,
                ),
            ),
            (
                SimGiven {
                    burst: Some(0.0),
                    ..SimGiven::default()
                },
                ("`burst` must be a finite number >= 1, got 0".into(), false),
            ),
            (
                SimGiven {
                    cache: Some(Toggle::Given(SimCacheGiven {
                        ttl_ms: Some(-1.0),
                        stale_for_ms: None,
                    })),
                    ..SimGiven::default()
                },
                (
                    "`cache.ttlMs` must be a finite number >= 0, got -1".into(),
                    false,
                ),
            ),
            (
                SimGiven {
                    polls: Some(0.0),
                    ..SimGiven::default()
                },
                whole("polls", 1, 100000, "0"),
            ),
            (
                quota(SimQuotaGiven::default()),
                ("`quota.limit` is required".into(), true),
            ),
            (
                quota(SimQuotaGiven {
                    days: Some(0.0),
                    ..month()
                }),
                (
                    "`quota.days` must be a finite number greater than 0, got 0".into(),
                    false,
                ),
            ),
            (
                quota(SimQuotaGiven {
                    period_ms: Some(1.0),
                    days: Some(1.0),
                    ..month()
                }),
                (
                    "Choose one of `quota.periodMs` and `quota.days`".into(),
                    true,
                ),
            ),
            (
                quota(SimQuotaGiven {
                    used: Some(-1.0),
                    ..month()
                }),
                (
                    "`quota.used` must be a finite number >= 0, got -1".into(),
                    false,
                ),
            ),
            (
                quota(SimQuotaGiven {
                    reserve: Some(1.0),
                    ..month()
                }),
                (
                    "`quota.reserve` must be a number from 0 up to (not including) 1, got 1".into(),
                    false,
                ),
            ),
        ];
        for (given, expected) in cases {
            assert_eq!(refused(given.clone()), expected, "{given:?}");
        }
    }
}
