//! GPU tests of the embedding runtime: launches through DLPack tensors and CUDA Array
//! Interface descriptions of memory the library allocated, on a raw `CUstream` made with
//! cudarc (as another framework would hand it over), on library streams from several
//! threads, and on the default streams; reflection checked against `cuFuncGetAttribute`;
//! occupancy; rejected launches that leave the context usable; and an illegal address,
//! reported as an error naming the kernel (in a child process, since the fault ruins the
//! context for the rest of the process).
//!
//! Without a CUDA driver every test prints why it is skipped and passes; on a GPU machine
//! `scripts/gpu_run.sh` runs them.

use cudarc::driver::result;
use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use pydevice::abi::{ArgValue, ArrayArg};
use pydevice::cache::KernelCache;
use pydevice::runtime::dlpack::{DL_CUDA, DL_FLOAT, DLDataType, DLDevice, DLTensor};
use pydevice::runtime::{
    ArraySource, CudaArrayInterface, Device, DeviceArray, LaunchConfig, LoadedKernel, RuntimeError,
    Stream, driver_available,
};
use pydevice::types::signature::parse_signature;
use pydevice::{Arch, CompileOptions, CompiledKernel, Module};
use std::ffi::c_void;
use std::sync::Arc;

const SCALE: &str = r#"
from cuda import device

@device.kernel
def scale(a, f):
    i = device.tid(1)
    if i < len(a):
        a[i] = a[i] * f
"#;

/// A kernel with static shared memory: two 16 × 16 float32 tiles.
const MATMUL: &str = include_str!("../fixtures/lang/shared_tiled_matmul.py");

/// Set in the child process that runs [`fault_child`].
const FAULT_CHILD: &str = "PYDEVICE_GPU_RUNTIME_FAULT_CHILD";

fn device(test: &str) -> Option<Device> {
    if !driver_available() {
        println!("skipped {test}: no CUDA driver");
        return None;
    }
    Some(Device::open(0).unwrap_or_else(|e| panic!("{test}: {e}")))
}

fn options(dev: &Device) -> CompileOptions {
    let arch = dev.arch().expect("arch");
    let arch = Arch::SUPPORTED
        .iter()
        .rev()
        .find(|a| **a <= arch)
        .copied()
        .unwrap_or(Arch::DEFAULT);
    CompileOptions {
        arch,
        ..CompileOptions::default()
    }
}

fn compile(dev: &Device, src: &str, entry: &str, sig: &str) -> (CompiledKernel, LoadedKernel) {
    let module = Module::parse(entry, src).unwrap_or_else(|d| panic!("{d}"));
    let (args, _) = parse_signature(sig).expect("signature");
    let compiled = module
        .compile(entry, &args, &options(dev))
        .unwrap_or_else(|e| panic!("{e}"));
    let loaded = dev.load_compiled(&compiled).expect("load");
    (compiled, loaded)
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn ramp(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32).collect()
}

fn dl_f32(data: u64, dev: &Device, shape: &mut [i64], strides: Option<&mut [i64]>) -> DLTensor {
    DLTensor {
        data: data as *mut c_void,
        device: DLDevice {
            device_type: DL_CUDA,
            device_id: dev.ordinal() as i32,
        },
        ndim: shape.len() as i32,
        dtype: DLDataType {
            code: DL_FLOAT,
            bits: 32,
            lanes: 1,
        },
        shape: shape.as_mut_ptr(),
        strides: strides.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
        byte_offset: 0,
    }
}

#[test]
fn dlpack_tensor_on_a_borrowed_raw_stream() {
    let Some(dev) = device("dlpack_tensor_on_a_borrowed_raw_stream") else {
        return;
    };
    let (_, k) = compile(&dev, SCALE, "scale", "float32[::1], float32");
    let n = 1000usize;
    let host = ramp(n);
    let buf = dev.upload(&f32_bytes(&host)).unwrap();
    dev.synchronize().unwrap();
    let mut shape = [n as i64];
    let t = dl_f32(dev.address(&buf), &dev, &mut shape, None);
    // SAFETY: `t` and its shape are live; the data is the library's own allocation.
    let arr = unsafe { DeviceArray::from_dlpack(&t) }.unwrap();
    arr.check_device(dev.ordinal()).unwrap();
    let a = arr.to_arg(&k.abi().params[0]).unwrap();

    // Another framework's stream, made with the bare driver API.
    let raw = result::stream::create(result::stream::StreamKind::NonBlocking).unwrap();
    // SAFETY: `raw` is a live stream of the current (primary) context; destroyed below.
    let stream = unsafe { Stream::from_raw(raw) };
    assert!(!stream.is_owned() && !stream.is_default());
    dev.launch_on(
        &k,
        &[a, ArgValue::Float(2.0)],
        &LaunchConfig::for_elements(n as u64, 128),
        &stream,
    )
    .unwrap();
    dev.synchronize_stream(&stream).unwrap();
    drop(stream);
    // Dropping the borrowed handle left the stream alive for its owner.
    // SAFETY: `raw` is still a live stream; this is its owner destroying it.
    unsafe { result::stream::synchronize(raw) }.unwrap();
    unsafe { result::stream::destroy(raw) }.unwrap();

    let out = f32s(&dev.download(&buf).unwrap());
    let want: Vec<f32> = host.iter().map(|x| x * 2.0).collect();
    assert_eq!(out, want);
}

#[test]
fn dlpack_byte_offsets_and_element_strides() {
    let Some(dev) = device("dlpack_byte_offsets_and_element_strides") else {
        return;
    };
    let (_, k) = compile(&dev, SCALE, "scale", "float32[:], float32");
    let n = 64usize;
    let host = ramp(n);
    let buf = dev.upload(&f32_bytes(&host)).unwrap();
    let base = dev.address(&buf);

    // Elements 10.. through byte_offset, scaled by 3.
    let mut shape = [(n - 10) as i64];
    let mut t = dl_f32(base, &dev, &mut shape, None);
    t.byte_offset = 40;
    // SAFETY: live tensor over the library's allocation.
    let tail = unsafe { ArraySource::Dlpack(&t).to_arg(&k.abi().params[0]) }.unwrap();
    dev.launch(
        &k,
        &[tail, ArgValue::Float(3.0)],
        &LaunchConfig::new(1u32, 64u32),
    )
    .unwrap();
    // Every other element (stride 2 elements, as DLPack counts), scaled by 5.
    let mut shape = [(n / 2) as i64];
    let mut strides = [2i64];
    let t = dl_f32(base, &dev, &mut shape, Some(&mut strides));
    // SAFETY: as above.
    let evens = unsafe { ArraySource::Dlpack(&t).to_arg(&k.abi().params[0]) }.unwrap();
    dev.launch(
        &k,
        &[evens, ArgValue::Float(5.0)],
        &LaunchConfig::new(1u32, 64u32),
    )
    .unwrap();
    dev.synchronize().unwrap();

    let out = f32s(&dev.download(&buf).unwrap());
    let want: Vec<f32> = (0..n)
        .map(|i| {
            let mut x = i as f32;
            if i >= 10 {
                x *= 3.0;
            }
            if i % 2 == 0 {
                x *= 5.0;
            }
            x
        })
        .collect();
    assert_eq!(out, want);
}

