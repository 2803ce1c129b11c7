//! Bytes as lower-case hex: how hashes of credentials and requests are named (gate scopes, cache
//! keys), one digit table for all of them.

/// `bytes` as lower-case hex, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 15)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_digits_a_byte() {
        assert_eq!(super::hex(&[0, 9, 0xab, 0xff]), "0009abff");
        assert_eq!(super::hex(&[]), "");
    }
}
