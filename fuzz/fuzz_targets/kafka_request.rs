//! Kafka request decoding must reject any frame with an error, never panic or allocate
//! beyond the frame. Run: `cargo fuzz run kafka_request fuzz/corpus/kafka_request`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = broker::connection::decode(bytes::Bytes::copy_from_slice(data));
});
