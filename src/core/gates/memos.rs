//! What forgotten gates leave behind, per scope, in a table of bounded size: a learning gate's
//! estimate, and a retry budget not full again. A key that returns starts from its estimate and
//! with the budget it had left, and a process that sees a stream of new keys keeps at most
//! `MEMOS` of them twice over.

use super::scope::Print;
use crate::core::base::map::Map;
use crate::core::rules::learn::memo::Memo;
use crate::core::rules::spending::Spending;

/// What one forgotten gate left.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Kept {
    /// Its learner's estimate, if it learned and had heard an answer.
    pub learned: Option<Memo>,
    /// Tokens left in its retry budget, when it was not full: a budget refills only with
    /// successes, so a key's gate made anew does not find it full again.
    pub budget_left: Option<f64>,
    /// Its spread (`quota.spread`): the bucket and the costs learned, so a key that returns
    /// goes on at its pace rather than a fresh bucket's, with no reading to wait for.
    pub spending: Option<Box<Spending>>,
}

/// Memos kept per generation: when the young one is full it becomes the old one and the old
/// one is dropped, so at most twice this many are kept (some 3 MB) and a key's memo lasts at
/// least this many forgettings of other keys.
pub(crate) const MEMOS: usize = 16_384;

/// What forgotten gates left, by their scope's [`print`](super::scope::Scope::print), in two
/// generations (a key's is taken back out when its gate is made anew).
#[derive(Default)]
pub(crate) struct Memos {
    young: Map<Print, Kept>,
    old: Map<Print, Kept>,
}

impl Memos {
    /// Keeps `memo` for the scope printed `print`.
    pub(crate) fn put(&mut self, print: Print, memo: Kept) {
        if self.young.len() >= MEMOS {
            // The old generation's table becomes the young one, emptied: the two tables, once
            // grown, are reused rather than dropped and grown again among the gates.
            std::mem::swap(&mut self.young, &mut self.old);
            self.young.clear();
        }
        self.old.remove(&print);
        self.young.insert(print, memo);
    }

    /// What was kept for `print`, which leaves the table.
    pub(crate) fn take(&mut self, print: Print) -> Option<Kept> {
        self.young
            .remove(&print)
            .or_else(|| self.old.remove(&print))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rules::learn::{Learner, Sample};

    impl Memos {
        fn len(&self) -> usize {
            self.young.len() + self.old.len()
        }
    }

    fn memo() -> Kept {
        let mut learner = Learner::new(None);
        let answer = Sample {
            sent: 0.0,
            status: 200,
            counts: Some((10, 9)),
            seq: 0.0,
            ahead: 0.0,
            heard: 0.0,
            behind: 0.0,
            backlogged: false,
        };
        learner.observe(10.0, &answer);
        Kept {
            learned: learner.memo(),
            budget_left: Some(480.0),
            spending: None,
        }
    }

    #[test]
    fn a_stream_of_keys_keeps_at_most_two_generations_and_the_newest() {
        let mut memos = Memos::default();
        let n = 5 * MEMOS as u64;
        for k in 0..n {
            memos.put((k, 0), memo());
            assert!(memos.len() <= 2 * MEMOS);
        }
        assert!(memos.len() > MEMOS);
        assert_eq!(memos.take((n - 1, 0)), Some(memo()));
        assert_eq!(memos.take((n - MEMOS as u64, 0)), Some(memo()));
        assert_eq!(memos.take((0, 0)), None, "the oldest went");
    }

    #[test]
    fn taken_is_gone_and_put_again_is_young() {
        let mut memos = Memos::default();
        memos.put((1, 1), memo());
        for k in 0..MEMOS as u64 {
            memos.put((k, 7), memo());
        }
        // (1, 1) is old now; put again it is young, and only once in the table.
        memos.put((1, 1), memo());
        assert_eq!(memos.len(), MEMOS + 1);
        for k in 0..MEMOS as u64 - 1 {
            memos.put((k, 8), memo());
        }
        assert!(memos.take((1, 1)).is_some(), "survived a generation");
        assert!(memos.take((1, 1)).is_none());
    }
}
