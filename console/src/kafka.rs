//! Kafka requests the console makes as its signed-in user: each is handed to the broker's
//! own handler (`broker::api::handle`) with the user as the connection's principal, so
//! the policies, quotas' accounting of the catalog, the audit trail and the errors are
//! the ones a Kafka client meets. The requests are the typed messages of
//! `kafka-protocol`, at versions the broker serves.

use std::net::SocketAddr;
use std::sync::Arc;

use kafka_protocol::messages::{RequestKind, ResponseKind};

use crate::{ConsoleError, ConsoleResult};

/// The broker of the default view, as the console reaches it.
#[derive(Clone)]
pub struct Kafka {
    broker: Arc<broker::Broker>,
    local: SocketAddr,
    node: i32,
    secure: bool,
}

impl Kafka {
    /// Requests to `broker` as if made to its listener `local` (whose node id they are
    /// made as); `secure`: the browser's connection is TLS (`aws:SecureTransport`).
    pub fn new(broker: Arc<broker::Broker>, local: SocketAddr, secure: bool) -> Self {
        let node = broker.cluster.node_of(local);
        Self {
            broker,
            local,
            node,
            secure,
        }
    }

    /// The broker.
    pub fn broker(&self) -> &Arc<broker::Broker> {
        &self.broker
    }

    /// The context of a request by `user` from `peer`.
    pub fn ctx(&self, user: &str, peer: SocketAddr) -> broker::context::Ctx {
        broker::context::Ctx {
            broker: self.broker.clone(),
            node: self.node,
            local: self.local,
            peer,
            version: 0,
            wire_version: 0,
            client_id: Some("eddy-console".to_owned()),
            principal: Some(Arc::from(user)),
            secure: self.secure,
        }
    }

    /// Sends `request` (at `version`) as `user` and waits for its response.
    pub async fn call(
        &self,
        user: &str,
        peer: SocketAddr,
        version: i16,
        request: RequestKind,
    ) -> ConsoleResult<ResponseKind> {
        let mut ctx = self.ctx(user, peer);
        ctx.version = version;
        ctx.wire_version = version;
        // The handler submits its work, then its reply is awaited.
        broker::api::handle(ctx, request)
            .await
            .await
            .ok_or_else(|| ConsoleError::Internal("the broker sent no response".into()))
    }
}

/// `call!(kafka, user, peer, version, Kind(request))`: sends the request as `user` and
/// takes the response of the same kind out of the [`ResponseKind`] (returning the error
/// from the calling function otherwise).
#[macro_export]
macro_rules! call {
    ($kafka:expr, $user:expr, $peer:expr, $version:expr, $kind:ident($request:expr)) => {
        match $kafka
            .call(
                $user,
                $peer,
                $version,
                kafka_protocol::messages::RequestKind::$kind($request),
            )
            .await?
        {
            kafka_protocol::messages::ResponseKind::$kind(r) => r,
            _ => {
                return Err($crate::ConsoleError::Internal(
                    concat!(
                        "the broker answered ",
                        stringify!($kind),
                        " with another response"
                    )
                    .into(),
                ));
            }
        }
    };
}
