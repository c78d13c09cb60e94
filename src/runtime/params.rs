//! Parameter buffers filled in place: the launch path of embedders that launch the same
//! kernel many times with different arguments (a Python `launch` call per step, say).
//!
//! [`LoadedKernel::pack`] builds every parameter from [`ArgValue`]s, allocating for each
//! array's shape and strides. [`PackedArgs::zeroed`] makes a buffer laid out for a kernel's
//! parameters once; each launch clones it (one allocation) and writes arrays straight into
//! their descriptors with [`PackedArgs::set_array`] (checked as [`crate::abi::pack`] checks
//! them) and other values with [`PackedArgs::set`]; [`Device::launch_packed`] launches it.
//!
//! [`Device::launch_packed`]: super::Device::launch_packed

use super::{LoadedKernel, PackedArgs, RuntimeError};
use crate::abi::{ArgValue, KernelAbi, layout_of, pack};
use crate::types::{Layout, Type};

impl PackedArgs {
    /// A buffer for `abi`'s parameters, every byte zero: each parameter starts on an 8-byte
    /// boundary, as [`LoadedKernel::pack`] lays them out.
    pub fn zeroed(abi: &KernelAbi) -> PackedArgs {
        let mut words = Vec::new();
        let mut offsets = smallvec::SmallVec::new();
        for p in &abi.params {
            let size = layout_of(&p.ty).size as usize;
            offsets.push(words.len());
            words.resize(words.len() + size.div_ceil(8).max(1), 0);
        }
        PackedArgs {
            kernel: abi.symbol.as_str().into(),
            words,
            offsets,
            seed: None,
            devices: smallvec::SmallVec::new(),
        }
    }

    /// Writes an array into parameter `index`'s descriptor: `data` points to element
    /// `[0, ..., 0]`, `strides` count elements. The rank must be the parameter's, and a
    /// dimension the parameter's layout promises contiguous must have stride 1 (or extent
    /// at most 1).
    pub fn set_array(
        &mut self,
        abi: &KernelAbi,
        index: usize,
        data: u64,
        shape: &[u64],
        strides: &[i64],
    ) -> Result<(), RuntimeError> {
        let p = param(abi, index)?;
        let Type::Array(a) = &p.ty else {
            return Err(RuntimeError::Argument(format!(
                "`{}` is a {}, not an array",
                p.name, p.ty
            )));
        };
        let n = a.ndim as usize;
        if shape.len() != n || strides.len() != n {
            return Err(RuntimeError::Argument(format!(
                "`{}`: a {} needs {n} dimensions, got shape {shape:?} and strides {strides:?}",
                p.name, p.ty
            )));
        }
        // The dimension whose stride must be 1; a 0-d array has none.
        let contiguous = match a.layout {
            _ if n == 0 => None,
            Layout::C => Some(n - 1),
            Layout::F => Some(0),
            Layout::Any => None,
        };
        if let Some(d) = contiguous
            && strides[d] != 1
            && shape[d] > 1
        {
            return Err(RuntimeError::Argument(format!(
                "`{}`: the parameter is {}, but dimension {d} of the array has stride {} (elements), not 1",
                p.name, p.ty, strides[d]
            )));
        }
        // A number's size without laying the type out (`layout_of` builds its names: a
        // launch from Python writes several arrays per call).
        let itemsize = match &a.dtype {
            crate::types::DType::Scalar(s) => s.size(),
            other => crate::abi::layout_of(&other.ty()).size,
        };
        crate::abi::check_array(data, shape, strides, itemsize)
            .map_err(|e| RuntimeError::Argument(format!("`{}`: {e}", p.name)))?;
        let o = self.offsets[index];
        self.words[o] = data;
        for d in 0..n {
            self.words[o + 1 + d] = shape[d];
            self.words[o + 1 + n + d] = strides[d] as u64;
        }
        Ok(())
    }

    /// [`PackedArgs::set_array`], remembering that the memory is on GPU `device` (when
    /// known): a launch on another GPU is then refused with [`RuntimeError::WrongDevice`],
    /// naming both.
    pub fn set_array_on(
        &mut self,
        abi: &KernelAbi,
        index: usize,
        data: u64,
        shape: &[u64],
        strides: &[i64],
        device: Option<usize>,
    ) -> Result<(), RuntimeError> {
        self.set_array(abi, index, data, shape, strides)?;
        self.devices.retain(|(i, _)| *i as usize != index);
        if let Some(d) = device {
            self.devices.push((index as u32, d as u32));
        }
        Ok(())
    }