#[test]
fn cai_description_on_a_library_stream_and_dlpack_wins() {
    let Some(dev) = device("cai_description_on_a_library_stream_and_dlpack_wins") else {
        return;
    };
    let (_, k) = compile(&dev, SCALE, "scale", "float32[:], float32");
    let stream = dev.create_stream().unwrap();
    assert!(stream.is_owned());
    let n = 512usize;
    let host = ramp(n);
    // Uploaded on the legacy default stream, which the CAI's `stream: 1` names below; the
    // library's (non-blocking) stream is ordered after it with an event, not a host wait.
    let buf = dev.upload(&f32_bytes(&host)).unwrap();
    let addr = dev.address(&buf);

    // Every other element, strides in bytes, as json.dumps(x[::2].__cuda_array_interface__).
    let json = format!(
        r#"{{"shape": [{}], "typestr": "<f4", "descr": [["", "<f4"]], "data": [{addr}, false],
            "strides": [8], "version": 3, "stream": 1, "mask": null}}"#,
        n / 2
    );
    let cai = CudaArrayInterface::from_json(&json).unwrap();
    // SAFETY: 1 is CU_STREAM_LEGACY, valid in every context.
    let producer = unsafe { Stream::from_handle(cai.stream.unwrap() as usize) };
    assert!(producer.is_default());
    dev.wait_stream(&stream, &producer).unwrap();
    let a = cai.to_arg(&k.abi().params[0]).unwrap();
    dev.launch_on(
        &k,
        &[a, ArgValue::Float(0.5)],
        &LaunchConfig::for_elements(n as u64, 128),
        &stream,
    )
    .unwrap();
    dev.synchronize_stream(&stream).unwrap();
    let out = f32s(&dev.download(&buf).unwrap());
    let want: Vec<f32> = (0..n)
        .map(|i| if i % 2 == 0 { i as f32 * 0.5 } else { i as f32 })
        .collect();
    assert_eq!(out, want);

    // An object offering both: DLPack (the first 8 elements) wins over CAI (all of them).
    let mut shape = [8i64];
    let t = dl_f32(addr, &dev, &mut shape, None);
    let whole = CudaArrayInterface::from_json(&format!(
        r#"{{"shape": [{n}], "typestr": "<f4", "data": [{addr}, false], "version": 3}}"#
    ))
    .unwrap();
    let source = ArraySource::choose(Some(&t as *const DLTensor), Some(whole)).unwrap();
    // SAFETY: `t` is live and describes the library's allocation.
    let a = unsafe { source.to_arg(&k.abi().params[0]) }.unwrap();
    dev.launch_on(
        &k,
        &[a, ArgValue::Float(-1.0)],
        &LaunchConfig::new(4u32, 128u32),
        &stream,
    )
    .unwrap();
    dev.synchronize_stream(&stream).unwrap();
    let after = f32s(&dev.download(&buf).unwrap());
    for i in 0..n {
        let expect = if i < 8 { -want[i] } else { want[i] };
        assert_eq!(after[i], expect, "element {i}");
    }
}

#[test]
fn launches_from_many_threads_on_their_own_streams() {
    let Some(dev) = device("launches_from_many_threads_on_their_own_streams") else {
        return;
    };
    let (_, k) = compile(&dev, SCALE, "scale", "float32[::1], float32");
    let n = 4096usize;
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let (dev, k) = (&dev, &k);
            s.spawn(move || {
                let host: Vec<f32> = (0..n).map(|i| (i as f32) + t as f32).collect();
                let buf = dev.upload(&f32_bytes(&host)).unwrap();
                dev.synchronize().unwrap();
                let stream = dev.create_stream().unwrap();
                let a = ArgValue::Array(ArrayArg {
                    data: dev.address(&buf),
                    shape: vec![n as u64],
                    strides: vec![1],
                });
                let packed = k.pack(&[a, ArgValue::Float(2.0)]).unwrap();
                let cfg = LaunchConfig::for_elements(n as u64, 256);
                for _ in 0..10 {
                    dev.launch_packed(k, &packed, &cfg, &stream).unwrap();
                }
                dev.synchronize_stream(&stream).unwrap();
                let out = f32s(&dev.download(&buf).unwrap());
                let want: Vec<f32> = host.iter().map(|x| x * 1024.0).collect();
                assert_eq!(out, want, "thread {t}");
            });
        }
    });
}

#[test]
fn cached_specializations_load_once_and_run_on_default_streams() {
    let Some(dev) = device("cached_specializations_load_once_and_run_on_default_streams") else {
        return;
    };
    let cache = KernelCache::new();
    let (args, _) = parse_signature("float32[::1], float32").unwrap();
    let opts = options(&dev);
    let c1 = cache
        .get_or_compile_source("scale.py", SCALE, "scale", &args, &opts)
        .unwrap();
    let c2 = cache
        .get_or_compile_source("scale.py", SCALE, "scale", &args, &opts)
        .unwrap();
    assert_eq!(cache.stats().compiles, 1);
    let k1 = dev.load_cached(&c1).unwrap();
    let k2 = dev.load_cached(&c2).unwrap();
    assert!(Arc::ptr_eq(&k1, &k2));

    let n = 300usize;
    let host = ramp(n);
    let buf = dev.upload(&f32_bytes(&host)).unwrap();
    let f32_ = pydevice::types::Scalar::Float32;
    assert!(matches!(
        dev.array(&buf, f32_, &[n as u64 + 1]),
        Err(RuntimeError::Argument(_))
    ));
    let a = dev.array(&buf, f32_, &[n as u64]).unwrap();
    a.check_device(dev.ordinal()).unwrap();
    let a = a.to_arg(&k1.abi().params[0]).unwrap();
    let cfg = LaunchConfig::for_elements(n as u64, 64);
    dev.launch_on(
        &k1,
        &[a.clone(), ArgValue::Float(2.0)],
        &cfg,
        &dev.default_stream(),
    )
    .unwrap();
    dev.synchronize().unwrap();
    // The per-thread default stream.
    let per_thread = Stream::per_thread();
    assert!(per_thread.is_default());
    dev.launch_on(&k2, &[a, ArgValue::Float(3.0)], &cfg, &per_thread)
        .unwrap();
    dev.synchronize_stream(&per_thread).unwrap();
    let out = f32s(&dev.download(&buf).unwrap());
    let want: Vec<f32> = host.iter().map(|x| x * 6.0).collect();
    assert_eq!(out, want);
}

