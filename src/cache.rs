//! The specialization cache: each kernel compiled once per source text, entry, argument types
//! and compile options (architecture, optimization level...), however many threads ask for
//! it at once, with an opt-in on-disk cache that outlives the process and can be shared by
//! the processes of one user.
//!
//! In memory the key holds the source text itself, so it is exact. On disk an entry is a file
//! named by the SHA-256 of a stable description of the key: the build identity (a hash of the
//! compiler's sources, `Cargo.lock` and LLVM's version, computed by `build.rs`), the identity
//! of the libdevice linked, the file name (which `lineinfo` writes into the PTX), the
//! source's SHA-256, the entry, the argument types and every compile option. The entry holds
//! that description beside the [`CompiledKernel`].
//!
//! # Trust model
//!
//! Reading an entry means running its PTX with the reader's rights, so only entries written
//! by someone the reader trusts are loaded:
//!
//! - the directory is created `0700`, and [`KernelCache::with_disk`] refuses (with a
//!   [`DiskCacheError`]) a directory that is not owned by the user or that the group or the
//!   world can write, unless the embedder opts in with [`DiskTrust::Shared`];
//! - the directory holds a per-user secret, [`MAC_KEY_FILE`]: 32 random bytes, created
//!   `0600` (`0640` when shared) and refused when anyone but the owner can read it (in
//!   private mode). Every entry carries an HMAC-SHA-256 under that key over its file name and
//!   contents, so an entry that was tampered with, truncated, swapped with another's, or
//!   planted by someone without the key is not loaded: it is counted in
//!   [`CacheStats::disk_ignored`], recompiled and rewritten;
//! - entries are opened with `O_NOFOLLOW|O_NONBLOCK` and read only when they are regular
//!   files of at most [`MAX_ENTRY_BYTES`], so a symbolic link (to `/dev/zero`, say), a FIFO or
//!   a huge sparse file is ignored at once instead of hanging or exhausting memory;
//! - entries are written to a temporary file created with `O_EXCL` under an unpredictable
//!   name (the `tempfile` crate), flushed to disk (`fsync`) and then renamed, so a reader
//!   never sees half a file and a planted symbolic link is never written through.
//!
//! - processes that share the directory compile each key once: a process that misses takes
//!   the entry's lock file (`.lock-<entry>`, an advisory `flock`), and those that find it
//!   held wait, then read the entry the holder wrote ([`CacheStats::disk_waits`]). The system
//!   drops a lock when its process dies, so a rank killed mid-compile blocks no one, and
//!   since entries appear only by rename it leaves nothing half-written; a holder that is
//!   alive but stuck is waited for at most five minutes.
//!
//! With [`DiskTrust::Shared`] everyone who can read the key (the group that shares the
//! directory) is trusted to write entries. Nothing here defends against someone who can
//! already write as the user.
//!
//! Compilation goes through the public [`Module`] API only.

use crate::kernel::CompiledKernel;
use crate::types::Type;
use crate::{CompileOptions, Error, Module};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// The compiler's version, part of every on-disk key.
pub const COMPILER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The build identity, part of every on-disk key: the SHA-256 of the compiler's sources,
/// `Cargo.lock` and LLVM's version, computed by `build.rs`. Any change to code generation
/// changes it.
pub const BUILD_ID: &str = env!("PYDEVICE_BUILD_ID");

/// The largest entry file read; larger files are ignored without being read.
pub const MAX_ENTRY_BYTES: u64 = 64 << 20;

/// The name of the per-user MAC key file in the cache directory.
pub const MAC_KEY_FILE: &str = "mac-key";

const ENTRY_MAGIC: &str = "pydevice-cache-v2";

type HmacSha256 = Hmac<Sha256>;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What identifies a compiled specialization.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CacheKey {
    name: Arc<str>,
    source: Arc<str>,
    entry: String,
    args: Vec<Type>,
    options: CompileOptions,
}

