//! The on-disk code cache: machine code of JIT kernels kept across processes, so that a
//! program's second run loads its kernels instead of compiling them (as the persistent caches
//! of jax, TorchInductor and Triton do).
//!
//! **What is cached.** Cranelift's own incremental-compilation artifacts
//! (`cranelift_codegen::incremental_cache`): an entry is keyed by the SHA-256 of the function's
//! *stencil* (its whole body, with external names abstracted) together with the ISA's name,
//! triple, shared flags and CPU feature flags, and carries Cranelift's version marker; its
//! value is the compiled code with its relocations, re-applied to the names of the function
//! being compiled. So a hit is the code Cranelift would produce for this very function on this
//! CPU with this Cranelift, wherever the routines it calls are loaded.
//!
//! **Where.** `$TFN_CACHE_DIR/code`, else `$XDG_CACHE_HOME/tfn/code`, else
//! `~/.cache/tfn/code` (the roofline's cache directory, [`cache_dir`]). `TFN_CODE_CACHE=off`
//! disables it; `TFN_CODE_CACHE=check` compiles every kernel anyway and fails the compile of a
//! kernel whose cached code differs (a Cranelift or cache bug, never a wrong call). Any other
//! value is reported and ignored.
//!
//! **Files.** One per entry, named by the key in hex, written to a temporary name and renamed
//! (readers never see part of one). The payload follows a header of a magic word, its length
//! and its FNV-1a hash: a truncated, corrupt or foreign file is a miss, counted, and rewritten.
//! A directory that cannot be created or written means no cache, never an error; so does one
//! that others can write or that belongs to another user (its code would be theirs to
//! choose): the cache makes its directory private (`0700`) and checks it once. The first
//! process to write more than [`MAX_ENTRIES`] entries removes the older half (by modification
//! time), so the directory stays within a few tens of megabytes.

use cranelift::codegen::incremental_cache::CacheKvStore;
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// What starts every entry file (the format's version is its last byte).
const MAGIC: &[u8; 8] = b"tfn-kc\0\x01";

/// Entries kept before the older half is removed.
pub const MAX_ENTRIES: usize = 8192;

/// The largest cache file tfn reads (an entry of a function's kernels is tens of KB).
pub const MAX_CACHE_FILE_BYTES: u64 = 256 << 20;

/// A cache file's bytes: `None` unless `path` is a regular file (checked before opening, so a
/// FIFO does not block and `/dev/zero` is not read forever) of at most `max_bytes`. A cache
/// is advisory: what is not readable is a miss.
pub fn read_cache_file(path: &Path, max_bytes: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > max_bytes {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // It may have grown since: never read past the limit.
    std::fs::File::open(path).ok()?.take(max_bytes + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= max_bytes).then_some(bytes)
}

/// Where tfn keeps what it caches across processes: `$TFN_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/tfn`, else `~/.cache/tfn` (`None` without any of them).
pub fn cache_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("TFN_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("tfn")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("tfn")))
}

/// How the JIT uses the code cache (`TFN_CODE_CACHE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Load cached kernels and store new ones (the default).
    On,
    /// Neither load nor store.
    Off,
    /// Compile every kernel and compare it with its entry, if any (tests).
    Check,
}

impl Mode {
    /// The mode `TFN_CODE_CACHE` asks for (`on`, `off`/`0`, `check`; unset: on). An unknown
    /// value is reported once on stderr and means on.
    pub fn from_env() -> Mode {
        static MODE: OnceLock<Mode> = OnceLock::new();
        *MODE.get_or_init(|| match std::env::var("TFN_CODE_CACHE").as_deref() {
            Err(_) | Ok("") | Ok("on") | Ok("1") => Mode::On,
            Ok("off") | Ok("0") => Mode::Off,
            Ok("check") => Mode::Check,
            Ok(other) => {
                tfn_ir::tfn_log!(
                    "tfn: TFN_CODE_CACHE={other:?} is not on, off or check: ignored (on)"
                );
                Mode::On
            }
        })
    }
}

/// Kernels this process has loaded from its code cache so far (for logs).
pub fn loaded() -> usize {
    DiskCache::global().map_or(0, |c| c.stats.hits.load(Ordering::Relaxed))
}

/// Counters of a cache, for logs and tests.
#[derive(Debug, Default)]
pub struct Stats {
    /// Kernels loaded instead of compiled.
    pub hits: AtomicUsize,
    /// Kernels compiled and stored.
    pub stored: AtomicUsize,
    /// Entries that were unreadable (truncated, corrupt, from another format) or whose
    /// store failed.
    pub bad: AtomicUsize,
}

