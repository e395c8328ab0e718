//! Client quotas, as Kafka enforces them: produce and fetch byte rates and the share of
//! broker time a client's requests take (`producer_byte_rate`, `consumer_byte_rate`,
//! `request_percentage`), configured per user, per client id or both, with defaults,
//! stored in the catalog (`client_quotas`) and changed with AlterClientQuotas.
//!
//! A request over its quota is answered at once with `throttle_time_ms` and its
//! connection is muted for that long (KIP-219): the next request from it is handled only
//! after the wait, so a client that ignores the field is held back all the same. A
//! throttled fetch keeps its records (see [`throttle::throttle`]). Users are Kafka
//! principals: a SASL connection's authenticated user, otherwise `ANONYMOUS`.

pub mod rate;
pub mod throttle;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use catalog::{ClientQuotas, QuotaEntity};

use rate::Rate;

/// The principal of an unauthenticated client (Kafka's `User:ANONYMOUS`).
pub const ANONYMOUS: &str = "ANONYMOUS";

/// What a quota limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuotaKind {
    /// Produce request bytes per second.
    Produce,
    /// Fetch response bytes per second.
    Fetch,
    /// Percent of one thread's time spent on the client's requests.
    Request,
}

impl QuotaKind {
    /// Every kind.
    pub const ALL: [QuotaKind; 3] = [QuotaKind::Produce, QuotaKind::Fetch, QuotaKind::Request];

    /// Kafka's quota key.
    pub fn key(self) -> &'static str {
        match self {
            QuotaKind::Produce => "producer_byte_rate",
            QuotaKind::Fetch => "consumer_byte_rate",
            QuotaKind::Request => "request_percentage",
        }
    }

    /// The kind of a quota key; `None` for keys Eddy does not enforce.
    pub fn of_key(key: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.key() == key)
    }

    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            QuotaKind::Produce => "produce",
            QuotaKind::Fetch => "fetch",
            QuotaKind::Request => "request",
        }
    }
}

/// The sampled window rates are measured over (Kafka's `quota.window.num` and
/// `quota.window.size.seconds`).
#[derive(Debug, Clone)]
pub struct QuotaConfig {
    /// One sample's span.
    pub window: Duration,
    /// Samples kept.
    pub windows: usize,
}

impl Default for QuotaConfig {
    fn default() -> Self {
        Self {
            window: Duration::from_secs(1),
            windows: 11,
        }
    }
}

/// Whose rate a sensor measures: the matched entity's parts, defaults replaced by the
/// client's own names (so each client under a default quota has a quota of its own,
/// while clients under one named entity share it).
type SensorKey = (QuotaKind, Option<String>, Option<String>);

/// One part of an entity to look for: a name (`Some(Some)`), the default (`Some(None)`)
/// or absent (`None`).
type Part<'a> = Option<Option<&'a str>>;

/// Sensors idle this long are dropped when the map is large.
const IDLE_SENSOR: Duration = Duration::from_secs(3600);

/// The quotas and the rates of the clients they apply to.
pub struct Quotas {
    config: QuotaConfig,
    entities: RwLock<BTreeMap<QuotaEntity, BTreeMap<String, f64>>>,
    sensors: Mutex<HashMap<SensorKey, Rate>>,
    /// Serializes AlterClientQuotas' read-modify-write of an entity's values.
    pub alter_lock: tokio::sync::Mutex<()>,
}

impl Quotas {
    /// Quotas as stored.
    pub fn new(config: QuotaConfig, stored: Vec<ClientQuotas>) -> Self {
        Self {
            config,
            entities: RwLock::new(stored.into_iter().map(|q| (q.entity, q.values)).collect()),
            sensors: Mutex::new(HashMap::new()),
            alter_lock: tokio::sync::Mutex::new(()),
        }
    }

    fn entities(
        &self,
    ) -> std::sync::RwLockReadGuard<'_, BTreeMap<QuotaEntity, BTreeMap<String, f64>>> {
        self.entities.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Every entity's values.
    pub fn all(&self) -> Vec<(QuotaEntity, BTreeMap<String, f64>)> {
        self.entities()
            .iter()
            .map(|(e, v)| (e.clone(), v.clone()))
            .collect()
    }

    /// An entity's values (empty when it has none).
    pub fn values(&self, entity: &QuotaEntity) -> BTreeMap<String, f64> {
        self.entities().get(entity).cloned().unwrap_or_default()
    }

    /// Takes an entity's new values once they are committed (empty removes it).
    pub fn set(&self, entity: QuotaEntity, values: BTreeMap<String, f64>) {
        let mut all = self.entities.write().unwrap_or_else(|e| e.into_inner());
        if values.is_empty() {
            all.remove(&entity);
        } else {
            all.insert(entity, values);
        }
    }

