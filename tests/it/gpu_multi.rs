//! Every GPU of a host (`runtime::multi`): one shared device per ordinal, a kernel compiled
//! once and loaded per device, launches from many threads, launches that mix GPUs refused
//! with an error naming both, the GPU of pointers and streams, copies between GPUs (peer or
//! through the host), and the two-GPU stencil example checked against one GPU.
//!
//! Without a CUDA driver every test prints why it is skipped and passes. Tests that need two
//! GPUs say so and pass with one; what one GPU can check, it does (the same device opened
//! twice, many threads, the stencil's decomposition with both halves on GPU 0, the host
//! copy path).

#[path = "../../examples/multi_gpu_stencil.rs"]
mod stencil;

use pydevice::cache::KernelCache;
use pydevice::runtime::multi::{self, CopyPath, Endpoint};
use pydevice::runtime::{
    Device, DeviceArray, LaunchConfig, LoadedKernel, RuntimeError, Stream, driver_available,
    pointer_device,
};
use pydevice::types::Scalar;
use pydevice::types::signature::parse_signature;
use pydevice::{Arch, CompileOptions, CompiledKernel, Module};
use std::sync::Arc;

const SCALE: &str = r#"
from cuda import device

@device.kernel
def scale(a, f):
    i = device.tid(1)
    if i < len(a):
        a[i] = a[i] * f
"#;

fn gpus(test: &str, need: usize) -> Option<Vec<Device>> {
    if !driver_available() {
        println!("skipped {test}: no CUDA driver");
        return None;
    }
    let n = multi::device_count();
    if n < need {
        println!("skipped {test}: needs {need} GPUs, {n} present");
        return None;
    }
    Some(
        (0..need)
            .map(|i| Device::open(i).unwrap_or_else(|e| panic!("{test}: GPU {i}: {e}")))
            .collect(),
    )
}

