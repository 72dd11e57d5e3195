//! Before the run (plan → workload → **media** → catalog …): synthetic images (PNG, JPEG)
//! and audio (WAV) of random pixels and samples, made from the seed before the run, and the
//! salt that makes every request's copy unique. Each file is laid out so that a salt changes
//! only its last few dozen bytes, after a prefix whose length is a multiple of 3: the
//! prefix's base64 never changes, and `MediaTail::write` rewrites only the tail's (the tail
//! copied from its template, the salt and the checksums that cover it written, base64 into
//! the lane's copy of the request) — a few dozen bytes, no allocation.
//!
//! PNG: the pixels stored in uncompressed deflate blocks, the salted bytes at the end of the
//! last scanline in an IDAT chunk of their own, the Adler-32 of everything before them
//! computed once. JPEG: a restart marker after every MCU, the last `JPEG_SALT_SLOTS` MCUs
//! (all but the first, in a smaller image; one of a single MCU is not salted) flat gray,
//! each one of 16 levels (4 bits of salt), pre-encoded with the image's own
//! tables and padded with 0xFF fill bytes to one length. WAV (16-bit PCM): the last four
//! samples. Nothing here runs on the hot path but `MediaTail::write`; nothing prints.

use base64::Engine;
use rand::{Rng, RngExt};
use std::sync::Arc;

/// A synthetic image or audio clip as a request carries it.
#[derive(Debug, PartialEq)]
pub struct Media {
    /// Its `data:` URL, like `data:image/png;base64,...`.
    pub url: Arc<str>,
    /// Where its base64 starts in `url`.
    pub b64_at: usize,
    /// The clip's length, ms; `None`: an image.
    pub audio_ms: Option<u32>,
    /// The file's length, bytes.
    pub file_bytes: usize,
    /// Where its salt goes and how it is written; `None`: unsalted.
    pub tail: Option<MediaTail>,
}

impl Media {
    /// Its MIME type, like `image/png`.
    pub fn mime(&self) -> &str {
        &self.url["data:".len()..self.b64_at - ";base64,".len()]
    }

    /// Its base64, as Anthropic's `source.data` and an `input_audio`'s `data` carry it.
    pub fn b64(&self) -> &str {
        &self.url[self.b64_at..]
    }
}

/// Bytes of salt a PNG or WAV carries (the request's salt value, little-endian).
const SALT_BYTES: usize = 8;

/// MCUs of a JPEG that carry salt, 4 bits each: 2^40 values, as the prompt salt has.
pub const JPEG_SALT_SLOTS: usize = 10;

/// Levels of a salt MCU: 16 flat grays, 16 apart (4 bits).
const JPEG_LEVELS: usize = 16;

/// JPEG quality and subsampling: PIL's defaults (quality 75, 4:2:0), which vLLM's random-mm
/// images are saved with.
const JPEG_QUALITY: u8 = 75;

/// The longest tail a salt rewrites, bytes.
pub const MAX_TAIL: usize = 256;

/// The end of a file that a request's salt rewrites, and how.
#[derive(Clone, Debug, PartialEq)]
pub struct MediaTail {
    /// Where the tail starts in the file: a multiple of 3, so at `from / 3 * 4` in its
    /// base64, whose bytes before that never change.
    pub from: usize,
    /// The tail as built (salt value 0's, for JPEG; the random bytes for PNG and WAV).
    template: Box<[u8]>,
    patch: Patch,
}

#[derive(Clone, Debug, PartialEq)]
enum Patch {
    /// The salt's `len` bytes (little-endian) at `at`.
    Raw { at: usize, len: usize },
    /// `Raw`, then the zlib stream's Adler-32 over the tail's first `data` bytes, carried
    /// on from `adler` (the state after every byte before them), and the CRC-32 of the IDAT
    /// chunk that holds those bytes and the Adler-32.
    Png {
        at: usize,
        len: usize,
        data: usize,
        adler: (u32, u32),
    },
    /// `slots` 4-bit digits, the fastest-changing first: slot `i` at `at + i * stride` gets
    /// the `stride - 2` bytes of its digit's variant (the 2 after them are its marker).
    Jpeg {
        at: usize,
        slots: usize,
        stride: usize,
        variants: Box<[u8]>,
    },
}

impl MediaTail {
    /// Where the tail's base64 starts in the file's base64.
    pub fn b64_at(&self) -> usize {
        self.from / 3 * 4
    }

