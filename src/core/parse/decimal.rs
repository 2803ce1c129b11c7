//! Decimal text to `f64`, correctly rounded, exactly as `str::parse::<f64>` reads it: the
//! core's few fractional numbers (`X-RateLimit-Reset` seconds, the gate script's answers)
//! are read here because the standard parser's tables and slow path are some 10 KB of wasm.
//! Short inputs take the exact fast path (a 15-digit integer and a power of ten up to 10^22,
//! one rounding); anything else is computed exactly with big integers.

/// Significant digits kept: every halfway point between two doubles has at most 767, so a
/// longer input only needs to say that something non-zero followed (a final `1`).
const MAX_DIGITS: usize = 800;

/// Parses `text` with the grammar of `str::parse::<f64>`: an optional sign, then `inf`,
/// `infinity` or `nan` in any case, or digits with at most one `.` (a digit on at least one
/// side) and an optional exponent (`e` or `E`, an optional sign, digits).
pub fn parse(text: &str) -> Option<f64> {
    let (negative, body) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        all => (false, all),
    };
    let value = if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
        f64::INFINITY
    } else if body.eq_ignore_ascii_case(b"nan") {
        f64::NAN
    } else {
        number(body)?
    };
    Some(if negative { -value } else { value })
}

/// An unsigned decimal number.
fn number(text: &[u8]) -> Option<f64> {
    let mut digits: Vec<u8> = Vec::new();
    let mut exp10: i64 = 0;
    let (mut seen, mut dropped, mut point) = (false, false, false);
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        if c == b'.' && !point {
            point = true;
        } else if c.is_ascii_digit() {
            seen = true;
            let d = c - b'0';
            if digits.is_empty() && d == 0 {
                // A leading zero only scales when it follows the point.
                exp10 -= i64::from(point);
            } else if digits.len() < MAX_DIGITS {
                digits.push(d);
                exp10 -= i64::from(point);
            } else {
                dropped |= d != 0;
                exp10 += i64::from(!point);
            }
        } else {
            break;
        }
        i += 1;
    }
    if !seen {
        return None;
    }
    if i < text.len() {
        if !matches!(text[i], b'e' | b'E') {
            return None;
        }
        i += 1;
        let negative = text.get(i) == Some(&b'-');
        i += usize::from(matches!(text.get(i), Some(b'-' | b'+')));
        let exponent = &text[i..];
        if exponent.is_empty() || !exponent.iter().all(u8::is_ascii_digit) {
            return None;
        }
        // Past a million, every non-zero value is already infinite or zero.
        let value = exponent
            .iter()
            .fold(0i64, |n, d| (n * 10 + i64::from(d - b'0')).min(1 << 20));
        exp10 += if negative { -value } else { value };
    }
    if digits.is_empty() {
        return Some(0.0);
    }
    if dropped {
        digits.push(1);
        exp10 -= 1;
    }
    let n = digits.len() as i64;
    if n - 1 + exp10 > 308 {
        return Some(f64::INFINITY);
    }
    if n + exp10 < -324 {
        return Some(0.0);
    }
    if n <= 15 && (-22..=22).contains(&exp10) {
        let m = digits.iter().fold(0u64, |m, &d| m * 10 + u64::from(d)) as f64;
        let p = 10f64.powi(exp10.unsigned_abs() as i32);
        return Some(if exp10 < 0 { m / p } else { m * p });
    }
    Some(exact(&digits, exp10))
}

/// `digits × 10^exp10`, rounded to nearest, ties to even: the quotient `num / den` of big
/// integers scaled to 66 or 67 bits, with the remainder deciding exact halves.
fn exact(digits: &[u8], exp10: i64) -> f64 {
    let mut num = Big::from_digits(digits);
    let mut den = Big(vec![1]);
    if exp10 >= 0 {
        num.mul_pow5(exp10 as u32);
    } else {
        den.mul_pow5(exp10.unsigned_abs() as u32);
    }
    // value = num / den × 2^exp10; scale so the quotient has 66 or 67 bits.
    let shift = 66 - (num.bits() as i64 - den.bits() as i64);
    if shift >= 0 {
        num = num.shl(shift as usize);
    } else {
        den = den.shl(shift.unsigned_abs() as usize);
    }
    let mut q: u128 = 0;
    for bit in (0..67).rev() {
        let step = den.shl(bit);
        if num.at_least(&step) {
            num.sub(&step);
            q |= 1 << bit;
        }
    }
    let sticky = !num.is_zero();
    // value = (q + a fraction, non-zero when sticky) × 2^(exp10 - shift)
    let bits = 128 - i64::from(q.leading_zeros());
    let mut exponent = bits - 1 + exp10 - shift;
    let mut cut = bits - 53;
    if exponent < -1022 {
        cut += -1022 - exponent;
    }
    if cut >= 127 {
        return 0.0;
    }
    let mut keep = q >> cut;
    let rest = q & ((1 << cut) - 1);
    let half = 1u128 << (cut - 1);
    if rest > half || (rest == half && (sticky || keep & 1 == 1)) {
        keep += 1;
    }
    if exponent < -1022 {
        // Subnormal: the bits are the mantissa; a carry into bit 52 is the smallest normal.
        return f64::from_bits(keep as u64);
    }
    if keep == 1 << 53 {
        keep >>= 1;
        exponent += 1;
    }
    if exponent > 1023 {
        return f64::INFINITY;
    }
    f64::from_bits(((exponent + 1023) as u64) << 52 | (keep as u64 & ((1 << 52) - 1)))
}

