//! The specialization cache: each kernel compiled once per source text, entry, argument types
//! and compile options (architecture, optimization level...), however many threads ask for
//! it at once, with an opt-in on-disk cache that outlives the process.
//!
//! In memory the key holds the source text itself, so it is exact. On disk an entry is a JSON
//! file named by the SHA-256 of a stable description of the key (the compiler's version, the
//! source's SHA-256, the entry, the argument types, the options), holding that description
//! beside the [`CompiledKernel`]: a file whose description does not match (a collision, an
//! older compiler), or that does not parse (a torn or corrupt write), is ignored and the
//! kernel recompiled and rewritten. Files are written to a temporary name and renamed, so a
//! reader never sees half a file.
//!
//! Compilation goes through the public [`Module`] API only.

use super::sha256::{hex, sha256};
use crate::kernel::CompiledKernel;
use crate::types::Type;
use crate::{CompileOptions, Error, Module};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// The compiler's version, part of every on-disk key.
pub const COMPILER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What identifies a compiled specialization.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CacheKey {
    source: Arc<str>,
    entry: String,
    args: Vec<Type>,
    options: CompileOptions,
}

impl CacheKey {
    /// The key of `entry` of `source` specialized for `args` and compiled with `options`.
    pub fn new(
        source: impl Into<Arc<str>>,
        entry: &str,
        args: &[Type],
        options: &CompileOptions,
    ) -> CacheKey {
        CacheKey {
            source: source.into(),
            entry: entry.to_string(),
            args: args.to_vec(),
            options: options.clone(),
        }
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
        hex(&sha256(self.source.as_bytes()))
    }

    /// The stable description written into disk entries: the same for the same key in any
    /// process built from the same compiler version.
    pub fn stable_description(&self) -> serde_json::Value {
        serde_json::json!({
            "compiler": format!("pydevice {COMPILER_VERSION}"),
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
        format!("{}.json", hex(&sha256(text.as_bytes())))
    }
}

/// How a cache has been used.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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
}

type Slot = Arc<OnceLock<Result<Arc<CompiledKernel>, Error>>>;

/// A thread-safe cache of compiled kernels. Concurrent requests for one key compile it once;
/// the others wait for that compile and share its result. A failed compile is reported to
/// every request waiting for it and not kept, so a later request tries again.
///
/// ```
/// use pydevice::runtime::KernelCache;
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
    dir: Option<PathBuf>,
    hits: AtomicU64,
    misses: AtomicU64,
    compiles: AtomicU64,
    disk_hits: AtomicU64,
    disk_writes: AtomicU64,
    disk_ignored: AtomicU64,
    disk_write_errors: AtomicU64,
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

    /// An empty cache that also reads and writes compiled kernels under `dir` (created when
    /// first written).
    pub fn with_disk(dir: impl Into<PathBuf>) -> KernelCache {
        KernelCache {
            dir: Some(dir.into()),
            ..KernelCache::default()
        }
    }

    /// The on-disk directory, if any.
    pub fn disk_dir(&self) -> Option<&Path> {
        self.dir.as_deref()
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
        let key = CacheKey::new(module.file().text.clone(), entry, args, options);
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
        let key = CacheKey::new(source, entry, args, options);
        self.get_with(key, || {
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
        if let Some(dir) = &self.dir
            && let Some(k) = self.read_disk(dir, key)
        {
            bump(&self.disk_hits);
            return Ok(Arc::new(k));
        }
        bump(&self.compiles);
        let kernel = compile()?;
        if let Some(dir) = &self.dir {
            self.write_disk(dir, key, &kernel);
        }
        Ok(Arc::new(kernel))
    }

    fn read_disk(&self, dir: &Path, key: &CacheKey) -> Option<CompiledKernel> {
        let bytes = match std::fs::read(dir.join(key.file_name())) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(_) => {
                bump(&self.disk_ignored);
                return None;
            }
        };
        match serde_json::from_slice::<DiskEntry>(&bytes) {
            Ok(e) if e.key == key.stable_description() && e.kernel.arch == key.options.arch => {
                Some(e.kernel)
            }
            _ => {
                bump(&self.disk_ignored);
                None
            }
        }
    }

    fn write_disk(&self, dir: &Path, key: &CacheKey, kernel: &CompiledKernel) {
        static TEMP: AtomicU64 = AtomicU64::new(0);
        let name = key.file_name();
        let tmp = dir.join(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            TEMP.fetch_add(1, Ordering::Relaxed)
        ));
        let entry = DiskEntry {
            key: key.stable_description(),
            kernel: kernel.clone(),
        };
        let written = std::fs::create_dir_all(dir)
            .and_then(|()| {
                let text = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
                std::fs::write(&tmp, text)
            })
            .and_then(|()| std::fs::rename(&tmp, dir.join(&name)));
        match written {
            Ok(()) => bump(&self.disk_writes),
            Err(_) => {
                let _ = std::fs::remove_file(&tmp);
                bump(&self.disk_write_errors);
            }
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