    /// The tail's base64 length (with the file's padding).
    pub fn b64_len(&self) -> usize {
        self.template.len().div_ceil(3) * 4
    }

    /// The tail of salt `value`, raw.
    #[inline]
    fn fill(&self, value: u64, raw: &mut [u8]) {
        raw.copy_from_slice(&self.template);
        match &self.patch {
            Patch::Raw { at, len } => {
                raw[*at..at + len].copy_from_slice(&value.to_le_bytes()[..*len])
            }
            Patch::Png {
                at,
                len,
                data,
                adler,
            } => {
                raw[*at..at + len].copy_from_slice(&value.to_le_bytes()[..*len]);
                let (a, b) = adler_update(*adler, &raw[..*data]);
                raw[*data..data + 4].copy_from_slice(&((b << 16) | a).to_be_bytes());
                let crc = crc32(&[b"IDAT", &raw[..data + 4]]);
                raw[data + 4..data + 8].copy_from_slice(&crc.to_be_bytes());
            }
            Patch::Jpeg {
                at,
                slots,
                stride,
                variants,
            } => {
                let n = stride - 2;
                for i in 0..*slots {
                    let d = ((value >> (4 * i)) & 15) as usize;
                    let to = at + i * stride;
                    raw[to..to + n].copy_from_slice(&variants[d * n..(d + 1) * n]);
                }
            }
        }
    }

    /// Writes the tail of salt `value` as base64 over the first `b64_len` bytes of `out`:
    /// with `b64_at` bytes of the file's unchanged base64 before them, the file is the
    /// salted one. No allocation.
    #[inline]
    pub fn write(&self, value: u64, out: &mut [u8]) {
        let mut buf = [0u8; MAX_TAIL];
        let raw = &mut buf[..self.template.len()];
        self.fill(value, raw);
        let n = self.b64_len();
        let _ = B64.encode_slice(raw, &mut out[..n]);
    }

    /// The whole file of salt `value`, given the file as built (tests).
    #[cfg(test)]
    pub fn salted_file(&self, file: &[u8], value: u64) -> Vec<u8> {
        let mut raw = vec![0; self.template.len()];
        self.fill(value, &mut raw);
        [&file[..self.from], &raw[..]].concat()
    }
}

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// `file` as a `Media` of type `mime`.
fn media(mime: &str, file: &[u8], audio_ms: Option<u32>, tail: Option<MediaTail>) -> Media {
    let head = format!("data:{mime};base64,");
    let mut url = String::with_capacity(head.len() + file.len().div_ceil(3) * 4);
    url.push_str(&head);
    B64.encode_string(file, &mut url);
    Media {
        url: url.into(),
        b64_at: head.len(),
        audio_ms,
        file_bytes: file.len(),
        tail: tail.filter(|t| t.template.len() <= MAX_TAIL),
    }
}

/// A `width` × `height` image of random pixels, PNG or JPEG, salted when `salt` is set.
pub fn image(
    width: u32,
    height: u32,
    jpeg: bool,
    salt: bool,
    rng: &mut impl Rng,
) -> Result<Media, String> {
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    rng.fill_bytes(&mut pixels);
    let (file, tail) = match jpeg {
        false => png(width, height, &pixels),
        true => jpeg_file(width, height, &pixels)?,
    };
    let mime = if jpeg { "image/jpeg" } else { "image/png" };
    Ok(media(mime, &file, None, tail.filter(|_| salt)))
}

/// A clip of `ms` of random 16-bit mono samples at `rate` Hz as a WAV file, salted when
/// `salt` is set.
pub fn audio(ms: u32, rate: u32, salt: bool, rng: &mut impl Rng) -> Media {
    let samples = (u64::from(ms) * u64::from(rate) / 1000).max(SALT_BYTES as u64 / 2) as usize;
    let data = samples * 2;
    let mut file = Vec::with_capacity(44 + data);
    file.extend_from_slice(b"RIFF");
    file.extend_from_slice(&(36 + data as u32).to_le_bytes());
    file.extend_from_slice(b"WAVEfmt ");
    file.extend_from_slice(&16u32.to_le_bytes());
    file.extend_from_slice(&1u16.to_le_bytes()); // PCM
    file.extend_from_slice(&1u16.to_le_bytes()); // mono
    file.extend_from_slice(&rate.to_le_bytes());
    file.extend_from_slice(&(rate * 2).to_le_bytes());
    file.extend_from_slice(&2u16.to_le_bytes());
    file.extend_from_slice(&16u16.to_le_bytes());
    file.extend_from_slice(b"data");
    file.extend_from_slice(&(data as u32).to_le_bytes());
    // Noise at a quarter of full scale.
    file.extend((0..samples).flat_map(|_| (rng.random::<i16>() / 4).to_le_bytes()));
    let salt_at = file.len() - SALT_BYTES;
    let from = salt_at - salt_at % 3;
    let tail = MediaTail {
        from,
        template: file[from..].into(),
        patch: Patch::Raw {
            at: salt_at - from,
            len: SALT_BYTES,
        },
    };
    media("audio/wav", &file, Some(ms), Some(tail).filter(|_| salt))
}