#[test]
fn reflection_matches_cu_func_get_attribute() {
    let Some(dev) = device("reflection_matches_cu_func_get_attribute") else {
        return;
    };
    let arch = dev.arch().unwrap();
    let raw = |k: &LoadedKernel, a: CUfunction_attribute| -> u32 {
        // SAFETY: the function is loaded while `k` lives.
        unsafe { result::function::get_function_attribute(k.cu_function(), a) }.unwrap() as u32
    };
    use CUfunction_attribute as A;
    for (src, entry, sig, min_static) in [
        (SCALE, "scale", "float32[::1], float32", 0u32),
        (
            MATMUL,
            "matmul",
            "float32[:, ::1], float32[:, ::1], float32[:, ::1]",
            2 * 16 * 16 * 4,
        ),
    ] {
        let (compiled, k) = compile(&dev, src, entry, sig);
        let at = k.attributes().unwrap();
        println!("{entry}: {at:?}");
        assert_eq!(at.registers, raw(&k, A::CU_FUNC_ATTRIBUTE_NUM_REGS));
        assert_eq!(
            at.static_shared_bytes,
            raw(&k, A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        );
        assert_eq!(
            at.local_bytes,
            raw(&k, A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
        );
        assert_eq!(
            at.const_bytes,
            raw(&k, A::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)
        );
        assert_eq!(
            at.max_threads_per_block,
            raw(&k, A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        );
        assert_eq!(
            at.max_dynamic_shared_bytes,
            raw(&k, A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
        );
        assert_eq!(at.ptx_version, raw(&k, A::CU_FUNC_ATTRIBUTE_PTX_VERSION));
        assert_eq!(
            at.binary_version,
            raw(&k, A::CU_FUNC_ATTRIBUTE_BINARY_VERSION)
        );
        // Sane numbers.
        assert!(at.registers > 0 && at.registers <= 255, "{at:?}");
        assert!(at.static_shared_bytes >= min_static, "{at:?}");
        assert!(at.static_shared_bytes <= min_static + 256, "{at:?}");
        assert_eq!(at.local_bytes, 0, "{at:?}");
        assert!(
            at.max_threads_per_block >= 32 && at.max_threads_per_block <= 1024,
            "{at:?}"
        );
        assert_eq!(at.binary_version, arch.number(), "{at:?}");
        assert!(
            at.ptx_version > 0 && at.ptx_version <= compiled.arch.number(),
            "{at:?}"
        );
        let json = serde_json::to_value(at).unwrap();
        assert_eq!(json["registers"], at.registers);
    }
}

#[test]
fn occupancy_is_what_the_driver_says() {
    let Some(dev) = device("occupancy_is_what_the_driver_says") else {
        return;
    };
    let (_, k) = compile(&dev, SCALE, "scale", "float32[::1], float32");
    let sms = dev
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .unwrap() as u32;
    let threads_per_sm = dev
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)
        .unwrap() as u32;
    for block in [32u32, 128, 256, 1024] {
        let occ = k.occupancy(block, 0).unwrap();
        // SAFETY: the function is loaded while `k` lives.
        let raw = unsafe {
            result::occupancy::max_active_block_per_multiprocessor(k.cu_function(), block as i32, 0)
        }
        .unwrap() as u32;
        assert_eq!(occ.active_blocks_per_sm, raw);
        assert_eq!(k.active_blocks_per_sm(block, 0).unwrap(), raw);
        assert!(occ.active_blocks_per_sm >= 1, "{occ:?}");
        assert!(
            occ.active_blocks_per_sm * block <= threads_per_sm,
            "{occ:?}"
        );
        assert_eq!(occ.max_warps_per_sm, threads_per_sm / 32);
        assert!(occ.fraction > 0.0 && occ.fraction <= 1.0, "{occ:?}");
    }
    let s = k.suggested_block_size(0).unwrap();
    println!("suggested: {s:?} on {sms} multiprocessors");
    let max = k.attributes().unwrap().max_threads_per_block;
    assert!(s.block_threads > 0 && s.block_threads <= max, "{s:?}");
    assert!(s.min_grid_blocks >= sms, "{s:?}");
    assert!(k.active_blocks_per_sm(s.block_threads, 0).unwrap() >= 1);
}

#[test]
fn rejected_launches_name_the_kernel_and_leave_the_context_usable() {
    let Some(dev) = device("rejected_launches_name_the_kernel_and_leave_the_context_usable") else {
        return;
    };
    let (_, k) = compile(&dev, SCALE, "scale", "float32[::1], float32");
    let n = 256usize;
    let host = ramp(n);
    let buf = dev.upload(&f32_bytes(&host)).unwrap();
    let args = [
        ArgValue::Array(ArrayArg {
            data: dev.address(&buf),
            shape: vec![n as u64],
            strides: vec![1],
        }),
        ArgValue::Float(2.0),
    ];
    let rejected = |cfg: LaunchConfig, needle: &str| {
        let e = dev
            .launch(&k, &args, &cfg)
            .expect_err("the launch must be rejected");
        println!("{e}");
        match &e {
            RuntimeError::Launch { kernel, message } => {
                assert_eq!(kernel, "scale");
                assert!(message.contains(needle), "`{needle}` not in: {message}");
            }
            other => panic!("expected a rejected launch, got {other:?}"),
        }
        assert!(e.context_usable());
        assert!(e.to_string().contains("`scale`"));
    };
    rejected(LaunchConfig::new(1u32, 2048u32), "2048 threads");
    rejected(LaunchConfig::new((1u32, 70_000u32), 32u32), "grid extent y");
    rejected(
        LaunchConfig::new(1u32, 256u32).with_shared(64 * 1024),
        "set_max_dynamic_shared",
    );
    // Raising the kernel's limit makes the same launch valid.
    k.set_max_dynamic_shared(64 * 1024).unwrap();
    assert_eq!(k.attributes().unwrap().max_dynamic_shared_bytes, 64 * 1024);
    // Beyond what the device allows: an error naming the kernel, not a crash.
    let optin = dev
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        .unwrap() as u32;
    let e = k.set_max_dynamic_shared(optin + 4096).unwrap_err();
    println!("{e}");
    assert_eq!(e.kernel(), Some("scale"));
    assert!(e.context_usable());
    // Arguments packed for another kernel are refused.
    let packed = k.pack(&args).unwrap();
    let (_, matmul) = compile(
        &dev,
        MATMUL,
        "matmul",
        "float32[:, ::1], float32[:, ::1], float32[:, ::1]",
    );
    let e = dev
        .launch_packed(
            &matmul,
            &packed,
            &LaunchConfig::new(1u32, 1u32),
            &Stream::default(),
        )
        .unwrap_err();
    assert!(matches!(e, RuntimeError::Argument(_)), "{e:?}");

    // The context still works: the 64 KiB launch now runs and computes.
    dev.launch(
        &k,
        &args,
        &LaunchConfig::new(1u32, 256u32).with_shared(64 * 1024),
    )
    .unwrap();
    dev.synchronize().unwrap();
    let out = f32s(&dev.download(&buf).unwrap());
    let want: Vec<f32> = host.iter().map(|x| x * 2.0).collect();
    assert_eq!(out, want);
}

#[test]
fn an_illegal_address_is_an_error_naming_the_kernel() {
    if !driver_available() {
        println!("skipped an_illegal_address_is_an_error_naming_the_kernel: no CUDA driver");
        return;
    }
    // The fault is sticky: it ruins the CUDA context for the rest of the process, so the
    // faulting launch runs in a child process (this binary, running only `fault_child`).
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "gpu_runtime::fault_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(FAULT_CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("child stdout:\n{stdout}\nchild stderr:\n{stderr}");
    assert!(out.status.success(), "the child failed: {:?}", out.status);
    let line = stdout
        .lines()
        .find_map(|l| l.find("FAULT REPORTED: ").map(|at| &l[at..]))
        .expect("the child reported the fault");
    assert!(line.contains("`scale`"), "{line}");
    assert!(line.contains("CUDA_ERROR_"), "{line}");
}

/// Runs only as the child of [`an_illegal_address_is_an_error_naming_the_kernel`].
#[test]
fn fault_child() {
    if std::env::var_os(FAULT_CHILD).is_none() {
        return;
    }
    let dev = Device::open(0).unwrap();
    let (_, k) = compile(&dev, SCALE, "scale", "float32[:], float32");
    let buf = dev.upload(&[0u8; 4 * 32]).unwrap();
    // A descriptor that lies: 32 elements, 2^40 elements (4 TiB) apart, in a 128-byte buffer.
    let a = ArgValue::Array(ArrayArg {
        data: dev.address(&buf),
        shape: vec![32],
        strides: vec![1i64 << 40],
    });
    let args = [a, ArgValue::Float(2.0)];
    let cfg = LaunchConfig::new(1u32, 32u32);
    let err = match dev.launch(&k, &args, &cfg) {
        Err(e) => e,
        Ok(()) => dev
            .synchronize()
            .expect_err("an illegal address must be reported"),
    };
    println!("FAULT REPORTED: {err}");
    assert!(matches!(err, RuntimeError::Fault { .. }), "{err:?}");
    assert_eq!(err.kernel(), Some("scale"));
    assert!(!err.context_usable());
    // Later calls on the ruined context are errors too, not crashes.
    let again = dev.launch(&k, &args, &cfg).and_then(|()| dev.synchronize());
    println!("AFTERWARDS: {again:?}");
    assert!(again.is_err());
}

/// Host memory in use by this process (resident set), in bytes.
fn host_rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// A kernel of two arrays for the soak test: `b[i] = a[i] * f + b[i]`.
const AXPY: &str = r#"
from cuda import device

@device.kernel
def axpy(a, b, f):
    i = device.tid(1)
    if i < len(a):
        b[i] = a[i] * f + b[i]
"#;

/// The soak test: 16 threads compile (through one `KernelCache` with a disk directory) and
/// launch random specializations for `PYDEVICE_SOAK_SECONDS` (default 600), checking every
/// result, while the main thread samples host RSS and free device memory every 5 s. After a
/// warm-up (the first quarter, at least 20 s) neither may grow by more than 64 MiB (host) or
/// 64 MiB (device) over its warm-up level, and no call may fail. Besides cached kernels
/// (`load_cached`), every 8th launch compiles and loads a kernel afresh and drops it, so
/// that compiling, loading and unloading are exercised throughout, not only until the cache
/// is warm. Run on a GPU machine:
/// `PYDEVICE_SOAK_SECONDS=120 it --ignored --exact gpu_runtime::soak_compile_and_launch_from_16_threads --nocapture`.
#[test]
#[ignore = "long: run explicitly on a GPU machine (see the doc comment)"]
fn soak_compile_and_launch_from_16_threads() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::{Duration, Instant};
    let Some(dev) = device("soak_compile_and_launch_from_16_threads") else {
        return;
    };
    let seconds: u64 = std::env::var("PYDEVICE_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let dir = std::env::temp_dir().join(format!("pydevice-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cache = KernelCache::with_disk(&dir).expect("cache directory");
    let base = options(&dev);
    let dev = Arc::new(dev);
    let stop = AtomicBool::new(false);
    let launches = AtomicU64::new(0);
    let fresh = AtomicU64::new(0);
    let errors: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let cu_ctx = dev.cu_context();
    let free_device = || {
        // SAFETY: the device's own context, alive for the whole test.
        unsafe { result::ctx::set_current(cu_ctx) }.expect("bind the context");
        result::mem_get_info()
            .map(|(free, _)| free as u64)
            .expect("cuMemGetInfo")
    };
    let mut samples: Vec<(f64, u64, u64)> = Vec::new();
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..16u64 {
            let (dev, cache, stop, launches, fresh, errors, base) =
                (&dev, &cache, &stop, &launches, &fresh, &errors, &base);
            s.spawn(move || {
                let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ (t << 32);
                let mut next = move |n: u64| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng % n
                };
                let stream = dev.create_stream().expect("stream");
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let r = (|| -> Result<(), String> {
                        let float = next(2) == 0;
                        let (dtype, name) = match (float, next(2)) {
                            (true, 0) => (pydevice::types::Scalar::Float32, "float32"),
                            (true, _) => (pydevice::types::Scalar::Float64, "float64"),
                            (false, 0) => (pydevice::types::Scalar::Int32, "int32"),
                            (false, _) => (pydevice::types::Scalar::Int64, "int64"),
                        };
                        let layout = if next(2) == 0 { "[::1]" } else { "[:]" };
                        let axpy = next(2) == 0;
                        let sig = if axpy {
                            format!("{name}{layout}, {name}{layout}, {name}")
                        } else {
                            format!("{name}{layout}, {name}")
                        };
                        let opts = CompileOptions {
                            opt_level: pydevice::OptLevel::try_from(1 + next(3) as u8)
                                .expect("1, 2 or 3"),
                            ..base.clone()
                        };
                        let (src, entry) = if axpy {
                            (AXPY, "axpy")
                        } else {
                            (SCALE, "scale")
                        };
                        let args = parse_signature(&sig)?.0;
                        let kernel: Arc<LoadedKernel> = if i.is_multiple_of(8) {
                            fresh.fetch_add(1, Ordering::Relaxed);
                            let k = Module::parse("soak.py", src)
                                .map_err(|d| d.render())?
                                .compile(entry, &args, &opts)
                                .map_err(|e| e.to_string())?;
                            Arc::new(dev.load_compiled(&k).map_err(|e| e.to_string())?)
                        } else {
                            let k = cache
                                .get_or_compile_source("soak.py", src, entry, &args, &opts)
                                .map_err(|e| e.to_string())?;
                            dev.load_cached(&k).map_err(|e| e.to_string())?
                        };
                        let n = 1 + next(1 << 16);
                        let size = dtype.size() as usize;
                        // Element k holds k (as the dtype); f = 3.
                        let bytes = |k: u64| -> Vec<u8> {
                            match name {
                                "float32" => (k as f32).to_le_bytes().to_vec(),
                                "float64" => (k as f64).to_le_bytes().to_vec(),
                                "int32" => (k as i32).to_le_bytes().to_vec(),
                                _ => (k as i64).to_le_bytes().to_vec(),
                            }
                        };
                        let data: Vec<u8> = (0..n).flat_map(bytes).collect();
                        let abuf = dev.upload(&data).map_err(|e| e.to_string())?;
                        let bbuf = dev.upload(&data).map_err(|e| e.to_string())?;
                        // The uploads ran on the legacy default stream; the launch runs on this
                        // thread's non-blocking stream, which does not wait for it.
                        dev.synchronize().map_err(|e| e.to_string())?;
                        let arr = |b| {
                            dev.array(b, dtype, &[n])
                                .and_then(|a| a.to_arg(&kernel.abi().params[0]))
                                .map_err(|e| e.to_string())
                        };
                        let f = if float {
                            ArgValue::Float(3.0)
                        } else {
                            ArgValue::Int(3)
                        };
                        let mut argv = vec![arr(&abuf)?];
                        if axpy {
                            argv.push(arr(&bbuf)?);
                        }
                        argv.push(f);
                        let cfg = LaunchConfig::new((n as u32).div_ceil(256), 256u32);
                        dev.launch_on(&kernel, &argv, &cfg, &stream)
                            .map_err(|e| e.to_string())?;
                        dev.synchronize_stream(&stream).map_err(|e| e.to_string())?;
                        let out = dev
                            .download(if axpy { &bbuf } else { &abuf })
                            .map_err(|e| e.to_string())?;
                        for k in [0, n / 2, n - 1] {
                            let want = bytes(if axpy { 4 * k } else { 3 * k });
                            let at = k as usize * size;
                            if out[at..at + size] != want[..] {
                                return Err(format!("{entry}({sig}) element {k} of {n} is wrong"));
                            }
                        }
                        launches.fetch_add(1, Ordering::Relaxed);
                        Ok(())
                    })();
                    if let Err(e) = r {
                        errors.lock().unwrap().push(format!("thread {t}: {e}"));
                        stop.store(true, Ordering::Relaxed);
                    }
                }
            });
        }
        while start.elapsed() < Duration::from_secs(seconds) && !stop.load(Ordering::Relaxed) {
            samples.push((start.elapsed().as_secs_f64(), host_rss(), free_device()));
            println!(
                "soak {:6.1} s: {} launches ({} fresh compiles), host RSS {} MiB, device free {} MiB",
                samples.last().unwrap().0,
                launches.load(Ordering::Relaxed),
                fresh.load(Ordering::Relaxed),
                samples.last().unwrap().1 >> 20,
                samples.last().unwrap().2 >> 20
            );
            std::thread::sleep(Duration::from_secs(5).min(Duration::from_secs(seconds)));
        }
        stop.store(true, Ordering::Relaxed);
    });
    samples.push((start.elapsed().as_secs_f64(), host_rss(), free_device()));
    let _ = std::fs::remove_dir_all(&dir);
    let errors = errors.into_inner().unwrap();
    assert!(errors.is_empty(), "errors: {errors:#?}");
    let warm = (seconds as f64 / 4.0).max(20.0).min(seconds as f64);
    let baseline = samples
        .iter()
        .find(|s| s.0 >= warm)
        .or(samples.last())
        .copied()
        .unwrap();
    let last = *samples.last().unwrap();
    let (host_growth, device_drop) = (
        last.1.saturating_sub(baseline.1),
        baseline.2.saturating_sub(last.2),
    );
    println!(
        "soak done: {} launches in {:.0} s; host RSS {} -> {} MiB, device free {} -> {} MiB after warm-up at {:.0} s",
        launches.load(Ordering::Relaxed),
        last.0,
        baseline.1 >> 20,
        last.1 >> 20,
        baseline.2 >> 20,
        last.2 >> 20,
        baseline.0
    );
    assert!(launches.load(Ordering::Relaxed) > 0);
    assert!(
        host_growth <= 64 << 20,
        "host RSS grew {} MiB",
        host_growth >> 20
    );
    assert!(
        device_drop <= 64 << 20,
        "device memory grew {} MiB",
        device_drop >> 20
    );
}

