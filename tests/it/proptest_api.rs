//! The public API never panics, whatever values of its own types it is given: arbitrary
//! `Type`s (invalid ones included: vectors of any length, any alignment, any number of
//! dimensions, records with any layout), `ArgValue`s, `HostValue`s and `DeviceArray`s go
//! through `Type::validate`, `layout_of`, `abi::pack`, `Display`, `DeviceArray::check` and
//! `to_arg`, specialization and compilation, and host calls. Each must return a value or an
//! error; proptest reports any panic as a failure.

use proptest::prelude::*;
use pydevice::abi::{ArgValue, ArrayArg, ParamAbi, layout_of, pack};
use pydevice::runtime::DeviceArray;
use pydevice::types::{ArrayType, DType, Layout, MemSpace, RecordLayout, Scalar, StructType, Type};
use pydevice::{CompileOptions, HostFunction, HostValue, Module};
use std::sync::OnceLock;

fn scalar() -> impl Strategy<Value = Scalar> {
    prop::sample::select(Scalar::ALL.to_vec())
}

/// Sizes and alignments around the edges: 0, small powers of two and not, huge.
fn edgy_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..20,
        prop::sample::select(vec![
            4096,
            8192,
            1 << 31,
            1 << 32,
            1 << 40,
            1 << 62,
            i64::MAX as u64,
            u64::MAX - 1,
            u64::MAX
        ]),
        any::<u64>(),
    ]
}

fn layout() -> impl Strategy<Value = Layout> {
    prop::sample::select(vec![Layout::Any, Layout::C, Layout::F])
}

fn space() -> impl Strategy<Value = MemSpace> {
    prop::sample::select(vec![
        MemSpace::Global,
        MemSpace::Shared,
        MemSpace::Local,
        MemSpace::Const,
    ])
}

fn struct_type(field: BoxedStrategy<Type>) -> impl Strategy<Value = StructType> {
    (
        prop::collection::vec(field, 0..4),
        prop::option::of(edgy_u64()),
        prop::collection::vec(edgy_u64(), 0..3),
        prop::option::of((
            prop::collection::vec(edgy_u64(), 0..4),
            edgy_u64(),
            edgy_u64(),
        )),
    )
        .prop_map(|(fields, align, field_align, record)| StructType {
            name: "s".into(),
            fields: fields
                .into_iter()
                .enumerate()
                .map(|(i, t)| (format!("f{i}"), t))
                .collect(),
            align,
            field_align,
            record: record.map(|(offsets, size, align)| {
                Box::new(RecordLayout {
                    offsets,
                    size,
                    align,
                    shapes: Vec::new(),
                    text: Vec::new(),
                    bare: false,
                })
            }),
        })
}

fn ty() -> impl Strategy<Value = Type> {
    let leaf = prop_oneof![
        Just(Type::None),
        Just(Type::WarpMask),
        scalar().prop_map(Type::Scalar),
        (scalar(), any::<u8>()).prop_map(|(elem, len)| Type::Vector { elem, len }),
        (scalar(), edgy_u64()).prop_map(|(dtype, align)| Type::Atomic { dtype, align }),
        (scalar(), space()).prop_map(|(dtype, space)| Type::Ref {
            dtype,
            space,
            record: None
        }),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Type::Tuple),
            struct_type(inner.clone()).prop_map(|s| Type::Struct(Box::new(s))),
            (
                prop_oneof![
                    scalar().prop_map(DType::Scalar),
                    (scalar(), any::<u8>()).prop_map(|(elem, len)| DType::Vector { elem, len }),
                    struct_type(inner).prop_map(|s| DType::Struct(Box::new(s))),
                ],
                any::<u8>(),
                layout(),
                space()
            )
                .prop_map(|(dtype, ndim, layout, space)| Type::Array(ArrayType {
                    dtype,
                    ndim,
                    layout,
                    space
                })),
        ]
    })
}

