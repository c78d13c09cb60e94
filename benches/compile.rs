//! Compile latency, source → PTX in process: the first compile in the process (cold: LLVM
//! target set-up included) and the median of repeated compiles (warm), for the example
//! kernels; then three measurements that each need fresh processes or threads:
//!
//! - the first compile in a fresh process (`vector_add`), one child process per sample, timed
//!   inside the child from just before `Module::parse` to the PTX text;
//! - throughput: a module of 50 kernels compiled from 1 and from N threads (kernels/second);
//! - peak RSS (`VmHWM` of `/proc/self/status`, which is `getrusage`'s `ru_maxrss`) of a fresh
//!   process that compiles one benchmark kernel (`bench/kernels/`), for each of them.
//!
//! Run with `cargo bench --bench compile` (`-- --quick` skips the warm table).

use pydevice::types::signature::parse_signature;
use pydevice::{CompileOptions, Module};
use std::process::Command;
use std::time::Instant;

// The benchmark kernels and their signatures: one table, shared with tests/fixtures.rs.
include!("../tests/bench_kernels.in");

/// Child processes of this binary are told what to do by this variable:
/// `first:FILE:ENTRY:SIG` compiles once and prints `ms <t> rss_kb <peak>`.
const CHILD: &str = "PYDEVICE_COMPILE_BENCH_CHILD";

/// Peak resident set of this process in KiB (`VmHWM`).
fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Minor and major page faults of this process so far (`getrusage`).
fn page_faults() -> (i64, i64) {
    // SAFETY: `getrusage` fills the zeroed struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    (usage.ru_minflt, usage.ru_majflt)
}

