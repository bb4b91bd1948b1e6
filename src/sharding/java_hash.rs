//! Java's `String.hashCode`, which ODEVITY and ROUND_ROBIN feed with the job name.
//!
//! Both strategies must pick the same instance order as a Java instance sharing the registry, so the
//! hash is reproduced bit for bit: the 31-polynomial runs over UTF-16 code units (a character outside
//! the BMP counts as its two surrogates) with wrapping 32-bit arithmetic.

/// Java's `String.hashCode` of `s`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units, wrapping.
///
/// ```
/// use shardcron::sharding::java_string_hash;
/// assert_eq!(java_string_hash("a"), 97);
/// assert_eq!(java_string_hash("Aa"), java_string_hash("BB"));
/// ```
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every expected value was printed by OpenJDK 17's `String.hashCode`.
    #[test]
    fn java_string_hash_matches_what_openjdk_17_computes() {
        let table: &[(&str, i32)] = &[
            ("", 0),
            ("a", 97),
            ("b", 98),
            ("Aa", 2112),
            ("BB", 2112),
            ("orders", -1_008_770_331),
            ("orders_v2", -390_665_706),
            ("payments", 1_382_682_413),
            ("billing-job_2.v1", 956_324_875),
            ("订单", 1_129_459),
            ("订单同步", 1_086_104_588),
            // One code point outside the BMP hashes as its surrogate pair.
            ("\u{1F600}", 1_772_899),
            ("\u{1F980}", 1_772_802),
            ("a\u{1F980}b", 57_846_687),
            ("polygenelubricants", i32::MIN),
            ("GydZG_", i32::MIN),
            ("DESIGNING WORKHOUSES", i32::MIN),
        ];
        for &(input, expected) in table {
            assert_eq!(java_string_hash(input), expected, "hash of {input:?}");
        }
    }
}