    /// Writes a [`DeviceArray`](super::DeviceArray) into parameter `index` (its GPU, when it
    /// says, is checked at launch: [`PackedArgs::set_array_on`]). The dtype is checked too.
    pub fn set_device_array(
        &mut self,
        abi: &KernelAbi,
        index: usize,
        array: &super::DeviceArray,
    ) -> Result<(), RuntimeError> {
        let p = param(abi, index)?;
        array.check()?;
        if let Some(a) = p.ty.as_array()
            && a.dtype != array.dtype
        {
            return Err(RuntimeError::Argument(format!(
                "`{}` is {}, but the array's dtype is {}",
                p.name, p.ty, array.dtype
            )));
        }
        let device = array.device.and_then(|d| usize::try_from(d).ok());
        self.set_array_on(abi, index, array.data, &array.shape, &array.strides, device)
    }

    /// Writes any value into parameter `index`, packed by [`crate::abi::pack`].
    pub fn set(
        &mut self,
        abi: &KernelAbi,
        index: usize,
        value: &ArgValue,
    ) -> Result<(), RuntimeError> {
        let p = param(abi, index)?;
        let o = self.offsets[index];
        // A number (the common case) packed on the stack, as `pack` packs it, without laying
        // its type out or allocating.
        let number = match p.ty {
            Type::Scalar(s) => Some(s),
            Type::WarpMask => Some(crate::types::Scalar::UInt32),
            _ => None,
        };
        if let Some(s) = number
            && s.size() <= 16
        {
            let mut buf = [0u8; 16];
            let n = s.size() as usize;
            crate::abi::pack_scalar_at(s, value, &mut buf[..n])
                .map_err(|e| RuntimeError::Argument(format!("`{}`: {e}", p.name)))?;
            for (i, chunk) in buf[..n].chunks(8).enumerate() {
                let mut w = [0u8; 8];
                w[..chunk.len()].copy_from_slice(chunk);
                self.words[o + i] = u64::from_le_bytes(w);
            }
            return Ok(());
        }
        let bytes =
            pack(&p.ty, value).map_err(|e| RuntimeError::Argument(format!("`{}`: {e}", p.name)))?;
        for (i, chunk) in bytes.chunks(8).enumerate() {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.words[o + i] = u64::from_le_bytes(w);
        }
        Ok(())
    }

    /// Writes the scalar leaves of a struct parameter `index` (`leaves` from
    /// [`crate::abi::scalar_leaves`] of its type, `values` one per leaf, in the same order):
    /// the bytes [`PackedArgs::set`] would write for the whole struct, where the buffer's
    /// padding is still zero (as in a fresh copy of a zeroed template), without laying the
    /// type out per call. `leaves` must be those of the parameter's type.
    pub fn set_scalar_leaves(
        &mut self,
        abi: &KernelAbi,
        index: usize,
        leaves: &[(u64, crate::types::Scalar)],
        values: &[ArgValue],
    ) -> Result<(), RuntimeError> {
        let p = param(abi, index)?;
        if leaves.len() != values.len() {
            return Err(RuntimeError::Argument(format!(
                "`{}`: {} values for {} fields",
                p.name,
                values.len(),
                leaves.len()
            )));
        }
        let base = self.offsets[index] * 8;
        let total = self.words.len() * 8;
        for (&(off, s), v) in leaves.iter().zip(values) {
            let n = s.size() as usize;
            // (Leaves from `scalar_leaves` of the parameter's type are always inside it.)
            let end = (off as usize).checked_add(base + n);
            if n > 16 || end.is_none_or(|e| e > total) {
                return Err(RuntimeError::Argument(format!(
                    "`{}`: a field past the parameters' end",
                    p.name
                )));
            }
            let mut bytes = [0u8; 16];
            crate::abi::pack_scalar_at(s, v, &mut bytes[..n])
                .map_err(|e| RuntimeError::Argument(format!("`{}`: {e}", p.name)))?;
            for (k, b) in bytes[..n].iter().enumerate() {
                let at = base + off as usize + k;
                let mut w = self.words[at / 8].to_le_bytes();
                w[at % 8] = *b;
                self.words[at / 8] = u64::from_le_bytes(w);
            }
        }
        Ok(())
    }

    /// Where each of `abi`'s parameters starts in the flat launch buffer that
    /// [`PackedArgs::from_bytes`] reads, in bytes, and the buffer's size: each parameter
    /// starts on an 8-byte boundary after the previous one (the layout of
    /// [`PackedArgs::zeroed`]), so a C caller can fill the buffer with the parameters' C
    /// layouts at these offsets.
    pub fn byte_offsets(abi: &KernelAbi) -> (Vec<usize>, usize) {
        let mut offsets = Vec::with_capacity(abi.params.len());
        let mut end = 0;
        for p in &abi.params {
            offsets.push(end);
            end += (layout_of(&p.ty).size as usize).div_ceil(8).max(1) * 8;
        }
        (offsets, end)
    }

