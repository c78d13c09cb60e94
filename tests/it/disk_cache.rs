//! The on-disk kernel cache under attack and under load: directory and key permissions,
//! tampered, truncated, swapped and planted entries (symbolic links, FIFOs, huge files), the
//! key's coverage (build, libdevice, file name), and two processes filling one cache.

use pydevice::CompileOptions;
use pydevice::cache::{CacheKey, MAC_KEY_FILE, MAX_ENTRY_BYTES};
use pydevice::cache::{DiskTrust, KernelCache};
use pydevice::types::Type;
use pydevice::types::signature::parse_signature;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SCALE: &str = r#"
from cuda import device

@device.kernel
def scale(a, f):
    i = device.tid(1)
    if i < len(a):
        a[i] = a[i] * f
"#;

fn sig(s: &str) -> Vec<Type> {
    parse_signature(s).expect("signature").0
}

/// A fresh directory (0700) under the system's temporary directory.
fn temp_dir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let d = std::env::temp_dir().join(format!("pydevice-{tag}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    d
}

fn key(args: &str) -> CacheKey {
    CacheKey::new(
        "scale.py",
        SCALE,
        "scale",
        &sig(args),
        &CompileOptions::default(),
    )
}

fn compile_through(cache: &KernelCache, args: &str) -> pydevice::CompiledKernel {
    (*cache
        .get_or_compile_source(
            "scale.py",
            SCALE,
            "scale",
            &sig(args),
            &CompileOptions::default(),
        )
        .expect("compile"))
    .clone()
}

/// Fills `dir` with the entry for `float32` and returns the entry's path.
fn fill(dir: &Path) -> PathBuf {
    let cache = KernelCache::with_disk(dir).unwrap();
    compile_through(&cache, "float32[::1], float32");
    assert_eq!(cache.stats().disk_writes, 1, "{:?}", cache.stats());
    dir.join(key("float32[::1], float32").file_name())
}

/// Asserts that a fresh cache over `dir` ignores the entry, recompiles and rewrites it, and
/// that the rewritten entry is then loaded.
fn assert_recompiled(dir: &Path, what: &str) {
    let genuine = compile_through(&KernelCache::new(), "float32[::1], float32");
    let cache = KernelCache::with_disk(dir).unwrap();
    let k = compile_through(&cache, "float32[::1], float32");
    let st = cache.stats();
    assert_eq!(
        (st.disk_hits, st.disk_ignored, st.compiles, st.disk_writes),
        (0, 1, 1, 1),
        "{what}: {st:?}"
    );
    assert_eq!(k, genuine, "{what}");
    let again = KernelCache::with_disk(dir).unwrap();
    assert_eq!(compile_through(&again, "float32[::1], float32"), genuine);
    assert_eq!(again.stats().disk_hits, 1, "{what}: rewritten entry");
}

#[test]
fn disk_cache_round_trips_across_caches() {
    let dir = temp_dir("disk-cache");
    let file = fill(&dir);
    assert!(file.exists(), "{} missing", file.display());
    let name = file.file_name().unwrap().to_str().unwrap().to_string();
    assert_eq!(name.len(), 64 + 5);
    assert!(name[..64].bytes().all(|b| b.is_ascii_hexdigit()));
    // Only the entry, its (empty) lock file and the key: no temporary files left behind.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut want = vec![format!(".lock-{name}"), name, MAC_KEY_FILE.to_string()];
    want.sort();
    assert_eq!(names, want);

    // A second cache (as in another process) reads it instead of compiling.
    let second = KernelCache::with_disk(&dir).unwrap();
    compile_through(&second, "float32[::1], float32");
    let st = second.stats();
    assert_eq!((st.compiles, st.disk_hits, st.misses), (0, 1, 1), "{st:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_key_covers_the_build_libdevice_and_file_name() {
    let k = key("float32[::1], float32");
    let d = k.stable_description().to_string();
    let version = format!("pydevice {}", env!("CARGO_PKG_VERSION"));
    let libdevice = pydevice::lower::ptx::libdevice::identity();
    for part in [
        version.as_str(),
        pydevice::cache::BUILD_ID,
        libdevice,
        "scale.py",
        "scale",
        "sm_90",
        "opt_level",
        &k.source_sha256(),
    ] {
        assert!(d.contains(part), "{part} not in {d}");
    }
    assert_eq!(pydevice::cache::BUILD_ID.len(), 64);
    let other = CacheKey::new(
        "other.py",
        SCALE,
        "scale",
        &sig("float32[::1], float32"),
        &CompileOptions::default(),
    );
    assert_ne!(k.file_name(), other.file_name());
}

#[test]
fn lineinfo_ptx_names_the_file_it_was_compiled_from() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/lang/kernel_options.py"
    ))
    .unwrap();
    let dir = temp_dir("disk-lineinfo");
    let args = sig("float32[::1], float32[:, :]");
    let opts = CompileOptions::default();
    let cache = KernelCache::with_disk(&dir).unwrap();
    let a = cache
        .get_or_compile_source("first.py", &src, "opts", &args, &opts)
        .unwrap();
    assert!(a.ptx.contains("first.py"), "{}", a.ptx);
    let cache = KernelCache::with_disk(&dir).unwrap();
    let b = cache
        .get_or_compile_source("second.py", &src, "opts", &args, &opts)
        .unwrap();
    assert!(b.ptx.contains("second.py") && !b.ptx.contains("first.py"));
    assert_eq!(cache.stats().disk_hits, 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_directory_is_created_0700_with_a_0600_key() {
    let parent = temp_dir("disk-create");
    let dir = parent.join("a").join("cache");
    fill(&dir);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join(MAC_KEY_FILE)), 0o600);
    assert_eq!(std::fs::metadata(dir.join(MAC_KEY_FILE)).unwrap().len(), 32);
    std::fs::remove_dir_all(&parent).unwrap();
}