// ---- ElementwiseKernel and ReductionKernel (src/kernels, docs/semantics.md §20) ----

mod one_line_kernels {
    use super::{device, f32_bytes, f32s};
    use pydevice::abi::ArgValue;
    use pydevice::kernels::{ElementwiseKernel, Operand, ReductionKernel, ScalarArg};
    use pydevice::runtime::{Device, DeviceArray, DeviceBuffer};
    use pydevice::types::Scalar;

    /// Deterministic pseudo-random floats in [-1, 1).
    fn random(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    fn upload(dev: &Device, v: &[f32], shape: &[u64]) -> (DeviceBuffer, DeviceArray) {
        let buf = dev.upload(&f32_bytes(v)).expect("upload");
        let a = dev.array(&buf, Scalar::Float32, shape).expect("array");
        (buf, a)
    }

    fn download(dev: &Device, out: &pydevice::kernels::Output) -> Vec<f32> {
        f32s(
            &dev.download(out.buffer.as_ref().expect("allocated"))
                .expect("download"),
        )
    }

    fn close(got: &[f32], want: &[f64], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}");
        for (k, (&g, &w)) in got.iter().zip(want).enumerate() {
            let tol = 1e-4 * w.abs().max(1.0);
            assert!((f64::from(g) - w).abs() <= tol, "{what}[{k}]: {g} vs {w}");
        }
    }

