//! The latency picture: a histogram of source-to-sink latencies on a logarithmic axis (one panel
//! per run), with p50 / p99 / p99.9 marked, written as SVG with `plotters` (SVG backend only:
//! text is left to the viewer's fonts).

use std::path::Path;

use anyhow::{Result, anyhow};
use hdrhistogram::Histogram;
use plotters::prelude::*;

/// One run to draw: a title and its latencies in nanoseconds.
pub struct Panel<'a> {
    /// Title of the panel.
    pub title: String,
    /// Latencies (ns).
    pub histogram: &'a Histogram<u64>,
}

/// Log-spaced bins (10 per decade) from 1 µs up to the run's max: (low µs, high µs, share of
/// rows). Each recorded value goes to the bin of its decimal logarithm (below 1 µs: the first).
fn bins(h: &Histogram<u64>) -> Vec<(f64, f64, f64)> {
    let total = h.len().max(1) as f64;
    let index = |ns: u64| ((ns.max(1_000) as f64 / 1e3).log10() * 10.0).floor() as usize;
    let mut counts = vec![0u64; index(h.max()) + 1];
    for v in h.iter_recorded() {
        let i = index(v.value_iterated_to()).min(counts.len() - 1);
        counts[i] += v.count_at_value();
    }
    counts
        .iter()
        .enumerate()
        .map(|(i, &n)| (10f64.powf(i as f64 / 10.0), 10f64.powf((i + 1) as f64 / 10.0), n as f64 / total))
        .collect()
}

fn fmt_us(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.0} s", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0} ms", v / 1e3)
    } else {
        format!("{v:.0} µs")
    }
}

/// Draws `panels` stacked into an SVG at `path` (its folder is created).
///
/// # Errors
/// The folder or file cannot be written, or drawing fails.
pub fn latency_svg(path: &Path, caption: &str, panels: &[Panel<'_>]) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let height = 60 + 360 * panels.len() as u32;
    let root = SVGBackend::new(path, (960, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let root = root.titled(caption, ("sans-serif", 22)).map_err(|e| anyhow!("{e}"))?;
    let max_us = panels.iter().map(|p| p.histogram.max() as f64 / 1e3).fold(10.0, f64::max) * 1.5;
    for (area, panel) in root.split_evenly((panels.len(), 1)).iter().zip(panels) {
        let h = panel.histogram;
        let b = bins(h);
        let top = b.iter().map(|x| x.2).fold(0.0, f64::max) * 1.15 + 1e-9;
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((1.0..max_us).log_scale(), 0.0..top)
            .map_err(|e| anyhow!("{e}"))?;
        chart
            .configure_mesh()
            .x_desc("source-to-sink latency (log scale)")
            .y_desc("share of rows")
            .x_label_formatter(&|v| fmt_us(*v))
            .y_label_formatter(&|v| format!("{:.0} %", v * 100.0))
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
        chart
            .draw_series(b.iter().filter(|x| x.2 > 0.0).map(|&(lo, hi, share)| {
                Rectangle::new([(lo, 0.0), (hi, share)], RGBColor(52, 101, 164).mix(0.8).filled())
            }))
            .map_err(|e| anyhow!("{e}"))?;
        for (q, name, color) in [(0.5, "p50", GREEN), (0.99, "p99", RGBColor(230, 140, 0)), (0.999, "p99.9", RED)] {
            let v = (h.value_at_quantile(q) as f64 / 1e3).max(1.0);
            chart
                .draw_series(std::iter::once(PathElement::new(vec![(v, 0.0), (v, top)], color.stroke_width(2))))
                .map_err(|e| anyhow!("{e}"))?
                .label(format!("{name} = {}", fmt_exact(v)))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
    }
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}

fn fmt_exact(us: f64) -> String {
    if us >= 1e3 { format!("{:.2} ms", us / 1e3) } else { format!("{us:.0} µs") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_cover_every_sample_once() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 100_000_000_000, 3).expect("bounds");
        for v in [1_500u64, 2_000, 80_000, 80_000, 3_000_000] {
            h.record(v).expect("record");
        }
        let b = bins(&h);
        let total: f64 = b.iter().map(|x| x.2).sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
        assert!(b.windows(2).all(|w| (w[0].1 - w[1].0).abs() < 1e-9), "bins are contiguous");
    }

    #[test]
    fn an_svg_is_written() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 100_000_000_000, 3).expect("bounds");
        for v in 1..1000u64 {
            h.record(v * 10_000).expect("record");
        }
        let dir = std::env::temp_dir().join(format!("eddy-plot-{}", std::process::id()));
        let path = dir.join("l.svg");
        latency_svg(&path, "test", &[Panel { title: "a".into(), histogram: &h }]).expect("draw");
        let svg = std::fs::read_to_string(&path).expect("read");
        assert!(svg.starts_with("<svg") && svg.contains("p99.9"), "{}", &svg[..200.min(svg.len())]);
        let _ = std::fs::remove_dir_all(dir);
    }
}