fn compiled(cache: &KernelCache, dev: &Device) -> Arc<CompiledKernel> {
    let arch = dev.arch().expect("arch");
    let arch = Arch::SUPPORTED
        .iter()
        .rev()
        .find(|a| **a <= arch)
        .copied()
        .unwrap_or(Arch::DEFAULT);
    let module = Module::parse("scale.py", SCALE).unwrap_or_else(|d| panic!("{d}"));
    let (types, _) = parse_signature("float32[::1], float32").unwrap();
    let options = CompileOptions {
        arch,
        ..CompileOptions::default()
    };
    cache
        .get_or_compile(&module, "scale", &types, &options)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Scales `host` by `f` on `dev` with `k`, from the calling thread, on a stream of its own.
fn scale_on(
    dev: &Device,
    k: &LoadedKernel,
    host: &[f32],
    f: f32,
) -> Result<Vec<f32>, RuntimeError> {
    let buf = dev.upload(&bytes(host))?;
    dev.synchronize()?;
    let stream = dev.create_stream()?;
    let a = dev.array(&buf, Scalar::Float32, &[host.len() as u64])?;
    let mut args = k.zeroed_args();
    args.set_device_array(k.abi(), 0, &a)?;
    args.set(k.abi(), 1, &pydevice::abi::ArgValue::Float(f64::from(f)))?;
    let cfg = LaunchConfig::for_elements(host.len() as u64, 128);
    dev.launch_packed(k, &args, &cfg, &stream)?;
    dev.synchronize_stream(&stream)?;
    Ok(floats(&dev.download(&buf)?))
}

#[test]
fn one_device_opened_twice_shares_its_context_and_modules() {
    let Some(devs) = gpus("one_device_opened_twice_shares_its_context_and_modules", 1) else {
        return;
    };
    let again = Device::open(0).unwrap();
    assert!(again.same(&devs[0]));
    assert_eq!(again.cu_context(), devs[0].cu_context());
    // From another thread too.
    let other = std::thread::spawn(|| Device::open(0).unwrap())
        .join()
        .unwrap();
    assert!(other.same(&devs[0]));
    let cache = KernelCache::new();
    let k = compiled(&cache, &devs[0]);
    let a = devs[0].load_cached(&k).unwrap();
    let b = again.load_cached(&k).unwrap();
    assert!(Arc::ptr_eq(&a, &b), "one module per (device, kernel)");
    assert_eq!(a.device(), 0);
}

#[test]
fn launches_from_many_threads_at_once() {
    if gpus("launches_from_many_threads_at_once", 1).is_none() {
        return;
    }
    let cache = KernelCache::new();
    let n = 4099usize;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let cache = &cache;
                s.spawn(move || {
                    let dev = Device::open(0).unwrap();
                    let k = dev.load_cached(&compiled(cache, &dev)).unwrap();
                    let host: Vec<f32> = (0..n).map(|i| (i * (t + 1)) as f32).collect();
                    for round in 0..20 {
                        let f = (round % 5) as f32 + 0.5;
                        let got = scale_on(&dev, &k, &host, f).unwrap();
                        for (i, (g, h)) in got.iter().zip(&host).enumerate() {
                            assert_eq!(*g, h * f, "thread {t}, round {round}, element {i}");
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
    assert_eq!(cache.stats().compiles, 1, "compiled once for all threads");
}

#[test]
fn pointers_and_streams_know_their_gpu() {
    let Some(devs) = gpus("pointers_and_streams_know_their_gpu", 1) else {
        return;
    };
    let dev = &devs[0];
    let buf = dev.upload(&[0u8; 64]).unwrap();
    assert_eq!(pointer_device(dev.address(&buf)).unwrap(), Some(0));
    let on_stack = 0u64;
    assert_eq!(
        pointer_device(&on_stack as *const u64 as u64).unwrap(),
        None
    );
    let s = dev.create_stream().unwrap();
    assert_eq!(s.device().unwrap(), Some(0));
    // A borrowed handle of the same stream is found through the driver.
    let borrowed = unsafe { Stream::from_handle(s.handle()) };
    assert_eq!(borrowed.device().unwrap(), Some(0));
    assert_eq!(Stream::default_stream().device().unwrap(), None);
}

#[test]
fn the_host_copy_path_works_on_one_gpu() {
    let Some(devs) = gpus("the_host_copy_path_works_on_one_gpu", 1) else {
        return;
    };
    let dev = &devs[0];
    let src: Vec<f32> = (0..1000).map(|i| i as f32 * 0.25).collect();
    let a = dev.upload(&bytes(&src)).unwrap();
    let b = dev.upload(&[0u8; 4000]).unwrap();
    let c = dev.upload(&[0u8; 4000]).unwrap();
    dev.synchronize().unwrap();
    let s = dev.create_stream().unwrap();
    let end = |buf| Endpoint::new(dev, dev.address(buf), &s);
    assert_eq!(
        multi::copy_through_host(end(&b), end(&a), 4000).unwrap(),
        CopyPath::Host
    );
    assert_eq!(
        multi::copy(end(&c), end(&b), 4000).unwrap(),
        CopyPath::SameDevice
    );
    dev.synchronize_stream(&s).unwrap();
    assert_eq!(floats(&dev.download(&c).unwrap()), src);
}

#[test]
fn stencil_halves_on_one_gpu_match_the_whole() {
    let Some(devs) = gpus("stencil_halves_on_one_gpu_match_the_whole", 1) else {
        return;
    };
    let again = Device::open(0).unwrap();
    let (rows, cols, steps) = (130, 200, 50);
    let single = stencil::run_single(&devs[0], rows, cols, steps).unwrap();
    let split = stencil::run_decomposed([&devs[0], &again], rows, cols, steps).unwrap();
    assert!(split.paths.iter().all(|p| *p == CopyPath::SameDevice));
    check_bits(&single, &split.grid, cols);
    // The grid changed (the check is not of two untouched copies).
    assert_ne!(single, stencil::initial(rows, cols));
}

fn check_bits(single: &[f32], split: &[f32], cols: usize) {
    assert_eq!(single.len(), split.len());
    for (i, (a, b)) in single.iter().zip(split).enumerate() {
        assert_eq!(
            a.to_bits(),
            b.to_bits(),
            "row {}, column {}: {a} on one GPU, {b} split",
            i / cols,
            i % cols
        );
    }
}

#[test]
fn stencil_on_two_gpus_matches_one() {
    let Some(devs) = gpus("stencil_on_two_gpus_matches_one", 2) else {
        return;
    };
    let (rows, cols, steps) = (258, 512, 100);
    let single = stencil::run_single(&devs[0], rows, cols, steps).unwrap();
    let split = stencil::run_decomposed([&devs[0], &devs[1]], rows, cols, steps).unwrap();
    let peer =
        devs[0].can_access_peer(&devs[1]).unwrap() && devs[1].can_access_peer(&devs[0]).unwrap();
    let want = if peer { CopyPath::Peer } else { CopyPath::Host };
    println!("halo copies between GPU 0 and GPU 1: {want:?}");
    assert!(split.paths.iter().all(|p| *p == want), "{:?}", split.paths);
    check_bits(&single, &split.grid, cols);
}

#[test]
fn a_kernel_compiled_once_runs_on_every_gpu_from_threads() {
    let Some(devs) = gpus("a_kernel_compiled_once_runs_on_every_gpu_from_threads", 2) else {
        return;
    };
    let cache = KernelCache::new();
    let n = 1 << 16;
    let host: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    std::thread::scope(|s| {
        for (d, dev) in devs.iter().enumerate() {
            let (cache, host) = (&cache, &host);
            s.spawn(move || {
                let k = dev.load_cached(&compiled(cache, dev)).unwrap();
                assert_eq!(k.device(), d);
                let got = scale_on(dev, &k, host, 3.0).unwrap();
                assert!(got.iter().zip(host).all(|(g, h)| *g == h * 3.0), "GPU {d}");
            });
        }
    });
    // One compilation when the GPUs share an architecture (the usual host).
    if devs[0].arch().unwrap() == devs[1].arch().unwrap() {
        assert_eq!(cache.stats().compiles, 1);
    }
}

#[test]
fn launches_mixing_gpus_are_refused_naming_both() {
    let Some(devs) = gpus("launches_mixing_gpus_are_refused_naming_both", 2) else {
        return;
    };
    let cache = KernelCache::new();
    let k0 = devs[0].load_cached(&compiled(&cache, &devs[0])).unwrap();
    let k1 = devs[1].load_cached(&compiled(&cache, &devs[1])).unwrap();
    let buf1 = devs[1].upload(&[0u8; 64]).unwrap();
    let a1 = devs[1].array(&buf1, Scalar::Float32, &[16]).unwrap();
    assert_eq!(a1.device, Some(1));
    let cfg = LaunchConfig::for_elements(16, 32);
    // An array of GPU 1 in a launch on GPU 0.
    let mut args = k0.zeroed_args();
    args.set_device_array(k0.abi(), 0, &a1).unwrap();
    let e = devs[0]
        .launch_packed(&k0, &args, &cfg, &Stream::default_stream())
        .unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(
            e,
            RuntimeError::WrongDevice {
                found: 1,
                launch: 0,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        text.contains("GPU 0") && text.contains("GPU 1") && text.contains("`a`"),
        "{text}"
    );
    // A kernel loaded on GPU 1 launched on GPU 0.
    let e = devs[0]
        .launch_packed(&k1, &k1.zeroed_args(), &cfg, &Stream::default_stream())
        .unwrap_err();
    assert!(
        matches!(
            e,
            RuntimeError::WrongDevice {
                found: 1,
                launch: 0,
                ..
            }
        ),
        "{e:?}"
    );
    // A stream of GPU 1 in a launch on GPU 0.
    let s1 = devs[1].create_stream().unwrap();
    let buf0 = devs[0].upload(&[0u8; 64]).unwrap();
    let a0 = devs[0].array(&buf0, Scalar::Float32, &[16]).unwrap();
    let mut args = k0.zeroed_args();
    args.set_device_array(k0.abi(), 0, &a0).unwrap();
    let e = devs[0].launch_packed(&k0, &args, &cfg, &s1).unwrap_err();
    assert!(e.to_string().contains("stream belongs to GPU 1"), "{e}");
    // The pointer query agrees with the array, and a description without a GPU is placed.
    let mut raw = DeviceArray::contiguous(devs[1].address(&buf1), Scalar::Float32, &[16]);
    assert_eq!(pointer_device(raw.data).unwrap(), Some(1));
    raw.device = pointer_device(raw.data).unwrap().map(|d| d as i32);
    assert!(
        raw.check_device(0)
            .unwrap_err()
            .to_string()
            .contains("GPU 1")
    );
    // Nothing was lost: both contexts still run work.
    devs[0].synchronize().unwrap();
    devs[1].synchronize().unwrap();
}

#[test]
fn peer_copies_between_two_gpus() {
    let Some(devs) = gpus("peer_copies_between_two_gpus", 2) else {
        return;
    };
    let (d0, d1) = (&devs[0], &devs[1]);
    let peer = d0.can_access_peer(d1).unwrap();
    println!("cuDeviceCanAccessPeer(0, 1) = {peer}");
    let src: Vec<f32> = (0..4096).map(|i| i as f32 - 7.5).collect();
    let a = d0.upload(&bytes(&src)).unwrap();
    let b = d1.upload(&[0u8; 4096 * 4]).unwrap();
    let c = d1.upload(&[0u8; 4096 * 4]).unwrap();
    d0.synchronize().unwrap();
    d1.synchronize().unwrap();
    let (s0, s1) = (d0.create_stream().unwrap(), d1.create_stream().unwrap());
    let path = multi::copy(
        Endpoint::new(d1, d1.address(&b), &s1),
        Endpoint::new(d0, d0.address(&a), &s0),
        src.len() * 4,
    )
    .unwrap();
    assert_eq!(path, if peer { CopyPath::Peer } else { CopyPath::Host });
    assert_eq!(
        multi::copy_through_host(
            Endpoint::new(d1, d1.address(&c), &s1),
            Endpoint::new(d0, d0.address(&a), &s0),
            src.len() * 4,
        )
        .unwrap(),
        CopyPath::Host
    );
    d1.synchronize_stream(&s1).unwrap();
    assert_eq!(floats(&d1.download(&b).unwrap()), src);
    assert_eq!(floats(&d1.download(&c).unwrap()), src);
    if peer {
        assert!(d0.enable_peer_access(d1).unwrap());
        assert!(d0.enable_peer_access(d1).unwrap(), "enabling twice is fine");
    }
}

/// Runs without a GPU: the stencil kernel compiles (PTX) for the decomposed and the whole
/// grid alike, so the example is checked on every machine.
#[test]
fn the_stencil_kernel_compiles_without_a_gpu() {
    let module = Module::parse("stencil.py", stencil::STENCIL).unwrap_or_else(|d| panic!("{d}"));
    let (types, _) = parse_signature("float32[:, ::1], float32[:, ::1]").unwrap();
    let k = module
        .compile("jacobi", &types, &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(k.ptx.contains(".entry"), "{}", k.ptx);
}