    /// Whether any quota is configured (the common case of none costs one read lock).
    pub fn any(&self) -> bool {
        !self.entities().is_empty()
    }

    /// The quota of `kind` for this user and client id, and its sensor: the first entity
    /// in Kafka's order of precedence that sets it.
    fn resolve(&self, kind: QuotaKind, user: &str, client: &str) -> Option<(f64, SensorKey)> {
        let (u, c) = (Some(user), Some(client));
        let order: [(Part, Part); 8] = [
            (Some(u), Some(c)),
            (Some(u), Some(None)),
            (Some(u), None),
            (Some(None), Some(c)),
            (Some(None), Some(None)),
            (Some(None), None),
            (None, Some(c)),
            (None, Some(None)),
        ];
        let all = self.entities();
        order.iter().find_map(|(up, cp)| {
            let entity = QuotaEntity {
                user: up.map(|p| p.map(str::to_owned)),
                client_id: cp.map(|p| p.map(str::to_owned)),
                ip: None,
            };
            let value = *all.get(&entity)?.get(kind.key())?;
            let key = (
                kind,
                up.map(|_| user.to_string()),
                cp.map(|_| client.to_string()),
            );
            Some((value, key))
        })
    }

    /// Records `value` (bytes, or percent-seconds of thread time) for the client and
    /// returns how long it must wait; zero when no quota applies.
    pub fn record(
        &self,
        kind: QuotaKind,
        user: &str,
        client: &str,
        value: f64,
        now: Instant,
    ) -> Duration {
        let Some((quota, key)) = self.resolve(kind, user, client) else {
            return Duration::ZERO;
        };
        let mut sensors = self.sensors.lock().unwrap_or_else(|e| e.into_inner());
        if sensors.len() > 10_000 {
            sensors.retain(|_, r| now.saturating_duration_since(r.last) < IDLE_SENSOR);
        }
        let rate = sensors
            .entry(key)
            .or_insert_with(|| Rate::new(self.config.window, self.config.windows, now));
        rate.record(value, now);
        rate.throttle(quota, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entity(user: Option<Option<&str>>, client: Option<Option<&str>>) -> QuotaEntity {
        QuotaEntity {
            user: user.map(|u| u.map(str::to_owned)),
            client_id: client.map(|c| c.map(str::to_owned)),
            ip: None,
        }
    }

    fn quotas(list: &[(QuotaEntity, f64)]) -> Quotas {
        Quotas::new(
            QuotaConfig::default(),
            list.iter()
                .map(|(e, v)| ClientQuotas {
                    entity: e.clone(),
                    values: [("producer_byte_rate".to_string(), *v)].into(),
                })
                .collect(),
        )
    }

    #[test]
    fn precedence_is_kafkas() {
        let q = quotas(&[
            (entity(None, Some(None)), 1.0),
            (entity(None, Some(Some("c"))), 2.0),
            (entity(Some(None), None), 3.0),
            (entity(Some(Some("u")), None), 4.0),
            (entity(Some(Some("u")), Some(Some("c"))), 5.0),
        ]);
        let quota = |u: &str, c: &str| q.resolve(QuotaKind::Produce, u, c).map(|(v, _)| v);
        assert_eq!(quota("u", "c"), Some(5.0));
        assert_eq!(quota("u", "other"), Some(4.0));
        assert_eq!(quota("v", "c"), Some(3.0));
        assert_eq!(q.resolve(QuotaKind::Fetch, "u", "c"), None);
        let only_clients = quotas(&[
            (entity(None, Some(None)), 1.0),
            (entity(None, Some(Some("c"))), 2.0),
        ]);
        let quota = |c: &str| {
            only_clients
                .resolve(QuotaKind::Produce, "u", c)
                .map(|(v, _)| v)
        };
        assert_eq!(quota("c"), Some(2.0));
        assert_eq!(quota("d"), Some(1.0));
    }

    #[test]
    fn clients_under_a_default_are_measured_apart_and_under_a_name_together() {
        let q = quotas(&[(entity(None, Some(None)), 100.0)]);
        let now = Instant::now();
        // 1100 bytes over the 10 s floor of the window: 110/s, over 100/s.
        assert!(q.record(QuotaKind::Produce, "u", "a", 1100.0, now) > Duration::ZERO);
        assert_eq!(
            q.record(QuotaKind::Produce, "u", "b", 900.0, now),
            Duration::ZERO
        );
        let shared = quotas(&[(entity(Some(Some("u")), None), 100.0)]);
        assert_eq!(
            shared.record(QuotaKind::Produce, "u", "a", 600.0, now),
            Duration::ZERO
        );
        assert!(shared.record(QuotaKind::Produce, "u", "b", 600.0, now) > Duration::ZERO);
    }
}
