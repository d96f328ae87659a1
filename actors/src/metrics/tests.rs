use std::collections::HashSet;

use super::*;

/// The value of the sample line `name{labels}` in a rendering, if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')).and_then(|v| v.parse().ok()))
}

#[test]
fn every_name_is_unique_prefixed_and_carries_its_unit() {
    let mut seen = HashSet::new();
    for d in &CATALOG {
        assert!(seen.insert(d.name), "{} twice", d.name);
        assert!(d.name.starts_with("eddy_"), "{}", d.name);
        let unit_suffix = match d.kind {
            Kind::Counter => d.name.ends_with("_total"),
            Kind::Gauge | Kind::Histogram => ["_seconds", "_bytes", "_records", "_keys", "_messages", "_partitions"]
                .iter()
                .any(|s| d.name.ends_with(s)),
        };
        assert!(unit_suffix, "{} does not end with its unit", d.name);
        assert_eq!(d.kind == Kind::Counter, d.name.ends_with("_total"), "{}", d.name);
        if d.unit == Unit::Seconds {
            assert!(d.name.ends_with("_seconds"), "{}", d.name);
        }
        assert!(!d.help.is_empty());
    }
}

#[test]
fn a_new_recorder_exports_every_metric_described_with_the_pipeline_label() {
    let (_m, handle) = Metrics::new("p1", 2);
    let text = handle.render();
    for d in &CATALOG {
        let kind = match d.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        assert!(text.contains(&format!("# TYPE {} {kind}\n", d.name)), "{} not typed {kind}:\n{text}", d.name);
        assert!(text.contains(&format!("# HELP {} ", d.name)), "{} not described", d.name);
        let series = if d.kind == Kind::Histogram { format!("{}_count{{", d.name) } else { format!("{}{{", d.name) };
        let line = text.lines().find(|l| l.starts_with(&series)).unwrap_or_else(|| panic!("no {series} in\n{text}"));
        assert!(line.contains("pipeline=\"p1\""), "{line}");
        for label in d.labels {
            assert!(line.contains(&format!("{label}=\"")), "{line} lacks {label}");
        }
    }
    assert!(!text.contains("quantile="), "histograms must not be summaries:\n{text}");
    assert!(text.contains("eddy_state_keys{pipeline=\"p1\",partition=\"1\"} 0"), "{text}");
}

#[test]
fn recorded_values_land_in_counters_gauges_and_the_right_buckets() {
    let (m, handle) = Metrics::new("p", 1);
    m.records_in.increment(256);
    m.records_in.increment(44);
    m.watermark.set(micros_to_seconds(1_500_000));
    // 3 ms: above the 2.5 ms bound, within the 5 ms one.
    m.source_to_sink_latency.record(0.003);
    m.source_to_sink_latency.record(20.0);
    let text = handle.render();
    assert_eq!(sample(&text, "eddy_records_in_total{pipeline=\"p\"}"), Some(300.0));
    assert_eq!(sample(&text, "eddy_watermark_seconds{pipeline=\"p\"}"), Some(1.5));
    let bucket =
        |le: &str| sample(&text, &format!("eddy_source_to_sink_latency_seconds_bucket{{pipeline=\"p\",le=\"{le}\"}}"));
    assert_eq!(bucket("0.0025"), Some(0.0));
    assert_eq!(bucket("0.005"), Some(1.0));
    assert_eq!(bucket("10"), Some(1.0));
    assert_eq!(bucket("+Inf"), Some(2.0));
    assert_eq!(sample(&text, "eddy_source_to_sink_latency_seconds_count{pipeline=\"p\"}"), Some(2.0));
}

#[test]
fn buckets_span_ten_microseconds_to_ten_seconds_in_increasing_order() {
    assert_eq!(BUCKETS[0], 1e-5);
    assert_eq!(BUCKETS[BUCKETS.len() - 1], 10.0);
    assert!(BUCKETS.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn kafka_lag_series_are_registered_on_demand_and_disabled_handles_record_nothing() {
    let (m, handle) = Metrics::new("p", 1);
    m.kafka_consumer_lag("3").set(42.0);
    let text = handle.render();
    assert_eq!(sample(&text, "eddy_kafka_consumer_lag_records{pipeline=\"p\",source_partition=\"3\"}"), Some(42.0));
    assert_eq!(sample(&text, "eddy_kafka_consumer_lag_records{pipeline=\"p\",source_partition=\"none\"}"), Some(0.0));
    let off = Metrics::disabled(2);
    assert!(!off.enabled());
    off.records_in.increment(1);
    off.kafka_consumer_lag("0").set(1.0);
    assert_eq!(off.partitions.len(), 2);
}

#[test]
fn readiness_needs_a_connected_source_and_no_failing_checkpoint() {
    let h = Health::default();
    assert!(h.not_ready_reason().is_some());
    h.set_sources_connected(true);
    assert_eq!(h.not_ready_reason(), None);
    h.set_checkpoint_failing(true);
    assert!(h.not_ready_reason().is_some());
}

#[test]
fn several_sources_count_their_records_in_series_labelled_by_source() {
    let (m, handle) = Metrics::with_sources("p", 1, &["orders".to_string(), "payments".to_string()]);
    m.sources[1].records_in.increment(7);
    m.records_in.increment(2);
    m.sources[1].records_malformed.increment(1);
    let text = handle.render();
    assert_eq!(sample(&text, "eddy_records_in_total{pipeline=\"p\",source=\"orders\"}"), Some(2.0), "{text}");
    assert_eq!(sample(&text, "eddy_records_in_total{pipeline=\"p\",source=\"payments\"}"), Some(7.0), "{text}");
    assert_eq!(sample(&text, "eddy_records_malformed_total{pipeline=\"p\",source=\"payments\"}"), Some(1.0));
    assert_eq!(sample(&text, "eddy_records_in_total{pipeline=\"p\"}"), None, "no unlabelled series beside them");
    let (one, handle) = Metrics::with_sources("p", 1, &["source".to_string()]);
    one.records_in.increment(3);
    assert!(one.sources.is_empty());
    assert_eq!(sample(&handle.render(), "eddy_records_in_total{pipeline=\"p\"}"), Some(3.0), "one source: no label");
}
