//! Records for JavaScript as numbers in a row, their texts beside them: how `stats()` hands out
//! each gate, and the metrics each lane's calls waiting on each gate (10,000 gates' JSON cost
//! more to write and to parse than the objects built from numbers, and a call into JavaScript
//! per field more still). A value's place is its name's in the layout, which the writer
//! records as it writes the first record, so the layout comes from the code that writes, and
//! the reader checks it against its own. Every record writes the same values: a `None` is NaN, an optional group
//! writes its values all the same (NaN) behind a header, its width, negative when absent; a
//! text is its length in UTF-16 units among the numbers, its characters in the text.

/// Records written in pieces of about `piece` numbers (cut between records), so many records
/// never sit whole in wasm memory, which once grown is never given back; each piece goes to
/// `sink` with the layout, its numbers and its text.
pub struct Wire<'s> {
    numbers: Vec<f64>,
    text: String,
    layout: String,
    records: usize,
    piece: usize,
    /// The groups open, innermost last: where an optional one's header is, and whether it is
    /// present.
    groups: Vec<Option<(usize, bool)>>,
    sink: &'s mut dyn FnMut(&str, &[f64], &str),
}

impl<'s> Wire<'s> {
    /// A writer handing `sink` pieces of about `piece` numbers.
    pub fn new(piece: usize, sink: &'s mut dyn FnMut(&str, &[f64], &str)) -> Self {
        Wire {
            numbers: Vec::new(),
            text: String::new(),
            layout: String::new(),
            records: 0,
            piece,
            groups: Vec::new(),
            sink,
        }
    }

    /// Records `name` in the layout while the first record is written.
    fn name(&mut self, name: &str) {
        if self.records == 0 {
            if !self.layout.is_empty() && !self.layout.ends_with('{') {
                self.layout.push(',');
            }
            self.layout.push_str(name);
        }
    }

    /// A number.
    pub(crate) fn number(&mut self, name: &str, v: f64) {
        self.name(name);
        self.numbers.push(v);
    }

    /// A count (exact up to 2^53, as JSON's numbers are for JavaScript).
    pub(crate) fn count(&mut self, name: &str, v: u64) {
        self.number(name, v as f64);
    }

    /// A flag: 1 or 0.
    pub(crate) fn flag(&mut self, name: &str, v: bool) {
        self.number(name, f64::from(u8::from(v)));
    }

    /// A number or nothing (NaN).
    pub(crate) fn maybe(&mut self, name: &str, v: Option<f64>) {
        self.number(name, v.unwrap_or(f64::NAN));
    }

    /// Counts in a row, as many as the reader's bounds (named `name[]`).
    pub(crate) fn counts(&mut self, name: &str, v: &[u64]) {
        self.name(name);
        if self.records == 0 {
            self.layout.push_str("[]");
        }
        self.numbers.extend(v.iter().map(|&c| c as f64));
    }

    /// A text or nothing: its length in UTF-16 units (NaN for none), its characters in the text.
    pub(crate) fn text(&mut self, name: &str, v: Option<&str>) {
        let units = v.map(|v| match v.is_ascii() {
            true => v.len(),
            false => v.encode_utf16().count(),
        });
        self.number(name, units.map_or(f64::NAN, |n| n as f64));
        self.text.push_str(v.unwrap_or_default());
    }

    /// Opens a group of values (an object).
    pub(crate) fn open(&mut self, name: &str) {
        self.name(name);
        if self.records == 0 {
            self.layout.push('{');
        }
        self.groups.push(None);
    }

    /// Opens a group that may be absent (`null`, or keys left out): it writes its values all
    /// the same, behind a header the group's [`close`](Self::close) writes.
    pub(crate) fn open_if(&mut self, name: &str, present: bool) {
        self.name(name);
        if self.records == 0 {
            self.layout.push_str("?{");
        }
        self.groups.push(Some((self.numbers.len(), present)));
        self.numbers.push(0.0);
    }

    /// Closes the group opened last; an optional one's header is its width, negative when
    /// absent.
    pub(crate) fn close(&mut self) {
        if self.records == 0 {
            self.layout.push('}');
        }
        if let Some((at, present)) = self.groups.pop().flatten() {
            let width = (self.numbers.len() - at - 1) as f64;
            self.numbers[at] = if present { width } else { -width };
        }
    }

    /// Ends a record; a piece goes once it holds `piece` numbers.
    pub(crate) fn end(&mut self) {
        self.records += 1;
        if self.numbers.len() >= self.piece {
            self.flush();
        }
    }

    /// Hands over what is left.
    pub fn finish(mut self) {
        if !self.numbers.is_empty() {
            self.flush();
        }
    }

    fn flush(&mut self) {
        (self.sink)(&self.layout, &self.numbers, &self.text);
        self.numbers.clear();
        self.text.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `record` `n` times in pieces of about `piece` numbers: the layout, and each
    /// piece's numbers and text.
    fn written(
        n: usize,
        piece: usize,
        record: impl Fn(&mut Wire, usize),
    ) -> Vec<(String, Vec<f64>, String)> {
        let mut out = Vec::new();
        let mut sink = |layout: &str, numbers: &[f64], text: &str| {
            out.push((layout.to_owned(), numbers.to_vec(), text.to_owned()));
        };
        let mut wire = Wire::new(piece, &mut sink);
        for k in 0..n {
            record(&mut wire, k);
            wire.end();
        }
        wire.finish();
        out
    }

    fn record(w: &mut Wire, k: usize) {
        w.text("scope", Some(if k == 0 { "key:é" } else { "key:a" }));
        w.count("requests", k as u64);
        w.flag("slow", k == 1);
        w.open_if("learned", k == 1);
        w.maybe("burst", (k == 1).then_some(2.5));
        w.text("limiter", None);
        w.close();
        w.open("bins");
        w.counts("bins", &[1, 2]);
        w.close();
    }

    #[test]
    fn writes_the_same_values_for_every_record_and_names_them_once() {
        let out = written(2, usize::MAX, record);
        let [(layout, numbers, text)] = &out[..] else {
            panic!("{out:?}")
        };
        assert_eq!(
            layout,
            "scope,requests,slow,learned?{burst,limiter},bins{bins[]}"
        );
        let nan = f64::NAN;
        let first = [5.0, 0.0, 0.0, -2.0, nan, nan, 1.0, 2.0];
        let second = [5.0, 1.0, 1.0, 2.0, 2.5, nan, 1.0, 2.0];
        let expected: Vec<f64> = first.into_iter().chain(second).collect();
        assert_eq!(format!("{numbers:?}"), format!("{expected:?}"));
        assert_eq!(text, "key:ékey:a");
    }

    #[test]
    fn cuts_pieces_between_records() {
        let out = written(10, 20, record);
        assert_eq!(out.len(), 4, "{out:?}");
        assert!(out
            .iter()
            .all(|(_, n, _)| n.len() % 8 == 0 && n.len() <= 24));
        assert_eq!(out.iter().map(|(_, n, _)| n.len()).sum::<usize>(), 80);
    }
}