impl CacheKey {
    /// The key of `entry` of `source` (a file called `name`) specialized for `args` and
    /// compiled with `options`.
    pub fn new(
        name: &str,
        source: impl Into<Arc<str>>,
        entry: &str,
        args: &[Type],
        options: &CompileOptions,
    ) -> CacheKey {
        CacheKey {
            name: name.into(),
            source: source.into(),
            entry: entry.to_string(),
            args: args.to_vec(),
            options: options.clone(),
        }
    }

    /// The source's file name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The entry's name.
    pub fn entry(&self) -> &str {
        &self.entry
    }

    /// The argument types.
    pub fn args(&self) -> &[Type] {
        &self.args
    }

    /// The compile options.
    pub fn options(&self) -> &CompileOptions {
        &self.options
    }

    /// The SHA-256 of the source text, in hexadecimal.
    pub fn source_sha256(&self) -> String {
        hex(&Sha256::digest(self.source.as_bytes()))
    }

    /// The stable description written into disk entries: the same for the same key in any
    /// process of the same build linking the same libdevice.
    pub fn stable_description(&self) -> serde_json::Value {
        serde_json::json!({
            "compiler": format!("pydevice {COMPILER_VERSION}"),
            "build": BUILD_ID,
            "libdevice": crate::lower::ptx::libdevice::identity(),
            "file": &*self.name,
            "source_sha256": self.source_sha256(),
            "entry": self.entry,
            "args": self.args,
            "arch": self.options.arch.to_string(),
            "opt_level": self.options.opt_level,
            // Every option, including ones added after this was written.
            "options": format!("{:?}", self.options),
        })
    }

    /// The disk entry's file name: the SHA-256 of the stable description, in hexadecimal.
    pub fn file_name(&self) -> String {
        let text = self.stable_description().to_string();
        format!("{}.json", hex(&Sha256::digest(text.as_bytes())))
    }
}

/// Whom an on-disk cache directory trusts to write its entries.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum DiskTrust {
    /// Only the user: the directory must be owned by the user and not writable by the group
    /// or the world, and the MAC key readable by the user alone.
    #[default]
    Private,
    /// Everyone who can write the directory and read its MAC key (say, a group sharing a
    /// cache): ownership and modes are not checked. An opt-in for the embedder.
    Shared,
}

/// An on-disk cache directory that cannot be used: it cannot be created, it is not a
/// directory, or it is not trusted (see the [module documentation](self)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskCacheError {
    /// The directory or file at fault.
    pub path: PathBuf,
    /// What is wrong with it.
    pub message: String,
    /// Whether only the private trust refuses it: [`DiskTrust::Shared`] would accept the
    /// directory (the message then says so, in Rust's terms; an embedder with other names
    /// for the option words its own hint from this).
    pub shareable: bool,
}

impl fmt::Display for DiskCacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kernel cache {}: {}", self.path.display(), self.message)?;
        if self.shareable {
            f.write_str(" (use DiskTrust::Shared to share a cache on purpose)")?;
        }
        Ok(())
    }
}

impl std::error::Error for DiskCacheError {}

/// An opened on-disk cache: its directory and MAC key.
struct Disk {
    dir: PathBuf,
    key: [u8; 32],
    /// Opened with [`DiskTrust::Shared`] (lock files are then group-readable).
    shared: bool,
}

impl fmt::Debug for Disk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key.
        f.debug_struct("Disk").field("dir", &self.dir).finish()
    }
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Opens `path` for reading without following a symbolic link or blocking on a FIFO, and
/// checks that it is a regular file of at most `max` bytes.
fn open_regular(path: &Path, max: u64) -> std::io::Result<(File, std::fs::Metadata)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.len() > max {
        return Err(std::io::Error::other("too large"));
    }
    Ok((file, meta))
}

/// Reads at most `max` bytes of a file opened by [`open_regular`]; a file that grew past it
/// is an error.
fn read_capped(file: File, max: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::other("too large"));
    }
    Ok(bytes)
}

