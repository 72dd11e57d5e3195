//! Before the run (plan → **dataset** → workload → catalog …): the images a dataset item
//! sends, made into what a chat request's `image_url` part carries — a `data:` URL of the
//! image's bytes (its type read from their first bytes: PNG, JPEG, WebP, GIF), or an
//! `http(s)` URL passed through unchanged. Local files are read here, once, before the run;
//! nothing is fetched from the network and nothing here runs on the hot path.

use base64::Engine;
use std::path::Path;
use std::sync::Arc;

/// One image as a request carries it: a `data:` URL or an `http(s)` URL. Shared, so items
/// that repeat (a dataset smaller than the catalog) hold it once.
pub type ImageUrl = Arc<str>;

/// The image type of `bytes`, from their magic numbers: PNG, JPEG, WebP or GIF.
pub fn mime(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n', ..] => Some("image/png"),
        [0xff, 0xd8, 0xff, ..] => Some("image/jpeg"),
        [b'G', b'I', b'F', b'8', b'7' | b'9', b'a', ..] => Some("image/gif"),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some("image/webp"),
        _ => None,
    }
}

/// What an image that is none of the four types is told: the fix.
pub const NOT_AN_IMAGE: &str =
    "not a PNG, JPEG, WebP or GIF image (its first bytes say none of these)";

/// `bytes` as a `data:` URL, `data:image/png;base64,...`; `Err` when they are no image.
pub fn data_url(bytes: &[u8]) -> Result<ImageUrl, &'static str> {
    let mime = mime(bytes).ok_or(NOT_AN_IMAGE)?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut url = String::with_capacity(32 + bytes.len().div_ceil(3) * 4);
    url.push_str("data:");
    url.push_str(mime);
    url.push_str(";base64,");
    b64.encode_string(bytes, &mut url);
    Ok(url.into())
}

/// An image named by a dataset item: an `http(s)` URL (or a `data:` URL) passed through as
/// it is, else a local file (relative to `base`, the dataset file's folder) read and made a
/// `data:` URL. The error says what is wrong with it.
pub fn reference(name: &str, base: &Path) -> Result<ImageUrl, String> {
    let lower = name.get(..8).unwrap_or(name).to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("data:") {
        return Ok(name.into());
    }
    if name.is_empty() {
        return Err("an empty image name (give a file or an http(s) URL)".into());
    }
    let path = base.join(name);
    let bytes = std::fs::read(&path).map_err(|e| format!("image {}: {e}", path.display()))?;
    data_url(&bytes).map_err(|why| format!("image {}: {why}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest PNG header: enough for the magic.
    pub(crate) const PNG_HEAD: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn the_type_is_read_from_the_magic_at_every_cut() {
        let cases: [(&[u8], &str); 5] = [
            (PNG_HEAD, "image/png"),
            (b"\xff\xd8\xff\xe0\0\x10JFIF", "image/jpeg"),
            (b"GIF89a\x01\0\x01\0", "image/gif"),
            (b"GIF87a\x01\0\x01\0", "image/gif"),
            (b"RIFF\x24\0\0\0WEBPVP8 ", "image/webp"),
        ];
        for (bytes, want) in cases {
            assert_eq!(mime(bytes), Some(want));
            let magic = if want == "image/webp" { 12 } else { 3 };
            for cut in 0..magic.min(bytes.len()) {
                assert_eq!(mime(&bytes[..cut]), None, "{want} cut at {cut}");
            }
        }
        assert_eq!(mime(b"RIFF\x24\0\0\0WAVEfmt "), None, "a WAV file");
        assert_eq!(mime(b"<html>"), None);
        let url = data_url(PNG_HEAD).unwrap();
        assert!(
            url.starts_with("data:image/png;base64,iVBORw0KGgo"),
            "{url}"
        );
        assert_eq!(data_url(b"plain text"), Err(NOT_AN_IMAGE));
    }

    #[test]
    fn urls_pass_through_and_files_are_read() {
        let dir = std::env::temp_dir().join(format!("ringbench-img-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.png"), PNG_HEAD).unwrap();
        std::fs::write(dir.join("a.txt"), "hello").unwrap();
        for url in [
            "https://x.test/a.png",
            "HTTP://x.test/b",
            "data:image/png;base64,AA",
        ] {
            assert_eq!(&*reference(url, &dir).unwrap(), url);
        }
        assert!(reference("a.png", &dir)
            .unwrap()
            .starts_with("data:image/png;base64,"));
        let e = reference("a.txt", &dir).unwrap_err();
        assert!(e.contains("a.txt") && e.contains("not a PNG"), "{e}");
        let e = reference("missing.png", &dir).unwrap_err();
        assert!(e.contains("missing.png"), "{e}");
        assert!(reference("", &dir).is_err());
    }
}
