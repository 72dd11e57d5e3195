//! `media`'s encoders and salt, checked by decoding: the PNG with the `png` crate, the JPEG
//! with `jpeg-decoder`, the WAV by its header; a salted file is the file as built with only
//! its salt's pixels (samples) changed, and `MediaTail::write`'s base64 is the salted file's.

use super::*;
use rand::SeedableRng;

fn rng(seed: u64) -> rand::rngs::Xoshiro256PlusPlus {
    rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed)
}

fn decode_png(file: &[u8]) -> (u32, u32, Vec<u8>) {
    let dec = png::Decoder::new(std::io::Cursor::new(file));
    let mut reader = dec.read_info().expect("a PNG header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("the PNG decodes");
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

fn decode_jpeg(file: &[u8]) -> (u16, u16, Vec<u8>) {
    let mut dec = jpeg_decoder::Decoder::new(std::io::Cursor::new(file));
    let px = dec.decode().expect("the JPEG decodes");
    let info = dec.info().unwrap();
    (info.width, info.height, px)
}

/// The file behind a `Media`'s data URL.
fn file_of(m: &Media) -> Vec<u8> {
    B64.decode(m.b64()).unwrap()
}

/// What a request carries when its salt is `value`: the base64 as built with the tail's
/// base64 written over it, decoded.
fn written(m: &Media, value: u64) -> Vec<u8> {
    let t = m.tail.as_ref().expect("salted");
    let mut b64 = m.b64().as_bytes().to_vec();
    t.write(value, &mut b64[t.b64_at()..]);
    B64.decode(&b64).unwrap()
}

#[test]
fn the_checksums_are_the_standard_ones() {
    assert_eq!(crc32(&[b"123456789"]), 0xcbf4_3926);
    assert_eq!(crc32(&[b"1234", b"56789"]), 0xcbf4_3926);
    let (a, b) = adler_update((1, 0), b"Wikipedia");
    assert_eq!((b << 16) | a, 0x11e6_0398);
    let big = vec![0xffu8; 100_000];
    let split = adler_update(adler_update((1, 0), &big[..7_000]), &big[7_000..]);
    assert_eq!(split, adler_update((1, 0), &big));
}

#[test]
fn a_png_decodes_to_its_pixels_and_a_salt_changes_only_its_last_bytes() {
    // One block, several blocks (300 x 300 x 3 > 65,535), a last block shorter than 16
    // bytes before rebalancing, and the smallest sizes.
    for (w, h) in [
        (1, 1),
        (2, 3),
        (4, 4),
        (37, 13),
        (300, 300),
        (21845, 1),
        (64, 1024),
    ] {
        let mut px = vec![0u8; w as usize * h as usize * 3];
        rng(u64::from(w * h)).fill_bytes(&mut px);
        let (file, tail) = png(w, h, &px);
        assert_eq!(decode_png(&file), (w, h, px.clone()), "{w}x{h}");
        let Some(tail) = tail else {
            assert!(w * h < 4, "{w}x{h} has room for a salt");
            continue;
        };
        assert_eq!(tail.from % 3, 0);
        let salt = SALT_BYTES.min(3 * w as usize);
        for v in [0u64, 1, 0x0102_0304_0506_0708, u64::MAX] {
            let salted = tail.salted_file(&file, v);
            assert_eq!(salted.len(), file.len());
            let (_, _, got) = decode_png(&salted);
            let n = px.len();
            assert_eq!(
                got[..n - salt],
                px[..n - salt],
                "{w}x{h} {v}: only the salt changes"
            );
            assert_eq!(got[n - salt..], v.to_le_bytes()[..salt], "{w}x{h} {v}");
        }
    }
}

#[test]
fn a_written_tail_is_the_salted_files_base64() {
    let mut r = rng(7);
    let png = image(64, 48, false, true, &mut r).unwrap();
    let jpg = image(100, 70, true, true, &mut r).unwrap();
    let wav = audio(250, 16_000, true, &mut r);
    for m in [&png, &jpg, &wav] {
        let t = m.tail.as_ref().unwrap();
        let file = file_of(m);
        assert_eq!(m.file_bytes, file.len());
        for v in [3u64, 99, 1 << 41] {
            assert_eq!(written(m, v), t.salted_file(&file, v), "{}", m.mime());
        }
        assert_ne!(written(m, 1), written(m, 2), "{}", m.mime());
        assert_eq!(written(m, 5), written(m, 5));
    }
    assert_eq!(
        (png.mime(), jpg.mime(), wav.mime()),
        ("image/png", "image/jpeg", "audio/wav")
    );
    assert!(png.url.starts_with("data:image/png;base64,iVBORw0KGgo"));
    let plain = image(64, 48, false, false, &mut r).unwrap();
    assert!(plain.tail.is_none(), "--no-media-salt: nothing rewritten");
}

#[test]
fn a_jpeg_decodes_and_its_salt_makes_its_pixels_differ() {
    let mut r = rng(11);
    for (w, h) in [(1024, 1024), (100, 70)] {
        let m = image(w, h, true, true, &mut r).unwrap();
        let file = file_of(&m);
        let (dw, dh, base) = decode_jpeg(&file);
        assert_eq!((u32::from(dw), u32::from(dh)), (w, h));
        let t = m.tail.as_ref().unwrap();
        let mut seen = std::collections::HashSet::new();
        for v in [0u64, 1, 2, 15, 16, 0xff_ffff_ffff, 12345] {
            let (_, _, px) = decode_jpeg(&written(&m, v));
            assert_eq!(px.len(), base.len());
            assert!(seen.insert(px), "{w}x{h}: salt {v} decodes like another");
        }
        assert!(t.b64_len() < 200, "{w}x{h}: a short tail");
    }
    // Two MCUs: one slot, 16 values, the other MCU random: two such images differ.
    let m = image(17, 9, true, true, &mut r).unwrap();
    let all: std::collections::HashSet<Vec<u8>> =
        (0..16).map(|v| decode_jpeg(&written(&m, v)).2).collect();
    assert_eq!(all.len(), 16);
    let other = image(17, 9, true, true, &mut r).unwrap();
    assert_ne!(written(&m, 3), written(&other, 3));
    // One MCU: not salted (it would be all salt).
    assert!(image(16, 16, true, true, &mut r).unwrap().tail.is_none());
}

#[test]
fn a_jpegs_salt_is_its_last_mcus_as_flat_grays() {
    let mut r = rng(5);
    let m = image(160, 32, true, true, &mut r).unwrap();
    let (w, _, px) = decode_jpeg(&written(&m, 0x0f));
    // 10 MCUs of 16 x 16 a row, two rows: the salt is the whole second row, digit 0 of
    // value 0x0f (15) in the first of them.
    let at = |x: usize, y: usize| px[(y * usize::from(w) + x) * 3];
    let level = |d: u8| 16 * d + 8;
    assert!(at(8, 24).abs_diff(level(15)) <= 2, "{}", at(8, 24));
    assert!(at(24, 24).abs_diff(level(0)) <= 2, "{}", at(24, 24));
}

#[test]
fn a_wav_is_16_bit_mono_pcm_of_its_length() {
    let m = audio(1500, 16_000, true, &mut rng(1));
    let file = file_of(&m);
    assert_eq!((&file[..4], &file[8..16]), (&b"RIFF"[..], &b"WAVEfmt "[..]));
    assert_eq!(u32::from_le_bytes(file[24..28].try_into().unwrap()), 16_000);
    assert_eq!(u16::from_le_bytes([file[34], file[35]]), 16);
    assert_eq!(u32::from_le_bytes(file[40..44].try_into().unwrap()), 48_000);
    assert_eq!(file.len(), 44 + 48_000);
    assert_eq!(m.audio_ms, Some(1500));
    let salted = written(&m, 0xdead_beef);
    assert_eq!(salted[..file.len() - 8], file[..file.len() - 8]);
    assert_eq!(salted[file.len() - 8..], 0xdead_beefu64.to_le_bytes());
}
