//! The fuzz corpus of `pipeline_definition` (`fuzz/corpus/pipeline_definition`) and
//! deterministic mutations of it, in the ordinary test suite: parsing never panics, the
//! seeds named `malformed_*` are refused, the others parse, and every parsed definition
//! survives the catalog's JSON document unchanged.

use std::path::Path;

use eddy_pipelines::Pipeline;

fn check(text: &str) -> bool {
    let Ok(p) = Pipeline::parse(text) else {
        return false;
    };
    let back = Pipeline::from_document(&p.to_document()).expect("round trip");
    assert_eq!(back, p, "{text}");
    let _ = p.check_deployable();
    true
}

#[test]
fn the_corpus_and_its_mutations_never_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/pipeline_definition");
    let mut seeds = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("corpus") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bytes = std::fs::read(&path).expect("seed");
        let parsed = check(&String::from_utf8_lossy(&bytes));
        if name.starts_with("malformed_") {
            assert!(!parsed, "{name} parsed");
        } else if !name.chars().all(|c| c.is_ascii_hexdigit()) {
            assert!(parsed, "{name} was refused");
        }
        seeds.push(bytes);
    }
    assert!(seeds.len() >= 8);
    // Deterministic mutations: flips, truncations, duplications, byte insertions.
    let mut state = 0x2545_f491_4f6c_dd1du64;
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
                m.insert(i, b"{}[]:-&*\n, "[(next() % 11) as usize]);
            }
        }
        check(&String::from_utf8_lossy(&m));
    }
}
