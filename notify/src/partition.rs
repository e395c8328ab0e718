//! Which partition an event's key lands in: Kafka's default partitioner for keyed
//! records (murmur2 of the key, sign bit cleared, modulo the partition count), so an
//! object's events share a partition with anything a Kafka producer sends under the
//! same key.

/// The partition of `key` among `partitions` (at least 1).
pub fn partition_for(key: &[u8], partitions: u32) -> u32 {
    let hash = murmur2::murmur2(key, murmur2::KAFKA_SEED) & 0x7fff_ffff;
    hash % partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::partition_for;

    /// Values of Kafka's `Utils.murmur2` (as a Java int) for the same inputs.
    #[test]
    fn matches_kafkas_murmur2() {
        let cases: [(&str, i32); 5] = [
            ("21", -973932308),
            ("foobar", -790332482),
            ("a-little-bit-long-string", -985981536),
            ("a-little-bit-longer-string", -1486304829),
            (
                "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58897971,
            ),
        ];
        for (input, java) in cases {
            let ours = murmur2::murmur2(input.as_bytes(), murmur2::KAFKA_SEED) as i32;
            assert_eq!(ours, java, "{input}");
        }
        assert_eq!(partition_for(b"21", 1), 0);
        let p = partition_for(b"bucket/key", 7);
        assert!(p < 7);
        assert_eq!(p, partition_for(b"bucket/key", 7));
    }
}
