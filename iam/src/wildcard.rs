//! Glob matching for policy patterns: `*` matches any run of characters (including none) and
//! `?` matches exactly one character.
//!
//! Patterns come from user-supplied policies and are matched on every request, so the matcher
//! must never backtrack exponentially: it uses the greedy two-pointer algorithm, which on a
//! mismatch only retries from the most recent `*`. That bounds the work by
//! `pattern.len() * text.len()` and is linear for the patterns people actually write.
//! Matching works on `char`s, so `?` consumes one whole Unicode scalar, never part of one.

/// Whether `text` matches `pattern` exactly (case-sensitive), with `*` and `?` as wildcards.
///
/// Used for resources (ARNs and Kafka resource names) and the `StringLike` condition operators.
pub fn matches(pattern: &str, text: &str) -> bool {
    glob(pattern, text, |p, t| p == t)
}

/// Like [`matches`], but ASCII letters compare case-insensitively.
///
/// Used for action names, which AWS treats as case-insensitive (`s3:getobject` is
/// `s3:GetObject`).
pub fn matches_ignore_ascii_case(pattern: &str, text: &str) -> bool {
    glob(pattern, text, |p, t| p.eq_ignore_ascii_case(&t))
}

/// The character starting at byte offset `at`, if any.
///
/// Offsets only ever advance by whole `char` lengths, so they stay on boundaries; `get` keeps
/// the matcher panic-free even if that reasoning were ever wrong.
fn char_at(s: &str, at: usize) -> Option<char> {
    s.get(at..).and_then(|rest| rest.chars().next())
}

fn glob(pattern: &str, text: &str, eq: impl Fn(char, char) -> bool) -> bool {
    let (mut p, mut t) = (0usize, 0usize);
    // Where to resume after the latest `*`: the pattern offset just past it, and the text
    // offset that star has absorbed up to. Only the latest star matters: any earlier star
    // can already absorb whatever a retry from a later star could.
    let mut resume: Option<(usize, usize)> = None;

    while let Some(tc) = char_at(text, t) {
        match char_at(pattern, p) {
            Some('*') => {
                p += 1;
                resume = Some((p, t));
                continue;
            }
            Some(pc) if pc == '?' || eq(pc, tc) => {
                p += pc.len_utf8();
                t += tc.len_utf8();
                continue;
            }
            _ => {}
        }
        match resume {
            Some((star_p, star_t)) => {
                // Let the star swallow one more character and retry the rest from there.
                let swallowed = char_at(text, star_t).map_or(1, char::len_utf8);
                let next_t = star_t + swallowed;
                resume = Some((star_p, next_t));
                p = star_p;
                t = next_t;
            }
            None => return false,
        }
    }
    pattern
        .get(p..)
        .is_some_and(|rest| rest.chars().all(|c| c == '*'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn empty_pattern_matches_only_empty_text() {
        assert!(matches("", ""));
        assert!(!matches("", "a"));
        assert!(!matches("a", ""));
    }

    #[test]
    fn star_matches_anything_including_empty() {
        assert!(matches("*", ""));
        assert!(matches("*", "anything/at all"));
        assert!(matches("**", ""));
        assert!(matches("***", "abc"));
    }

    #[test]
    fn literal_patterns_match_exactly() {
        assert!(matches("abc", "abc"));
        assert!(!matches("abc", "abcd"));
        assert!(!matches("abcd", "abc"));
        assert!(!matches("abc", "abd"));
        assert!(!matches("abc", "ABC"));
    }

    #[test]
    fn question_mark_matches_exactly_one_char() {
        assert!(matches("?", "a"));
        assert!(!matches("?", ""));
        assert!(!matches("?", "ab"));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "ac"));
        assert!(matches("???", "xyz"));
        assert!(!matches("???", "xy"));
    }

    #[test]
    fn question_mark_consumes_a_whole_multibyte_char() {
        assert!(matches("?", "é"));
        assert!(matches("a?c", "a日c"));
        assert!(!matches("??", "日"));
        assert!(matches("*日", "日日日"));
        assert!(matches("日*", "日本"));
    }

    #[test]
    fn star_in_the_middle_and_at_ends() {
        assert!(matches("a*", "a"));
        assert!(matches("a*", "abc"));
        assert!(matches("*c", "abc"));
        assert!(matches("a*c", "ac"));
        assert!(matches("a*c", "abbbc"));
        assert!(!matches("a*c", "abbbd"));
        assert!(matches("*b*", "abc"));
        assert!(!matches("*x*", "abc"));
    }

    #[test]
    fn consecutive_stars_behave_like_one() {
        assert!(matches("a**c", "ac"));
        assert!(matches("a**c", "abc"));
        assert!(matches("a***b***c", "aXXbYYc"));
        assert!(!matches("a**c", "ab"));
    }

    #[test]
    fn star_needs_backtracking() {
        // The first `b` after the star is a false lead; the match uses the last one.
        assert!(matches("a*bc", "abxbc"));
        assert!(matches("*ab", "aab"));
        assert!(matches("*aab", "aaab"));
        assert!(!matches("a*b?d", "abxbd"));
        assert!(matches("a*b?d", "abxbcd"));
    }

    #[test]
    fn star_and_question_mark_together() {
        assert!(matches("*?", "a"));
        assert!(!matches("*?", ""));
        assert!(matches("?*", "abc"));
        assert!(matches("*?*", "x"));
        assert!(matches("a?*z", "abz"));
        assert!(!matches("a?*z", "az"));
    }

    #[test]
    fn arn_shaped_patterns() {
        assert!(matches(
            "arn:aws:s3:::bucket/public/*",
            "arn:aws:s3:::bucket/public/a/b.txt"
        ));
        assert!(!matches(
            "arn:aws:s3:::bucket/public/*",
            "arn:aws:s3:::bucket/private/a"
        ));
        assert!(matches("arn:aws:s3:::bucket-??", "arn:aws:s3:::bucket-01"));
        assert!(matches(
            "vast:kafka:topic:*",
            "vast:kafka:topic:default:orders"
        ));
    }

    #[test]
    fn case_insensitive_variant_folds_ascii_only() {
        assert!(matches_ignore_ascii_case("s3:Get*", "S3:GETOBJECT"));
        assert!(matches_ignore_ascii_case("kafka*", "KafkaRead"));
        assert!(matches_ignore_ascii_case("s3:?etObject", "s3:getobject"));
        assert!(!matches_ignore_ascii_case("s3:Put*", "s3:GetObject"));
        // Non-ASCII letters are compared exactly: action names are ASCII, and full Unicode
        // folding would make matching locale-dependent.
        assert!(!matches_ignore_ascii_case("É", "é"));
        assert!(matches_ignore_ascii_case("é", "é"));
    }

    #[test]
    fn pathological_pattern_completes_quickly() {
        let text = "a".repeat(100_000);
        let started = Instant::now();
        assert!(!matches("a*a*a*a*a*a*a*a*b", &text));
        assert!(!matches_ignore_ascii_case("a*a*a*a*a*a*a*a*b", &text));
        assert!(matches("a*a*a*a*a*a*a*a*a", &text));
        // An exponential matcher would not finish at all; this bound only catches that.
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn long_literal_against_long_text() {
        let text = "ab".repeat(10_000);
        let mut pattern = "*".to_string();
        pattern.push_str(&"ab".repeat(50));
        assert!(matches(&pattern, &text));
        pattern.push('c');
        assert!(!matches(&pattern, &text));
    }
}
