//! Text of JSON scalars into the values of Iceberg types, as the expansion's rules say:
//! integers by JSON's integer grammar, decimals at their precision and scale, dates,
//! times and timestamps, UUIDs, base64 binary.

/// A JSON integer literal (`-?(0|[1-9][0-9]*)`, no fraction, no exponent) in i64 range.
pub(super) fn parse_int(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    // Accumulated negative, so i64::MIN parses.
    let mut v: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_sub(i64::from(c - b'0'))?;
    }
    if negative { Some(v) } else { v.checked_neg() }
}

pub(super) fn parse_i32(text: &[u8]) -> Option<i32> {
    parse_int(text).and_then(|v| i32::try_from(v).ok())
}

/// A float from a JSON number's text; overflow (to infinity) does not fit.
pub(super) fn parse_float<T: std::str::FromStr + Copy>(
    text: &[u8],
    finite: fn(T) -> bool,
) -> Option<T> {
    let v = std::str::from_utf8(text).ok()?.parse::<T>().ok()?;
    finite(v).then_some(v)
}

/// The unscaled value of decimal literal `text` (sign, digits, optional fraction,
/// optional exponent) at `scale`, if that is exact (no nonzero digit past the scale) and
/// has at most `precision` digits. Works on the text, never through a float.
pub(super) fn parse_decimal(text: &[u8], precision: u8, scale: i8) -> Option<i128> {
    let (negative, rest) = match text {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, text),
    };
    let int_len = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    if int_len == 0 {
        return None;
    }
    let (int, rest) = rest.split_at(int_len);
    let (frac, rest) = match rest {
        [b'.', rest @ ..] => {
            let n = rest.iter().take_while(|c| c.is_ascii_digit()).count();
            if n == 0 {
                return None;
            }
            rest.split_at(n)
        }
        _ => (&[][..], rest),
    };
    let exponent: i64 = match rest {
        [] => 0,
        [b'e' | b'E', rest @ ..] => {
            let (negative, digits) = match rest {
                [b'-', d @ ..] => (true, d),
                [b'+', d @ ..] => (false, d),
                _ => (false, rest),
            };
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            // Saturating: past a few hundred, any nonzero value is out of range anyway.
            let e = digits.iter().fold(0i64, |e, c| {
                e.saturating_mul(10)
                    .saturating_add(i64::from(c - b'0'))
                    .min(1 << 40)
            });
            if negative { -e } else { e }
        }
        _ => return None,
    };
    let digit = |i: usize| {
        if i < int.len() {
            int[i]
        } else {
            frac[i - int.len()]
        }
    };
    let total = int.len() + frac.len();
    let lead = (0..total).take_while(|&i| digit(i) == b'0').count();
    if lead == total {
        return Some(0);
    }
    // value = digits × 10^(exponent - frac.len()); unscaled = value × 10^scale.
    let shift = exponent - frac.len() as i64 + i64::from(scale);
    let mut end = total;
    if shift < 0 {
        let drop = usize::try_from(-shift).ok()?;
        // The first significant digit is nonzero, so dropping it is inexact.
        if drop > total - lead - 1 {
            return None;
        }
        if (total - drop..total).any(|i| digit(i) != b'0') {
            return None;
        }
        end = total - drop;
    }
    let zeros = usize::try_from(shift.max(0)).ok()?;
    if (end - lead).saturating_add(zeros) > usize::from(precision) {
        return None;
    }
    // At most 38 digits: fits an i128.
    let mut v: i128 = 0;
    for i in lead..end {
        v = v * 10 + i128::from(digit(i) - b'0');
    }
    for _ in 0..zeros {
        v *= 10;
    }
    Some(if negative { -v } else { v })
}

/// A number of exactly `text.len()` ASCII digits.
pub(super) fn digits(text: &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for &c in text {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u32::from(c - b'0');
    }
    Some(v)
}

/// The Julian day of 1970-01-01.
pub(super) const UNIX_EPOCH_JULIAN_DAY: i32 = 2_440_588;

pub(super) const MICROS_PER_DAY: i64 = 86_400_000_000;

/// `YYYY-MM-DD` as days since the epoch.
pub(super) fn parse_date(text: &[u8]) -> Option<i32> {
    if text.len() != 10 || text[4] != b'-' || text[7] != b'-' {
        return None;
    }
    let year = i32::try_from(digits(&text[..4])?).ok()?;
    let month = time::Month::try_from(u8::try_from(digits(&text[5..7])?).ok()?).ok()?;
    let day = u8::try_from(digits(&text[8..])?).ok()?;
    let date = time::Date::from_calendar_date(year, month, day).ok()?;
    Some(date.to_julian_day() - UNIX_EPOCH_JULIAN_DAY)
}

/// `HH:MM:SS[.fraction up to 6 digits]` as microseconds since midnight.
pub(super) fn parse_time(text: &[u8]) -> Option<i64> {
    if text.len() < 8 || text[2] != b':' || text[5] != b':' {
        return None;
    }
    let (h, m, s) = (
        digits(&text[..2])?,
        digits(&text[3..5])?,
        digits(&text[6..8])?,
    );
    if h > 23 || m > 59 || s > 59 {
        return None;
    }
    let micros = match &text[8..] {
        [] => 0,
        [b'.', fraction @ ..] if (1..=6).contains(&fraction.len()) => {
            digits(fraction)? * 10u32.pow(6 - fraction.len() as u32)
        }
        _ => return None,
    };
    Some((i64::from(h) * 3600 + i64::from(m) * 60 + i64::from(s)) * 1_000_000 + i64::from(micros))
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction]` (or a space for the `T`) as microseconds since the
/// epoch: taken as UTC, or converted from a `Z` or `±HH:MM` offset.
pub(super) fn parse_timestamp(text: &[u8]) -> Option<i64> {
    if text.len() < 19 || !matches!(text[10], b'T' | b' ') {
        return None;
    }
    let days = parse_date(&text[..10])?;
    let rest = &text[11..];
    let zone = rest[8..]
        .iter()
        .position(|c| matches!(c, b'Z' | b'+' | b'-'))
        .map_or(rest.len(), |p| p + 8);
    let micros = parse_time(&rest[..zone])?;
    let offset_seconds = match &rest[zone..] {
        [] | [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h @ .., b':', m1, m2] if h.len() == 2 => {
            let (h, m) = (digits(h)?, digits(&[*m1, *m2])?);
            if h > 23 || m > 59 {
                return None;
            }
            let seconds = i64::from(h * 3600 + m * 60);
            if *sign == b'-' { -seconds } else { seconds }
        }
        _ => return None,
    };
    Some(i64::from(days) * MICROS_PER_DAY + micros - offset_seconds * 1_000_000)
}

/// The hyphenated 36-character form, either case.
pub(super) fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    if text.len() != 36 {
        return None;
    }
    uuid::Uuid::try_parse_ascii(text.as_bytes())
        .ok()
        .map(|u| *u.as_bytes())
}

/// Appends standard (padded) base64 `text` decoded, if it decodes (to `width` bytes when
/// given); otherwise leaves `bytes` as it was.
pub(super) fn put_base64(bytes: &mut Vec<u8>, text: &str, width: Option<usize>) -> bool {
    let before = bytes.len();
    let ok = base64_simd::STANDARD
        .decode_append(text.as_bytes(), bytes)
        .is_ok()
        && width.is_none_or(|w| bytes.len() - before == w);
    if !ok {
        bytes.truncate(before);
    }
    ok
}
