//! The sweep's chart as a small hand-written SVG: success latency (p50 and p95, raw and corrected for
//! coordinated omission) on a logarithmic left axis, successes and 503s per second as bars on the right axis,
//! against the offered rate.

use std::fmt::Write;

/// What the chart shows of one rate.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartPoint {
    /// Offered rate, requests per second.
    pub rate: u64,
    /// 200s per second.
    pub ok_per_second: f64,
    /// 503s per second.
    pub overloads_per_second: f64,
    /// Success p50 and p95 from the actual send, ms.
    pub raw_ms: Option<(f64, f64)>,
    /// Success p50 and p95 from the scheduled send, ms.
    pub corrected_ms: Option<(f64, f64)>,
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 440.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 680.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 360.0;
/// The lowest latency the axis shows; anything faster sits on it.
const FLOOR_MS: f64 = 0.1;

/// The line series: label, colour, dash pattern, and how to read the value.
type Series = (
    &'static str,
    &'static str,
    &'static str,
    fn(&ChartPoint) -> Option<f64>,
);

const SERIES: [Series; 4] = [
    ("success p50, raw", "#1f77b4", "", |p| p.raw_ms.map(|l| l.0)),
    ("success p95, raw", "#1f77b4", "6 4", |p| {
        p.raw_ms.map(|l| l.1)
    }),
    ("success p50, corrected", "#d95f02", "", |p| {
        p.corrected_ms.map(|l| l.0)
    }),
    ("success p95, corrected", "#d95f02", "6 4", |p| {
        p.corrected_ms.map(|l| l.1)
    }),
];

/// The chart of `points` (any order), titled `title`.
pub fn svg(title: &str, points: &[ChartPoint]) -> String {
    let mut points = points.to_vec();
    points.sort_by_key(|p| p.rate);
    let max_rate = nice(points.iter().map(|p| p.rate as f64).fold(1.0, f64::max));
    let max_per_second = nice(
        points
            .iter()
            .map(|p| p.ok_per_second.max(p.overloads_per_second))
            .fold(1.0, f64::max),
    );
    let slowest = points
        .iter()
        .flat_map(|p| SERIES.iter().filter_map(|s| (s.3)(p)))
        .fold(1.0, f64::max);
    let decades = (slowest.log10().ceil() - FLOOR_MS.log10()).max(1.0) as i32;
    // The highest rate stops short of the right axis, so its bars stay clear of the axis's labels.
    let x = |rate: f64| LEFT + rate / max_rate * (RIGHT - LEFT - 20.0);
    let y_ms = |ms: f64| {
        let above = (ms.max(FLOOR_MS).log10() - FLOOR_MS.log10()) / f64::from(decades);
        BOTTOM - above * (BOTTOM - TOP)
    };
    let y_rate = |r: f64| BOTTOM - r / max_per_second * (BOTTOM - TOP);

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="14">{}</text>"#,
        WIDTH / 2.0,
        escape(title)
    );
    // Axes and grid.
    let _ = writeln!(
        s,
        r#"<path d="M{LEFT} {TOP} V{BOTTOM} H{RIGHT} V{TOP}" fill="none" stroke="black"/>"#
    );
    for i in 0..=4 {
        let rate = max_rate * f64::from(i) / 4.0;
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            x(rate),
            BOTTOM + 16.0,
            rate.round()
        );
        let per_second = max_per_second * f64::from(i) / 4.0;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{:.1}">{}</text>"#,
            RIGHT + 6.0,
            y_rate(per_second) + 4.0,
            per_second.round()
        );
    }
    for d in 0..=decades {
        let ms = FLOOR_MS * 10f64.powi(d);
        let y = y_ms(ms);
        let _ = writeln!(
            s,
            r##"<path d="M{LEFT} {y:.1} H{RIGHT}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT - 6.0,
            y + 4.0,
            ms
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">offered rate (requests/s)</text>"#,
        (LEFT + RIGHT) / 2.0,
        BOTTOM + 36.0
    );
    let middle = (TOP + BOTTOM) / 2.0;
    let _ = writeln!(
        s,
        r#"<text transform="translate(18 {middle}) rotate(-90)" text-anchor="middle">latency (ms, log scale)</text>"#
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate({} {middle}) rotate(90)" text-anchor="middle">answers per second (bars)</text>"#,
        WIDTH - 14.0
    );
    // Bars: successes/s and 503s/s side by side at each rate.
    for p in &points {
        for (offset, value, class, colour) in [
            (-8.0, p.ok_per_second, "ok", "#7fbf7b"),
            (0.0, p.overloads_per_second, "overload", "#e7298a"),
        ] {
            let top = y_rate(value);
            let _ = writeln!(
                s,
                r#"<rect class="{class}" x="{:.1}" y="{top:.1}" width="8" height="{:.1}" fill="{colour}" fill-opacity="0.6"/>"#,
                x(p.rate as f64) + offset,
                BOTTOM - top
            );
        }
    }
    // Lines with a marker at every rate that has a value.
    for (label, colour, dash, value) in SERIES {
        let marks: Vec<(f64, f64)> = points
            .iter()
            .filter_map(|p| value(p).map(|ms| (x(p.rate as f64), y_ms(ms))))
            .collect();
        let path: Vec<String> = marks
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"><title>{label}</title></polyline>"#,
            path.join(" ")
        );
        for (x, y) in marks {
            let _ = writeln!(
                s,
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="3" fill="{colour}"/>"#
            );
        }
    }
    // Legend.
    let legend: Vec<(&str, &str, &str)> = SERIES
        .iter()
        .map(|(label, colour, dash, _)| (*label, *colour, *dash))
        .chain([
            ("successes/s", "#7fbf7b", "bar"),
            ("503s/s", "#e7298a", "bar"),
        ])
        .collect();
    for (i, (label, colour, dash)) in legend.iter().enumerate() {
        let lx = LEFT + (i % 3) as f64 * 200.0;
        let ly = BOTTOM + 56.0 + (i / 3) as f64 * 16.0;
        if *dash == "bar" {
            let _ = write!(
                s,
                r#"<rect x="{lx}" y="{}" width="20" height="8" fill="{colour}" fill-opacity="0.6"/>"#,
                ly - 8.0
            );
        } else {
            let _ = write!(
                s,
                r#"<path d="M{lx} {} h20" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/>"#,
                ly - 4.0
            );
        }
        let _ = writeln!(s, r#"<text x="{}" y="{ly}">{label}</text>"#, lx + 26.0);
    }
    s.push_str("</svg>\n");
    s
}