    /// Arguments for `abi` from a flat buffer laid out as [`PackedArgs::byte_offsets`] says
    /// (the C API's launch buffer): `bytes` must be exactly that size. Each parameter's bytes
    /// are taken as they are, except array descriptors, which are read (data address, then
    /// `ndim` extents, then `ndim` strides in elements, each 8 bytes) and checked as
    /// [`PackedArgs::set_array`] checks them; padding is ignored.
    pub fn from_bytes(abi: &KernelAbi, bytes: &[u8]) -> Result<PackedArgs, RuntimeError> {
        let (offsets, size) = PackedArgs::byte_offsets(abi);
        if bytes.len() != size {
            return Err(RuntimeError::Argument(format!(
                "the arguments of `{}` take a {size}-byte buffer, got {} bytes",
                abi.symbol,
                bytes.len()
            )));
        }
        let mut out = PackedArgs::zeroed(abi);
        for (i, (p, &o)) in abi.params.iter().zip(&offsets).enumerate() {
            let len = layout_of(&p.ty).size as usize;
            let param = &bytes[o..o + len];
            if let Type::Array(a) = &p.ty {
                let n = a.ndim as usize;
                let word = |k: usize| {
                    let mut w = [0u8; 8];
                    w.copy_from_slice(&param[8 * k..8 * k + 8]);
                    w
                };
                let shape: Vec<u64> = (0..n).map(|d| u64::from_le_bytes(word(1 + d))).collect();
                let strides: Vec<i64> = (0..n)
                    .map(|d| i64::from_le_bytes(word(1 + n + d)))
                    .collect();
                out.set_array(abi, i, u64::from_le_bytes(word(0)), &shape, &strides)?;
                continue;
            }
            let w = out.offsets[i];
            for (k, chunk) in param.chunks(8).enumerate() {
                let mut word = [0u8; 8];
                word[..chunk.len()].copy_from_slice(chunk);
                out.words[w + k] = u64::from_le_bytes(word);
            }
        }
        Ok(out)
    }

    /// The bytes of parameter `index` as the kernel receives them.
    pub fn param_bytes(&self, abi: &KernelAbi, index: usize) -> Option<Vec<u8>> {
        let p = abi.params.get(index)?;
        let size = layout_of(&p.ty).size as usize;
        let o = *self.offsets.get(index)?;
        let bytes: Vec<u8> = self.words[o..]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        Some(bytes[..size].to_vec())
    }
}

impl LoadedKernel {
    /// A zeroed parameter buffer for this kernel ([`PackedArgs::zeroed`]).
    pub fn zeroed_args(&self) -> PackedArgs {
        let mut p = PackedArgs::zeroed(&self.abi);
        p.kernel = self.name.clone();
        p
    }
}

