//! The expansion parser on every file of the fuzz corpus (`fuzz/corpus/expansion_json`),
//! then on many mutations of them, through the fuzz target's own expanders and checks
//! (`tables::expansion::fuzzing`): no record panics, fails its batch or makes a row that
//! breaks the checks. The seeds named by what they are must also parse as that:
//! `valid_`/`debezium_` cleanly, `mismatch_`/`dup_` as JSON with `_parse_error`, and
//! `notjson_` as a null row.

use std::path::Path;
use std::time::Instant;

use tables::expansion::fuzzing::{Outcome, check, sample_expanders};

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/expansion_json");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// What a seed's name says it is.
fn expected(name: &str, o: &Outcome) -> Result<(), String> {
    let ok = if name.starts_with("valid_") || name.starts_with("debezium_") {
        o.json_object && !o.parse_error
    } else if name.starts_with("mismatch_") || name.starts_with("dup_") {
        o.json_object && o.parse_error
    } else if name.starts_with("notjson_") {
        !o.json_object && o.parse_error
    } else {
        true
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{name}: its name does not fit {o:?}"))
    }
}

/// Bytes the byte mutations use: JSON's structure, digits, escapes, and not UTF-8.
const BYTES: &[u8] = b"{}[]\",:\\0123456789-+.eEtfnu \x00\x80\xff";

/// JSON values a value is replaced with: each type's forms, wrong types, edge cases.
const VALUES: &[&[u8]] = &[
    b"null",
    b"true",
    b"0",
    b"-0",
    b"1.5",
    b"1e400",
    b"-2147483649",
    b"9223372036854775808",
    b"\"\"",
    b"\"x\"",
    b"\"12.34\"",
    b"\"1e-2\"",
    b"\"2024-02-30\"",
    b"\"2024-01-02T03:04:05.123456-01:00\"",
    b"\"23:59:59.9\"",
    b"\"AAECAw==\"",
    b"\"67E55044-10B1-426F-9247-BB680E5FE0C8\"",
    b"\"\\ud83d\\ude00\"",
    b"[]",
    b"[null,1,\"a\",[2],{}]",
    b"{}",
    b"{\"id\":1,\"id\":\"2\",\"x\":[]}",
    b"{\"1\":\"a\",\"1\":null,\"k\":2}",
    b"[[[[[[[[[[1]]]]]]]]]]",
];

/// Replaces the JSON value after the first `:` or `[` at or after `at` (up to the next
/// `,`, `}` or `]` outside strings, roughly) with `value`.
fn replace_value(f: &mut Vec<u8>, at: usize, value: &[u8]) {
    let Some(start) = f[at..].iter().position(|c| matches!(c, b':' | b'[')) else {
        return;
    };
    let start = at + start + 1;
    let mut end = start;
    let (mut depth, mut in_string) = (0usize, false);
    while end < f.len() {
        let c = f[end];
        if in_string {
            match c {
                b'\\' => end += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match c {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth == 0 => break,
                b'}' | b']' => depth -= 1,
                b',' if depth == 0 => break,
                _ => {}
            }
        }
        end += 1;
    }
    let end = end.min(f.len());
    f.splice(start..end, value.iter().copied());
}

#[test]
fn corpus_and_mutations_make_rows() {
    let start = Instant::now();
    let files = corpus();
    assert!(files.len() >= 40, "only {} corpus files", files.len());
    let mut samples = sample_expanders();
    let mut json_seeds = Vec::new();
    for (name, data) in &files {
        let outcome = check(&mut samples, data).unwrap_or_else(|e| panic!("{name}: {e}"));
        expected(name, &outcome).unwrap();
        if outcome.json_object {
            json_seeds.push(data);
        }
    }

    // Deterministic mutations: bit flips, byte sets, truncations, insertions, deletions,
    // splices of another file, and values replaced by other JSON values (which keeps
    // most records JSON, to reach the type rules).
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut mismatched, mut not_json, mut clean) = (0, 0, 0);
    let rounds = 6000;
    for round in 0..rounds {
        // Mostly JSON objects: most mutations of the rest stay not JSON.
        let mut f = if round % 4 == 0 {
            files[round / 4 % files.len()].1.clone()
        } else {
            json_seeds[round % json_seeds.len()].clone()
        };
        for _ in 0..1 + next() % 3 {
            let r = next();
            let pick = |n: usize| (r >> 40) as usize % n;
            let at = |len: usize| (r >> 8) as usize % (len + 1);
            match r % 10 {
                0 if !f.is_empty() => {
                    let i = at(f.len() - 1);
                    f[i] ^= 1 << pick(8);
                }
                1 if !f.is_empty() => {
                    let i = at(f.len() - 1);
                    f[i] = BYTES[pick(BYTES.len())];
                }
                // Rare: nearly every truncation is not JSON any more.
                2 if pick(3) == 0 => f.truncate(at(f.len())),
                3 => f.insert(at(f.len()), BYTES[pick(BYTES.len())]),
                4 if !f.is_empty() => {
                    let i = at(f.len() - 1);
                    let n = pick(16).min(f.len() - i);
                    f.drain(i..i + n);
                }
                5 => {
                    let (_, other) = &files[(r >> 24) as usize % files.len()];
                    let from = pick(other.len() + 1);
                    let n = ((r >> 52) as usize % 64).min(other.len() - from);
                    let i = at(f.len());
                    f.splice(i..i, other[from..from + n].iter().copied());
                }
                _ => {
                    let i = at(f.len());
                    replace_value(&mut f, i, VALUES[pick(VALUES.len())]);
                }
            }
        }
        let outcome = check(&mut samples, &f).unwrap_or_else(|e| {
            panic!(
                "mutation {round}: {e}\ninput: {:?}",
                String::from_utf8_lossy(&f)
            )
        });
        match (outcome.json_object, outcome.parse_error) {
            (false, _) => not_json += 1,
            (true, true) => mismatched += 1,
            (true, false) => clean += 1,
        }
    }
    // The mutations reach all three kinds of row.
    assert!(
        not_json > rounds / 20 && mismatched > rounds / 20 && clean > rounds / 50,
        "not JSON {not_json}, mismatched {mismatched}, clean {clean}"
    );
    eprintln!(
        "{} files and {rounds} mutations in {:?}: not JSON {not_json}, mismatched {mismatched}, clean {clean}",
        files.len(),
        start.elapsed()
    );
}
