//! A component file's fingerprint: its identity and the state of its bytes, as cheap to
//! read as a `stat` and two small reads, against which a record of what was learnt
//! from the file stands for its bytes.

use std::fs::File;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Bytes sampled at each end of the file.
const SAMPLE: u64 = 4096;

/// A file's identity and the state of its bytes, as cheap to read as a `stat`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(in crate::engine::wasm) struct Fingerprint {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    sample: String,
}

/// A component file opened by whoever listed its directory, with what a `statx` of the
/// open file (not of its name: what is sampled is what was described) said of it, so
/// that its fingerprint costs only the two reads.
#[derive(Debug)]
pub(crate) struct OpenComponent {
    file: File,
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl OpenComponent {
    /// `file`, described by `stat` (a `statx` of the open file with at least the basic
    /// statistics); `None` if `stat` lacks one the fingerprint needs.
    pub(crate) fn new(file: File, stat: &rustix::fs::Statx) -> Option<Self> {
        use rustix::fs::StatxFlags;
        let needed = StatxFlags::INO | StatxFlags::SIZE | StatxFlags::MTIME | StatxFlags::CTIME;
        let time = |t: &rustix::fs::StatxTimestamp| nanos(t.tv_sec, i64::from(t.tv_nsec));
        StatxFlags::from_bits_retain(stat.stx_mask)
            .contains(needed)
            .then(|| Self {
                file,
                dev: rustix::fs::makedev(stat.stx_dev_major, stat.stx_dev_minor),
                ino: stat.stx_ino,
                len: stat.stx_size,
                mtime_ns: time(&stat.stx_mtime),
                ctime_ns: time(&stat.stx_ctime),
            })
    }
}

fn nanos(secs: i64, nsec: i64) -> i128 {
    i128::from(secs) * 1_000_000_000 + i128::from(nsec)
}

impl Fingerprint {
    /// The fingerprint of the file at `path` as it is now.
    pub(in crate::engine::wasm) fn of(path: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::MetadataExt;
        let file = File::open(path)?;
        let meta = file.metadata()?;
        let sample = sample(&file, meta.len())?;
        Ok(Self {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime_ns: nanos(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: nanos(meta.ctime(), meta.ctime_nsec()),
            sample,
        })
    }

    /// The fingerprint of a component its directory's listing opened: the same as
    /// [`Fingerprint::of`] its path, without opening and describing it again.
    pub(in crate::engine::wasm) fn of_open(open: &OpenComponent) -> std::io::Result<Self> {
        Ok(Self {
            dev: open.dev,
            ino: open.ino,
            len: open.len,
            mtime_ns: open.mtime_ns,
            ctime_ns: open.ctime_ns,
            sample: sample(&open.file, open.len)?,
        })
    }

    /// Whether the file changed so recently that a write in the same clock tick could
    /// still leave this fingerprint unchanged.
    pub(super) fn unsettled(&self, settle: std::time::Duration) -> bool {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        let changed = self.ctime_ns.max(self.mtime_ns);
        now - changed < settle.as_nanos() as i128
    }
}

/// The CRC-32 of each end of `file`, `len` bytes long: a change of up to 32 bits in a
/// row is always caught, any other all but once in four billion times. (A SHA-256 of the
/// two samples was among the larger costs of a profiled start with 1,000 skills.)
fn sample(file: &File, len: u64) -> std::io::Result<String> {
    use std::fmt::Write as _;
    let mut buf = [0; SAMPLE as usize];
    let mut sample = String::with_capacity(16);
    let head = read_up_to(file, &mut buf, 0)?;
    let _ = write!(sample, "{:08x}", crc32fast::hash(&buf[..head]));
    if len > SAMPLE {
        let at = len.saturating_sub(SAMPLE).max(SAMPLE);
        let tail = read_up_to(file, &mut buf, at)?;
        let _ = write!(sample, "{:08x}", crc32fast::hash(&buf[..tail]));
    }
    Ok(sample)
}

/// Reads into `buf` from offset `at` until it is full or the file ends (a read at an
/// offset: no seek in between); how many bytes it read.
fn read_up_to(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut filled = 0;
    while filled < buf.len() {
        match file.read_at(&mut buf[filled..], at + filled as u64)? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}