/// A non-negative big integer, 32-bit limbs, least significant first.
struct Big(Vec<u32>);

impl Big {
    fn from_digits(digits: &[u8]) -> Big {
        let mut big = Big(vec![0]);
        for chunk in digits.chunks(9) {
            let value = chunk.iter().fold(0u32, |v, &d| v * 10 + u32::from(d));
            big.mul_add(10u32.pow(chunk.len() as u32), value);
        }
        big
    }

    /// `self = self × m + add`.
    fn mul_add(&mut self, m: u32, add: u32) {
        let mut carry = u64::from(add);
        for limb in &mut self.0 {
            let v = u64::from(*limb) * u64::from(m) + carry;
            *limb = v as u32;
            carry = v >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
    }

    fn mul_pow5(&mut self, mut k: u32) {
        while k > 0 {
            let step = k.min(13); // 5^13 < 2^32
            self.mul_add(5u32.pow(step), 0);
            k -= step;
        }
    }

    fn bits(&self) -> usize {
        let top = self.0.iter().rposition(|&l| l != 0).unwrap_or(0);
        top * 32 + (32 - self.0[top].leading_zeros() as usize)
    }

    fn shl(&self, n: usize) -> Big {
        let (limbs, bits) = (n / 32, n % 32);
        let mut out = vec![0u32; limbs];
        let mut carry = 0u32;
        for &l in &self.0 {
            out.push(if bits == 0 { l } else { l << bits | carry });
            carry = if bits == 0 { 0 } else { l >> (32 - bits) };
        }
        out.push(carry);
        Big(out)
    }

    fn is_zero(&self) -> bool {
        self.0.iter().all(|&l| l == 0)
    }

    fn at_least(&self, other: &Big) -> bool {
        let len = self.0.len().max(other.0.len());
        for i in (0..len).rev() {
            let (a, b) = (self.0.get(i), other.0.get(i));
            let (a, b) = (a.copied().unwrap_or(0), b.copied().unwrap_or(0));
            if a != b {
                return a > b;
            }
        }
        true
    }

    /// `self -= other`, where `self >= other`.
    fn sub(&mut self, other: &Big) {
        let mut borrow = 0i64;
        for (i, limb) in self.0.iter_mut().enumerate() {
            let v = i64::from(*limb) - i64::from(other.0.get(i).copied().unwrap_or(0)) - borrow;
            *limb = v as u32;
            borrow = i64::from(v < 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(text: &str) {
        let want = text.parse::<f64>().ok().map(f64::to_bits);
        assert_eq!(parse(text).map(f64::to_bits), want, "{text:?}");
    }

    #[test]
    fn reads_what_the_standard_parser_reads() {
        for text in [
            "0",
            "30",
            "0.5",
            ".5",
            "5.",
            "007",
            "1795000030.25",
            "-0",
            "+1",
            "1e3",
            "1E-3",
            "1e+21",
            "2.5e-7",
            "499.5",
            "1.2345678901234e+15",
            "inf",
            "-inf",
            "Infinity",
            "NaN",
            "-nan",
            "1e99999999999",
            "1e-99999999999",
            "0e999999",
            "0.000",
            "123456789012345",
            "1234567890123456789",
            "9007199254740993",
            "9007199254740992.5",
            "1.7976931348623157e308",
            "1.7976931348623158e308",
            "1.7976931348623159e308",
            "2.2250738585072011e-308",
            "2.2250738585072014e-308",
            "4.9406564584124654e-324",
            "2.4703282292062327e-324",
            "2.4703282292062328e-324",
            "1e-400",
            "1e400",
            "0.1",
            "0.3",
            "3.141592653589793238462643383279",
        ] {
            same(text);
        }
    }

    #[test]
    fn refuses_what_the_standard_parser_refuses() {
        for text in [
            "", ".", "-", "+", "e5", "1e", "1e+", "1.2.3", " 1", "1 ", "1x", "0x10", "in", "infin",
            "--1", "1e5.5", "١",
        ] {
            same(text);
        }
    }

    #[test]
    fn a_long_tail_still_rounds_the_right_way() {
        let halfway = "9007199254740993";
        same(halfway);
        same(&format!("{halfway}.{}1", "0".repeat(900)));
        same(&format!("{halfway}{}", "0".repeat(900)));
        same(&format!("0.{}1", "0".repeat(330)));
    }
}
