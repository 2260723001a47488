//! Kubernetes resource quantities (`resource.Quantity`) as the scheduler
//! counts them: `500m`, `1.5`, `2Gi`, `16G`, `1e3`. Parsed exactly as
//! apimachinery's `ParseQuantity` reads the text, then rounded up to an
//! integer the way `MilliValue()` (cpu) and `Value()` (everything else) do.

use std::fmt;

/// A parsed, non-negative quantity: `digits × 10^exp10 × 2^exp2`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quantity {
    /// The text as written (what a created pod carries).
    pub text: String,
    negative: bool,
    /// Significant decimal digits (no leading zeros), at most 38.
    digits: u128,
    /// Whether digits beyond the 38 kept were non-zero (rounding up).
    sticky: bool,
    exp10: i32,
    exp2: u32,
}

/// Why a quantity does not parse (apimachinery's `ErrFormatWrong` /
/// `ErrSuffix`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuantityError(pub &'static str);

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

const FORMAT: QuantityError = QuantityError(
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
);
const SUFFIX: QuantityError = QuantityError("unable to parse quantity's suffix");

impl Quantity {
    /// Parses a quantity as `resource.ParseQuantity` does.
    pub fn parse(text: &str) -> Result<Quantity, QuantityError> {
        let s = text.as_bytes();
        if s.is_empty() {
            return Err(FORMAT);
        }
        let mut i = 0;
        let mut negative = false;
        match s[0] {
            b'-' => {
                negative = true;
                i = 1;
            }
            b'+' => i = 1,
            _ => {}
        }
        let int_start = i;
        while i < s.len() && s[i].is_ascii_digit() {
            i += 1;
        }
        let int = &text[int_start..i];
        let mut frac = "";
        if i < s.len() && s[i] == b'.' {
            i += 1;
            let f = i;
            while i < s.len() && s[i].is_ascii_digit() {
                i += 1;
            }
            frac = &text[f..i];
        }
        // As in `parseQuantityString`, a missing number is zero ("Ki", ".").
        let suffix = &text[i..];
        let (exp10, exp2) = suffix_exponents(suffix)?;
        let mut q = Quantity {
            text: text.to_string(),
            negative,
            digits: 0,
            sticky: false,
            exp10: 0,
            exp2,
        };
        let all = int.bytes().chain(frac.bytes()).skip_while(|&c| c == b'0');
        let mut kept = 0u32;
        let mut dropped = 0i32;
        for c in all {
            if kept < 38 {
                q.digits = q.digits * 10 + u128::from(c - b'0');
                kept += 1;
            } else {
                dropped += 1;
                q.sticky |= c != b'0';
            }
        }
        let frac_len = i32::try_from(frac.len()).unwrap_or(i32::MAX);
        q.exp10 = exp10.saturating_sub(frac_len).saturating_add(dropped);
        if q.digits == 0 && !q.sticky {
            q.negative = false;
        }
        Ok(q)
    }

    pub fn is_negative(&self) -> bool {
        self.negative
    }

    pub fn is_zero(&self) -> bool {
        self.digits == 0 && !self.sticky
    }

    /// `MilliValue()`: thousandths, rounded up (how cpu is counted).
    pub fn milli(&self) -> i64 {
        self.scaled(3)
    }

    /// `Value()`: units, rounded up (memory, storage, pods, extended resources).
    pub fn value(&self) -> i64 {
        self.scaled(0)
    }

