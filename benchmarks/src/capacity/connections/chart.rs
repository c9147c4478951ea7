//! Memory against live connections as a small hand-written SVG: the summed resident memory of the server
//! processes and of the load processes after each ramp step, with the reference's published server figure at
//! 200,000 connections marked for comparison.

use std::fmt::Write;

use super::report::Step;
use crate::capacity::throughput::chart::nice;

/// The reference's summed server RSS at 200,000 connections (1.64–1.70 GiB), in GiB.
pub const REFERENCE_SERVER_GIB: (f64, f64) = (1.64, 1.70);

/// A line of the chart: label, colour, and the value it reads.
type Series = (&'static str, &'static str, fn(&Step) -> u64);

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 680.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 340.0;

/// The chart of a report's ramp steps.
pub fn svg(points: &[Step]) -> String {
    let max_x = nice(
        points
            .iter()
            .map(|p| p.connections as f64)
            .fold(1.0, f64::max),
    );
    let max_y = nice(
        points
            .iter()
            .map(|p| p.server_rss_bytes.max(p.client_rss_bytes) as f64 / GIB)
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
        ("server processes", "#1f77b4", |p| p.server_rss_bytes),
        ("load processes", "#2ca02c", |p| p.client_rss_bytes),
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

    fn step(connections: u64, server_rss_bytes: u64, client_rss_bytes: u64) -> Step {
        Step {
            connections,
            client_open: connections,
            server_open: connections,
            server_rss_bytes,
            client_rss_bytes,
            step_seconds: 1.0,
            ramp_seconds: 1.0,
        }
    }

    #[test]
    fn one_marker_per_step_and_series_and_the_reference_band() {
        let points = [
            step(10_000, 300_000_000, 180_000_000),
            step(200_000, 4_374_511_616, 320_000_000),
        ];
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
