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

/// Counts of durations per bin, with their count, sum and maximum. The bins are made when a
/// duration falls in a second bin: until then `only` names the one bin every duration fell
/// in (every gate has two histograms; most never see a backoff, and a key called now and then
/// waits alike each time).
#[derive(Debug, Clone, Default)]
pub struct Histogram {
    counts: Option<Box<Bins>>,
    only: u8,
    count: u64,
    sum: Millis,
    max: Millis,
}

impl PartialEq for Histogram {
    fn eq(&self, other: &Self) -> bool {
        (self.count, self.sum, self.max, self.counts())
            == (other.count, other.sum, other.max, other.counts())
    }
}

impl Histogram {
    /// No durations.
    pub(crate) const EMPTY: Histogram = Histogram {
        counts: None,
        only: 0,
        count: 0,
        sum: 0.0,
        max: 0.0,
    };

    /// Adds one duration (negative ones count as 0).
    pub(crate) fn record(&mut self, ms: Millis) {
        let ms = ms.max(0.0);
        let bin = BOUNDS_MS
            .iter()
            .position(|&b| ms <= b)
            .unwrap_or(BOUNDS_MS.len());
        match &mut self.counts {
            Some(counts) => counts[bin] += 1,
            None if self.count == 0 || usize::from(self.only) == bin => self.only = bin as u8,
            None => {
                let mut counts = Box::new(self.counts());
                counts[bin] += 1;
                self.counts = Some(counts);
            }
        }
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
        if let Some(counts) = self.counts.as_deref() {
            return *counts;
        }
        let mut counts = Bins::default();
        counts[usize::from(self.only)] = self.count;
        counts
    }
}

impl Histogram {
    /// For JavaScript, as `name`: `{ count, sumMs, maxMs, bins: [{ leMs, count }] }`, the bins
    /// written as their counts alone, in the order of `BOUNDS_MS` and the last bin's: the
    /// bindings pair them with the bounds (the last `Infinity`).
    pub(crate) fn write(&self, name: &str, w: &mut Wire) {
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

    #[test]
    fn makes_its_bins_on_a_second_bin() {
        let mut h = Histogram::default();
        assert_eq!(h.counts(), Bins::default());
        h.record(700.0);
        h.record(600.0);
        assert!(h.counts.is_none(), "one bin so far");
        assert_eq!((h.counts()[9], h.counts().iter().sum::<u64>()), (2, 2));
        h.record(0.5);
        assert!(h.counts.is_some());
        assert_eq!((h.counts()[0], h.counts()[9], h.count()), (1, 2, 3));
    }
}
