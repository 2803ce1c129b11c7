//! Property tests of the decimal reader: for every input it answers exactly as
//! `str::parse::<f64>` does (the same bits, the same refusals), including the halfway points
//! between two doubles, where a reader that is merely close rounds the wrong way.
#![cfg(not(target_arch = "wasm32"))]

use odds_gate::core::parse::decimal::parse;
use proptest::prelude::*;

fn same(text: &str) -> Result<(), TestCaseError> {
    let want = text.parse::<f64>().ok().map(f64::to_bits);
    prop_assert_eq!(parse(text).map(f64::to_bits), want, "{:?}", text);
    Ok(())
}

/// The exact decimal halfway point between `x` and the next double up: the digit-wise sum of
/// both exact expansions, halved.
fn halfway(x: f64) -> String {
    let next = f64::from_bits(x.to_bits() + 1);
    let (a, b) = (format!("{x:.1100}"), format!("{next:.1100}"));
    let width = a.len().max(b.len());
    let digits = |s: String| -> Vec<u8> {
        format!("{s:0>width$}")
            .bytes()
            .filter(|&c| c != b'.')
            .map(|c| c - b'0')
            .collect()
    };
    let (a, b) = (digits(a), digits(b));
    let mut sum = vec![0u8; a.len() + 2];
    let mut carry = 0;
    for i in (0..a.len()).rev() {
        let v = a[i] + b[i] + carry;
        sum[i + 1] = v % 10;
        carry = v / 10;
    }
    sum[0] = carry;
    let mut rest = 0;
    for d in sum.iter_mut() {
        let v = rest * 10 + *d;
        *d = v / 2;
        rest = v % 2;
    }
    let text: String = sum.iter().map(|&d| char::from(b'0' + d)).collect();
    let whole = width - 1101 + 1;
    format!("{}.{}", &text[..whole], &text[whole..])
}

/// `text` lowered by one unit in its last non-zero digit, with a tail: just below it.
fn just_below(text: &str) -> String {
    let mut bytes = text.as_bytes().to_vec();
    let last = bytes.iter().rposition(|&c| c.is_ascii_digit() && c != b'0');
    if let Some(i) = last {
        bytes[i] -= 1;
        bytes.extend_from_slice(b"999");
    }
    String::from_utf8(bytes).expect("ascii")
}

fn finite() -> impl Strategy<Value = f64> {
    (0u64..0x7fef_ffff_ffff_ffff).prop_map(f64::from_bits)
}

proptest! {
    #[test]
    fn halfway_points_round_as_the_standard_parser_rounds(x in finite()) {
        let mid = halfway(x);
        same(&mid)?;
        same(&format!("{mid}1"))?;
        same(&just_below(&mid))?;
    }

    #[test]
    fn every_written_double_reads_back(x in finite()) {
        same(&format!("{x}"))?;
        same(&format!("{x:e}"))?;
        same(&format!("{x:.3e}"))?;
        same(&format!("-{x:.20e}"))?;
    }

    #[test]
    fn decimal_text_reads_as_the_standard_parser_reads(
        text in "[+-]?[0-9]{0,25}(\\.[0-9]{0,25})?([eE][+-]?[0-9]{1,3})?"
    ) {
        same(&text)?;
    }

    #[test]
    fn anything_else_is_refused_alike(text in "[0-9eE.+ a-zA-Z-]{0,12}") {
        same(&text)?;
    }
}
