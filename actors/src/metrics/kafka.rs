//! What the Kafka source reports, delivered to readiness and metrics.

use std::sync::Arc;

use eddy_connectors::kafka::KafkaObserver;

use super::{Health, Metrics};

/// Sends the Kafka source's reports where they belong: connectivity to [`Health`] (`/readyz` is
/// not ready while the broker is unreachable), consumer lag to
/// [`KAFKA_CONSUMER_LAG`](super::KAFKA_CONSUMER_LAG) with `source_partition="<topic>/<partition>"`.
#[derive(Debug, Clone)]
pub struct KafkaReporter {
    health: Arc<Health>,
    metrics: Metrics,
}

impl KafkaReporter {
    /// A reporter into `health` and `metrics`.
    pub fn new(health: Arc<Health>, metrics: Metrics) -> KafkaReporter {
        KafkaReporter { health, metrics }
    }
}

impl KafkaObserver for KafkaReporter {
    fn connected(&self, connected: bool) {
        self.health.set_sources_connected(connected);
    }

    fn lag(&self, topic: &str, partition: i32, records: i64) {
        // Registered on first use, looked up after (once a second per partition).
        self.metrics.kafka_consumer_lag(&format!("{topic}/{partition}")).set(records as f64);
    }
}