/// An on-disk cache directory.
#[derive(Debug)]
pub struct DiskCache {
    dir: PathBuf,
    pub stats: Stats,
    /// Temporary files written by this process (their names must not collide).
    temps: AtomicU64,
    /// Whether this process has checked the number of entries yet.
    pruned: OnceLock<()>,
    /// Whether the directory exists (made if missing) and only this user can write it.
    usable: OnceLock<bool>,
}

impl DiskCache {
    /// The cache the environment asks for: `None` when `TFN_CODE_CACHE` is off or no cache
    /// directory is known.
    pub fn from_env() -> Option<DiskCache> {
        if Mode::from_env() == Mode::Off {
            return None;
        }
        cache_dir().map(|d| DiskCache::at(d.join("code")))
    }

    /// A cache in `dir` (created when the first entry is stored).
    pub fn at(dir: PathBuf) -> DiskCache {
        DiskCache {
            dir,
            stats: Stats::default(),
            temps: AtomicU64::new(0),
            pruned: OnceLock::new(),
            usable: OnceLock::new(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &[u8]) -> PathBuf {
        let name: String = key.iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(name)
    }

    /// Whether the cache may be used: its directory exists (it is made, private, if missing)
    /// and no one but this user can write it — machine code from a directory others can write
    /// would be theirs to choose. Decided once; a refusal is reported once on stderr.
    pub fn usable(&self) -> bool {
        *self.usable.get_or_init(|| match private_dir(&self.dir) {
            Ok(()) => true,
            Err(why) => {
                tfn_ir::tfn_log!("tfn: not using the code cache {}: {why}", self.dir.display());
                false
            }
        })
    }

    /// The payload of the entry `key`, if it exists and is whole.
    pub fn load(&self, key: &[u8]) -> Option<Vec<u8>> {
        if !self.usable() {
            return None;
        }
        let path = self.path(key);
        let bytes = read_cache_file(&path, MAX_CACHE_FILE_BYTES);
        let Some(bytes) = bytes else {
            if std::fs::symlink_metadata(&path).is_ok() {
                self.stats.bad.fetch_add(1, Ordering::Relaxed); // there, but not a readable entry
            }
            return None;
        };
        let payload = unwrap_entry(&bytes);
        if payload.is_none() {
            self.stats.bad.fetch_add(1, Ordering::Relaxed);
        }
        payload.map(<[u8]>::to_vec)
    }

    /// Stores `payload` as the entry `key` (atomically; a failure only counts).
    pub fn store(&self, key: &[u8], payload: &[u8]) {
        if self.write(key, payload).is_err() {
            self.stats.bad.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.stats.stored.fetch_add(1, Ordering::Relaxed);
        self.pruned.get_or_init(|| self.prune());
    }

    fn write(&self, key: &[u8], payload: &[u8]) -> std::io::Result<()> {
        if !self.usable() {
            return Err(std::io::Error::other("the cache directory is not usable"));
        }
        let n = self.temps.fetch_add(1, Ordering::Relaxed);
        let temp = self.dir.join(format!(".tmp-{}-{n}", std::process::id()));
        let mut entry = Vec::with_capacity(payload.len() + 24);
        entry.extend_from_slice(MAGIC);
        entry.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        entry.extend_from_slice(&crate::aot::fnv1a(payload).to_le_bytes());
        entry.extend_from_slice(payload);
        let written =
            std::fs::write(&temp, &entry).and_then(|()| std::fs::rename(&temp, self.path(key)));
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written
    }

    /// Removes the older half of the entries when there are more than [`MAX_ENTRIES`].
    fn prune(&self) {
        let Ok(dir) = std::fs::read_dir(&self.dir) else { return };
        let mut entries: Vec<(std::time::SystemTime, PathBuf)> = dir
            .filter_map(Result::ok)
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        if entries.len() <= MAX_ENTRIES {
            return;
        }
        entries.sort();
        for (_, path) in &entries[..entries.len() / 2] {
            let _ = std::fs::remove_file(path);
        }
    }

    /// The process's cache, as the environment asks (see [`DiskCache::from_env`]).
    pub fn global() -> Option<&'static DiskCache> {
        static GLOBAL: OnceLock<Option<DiskCache>> = OnceLock::new();
        GLOBAL.get_or_init(DiskCache::from_env).as_ref()
    }

    /// A [`CacheKvStore`] on this cache for one compile.
    pub(crate) fn store_for(&self) -> Store<'_> {
        Store(self)
    }
}

/// Makes `dir` if missing (private: `0700` on Unix) and checks that it is a directory only this
/// user can write.
fn private_dir(dir: &Path) -> Result<(), String> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|e| format!("cannot create it ({e})"))?;
    let meta = std::fs::metadata(dir).map_err(|e| format!("cannot read it ({e})"))?;
    if !meta.is_dir() {
        return Err("not a directory".into());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.mode() & 0o022 != 0 {
            return Err(format!("others can write it (mode {:o})", meta.mode() & 0o777));
        }
        // The owner of `/proc/self` is this process's user (Linux; elsewhere not checked).
        if let Ok(me) = std::fs::metadata("/proc/self") {
            if meta.uid() != me.uid() {
                return Err(format!("it belongs to user {}, not {}", meta.uid(), me.uid()));
            }
        }
    }
    Ok(())
}

