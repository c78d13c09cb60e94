//! Runtime tests that need no GPU: the specialization cache (threads, disk, corrupt files),
//! argument sources (DLPack structs and CUDA Array Interface descriptions of fake device
//! pointers, which are never dereferenced), and `Dim3Like` launch shapes.

use pydevice::abi::{ArgValue, ArrayArg, ParamAbi, layout_of};
use pydevice::cache::KernelCache;
use pydevice::runtime::dlpack::{
    DL_BOOL, DL_CPU, DL_CUDA, DL_CUDA_MANAGED, DL_FLOAT, DL_INT, DLDataType, DLDevice,
    DLManagedTensor, DLManagedTensorVersioned, DLPACK_FLAG_READ_ONLY, DLPackVersion, DLTensor,
    dlpack_arg,
};
use pydevice::runtime::{
    ArraySource, CudaArrayInterface, DeviceArray, Dim3, LaunchConfig, RuntimeError,
};
use pydevice::types::signature::parse_signature;
use pydevice::types::{Layout, Scalar, Type};
use pydevice::{Arch, CompileOptions, Module};
use std::sync::{Arc, Barrier};

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

fn param(name: &str, ty: &str) -> ParamAbi {
    let ty = pydevice::types::signature::parse_type(ty).expect("type");
    ParamAbi {
        name: name.into(),
        layout: layout_of(&ty),
        ty,
    }
}

fn argument_error(r: Result<impl std::fmt::Debug, RuntimeError>) -> String {
    match r {
        Err(RuntimeError::Argument(m)) => m,
        other => panic!("expected an argument error, got {other:?}"),
    }
}

// ---------------------------------------------------------------- the specialization cache

#[test]
fn eight_threads_asking_for_one_kernel_compile_it_once() {
    let cache = KernelCache::new();
    let args = sig("float32[::1], float32");
    let opts = CompileOptions::default();
    let barrier = Barrier::new(8);
    let kernels: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    cache
                        .get_or_compile_source("scale.py", SCALE, "scale", &args, &opts)
                        .unwrap_or_else(|e| panic!("{e}"))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let st = cache.stats();
    assert_eq!(st.compiles, 1, "{st:?}");
    assert_eq!((st.misses, st.hits), (1, 7), "{st:?}");
    assert!(kernels.iter().all(|k| Arc::ptr_eq(k, &kernels[0])));
    assert!(kernels[0].ptx.contains(".entry scale"));
    assert_eq!(cache.len(), 1);
}

#[test]
fn each_part_of_the_key_makes_a_new_specialization() {
    let cache = KernelCache::new();
    let module = Module::parse("scale.py", SCALE).unwrap();
    let f32_args = sig("float32[::1], float32");
    let f64_args = sig("float64[::1], float64");
    let base = CompileOptions::default();
    let other_arch = CompileOptions {
        arch: Arch::SM_80,
        ..CompileOptions::default()
    };
    let o1 = CompileOptions {
        opt_level: pydevice::OptLevel::O1,
        ..CompileOptions::default()
    };
    let a = cache
        .get_or_compile(&module, "scale", &f32_args, &base)
        .unwrap();
    let b = cache
        .get_or_compile(&module, "scale", &f64_args, &base)
        .unwrap();
    let c = cache
        .get_or_compile(&module, "scale", &f32_args, &other_arch)
        .unwrap();
    let d = cache
        .get_or_compile(&module, "scale", &f32_args, &o1)
        .unwrap();
    assert!(b.ptx.contains(".f64") && !a.ptx.contains(".f64"));
    assert!(c.ptx.contains("sm_80") && a.ptx.contains("sm_90"));
    assert!(!Arc::ptr_eq(&a, &d));
    // The same request again, through the module and through its text: hits.
    let a2 = cache
        .get_or_compile(&module, "scale", &f32_args, &base)
        .unwrap();
    let a3 = cache
        .get_or_compile_source("scale.py", SCALE, "scale", &f32_args, &base)
        .unwrap();
    assert!(Arc::ptr_eq(&a, &a2) && Arc::ptr_eq(&a, &a3));
    let st = cache.stats();
    assert_eq!((st.compiles, st.hits, st.misses), (4, 2, 4), "{st:?}");
    // The file name is part of the key (`lineinfo` writes it into the PTX).
    let renamed = cache
        .get_or_compile_source("other-name.py", SCALE, "scale", &f32_args, &base)
        .unwrap();
    assert!(!Arc::ptr_eq(&a, &renamed));
    // A different source text is a different key.
    let edited = SCALE.replace("a[i] * f", "a[i] * f + f");
    cache
        .get_or_compile_source("scale.py", &edited, "scale", &f32_args, &base)
        .unwrap();
    assert_eq!(cache.stats().compiles, 6);
}