impl Disk {
    fn open(dir: PathBuf, trust: DiskTrust) -> Result<Disk, DiskCacheError> {
        let err = |path: &Path, message: String| DiskCacheError {
            path: path.to_path_buf(),
            message,
            shareable: false,
        };
        let untrusted = |path: &Path, message: String| DiskCacheError {
            shareable: true,
            ..err(path, message)
        };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| err(&dir, format!("cannot create the directory: {e}")))?;
        let meta = std::fs::metadata(&dir)
            .map_err(|e| err(&dir, format!("cannot read the directory: {e}")))?;
        if !meta.is_dir() {
            return Err(err(&dir, "not a directory".into()));
        }
        if trust == DiskTrust::Private {
            if meta.uid() != euid() {
                return Err(untrusted(
                    &dir,
                    format!(
                        "owned by uid {}, not by this user (uid {}): its entries cannot be trusted",
                        meta.uid(),
                        euid()
                    ),
                ));
            }
            if meta.mode() & 0o022 != 0 {
                return Err(untrusted(
                    &dir,
                    format!(
                        "writable by the group or the world (mode {:o}): its entries cannot be \
                         trusted (chmod 700 it)",
                        meta.mode() & 0o7777
                    ),
                ));
            }
        }
        let key = Disk::load_or_create_key(&dir, trust)?;
        Ok(Disk {
            dir,
            key,
            shared: trust == DiskTrust::Shared,
        })
    }

    fn load_or_create_key(dir: &Path, trust: DiskTrust) -> Result<[u8; 32], DiskCacheError> {
        let path = dir.join(MAC_KEY_FILE);
        let err = |message: String| DiskCacheError {
            path: path.clone(),
            message,
            shareable: false,
        };
        // A key written by another process appears whole (it is linked into place), so at
        // most one retry is needed after losing the race to create it.
        for _ in 0..2 {
            match open_regular(&path, 32) {
                Ok((file, meta)) => {
                    if trust == DiskTrust::Private {
                        if meta.uid() != euid() {
                            return Err(err(format!(
                                "the MAC key is owned by uid {}, not by this user",
                                meta.uid()
                            )));
                        }
                        if meta.mode() & 0o077 != 0 {
                            return Err(err(format!(
                                "the MAC key can be read by others (mode {:o}); it must be 600",
                                meta.mode() & 0o7777
                            )));
                        }
                    }
                    let bytes = read_capped(file, 32)
                        .map_err(|e| err(format!("cannot read the MAC key: {e}")))?;
                    return <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
                        err(format!("the MAC key has {} bytes, not 32", bytes.len()))
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(err(format!("cannot open the MAC key: {e}"))),
            }
            let mut key = [0u8; 32];
            getrandom::getrandom(&mut key)
                .map_err(|e| err(format!("no random bytes for a MAC key: {e}")))?;
            let mut tmp = tempfile::Builder::new()
                .prefix(".mac-key-")
                .tempfile_in(dir)
                .map_err(|e| err(format!("cannot create the MAC key: {e}")))?;
            let mode = if trust == DiskTrust::Shared {
                0o640
            } else {
                0o600
            };
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))
                .and_then(|()| tmp.write_all(&key))
                .and_then(|()| tmp.as_file().sync_all())
                .map_err(|e| err(format!("cannot write the MAC key: {e}")))?;
            match tmp.persist_noclobber(&path) {
                Ok(_) => {
                    sync_dir(dir);
                    return Ok(key);
                }
                Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(err(format!("cannot write the MAC key: {}", e.error))),
            }
        }
        Err(err("the MAC key keeps changing".into()))
    }

    fn mac(&self, name: &str, payload: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(name.as_bytes());
        mac.update(&[0]);
        mac.update(payload);
        mac
    }

    /// The verified payload of the entry called `name`: `Ok(None)` when there is none, `Err`
    /// when there is a file that is not a valid entry.
    fn read(&self, name: &str) -> Result<Option<Vec<u8>>, ()> {
        let (file, _) = match open_regular(&self.dir.join(name), MAX_ENTRY_BYTES) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(_) => return Err(()),
        };
        let bytes = read_capped(file, MAX_ENTRY_BYTES).map_err(|_| ())?;
        let newline = bytes.iter().position(|&b| b == b'\n').ok_or(())?;
        let (head, payload) = (&bytes[..newline], &bytes[newline + 1..]);
        let tag = std::str::from_utf8(head)
            .ok()
            .and_then(|h| h.strip_prefix(ENTRY_MAGIC))
            .and_then(|h| h.strip_prefix(' '))
            .ok_or(())?;
        let tag = decode_hex(tag).ok_or(())?;
        self.mac(name, payload).verify_slice(&tag).map_err(|_| ())?;
        Ok(Some(payload.to_vec()))
    }

    /// Writes the entry called `name`: a temporary file, flushed, then renamed.
    fn write(&self, name: &str, payload: &[u8]) -> std::io::Result<()> {
        let tag = hex(&self.mac(name, payload).finalize().into_bytes());
        let mut tmp = tempfile::Builder::new()
            .prefix(".entry-")
            .suffix(".tmp")
            .tempfile_in(&self.dir)?;
        tmp.write_all(format!("{ENTRY_MAGIC} {tag}\n").as_bytes())?;
        tmp.write_all(payload)?;
        tmp.as_file().sync_all()?;
        tmp.persist(self.dir.join(name)).map_err(|e| e.error)?;
        sync_dir(&self.dir);
        Ok(())
    }
}