    #[test]
    fn elementwise_squared_diff_broadcast_scalar_and_strided() {
        let Some(dev) = device("elementwise_squared_diff_broadcast_scalar_and_strided") else {
            return;
        };
        let k = ElementwiseKernel::new("T x, T y", "T z", "z = (x - y) * (x - y)", "sqd").unwrap();
        let (rows, cols) = (300usize, 257usize);
        let xv = random(rows * cols, 1);
        let yv = random(cols, 2);
        let (_bx, x) = upload(&dev, &xv, &[rows as u64, cols as u64]);
        let (_by, y) = upload(&dev, &yv, &[cols as u64]);
        // Broadcast of a row.
        let out = k
            .call(&dev, &[Operand::Array(x.clone()), Operand::Array(y)], None)
            .unwrap_or_else(|e| panic!("{e}"));
        let want: Vec<f64> = (0..rows * cols)
            .map(|i| (f64::from(xv[i]) - f64::from(yv[i % cols])).powi(2))
            .collect();
        close(&download(&dev, &out[0]), &want, "broadcast");
        // A Python float.
        let s = Operand::Scalar(ScalarArg::python(ArgValue::Float(0.25)));
        let out = k.call(&dev, &[Operand::Array(x.clone()), s], None).unwrap();
        let want: Vec<f64> = xv.iter().map(|&v| (f64::from(v) - 0.25).powi(2)).collect();
        close(&download(&dev, &out[0]), &want, "scalar");
        // Every other column (a strided view) against its transpose-free reference.
        let view = DeviceArray {
            shape: vec![rows as u64, (cols / 2) as u64],
            strides: vec![cols as i64, 2],
            ..x.clone()
        };
        let out = k
            .call(
                &dev,
                &[Operand::Array(view.clone()), Operand::Array(view)],
                None,
            )
            .unwrap();
        assert!(download(&dev, &out[0]).iter().all(|&v| v == 0.0));
        // 2**22 contiguous elements (the fast path).
        let n = 1usize << 22;
        let av = random(n, 3);
        let bv = random(n, 4);
        let (_ba, a) = upload(&dev, &av, &[n as u64]);
        let (_bb, b) = upload(&dev, &bv, &[n as u64]);
        let out = k
            .call(&dev, &[Operand::Array(a), Operand::Array(b)], None)
            .unwrap();
        let want: Vec<f64> = (0..n)
            .map(|i| (f64::from(av[i]) - f64::from(bv[i])).powi(2))
            .collect();
        close(&download(&dev, &out[0]), &want, "contiguous");
    }