/// A kernel's `ConstExpr` values are part of the key: one specialization per value, the
/// same value a hit, and the parameters take no launch argument.
#[test]
fn constexpr_values_are_part_of_the_key() {
    use pydevice::ConstValue;
    let src = "from cuda import device\nfrom cuda.device import ConstExpr\n@device.kernel\ndef k(a, n: ConstExpr[int]):\n    i = device.tid(1)\n    if i < len(a):\n        a[i] = a[i] * n\n";
    let cache = KernelCache::new();
    let module = Module::parse("k.py", src).unwrap();
    let args = sig("float32[::1]");
    let with = |n: i128| CompileOptions {
        constants: vec![("n".into(), ConstValue::Int(n))],
        ..CompileOptions::default()
    };
    let a = cache.get_or_compile(&module, "k", &args, &with(3)).unwrap();
    let b = cache.get_or_compile(&module, "k", &args, &with(5)).unwrap();
    let a2 = cache.get_or_compile(&module, "k", &args, &with(3)).unwrap();
    assert!(Arc::ptr_eq(&a, &a2) && !Arc::ptr_eq(&a, &b));
    assert!(
        a.ptx.contains("3.0") || a.ptx.contains("0f40400000"),
        "{}",
        a.ptx
    );
    assert!(b.ptx.contains("0f40A00000"), "{}", b.ptx);
    assert_eq!(a.abi.params.len(), 1);
    assert_eq!(cache.stats().compiles, 2);
    // Without a value: E0218.
    let e = cache
        .get_or_compile(&module, "k", &args, &CompileOptions::default())
        .unwrap_err();
    assert!(e.to_string().contains("E0218"), "{e}");
}

#[test]
fn compile_errors_reach_every_caller_and_are_not_kept() {
    let cache = KernelCache::new();
    let bad = "from cuda import device\n@device.kernel\ndef k(a):\n    a[0] = undefined_name\n";
    let args = sig("float32[::1]");
    let opts = CompileOptions::default();
    let e1 = cache
        .get_or_compile_source("bad.py", bad, "k", &args, &opts)
        .unwrap_err();
    assert!(e1.to_string().contains("undefined_name"), "{e1}");
    let e2 = cache
        .get_or_compile_source("bad.py", bad, "k", &args, &opts)
        .unwrap_err();
    assert_eq!(e1.to_string(), e2.to_string());
    assert_eq!(cache.stats().compiles, 2, "failures are retried");
    assert!(cache.is_empty());
}

// ---------------------------------------------------------------- DLPack

const FAKE: usize = 0x7f00_0000_1000;

fn tensor(shape: &mut [i64], strides: Option<&mut [i64]>, dtype: DLDataType) -> DLTensor {
    DLTensor {
        data: FAKE as *mut std::ffi::c_void,
        device: DLDevice {
            device_type: DL_CUDA,
            device_id: 0,
        },
        ndim: shape.len() as i32,
        dtype,
        shape: shape.as_mut_ptr(),
        strides: strides.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
        byte_offset: 0,
    }
}

const F32: DLDataType = DLDataType {
    code: DL_FLOAT,
    bits: 32,
    lanes: 1,
};

#[test]
fn dlpack_compact_tensors_get_row_major_strides() {
    let mut shape = [3i64, 4, 5];
    let mut t = tensor(&mut shape, None, F32);
    t.byte_offset = 16;
    // SAFETY: `t` points at live shape storage; the data pointer is never dereferenced.
    let a = unsafe { DeviceArray::from_dlpack(&t) }.unwrap();
    assert_eq!(a.data, FAKE as u64 + 16);
    assert_eq!(a.shape, vec![3, 4, 5]);
    assert_eq!(a.strides, vec![20, 5, 1]);
    assert_eq!(a.dtype, Scalar::Float32);
    assert_eq!(a.device, Some(0));
    assert_eq!(a.array_type(), Type::array(Scalar::Float32, 3, Layout::C));

    let p = param("a", "float32[:, :, ::1]");
    // SAFETY: as above.
    let v = unsafe { dlpack_arg(&t, &p) }.unwrap();
    assert_eq!(
        v,
        ArgValue::Array(ArrayArg {
            data: FAKE as u64 + 16,
            shape: vec![3, 4, 5],
            strides: vec![20, 5, 1],
        })
    );
}

