//! Serving one Kafka address: what it takes, owned ([`KafkaServing`]), so a node can
//! start its listeners after the broker is up, as its address leases come.

use std::sync::Arc;
use std::time::Duration;

use listener::tls::Tls;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::listen::SecurityProtocol;
use crate::metrics::Metrics;

/// What serving one Kafka address takes, owned, so listeners can start after
/// `start_kafka` (a cluster node binds the addresses its leases give it, as they come).
#[derive(Clone)]
pub struct KafkaServing {
    pub(crate) broker: Arc<broker::Broker>,
    pub(crate) kafka_ssl: Option<Arc<Tls>>,
    pub(crate) kafka_sasl_ssl: Option<Arc<Tls>>,
    pub(crate) limits: listener::Limits,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) principal_rules: Arc<listener::principal::PrincipalRules>,
    pub(crate) handshake_timeout: Duration,
}

impl KafkaServing {
    /// Hands the coordinators' groups and transactional ids over to the brokers this
    /// node holds now (its leases changed).
    pub async fn hand_over(&self) {
        self.broker.hand_over().await;
    }

    /// Answers the joins and syncs waiting in the broker's groups (at shutdown).
    pub fn close_groups(&self) {
        self.broker.groups.close();
    }

    /// Serves the Kafka protocol on `l` until `stop` flips: the accept loop ends and its
    /// connections close.
    pub fn serve(
        &self,
        l: TcpListener,
        listen: crate::listen::KafkaListener,
        stop_rx: watch::Receiver<bool>,
        closes_groups: bool,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let kafka_broker = self.broker.clone();
        let node = kafka_broker.cluster.node_of(listen.addr);
        let (on_stop, stop) = (kafka_broker.clone(), stop_rx.clone());
        let broker = kafka_broker.clone();
        let tls = match listen.protocol {
            SecurityProtocol::Ssl => self.kafka_ssl.clone(),
            SecurityProtocol::SaslSsl => self.kafka_sasl_ssl.clone(),
            SecurityProtocol::Plaintext | SecurityProtocol::SaslPlaintext => None,
        };
        let sasl = listen.protocol.sasl();
        let handshake_timeout = self.handshake_timeout;
        let principal_rules = self.principal_rules.clone();
        listener::serve(
            "kafka",
            l,
            self.limits,
            self.metrics.listeners.clone(),
            stop_rx.clone(),
            move |sock, peer| {
                let _ = sock.set_nodelay(true);
                let (broker, stop, tls) = (broker.clone(), stop.clone(), tls.clone());
                let principal_rules = principal_rules.clone();
                async move {
                    let Some(tls) = tls else {
                        return broker::connection::run(broker, sock, peer, node, sasl, stop).await;
                    };
                    let mut at = broker::connection::Endpoint {
                        local: sock.local_addr().unwrap_or(listen.addr),
                        peer,
                        node,
                        sasl,
                        secure: true,
                        principal: None,
                    };
                    match tls.accept(sock, handshake_timeout).await {
                        Ok(stream) => {
                            at.principal = stream
                                .get_ref()
                                .1
                                .peer_certificates()
                                .and_then(|chain| chain.first())
                                .and_then(|cert| principal_rules.of_certificate(cert))
                                .map(Arc::from);
                            broker::connection::run_tls(broker, stream, at, stop).await
                        }
                        Err(e) => tracing::debug!(%peer, error = %e, "kafka TLS handshake failed"),
                    }
                }
            },
            // At shutdown, waiting joins and syncs are answered, so connections can
            // finish the request in hand and close; an address a cluster node stops
            // serving leaves the node's groups alone.
            move || {
                if closes_groups {
                    on_stop.groups.close()
                }
            },
        )
    }
}