#[test]
fn untrusted_directories_and_keys_are_refused_unless_shared() {
    let dir = temp_dir("disk-refuse");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = KernelCache::with_disk(&dir).unwrap_err();
    // An embedder with other names for the option (Python's `shared=True`) words its own
    // hint from `shareable`; the message itself has no Rust name and no run of spaces.
    assert!(
        err.shareable && !err.message.contains("DiskTrust"),
        "{err:?}"
    );
    let e = err.to_string();
    assert!(e.contains("writable by the group or the world"), "{e}");
    assert!(e.contains("DiskTrust::Shared"), "{e}");
    assert!(!e.contains("  "), "{e}");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o770)).unwrap();
    assert!(KernelCache::with_disk(&dir).is_err());
    // The embedder opts in.
    let shared = KernelCache::with_disk_trusting(&dir, DiskTrust::Shared).unwrap();
    compile_through(&shared, "float32[::1], float32");
    assert_eq!(shared.stats().disk_writes, 1);
    std::fs::remove_dir_all(&dir).unwrap();

    // A key others can read is refused.
    let dir = temp_dir("disk-key");
    fill(&dir);
    let key = dir.join(MAC_KEY_FILE);
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = KernelCache::with_disk(&dir).unwrap_err().to_string();
    assert!(e.contains("can be read by others"), "{e}");
    // A key that is a symbolic link is refused.
    std::fs::remove_file(&key).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &key).unwrap();
    assert!(KernelCache::with_disk(&dir).is_err());
    std::fs::remove_dir_all(&dir).unwrap();

    // A directory owned by someone else.
    let other = if unsafe_euid() == 0 {
        let d = temp_dir("disk-owner");
        std::os::unix::fs::chown(&d, Some(65534), None).unwrap();
        d
    } else {
        PathBuf::from("/")
    };
    let e = KernelCache::with_disk(&other).unwrap_err().to_string();
    assert!(e.contains("not by this user"), "{e}");
    if other != Path::new("/") {
        std::fs::remove_dir_all(&other).unwrap();
    }

    // A file where the directory should be.
    let dir = temp_dir("disk-file");
    let file = dir.join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let e = KernelCache::with_disk(&file).unwrap_err().to_string();
    assert!(e.contains("not-a-dir"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn unsafe_euid() -> u32 {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(1)
}

#[test]
fn tampered_entries_are_recompiled() {
    let dir = temp_dir("disk-tamper");
    let file = fill(&dir);
    let text = std::fs::read_to_string(&file).unwrap();
    // A change to the PTX that keeps the JSON valid and the key description intact.
    let forged = text.replacen("mul.rn.f32", "add.rn.f32", 1);
    assert_ne!(forged, text);
    std::fs::write(&file, forged).unwrap();
    assert_recompiled(&dir, "tampered");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn truncated_entries_are_recompiled() {
    let dir = temp_dir("disk-truncate");
    let file = fill(&dir);
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    assert_recompiled(&dir, "truncated");
    std::fs::write(&file, b"").unwrap();
    assert_recompiled(&dir, "empty");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn swapped_entries_are_recompiled() {
    let dir = temp_dir("disk-swap");
    let file = fill(&dir);
    let cache = KernelCache::with_disk(&dir).unwrap();
    compile_through(&cache, "float64[::1], float64");
    let other = dir.join(key("float64[::1], float64").file_name());
    // Another key's genuine entry, MAC and all, under this key's name.
    std::fs::copy(&other, &file).unwrap();
    assert_recompiled(&dir, "swapped");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn planted_entries_are_recompiled() {
    let dir = temp_dir("disk-plant");
    let file = fill(&dir);
    let genuine = std::fs::read(&file).unwrap();
    // An entry written under another user's key: a well-formed file whose MAC is wrong.
    let elsewhere = temp_dir("disk-plant-attacker");
    let planted = fill(&elsewhere);
    std::fs::copy(&planted, &file).unwrap();
    assert_ne!(std::fs::read(&file).unwrap(), genuine);
    assert_recompiled(&dir, "planted under another key");
    // An entry in the old format, with no MAC: the key description alone.
    let payload = {
        let text = std::fs::read_to_string(&file).unwrap();
        text.split_once('\n').unwrap().1.to_string()
    };
    std::fs::write(&file, payload).unwrap();
    assert_recompiled(&dir, "unauthenticated");
    // A symbolic link to a genuine entry.
    std::fs::remove_file(&file).unwrap();
    let copy = dir.join("copy");
    std::fs::copy(
        elsewhere.join(key("float32[::1], float32").file_name()),
        &copy,
    )
    .unwrap();
    std::os::unix::fs::symlink(&copy, &file).unwrap();
    assert_recompiled(&dir, "symbolic link");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&elsewhere).unwrap();
}

#[test]
fn writing_an_entry_never_follows_a_planted_symbolic_link() {
    let dir = temp_dir("disk-symlink-write");
    let victim = dir.join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let file = dir.join(key("float32[::1], float32").file_name());
    std::os::unix::fs::symlink(&victim, &file).unwrap();
    let cache = KernelCache::with_disk(&dir).unwrap();
    compile_through(&cache, "float32[::1], float32");
    assert_eq!(cache.stats().disk_writes, 1);
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(
        std::fs::symlink_metadata(&file)
            .unwrap()
            .file_type()
            .is_file()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs `f` on another thread and fails if it takes longer than `limit` (instead of hanging
/// the test run).
fn within(limit: Duration, what: &str, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(limit) {
        Ok(()) => {}
        Err(e) => panic!("{what}: not done in {limit:?} ({e})"),
    }
}

#[test]
fn special_files_are_ignored_at_once() {
    let dir = temp_dir("disk-special");
    let file = dir.join(key("float32[::1], float32").file_name());
    // A FIFO: opening it for reading would block until a writer comes.
    let c = std::ffi::CString::new(file.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let d = dir.clone();
    within(Duration::from_secs(60), "FIFO", move || {
        assert_recompiled(&d, "FIFO")
    });

    // A symbolic link to /dev/zero: reading it never ends.
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &file).unwrap();
    let d = dir.clone();
    within(Duration::from_secs(60), "/dev/zero", move || {
        assert_recompiled(&d, "/dev/zero")
    });

    // A huge sparse file: ignored without being read.
    std::fs::remove_file(&file).unwrap();
    let f = std::fs::File::create(&file).unwrap();
    f.set_len(3 << 30).unwrap();
    drop(f);
    const { assert!(3 << 30 > MAX_ENTRY_BYTES) };
    let t = Instant::now();
    assert_recompiled(&dir, "sparse");
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The argument types a child process compiles, in an order that depends on its index so
/// that the two children race on every entry from different ends.
const CHILD_SIGS: [&str; 6] = [
    "float32[::1], float32",
    "float64[::1], float64",
    "int32[::1], int32",
    "int64[::1], int64",
    "float32[:], float32",
    "float64[:], float64",
];

/// Not a test on its own: the body of one of the processes of
/// `two_processes_fill_one_cache`, which runs this binary again with `--ignored`.
#[test]
#[ignore = "run by two_processes_fill_one_cache in child processes"]
fn child_fills_the_cache() {
    let Some(dir) = std::env::var_os("PYDEVICE_CACHE_CHILD_DIR") else {
        return;
    };
    let reverse = std::env::var_os("PYDEVICE_CACHE_CHILD_REVERSE").is_some();
    let mut sigs = CHILD_SIGS.to_vec();
    if reverse {
        sigs.reverse();
    }
    for round in 0..3 {
        let cache = KernelCache::with_disk(&dir).expect("cache directory");
        for s in &sigs {
            let k = compile_through(&cache, s);
            assert!(k.ptx.contains(".entry scale"), "round {round} {s}");
        }
        let st = cache.stats();
        assert_eq!(st.disk_ignored, 0, "round {round}: {st:?}");
        assert_eq!(st.disk_write_errors, 0, "round {round}: {st:?}");
    }
}

#[test]
fn two_processes_fill_one_cache() {
    let dir = temp_dir("disk-processes").join("cache");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = [false, true]
        .into_iter()
        .map(|reverse| {
            let mut c = std::process::Command::new(&exe);
            c.args([
                "--exact",
                "disk_cache::child_fills_the_cache",
                "--ignored",
                "--nocapture",
            ])
            .env("PYDEVICE_CACHE_CHILD_DIR", &dir);
            if reverse {
                c.env("PYDEVICE_CACHE_CHILD_REVERSE", "1");
            }
            c.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        assert!(text.contains("1 passed"), "the child ran nothing: {text}");
    }
    // Every entry is intact: a fresh cache loads all of them and compiles nothing.
    let cache = KernelCache::with_disk(&dir).unwrap();
    for s in CHILD_SIGS {
        compile_through(&cache, s);
    }
    let st = cache.stats();
    assert_eq!(
        (st.disk_hits, st.compiles, st.disk_ignored),
        (CHILD_SIGS.len() as u64, 0, 0),
        "{st:?}"
    );
    std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}

/// The ranks of a job started at once on one node: how many processes compile together.
const RANKS: usize = 4;

/// Not a test on its own: one rank of `ranks_sharing_a_directory_compile_each_key_once`.
/// Each compile is slowed down so that every rank misses the disk while the first compiles;
/// the rank prints its counters as `stats: compiles disk_hits disk_waits`.
#[test]
#[ignore = "run by ranks_sharing_a_directory_compile_each_key_once in child processes"]
fn child_rank_compiles_or_waits() {
    let Some(dir) = std::env::var_os("PYDEVICE_CACHE_RANK_DIR") else {
        return;
    };
    let cache = KernelCache::with_disk(&dir).expect("cache directory");
    for s in ["float32[::1], float32", "float64[::1], float64"] {
        let k = cache
            .get_with(key(s), || {
                std::thread::sleep(Duration::from_millis(400));
                pydevice::Module::parse("scale.py", SCALE)
                    .map_err(pydevice::Error::from)?
                    .compile("scale", &sig(s), &CompileOptions::default())
            })
            .expect("compile");
        assert!(k.ptx.contains(".entry scale"), "{s}");
    }
    let st = cache.stats();
    println!("stats: {} {} {}", st.compiles, st.disk_hits, st.disk_waits);
}

/// Issue 36: ranks started together with one `PYDEVICE_CACHE_DIR` compile each kernel once
/// per node; the others wait for that compile and load its entry.
#[test]
fn ranks_sharing_a_directory_compile_each_key_once() {
    let dir = temp_dir("disk-ranks").join("cache");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..RANKS)
        .map(|_| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "disk_cache::child_rank_compiles_or_waits",
                    "--ignored",
                    "--nocapture",
                ])
                .env("PYDEVICE_CACHE_RANK_DIR", &dir)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let (mut compiles, mut hits) = (0, 0);
    for child in children {
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("stats: "))
            .unwrap_or_else(|| panic!("the rank printed no counters: {text}"));
        let n: Vec<u64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
        compiles += n[0];
        hits += n[1];
    }
    assert_eq!(
        (compiles, hits),
        (2, 2 * (RANKS as u64 - 1)),
        "two keys: each compiled by one rank and read from disk by the others"
    );
    std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}

/// Not a test on its own: a rank that takes an entry's lock and then hangs until it is killed
/// (run by `a_rank_killed_while_compiling_blocks_no_one`).
#[test]
#[ignore = "run by a_rank_killed_while_compiling_blocks_no_one in a child process"]
fn child_holds_a_lock_until_killed() {
    let Some(lock) = std::env::var_os("PYDEVICE_CACHE_LOCK_FILE") else {
        return;
    };
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(lock)
        .unwrap();
    f.lock().unwrap();
    println!("locked");
    std::thread::sleep(Duration::from_secs(120));
}

/// A rank that dies while it holds an entry's lock (killed mid-compile) blocks no one: the
/// system drops its lock, the waiting process compiles, and the entry it writes is whole.
#[test]
fn a_rank_killed_while_compiling_blocks_no_one() {
    use std::io::{BufRead, BufReader};
    let dir = temp_dir("disk-killed").join("cache");
    drop(KernelCache::with_disk(&dir).unwrap()); // the directory and its key
    let s = "float32[::1], float32";
    let lock = dir.join(format!(".lock-{}", key(s).file_name()));
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "disk_cache::child_holds_a_lock_until_killed",
            "--ignored",
            "--nocapture",
        ])
        .env("PYDEVICE_CACHE_LOCK_FILE", &lock)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The harness prints its own lines first; the pipe stays open until the child is killed.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while line.trim() != "locked" {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the child ended unlocked"
        );
    }
    let d = dir.clone();
    let waiter = std::thread::spawn(move || {
        let cache = KernelCache::with_disk(&d).unwrap();
        let t = Instant::now();
        let k = compile_through(&cache, s);
        (k.ptx.contains(".entry scale"), cache.stats(), t.elapsed())
    });
    std::thread::sleep(Duration::from_millis(500));
    assert!(!waiter.is_finished(), "the lock was not waited for");
    child.kill().unwrap();
    child.wait().unwrap();
    let (ok, st, took) = waiter.join().unwrap();
    assert!(ok);
    assert_eq!((st.compiles, st.disk_waits), (1, 0), "{st:?}");
    assert!(took < Duration::from_secs(60), "waited {took:?}");
    // The entry written after the kill is whole.
    let fresh = KernelCache::with_disk(&dir).unwrap();
    compile_through(&fresh, s);
    let st = fresh.stats();
    assert_eq!(
        (st.disk_hits, st.compiles, st.disk_ignored),
        (1, 0, 0),
        "{st:?}"
    );
    std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}