#[test]
fn dlpack_strides_are_elements_and_may_be_any() {
    let mut shape = [4i64, 3];
    let mut strides = [1i64, 4]; // Fortran order
    let t = tensor(&mut shape, Some(&mut strides), F32);
    // SAFETY: live shape and strides; data never dereferenced.
    let a = unsafe { DeviceArray::from_dlpack(&t) }.unwrap();
    assert_eq!(a.strides, vec![1, 4]);
    assert_eq!(a.array_type(), Type::array(Scalar::Float32, 2, Layout::F));
    // A C-contiguous parameter refuses it, naming the parameter; an any-layout one takes it.
    let m = argument_error(a.to_arg(&param("x", "float32[:, ::1]")));
    assert!(m.contains("`x`") && m.contains("stride"), "{m}");
    assert!(a.to_arg(&param("x", "float32[:, :]")).is_ok());
    assert!(a.to_arg(&param("x", "float32[::1, :]")).is_ok());
}

#[test]
fn dlpack_rejects_what_kernels_cannot_use() {
    let mut shape = [8i64];
    // Host memory.
    let mut t = tensor(&mut shape, None, F32);
    t.device.device_type = DL_CPU;
    // SAFETY (all below): live shape storage; data never dereferenced.
    let m = argument_error(unsafe { DeviceArray::from_dlpack(&t) });
    assert!(m.contains("kDLCPU") && m.contains("kDLCUDA"), "{m}");
    // Managed memory is fine and belongs to no one device.
    t.device.device_type = DL_CUDA_MANAGED;
    assert_eq!(
        unsafe { DeviceArray::from_dlpack(&t) }.unwrap().device,
        None
    );
    // Vector lanes.
    let t = tensor(
        &mut shape,
        None,
        DLDataType {
            code: DL_FLOAT,
            bits: 32,
            lanes: 4,
        },
    );
    let m = argument_error(unsafe { DeviceArray::from_dlpack(&t) });
    assert!(m.contains("lanes"), "{m}");
    // Float widths device code does not have.
    for (code, bits) in [(DL_FLOAT, 8u8), (4, 32)] {
        let t = tensor(
            &mut shape,
            None,
            DLDataType {
                code,
                bits,
                lanes: 1,
            },
        );
        let m = argument_error(unsafe { DeviceArray::from_dlpack(&t) });
        assert!(m.contains("not supported"), "{m}");
    }
    // dtype against the parameter.
    let t = tensor(
        &mut shape,
        None,
        DLDataType {
            code: DL_INT,
            bits: 64,
            lanes: 1,
        },
    );
    let m = argument_error(unsafe { dlpack_arg(&t, &param("a", "float32[::1]")) });
    assert!(m.contains("`a`") && m.contains("int64"), "{m}");
    // Rank against the parameter.
    let t = tensor(&mut shape, None, F32);
    let m = argument_error(unsafe { dlpack_arg(&t, &param("a", "float32[:, :]")) });
    assert!(m.contains("dimensions"), "{m}");
    // A scalar parameter.
    let m = argument_error(unsafe { dlpack_arg(&t, &param("f", "float32")) });
    assert!(m.contains("not an array"), "{m}");
    // Bad descriptions.
    let m = argument_error(unsafe { DeviceArray::from_dlpack(std::ptr::null()) });
    assert!(m.contains("NULL"), "{m}");
    let mut t = tensor(&mut shape, None, F32);
    t.shape = std::ptr::null_mut();
    assert!(unsafe { DeviceArray::from_dlpack(&t) }.is_err());
    let mut neg = [-1i64];
    let t = tensor(&mut neg, None, F32);
    assert!(unsafe { DeviceArray::from_dlpack(&t) }.is_err());
    let mut t = tensor(&mut shape, None, F32);
    t.data = std::ptr::null_mut();
    assert!(unsafe { DeviceArray::from_dlpack(&t) }.is_err());
    // ...but an empty tensor may have a NULL data pointer.
    let mut empty = [0i64];
    let mut t = tensor(&mut empty, None, F32);
    t.data = std::ptr::null_mut();
    assert!(unsafe { DeviceArray::from_dlpack(&t) }.is_ok());
}

