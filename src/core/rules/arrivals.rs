//! The entries this thread holds of what the process's worker threads fetched (the threads'
//! shared cache: each answer is posted to every thread, `cache_share.js`). The index only: the
//! bindings keep the bytes by the entry's shared name. Bounded as a cache is: no more than
//! `max_bytes` (the least recently used go first), and nothing past its lifetime, dropped at the
//! wake-up it asks for even when nothing else happens (an idle process frees them too). A look
//! through them for ended lifetimes costs a pass, so it comes at most once a second.

use crate::core::base::map::Map;
use crate::core::Millis;

/// How often the entries may be looked through for ended lifetimes.
const SWEEP_EVERY_MS: Millis = 1_000.0;

/// An entry that arrived: its length, the end of its lifetime (the shared clock), and its place
/// in the order of use.
#[derive(Debug, Clone, Copy)]
struct Arrived {
    bytes: f64,
    until: Millis,
    used: u64,
}

/// The index of the entries that arrived on this thread.
#[derive(Debug, Default)]
pub struct Arrivals {
    max_bytes: f64,
    bytes: f64,
    uses: u64,
    entries: Map<String, Arrived>,
    /// No look for ended lifetimes before this.
    next_sweep: Millis,
}

impl Arrivals {
    /// Holds at least `max_bytes` (the largest `cache.maxBytes` of the thread's caches that
    /// share with the threads: they read one index).
    pub fn bound(&mut self, max_bytes: f64) {
        self.max_bytes = self.max_bytes.max(max_bytes);
    }

    /// The bytes held now.
    pub fn bytes(&self) -> f64 {
        self.bytes
    }

    /// An entry `name`, `bytes` long and fresh until `until`, arrived at `now`, replacing any
    /// copy of it: the names whose bytes to drop (those past their lifetime, the least recently
    /// used past `max_bytes`; `name` itself only when the new copy cannot be kept).
    pub fn arrive(&mut self, now: Millis, name: &str, bytes: f64, until: Millis) -> Vec<String> {
        let mut dropped = match now >= self.next_sweep {
            true => self.sweep(now),
            false => Vec::new(),
        };
        // The name stands for the new copy from here: an old one's end is not reported.
        dropped.retain(|n| n != name);
        self.forget(name);
        if until <= now || bytes > self.max_bytes {
            dropped.push(name.to_owned());
            return dropped;
        }
        while self.bytes + bytes > self.max_bytes {
            let oldest = self.entries.iter().min_by_key(|(_, a)| a.used);
            let Some(oldest) = oldest.map(|(n, _)| n.clone()) else {
                break;
            };
            self.forget(&oldest);
            dropped.push(oldest);
        }
        self.uses += 1;
        let arrived = Arrived {
            bytes,
            until,
            used: self.uses,
        };
        self.entries.insert(name.to_owned(), arrived);
        self.bytes += bytes;
        dropped
    }

    /// How long entry `name` stays fresh after `now`, if it is here and fresh (it counts as
    /// used).
    pub fn left(&mut self, now: Millis, name: &str) -> Option<Millis> {
        self.uses += 1;
        let uses = self.uses;
        let arrived = self.entries.get_mut(name).filter(|a| a.until > now)?;
        arrived.used = uses;
        Some(arrived.until - now)
    }

    /// Drops every entry past its lifetime at `now`: their names.
    pub fn sweep(&mut self, now: Millis) -> Vec<String> {
        self.next_sweep = now + SWEEP_EVERY_MS;
        let old: Vec<String> = (self.entries.iter())
            .filter(|(_, a)| a.until <= now)
            .map(|(n, _)| n.clone())
            .collect();
        for name in &old {
            self.forget(name);
        }
        old
    }

    /// When to sweep next (the shared clock): when the next lifetime ends, but not sooner than
    /// a second after the last sweep; `None` when nothing is held.
    pub fn wake_at(&self) -> Option<Millis> {
        let first = self.entries.values().map(|a| a.until).reduce(Millis::min)?;
        Some(first.max(self.next_sweep))
    }

    fn forget(&mut self, name: &str) {
        if let Some(a) = self.entries.remove(name) {
            self.bytes -= a.bytes;
        }
    }
}
