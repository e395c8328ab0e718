//! Prometheus metrics of the schema registry and of schema validation on produce.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;

/// Counters an operator watches.
#[derive(Debug, Clone, Default)]
pub struct RegistryMetrics {
    /// Subject versions registered.
    pub registered: Counter,
    /// Registrations refused as incompatible with earlier versions.
    pub incompatible: Counter,
    /// Produced keys and values checked by schema validation.
    pub validated: Counter,
    /// Produced keys and values refused by schema validation.
    pub refused: Counter,
}

impl RegistryMetrics {
    /// Registers the metrics (prefix them with `eddy_schema_registry`).
    pub fn register(&self, r: &mut Registry) {
        r.register(
            "versions_registered",
            "Subject versions registered in the schema registry",
            self.registered.clone(),
        );
        r.register(
            "incompatible",
            "Schema registrations refused as incompatible with earlier versions",
            self.incompatible.clone(),
        );
        r.register(
            "validated_records",
            "Produced keys and values checked by schema validation",
            self.validated.clone(),
        );
        r.register(
            "refused_records",
            "Produced keys and values refused by schema validation",
            self.refused.clone(),
        );
    }
}