/// The lock of one entry, held while its key is compiled and written (released when
/// dropped, or by the system when the process dies, so a rank killed mid-compile never
/// blocks the others).
struct EntryLock {
    _file: File,
    /// Whether another holder had it first (then the entry is worth reading again).
    waited: bool,
}

/// How long a process waits for another's compile of the same key before compiling it
/// itself (a holder that is alive but stuck must not stop the others for ever).
const LOCK_WAIT_LIMIT: std::time::Duration = std::time::Duration::from_secs(300);

impl Disk {
    /// Takes the lock file `.lock-<name>` of entry `name`, waiting (polling, up to
    /// [`LOCK_WAIT_LIMIT`]) while another process holds it. `None` when the lock cannot be
    /// had (an unwritable directory, a file that is not ours, the wait limit): the caller
    /// then compiles without it, as before locks existed. Lock files stay in the directory
    /// (removing one would race with a process about to take it); they are empty.
    fn lock_entry(&self, name: &str) -> Option<EntryLock> {
        let path = self.dir.join(format!(".lock-{name}"));
        let flags = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
        // A lock works on a descriptor opened for reading, so a file another member of a
        // shared directory's group created serves too; else it is created.
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(flags)
            .open(&path)
            .or_else(|_| {
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .mode(if self.shared { 0o640 } else { 0o600 })
                    .custom_flags(flags)
                    .open(&path)
            })
            .ok()?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let start = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(2);
        let mut waited = false;
        loop {
            match file.try_lock() {
                Ok(()) => {
                    return Some(EntryLock {
                        _file: file,
                        waited,
                    });
                }
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(_)) => return None,
            }
            if start.elapsed() >= LOCK_WAIT_LIMIT {
                return None;
            }
            waited = true;
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(50));
        }
    }
}

/// Flushes a directory's entries (a rename) to disk; best effort.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// How a cache has been used.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CacheStats {
    /// Requests answered from memory (including ones that waited for another thread's
    /// compile of the same key).
    pub hits: u64,
    /// Requests that were not in memory (each then read the disk or compiled).
    pub misses: u64,
    /// Kernels compiled.
    pub compiles: u64,
    /// Misses answered from the disk.
    pub disk_hits: u64,
    /// Disk entries written.
    pub disk_writes: u64,
    /// Disk entries present but ignored: unreadable, corrupt, or for another key.
    pub disk_ignored: u64,
    /// Disk entries that could not be written (the cache still works, in memory).
    pub disk_write_errors: u64,
    /// Disk hits that waited for another process compiling the same key (see
    /// [`KernelCache::with_disk`]: one compile per key per directory).
    #[serde(default)]
    pub disk_waits: u64,
}

type Slot = Arc<OnceLock<Result<Arc<CompiledKernel>, Error>>>;