/// CRC-32 (IEEE, as PNG's chunks carry it) of `parts` one after the other.
pub fn crc32(parts: &[&[u8]]) -> u32 {
    let mut c = !0u32;
    for p in parts {
        for &b in *p {
            c = CRC_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8);
        }
    }
    !c
}

static CRC_TABLE: [u32; 256] = crc_table();

const fn crc_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[n] = c;
        n += 1;
    }
    t
}

/// Adler-32's state `(a, b)` carried over `bytes` (it starts at `(1, 0)`).
pub fn adler_update((mut a, mut b): (u32, u32), bytes: &[u8]) -> (u32, u32) {
    const MOD: u32 = 65_521;
    // 5,552 bytes at most between reductions keep `b` within 32 bits.
    for chunk in bytes.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (a, b)
}

/// One PNG chunk: length, type, data, CRC.
fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend_from_slice(&crc32(&[kind, data]).to_be_bytes());
}

/// The lengths of the stored deflate blocks holding `n` bytes: 65,535 each, the last at
/// least 16 long (so a tail of salt never spans a block's header).
fn stored_blocks(n: usize) -> Vec<usize> {
    const MAX: usize = 65_535;
    let mut blocks = vec![MAX; n / MAX];
    let rest = n % MAX;
    if rest > 0 {
        blocks.push(rest);
    }
    let k = blocks.len();
    if k >= 2 && blocks[k - 1] < 16 {
        blocks[k - 2] -= 16;
        blocks[k - 1] += 16;
    }
    blocks
}

/// An RGB PNG of `pixels`: every scanline unfiltered, stored (uncompressed) deflate blocks,
/// the last few pixel bytes (with up to 2 bytes before them, for alignment) in an IDAT chunk
/// of their own after the one holding the rest; and the tail a salt rewrites.
fn png(width: u32, height: u32, pixels: &[u8]) -> (Vec<u8>, Option<MediaTail>) {
    let line = width as usize * 3;
    let mut raw = Vec::with_capacity((line + 1) * height as usize);
    for row in pixels.chunks(line) {
        raw.push(0);
        raw.extend_from_slice(row);
    }
    let blocks = stored_blocks(raw.len());
    let salt = SALT_BYTES.min(line);
    // The tail's offset in the file: signature, IHDR, IDAT's length and type, the zlib
    // header and the blocks' headers, the raw bytes before it, IDAT's CRC, the second
    // IDAT's length and type.
    let before = 8 + 25 + 8 + 2 + 5 * blocks.len() + (raw.len() - salt) + 4 + 8;
    let align = before % 3;
    let tail_raw = salt + align;
    let fits = tail_raw <= *blocks.last().unwrap_or(&0);
    let split = raw.len() - if fits { tail_raw } else { 0 };
    let mut stream = Vec::with_capacity(raw.len() + 2 + 5 * blocks.len());
    stream.extend_from_slice(&[0x78, 0x01]);
    let mut at = 0;
    for (i, &len) in blocks.iter().enumerate() {
        stream.push(u8::from(i + 1 == blocks.len()));
        stream.extend_from_slice(&(len as u16).to_le_bytes());
        stream.extend_from_slice(&(!(len as u16)).to_le_bytes());
        stream.extend_from_slice(&raw[at..at + len]);
        at += len;
    }
    let adler = adler_update((1, 0), &raw[..split]);
    let (a, b) = adler_update(adler, &raw[split..]);
    stream.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let cut = stream.len() - 4 - (raw.len() - split);
    let mut file = Vec::with_capacity(stream.len() + 64);
    file.extend_from_slice(b"\x89PNG\r\n\x1a\n");
    let mut ihdr = [0u8; 13];
    ihdr[..4].copy_from_slice(&width.to_be_bytes());
    ihdr[4..8].copy_from_slice(&height.to_be_bytes());
    ihdr[8] = 8; // bit depth
    ihdr[9] = 2; // RGB
    chunk(&mut file, b"IHDR", &ihdr);
    chunk(&mut file, b"IDAT", &stream[..cut]);
    let from = file.len() + 8;
    chunk(&mut file, b"IDAT", &stream[cut..]);
    chunk(&mut file, b"IEND", &[]);
    let tail = fits.then(|| {
        debug_assert_eq!(from % 3, 0);
        MediaTail {
            from,
            template: file[from..].into(),
            patch: Patch::Png {
                at: align,
                len: salt,
                data: tail_raw,
                adler,
            },
        }
    });
    (file, tail)
}