fn param(abi: &KernelAbi, index: usize) -> Result<&crate::abi::ParamAbi, RuntimeError> {
    abi.params.get(index).ok_or_else(|| {
        RuntimeError::Argument(format!(
            "`{}` has {} parameters, not {}",
            abi.symbol,
            abi.params.len(),
            index + 1
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::ArrayArg;
    use crate::types::signature::parse_signature;

    const SRC: &str = "from cuda import device\n\n@device.kernel\ndef k(a, n, t, m):\n    a[0] = n + t[0] + m[0, 0]\n";

    fn abi() -> KernelAbi {
        let (types, _) =
            parse_signature("float32[::1], int32, (int8, float64), float32[:, :]").unwrap();
        crate::Module::parse("k.py", SRC)
            .unwrap()
            .specialize("k", &types)
            .unwrap()
            .abi()
    }

    #[test]
    fn zero_dimensional_arrays_fill_only_their_address() {
        // A 0-d parameter (`float64[()]`) is its element's address (§5.3); the layout check
        // has no dimension to look at (it indexed dimension `0 - 1` before: a panic in a
        // debug build, an out-of-bounds index in a release one, found on the H200).
        let src =
            "from cuda import device\n\n@device.kernel\ndef z(x, y):\n    x[()] = y[()] + 1.0\n";
        let (types, _) = parse_signature("float64[()], float64[()]").unwrap();
        let abi = crate::Module::parse("z.py", src)
            .unwrap()
            .specialize("z", &types)
            .unwrap()
            .abi();
        let mut p = PackedArgs::zeroed(&abi);
        p.set_array(&abi, 0, 0x1000, &[], &[]).unwrap();
        p.set_array(&abi, 1, 0x2000, &[], &[]).unwrap();
        let e = p.set_array(&abi, 1, 0x2000, &[3], &[1]).unwrap_err();
        assert!(e.to_string().contains("needs 0 dimensions"), "{e}");
        let values = [
            ArgValue::Array(ArrayArg {
                data: 0x1000,
                shape: vec![],
                strides: vec![],
            }),
            ArgValue::Array(ArrayArg {
                data: 0x2000,
                shape: vec![],
                strides: vec![],
            }),
        ];
        for (i, v) in values.iter().enumerate() {
            assert_eq!(
                p.param_bytes(&abi, i).unwrap(),
                pack(&abi.params[i].ty, v).unwrap(),
                "param {i}"
            );
        }
    }

    #[test]
    fn filled_in_place_equals_packed_from_values() {
        let abi = abi();
        let mut p = PackedArgs::zeroed(&abi);
        p.set_array(&abi, 0, 0x1000, &[16], &[1]).unwrap();
        p.set(&abi, 1, &ArgValue::Int(-7)).unwrap();
        p.set(
            &abi,
            2,
            &ArgValue::Tuple(vec![ArgValue::Int(3), ArgValue::Float(1.5)]),
        )
        .unwrap();
        p.set_array(&abi, 3, 0x2000, &[4, 5], &[-5, 2]).unwrap();
        let values = [
            ArgValue::Array(ArrayArg {
                data: 0x1000,
                shape: vec![16],
                strides: vec![1],
            }),
            ArgValue::Int(-7),
            ArgValue::Tuple(vec![ArgValue::Int(3), ArgValue::Float(1.5)]),
            ArgValue::Array(ArrayArg {
                data: 0x2000,
                shape: vec![4, 5],
                strides: vec![-5, 2],
            }),
        ];
        for (i, v) in values.iter().enumerate() {
            assert_eq!(
                p.param_bytes(&abi, i).unwrap(),
                pack(&abi.params[i].ty, v).unwrap(),
                "param {i}"
            );
        }
    }

    #[test]
    fn numbers_set_in_place_equal_packed_numbers() {
        // `set` packs a number on the stack; `pack` lays the type out: same bytes, same
        // refusals, for every kind of number and value.
        const SRC: &str = "from cuda import device\n\n@device.kernel\ndef k(out, a, b, c, d, e, f, g):\n    out[0] = d\n";
        let m = crate::Module::parse("n.py", SRC).unwrap();
        let types = m
            .parse_signature("float64[::1], int8, uint16, int64, float32, float64, bool, complex64")
            .unwrap();
        let abi = m.specialize("k", &types).unwrap().abi();
        let values = [
            ArgValue::Int(-3),
            ArgValue::Int(300),
            ArgValue::UInt(65_535),
            ArgValue::Int(-1),
            ArgValue::Int(i64::MIN),
            ArgValue::UInt(u64::MAX),
            ArgValue::Float(0.1),
            ArgValue::Float(-2.5e300),
            ArgValue::Bool(true),
            ArgValue::Complex(1.5, -0.25),
        ];
        for i in 1..abi.params.len() {
            for v in &values {
                let mut p = PackedArgs::zeroed(&abi);
                let set = p.set(&abi, i, v);
                let packed = pack(&abi.params[i].ty, v);
                assert_eq!(set.is_ok(), packed.is_ok(), "param {i}, {v:?}");
                if let Ok(bytes) = packed {
                    assert_eq!(p.param_bytes(&abi, i).unwrap(), bytes, "param {i}, {v:?}");
                }
            }
        }
    }

    #[test]
    fn struct_fields_written_leaf_by_leaf_equal_the_packed_struct() {
        // A nested struct with padding: `Inner` (int8, float64) inside `Outer` (float16,
        // Inner, uint32), passed by value.
        const SRC: &str = "from cuda import device\nfrom cuda.device import int8, float16, float64, uint32\n\n@device.struct\nclass Inner:\n    a: int8\n    b: float64\n\n@device.struct\nclass Outer:\n    h: float16\n    i: Inner\n    u: uint32\n\n@device.kernel\ndef k(out, o):\n    out[0] = o.i.b + o.u\n";
        let m = crate::Module::parse("s.py", SRC).unwrap();
        let types = m.parse_signature("float64[::1], Outer").unwrap();
        let abi = m.specialize("k", &types).unwrap().abi();
        let leaves = crate::abi::scalar_leaves(&abi.params[1].ty).expect("scalar leaves");
        assert_eq!(leaves.len(), 4);
        let values = [
            ArgValue::Float(-2.5),
            ArgValue::Int(-3),
            ArgValue::Float(0.1),
            ArgValue::UInt(4_000_000_000),
        ];
        let mut p = PackedArgs::zeroed(&abi);
        p.set_scalar_leaves(&abi, 1, &leaves, &values).unwrap();
        let whole = ArgValue::Tuple(vec![
            values[0].clone(),
            ArgValue::Tuple(vec![values[1].clone(), values[2].clone()]),
            values[3].clone(),
        ]);
        assert_eq!(
            p.param_bytes(&abi, 1).unwrap(),
            pack(&abi.params[1].ty, &whole).unwrap()
        );
        // Not a struct of scalars: no leaves; a value that does not fit: an error.
        assert!(crate::abi::scalar_leaves(&abi.params[0].ty).is_none());
        let mut bad = values.clone();
        bad[1] = ArgValue::Int(300);
        assert!(p.set_scalar_leaves(&abi, 1, &leaves, &bad).is_err());
        assert!(p.set_scalar_leaves(&abi, 1, &leaves, &values[..3]).is_err());
    }

    #[test]
    fn from_bytes_reads_the_flat_buffer() {
        let abi = abi();
        let (offsets, size) = PackedArgs::byte_offsets(&abi);
        // float32[::1] (24 bytes), int32 (4 -> 8), (int8, float64) (16), float32[:, :] (40).
        assert_eq!(offsets, vec![0, 24, 32, 48]);
        assert_eq!(size, 88);
        let mut buf = vec![0u8; size];
        let mut put = |at: usize, b: &[u8]| buf[at..at + b.len()].copy_from_slice(b);
        put(0, &0x1000u64.to_le_bytes());
        put(8, &16u64.to_le_bytes());
        put(16, &1i64.to_le_bytes());
        put(24, &(-7i32).to_le_bytes());
        put(32, &[3]);
        put(40, &1.5f64.to_le_bytes());
        put(48, &0x2000u64.to_le_bytes());
        for (k, v) in [4i64, 5, -5, 2].iter().enumerate() {
            put(56 + 8 * k, &v.to_le_bytes());
        }
        let p = PackedArgs::from_bytes(&abi, &buf).unwrap();
        let mut q = PackedArgs::zeroed(&abi);
        q.set_array(&abi, 0, 0x1000, &[16], &[1]).unwrap();
        q.set(&abi, 1, &ArgValue::Int(-7)).unwrap();
        q.set(
            &abi,
            2,
            &ArgValue::Tuple(vec![ArgValue::Int(3), ArgValue::Float(1.5)]),
        )
        .unwrap();
        q.set_array(&abi, 3, 0x2000, &[4, 5], &[-5, 2]).unwrap();
        for i in 0..4 {
            assert_eq!(p.param_bytes(&abi, i), q.param_bytes(&abi, i), "param {i}");
        }
        // A wrong size, and a descriptor the parameter's layout forbids, are errors.
        let e = PackedArgs::from_bytes(&abi, &buf[..80]).unwrap_err();
        assert!(e.to_string().contains("88-byte buffer, got 80"), "{e}");
        buf[16..24].copy_from_slice(&2i64.to_le_bytes());
        let e = PackedArgs::from_bytes(&abi, &buf).unwrap_err();
        assert!(e.to_string().contains("stride 2"), "{e}");
    }

    #[test]
    fn wrong_rank_stride_and_kind_are_errors() {
        let abi = abi();
        let mut p = PackedArgs::zeroed(&abi);
        let e = p.set_array(&abi, 0, 0, &[4, 4], &[4, 1]).unwrap_err();
        assert!(e.to_string().contains("needs 1 dimensions"), "{e}");
        let e = p.set_array(&abi, 0, 0, &[4], &[2]).unwrap_err();
        assert!(e.to_string().contains("stride 2"), "{e}");
        assert!(p.set_array(&abi, 0, 0x1000, &[1], &[9]).is_ok()); // extent 1: any stride
        let e = p.set_array(&abi, 0, 0, &[1], &[1]).unwrap_err();
        assert!(e.to_string().contains("data pointer is null"), "{e}");
        assert!(p.set_array(&abi, 0, 0, &[0], &[1]).is_ok()); // no elements: null is fine
        let e = p.set_array(&abi, 1, 0, &[4], &[1]).unwrap_err();
        assert!(e.to_string().contains("not an array"), "{e}");
        assert!(p.set(&abi, 9, &ArgValue::Int(0)).is_err());
    }
}