/// The smallest 1, 2 or 5 times a power of ten at or above `x`.
pub(crate) fn nice(x: f64) -> f64 {
    let power = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|v| *v >= x)
        .unwrap_or(10.0 * power)
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

    fn point(rate: u64, ok: f64, overloads: f64, p: Option<(f64, f64)>) -> ChartPoint {
        ChartPoint {
            rate,
            ok_per_second: ok,
            overloads_per_second: overloads,
            raw_ms: p,
            corrected_ms: p.map(|(a, b)| (a * 2.0, b * 3.0)),
        }
    }

    #[test]
    fn one_marker_per_rate_and_series_and_balanced_tags() {
        let points = [
            point(2_000, 1_500.0, 480.0, Some((2.0, 40.0))),
            point(100, 100.0, 0.0, Some((0.8, 1.5))),
            point(500, 500.0, 0.0, Some((0.05, 2.0))),
            point(1_000, 990.0, 8.0, None),
        ];
        let svg = svg("sweep <2 cores> & more", &points);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<circle").count(), 4 * 3);
        assert_eq!(svg.matches("<rect class=\"ok\"").count(), 4);
        assert_eq!(svg.matches("<rect class=\"overload\"").count(), 4);
        assert_eq!(svg.matches("<polyline").count(), 4);
        assert!(svg.contains("sweep &lt;2 cores&gt; &amp; more"));
        assert!(
            svg.contains("offered rate (requests/s)") && svg.contains("latency (ms, log scale)")
        );
        for tag in ["text", "polyline", "title", "svg"] {
            assert_eq!(
                svg.matches(&format!("<{tag}")).count(),
                svg.matches(&format!("</{tag}>")).count(),
                "{tag}"
            );
        }
        // Every marker lies in the plot, also for a latency below the axis's floor.
        for circle in svg.lines().filter(|l| l.starts_with("<circle")) {
            let attribute = |name: &str| -> f64 {
                let rest = circle.split(&format!("{name}=\"")).nth(1).unwrap();
                rest.split('"').next().unwrap().parse().unwrap()
            };
            assert!((LEFT..=RIGHT).contains(&attribute("cx")), "{circle}");
            assert!((TOP..=BOTTOM).contains(&attribute("cy")), "{circle}");
        }
        // The rates are drawn in order along the lines.
        let line = svg.lines().find(|l| l.starts_with("<polyline")).unwrap();
        let xs: Vec<f64> = line
            .split('"')
            .nth(1)
            .unwrap()
            .split(' ')
            .map(|p| p.split(',').next().unwrap().parse().unwrap())
            .collect();
        assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
    }

    #[test]
    fn axes_round_up() {
        assert_eq!(nice(1_700.0), 2_000.0);
        assert_eq!(nice(2_000.0), 2_000.0);
        assert_eq!(nice(2_001.0), 5_000.0);
        assert_eq!(nice(7.0), 10.0);
        assert_eq!(svg("empty", &[]).matches("<circle").count(), 0);
    }
}
