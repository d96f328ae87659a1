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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connectivity_drives_readiness_and_lag_is_exported_per_source_partition() {
        let health = Arc::new(Health::default());
        let (metrics, handle) = Metrics::new("p", 1);
        let reporter = KafkaReporter::new(health.clone(), metrics);
        reporter.connected(true);
        assert_eq!(health.not_ready_reason(), None);
        reporter.connected(false);
        assert_eq!(health.not_ready_reason(), Some("a source is not connected"));
        reporter.lag("events", 3, 42);
        let text = handle.render();
        let line = text
            .lines()
            .find(|l| l.starts_with(super::super::KAFKA_CONSUMER_LAG) && l.contains("source_partition=\"events/3\""))
            .unwrap_or_else(|| panic!("no lag series in:\n{text}"));
        assert!(line.ends_with(" 42"), "{line}");
        assert!(line.contains("pipeline=\"p\""), "{line}");
    }
}