    /// Kernels that unravel an index take two elements per thread (§20.3): against a
    /// reference that walks every operand by its strides, bit for bit, at sizes where some
    /// threads have two elements and some one (odd extents, one block, many), with flat,
    /// broadcast-row (1-d to 3-d blocks), unravelled and backwards operands and a strided
    /// output.
    #[test]
    fn elementwise_two_elements_per_thread_bit_exact() {
        let Some(dev) = device("elementwise_two_elements_per_thread_bit_exact") else {
            return;
        };
        let k = ElementwiseKernel::new("T x, T y", "T z", "z = (x - y) * (x - y)", "sqd").unwrap();
        for (full, ysh, x_rev) in [
            (vec![3u64, 5], vec![5u64], false),
            (vec![300, 257], vec![257], false),
            (vec![1027, 1023], vec![1023], true),
            (vec![3, 5, 7, 9], vec![9], false),
            (vec![3, 5, 7, 9], vec![7, 9], true),
            (vec![3, 5, 7, 9], vec![5, 7, 9], false),
            (vec![3, 5, 7, 9], vec![5, 1, 9], false),
            (vec![3, 5, 7, 9], vec![3, 1, 1, 1], true),
            (vec![2, 1 << 20], vec![1 << 20], false),
        ] {
            let n: u64 = full.iter().product();
            let xv = random(n as usize, 5);
            let yv = random(ysh.iter().product::<u64>() as usize, 6);
            let (_bx, mut x) = upload(&dev, &xv, &full);
            // x reversed along its first axis: the same values, walked backwards.
            let row = (n / full[0]) as i64;
            if x_rev {
                x.data += (full[0] - 1) * row as u64 * 4;
                x.strides[0] = -row;
            }
            let (_by, y) = upload(&dev, &yv, &ysh);
            // y's strides over `full` (C order, 0 where broadcast).
            let mut yst = vec![0i64; full.len()];
            let mut s = 1i64;
            for (d, &e) in ysh.iter().enumerate().rev() {
                yst[full.len() - ysh.len() + d] = if e == 1 { 0 } else { s };
                s *= e as i64;
            }
            let want: Vec<f32> = (0..n)
                .map(|e| {
                    let (mut r, mut xo, mut yo) = (e, 0i64, 0i64);
                    let mut xs = 1i64;
                    for d in (0..full.len()).rev() {
                        let j = (r % full[d]) as i64;
                        r /= full[d];
                        let xd = if d == 0 && x_rev { -row } else { xs };
                        xo += j * xd;
                        yo += j * yst[d];
                        xs *= full[d] as i64;
                    }
                    let base = if x_rev { (full[0] - 1) as i64 * row } else { 0 };
                    let d = xv[(base + xo) as usize] - yv[yo as usize];
                    d * d
                })
                .collect();
            let out = k
                .call(
                    &dev,
                    &[Operand::Array(x.clone()), Operand::Array(y.clone())],
                    None,
                )
                .unwrap_or_else(|e| panic!("{e}"));
            let got = download(&dev, &out[0]);
            let what = format!("{full:?} with {ysh:?}, x reversed: {x_rev}");
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{what}"
            );
            // A strided output: every other element of a buffer twice as long.
            let zb = dev.alloc_zeroed((2 * n * 4) as usize).expect("alloc");
            let mut z = dev.array(&zb, Scalar::Float32, &full).expect("array");
            z.strides = (0..full.len())
                .map(|d| 2 * full[d + 1..].iter().product::<u64>() as i64)
                .collect();
            k.call(
                &dev,
                &[Operand::Array(x), Operand::Array(y), Operand::Array(z)],
                None,
            )
            .unwrap_or_else(|e| panic!("{e}"));
            let all = f32s(&dev.download(&zb).expect("download"));
            assert!(
                all.iter()
                    .step_by(2)
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{what}, strided output"
            );
            assert!(all.iter().skip(1).step_by(2).all(|&v| v == 0.0), "{what}");
        }
    }

    #[test]
    fn elementwise_add_reverse_with_raw() {
        let Some(dev) = device("elementwise_add_reverse_with_raw") else {
            return;
        };
        let k = ElementwiseKernel::new(
            "T x, raw T y",
            "T z",
            "z = x + y[_ind.size() - i - 1]",
            "add_reverse",
        )
        .unwrap();
        let n = 1000;
        let xv = random(n, 5);
        let yv = random(n, 6);
        let (_bx, x) = upload(&dev, &xv, &[n as u64]);
        let (_by, y) = upload(&dev, &yv, &[n as u64]);
        let out = k
            .call(&dev, &[Operand::Array(x), Operand::Array(y)], None)
            .unwrap();
        let want: Vec<f64> = (0..n)
            .map(|i| f64::from(xv[i]) + f64::from(yv[n - 1 - i]))
            .collect();
        close(&download(&dev, &out[0]), &want, "add_reverse");
    }

    #[test]
    fn reduction_l2norm_every_axis_and_strategy() {
        let Some(dev) = device("reduction_l2norm_every_axis_and_strategy") else {
            return;
        };
        let k = ReductionKernel::new(
            "T x",
            "T y",
            "x * x",
            "a + b",
            "y = sqrt(a)",
            "0",
            "l2norm",
            None,
        )
        .unwrap();
        // (rows, cols, axis): thread (columns), columns, warp (many rows), few long rows
        // (split), full.
        for (rows, cols, axis) in [
            (2usize, 5usize, Some(1i64)),
            (2, 5, Some(0)),
            (4096, 300, Some(0)),
            (5000, 200, Some(1)),
            (16, 100_000, Some(1)),
            (1 << 11, 1 << 10, None),
            (3, 7, None),
        ] {
            let xv = random(rows * cols, (rows * cols) as u64);
            let (_bx, x) = upload(&dev, &xv, &[rows as u64, cols as u64]);
            let axes = axis.map(|a| vec![a]);
            let out = k
                .call(&dev, &[Operand::Array(x)], axes.as_deref(), false)
                .unwrap_or_else(|e| panic!("{e}"));
            let sq = |r: usize, c: usize| f64::from(xv[r * cols + c]).powi(2);
            let want: Vec<f64> = match axis {
                Some(0) => (0..cols)
                    .map(|c| (0..rows).map(|r| sq(r, c)).sum::<f64>().sqrt())
                    .collect(),
                Some(_) => (0..rows)
                    .map(|r| (0..cols).map(|c| sq(r, c)).sum::<f64>().sqrt())
                    .collect(),
                None => vec![
                    (0..rows * cols)
                        .map(|i| f64::from(xv[i]).powi(2))
                        .sum::<f64>()
                        .sqrt(),
                ],
            };
            close(
                &download(&dev, &out[0]),
                &want,
                &format!("l2norm {rows}x{cols} axis {axis:?}"),
            );
        }
    }

    /// numba's guvectorize (§20.9) on the device against the same call on the host (§20.8)
    /// and a reference: a matrix-vector product over broadcast loop dimensions.
    #[test]
    fn guvectorize_matvec_device_equals_host_and_reference() {
        let Some(dev) = device("guvectorize_matvec_device_equals_host_and_reference") else {
            return;
        };
        let src = "@device.func\ndef matvec(m, v, out):\n    for r in range(m.shape[0]):\n        s = m[r, 0] * 0\n        for c in range(m.shape[1]):\n            s += m[r, c] * v[c]\n        out[r] = s\n";
        let g = pydevice::kernels::GuVectorize::new(
            "void(float32[:,:], float32[:], float32[:])",
            "(m,n),(n)->(m)",
            src,
            "matvec",
            "matvec_gufunc",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let (b0, b1, rows, cols) = (64usize, 3usize, 17usize, 33usize);
        let mv = random(b0 * b1 * rows * cols, 7);
        let vv = random(b1 * cols, 8);
        let (_bm, m) = upload(&dev, &mv, &[b0 as u64, b1 as u64, rows as u64, cols as u64]);
        let (_bv, v) = upload(&dev, &vv, &[b1 as u64, cols as u64]);
        let r = g
            .resolve(&[Operand::Array(m.clone()), Operand::Array(v.clone())])
            .unwrap_or_else(|e| panic!("{e}"));
        let n_out = b0 * b1 * rows;
        let ob = dev.alloc_zeroed(n_out * 4).expect("alloc");
        let o = dev
            .array(&ob, Scalar::Float32, &[b0 as u64, b1 as u64, rows as u64])
            .expect("array");
        let (k, launch) = g.bind(&r, vec![o]).unwrap_or_else(|e| panic!("{e}"));
        k.launch(&dev, &launch, &dev.default_stream())
            .unwrap_or_else(|e| panic!("{e}"));
        dev.synchronize().expect("sync");
        let got = f32s(&dev.download(&ob).expect("download"));
        // The host: the same call on host copies.
        let mut hm = mv.clone();
        let mut hv = vv.clone();
        let mut ho = vec![0f32; n_out];
        let host = |p: &mut [f32], shape: &[u64]| {
            Operand::Array(DeviceArray::contiguous(
                p.as_mut_ptr() as u64,
                Scalar::Float32,
                shape,
            ))
        };
        let hr = g
            .resolve(&[
                host(&mut hm, &[b0 as u64, b1 as u64, rows as u64, cols as u64]),
                host(&mut hv, &[b1 as u64, cols as u64]),
            ])
            .unwrap();
        let oa = DeviceArray::contiguous(
            ho.as_mut_ptr() as u64,
            Scalar::Float32,
            &[b0 as u64, b1 as u64, rows as u64],
        );
        let (hk, hl) = g.bind(&hr, vec![oa]).unwrap();
        // SAFETY: `hm`, `hv` and `ho` are alive and as large as the shapes say.
        unsafe { hk.run_host(&hl) }.unwrap_or_else(|e| panic!("{e}"));
        let want: Vec<f64> = (0..n_out)
            .map(|e| {
                let (a, b, row) = (e / (b1 * rows), (e / rows) % b1, e % rows);
                (0..cols)
                    .map(|c| {
                        f64::from(mv[((a * b1 + b) * rows + row) * cols + c])
                            * f64::from(vv[b * cols + c])
                    })
                    .sum()
            })
            .collect();
        close(&got, &want, "device");
        close(&ho, &want, "host");
        // Same operations in the same order: the device may contract a * b + c into an
        // fma, so equal up to a few roundings.
        for (k, (&d, &h)) in got.iter().zip(&ho).enumerate() {
            assert!(
                (d - h).abs() <= 1e-5 * d.abs().max(1.0),
                "[{k}]: device {d}, host {h}"
            );
        }
    }

    /// The sum of a strided view over `axes` on the CPU (f64), in C order of the kept axes.
    fn cpu_sum(base: &[f64], shape: &[u64], strides: &[i64], axes: &[usize]) -> Vec<f64> {
        let kept: Vec<usize> = (0..shape.len()).filter(|d| !axes.contains(d)).collect();
        let n_out: u64 = kept.iter().map(|&d| shape[d]).product();
        let mut out = vec![0.0; n_out as usize];
        let n: u64 = shape.iter().product();
        for flat in 0..n {
            let mut rest = flat;
            let mut idx = [0u64; 8];
            for d in (0..shape.len()).rev() {
                idx[d] = rest % shape[d];
                rest /= shape[d];
            }
            let at: i64 = idx.iter().zip(strides).map(|(&i, &s)| i as i64 * s).sum();
            // (`zip` stops at the view's dimensions.)
            let o = kept.iter().fold(0u64, |o, &d| o * shape[d] + idx[d]);
            out[o as usize] += base[at as usize];
        }
        out
    }

    /// Every strategy of the sum (Thread, Warp, Block, Grid, Columns split and unsplit, with
    /// a post-map) against the CPU: float32, float64 and int32, 2-D and 3-D, axis 0, 1,
    /// (0, 2) and all, keepdims, one row, one column, prime and empty extents, strided views;
    /// a split column sum is the same bit for bit on every call.
    #[test]
    fn reduction_strategies_against_cpu() {
        let Some(dev) = device("reduction_strategies_against_cpu") else {
            return;
        };
        let sum =
            ReductionKernel::new("T x", "T y", "x", "a + b", "y = a", "0", "rsum", None).unwrap();
        // (base shape, view (shape, strides) or None, axes, keepdims)
        type Case = (
            Vec<u64>,
            Option<(Vec<u64>, Vec<i64>)>,
            Option<Vec<i64>>,
            bool,
        );
        let cases: Vec<Case> = vec![
            (vec![4096, 300], None, Some(vec![0]), false),
            (vec![65536, 64], None, Some(vec![0]), true),
            (vec![100_003, 3], None, Some(vec![0]), false),
            (vec![997, 1009], None, Some(vec![0]), false),
            (vec![64, 1 << 17], None, Some(vec![0]), false),
            (vec![7, 1000, 33], None, Some(vec![1]), true),
            (vec![7, 1000, 33], None, Some(vec![0, 2]), false),
            // Many outputs of 1024 rows: the tile narrowed to 8 outputs, unsplit.
            (vec![1024, 256], None, Some(vec![0]), false),
            (vec![1024, 4096], None, Some(vec![0]), true),
            (vec![6, 5, 40, 32], None, Some(vec![0, 2]), false),
            (vec![997, 1009], None, Some(vec![1]), false),
            (vec![16, 4096], None, Some(vec![1]), false),
            (vec![16, 100_000], None, Some(vec![-1]), false),
            (vec![16, 2048], None, Some(vec![0]), false),
            (vec![997, 1009], None, None, false),
            (vec![1, 500], None, Some(vec![0]), false),
            (vec![500, 1], None, Some(vec![0]), true),
            // Every other row and column of a (1203, 663) matrix, over each axis.
            (
                vec![1203, 663],
                Some((vec![602, 331], vec![1326, 2])),
                Some(vec![0]),
                false,
            ),
            (
                vec![1203, 663],
                Some((vec![602, 331], vec![1326, 2])),
                Some(vec![1]),
                false,
            ),
            // The transpose, reduced over its last (non-contiguous) axis.
            (
                vec![1203, 663],
                Some((vec![663, 1203], vec![1, 663])),
                Some(vec![1]),
                false,
            ),
        ];
        let mut seen = std::collections::HashSet::new();
        for dtype in [Scalar::Float32, Scalar::Float64, Scalar::Int32] {
            for (k, (base_shape, view, axis, keepdims)) in cases.iter().enumerate() {
                let n: u64 = base_shape.iter().product();
                let vals: Vec<f64> = random(n as usize, 77 + k as u64)
                    .iter()
                    .map(|&v| {
                        if dtype == Scalar::Int32 {
                            (v * 50.0).round().into()
                        } else {
                            f64::from(v)
                        }
                    })
                    .collect();
                let bytes: Vec<u8> = match dtype {
                    Scalar::Float32 => vals
                        .iter()
                        .flat_map(|&v| (v as f32).to_le_bytes())
                        .collect(),
                    Scalar::Float64 => vals.iter().flat_map(|&v| v.to_le_bytes()).collect(),
                    _ => vals
                        .iter()
                        .flat_map(|&v| (v as i32).to_le_bytes())
                        .collect(),
                };
                let buf = dev.upload(&bytes).expect("upload");
                let full = dev.array(&buf, dtype, base_shape).expect("array");
                let x = match view {
                    Some((shape, strides)) => DeviceArray {
                        shape: shape.clone(),
                        strides: strides.clone(),
                        ..full.clone()
                    },
                    None => full.clone(),
                };
                // The CPU reference over the view as float32/int32 values.
                let stored: Vec<f64> = match dtype {
                    Scalar::Float32 => vals.iter().map(|&v| f64::from(v as f32)).collect(),
                    _ => vals.clone(),
                };
                let ndim = x.shape.len();
                let axes: Vec<usize> = match axis {
                    None => (0..ndim).collect(),
                    Some(list) => list
                        .iter()
                        .map(|&a| {
                            if a < 0 {
                                (a + ndim as i64) as usize
                            } else {
                                a as usize
                            }
                        })
                        .collect(),
                };
                let want = cpu_sum(&stored, &x.shape, &x.strides, &axes);
                let ops = [Operand::Array(x.clone())];
                let r = sum.resolve(&ops, axis.as_deref(), *keepdims).unwrap();
                let outs = r
                    .missing
                    .iter()
                    .map(|&m| DeviceArray::contiguous(0x9000_0000, r.out_dtypes[m], &r.out_shape))
                    .collect();
                let l = sum.bind(&r, outs).unwrap();
                seen.insert((l.strategy, l.splits > 1));
                let what = format!(
                    "{dtype} {base_shape:?} {view:?} axis {axis:?} keepdims {keepdims}: {:?} x{}",
                    l.strategy, l.splits
                );
                let run = || {
                    let out = sum
                        .call(&dev, &ops, axis.as_deref(), *keepdims)
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!(out[0].array.shape, r.out_shape, "{what}");
                    dev.download(out[0].buffer.as_ref().expect("allocated"))
                        .expect("download")
                };
                let got_bytes = run();
                let got: Vec<f64> = match dtype {
                    Scalar::Float32 => f32s(&got_bytes).into_iter().map(f64::from).collect(),
                    Scalar::Float64 => got_bytes
                        .chunks_exact(8)
                        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                        .collect(),
                    _ => got_bytes
                        .chunks_exact(4)
                        .map(|c| f64::from(i32::from_le_bytes(c.try_into().unwrap())))
                        .collect(),
                };
                assert_eq!(got.len(), want.len(), "{what}");
                let n_red = (x.shape.iter().product::<u64>() / want.len().max(1) as u64).max(1);
                let tol = match dtype {
                    Scalar::Float32 => 2e-6 * n_red as f64,
                    Scalar::Float64 => 1e-12 * n_red as f64,
                    _ => 0.0,
                };
                for (j, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= tol + 1e-5 * w.abs(),
                        "{what} [{j}]: {g} vs {w}"
                    );
                }
                if l.splits > 1 {
                    for _ in 0..3 {
                        assert_eq!(run(), got_bytes, "{what}: not reproducible");
                    }
                }
            }
        }
        use pydevice::kernels::Strategy;
        for s in [
            (Strategy::Thread, false),
            (Strategy::Warp, false),
            (Strategy::Block, false),
            (Strategy::Grid, false),
            (Strategy::Columns, false),
            (Strategy::Columns, true),
        ] {
            assert!(seen.contains(&s), "{s:?} was not run: {seen:?}");
        }
    }
}