#[test]
fn dlpack_bools_and_managed_tensors() {
    let mut shape = [2i64, 2];
    let t = tensor(
        &mut shape,
        None,
        DLDataType {
            code: DL_BOOL,
            bits: 8,
            lanes: 1,
        },
    );
    let managed = DLManagedTensor {
        dl_tensor: t,
        manager_ctx: std::ptr::null_mut(),
        deleter: None,
    };
    // SAFETY: live structs; data never dereferenced.
    let a = unsafe { DeviceArray::from_dlpack_managed(&managed) }.unwrap();
    assert_eq!((a.dtype, a.readonly), (Scalar::Bool, false));

    let mut versioned = DLManagedTensorVersioned {
        version: DLPackVersion { major: 1, minor: 1 },
        manager_ctx: std::ptr::null_mut(),
        deleter: None,
        flags: DLPACK_FLAG_READ_ONLY,
        dl_tensor: t,
    };
    // SAFETY: as above.
    let a = unsafe { DeviceArray::from_dlpack_versioned(&versioned) }.unwrap();
    assert!(a.readonly);
    versioned.version.major = 2;
    let m = argument_error(unsafe { DeviceArray::from_dlpack_versioned(&versioned) });
    assert!(m.contains("version 2.1"), "{m}");
}

#[test]
fn dlpack_device_ordinal_is_checked_when_known() {
    let mut shape = [8i64];
    let mut t = tensor(&mut shape, None, F32);
    t.device.device_id = 1;
    // SAFETY: live shape storage; data never dereferenced.
    let a = unsafe { DeviceArray::from_dlpack(&t) }.unwrap();
    assert!(a.check_device(1).is_ok());
    let m = argument_error(a.check_device(0));
    assert!(m.contains("GPU 1") && m.contains("GPU 0"), "{m}");
}

// ---------------------------------------------------------------- CUDA Array Interface

#[test]
fn cai_json_as_python_writes_it() {
    // json.dumps(cupy.zeros((4, 3), 'f4')[:, ::2].__cuda_array_interface__), roughly.
    let text = r#"{"shape": [4, 2], "typestr": "<f4", "descr": [["", "<f4"]],
                   "stream": 1, "version": 3, "strides": [12, 8],
                   "data": [139637976727552, false], "mask": null}"#;
    let cai = CudaArrayInterface::from_json(text).unwrap();
    assert_eq!(cai.stream, Some(1));
    let a = cai.to_array().unwrap();
    assert_eq!(a.data, 139637976727552);
    assert_eq!(
        (a.shape.clone(), a.strides.clone()),
        (vec![4, 2], vec![3, 2])
    );
    assert_eq!(a.dtype, Scalar::Float32);
    assert_eq!(a.array_type(), Type::array(Scalar::Float32, 2, Layout::Any));
    let v = cai.to_arg(&param("a", "float32[:, :]")).unwrap();
    assert!(matches!(v, ArgValue::Array(ref x) if x.strides == vec![3, 2]));
    assert!(cai.to_arg(&param("a", "float32[:, ::1]")).is_err());

    // strides None (null) means C-contiguous.
    let text = r#"{"shape": [2, 3, 4], "typestr": "<i8", "data": [4096, true],
                   "strides": null, "version": 3}"#;
    let a = CudaArrayInterface::from_json(text)
        .unwrap()
        .to_array()
        .unwrap();
    assert_eq!(a.strides, vec![12, 4, 1]);
    assert_eq!(a.dtype, Scalar::Int64);
    assert!(a.readonly);
    // ...and so does a missing `strides` key (versions before 2 may leave it out).
    let text = r#"{"shape": [5], "typestr": "|u1", "data": [4096, false], "version": 2}"#;
    let a = CudaArrayInterface::from_json(text)
        .unwrap()
        .to_array()
        .unwrap();
    assert_eq!((a.dtype, a.strides.clone()), (Scalar::UInt8, vec![1]));
}

