//! Part of the runtime underneath client and simulator: the one way files are written. Every
//! file a run or a report writes goes to a temporary name in its own folder (`.NAME.tmp.PID`) and is
//! renamed over `NAME` only once it is complete and synced, so a reader — or a crash — sees
//! either no file, the old one, or the whole new one, never half of it. Files that grow
//! during the run (`requests.jsonl`, the `.hlog` interval logs) stay under their temporary
//! name until the run ends (interrupted runs included); a process killed before that leaves
//! the temporary file behind, holding whole lines up to its last flush. Never prints.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Temporary names start with this dot and contain this infix, so `ls` hides them and a
/// test can find any left behind.
pub const TMP_INFIX: &str = ".tmp.";

/// `dir/.NAME.tmp.PID` for `dir/NAME`: same folder (so the rename is atomic), and unique per
/// process (two runs writing the same folder do not share a temporary file).
pub fn tmp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}{TMP_INFIX}{}", std::process::id()))
}

/// A file being written under its temporary name; `commit` renames it into place. Dropped
/// without `commit` (a panic, an error mid-run) it stays under its temporary name: what it
/// holds is evidence, not garbage.
pub struct PendingFile {
    tmp: PathBuf,
    path: PathBuf,
    out: Option<BufWriter<File>>,
}

impl PendingFile {
    /// Creates (truncates) the temporary file for `path`, buffered by `buffer_bytes`.
    pub fn create(path: &Path, buffer_bytes: usize) -> io::Result<Self> {
        let tmp = tmp_path(path);
        let file = File::create(&tmp)?;
        Ok(PendingFile {
            tmp,
            path: path.to_path_buf(),
            out: Some(BufWriter::with_capacity(buffer_bytes, file)),
        })
    }

    pub fn tmp(&self) -> &Path {
        &self.tmp
    }

    /// The buffered writer (always there until `commit`).
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.out
            .as_mut()
            .expect("a pending file is open until commit")
    }

    /// Flushes, syncs the data and renames the file over its final name.
    pub fn commit(mut self) -> io::Result<()> {
        let out = self.out.take().expect("commit runs once");
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_data()?;
        drop(file);
        std::fs::rename(&self.tmp, &self.path)?;
        sync_dir(&self.path);
        Ok(())
    }
}

/// Writes `bytes` to `path` through a temporary file: whole or not at all.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = PendingFile::create(path, 1 << 16)?;
    let tmp = f.tmp().to_path_buf();
    let written = f.writer().write_all(bytes).and_then(|()| f.commit());
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Writes `value` as pretty JSON (and a final newline) to `dir/name` the same way, creating
/// `dir` if needed: `summary.json`, `calibrate.json`, `sweep.json`, `run.json`, ….
pub fn write_json(dir: &Path, name: &str, value: &impl serde::Serialize) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut text = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    text.push(b'\n');
    write_atomic(&dir.join(name), &text)
}

/// Makes a rename durable; a folder that cannot be synced is not an error.
fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent().and_then(|d| File::open(d).ok()) {
        let _ = dir.sync_all();
    }
}

/// Temporary files left in `dir` (by a killed process): what a test looks for.
#[cfg(test)]
pub fn leftovers(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy())
                .is_some_and(|n| n.starts_with('.') && n.contains(TMP_INFIX))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("ringbench-outfile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_pending_file_appears_only_when_committed() {
        let d = dir("commit");
        let path = d.join("a.jsonl");
        let mut f = PendingFile::create(&path, 16).unwrap();
        f.writer().write_all(b"{\"x\":1}\n").unwrap();
        f.writer().flush().unwrap();
        assert!(!path.exists());
        assert_eq!(leftovers(&d), vec![f.tmp().to_path_buf()]);
        f.commit().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"x\":1}\n");
        assert!(leftovers(&d).is_empty());
    }

    #[test]
    fn a_dropped_pending_file_stays_temporary_and_atomic_writes_replace() {
        let d = dir("drop");
        let path = d.join("b.json");
        drop(PendingFile::create(&path, 16).unwrap());
        assert_eq!(leftovers(&d).len(), 1);
        assert!(!path.exists());
        std::fs::remove_file(&leftovers(&d)[0]).unwrap();
        write_atomic(&path, b"old").unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert!(leftovers(&d).is_empty());
    }
}
