//! The dialects a module can be written in, and the rules that differ between them.
//!
//! A module's [`Dialect`] is decided by its imports (numba's, cupyx's, or neither); the
//! checker reads the dialect's [`Rules`] by name (`self.s.m.rules().unify_assignments`),
//! never the dialect itself, so a rule that two dialects share is one field and a new
//! dialect is one more [`Rules`] value. docs/semantics.md records each rule's reason.

use crate::types::promote::Defaults;

/// The dialect of a module.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// The draft `cuda.device` specification.
    #[default]
    CudaDevice,
    /// numba-cuda: the module imports `numba`.
    Numba,
    /// cupyx.jit: the module imports `cupyx` (and not `numba`).
    Cupyx,
}

/// The rules in which the dialects differ; each field is read where its rule applies.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    /// The types of Python's `int`, `float` and `complex` (and of their literals).
    pub defaults: Defaults,
    /// A local takes the promotion of all its assignments' types (numba), where
    /// `cuda.device` requires them to agree.
    pub unify_assignments: bool,
    /// A local's type is fixed by its first assignment; later ones convert to it under
    /// NumPy's `same_kind` casting (cupyx).
    pub fixed_local_types: bool,
    /// `r = recs[i]` is a reference into the array and record parameters live in memory
    /// (numba's records, like NumPy's), where `cuda.device` copies.
    pub records_by_reference: bool,
    /// Thread-positioning objects and constants passed to a device function are
    /// compile-time arguments the callee is specialized on, and an `if` on one keeps only
    /// the branch taken (numba, §15.1).
    pub static_arguments: bool,
    /// A device function with one explicit signature converts its number arguments to it,
    /// unsafe casts included (numba's device calls, §15.3).
    pub signature_converts_arguments: bool,
    /// `for x in array` iterates over the array's first axis (numba).
    pub iterate_arrays: bool,
    /// Integer arithmetic narrower than 64 bits widens to `intp` (numba's NBEP 1).
    pub widen_integer_arithmetic: bool,
    /// `int.bit_count()` is `popc` (numba).
    pub int_bit_count: bool,
    /// A vector constructor takes vectors as well as numbers, flattening them (numba).
    pub vectors_from_vectors: bool,
    /// The warp shuffles take cupyx's `width=` (CUDA's segment width, §15.4).
    pub shfl_width: bool,
    /// A bare `range(...)` may be `jit.range` imported by name and take `unroll=` (cupyx,
    /// §15.4).
    pub range_unroll_by_name: bool,
    /// A `@func` shall be heterogeneous (`cuda.device`): a device-only entity in one needs
    /// a `target(...)` guard (E0243). numba's and cupyx's device functions are device-only.
    pub heterogeneous_funcs: bool,
    /// Each local is split into its def-use webs before checking, so a name reassigned a
    /// value of another type after its old value is dead is a new variable (numba's SSA
    /// renaming, §1.6).
    pub split_locals: bool,
    /// A tuple of numbers of one type takes an index known only at run time (numba's
    /// `UniTuple`, §7.1).
    pub runtime_tuple_index: bool,
}

const CUDA_DEVICE: Rules = Rules {
    defaults: Defaults::CUDA_DEVICE,
    unify_assignments: false,
    fixed_local_types: false,
    records_by_reference: false,
    static_arguments: false,
    signature_converts_arguments: false,
    iterate_arrays: false,
    widen_integer_arithmetic: false,
    int_bit_count: false,
    vectors_from_vectors: false,
    shfl_width: false,
    range_unroll_by_name: false,
    heterogeneous_funcs: true,
    split_locals: false,
    runtime_tuple_index: false,
};

const NUMBA: Rules = Rules {
    defaults: Defaults::NUMBA,
    unify_assignments: true,
    fixed_local_types: false,
    records_by_reference: true,
    static_arguments: true,
    signature_converts_arguments: true,
    iterate_arrays: true,
    widen_integer_arithmetic: true,
    int_bit_count: true,
    vectors_from_vectors: true,
    shfl_width: false,
    range_unroll_by_name: false,
    heterogeneous_funcs: false,
    split_locals: true,
    runtime_tuple_index: true,
};

/// cupyx.jit: `cuda.device`'s rules (its `rawkernel(mode='cuda')` types a Python `int` as
/// `int32` and a `float` as `float32`, as CUDA C++ literals are), with fixed local types.
const CUPYX: Rules = Rules {
    fixed_local_types: true,
    shfl_width: true,
    range_unroll_by_name: true,
    heterogeneous_funcs: false,
    ..CUDA_DEVICE
};

impl Dialect {
    /// The dialect's rules.
    pub const fn rules(self) -> &'static Rules {
        match self {
            Dialect::CudaDevice => &CUDA_DEVICE,
            Dialect::Numba => &NUMBA,
            Dialect::Cupyx => &CUPYX,
        }
    }

    /// The dialect's name in diagnostics: `cuda.device`, `numba` or `cupyx`.
    pub const fn name(self) -> &'static str {
        match self {
            Dialect::CudaDevice => "cuda.device",
            Dialect::Numba => "numba",
            Dialect::Cupyx => "cupyx",
        }
    }

    /// The dialect of a module that also imports `module`: numba's for `numba` and its
    /// submodules, cupyx's for `cupyx` (unless numba's was seen: numba's rules win).
    pub fn with_import(self, module: &str) -> Dialect {
        let head = module.split('.').next().unwrap_or(module);
        match head {
            "numba" => Dialect::Numba,
            "cupyx" if self == Dialect::CudaDevice => Dialect::Cupyx,
            _ => self,
        }
    }
}
