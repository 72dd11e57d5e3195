//! Part of the output (built with the `plot` feature): a `chart::Chart` drawn with `plotters`
//! into memory — SVG text left to the viewer's fonts, PNG text drawn with the shipped
//! DejaVu Sans. Writes nothing itself; never prints.

use super::chart::{tick, Chart, PlotError};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The size every chart is drawn at, pixels.
pub(crate) const W: u32 = 720;
pub(crate) const H: u32 = 400;
pub(crate) const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

impl Chart {
    /// The chart as an SVG document; `None` when there is nothing to draw.
    pub fn svg(&self) -> Result<Option<String>, PlotError> {
        let mut out = String::new();
        let drawn = self.render(SVGBackend::with_string(&mut out, (W, H)).into_drawing_area())?;
        Ok(drawn.then_some(out))
    }

    /// The chart as a PNG file (W×H, 8-bit RGB), text drawn with the shipped font; `None`
    /// when there is nothing to draw.
    pub fn png(&self) -> Result<Option<Vec<u8>>, PlotError> {
        let mut rgb = vec![0u8; (W * H * 3) as usize];
        let area = BitMapBackend::with_buffer(&mut rgb, (W, H)).into_drawing_area();
        if !self.render(area)? {
            return Ok(None);
        }
        let err = |e: png::EncodingError| PlotError(self.title.clone(), e.to_string());
        let mut file = Vec::with_capacity(64 * 1024);
        let mut enc = png::Encoder::new(&mut file, W, H);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.write_header()
            .and_then(|mut w| w.write_image_data(&rgb))
            .map_err(err)?;
        Ok(Some(file))
    }

    /// Draws the chart on `root`; false when there is nothing to draw.
    fn render<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<bool, PlotError> {
        let Some(((x0, x1), (y0, y1))) = self.ranges() else {
            return Ok(false);
        };
        register_font();
        let err = |e: &dyn std::fmt::Display| PlotError(self.title.clone(), e.to_string());
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut b = ChartBuilder::on(&root);
        b.caption(&self.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(64);
        if self.log_x && x0 > 0.0 {
            let mut c = b
                .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
                .map_err(|e| err(&e))?;
            self.draw(&mut c).map_err(|e| err(&e))?;
        } else {
            let mut c = b.build_cartesian_2d(x0..x1, y0..y1).map_err(|e| err(&e))?;
            self.draw(&mut c).map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
        Ok(true)
    }

    fn draw<'a, X, DB>(
        &self,
        c: &mut ChartContext<'a, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
    where
        DB: DrawingBackend + 'a,
        X: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
    {
        let log_x = self.log_x;
        let x_tick = move |x: &f64| {
            // A log axis gets a tick at every 1..9 of each decade: label only 1, 2 and 5.
            let m = x / 10f64.powf(x.log10().floor());
            let keep = [1.0, 2.0, 5.0, 10.0].iter().any(|k| (m - k).abs() < 1e-6);
            if log_x && !keep {
                String::new()
            } else {
                tick(*x)
            }
        };
        c.configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .x_label_formatter(&x_tick)
            .y_label_formatter(&|y| tick(*y))
            .light_line_style(WHITE)
            .draw()?;
        let (xr, yr) = (c.x_range(), c.y_range());
        for (i, (name, pts)) in self.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            c.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2))
                });
            if pts.len() <= 60 {
                c.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            }
        }
        for (name, y) in &self.hlines {
            let red = RGBColor(200, 0, 0);
            c.draw_series(LineSeries::new(
                [(xr.start, *y), (xr.end, *y)],
                red.stroke_width(1),
            ))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], red));
        }
        for (name, x) in &self.vlines {
            let gray = RGBColor(90, 90, 90);
            c.draw_series(LineSeries::new(
                [(*x, yr.start), (*x, yr.end)],
                gray.stroke_width(2),
            ))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], gray.stroke_width(2)));
        }
        c.configure_series_labels()
            .label_font(("sans-serif", 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
    }
}

/// DejaVu Sans (Bitstream Vera licence, see `assets/fonts/`), built into the binary: a PNG's
/// text needs glyphs, and a CI machine need not have any font installed. The SVGs use it
/// only to measure text; their viewer draws it.
static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_err() {
            unreachable!("the built-in font file is a valid TrueType font");
        }
    });
}
