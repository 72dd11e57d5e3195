//! Part of the collector (… → record → **collector** → summary): what the measured successful
//! requests carried to the server — body bytes (`Record::body_bytes`), images and audio
//! (`Record::images`, `Record::audio_ms`) — for the summary's `upload` block. Their upload
//! time is a `Metric` like any latency (`Metric::Upload`). Bounded: three counters and one
//! histogram. Never prints.

use super::Dist;
use crate::record::Record;
use crate::summary::upload::Upload;

/// Body bytes, images and audio of the measured successful requests.
#[derive(Clone, Debug, Default)]
pub(crate) struct UploadTally {
    requests: u64,
    body_bytes: u64,
    images: u64,
    audio_ms: u64,
    body: Dist,
}

impl UploadTally {
    /// One measured successful request.
    pub fn add(&mut self, rec: &Record) {
        self.requests += 1;
        self.body_bytes += rec.body_bytes;
        self.images += u64::from(rec.images);
        self.audio_ms += u64::from(rec.audio_ms);
        self.body.record(rec.body_bytes);
    }

    /// The `upload` block; `per_s` turns a total into a rate over the run's duration.
    pub fn summary(&self, percentiles: &[f64], per_s: impl Fn(f64) -> Option<f64>) -> Upload {
        let audio_s = self.audio_ms as f64 / 1e3;
        let mean = |n: f64| (self.requests > 0).then(|| n / self.requests as f64);
        Upload {
            body_bytes_total: self.body_bytes,
            body_bytes_per_s: per_s(self.body_bytes as f64),
            images: self.images,
            images_per_request_mean: mean(self.images as f64),
            images_per_s: per_s(self.images as f64),
            audio_ms: self.audio_ms,
            audio_s_per_request_mean: mean(audio_s),
            audio_s_per_s: per_s(audio_s),
            body_bytes: self.body.stats(percentiles),
        }
    }

    /// Values the histogram clamped (bodies above its bound).
    pub fn clamped(&self) -> u64 {
        self.body.clamped()
    }
}
