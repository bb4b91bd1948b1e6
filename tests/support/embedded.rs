//! The embedded registry as a conformance [`Backend`]: one server per backend value, fault controls
//! through the server's fault injection.

use std::sync::Arc;

use async_trait::async_trait;
use shardcron::registry::embedded::{EmbeddedServer, EmbeddedSession};
use shardcron::registry::Connector;

use super::backend::{Backend, SessionControl, TestSession};

/// An embedded server under test.
#[derive(Debug, Clone, Default)]
pub struct EmbeddedBackend {
    /// The server every session of this backend lives on.
    pub server: EmbeddedServer,
}

/// A fresh embedded server as a backend.
pub fn backend() -> EmbeddedBackend {
    EmbeddedBackend::default()
}

/// Fault controls of one embedded session.
struct EmbeddedControl {
    server: EmbeddedServer,
    id: i64,
}

#[async_trait]
impl SessionControl for EmbeddedControl {
    async fn expire(&self) {
        self.server.expire(self.id);
    }

    async fn disconnect(&self) {
        self.server.disconnect(self.id);
    }

    async fn reconnect(&self) {
        self.server.reconnect(self.id);
    }
}

impl EmbeddedBackend {
    /// Opens a session and keeps its concrete type, for tests that need embedded-only controls.
    pub fn open_embedded(&self, namespace: &str) -> EmbeddedSession {
        self.server.connector(namespace).open()
    }
}

#[async_trait]
impl Backend for EmbeddedBackend {
    fn name(&self) -> &'static str {
        "embedded"
    }

    async fn connector(&self, namespace: &str) -> Arc<dyn Connector> {
        Arc::new(self.server.connector(namespace))
    }

    async fn open(&self, namespace: &str) -> TestSession {
        let session = self.open_embedded(namespace);
        let control = EmbeddedControl {
            server: self.server.clone(),
            id: session.id(),
        };
        TestSession {
            registry: Arc::new(session),
            control: Box::new(control),
        }
    }
}
