//! Values of binary formats as the text the expansion's parser reads: timestamps beyond
//! what it takes as a number, decimals from their unscaled two's-complement bytes.

/// Microseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.ffffff` (UTC).
pub fn timestamp_micros(us: i64) -> String {
    const PER_DAY: i64 = 86_400_000_000;
    let days = us.div_euclid(PER_DAY);
    let of_day = us.rem_euclid(PER_DAY);
    let (y, m, d) = civil(days);
    let secs = of_day / 1_000_000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        of_day % 1_000_000
    )
}

/// The proleptic Gregorian date of a day count from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The decimal whose unscaled value is the big-endian two's-complement `bytes`, at
/// `scale`; `None` past 16 bytes (an i128).
pub fn decimal(bytes: &[u8], scale: u32) -> Option<String> {
    if bytes.len() > 16 {
        return None;
    }
    let mut v: i128 = if bytes.first().is_some_and(|b| b & 0x80 != 0) {
        -1
    } else {
        0
    };
    for b in bytes {
        v = (v << 8) | i128::from(*b);
    }
    let digits = v.unsigned_abs().to_string();
    let scale = scale as usize;
    let sign = if v < 0 { "-" } else { "" };
    if scale == 0 {
        return Some(format!("{sign}{digits}"));
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    Some(format!("{sign}{int}.{frac}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_print_in_utc() {
        assert_eq!(timestamp_micros(0), "1970-01-01T00:00:00.000000");
        assert_eq!(
            timestamp_micros(1_700_000_000_123_456),
            "2023-11-14T22:13:20.123456"
        );
        assert_eq!(timestamp_micros(-1), "1969-12-31T23:59:59.999999");
        assert_eq!(
            timestamp_micros(951_782_400_000_000),
            "2000-02-29T00:00:00.000000"
        );
    }

    #[test]
    fn decimals_from_twos_complement() {
        assert_eq!(decimal(&[0x30, 0x39], 2).as_deref(), Some("123.45"));
        assert_eq!(decimal(&[0xcf, 0xc7], 2).as_deref(), Some("-123.45"));
        assert_eq!(decimal(&[0x05], 3).as_deref(), Some("0.005"));
        assert_eq!(decimal(&[0xff], 0).as_deref(), Some("-1"));
        assert_eq!(decimal(&[], 0).as_deref(), Some("0"));
        assert_eq!(decimal(&[1; 17], 0), None);
    }
}
