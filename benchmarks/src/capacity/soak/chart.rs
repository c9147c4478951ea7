//! The soak's chart as a small hand-written SVG, in the style of the sweep's: three panels over the minutes
//! of the run — the server's resident memory (with the warm-up shaded, the baseline and the 10 % limit), its
//! open connections (and the peak of each interval), and the total size of the two identification tables.

use std::fmt::Write;

use super::report::SoakSample;
use crate::capacity::throughput::chart::nice;

const WIDTH: f64 = 760.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 680.0;
const TOP: f64 = 50.0;
/// Height of one panel, and the space between two.
const PANEL: f64 = 150.0;
const GAP: f64 = 40.0;
const MIB: f64 = 1024.0 * 1024.0;

/// The memory rule's lines, when the run reached them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Marks {
    /// Seconds of the run (the x axis's end).
    pub run_seconds: u64,
    /// Seconds of warm-up (shaded).
    pub warmup_seconds: u64,
    /// The baseline's resident memory.
    pub baseline_bytes: Option<u64>,
    /// Baseline × 1.10.
    pub limit_bytes: Option<u64>,
}

/// A line of a panel: label, colour, dash pattern, and the value it reads.
type Series = (
    &'static str,
    &'static str,
    &'static str,
    fn(&SoakSample) -> f64,
);

/// A panel: its title (the y axis's), and its lines.
type Panel = (&'static str, &'static [Series]);

const PANELS: [Panel; 3] = [
    (
        "server RSS (MiB)",
        &[("resident memory", "#1f77b4", "", |s| {
            s.rss_bytes as f64 / MIB
        })],
    ),
    (
        "connections",
        &[
            ("open", "#7570b3", "", |s| s.connections.open as f64),
            ("peak in interval", "#e7298a", "6 4", |s| {
                s.connections.peak_open as f64
            }),
        ],
    ),
    (
        "table size (MiB)",
        &[
            ("visitors", "#1b9e77", "", |s| {
                s.tables.visitors.total_bytes as f64 / MIB
            }),
            ("observations", "#d95f02", "", |s| {
                s.tables.observations.total_bytes as f64 / MIB
            }),
        ],
    ),
];

/// The chart of `samples`, titled `title`.
pub fn svg(title: &str, samples: &[SoakSample], marks: Marks) -> String {
    let height = TOP + 3.0 * PANEL + 2.0 * GAP + 70.0;
    let minutes = (marks.run_seconds as f64 / 60.0).max(1.0);
    let x = |seconds: f64| LEFT + (RIGHT - LEFT) * (seconds / 60.0) / minutes;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="{WIDTH}" height="{height}" fill="white"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="14">{}</text>"#,
        WIDTH / 2.0,
        escape(title)
    );
    for (i, (axis, series)) in PANELS.iter().enumerate() {
        let top = TOP + i as f64 * (PANEL + GAP);
        let bottom = top + PANEL;
        let mut highest = samples
            .iter()
            .flat_map(|p| series.iter().map(move |line| (line.3)(p)))
            .fold(1.0, f64::max);
        if i == 0 {
            if let Some(limit) = marks.limit_bytes {
                highest = highest.max(limit as f64 / MIB);
            }
        }
        let max_y = nice(highest);
        let y = |v: f64| bottom - (bottom - top) * v / max_y;
        if i == 0 {
            let _ = writeln!(
                s,
                r##"<rect class="warmup" x="{LEFT}" y="{top}" width="{:.1}" height="{PANEL}" fill="#eee"/>"##,
                x(marks.warmup_seconds as f64) - LEFT
            );
            // Labelled inside the plot, the limit's above its line and the baseline's below, so that the
            // two stay apart when they are close.
            for (class, value, colour, label, dy) in [
                (
                    "baseline",
                    marks.baseline_bytes,
                    "#1f77b4",
                    "baseline",
                    13.0,
                ),
                ("limit", marks.limit_bytes, "#e7298a", "limit (+10 %)", -4.0),
            ] {
                if let Some(bytes) = value {
                    let level = y(bytes as f64 / MIB);
                    let _ = writeln!(
                        s,
                        r#"<path class="{class}" d="M{LEFT} {level:.1} H{RIGHT}" stroke="{colour}" stroke-dasharray="2 3"/><text x="{}" y="{:.1}" text-anchor="end" fill="{colour}">{label}</text>"#,
                        RIGHT - 4.0,
                        level + dy
                    );
                }
            }
        }
        let _ = writeln!(
            s,
            r#"<path d="M{LEFT} {top} V{bottom} H{RIGHT}" fill="none" stroke="black"/>"#
        );
        for tick in 0..=4 {
            let v = max_y * f64::from(tick) / 4.0;
            let _ = writeln!(
                s,
                r##"<path d="M{LEFT} {yv:.1} H{RIGHT}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
                LEFT - 6.0,
                y(v) + 4.0,
                label(v),
                yv = y(v)
            );
            let minute = minutes * f64::from(tick) / 4.0;
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
                x(minute * 60.0),
                bottom + 16.0,
                label(minute)
            );
        }
        let middle = (top + bottom) / 2.0;
        let _ = writeln!(
            s,
            r#"<text transform="translate(20 {middle}) rotate(-90)" text-anchor="middle">{axis}</text>"#
        );
        for (n, (name, colour, dash, value)) in series.iter().enumerate() {
            let points: Vec<String> = samples
                .iter()
                .map(|p| format!("{:.1},{:.1}", x(p.at_seconds as f64), y(value(p))))
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"><title>{name}</title></polyline>"#,
                points.join(" ")
            );
            let lx = LEFT + 10.0 + n as f64 * 160.0;
            let _ = writeln!(
                s,
                r#"<path d="M{lx} {} h20" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/><text x="{}" y="{}">{name}</text>"#,
                top - 8.0,
                lx + 26.0,
                top - 4.0
            );
        }
    }
    let bottom = TOP + 3.0 * PANEL + 2.0 * GAP;
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">minutes of load (warm-up shaded)</text>"#,
        (LEFT + RIGHT) / 2.0,
        bottom + 36.0
    );
    s.push_str("</svg>\n");
    s
}

