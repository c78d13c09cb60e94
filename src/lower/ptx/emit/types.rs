//! LLVM types of IR types: scalars, the fp8 box, tuples, vectors and structs laid out as
//! CUDA C++ lays them out (`aggregate`, with explicit padding where LLVM's own layout
//! differs), memory representations and array descriptors.

use super::*;

impl<'ctx> Emitter<'_, 'ctx> {
    pub(super) fn int_t(&self, bits: u32) -> inkwell::types::IntType<'ctx> {
        match bits {
            1 => self.ctx.bool_type(),
            8 => self.ctx.i8_type(),
            16 => self.ctx.i16_type(),
            32 => self.ctx.i32_type(),
            // complex128's bits (16-byte atomics, §9.2).
            128 => self.ctx.i128_type(),
            _ => self.ctx.i64_type(),
        }
    }

    pub(super) fn scalar_type(&self, s: Scalar) -> BasicTypeEnum<'ctx> {
        let c = self.ctx;
        match s {
            Scalar::Bool => c.bool_type().into(),
            Scalar::Int8 | Scalar::UInt8 => c.i8_type().into(),
            Scalar::Int16 | Scalar::UInt16 => c.i16_type().into(),
            Scalar::Int32 | Scalar::UInt32 => c.i32_type().into(),
            Scalar::Int64 | Scalar::UInt64 => c.i64_type().into(),
            Scalar::Float16 => c.f16_type().into(),
            Scalar::BFloat16 => c.bf16_type().into(),
            Scalar::Float32 => c.f32_type().into(),
            Scalar::Float64 => c.f64_type().into(),
            Scalar::Complex64 => c.f32_type().vec_type(2).into(),
            Scalar::Complex128 => c.f64_type().vec_type(2).into(),
            Scalar::Float8E4M3 | Scalar::Float8E5M2 => c.i8_type().into(),
        }
    }

    /// `{ i8 }`: an fp8 value as interoperable functions pass it (see `boxed_fp8`).
    pub(super) fn fp8_box(&self) -> StructType<'ctx> {
        self.ctx.struct_type(&[self.ctx.i8_type().into()], false)
    }

    /// The register type of a value (`None` has none).
    pub(super) fn ty(&self, t: &Type) -> Option<BasicTypeEnum<'ctx>> {
        Some(match t {
            Type::None => return None,
            Type::Scalar(s) => self.scalar_type(*s),
            Type::Vector { .. } | Type::Tuple(_) | Type::Struct(_) => self.aggregate(t).0.into(),
            Type::Array(a) => self.descriptor_type(a).into(),
            Type::WarpMask | Type::Group(_) => self.ctx.i32_type().into(),
            Type::Atomic { dtype, .. } => self.mem_type(&Type::Scalar(*dtype)),
            Type::Ref { .. } | Type::StructRef { .. } => {
                self.ctx.ptr_type(AddressSpace::default()).into()
            }
            Type::Fragment(fr) => self.fragment_type(fr).into(),
        })
    }

    /// A fragment's registers as the `llvm.nvvm.wmma.*` intrinsics give and take them: a
    /// struct of `<2 x half>`, `float`, `double` or `i32`.
    pub(super) fn fragment_type(&self, fr: &crate::types::tensor::Fragment) -> StructType<'ctx> {
        use crate::types::tensor::FragmentReg;
        let (reg, n) = fr.regs();
        let c = self.ctx;
        let r: BasicTypeEnum<'ctx> = match reg {
            FragmentReg::F16x2 => c.f16_type().vec_type(2).into(),
            FragmentReg::F32 => c.f32_type().into(),
            FragmentReg::F64 => c.f64_type().into(),
            FragmentReg::I32 => c.i32_type().into(),
        };
        c.struct_type(&vec![r; n as usize], false)
    }

    /// A tuple, struct or vector as an LLVM struct laid out byte for byte as CUDA C++ lays it
    /// out (`abi::layout_of`): explicit padding before members that sit further than their
    /// natural place (over-aligned members such as `float4`), and a zero-length leading member
    /// that gives the whole struct its C++ alignment, so parameters, results and memory
    /// accesses all use it. Returns the type and, for each field, its element index.
    fn aggregate(&self, t: &Type) -> (StructType<'ctx>, Vec<u32>) {
        if let Some(known) = self.aggregates.borrow().get(t) {
            return known.clone();
        }
        let made = self.make_aggregate(t);
        self.aggregates.borrow_mut().insert(t.clone(), made.clone());
        made
    }

    fn make_aggregate(&self, t: &Type) -> (StructType<'ctx>, Vec<u32>) {
        let fields: Vec<Type> = match t {
            Type::Tuple(ts) => ts.clone(),
            Type::Struct(st) => st.fields.iter().map(|(_, t)| t.clone()).collect(),
            Type::Vector { elem, len } => vec![Type::Scalar(*elem); *len as usize],
            _ => Vec::new(),
        };
        // (offset, size) of each field, then the whole size and alignment. A tuple's are
        // computed without `layout_of`, which names every nested tuple (nested tuples
        // would take time quadratic in their size).
        let (places, size, align): (Vec<(u64, u64)>, u64, u64) = match t {
            Type::Tuple(ts) => {
                let mut off = 0u64;
                let places = ts
                    .iter()
                    .map(|et| {
                        let (size, align) = crate::abi::size_align(et);
                        off = off.div_ceil(align) * align;
                        let place = (off, size);
                        off += size;
                        place
                    })
                    .collect();
                let (size, align) = crate::abi::size_align(t);
                (places, size, align)
            }
            _ => {
                let layout = crate::abi::layout_of(t);
                let places = layout.fields.iter().map(|f| (f.offset, f.size)).collect();
                (places, layout.size, layout.align)
            }
        };
        // A record has NumPy's offsets (a complex64 may sit at 12), so it is a packed
        // struct with explicit padding; its accesses carry their own alignments.
        let packed = matches!(t, Type::Struct(st) if st.record.is_some());
        let mut elems: Vec<BasicTypeEnum<'ctx>> = Vec::new();
        let natural = places
            .iter()
            .zip(&fields)
            .map(|(_, f)| crate::abi::size_align(f).1)
            .max()
            .unwrap_or(1);
        if align > natural && !packed {
            elems.push(self.align_forcer(align));
        }
        let mut index = Vec::new();
        let mut at = 0u64;
        let pad = |elems: &mut Vec<BasicTypeEnum<'ctx>>, n: u64| {
            if n > 0 {
                elems.push(self.ctx.i8_type().array_type(n as u32).into());
            }
        };
        for ((offset, fsize), ft) in places.iter().zip(&fields) {
            pad(&mut elems, offset.saturating_sub(at));
            index.push(elems.len() as u32);
            elems.push(self.mem_type(ft));
            at = offset + fsize;
        }
        pad(&mut elems, size.saturating_sub(at));
        (self.ctx.struct_type(&elems, packed), index)
    }

    /// A zero-size member whose alignment is `align` bytes (NVPTX: i16..i128, then vectors).
    fn align_forcer(&self, align: u64) -> BasicTypeEnum<'ctx> {
        let c = self.ctx;
        let t: BasicTypeEnum<'ctx> = match align {
            0..=2 => c.i16_type().into(),
            3..=4 => c.i32_type().into(),
            5..=8 => c.i64_type().into(),
            9..=16 => c.i128_type().into(),
            a => c.i32_type().vec_type((a / 4) as u32).into(),
        };
        t.array_type(0).into()
    }

    /// The LLVM element index of field `i` of a tuple, struct or vector.
    pub(super) fn field_index(&self, t: &Type, i: u32) -> u32 {
        match t {
            Type::Tuple(_) | Type::Struct(_) | Type::Vector { .. } => {
                self.aggregate(t).1.get(i as usize).copied().unwrap_or(i)
            }
            _ => i,
        }
    }

    /// The in-memory type: like `ty`, but `bool` is a byte.
    pub(super) fn mem_type(&self, t: &Type) -> BasicTypeEnum<'ctx> {
        match t {
            Type::Scalar(Scalar::Bool) => self.ctx.i8_type().into(),
            Type::None => self.ctx.struct_type(&[], false).into(),
            t => self.ty(t).unwrap_or_else(|| self.ctx.i8_type().into()),
        }
    }

    pub(super) fn descriptor_type(&self, a: &ArrayType) -> StructType<'ctx> {
        let i64t = self.ctx.i64_type();
        let dims = i64t.array_type(u32::from(a.ndim));
        self.ctx.struct_type(
            &[
                self.ctx.ptr_type(addr_space(a.space)).into(),
                dims.into(),
                dims.into(),
            ],
            false,
        )
    }
}
