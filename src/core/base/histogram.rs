//! A fixed-bin histogram of durations: cheap to record, and enough to see the shape of
//! admission waits and backoffs without keeping every sample.

use super::wire::Wire;
use crate::core::Millis;

/// Upper bounds of the bins, in milliseconds; a last bin holds everything above.
pub(crate) const BOUNDS_MS: [Millis; 14] = [
    1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1e3, 2e3, 5e3, 1e4, 6e4,
];

/// Counts per bin.
/// The bins' upper bounds in seconds, the last bin's (unbounded) left out: the metrics'
/// histograms' boundaries.
pub fn bounds_seconds() -> Vec<f64> {
    BOUNDS_MS.iter().map(|ms| ms / 1000.0).collect()
}

type Bins = [u64; BOUNDS_MS.len() + 1];

/// Counts of durations per bin, with their count, sum and maximum. The bins are made on the
/// first duration: every gate has two histograms, and most never see a backoff.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    counts: Option<Box<Bins>>,
    count: u64,
    sum: Millis,
    max: Millis,
}

impl Histogram {
    /// Adds one duration (negative ones count as 0).
    pub(crate) fn record(&mut self, ms: Millis) {
        let ms = ms.max(0.0);
        let bin = BOUNDS_MS
            .iter()
            .position(|&b| ms <= b)
            .unwrap_or(BOUNDS_MS.len());
        self.counts.get_or_insert_default()[bin] += 1;
        self.count += 1;
        self.sum += ms;
        self.max = self.max.max(ms);
    }

    /// Durations recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Durations recorded per bin, in the order of [`BOUNDS_MS`] and the last bin's.
    fn counts(&self) -> Bins {
        self.counts.as_deref().copied().unwrap_or_default()
    }
}

impl Histogram {
    /// For JavaScript, as `name`: `{ count, sumMs, maxMs, bins: [{ leMs, count }] }`, the bins
    /// written as their counts alone, in the order of `BOUNDS_MS` and the last bin's: the
    /// bindings pair them with the bounds (the last `Infinity`).
    pub fn write(&self, name: &str, w: &mut Wire) {
        w.open(name);
        w.count("count", self.count);
        w.number("sumMs", self.sum);
        w.number("maxMs", self.max);
        w.counts("bins", &self.counts());
        w.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_into_the_first_bucket_that_fits() {
        let mut h = Histogram::default();
        for ms in [0.0, 1.0, 1.5, 499.0, 500.0, 501.0, 1e6] {
            h.record(ms);
        }
        let counts = h.counts();
        assert_eq!(counts[0], 2);
        assert_eq!(counts[1], 1);
        assert_eq!(counts[8], 2);
        assert_eq!(counts[9], 1);
        assert_eq!(counts[14], 1);
        assert_eq!((h.count(), h.max), (7, 1e6));
    }
}
