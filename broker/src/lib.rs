//! Eddy's Kafka protocol server. Until the broker issue lands, the listener accepts
//! connections and closes them, so clients fail fast instead of hanging.

use std::net::SocketAddr;

use tokio::net::TcpListener;
use tokio::sync::watch;

/// Accepts connections on `listener` until `shutdown` flips, closing each at once.
pub async fn serve(listener: TcpListener, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((sock, peer)) => {
                    tracing::debug!(%peer, "kafka connection refused: broker not implemented yet");
                    drop(sock);
                }
                Err(e) => tracing::warn!(error = %e, "kafka accept failed"),
            },
            _ = shutdown.changed() => break,
        }
    }
}

/// The address a listener is bound to, for logs.
pub fn describe(addr: SocketAddr) -> String {
    format!("kafka://{addr}")
}