/// The payload of an entry file, if its header says it is whole.
fn unwrap_entry(bytes: &[u8]) -> Option<&[u8]> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let (len, rest) = rest.split_first_chunk::<8>()?;
    let (hash, payload) = rest.split_first_chunk::<8>()?;
    let whole = u64::from_le_bytes(*len) == payload.len() as u64
        && u64::from_le_bytes(*hash) == crate::aot::fnv1a(payload);
    whole.then_some(payload)
}

/// Cranelift's view of a [`DiskCache`].
pub(crate) struct Store<'a>(&'a DiskCache);

impl CacheKvStore for Store<'_> {
    fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        self.0.load(key).map(Cow::Owned)
    }

    fn insert(&mut self, key: &[u8], val: Vec<u8>) {
        self.0.store(key, &val);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("tfn-code-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn entries_round_trip_and_damaged_ones_are_misses() {
        let dir = temp_dir("entries");
        let cache = DiskCache::at(dir.clone());
        assert_eq!(cache.load(b"k1"), None, "nothing yet");
        cache.store(b"k1", b"machine code");
        assert_eq!(cache.load(b"k1").as_deref(), Some(&b"machine code"[..]));
        // Truncated, flipped, foreign and empty files are misses, counted.
        let path = cache.path(b"k1");
        let whole = std::fs::read(&path).unwrap();
        let mut flipped = whole.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let damaged: [&[u8]; 4] = [&whole[..whole.len() - 1], &flipped, b"not an entry", b""];
        for (i, bytes) in damaged.iter().enumerate() {
            std::fs::write(&path, bytes).unwrap();
            assert_eq!(cache.load(b"k1"), None, "damaged file {i}");
        }
        assert_eq!(cache.stats.bad.load(Ordering::Relaxed), 4);
        // No temporary file is left behind.
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec![hex(b"k1")]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_entry_that_is_not_a_regular_file_is_a_miss_not_a_wait() {
        let dir = temp_dir("special");
        let cache = DiskCache::at(dir.clone());
        cache.store(b"k1", b"machine code");
        let path = cache.path(b"k1");
        std::fs::remove_file(&path).unwrap();
        // A FIFO would block the open; /dev/zero would be read until memory runs out.
        let made = std::process::Command::new("mkfifo").arg(&path).status();
        if made.is_ok_and(|s| s.success()) {
            assert_eq!(cache.load(b"k1"), None, "a FIFO");
            std::fs::remove_file(&path).unwrap();
        }
        if Path::new("/dev/zero").exists() {
            std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
            assert_eq!(cache.load(b"k1"), None, "a device");
            assert_eq!(read_cache_file(&path, 1 << 20), None);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn hex(key: &[u8]) -> String {
        key.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn an_unwritable_directory_means_no_cache() {
        let file = temp_dir("file");
        std::fs::write(&file, b"a file, not a directory").unwrap();
        let cache = DiskCache::at(file.join("code"));
        cache.store(b"k", b"v");
        assert_eq!(cache.load(b"k"), None);
        assert_eq!(cache.stats.bad.load(Ordering::Relaxed), 1);
        assert!(!cache.usable());
        let _ = std::fs::remove_file(&file);
    }

    /// A directory others can write is not used (they could choose the code loaded from it);
    /// one made by the cache is private.
    #[cfg(unix)]
    #[test]
    fn a_directory_others_can_write_is_not_used_and_a_new_one_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir("shared");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let cache = DiskCache::at(dir.clone());
        cache.store(b"k", b"v");
        assert!(!cache.usable());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "nothing written");
        assert_eq!(cache.load(b"k"), None);
        let fresh = DiskCache::at(dir.join("made"));
        fresh.store(b"k", b"v");
        let mode = std::fs::metadata(dir.join("made")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        assert_eq!(fresh.load(b"k").as_deref(), Some(&b"v"[..]));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_older_half_is_pruned_beyond_the_limit() {
        let dir = temp_dir("prune");
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..MAX_ENTRIES + 2 {
            std::fs::write(dir.join(format!("{i:08}")), b"x").unwrap();
        }
        let cache = DiskCache::at(dir.clone());
        cache.store(b"new", b"v");
        let left = std::fs::read_dir(&dir).unwrap().count();
        assert!(left <= MAX_ENTRIES / 2 + 3, "{left} entries left");
        assert!(cache.load(b"new").is_some(), "the newest entry is kept");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
