//! The fuzz corpus of `iam_policy` (`fuzz/corpus/iam_policy`) and deterministic
//! mutations of it, in the ordinary test suite: parsing never panics, the seeds named
//! `malformed_*` and `notjson_*` are refused, the others parse, every parsed document
//! survives `to_json`, and evaluation never panics.

use std::path::Path;

use iam::{Context, Policy, PolicyKind, Request};

fn check(text: &str) -> bool {
    let context = Context {
        source_ip: Some("10.1.2.3".parse().expect("ip")),
        ..Context::default()
    };
    let mut parsed = false;
    for kind in [PolicyKind::Identity, PolicyKind::Resource] {
        let Ok(policy) = Policy::parse(text, kind) else {
            continue;
        };
        parsed = true;
        let again = Policy::parse(&policy.to_json().to_string(), kind).expect("round trip");
        assert_eq!(again.statements, policy.statements, "{text}");
        for principal in [None, Some("bob")] {
            let _ = policy.evaluate(&Request {
                action: "s3:GetObject",
                resource: "arn:aws:s3:::photos/public/a.png",
                principal,
                context: &context,
            });
        }
    }
    parsed
}

#[test]
fn the_corpus_and_its_mutations_never_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/iam_policy");
    let mut seeds = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("corpus") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bytes = std::fs::read(&path).expect("seed");
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let parsed = check(&text);
        if name.starts_with("malformed_") || name.starts_with("notjson_") {
            assert!(!parsed, "{name} parsed");
        } else if !name.chars().all(|c| c.is_ascii_hexdigit()) {
            assert!(parsed, "{name} was refused");
        }
        seeds.push(bytes);
    }
    assert!(seeds.len() >= 10);
    // Deterministic mutations: flips, truncations, duplications, byte insertions.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..4000 {
        let mut m = seeds[round % seeds.len()].clone();
        if m.is_empty() {
            m.push(b'{');
        }
        match next() % 4 {
            0 => {
                let i = (next() as usize) % m.len();
                m[i] ^= 1 << (next() % 8);
            }
            1 => m.truncate((next() as usize) % m.len()),
            2 => {
                let i = (next() as usize) % m.len();
                let j = i + (next() as usize) % (m.len() - i);
                let copy = m[i..j].to_vec();
                m.splice(j..j, copy);
            }
            _ => {
                let i = (next() as usize) % m.len();
                m.insert(i, b"{}[]\\\",*?:0"[(next() % 10) as usize]);
            }
        }
        check(&String::from_utf8_lossy(&m));
    }
}
