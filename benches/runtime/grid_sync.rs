//! The grid-sync benchmark (bench/grid_sync/README.md, issue 19): the sum of 2^20, 2^24 and
//! 2^26 float32 as one cooperative kernel with `cg.this_grid().sync()` between its phases,
//! against the same algorithm as two ordinary kernels on one stream. Each sum is checked
//! against the CPU's before it is timed; the time is host wall time over 200 back-to-back
//! sums after 20 warm-up sums, the same way for both. Part of `cargo bench --bench runtime`
//! on a machine with a GPU (until session 17 it was an ignored GPU test).

use pydevice::abi::{ArgValue, ArrayArg};
use pydevice::runtime::{Device, DeviceBuffer, LaunchConfig, LoadedKernel, RuntimeError, Stream};
use pydevice::types::signature::parse_signature;
use pydevice::{Arch, CompileOptions, Module};
use std::time::Instant;

/// Threads per block, for both forms.
const BLOCK: u32 = 256;

fn compile(dev: &Device, src: &str, entry: &str, sig: &str, arch: Arch) -> LoadedKernel {
    let module = Module::parse("grid_reduce.py", src).unwrap_or_else(|d| panic!("{d}"));
    let (args, _) = parse_signature(sig).expect("signature");
    let opts = CompileOptions {
        arch,
        ..CompileOptions::default()
    };
    let compiled = module
        .compile(entry, &args, &opts)
        .unwrap_or_else(|e| panic!("{e}"));
    dev.load(&compiled.ptx, &compiled.abi).expect("load")
}

/// A float32 vector in device memory and its argument.
fn vector(dev: &Device, x: &[f32]) -> Result<(DeviceBuffer, ArgValue), RuntimeError> {
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let buf = dev.upload(&bytes)?;
    let arg = ArgValue::Array(ArrayArg {
        data: dev.address(&buf),
        shape: vec![x.len() as u64],
        strides: vec![1],
    });
    Ok((buf, arg))
}

/// xorshift64: the same inputs in every run, no dependency.
fn inputs(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Prints the table; an error or a sum off the CPU's is an error.
pub fn run(dev: &Device, arch: Arch, repo: &std::path::Path) -> Result<(), String> {
    let path = repo.join("bench/grid_sync/grid_reduce.py");
    let src = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let one = compile(
        dev,
        &src,
        "grid_sum",
        "float32[::1], float32[::1], float32[::1]",
        arch,
    );
    let first = compile(dev, &src, "partials", "float32[::1], float32[::1]", arch);
    let second = compile(
        dev,
        &src,
        "finish_kernel",
        "float32[::1], float32[::1]",
        arch,
    );
    let probe = LaunchConfig {
        grid: [1, 1, 1],
        block: [BLOCK, 1, 1],
        shared_bytes: 0,
    };
    let err = |e: RuntimeError| e.to_string();
    let blocks = dev.cooperative_limit(&one, &probe).map_err(err)? as u32;
    let grid = LaunchConfig {
        grid: [blocks, 1, 1],
        ..probe
    };
    let finisher = LaunchConfig {
        grid: [1, 1, 1],
        ..probe
    };
    let stream = Stream::default_stream();
    println!(
        "grid-sync reduction vs two kernels, {} ({blocks} blocks of {BLOCK}; µs per sum, \
         wall time of 200 back-to-back sums)",
        dev.name().unwrap_or_default()
    );
    println!("| n | one kernel, grid.sync() | two kernels | ratio |");
    println!("|---|---:|---:|---:|");
    for log in [20u32, 24, 26] {
        let n = 1usize << log;
        let x = inputs(n, u64::from(log));
        let want: f64 = x.iter().map(|&v| f64::from(v)).sum();
        let (_xb, xa) = vector(dev, &x).map_err(err)?;
        let (_pb, pa) = vector(dev, &vec![0f32; (blocks * BLOCK / 32) as usize]).map_err(err)?;
        let (ob, oa) = vector(dev, &[0f32]).map_err(err)?;
        let p1 = one
            .pack(&[xa.clone(), pa.clone(), oa.clone()])
            .map_err(err)?;
        let q1 = first.pack(&[xa, pa.clone()]).map_err(err)?;
        let q2 = second.pack(&[pa, oa]).map_err(err)?;
        let run_one = || dev.launch_cooperative_packed(&one, &p1, &grid, &stream);
        let run_two = || {
            dev.launch_packed(&first, &q1, &grid, &stream)?;
            dev.launch_packed(&second, &q2, &finisher, &stream)
        };
        let check = |what: &str| -> Result<(), String> {
            dev.synchronize().map_err(err)?;
            let b = dev.download(&ob).map_err(err)?;
            let got = f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            if (got - want).abs() > 1e-3 * (n as f64).sqrt().max(1.0) {
                return Err(format!("{what}, 2^{log}: {got} against the CPU's {want}"));
            }
            Ok(())
        };
        let time = |f: &dyn Fn() -> Result<(), RuntimeError>| -> Result<f64, String> {
            for _ in 0..20 {
                f().map_err(err)?;
            }
            dev.synchronize().map_err(err)?;
            let t = Instant::now();
            for _ in 0..200 {
                f().map_err(err)?;
            }
            dev.synchronize().map_err(err)?;
            Ok(t.elapsed().as_secs_f64() * 1e6 / 200.0)
        };
        run_one().map_err(err)?;
        check("one kernel")?;
        run_two().map_err(err)?;
        check("two kernels")?;
        let a = time(&run_one)?;
        let b = time(&run_two)?;
        println!("| 2^{log} | {a:.2} | {b:.2} | {:.2} |", a / b);
    }
    Ok(())
}