fn arg_value() -> impl Strategy<Value = ArgValue> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(ArgValue::Bool),
        any::<i64>().prop_map(ArgValue::Int),
        edgy_u64().prop_map(ArgValue::UInt),
        any::<f64>().prop_map(ArgValue::Float),
        (any::<f64>(), any::<f64>()).prop_map(|(a, b)| ArgValue::Complex(a, b)),
        prop::collection::vec(any::<u8>(), 0..40).prop_map(ArgValue::Bytes),
        (
            edgy_u64(),
            prop::collection::vec(edgy_u64(), 0..4),
            prop::collection::vec(any::<i64>(), 0..4)
        )
            .prop_map(|(data, shape, strides)| ArgValue::Array(ArrayArg {
                data,
                shape,
                strides
            })),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop::collection::vec(inner, 0..5).prop_map(ArgValue::Tuple)
    })
}

fn host_value() -> impl Strategy<Value = HostValue> {
    let leaf = prop_oneof![
        Just(HostValue::None),
        any::<bool>().prop_map(HostValue::Bool),
        any::<i64>().prop_map(HostValue::Int),
        any::<u64>().prop_map(HostValue::UInt),
        any::<f32>().prop_map(HostValue::Float32),
        any::<f64>().prop_map(HostValue::Float64),
        (
            scalar(),
            prop::collection::vec(prop_oneof![0u64..5, edgy_u64()], 0..4),
            prop::collection::vec(any::<u8>(), 0..64)
        )
            .prop_map(|(dtype, shape, data)| HostValue::Array { dtype, shape, data }),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(HostValue::Tuple),
            prop::collection::vec(inner, 0..3).prop_map(|vs| HostValue::Struct {
                name: "p".into(),
                fields: vs
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| (format!("f{i}"), v))
                    .collect(),
            }),
        ]
    })
}

const KERNEL: &str = "from cuda import device\n\n@device.kernel\ndef k(a, b):\n    pass\n";

fn module() -> &'static Module {
    static M: OnceLock<Module> = OnceLock::new();
    M.get_or_init(|| Module::parse("k.py", KERNEL).unwrap())
}

const FUNC: &str = "from cuda import device\n\n@device.func\ndef f(a, n):\n    return a[0] + n\n";

fn host_function() -> &'static HostFunction {
    static F: OnceLock<HostFunction> = OnceLock::new();
    F.get_or_init(|| {
        Module::parse("f.py", FUNC)
            .unwrap()
            .host_function(
                "f",
                &[
                    Type::array(Scalar::Float32, 1, Layout::Any),
                    Type::Scalar(Scalar::Float32),
                ],
            )
            .unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn types_and_values_never_panic(t in ty(), v in arg_value()) {
        let l = layout_of(&t);
        let valid = t.validate();
        let _ = t.to_string();
        match pack(&t, &v) {
            Ok(bytes) => {
                prop_assert!(valid.is_ok(), "packed for an invalid type: {valid:?}");
                prop_assert_eq!(bytes.len() as u64, l.size);
            }
            Err(e) => { let _ = e.to_string(); }
        }
    }

    #[test]
    fn host_values_never_panic(v in host_value(), w in host_value()) {
        let _ = v.to_string();
        let _ = format!("{v:?}");
        let _ = host_function().call(&[v.clone(), w.clone()]);
        let mut args = [v, w];
        let _ = host_function().call_mut(&mut args);
    }

    #[test]
    fn device_arrays_never_panic(
        data in edgy_u64(),
        dtype in scalar(),
        shape in prop::collection::vec(prop_oneof![0u64..5, edgy_u64()], 0..4),
        strides in prop::collection::vec(prop_oneof![-4i64..5, any::<i64>()], 0..4),
        t in ty(),
    ) {
        let a = DeviceArray { data, dtype, shape, strides, readonly: false, device: None };
        let _ = a.check();
        let _ = a.len();
        let _ = a.array_type();
        let param = ParamAbi { name: "a".into(), layout: layout_of(&t), ty: t };
        if let Ok(ArgValue::Array(arr)) = a.to_arg(&param) {
            prop_assert!(a.check().is_ok());
            prop_assert_eq!(arr.shape.len(), arr.strides.len());
        }
    }
}

proptest! {
    // Specializing goes through the front end and, when it succeeds, LLVM: fewer cases.
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn specializing_for_any_types_never_panics(a in ty(), b in ty()) {
        let args = [a, b];
        let m = module();
        let _ = m.specialize("k", &args);
        if let Ok(k) = m.compile("k", &args, &CompileOptions::default()) {
            prop_assert!(k.ptx.contains(".entry k"));
        }
        let _ = m.specialize_host("k", &args);
    }
}
