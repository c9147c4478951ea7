//! Memory against live connections as a small hand-written SVG: the summed resident memory of the server
//! processes and of the load processes after each ramp step, with the reference's published server figure at
//! 200,000 connections marked for comparison.

use std::fmt::Write;

use serde_json::Value;

use crate::capacity::throughput::chart::nice;

/// The reference's summed server RSS at 200,000 connections (1.64–1.70 GiB), in GiB.
pub const REFERENCE_SERVER_GIB: (f64, f64) = (1.64, 1.70);

/// A line of the chart: label, colour, and the value it reads.
type Series = (&'static str, &'static str, fn(&MemoryPoint) -> u64);

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 680.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 340.0;

/// One ramp step: connections held, and server and load-process RSS in bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryPoint {
    /// Connections held after the step.
    pub connections: u64,
    /// Summed RSS of the server processes.
    pub server_bytes: u64,
    /// Summed RSS of the load processes.
    pub client_bytes: u64,
}

/// The points of a report's `steps` (those it can read).
pub fn points(steps: &Value) -> Vec<MemoryPoint> {
    steps
        .as_array()
        .map(|steps| {
            steps
                .iter()
                .filter_map(|s| {
                    Some(MemoryPoint {
                        connections: s["connections"].as_u64()?,
                        server_bytes: s["server_rss_bytes"].as_u64()?,
                        client_bytes: s["client_rss_bytes"].as_u64()?,
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The chart of `points`.
pub fn svg(points: &[MemoryPoint]) -> String {
    let max_x = nice(
        points
            .iter()
            .map(|p| p.connections as f64)
            .fold(1.0, f64::max),
    );
    let max_y = nice(
        points
            .iter()
            .map(|p| p.server_bytes.max(p.client_bytes) as f64 / GIB)
            .fold(REFERENCE_SERVER_GIB.1, f64::max),
    );
    let x = |c: f64| LEFT + (RIGHT - LEFT) * c / max_x;
    let y = |gib: f64| BOTTOM - (BOTTOM - TOP) * gib / max_y;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="760" height="420" viewBox="0 0 760 420" font-family="sans-serif" font-size="12">"#
    );
    s.push_str("<rect width=\"760\" height=\"420\" fill=\"white\"/>\n");
    let _ = writeln!(
        s,
        r#"<text x="380" y="24" text-anchor="middle" font-size="14">Resident memory against live keep-alive connections</text>"#
    );
    let _ = writeln!(
        s,
        r#"<path d="M{LEFT} {TOP} V{BOTTOM} H{RIGHT}" fill="none" stroke="black"/>"#
    );
    for i in 0..=4 {
        let (cx, gy) = (max_x * f64::from(i) / 4.0, max_y * f64::from(i) / 4.0);
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            x(cx),
            BOTTOM + 18.0,
            cx.round()
        );
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" x2="{RIGHT}" y1="{0:.1}" y2="{0:.1}" stroke="#ddd"/><text x="{1}" y="{2:.1}" text-anchor="end">{3:.2}</text>"##,
            y(gy),
            LEFT - 6.0,
            y(gy) + 4.0,
            gy
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">live connections</text>"#,
        (LEFT + RIGHT) / 2.0,
        BOTTOM + 38.0
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(20 {}) rotate(-90)" text-anchor="middle">resident memory, GiB (summed)</text>"#,
        (TOP + BOTTOM) / 2.0
    );
    let series: [Series; 2] = [
        ("server processes", "#1f77b4", |p| p.server_bytes),
        ("load processes", "#2ca02c", |p| p.client_bytes),
    ];
    for (i, (label, colour, value)) in series.iter().enumerate() {
        let path: Vec<String> = points
            .iter()
            .map(|p| {
                format!(
                    "{:.1} {:.1}",
                    x(p.connections as f64),
                    y(value(p) as f64 / GIB)
                )
            })
            .collect();
        if !path.is_empty() {
            let _ = writeln!(
                s,
                r#"<path d="M{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
                path.join(" L")
            );
        }
        for p in points {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{colour}"/>"#,
                x(p.connections as f64),
                y(value(p) as f64 / GIB)
            );
        }
        legend(&mut s, i, colour, label);
    }
    let (low, high) = REFERENCE_SERVER_GIB;
    let _ = writeln!(
        s,
        r##"<rect x="{:.1}" y="{:.1}" width="10" height="{:.1}" fill="#d95f02"/>"##,
        x(200_000.0) - 5.0,
        y(high),
        (y(low) - y(high)).max(2.0)
    );
    legend(&mut s, 2, "#d95f02", "reference servers (1.64–1.70 GiB)");
    s.push_str("</svg>\n");
    s
}

fn legend(s: &mut String, i: usize, colour: &str, label: &str) {
    let (lx, ly) = (LEFT + 170.0 * i as f64, BOTTOM + 62.0);
    let _ = writeln!(
        s,
        r#"<rect x="{lx}" y="{}" width="18" height="4" fill="{colour}"/><text x="{}" y="{ly}">{label}</text>"#,
        ly - 6.0,
        lx + 24.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_marker_per_step_and_series_and_the_reference_band() {
        let steps = json!([
            {"connections": 10_000, "server_rss_bytes": 300_000_000u64, "client_rss_bytes": 180_000_000u64},
            {"connections": 200_000, "server_rss_bytes": 4_374_511_616u64, "client_rss_bytes": 320_000_000u64},
            {"connections": 5, "unreadable": true},
        ]);
        let points = points(&steps);
        assert_eq!(points.len(), 2);
        let chart = svg(&points);
        assert_eq!(chart.matches("<circle").count(), 4);
        assert_eq!(
            chart.matches("<svg").count(),
            chart.matches("</svg>").count()
        );
        assert!(chart.contains("reference servers (1.64–1.70 GiB)"));
        // 4.07 GiB of servers puts the axis at 5 GiB.
        assert!(chart.contains(">5.00<"), "{chart}");
        assert!(svg(&[]).contains("</svg>"));
    }
}