/// A thread-safe cache of compiled kernels. Concurrent requests for one key compile it once;
/// the others wait for that compile and share its result. A failed compile is reported to
/// every request waiting for it and not kept, so a later request tries again.
///
/// ```
/// use pydevice::cache::KernelCache;
/// use pydevice::types::signature::parse_signature;
/// use pydevice::CompileOptions;
/// let src = "from cuda import device\n@device.kernel\ndef k(a):\n    a[0] = 1.0\n";
/// let (args, _) = parse_signature("float32[::1]").unwrap();
/// let cache = KernelCache::new();
/// let a = cache.get_or_compile_source("k.py", src, "k", &args, &CompileOptions::default()).unwrap();
/// let b = cache.get_or_compile_source("k.py", src, "k", &args, &CompileOptions::default()).unwrap();
/// assert!(std::sync::Arc::ptr_eq(&a, &b));
/// assert_eq!((cache.stats().compiles, cache.stats().hits), (1, 1));
/// ```
#[derive(Debug, Default)]
pub struct KernelCache {
    slots: Mutex<HashMap<CacheKey, Slot>>,
    disk: Option<Disk>,
    hits: AtomicU64,
    misses: AtomicU64,
    compiles: AtomicU64,
    disk_hits: AtomicU64,
    disk_writes: AtomicU64,
    disk_ignored: AtomicU64,
    disk_write_errors: AtomicU64,
    disk_waits: AtomicU64,
}

/// A file of the on-disk cache.
#[derive(Serialize, Deserialize)]
struct DiskEntry {
    key: serde_json::Value,
    kernel: CompiledKernel,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl KernelCache {
    /// An empty in-memory cache.
    pub fn new() -> KernelCache {
        KernelCache::default()
    }

    /// An empty cache that also reads and writes compiled kernels under `dir`, which must be
    /// the user's alone ([`DiskTrust::Private`]): created `0700` if missing, refused if
    /// another user owns it or the group or the world can write it. See the
    /// [module documentation](self) for the trust model.
    pub fn with_disk(dir: impl Into<PathBuf>) -> Result<KernelCache, DiskCacheError> {
        KernelCache::with_disk_trusting(dir, DiskTrust::Private)
    }

    /// An empty cache over `dir` with an explicit trust: [`DiskTrust::Shared`] accepts a
    /// directory shared with others, whom it then trusts to write entries.
    pub fn with_disk_trusting(
        dir: impl Into<PathBuf>,
        trust: DiskTrust,
    ) -> Result<KernelCache, DiskCacheError> {
        Ok(KernelCache {
            disk: Some(Disk::open(dir.into(), trust)?),
            ..KernelCache::default()
        })
    }

    /// The on-disk directory, if any.
    pub fn disk_dir(&self) -> Option<&Path> {
        self.disk.as_ref().map(|d| d.dir.as_path())
    }

    /// The kernel for `entry` of a parsed module specialized for `args`, compiled on the first
    /// request.
    pub fn get_or_compile(
        &self,
        module: &Module,
        entry: &str,
        args: &[Type],
        options: &CompileOptions,
    ) -> Result<Arc<CompiledKernel>, Error> {
        let file = module.file();
        let key = CacheKey::new(&file.name, file.text.clone(), entry, args, options);
        self.get_with(key, || module.compile(entry, args, options))
    }

    /// The kernel for `entry` of `source` specialized for `args`; the source is parsed only
    /// when the kernel must be compiled. `name` is used in diagnostics.
    pub fn get_or_compile_source(
        &self,
        name: &str,
        source: &str,
        entry: &str,
        args: &[Type],
        options: &CompileOptions,
    ) -> Result<Arc<CompiledKernel>, Error> {
        let key = CacheKey::new(name, source, entry, args, options);
        self.get_with(key, || {
            // LLVM's set-up (on a thread's first compile) overlaps parsing too.
            crate::warm_up(options);
            Module::parse(name, source)?.compile(entry, args, options)
        })
    }

    /// The kernel for `key`, made by `compile` on a miss that the disk does not answer.
    pub fn get_with(
        &self,
        key: CacheKey,
        compile: impl FnOnce() -> Result<CompiledKernel, Error>,
    ) -> Result<Arc<CompiledKernel>, Error> {
        let slot = {
            let mut slots = lock(&self.slots);
            match slots.get(&key) {
                Some(s) => s.clone(),
                None => slots.entry(key.clone()).or_default().clone(),
            }
        };
        let mut filled_here = false;
        let result = slot
            .get_or_init(|| {
                filled_here = true;
                self.fill(&key, compile)
            })
            .clone();
        if filled_here {
            bump(&self.misses);
            if result.is_err() {
                let mut slots = lock(&self.slots);
                if slots.get(&key).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                    slots.remove(&key);
                }
            }
        } else {
            bump(&self.hits);
        }
        result
    }