/// A baseline JPEG of `pixels` with a restart marker after every MCU.
fn jpeg_encode(width: u32, height: u32, pixels: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut enc = jpeg_encoder::Encoder::new(&mut out, JPEG_QUALITY);
    enc.set_sampling_factor(jpeg_encoder::SamplingFactor::R_4_2_0);
    enc.set_restart_interval(1);
    enc.encode(
        pixels,
        width as u16,
        height as u16,
        jpeg_encoder::ColorType::Rgb,
    )
    .map_err(|e| format!("a {width}x{height} JPEG: {e}"))?;
    Ok(out)
}

/// The entropy-coded intervals of a JPEG with a restart marker after every MCU: each one's
/// start and end (where its marker, RSTn or the final EOI, starts).
fn intervals(jpeg: &[u8]) -> Vec<(usize, usize)> {
    let Some(sos) = jpeg.windows(2).position(|w| w == [0xff, 0xda]) else {
        return vec![];
    };
    let len = usize::from(u16::from_be_bytes([jpeg[sos + 2], jpeg[sos + 3]]));
    let mut start = sos + 2 + len;
    let mut out = vec![];
    let mut i = start;
    while i + 1 < jpeg.len() {
        if jpeg[i] == 0xff && matches!(jpeg[i + 1], 0xd0..=0xd7 | 0xd9) {
            out.push((start, i));
            start = i + 2;
            i += 2;
        } else {
            i += 1;
        }
    }
    out
}

/// A JPEG of `pixels` whose last MCUs carry the salt: flat gray blocks of one of 16 levels,
/// each encoded alone (a restart resets the DC prediction) and padded with fill bytes to
/// one length, so a request's salt only swaps them.
fn jpeg_file(
    width: u32,
    height: u32,
    pixels: &[u8],
) -> Result<(Vec<u8>, Option<MediaTail>), String> {
    let main = jpeg_encode(width, height, pixels)?;
    let spans = intervals(&main);
    // The variants: one MCU (16 x 16 at 4:2:0) per level, side by side, encoded alike.
    let side = 16usize;
    let mut flat = vec![0u8; JPEG_LEVELS * side * side * 3];
    for (i, px) in flat.chunks_mut(3).enumerate() {
        let level = ((i % (JPEG_LEVELS * side)) / side * 16 + 8) as u8;
        px.fill(level);
    }
    let aux = jpeg_encode((JPEG_LEVELS * side) as u32, side as u32, &flat)?;
    let aux_spans = intervals(&aux);
    // At least one MCU keeps its random pixels, or two images of one size would be alike:
    // an image of one MCU (16 x 16 or smaller) is not salted.
    let slots = JPEG_SALT_SLOTS.min(spans.len().saturating_sub(1));
    if aux_spans.len() != JPEG_LEVELS || slots == 0 {
        return Ok((main, None));
    }
    let n = aux_spans.iter().map(|(s, e)| e - s).max().unwrap_or(0);
    let mut variants = vec![0xffu8; JPEG_LEVELS * n];
    for (d, (s, e)) in aux_spans.iter().enumerate() {
        variants[d * n..d * n + (e - s)].copy_from_slice(&aux[*s..*e]);
    }
    let first = spans[spans.len() - slots].0;
    let mut file = main[..first].to_vec();
    for &(_, end) in &spans[spans.len() - slots..] {
        file.extend_from_slice(&variants[..n]);
        file.extend_from_slice(&main[end..end + 2]);
    }
    let from = first - first % 3;
    let tail = MediaTail {
        from,
        template: file[from..].into(),
        patch: Patch::Jpeg {
            at: first - from,
            slots,
            stride: n + 2,
            variants: variants.into(),
        },
    };
    Ok((file, Some(tail)))
}

#[cfg(test)]
#[path = "media_tests.rs"]
mod tests;
