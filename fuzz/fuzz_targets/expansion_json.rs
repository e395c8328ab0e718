//! Topic expansions parse client JSON (Kafka record values or keys) into Arrow rows: any
//! bytes must make a row, never a panic, a failed batch or unbounded memory. Every input
//! goes through the expanders of `tables::expansion::fuzzing` (every type, nested and
//! flattened, value and key) as a record, a tombstone and the record again, and the
//! batch is checked there. Run:
//! `cargo fuzz run expansion_json fuzz/corpus/expansion_json`.
#![no_main]

use std::sync::{LazyLock, Mutex};

use libfuzzer_sys::fuzz_target;
use tables::expansion::fuzzing::{Sample, check, sample_expanders};

// Built once and reused: `finish` empties an expander, and reuse is part of what is
// checked (nothing of one batch may leak into the next).
static SAMPLES: LazyLock<Mutex<Vec<Sample>>> = LazyLock::new(|| Mutex::new(sample_expanders()));

fuzz_target!(|data: &[u8]| {
    let mut samples = SAMPLES.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(e) = check(&mut samples, data) {
        panic!("{e}\ninput: {:?}", String::from_utf8_lossy(data));
    }
});