/// An axis label: to two decimals at most, without trailing zeros (2, 2.5, 0.25).
fn label(v: f64) -> String {
    let text = format!("{v:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::soak::report::{Answers, ConnectionCounts, TableSize, TableSizes};

    fn sample(at: u64, rss_mib: u64) -> SoakSample {
        SoakSample {
            at_seconds: at,
            elapsed_seconds: at as f64,
            rss_bytes: rss_mib * 1024 * 1024,
            connections: ConnectionCounts {
                open: 64,
                peak_open: 64,
                accepted: 64,
            },
            answers: Answers::default(),
            tables: TableSizes {
                visitors: TableSize {
                    total_bytes: at * 100_000,
                    ..TableSize::default()
                },
                observations: TableSize {
                    total_bytes: at * 300_000,
                    ..TableSize::default()
                },
            },
            interval: None,
        }
    }

    #[test]
    fn three_panels_five_lines_and_the_rule_marked() {
        let samples: Vec<SoakSample> = (0..=12).map(|i| sample(i * 10, 20 + i)).collect();
        let marks = Marks {
            run_seconds: 120,
            warmup_seconds: 60,
            baseline_bytes: Some(26 * 1024 * 1024),
            limit_bytes: Some(28 * 1024 * 1024 + 629_146),
        };
        let svg = svg("soak <2 cores> & PostgreSQL", &samples, marks);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 5);
        assert!(svg.contains("soak &lt;2 cores&gt; &amp; PostgreSQL"));
        assert_eq!(svg.matches("class=\"baseline\"").count(), 1);
        assert_eq!(svg.matches("class=\"limit\"").count(), 1);
        // The warm-up covers half of the x axis.
        assert!(svg.contains(&format!("width=\"{:.1}\"", (RIGHT - LEFT) / 2.0)));
        for tag in ["text", "polyline", "title", "svg"] {
            assert_eq!(
                svg.matches(&format!("<{tag}")).count(),
                svg.matches(&format!("</{tag}>")).count(),
                "{tag}"
            );
        }
        // Every point lies in its panel and the x axis runs in time order.
        for line in svg.lines().filter(|l| l.starts_with("<polyline")) {
            let points: Vec<(f64, f64)> = line
                .split('"')
                .nth(1)
                .unwrap()
                .split(' ')
                .map(|p| {
                    let (x, y) = p.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect();
            assert_eq!(points.len(), samples.len());
            assert!(points.windows(2).all(|w| w[0].0 < w[1].0), "{line}");
            assert!(points.iter().all(|(x, y)| (LEFT..=RIGHT).contains(x)
                && (TOP..=TOP + 3.0 * PANEL + 2.0 * GAP).contains(y)));
        }
    }

    #[test]
    fn a_run_without_a_baseline_draws_no_rule_lines() {
        let marks = Marks {
            run_seconds: 600,
            warmup_seconds: 120,
            baseline_bytes: None,
            limit_bytes: None,
        };
        let chart = svg("stopped", &[sample(0, 10), sample(10, 11)], marks);
        assert!(!chart.contains("class=\"baseline\"") && !chart.contains("class=\"limit\""));
        assert_eq!(chart.matches("<polyline").count(), 5);
        assert_eq!(svg("empty", &[], marks).matches("points=\"\"").count(), 5);
        let labels: Vec<String> = [0.0, 2.0, 2.5, 0.25, 37.5, 1_500.0].map(label).into();
        assert_eq!(labels, ["0", "2", "2.5", "0.25", "37.5", "1500"]);
    }
}
