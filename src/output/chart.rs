//! Part of the output: what a chart is — its series, reference lines, axes — which `plot`
//! builds from results and `draw` (the `plot` feature) renders, so that neither imports the
//! other. Never prints.

/// A line chart (or a scatter): named series, horizontal reference lines (SLO bounds) and
/// vertical markers (knee, crossing). It serializes as the spec `report.html`'s script draws.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Chart {
    /// Shown above the plot; names it in a `PlotError`.
    pub title: String,
    /// Label of the x axis.
    pub x_label: String,
    /// Label of the y axis.
    pub y_label: String,
    /// Each line's name and its (x, y) points.
    pub series: Vec<(String, Vec<(f64, f64)>)>,
    /// Horizontal reference lines: name and y.
    pub hlines: Vec<(String, f64)>,
    /// Vertical markers: name and x.
    pub vlines: Vec<(String, f64)>,
    /// A logarithmic x axis (linear when the x range does not start above 0).
    pub log_x: bool,
    /// The x axis' range, when it must match other charts' (`share_x`); `None`: the data's.
    pub x_range: Option<(f64, f64)>,
    /// A logarithmic y axis in the interactive chart (a latency axis); the static files keep
    /// a linear one.
    pub log_y: bool,
    /// Points only, no lines; drawn interactively only (tens of thousands of markers make
    /// no file worth keeping for a paper).
    pub scatter: bool,
    /// Shown under the chart: what was sampled or left out.
    pub note: Option<String>,
}

/// A chart that could not be drawn or encoded: its title and why.
#[derive(Debug, thiserror::Error)]
#[error("plot '{0}': {1}")]
pub struct PlotError(pub(crate) String, pub(crate) String);

impl Chart {
    /// Points of every series plus the reference lines, for axis ranges.
    #[cfg_attr(not(feature = "plot"), allow(dead_code))]
    pub(crate) fn ranges(&self) -> Option<((f64, f64), (f64, f64))> {
        let pts = self.series.iter().flat_map(|(_, p)| p.iter().copied());
        let xs: Vec<f64> = pts
            .clone()
            .map(|p| p.0)
            .chain(self.vlines.iter().map(|v| v.1))
            .collect();
        let ys: Vec<f64> = pts
            .map(|p| p.1)
            .chain(self.hlines.iter().map(|h| h.1))
            .collect();
        let fold = |v: &[f64]| {
            let lo = v
                .iter()
                .copied()
                .filter(|x| x.is_finite())
                .fold(f64::INFINITY, f64::min);
            let hi = v
                .iter()
                .copied()
                .filter(|x| x.is_finite())
                .fold(f64::NEG_INFINITY, f64::max);
            (lo.is_finite() && hi.is_finite()).then_some((lo, hi))
        };
        let (x0, x1) = fold(&xs)?;
        let (x0, x1) = self.x_range.unwrap_or((x0, x1));
        let (_, y1) = fold(&ys)?;
        // All x equal (a CDF of identical samples): centre them rather than draw on the axis.
        let (x0, x1) = if x1 > x0 {
            (x0, x1)
        } else {
            (x0 - 0.5, x0 + 0.5)
        };
        let y1 = if y1 > 0.0 { y1 * 1.08 } else { 1.0 };
        Some(((x0, x1), (0.0, y1)))
    }
}

/// Without the `plot` feature there is no drawing: `draw` (which gives these two with it) is
/// not built, and no chart is written as a file.
#[cfg(not(feature = "plot"))]
impl Chart {
    /// The chart as an SVG document: `None`, as this build has no `plot` feature.
    pub fn svg(&self) -> Result<Option<String>, PlotError> {
        Ok(None)
    }

    /// The chart as a PNG file: `None`, as this build has no `plot` feature.
    pub fn png(&self) -> Result<Option<Vec<u8>>, PlotError> {
        Ok(None)
    }
}

#[cfg_attr(not(feature = "plot"), allow(dead_code))]
pub(crate) fn tick(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 || x.abs() >= 100.0 {
        format!("{:.0}", x)
    } else {
        let s = format!("{x:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}