#[test]
fn cai_rejects_masks_misaligned_strides_and_foreign_types() {
    let base = serde_json::json!({
        "shape": [4], "typestr": "<f4", "data": [4096, false], "version": 3, "strides": null,
    });
    let with = |k: &str, v: serde_json::Value| {
        let mut o = base.clone();
        o[k] = v;
        CudaArrayInterface::from_value(o).and_then(|c| c.to_array())
    };
    let m = argument_error(with("mask", serde_json::json!({"shape": [4]})));
    assert!(m.contains("mask"), "{m}");
    let m = argument_error(with("strides", serde_json::json!([6])));
    assert!(m.contains("multiple") && m.contains("4 bytes"), "{m}");
    let m = argument_error(with("strides", serde_json::json!([4, 4])));
    assert!(m.contains("2 strides for 1 dimensions"), "{m}");
    for (ts, why) in [
        (">f4", "big-endian"),
        ("<c4", "complex width"),
        ("<f16", "float width"),
        ("|V8", "structured"),
        ("f4", "start with"),
    ] {
        let m = argument_error(with("typestr", serde_json::json!(ts)));
        assert!(m.contains(why), "{ts}: {m}");
    }
    let m = argument_error(with("version", serde_json::json!(4)));
    assert!(m.contains("version 4"), "{m}");
    let m = argument_error(with("stream", serde_json::json!(0)));
    assert!(m.contains("stream 0"), "{m}");
    let m = argument_error(with("data", serde_json::json!([0, false])));
    assert!(m.contains("NULL"), "{m}");
    // Malformed JSON and wrong shapes of values are errors, not panics.
    let m = argument_error(CudaArrayInterface::from_json("{\"shape\": [-1]}"));
    assert!(m.contains("malformed"), "{m}");
    assert!(CudaArrayInterface::from_json("not json").is_err());
    // Negative byte strides that are multiples of the item size are fine.
    let a = with("strides", serde_json::json!([-4])).unwrap();
    assert_eq!(a.strides, vec![-1]);
}

/// Complex and fp8 element types cross the CAI and DLPack boundaries with their standard
/// codes (`<c8`/`<c16`; DLPack `kDLComplex`, `kDLFloat8_e4m3fn`, `kDLFloat8_e5m2`).
#[test]
fn complex_fp8_and_16_bit_float_dtypes_are_accepted() {
    use pydevice::runtime::cai::typestr_scalar;
    use pydevice::runtime::dlpack::{dtype_scalar, scalar_dtype};
    assert_eq!(typestr_scalar("<c8").unwrap(), Scalar::Complex64);
    assert_eq!(typestr_scalar("<c16").unwrap(), Scalar::Complex128);
    assert_eq!(typestr_scalar("<f2").unwrap(), Scalar::Float16);
    // DLPack: kDLFloat 16 is float16, kDLBfloat 16 is bfloat16.
    assert_eq!(scalar_dtype(Scalar::Float16).code, 2);
    assert_eq!(scalar_dtype(Scalar::BFloat16).code, 4);
    for s in [
        Scalar::Float16,
        Scalar::BFloat16,
        Scalar::Complex64,
        Scalar::Complex128,
        Scalar::Float8E4M3,
        Scalar::Float8E5M2,
    ] {
        assert_eq!(dtype_scalar(scalar_dtype(s)).unwrap(), s, "{s}");
    }
    let c = DLDataType {
        code: 5,
        bits: 64,
        lanes: 1,
    };
    assert_eq!(dtype_scalar(c).unwrap(), Scalar::Complex64);
    let f8 = DLDataType {
        code: 10,
        bits: 8,
        lanes: 1,
    };
    assert_eq!(dtype_scalar(f8).unwrap(), Scalar::Float8E4M3);
    let a = DeviceArray::contiguous(8192, Scalar::Complex128, &[4]);
    assert_eq!(CudaArrayInterface::from_array(&a).typestr, "<c16");
}

#[test]
fn cai_round_trips_through_a_device_array() {
    let a = DeviceArray {
        data: 8192,
        dtype: Scalar::Float64,
        shape: vec![3, 2],
        strides: vec![1, 3],
        readonly: true,
        device: None,
    };
    let cai = CudaArrayInterface::from_array(&a);
    assert_eq!(cai.typestr, "<f8");
    assert_eq!(cai.strides, Some(vec![8, 24]));
    let text = serde_json::to_string(&cai).unwrap();
    let back = CudaArrayInterface::from_json(&text)
        .unwrap()
        .to_array()
        .unwrap();
    assert_eq!(back, a);
    let c = DeviceArray::contiguous(8192, Scalar::Int32, &[2, 2]);
    assert_eq!(CudaArrayInterface::from_array(&c).strides, None);
}

