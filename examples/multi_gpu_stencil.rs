//! A domain-decomposed 2-D Jacobi stencil on two GPUs, with halo exchange between them
//! through peer copies, checked bit for bit against the same steps on one GPU.
//!
//! The grid's interior rows are split between the two devices. Each holds its rows plus one
//! halo row on each side (the fixed boundary row at the grid's edge); after every step each
//! sends its edge row to the other's halo with [`multi::copy`] (peer to peer where the driver
//! allows it, else through the host: the path is printed). The kernel is compiled once
//! ([`KernelCache`]) and loaded on each device; the two halves launch from two threads at
//! once, each on its own device's stream.
//!
//!     cargo run --example multi_gpu_stencil [-- DEV0 DEV1]
//!
//! Without two GPUs, give `0 0`: both halves run on GPU 0 (the decomposition and the
//! exchange checked on one GPU, the copies then device-to-device).

use pydevice::cache::KernelCache;
use pydevice::runtime::multi::{self, CopyPath, Endpoint};
use pydevice::runtime::{Device, LaunchConfig, LoadedKernel, RuntimeError, Stream};
use pydevice::types::signature::parse_signature;
use pydevice::{Arch, CompileOptions, Module};
use std::sync::Arc;

/// One Jacobi step: every interior point of `dst` becomes the mean of its four neighbours in
/// `src`; the first and last rows and columns are left alone (boundary or halo).
pub const STENCIL: &str = r#"
from cuda import device

@device.kernel
def jacobi(src, dst):
    j, i = device.tid(2)
    rows, cols = src.shape
    if i >= 1 and i < rows - 1 and j >= 1 and j < cols - 1:
        dst[i, j] = 0.25 * (src[i - 1, j] + src[i + 1, j] + src[i, j - 1] + src[i, j + 1])
"#;

