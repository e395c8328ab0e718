//! The transaction coordinator (KIP-98), being built for exactly-once producers: the
//! state machine of one transactional id ([`state`]), with injected time like the group
//! coordinator's. Not wired to any Kafka API yet: InitProducerId still refuses
//! transactional ids.

pub mod state;