#[test]
fn dlpack_wins_when_both_are_offered() {
    let mut shape = [8i64];
    let t = tensor(&mut shape, None, F32);
    let cai = CudaArrayInterface::from_json(
        r#"{"shape": [2], "typestr": "<f4", "data": [4096, false], "version": 3}"#,
    )
    .unwrap();
    let both = ArraySource::choose(Some(&t as *const DLTensor), Some(cai.clone())).unwrap();
    assert!(matches!(both, ArraySource::Dlpack(_)));
    // SAFETY: `t` is live; data never dereferenced.
    let a = unsafe { both.array() }.unwrap();
    assert_eq!((a.data, a.len()), (FAKE as u64, 8));
    let only_cai = ArraySource::choose(None, Some(cai)).unwrap();
    // SAFETY: no DLPack pointer involved.
    assert_eq!(unsafe { only_cai.array() }.unwrap().len(), 2);
    assert!(ArraySource::choose(None, None).is_none());
    let raw = ArraySource::Raw(DeviceArray::contiguous(4096, Scalar::Float32, &[3]));
    // SAFETY: no DLPack pointer involved.
    let v = unsafe { raw.to_arg(&param("a", "float32[::1]")) }.unwrap();
    assert!(matches!(v, ArgValue::Array(ref x) if x.shape == vec![3]));
}

// ---------------------------------------------------------------- Dim3Like

#[test]
fn dim3like_from_ints_tuples_and_text() {
    assert_eq!(Dim3::from(256u32), Dim3::new(256, 1, 1));
    assert_eq!(Dim3::from((4u32,)), Dim3::new(4, 1, 1));
    assert_eq!(Dim3::from((4u32, 2u32)), Dim3::new(4, 2, 1));
    assert_eq!(Dim3::from((4u32, 2u32, 3u32)), Dim3::new(4, 2, 3));
    assert_eq!(Dim3::from([7u32, 8]), Dim3::new(7, 8, 1));
    for (text, want) in [
        ("256", Dim3::new(256, 1, 1)),
        ("(4,)", Dim3::new(4, 1, 1)),
        ("(4, 2)", Dim3::new(4, 2, 1)),
        ("[4, 2, 3]", Dim3::new(4, 2, 3)),
        (" 8 , 8 ", Dim3::new(8, 8, 1)),
        ("2147483647", Dim3::new(i32::MAX as u32, 1, 1)),
    ] {
        assert_eq!(text.parse::<Dim3>().unwrap(), want, "{text}");
    }
    for text in [
        "",
        "()",
        "0",
        "-1",
        "(1, 2, 3, 4)",
        "2147483648",
        "(4, x)",
        "1.5",
    ] {
        assert!(text.parse::<Dim3>().is_err(), "{text} parsed");
    }
    assert!(Dim3::from_ints(&[]).is_err());
    let m = argument_error(Dim3::from_ints(&[4, 0]));
    assert!(m.contains("extent y"), "{m}");
}

#[test]
fn launch_configs_from_dim3like() {
    let c = LaunchConfig::new(4u32, (32u32, 8u32)).with_shared(4096);
    assert_eq!(c.grid, [4, 1, 1]);
    assert_eq!(c.block, [32, 8, 1]);
    assert_eq!(c.shared_bytes, 4096);
    assert_eq!(c.threads_per_block(), 256);
    assert_eq!(
        LaunchConfig::linear(3, 128),
        LaunchConfig::new(3u32, 128u32)
    );
    assert_eq!(LaunchConfig::for_elements(1000, 256).grid, [4, 1, 1]);
    assert_eq!(LaunchConfig::for_elements(0, 256).grid, [1, 1, 1]);
    let parsed = LaunchConfig::new(
        "(2, 3)".parse::<Dim3>().unwrap(),
        "[16, 16]".parse::<Dim3>().unwrap(),
    );
    assert_eq!((parsed.grid, parsed.block), ([2, 3, 1], [16, 16, 1]));
    assert!(parsed.to_string().contains("block (16, 16, 1)"));
}

#[test]
fn no_driver_is_an_error_value_not_a_crash() {
    if pydevice::runtime::driver_available() {
        eprintln!("skipped: a CUDA driver is present");
        return;
    }
    match pydevice::runtime::Device::open(0) {
        Err(RuntimeError::NoDriver(_)) => {}
        Err(e) => panic!("expected NoDriver, got {e}"),
        Ok(_) => panic!("opened a device without a driver"),
    }
}