/// Runs the child whose job is `job` and returns (compile ms, peak RSS KiB).
fn child(job: &str) -> (f64, u64) {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(exe)
        .env(CHILD, job)
        .output()
        .expect("spawn child");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("ms "))
        .unwrap_or_else(|| {
            panic!(
                "child {job} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let f: Vec<&str> = line.split_whitespace().collect();
    (f[1].parse().expect("ms"), f[3].parse().expect("rss"))
}

/// A module of `n` small kernels that differ (each its own PTX), in the dialect's style.
fn many_kernels(n: usize) -> String {
    let mut src = String::from("from cuda import device\nimport math\n\n");
    for k in 0..n {
        let body = match k % 5 {
            0 => format!("out[i] = a[i] * {k}.0 + b[i]"),
            1 => format!("out[i] = max(a[i], b[i]) - {k}.5"),
            2 => format!("out[i] = math.sqrt(abs(a[i])) + b[i] * {k}.25"),
            3 => {
                format!(
                    "s = 0.0\n        for j in range({k} % 7 + 1):\n            s += a[i] * j\n        out[i] = s + b[i]"
                )
            }
            _ => format!("out[i] = b[i] if a[i] > {k}.0 else a[i]"),
        };
        src.push_str(&format!(
            "@device.kernel\ndef k{k}(a, b, out):\n    i = device.tid(1)\n    if i < out.shape[0]:\n        {body}\n\n\n"
        ));
    }
    src
}

/// Kernels per second compiling all `n` kernels of `src`, split over `threads` threads.
fn throughput(src: &str, n: usize, threads: usize) -> f64 {
    let (args, _) = parse_signature("float32[::1], float32[::1], float32[::1]").expect("sig");
    let t = Instant::now();
    std::thread::scope(|s| {
        for w in 0..threads {
            let args = &args;
            s.spawn(move || {
                let module = Module::parse("many", src).expect("parse");
                for k in (w..n).step_by(threads) {
                    module
                        .compile(&format!("k{k}"), args, &CompileOptions::default())
                        .expect("compile");
                }
            });
        }
    });
    n as f64 / t.elapsed().as_secs_f64()
}

const CASES: &[(&str, &str, &str)] = &[
    (
        "examples/vector_add.py",
        "vector_add",
        "float32[::1], float32[::1], float32[::1]",
    ),
    (
        "tests/fixtures/lang/saxpy_scalar.py",
        "saxpy",
        "float32, float32[:], float32[:], float32[:]",
    ),
    (
        "tests/fixtures/lang/transpose_2d.py",
        "transpose",
        "float32[:, :], float32[:, :]",
    ),
    (
        "tests/fixtures/lang/integer_semantics.py",
        "intops",
        "int32[:], int32[:], int32[:, :]",
    ),
    (
        "tests/fixtures/lang/func_chain.py",
        "apply",
        "float32[:], float32[:]",
    ),
    (
        "tests/fixtures/lang/float_division.py",
        "fdiv",
        "float32[:], float32[:], float32[:, :]",
    ),
];

fn compile_once(src: &str, entry: &str, sig: &str) -> usize {
    let module = Module::parse(entry, src).expect("parse");
    let (args, _) = parse_signature(sig).expect("sig");
    let k = module
        .compile(entry, &args, &CompileOptions::default())
        .expect("compile");
    k.ptx.len()
}

fn main() {
    let root = env!("CARGO_MANIFEST_DIR");
    if let Ok(job) = std::env::var(CHILD) {
        if let Some(rest) = job.strip_prefix("repeat:") {
            repeat(root, rest);
            return;
        }
        let mut parts = job.splitn(4, ':');
        let (_, file, entry, sig) = (parts.next(), parts.next(), parts.next(), parts.next());
        let (file, entry, sig) = (
            file.expect("file"),
            entry.expect("entry"),
            sig.expect("sig"),
        );
        let src = std::fs::read_to_string(format!("{root}/{file}")).expect("source");
        let faults = page_faults();
        let t = Instant::now();
        compile_once(&src, entry, sig);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let after = page_faults();
        println!(
            "ms {ms:.3} rss_kb {} faults {} major {}",
            peak_rss_kb(),
            after.0 - faults.0,
            after.1 - faults.1
        );
        return;
    }
    let quick = std::env::args().any(|a| a == "--quick");
    if !quick {
        warm_table(root);
    }
    fresh_processes();
}

/// `repeat:N:FILE:ENTRY:SIG`: compiles the kernel `N` times in this process (for callgrind:
/// the difference of two runs' instruction counts over the difference of their `N` is the
/// cost of a warm compile; `N` = 1 is a first compile in a process).
fn repeat(root: &str, job: &str) {
    let mut parts = job.splitn(4, ':');
    let n: usize = parts
        .next()
        .and_then(|n| n.parse().ok())
        .expect("repeat:N:FILE:ENTRY:SIG");
    let (file, entry, sig) = (
        parts.next().expect("file"),
        parts.next().expect("entry"),
        parts.next().expect("sig"),
    );
    let src = std::fs::read_to_string(format!("{root}/{file}")).expect("source");
    // With `N` > 20 the first 20 compiles warm up and the rest are timed (wall clock, and
    // this process's minor page faults), which a run outside callgrind reports.
    let warm_up = if n > 20 { 20 } else { 0 };
    let mut bytes: usize = (0..warm_up).map(|_| compile_once(&src, entry, sig)).sum();
    let (faults, t) = (page_faults().0, Instant::now());
    let mut times = Vec::with_capacity(n - warm_up);
    for _ in warm_up..n {
        let t = Instant::now();
        bytes += compile_once(&src, entry, sig);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let total = t.elapsed().as_secs_f64() * 1e3;
    times.sort_by(f64::total_cmp);
    let timed = times.len().max(1) as f64;
    println!(
        "ms {:.3} rss_kb {} bytes {bytes} mean_ms {:.3} min_ms {:.3} faults_per_compile {:.1}",
        times.get(times.len() / 2).copied().unwrap_or(0.0),
        peak_rss_kb(),
        total / timed,
        times.first().copied().unwrap_or(0.0),
        (page_faults().0 - faults) as f64 / timed
    );
}

/// First compile in a fresh process, throughput, and peak RSS per benchmark kernel.
fn fresh_processes() {
    let (file, entry, sig) = CASES[0];
    let mut firsts: Vec<f64> = (0..20)
        .map(|_| child(&format!("first:{file}:{entry}:{sig}")).0)
        .collect();
    firsts.sort_by(f64::total_cmp);
    println!(
        "first compile in a fresh process, {entry}: median {:.3} ms, min {:.3}, max {:.3} (20 processes)",
        firsts[firsts.len() / 2],
        firsts[0],
        firsts[firsts.len() - 1]
    );
    let n = 50;
    let src = many_kernels(n);
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    throughput(&src, n, 1); // LLVM set up and libdevice's functions extracted once
    for threads in [1, cores.max(2), 2 * cores.max(2)] {
        let mut rates: Vec<f64> = (0..5).map(|_| throughput(&src, n, threads)).collect();
        rates.sort_by(f64::total_cmp);
        println!(
            "throughput, a module of {n} kernels on {threads} threads ({cores} cores): median {:.0} kernels/s (best {:.0})",
            rates[2], rates[4]
        );
    }
    println!(
        "{:<16} {:>10} {:>12}",
        "bench kernel", "first ms", "peak RSS MB"
    );
    let mut worst = 0u64;
    for (name, sig) in BENCH_KERNELS {
        let (ms, kb) = child(&format!("first:bench/kernels/{name}.py:{name}:{sig}"));
        worst = worst.max(kb);
        println!("{name:<16} {ms:>10.3} {:>12.1}", kb as f64 / 1024.0);
    }
    println!(
        "peak RSS = VmHWM of a fresh process that compiles only that kernel; largest {:.1} MB",
        worst as f64 / 1024.0
    );
}

/// Cold and warm compile latency of the example kernels, in this process.
fn warm_table(root: &str) {
    println!(
        "{:<44} {:>10} {:>10} {:>10}",
        "kernel", "cold ms", "warm ms", "min ms"
    );
    for (i, (file, entry, sig)) in CASES.iter().enumerate() {
        let src = std::fs::read_to_string(format!("{root}/{file}")).expect("source");
        let t = Instant::now();
        compile_once(&src, entry, sig);
        let cold = t.elapsed().as_secs_f64() * 1e3;
        let mut times: Vec<f64> = (0..50)
            .map(|_| {
                let t = Instant::now();
                compile_once(&src, entry, sig);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let label = format!("{entry} ({file})");
        let cold_txt = if i == 0 {
            format!("{cold:.3}")
        } else {
            format!("({cold:.3})")
        };
        println!(
            "{label:<44} {cold_txt:>10} {:>10.3} {:>10.3}",
            times[times.len() / 2],
            times[0]
        );
    }
    println!(
        "cold = first compile in the process (only the first row pays LLVM's target set-up); warm = median of 50"
    );
}