    fn fill(
        &self,
        key: &CacheKey,
        compile: impl FnOnce() -> Result<CompiledKernel, Error>,
    ) -> Result<Arc<CompiledKernel>, Error> {
        let mut found_bad = false;
        if let Some(disk) = &self.disk {
            match self.read_disk(disk, key) {
                Ok(Some(k)) => {
                    bump(&self.disk_hits);
                    return Ok(Arc::new(k));
                }
                Ok(None) => {}
                Err(()) => {
                    bump(&self.disk_ignored);
                    found_bad = true;
                }
            }
        }
        // One compile per key per directory: processes sharing the directory (the ranks of a
        // job on one node) take the entry's lock; those that waited read the entry written
        // by the one that compiled.
        let _lock = match &self.disk {
            Some(disk) => {
                let lock = disk.lock_entry(&key.file_name());
                // Read again under the lock: the entry may have been written since the read
                // above, by a holder this process did or did not have to wait for.
                // (A bad entry seen above is not read twice unless another process waited
                // on wrote it anew; it is counted once either way.)
                if let Some(l) = &lock
                    && (l.waited || !found_bad)
                    && let Ok(Some(k)) = self.read_disk(disk, key)
                {
                    bump(&self.disk_hits);
                    if l.waited {
                        bump(&self.disk_waits);
                    }
                    return Ok(Arc::new(k));
                }
                lock
            }
            None => None,
        };
        bump(&self.compiles);
        let kernel = compile()?;
        if let Some(disk) = &self.disk {
            self.write_disk(disk, key, &kernel);
        }
        Ok(Arc::new(kernel))
    }

    /// The entry for `key`: `Ok(None)` when there is none, `Err` when a file is there that
    /// is not a valid entry for it (the caller counts it as ignored).
    fn read_disk(&self, disk: &Disk, key: &CacheKey) -> Result<Option<CompiledKernel>, ()> {
        let Some(payload) = disk.read(&key.file_name())? else {
            return Ok(None);
        };
        match serde_json::from_slice::<DiskEntry>(&payload) {
            Ok(e) if e.key == key.stable_description() && e.kernel.arch == key.options.arch => {
                Ok(Some(e.kernel))
            }
            _ => Err(()),
        }
    }

    fn write_disk(&self, disk: &Disk, key: &CacheKey, kernel: &CompiledKernel) {
        let entry = DiskEntry {
            key: key.stable_description(),
            kernel: kernel.clone(),
        };
        let written = serde_json::to_vec(&entry)
            .map_err(std::io::Error::other)
            .and_then(|payload| disk.write(&key.file_name(), &payload));
        match written {
            Ok(()) => bump(&self.disk_writes),
            Err(_) => bump(&self.disk_write_errors),
        }
    }

    /// The counters.
    pub fn stats(&self) -> CacheStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CacheStats {
            hits: get(&self.hits),
            misses: get(&self.misses),
            compiles: get(&self.compiles),
            disk_hits: get(&self.disk_hits),
            disk_writes: get(&self.disk_writes),
            disk_ignored: get(&self.disk_ignored),
            disk_write_errors: get(&self.disk_write_errors),
            disk_waits: get(&self.disk_waits),
        }
    }

    /// Number of keys in memory (compiled or being compiled).
    pub fn len(&self) -> usize {
        lock(&self.slots).len()
    }

    /// True when nothing is in memory.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every kernel in memory (the disk is left alone); counters are kept.
    pub fn clear(&self) {
        lock(&self.slots).clear();
    }
}