/// The starting grid: a hot top edge, a warm left edge, a ramp inside.
pub fn initial(rows: usize, cols: usize) -> Vec<f32> {
    let mut g = vec![0f32; rows * cols];
    for i in 0..rows {
        for j in 0..cols {
            g[i * cols + j] = if i == 0 {
                100.0
            } else if j == 0 {
                50.0
            } else {
                ((i * 7 + j * 3) % 17) as f32 * 0.5
            };
        }
    }
    g
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The kernel for `dev`, from one compilation shared by every device of one architecture.
fn kernel(cache: &KernelCache, dev: &Device) -> Result<Arc<LoadedKernel>, String> {
    let arch = dev.arch().map_err(|e| e.to_string())?;
    let arch = Arch::SUPPORTED
        .iter()
        .rev()
        .find(|a| **a <= arch)
        .copied()
        .unwrap_or(Arch::DEFAULT);
    let module = Module::parse("stencil.py", STENCIL).map_err(|d| d.to_string())?;
    let (types, _) = parse_signature("float32[:, ::1], float32[:, ::1]")?;
    let options = CompileOptions {
        arch,
        ..CompileOptions::default()
    };
    let compiled = cache
        .get_or_compile(&module, "jacobi", &types, &options)
        .map_err(|e| e.to_string())?;
    dev.load_cached(&compiled).map_err(|e| e.to_string())
}

/// Two buffers (ping and pong) of a `rows` × `cols` slab on one device, both holding `init`.
struct Slab {
    dev: Device,
    kernel: Arc<LoadedKernel>,
    stream: Stream,
    bufs: [pydevice::runtime::DeviceBuffer; 2],
    rows: usize,
}

impl Slab {
    fn new(dev: &Device, cache: &KernelCache, init: &[f32], rows: usize) -> Result<Slab, String> {
        let e = |e: RuntimeError| e.to_string();
        let b = bytes(init);
        Ok(Slab {
            dev: dev.clone(),
            kernel: kernel(cache, dev)?,
            stream: dev.create_stream().map_err(e)?,
            bufs: [dev.upload(&b).map_err(e)?, dev.upload(&b).map_err(e)?],
            rows,
        })
    }

    /// The address of row `i` of buffer `b`.
    fn row(&self, b: usize, i: usize, cols: usize) -> u64 {
        self.dev.address(&self.bufs[b]) + (i * cols * 4) as u64
    }

    /// Launches one step from buffer `from` into the other.
    fn step(&self, from: usize, cols: usize) -> Result<(), RuntimeError> {
        let shape = [self.rows as u64, cols as u64];
        let src = self
            .dev
            .array(&self.bufs[from], pydevice::types::Scalar::Float32, &shape)?;
        let dst = self.dev.array(
            &self.bufs[1 - from],
            pydevice::types::Scalar::Float32,
            &shape,
        )?;
        let mut args = self.kernel.zeroed_args();
        args.set_device_array(self.kernel.abi(), 0, &src)?;
        args.set_device_array(self.kernel.abi(), 1, &dst)?;
        let cfg = LaunchConfig {
            grid: [
                (cols as u32).div_ceil(16),
                (self.rows as u32).div_ceil(16),
                1,
            ],
            block: [16, 16, 1],
            shared_bytes: 0,
        };
        self.dev
            .launch_packed(&self.kernel, &args, &cfg, &self.stream)
    }

    fn download(&self, b: usize) -> Result<Vec<f32>, RuntimeError> {
        self.dev.synchronize_stream(&self.stream)?;
        Ok(floats(&self.dev.download(&self.bufs[b])?))
    }
}

/// `steps` Jacobi steps of the whole grid on one device.
pub fn run_single(
    dev: &Device,
    rows: usize,
    cols: usize,
    steps: usize,
) -> Result<Vec<f32>, String> {
    let cache = KernelCache::new();
    let slab = Slab::new(dev, &cache, &initial(rows, cols), rows)?;
    for s in 0..steps {
        slab.step(s % 2, cols).map_err(|e| e.to_string())?;
    }
    slab.download(steps % 2).map_err(|e| e.to_string())
}

/// What [`run_decomposed`] returns: the whole grid and how each halo copy went.
pub struct Decomposed {
    /// The grid after the steps, gathered from both devices.
    pub grid: Vec<f32>,
    /// The path of every halo copy (two per step).
    pub paths: Vec<CopyPath>,
}

/// `steps` Jacobi steps with the interior rows split between `devs[0]` (the top half) and
/// `devs[1]`, exchanging halo rows after every step.
pub fn run_decomposed(
    devs: [&Device; 2],
    rows: usize,
    cols: usize,
    steps: usize,
) -> Result<Decomposed, String> {
    assert!(rows >= 4, "at least two interior rows, one per device");
    let g = initial(rows, cols);
    // Interior rows 1..rows-1: the top slab owns 1..m, the bottom one m..rows-1. Each also
    // holds the row on either side of what it owns (a boundary row or the other's edge).
    let m = rows / 2;
    let top_rows = m + 1; // global rows 0..=m
    let bottom_rows = rows - m + 1; // global rows m-1..rows
    let cache = KernelCache::new();
    let top = Slab::new(devs[0], &cache, &g[..top_rows * cols], top_rows)?;
    let bottom = Slab::new(devs[1], &cache, &g[(m - 1) * cols..], bottom_rows)?;
    let mut paths = Vec::new();
    let row_bytes = cols * 4;
    for s in 0..steps {
        let from = s % 2;
        // The two halves launch at once, each from its own thread on its own GPU.
        let (a, b) = std::thread::scope(|sc| {
            let t = sc.spawn(|| top.step(from, cols));
            let b = bottom.step(from, cols);
            (t.join().expect("launch thread"), b)
        });
        a.and(b).map_err(|e| e.to_string())?;
        let to = 1 - from;
        // The top's last owned row (global m-1) to the bottom's first halo row, and the
        // bottom's first owned row (global m) to the top's last halo row.
        let p1 = multi::copy(
            Endpoint::new(&bottom.dev, bottom.row(to, 0, cols), &bottom.stream),
            Endpoint::new(&top.dev, top.row(to, m - 1, cols), &top.stream),
            row_bytes,
        )
        .map_err(|e| e.to_string())?;
        let p2 = multi::copy(
            Endpoint::new(&top.dev, top.row(to, m, cols), &top.stream),
            Endpoint::new(&bottom.dev, bottom.row(to, 1, cols), &bottom.stream),
            row_bytes,
        )
        .map_err(|e| e.to_string())?;
        paths.extend([p1, p2]);
    }
    let t = top.download(steps % 2).map_err(|e| e.to_string())?;
    let b = bottom.download(steps % 2).map_err(|e| e.to_string())?;
    let mut grid = t[..m * cols].to_vec();
    grid.extend_from_slice(&b[cols..]);
    Ok(Decomposed { grid, paths })
}

#[allow(dead_code)] // a test includes this file for the functions above
fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a device ordinal"))
        .collect();
    let (d0, d1) = match args.as_slice() {
        [a, b] => (*a, *b),
        [] => (0, 1),
        _ => panic!("usage: multi_gpu_stencil [DEV0 DEV1]"),
    };
    if !pydevice::runtime::driver_available() || multi::device_count() <= d0.max(d1) {
        println!(
            "skipped: GPUs {d0} and {d1} are needed, {} present (give `0 0` to run both halves \
             on GPU 0)",
            multi::device_count()
        );
        return;
    }
    let (a, b) = (
        Device::open(d0).expect("GPU"),
        Device::open(d1).expect("GPU"),
    );
    let (rows, cols, steps) = (514, 1024, 200);
    let single = run_single(&a, rows, cols, steps).expect("single-GPU run");
    let split = run_decomposed([&a, &b], rows, cols, steps).expect("two-GPU run");
    let same = single
        .iter()
        .zip(&split.grid)
        .all(|(x, y)| x.to_bits() == y.to_bits());
    println!(
        "{rows}x{cols}, {steps} steps on GPUs {d0} and {d1}: halo copies {:?}; bit-exact \
         against one GPU: {same}",
        split.paths[0]
    );
    assert!(same, "the decomposed run differs from the single-GPU run");
}
