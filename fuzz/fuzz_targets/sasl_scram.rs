//! The server side of a SCRAM exchange must refuse any client message with an error,
//! never panic: the input is a client-first message and a client-final message,
//! separated by the first NUL byte. Run: `cargo fuzz run sasl_scram fuzz/corpus/sasl_scram`.
#![no_main]

use std::sync::OnceLock;

use broker::sasl::scram::{Credential, Exchange, MIN_ITERATIONS, ScramHash};
use libfuzzer_sys::fuzz_target;

/// One credential for every input: PBKDF2's 4096 rounds would otherwise be all the
/// fuzzer measures.
fn credential() -> &'static Credential {
    static C: OnceLock<Credential> = OnceLock::new();
    C.get_or_init(|| Credential::new(ScramHash::Sha256, "pencil", b"salt".to_vec(), MIN_ITERATIONS))
}

fuzz_target!(|data: &[u8]| {
    let (first, last) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    if let Ok((exchange, _)) = Exchange::start(first, |_| Some(credential().clone()), "srv") {
        let _ = exchange.finish(last);
    }
});