    /// ceil(self × 10^shift), saturated to i64.
    fn scaled(&self, shift: i32) -> i64 {
        if self.is_zero() {
            return 0;
        }
        let sign = if self.negative { -1 } else { 1 };
        let e = self.exp10.saturating_add(shift);
        let Some(mut n) = self.digits.checked_mul(1u128 << self.exp2.min(127)) else {
            return sign * i64::MAX;
        };
        if self.exp2 >= 127 && self.digits > 0 {
            return sign * i64::MAX;
        }
        let magnitude = if e >= 0 {
            let mut ok = true;
            for _ in 0..e {
                match n.checked_mul(10) {
                    Some(m) if m <= i64::MAX as u128 => n = m,
                    _ => {
                        ok = false;
                        break;
                    }
                }
            }
            if !ok || n > i64::MAX as u128 {
                i64::MAX
            } else {
                n as i64 + i64::from(self.sticky && e == 0)
            }
        } else {
            let mut d: u128 = 1;
            for _ in 0..(-e).min(38) {
                d *= 10;
            }
            if -e > 38 {
                // Far below one unit: any positive amount rounds up to 1.
                1
            } else {
                let q = n / d;
                let up = n % d != 0 || self.sticky;
                let v = q + u128::from(up);
                if v > i64::MAX as u128 {
                    i64::MAX
                } else {
                    v as i64
                }
            }
        };
        // Rounding is away from zero for negatives too; they are refused anyway.
        sign * magnitude
    }
}

/// The decimal and binary exponents of a suffix (`suffixHandler.interpret`).
fn suffix_exponents(suffix: &str) -> Result<(i32, u32), QuantityError> {
    Ok(match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        s if s.len() > 1 && (s.starts_with('e') || s.starts_with('E')) => {
            let rest = &s[1..];
            let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
                return Err(if s.bytes().all(|c| b"eEinumkKMGTP".contains(&c)) {
                    SUFFIX
                } else {
                    FORMAT
                });
            }
            let e: i64 = rest.parse().map_err(|_| SUFFIX)?;
            (i32::try_from(e).map_err(|_| SUFFIX)?, 0)
        }
        s => {
            // Characters outside the suffix alphabet are a format error,
            // an unknown combination of them a suffix error.
            let head = s.trim_end_matches(|c: char| c.is_ascii_digit() || c == '-' || c == '+');
            return Err(
                if !head.is_empty() && head.bytes().all(|c| b"eEinumkKMGTP".contains(&c)) {
                    SUFFIX
                } else {
                    FORMAT
                },
            );
        }
    })
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn cpu_is_counted_in_millis_rounded_up() {
        assert_eq!(q("500m").milli(), 500);
        assert_eq!(q("0.5").milli(), 500);
        assert_eq!(q("2").milli(), 2000);
        assert_eq!(q("0.0001").milli(), 1);
        assert_eq!(q("1n").milli(), 1);
        assert_eq!(q("100u").milli(), 1);
        assert_eq!(q("1.2345").milli(), 1235);
        assert_eq!(q("1e3").milli(), 1_000_000);
        assert_eq!(q(".5").milli(), 500);
        assert_eq!(q("1.").milli(), 1000);
        assert_eq!(q("0").milli(), 0);
        assert_eq!(q("+3").milli(), 3000);
    }

    #[test]
    fn memory_is_counted_in_bytes_rounded_up() {
        assert_eq!(q("256Mi").value(), 268_435_456);
        assert_eq!(q("16G").value(), 16_000_000_000);
        assert_eq!(q("4.294967296G").value(), 4_294_967_296);
        assert_eq!(q("1Ti").value(), 1 << 40);
        assert_eq!(q("1.5").value(), 2);
        assert_eq!(q("1.5Ki").value(), 1536);
        assert_eq!(q("100m").value(), 1);
        assert_eq!(q("1E").value(), 1_000_000_000_000_000_000);
        assert_eq!(q("2e-3").value(), 1);
        assert_eq!(q("8Ei").value(), i64::MAX);
    }

    #[test]
    fn what_apimachinery_refuses_is_refused() {
        for bad in [
            "", "abc", "1X", "1Gb", "1.2.3", "1 Gi", "1e", "1ee3", "1Kii",
        ] {
            assert!(Quantity::parse(bad).is_err(), "{bad:?} parsed");
        }
        assert!(q("-1").is_negative());
        assert!(!q("-0").is_negative());
        assert!(q("Ki").is_zero());
    }
}
