//! `ReductionKernel`: CuPy's reduction kernel with Python expressions (docs/semantics.md
//! §20.4).
//!
//! Each output element reduces the input elements over the reduced axes: `a` starts as
//! `identity`, each element is mapped by `map_expr` into `b` and folded by `reduce_expr`
//! (`a = reduce(a, b)`), and `post_map_expr` assigns the outputs from the result `a`.
//!
//! The generated kernel takes one of five shapes ([`Strategy`]): a thread, a warp or a block
//! per output element; for a full reduction, a grid-wide pass whose blocks each write a
//! partial result, folded by a second kernel of one block (`NAME_final`); and for reductions
//! over axes that are not the innermost, a block per tile of up to 32 neighbouring outputs
//! reading whole rows, the reduced axis split over `block_idx.y` when the tiles are few (a
//! second kernel folds the slices, by the same tiles; a small reduction narrows its tiles
//! instead when that is enough, [`column_shape`]). [`choose_strategy`] picks one from the
//! shape. Within a warp, values are combined by `shfl_xor_sync` (through shared memory
//! for complex numbers, which a shuffle does not carry); warps combine through shared
//! memory.

use super::elementwise::{Output, Resolved, SpecKey, allocate, convert, resolve};
use super::{
    Body, Definition, GeneratedSource, HostKernel, HostOutput, Operand, Param, ParamType,
    SourceBuilder, arg_error, broadcast_to, check_duplicates, collapse_dims, imports_for,
    parse_params,
};
use crate::abi::{ArgValue, ArrayArg};
use crate::cache::KernelCache;
use crate::diag::{Code, Diagnostic, Span};
use crate::runtime::{Device, DeviceArray, DeviceBuffer, LaunchConfig, Stream};
use crate::types::{Layout, Scalar, Type};
use crate::{CompileOptions, CompiledKernel, Error};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Threads per block of the generated kernels.
pub const BLOCK: u32 = 256;
/// The most blocks of the first pass of a full reduction (its partial results).
pub const MAX_PARTIALS: u64 = 1024;

/// What a host function is remembered by: the argument types, and the kept and reduced
/// dimensions they split into.
type HostKey = (Vec<Type>, usize, usize);

/// Elements a host reduction folds from the identity before folding the result into the
/// output element's (§20.8).
pub const HOST_CHUNK: u64 = 1024;

/// How the generated kernel spreads a reduction over threads.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// One thread per output element: reductions over a non-contiguous axis with many
    /// outputs (each warp reads 32 neighbouring outputs' elements at once).
    Thread,
    /// One warp per output element: many rows of moderate length.
    Warp,
    /// One block per output element: few, long rows.
    Block,
    /// A full reduction (one output element): every block folds a slice into a partial
    /// result, and a second kernel folds the partials.
    Grid,
    /// A tile of [`ReductionLaunch::tile`] neighbouring outputs per block (a power of two up
    /// to 32), for reductions over axes that are not the innermost: the block's threads are
    /// `tile` columns × `256 / tile` row groups, each thread folds its column over a strided
    /// set of rows (a warp reads whole rows, coalesced), and a shared-memory tree combines
    /// the row groups. Few long contiguous rows take a tile of 1 (the block reads its row
    /// 256 elements at a time) so that they too can be split. With few tiles the reduced axis is split over `block_idx.y`
    /// ([`ReductionLaunch::splits`] slices): each block writes its partial results and a
    /// second kernel (`NAME_final`) reduces the `(slices, n_out)` partials over the slices
    /// with the same tiles (deterministic: no atomics).
    Columns,
}

/// Outputs from which a thread per output fills the GPU (about 132 SMs × 2048 threads), so
/// that a column reduction needs no cooperation.
pub const THREAD_OUTPUTS: u64 = 1 << 18;
/// The blocks a column reduction aims at (about ten waves of 256-thread blocks on an H100,
/// so that the last, partial wave costs little): with fewer tiles, the reduced axis is
/// split.
pub const COLUMN_BLOCKS: u64 = 8192;
/// The fewest loads of each thread in one slice of a split column reduction (a slice has at
/// least this many rows per row group).
pub const COLUMN_MIN_LOADS: u64 = 32;
/// The most slices of a split column reduction.
pub const MAX_SPLITS: u64 = 1024;

/// Elements (`n_out × n_red`) up to which a split column reduction narrows its tile instead
/// when that avoids the split ([`column_shape`]): there the second kernel and the partial
/// results' memory cost as much as the reading; above it the wide tile's reads are kept.
pub const COLUMN_NARROW_MAX: u64 = 1 << 24;
/// The fewest bytes of a row a [`Strategy::Columns`] tile reads when it is narrowed (a
/// memory sector: a warp's loads stay whole sectors).
pub const SECTOR_BYTES: u64 = 32;

/// The tile and the slices of [`Strategy::Columns`] for `n_out` outputs of `n_red` elements
/// of `itemsize` bytes, the reduced axis of stride `red_stride`: [`column_tile`] and
/// [`column_splits`], except that a split reduction of at most [`COLUMN_NARROW_MAX`]
/// elements takes the widest narrower tile `t` (halving, down to [`SECTOR_BYTES`] of a row)
/// with which one slice is enough and `t × splits ≤ tile`: at least as many blocks as the
/// split gives, each thread folding at most as many rows, one kernel, no partial results.
///
/// ```
/// use pydevice::kernels::reduction::column_shape;
/// // `axis=0` of a float32 (1024, 256): 8 tiles of 32 would need 4 slices; 32 tiles of 8
/// // need none.
/// assert_eq!(column_shape(256, 1024, 256, 4), (8, 1));
/// // (1024, 65536): above COLUMN_NARROW_MAX, the wide tile is split.
/// assert_eq!(column_shape(65536, 1024, 65536, 4), (32, 4));
/// ```
pub fn column_shape(n_out: u64, n_red: u64, red_stride: i64, itemsize: u64) -> (u32, u64) {
    let tile = column_tile(n_out, red_stride);
    let splits = column_splits(n_out, n_red, tile);
    if splits > 1 && tile > 1 && n_out.saturating_mul(n_red) <= COLUMN_NARROW_MAX {
        let narrowest = (SECTOR_BYTES / itemsize.max(1)).max(1);
        let mut t = tile / 2;
        while t >= 1 && u64::from(t) >= narrowest {
            if u64::from(t) * splits <= u64::from(tile) && column_splits(n_out, n_red, t) == 1 {
                return (t, 1);
            }
            t /= 2;
        }
    }
    (tile, splits)
}

/// The outputs of one block of [`Strategy::Columns`]: 1 when the reduced elements are
/// adjacent (`red_stride` 1: the block's 256 threads read one row), else the smallest power
/// of two at least `n_out`, at most 32.
pub fn column_tile(n_out: u64, red_stride: i64) -> u32 {
    if red_stride == 1 {
        1
    } else {
        n_out.clamp(1, 32).next_power_of_two() as u32
    }
}

/// The slices of the reduced axis of [`Strategy::Columns`] for `n_out` outputs of `n_red`
/// elements in tiles of `tile`: enough blocks for [`COLUMN_BLOCKS`], each thread folding at
/// least [`COLUMN_MIN_LOADS`] elements of a slice; 1 when the tiles alone fill the GPU.
pub fn column_splits(n_out: u64, n_red: u64, tile: u32) -> u64 {
    let tile = u64::from(tile.max(1));
    let tiles = n_out.div_ceil(tile).max(1);
    let groups = u64::from(BLOCK) / tile;
    let by_blocks = COLUMN_BLOCKS.div_ceil(tiles);
    let by_rows = n_red / (groups * COLUMN_MIN_LOADS);
    by_blocks.min(by_rows).clamp(1, MAX_SPLITS)
}

/// A reduction defined by CuPy's strings. `Send + Sync`.
///
/// ```
/// use pydevice::kernels::{Operand, ReductionKernel};
/// use pydevice::runtime::DeviceArray;
/// use pydevice::types::Scalar;
///
/// let l2norm = ReductionKernel::new("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm", None)
///     .expect("a valid definition");
/// let x = DeviceArray::contiguous(0x1000, Scalar::Float32, &[2, 5]);
/// let r = l2norm.resolve(&[Operand::Array(x)], Some(&[1]), false).expect("resolves");
/// assert_eq!(r.out_shape, vec![2]);
/// ```
#[derive(Debug)]
pub struct ReductionKernel {
    name: String,
    def: Definition,
    ins: Vec<Param>,
    outs: Vec<Param>,
    map: Body,
    reduce: Body,
    post: Body,
    identity: Body,
    reduce_type: ParamType,
    options: CompileOptions,
    cache: Arc<KernelCache>,
    compiled: Mutex<HashMap<(SpecKey, Strategy, u32), Arc<CompiledKernel>>>,
    host_compiled: Mutex<HashMap<HostKey, HostKernel>>,
    #[allow(clippy::type_complexity)]
    cpu_compiled: Mutex<HashMap<(SpecKey, Strategy, u32), Arc<crate::runtime::cpu::CpuKernel>>>,
    /// The generated source of every specialization compiled so far, by its description
    /// ([`ReductionKernel::cached_codes`]).
    codes: Mutex<std::collections::BTreeMap<String, String>>,
}

/// A reduction call's types and shapes, before the outputs exist.
#[derive(Clone, Debug)]
pub struct ReductionResolved {
    /// The outputs' shape (the reduced axes removed, or kept as 1 with `keepdims`).
    pub out_shape: Vec<u64>,
    /// Each output parameter's dtype.
    pub out_dtypes: Vec<Scalar>,
    /// The outputs to allocate (indices into the output list), C-contiguous.
    pub missing: Vec<usize>,
    /// The reduced axes, sorted.
    pub axes: Vec<usize>,
    /// The type `a` and `b` have.
    pub reduce_type: Scalar,
    inner: Resolved,
}

/// One launch of a reduction.
#[derive(Clone, Debug)]
pub struct ReductionLaunch {
    /// The argument types of the generated kernel(s).
    pub types: Vec<Type>,
    /// The argument values (the partial results' array, for [`Strategy::Grid`], is the
    /// second-to-last array and is filled by [`ReductionKernel::launch`]).
    pub args: Vec<ArgValue>,
    /// How the work is spread.
    pub strategy: Strategy,
    /// Output elements.
    pub n_out: u64,
    /// Elements reduced into each output element.
    pub n_red: u64,
    /// The outputs.
    pub outputs: Vec<DeviceArray>,
    /// The type of `a`.
    pub reduce_type: Scalar,
    /// Outputs per block of [`Strategy::Columns`] (1 for the other strategies).
    pub tile: u32,
    /// Slices of the reduced axis (`grid_dim.y`) of [`Strategy::Columns`] (1 for the other
    /// strategies); above 1 a second kernel folds the partial results.
    pub splits: u32,
    placeholders: Vec<(char, Scalar)>,
    param_types: Vec<Scalar>,
    kdims: usize,
    rdims: usize,
}

impl ReductionLaunch {
    /// Blocks of the (first) kernel.
    pub fn blocks(&self) -> u64 {
        let b = u64::from(BLOCK);
        let n = match self.strategy {
            Strategy::Thread => self.n_out.div_ceil(b),
            Strategy::Warp => (self.n_out * 32).div_ceil(b),
            Strategy::Block => self.n_out,
            Strategy::Grid => self.n_red.div_ceil(b).min(MAX_PARTIALS),
            Strategy::Columns => self.n_out.div_ceil(u64::from(self.tile)),
        };
        n.clamp(1, i32::MAX as u64 / u64::from(BLOCK))
    }

    /// The grid of the main kernel: [`ReductionLaunch::blocks`] × the splits of the reduced
    /// axis, of [`BLOCK`] threads each.
    pub fn grid(&self) -> LaunchConfig {
        LaunchConfig::new((self.blocks() as u32, self.splits), BLOCK)
    }

    /// For a call of two kernels (a full reduction, a split column reduction): the length of
    /// the partials array both take, and the grid of the final kernel. `None` for one kernel.
    /// [`ReductionKernel::launch`] launches so; embedders that replay launches use it too.
    pub fn final_pass(&self) -> Option<(u64, LaunchConfig)> {
        match self.strategy {
            Strategy::Grid => Some((self.blocks(), LaunchConfig::linear(1, BLOCK))),
            Strategy::Columns if self.splits > 1 => Some((
                self.partials_len(),
                LaunchConfig::linear(self.blocks() as u32, BLOCK),
            )),
            _ => None,
        }
    }

    /// Values of the reduce type the partial results need: [`MAX_PARTIALS`] for
    /// [`Strategy::Grid`], `splits × n_out` for a split [`Strategy::Columns`], else 0.
    pub fn partials_len(&self) -> u64 {
        match self.strategy {
            Strategy::Grid => MAX_PARTIALS,
            Strategy::Columns if self.splits > 1 => u64::from(self.splits) * self.n_out,
            _ => 0,
        }
    }
}

/// Picks the strategy for `n_out` outputs of `n_red` elements each, from the first input's
/// strides (in elements, after dimension merging) along the innermost reduced and the
/// innermost kept dimension (docs/semantics.md §20.4):
///
/// - one output: [`Strategy::Grid`];
/// - reduced elements adjacent (`red_stride` 1): for fewer than 1024 rows of at least 1024,
///   [`Strategy::Columns`] with a tile of 1 (a block's threads read one row) when
///   [`column_splits`] cuts the rows into slices, else [`Strategy::Block`];
///   [`Strategy::Warp`] for rows of at least 16; else [`Strategy::Thread`];
/// - otherwise (a reduction over axes that are not the innermost): [`Strategy::Thread`] for
///   fewer than 32 elements per output or at least [`THREAD_OUTPUTS`] outputs,
///   [`Strategy::Block`] for fewer than 1024 outputs when the reduced axis is the denser one
///   (`|red_stride| < |kept_stride|`), else [`Strategy::Columns`].
///
/// ```
/// use pydevice::kernels::reduction::{Strategy, choose_strategy};
/// // `axis=0` of a C-contiguous (65536, 1024) matrix: reduced stride 1024, kept stride 1.
/// assert_eq!(choose_strategy(1024, 65536, 1024, 1), Strategy::Columns);
/// assert_eq!(choose_strategy(65536, 1024, 1, 1024), Strategy::Warp);
/// ```
pub fn choose_strategy(n_out: u64, n_red: u64, red_stride: i64, kept_stride: i64) -> Strategy {
    if n_out == 1 {
        return Strategy::Grid;
    }
    if red_stride == 1 {
        if n_red >= 1024 && n_out < 1024 {
            // Few long rows: split them over `block_idx.y` when a block per row would leave
            // the GPU idle.
            if column_splits(n_out, n_red, 1) > 1 {
                Strategy::Columns
            } else {
                Strategy::Block
            }
        } else if n_red >= 16 {
            Strategy::Warp
        } else {
            Strategy::Thread
        }
    } else if n_red < 32 || n_out >= THREAD_OUTPUTS {
        Strategy::Thread
    } else if red_stride.unsigned_abs() < kept_stride.unsigned_abs() && n_out < 1024 {
        Strategy::Block
    } else {
        Strategy::Columns
    }
}

impl ReductionResolved {
    /// Values of the reduce type that are enough for the partial results of any launch of
    /// this call ([`ReductionLaunch::partials_len`] before the strides are known): the
    /// larger of [`MAX_PARTIALS`] and a split column reduction's `splits × n_out`.
    pub fn partials_len(&self) -> u64 {
        let n_out: u64 = self.out_shape.iter().product();
        let n_red: u64 = self.axes.iter().map(|&d| self.inner.shape[d]).product();
        // The tile is 1 for rows, `column_tile` for columns: enough for either (a tile
        // `column_shape` narrows has one slice, no partials).
        [1, column_tile(n_out, 0)]
            .iter()
            .map(|&tile| match column_splits(n_out, n_red, tile) {
                1 => 0,
                splits => splits * n_out,
            })
            .fold(MAX_PARTIALS, u64::max)
    }
}

impl ReductionKernel {
    /// A reduction from CuPy's strings: input and output parameters, `map_expr`,
    /// `reduce_expr` (of `a` and `b`), `post_map_expr` (statements assigning the outputs from
    /// `a`), `identity` (an expression), the name, and `reduce_type` (the type of `a` and `b`;
    /// by default the first output's type).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        in_params: &str,
        out_params: &str,
        map_expr: &str,
        reduce_expr: &str,
        post_map_expr: &str,
        identity: &str,
        name: &str,
        reduce_type: Option<&str>,
    ) -> Result<ReductionKernel, Error> {
        let rt_text = reduce_type.unwrap_or("");
        let def = Definition::new(
            name,
            "ReductionKernel",
            &[
                in_params,
                out_params,
                map_expr,
                reduce_expr,
                post_map_expr,
                identity,
                rt_text,
            ],
        );
        let mut diags = Vec::new();
        if !super::is_identifier(name) || super::KEYWORDS.contains(&name) {
            diags.push(Diagnostic::error(
                Code::E0700,
                Span::default(),
                format!("the kernel's name `{name}` is not a Python identifier"),
            ));
        }
        let ins = parse_params(&def, 0, &mut diags);
        let outs = parse_params(&def, 1, &mut diags);
        if outs.is_empty() && diags.is_empty() {
            diags.push(Diagnostic::error(
                Code::E0700,
                def.part_span(1),
                "a reduction kernel needs at least one output parameter",
            ));
        }
        for p in ins.iter().chain(&outs) {
            if p.name == "a" || p.name == "b" {
                diags.push(
                    Diagnostic::error(
                        Code::E0700,
                        p.span,
                        format!(
                            "`{}` is reserved in a reduction: `a` and `b` are the values `reduce_expr` combines",
                            p.name
                        ),
                    )
                    .with_label("reserved name"),
                );
            }
        }
        check_duplicates(&ins.iter().chain(&outs).collect::<Vec<_>>(), &mut diags);
        let placeholders: Vec<char> = ins
            .iter()
            .chain(&outs)
            .filter_map(|p| match p.ty {
                ParamType::Placeholder(c) => Some(c),
                ParamType::Fixed(_) => None,
            })
            .collect();
        let reduce_type = match reduce_type.map(str::trim) {
            None => outs
                .first()
                .map_or(ParamType::Fixed(Scalar::Float32), |p| p.ty.clone()),
            Some(t) if t.len() == 1 && placeholders.contains(&t.chars().next().unwrap_or(' ')) => {
                ParamType::Placeholder(t.chars().next().unwrap_or('T'))
            }
            Some(t) => match Scalar::from_name(t).filter(|s| !s.is_fp8()) {
                Some(s) => ParamType::Fixed(s),
                None => {
                    diags.push(Diagnostic::error(
                        Code::E0700,
                        def.part_span(6),
                        format!("reduce_type `{t}` is neither a dtype name nor a placeholder of the parameters"),
                    ));
                    ParamType::Fixed(Scalar::Float32)
                }
            },
        };
        let map = Body::new(&def, 2, &placeholders, true, &mut diags);
        let reduce = Body::new(&def, 3, &placeholders, true, &mut diags);
        let post = Body::new(&def, 4, &placeholders, false, &mut diags);
        let identity = Body::new(&def, 5, &placeholders, true, &mut diags);
        match (map, reduce, post, identity) {
            (Some(map), Some(reduce), Some(post), Some(identity)) if diags.is_empty() => {
                Ok(ReductionKernel {
                    name: name.to_string(),
                    def,
                    ins,
                    outs,
                    map,
                    reduce,
                    post,
                    identity,
                    reduce_type,
                    options: CompileOptions::default(),
                    cache: Arc::new(KernelCache::new()),
                    compiled: Mutex::new(HashMap::new()),
                    host_compiled: Mutex::new(HashMap::new()),
                    cpu_compiled: Mutex::new(HashMap::new()),
                    codes: Mutex::new(std::collections::BTreeMap::new()),
                })
            }
            _ => Err(def.error(diags)),
        }
    }

    /// Compiles through `cache` instead of a cache of its own.
    pub fn with_cache(mut self, cache: Arc<KernelCache>) -> ReductionKernel {
        self.cache = cache;
        self
    }

    /// Compiles with `options`.
    pub fn with_options(mut self, options: CompileOptions) -> ReductionKernel {
        self.options = options;
        self
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Types and shapes of a call: `axis` as CuPy's (`None`: every axis; negative axes
    /// count from the end), `keepdims` keeps reduced axes as extents of 1.
    pub fn resolve(
        &self,
        operands: &[Operand],
        axis: Option<&[i64]>,
        keepdims: bool,
    ) -> Result<ReductionResolved, Error> {
        let inner = resolve(
            &self.name, &self.def, &self.ins, &self.outs, operands, None, false,
        )?;
        let ndim = inner.shape.len();
        let mut axes: Vec<usize> = match axis {
            None => (0..ndim).collect(),
            Some(list) => {
                let mut v = Vec::new();
                for &a in list {
                    let k = if a < 0 { a + ndim as i64 } else { a };
                    if k < 0 || k >= ndim as i64 {
                        return Err(arg_error(format!(
                            "axis {a} is out of bounds for an array of dimension {ndim}"
                        )));
                    }
                    if v.contains(&(k as usize)) {
                        return Err(arg_error(format!("axis {a} is given twice")));
                    }
                    v.push(k as usize);
                }
                v
            }
        };
        axes.sort_unstable();
        if self.ins.iter().chain(&self.outs).any(|p| p.raw)
            && axes.iter().enumerate().any(|(k, &a)| a != k)
        {
            return Err(arg_error(format!(
                "`{}` has raw parameters: the reduced axes must lead the shape (axis 0, (0, 1), …), but they are {axes:?}",
                self.name
            )));
        }
        let out_shape: Vec<u64> = (0..ndim)
            .filter_map(|d| {
                if !axes.contains(&d) {
                    Some(inner.shape[d])
                } else if keepdims {
                    Some(1)
                } else {
                    None
                }
            })
            .collect();
        let n_in = self.ins.len();
        for (k, p) in self.outs.iter().enumerate() {
            if let Operand::Array(a) = &inner.operands()[n_in + k]
                && !p.raw
                && a.shape != out_shape
            {
                return Err(arg_error(format!(
                    "output `{}` has shape {:?}, but the reduction gives shape {out_shape:?}",
                    p.name, a.shape
                )));
            }
        }
        let reduce_type = match self.reduce_type {
            ParamType::Fixed(s) => s,
            ParamType::Placeholder(c) => inner
                .placeholders
                .iter()
                .find(|(x, _)| *x == c)
                .map_or(Scalar::Float32, |&(_, s)| s),
        };
        Ok(ReductionResolved {
            out_shape,
            out_dtypes: inner.out_dtypes.clone(),
            missing: inner.missing.clone(),
            axes,
            reduce_type,
            inner,
        })
    }

    /// The launch for a resolved call, with `outputs` for [`ReductionResolved::missing`].
    pub fn bind(
        &self,
        r: &ReductionResolved,
        outputs: Vec<DeviceArray>,
    ) -> Result<ReductionLaunch, Error> {
        if outputs.len() != r.missing.len() {
            return Err(arg_error(format!(
                "{} outputs were to be allocated, but {} were given",
                r.missing.len(),
                outputs.len()
            )));
        }
        let n_in = self.ins.len();
        let mut operands = r.inner.operands().to_vec();
        for (&k, a) in r.missing.iter().zip(outputs) {
            if a.dtype != r.out_dtypes[k] || a.shape != r.out_shape {
                return Err(arg_error(format!(
                    "the allocated output `{}` must be {} of shape {:?}",
                    self.outs[k].name, r.out_dtypes[k], r.out_shape
                )));
            }
            operands[n_in + k] = Operand::Array(a);
        }
        let params: Vec<&Param> = self.ins.iter().chain(&self.outs).collect();
        let shape = &r.inner.shape;
        let ndim = shape.len();
        let kept: Vec<usize> = (0..ndim).filter(|d| !r.axes.contains(d)).collect();
        let kept_shape: Vec<u64> = kept.iter().map(|&d| shape[d]).collect();
        let red_shape: Vec<u64> = r.axes.iter().map(|&d| shape[d]).collect();
        let n_out: u64 = kept_shape.iter().product();
        let n_red: u64 = red_shape.iter().product();
        // Strides of each non-raw array over the kept and the reduced axes.
        let mut kept_strides = Vec::new();
        let mut red_strides = Vec::new();
        let mut slots = Vec::new();
        for (k, o) in operands.iter().enumerate() {
            let Operand::Array(a) = o else { continue };
            if params[k].raw {
                continue;
            }
            if k < n_in {
                let v = broadcast_to(a, shape);
                kept_strides.push(kept.iter().map(|&d| v.strides[d]).collect::<Vec<_>>());
                red_strides.push(r.axes.iter().map(|&d| v.strides[d]).collect::<Vec<_>>());
            } else {
                // An output: its dimensions are the kept ones (keepdims adds extents of 1).
                let st: Vec<i64> = if a.ndim() == kept.len() {
                    a.strides.clone()
                } else {
                    (0..ndim)
                        .filter(|d| !r.axes.contains(d))
                        .map(|d| a.strides[d])
                        .collect()
                };
                kept_strides.push(st);
                red_strides.push(vec![0; r.axes.len()]);
            }
            slots.push(k);
        }
        // Kept extents that are all 1 (`(1, n)` summed over axis 1) are a full reduction: the
        // grid-wide pass indexes its inputs by the reduced dimensions alone.
        let (kshape, kstrides) = if kept.is_empty() || n_out == 1 {
            (Vec::new(), vec![Vec::new(); slots.len()])
        } else {
            collapse_dims(&kept_shape, &kept_strides)
        };
        let (rshape, rstrides) = collapse_dims(&red_shape, &red_strides);
        let first_in = slots.iter().position(|&k| k < n_in);
        let inner = |v: &[Vec<i64>]| first_in.and_then(|s| v[s].last().copied()).unwrap_or(0);
        let strategy = choose_strategy(n_out, n_red, inner(&rstrides), inner(&kstrides));
        let (tile, splits) = if strategy == Strategy::Columns {
            // The item size of the first input, which the tile's rows are read from.
            let itemsize = first_in
                .and_then(|s| match &operands[slots[s]] {
                    Operand::Array(a) => Some(a.dtype.size()),
                    _ => None,
                })
                .unwrap_or(4);
            let (tile, splits) = column_shape(n_out, n_red, inner(&rstrides), itemsize);
            (tile, splits as u32)
        } else {
            (1, 1)
        };
        let mut types = Vec::new();
        let mut args = Vec::new();
        let mut outputs = Vec::new();
        for (k, o) in operands.iter().enumerate() {
            let p = params[k];
            match o {
                Operand::Array(a) if p.raw => {
                    let view = if a.ndim() == 0 {
                        DeviceArray {
                            shape: vec![1],
                            strides: vec![1],
                            ..a.clone()
                        }
                    } else {
                        a.clone()
                    };
                    types.push(view.array_type());
                    args.push(ArgValue::Array(ArrayArg {
                        data: a.data,
                        shape: view.shape.clone(),
                        strides: view.strides.clone(),
                    }));
                }
                Operand::Array(a) => {
                    let s = slots.iter().position(|&j| j == k).unwrap_or(0);
                    let (sh, st): (Vec<u64>, Vec<i64>) = if k < n_in {
                        (
                            kshape.iter().chain(&rshape).copied().collect(),
                            kstrides[s].iter().chain(&rstrides[s]).copied().collect(),
                        )
                    } else if kshape.is_empty() {
                        (vec![1], vec![1])
                    } else {
                        (kshape.clone(), kstrides[s].clone())
                    };
                    let layout = if st.last() == Some(&1) {
                        Layout::C
                    } else {
                        Layout::Any
                    };
                    types.push(Type::array(a.dtype, sh.len() as u8, layout));
                    args.push(ArgValue::Array(ArrayArg {
                        data: a.data,
                        shape: sh,
                        strides: st,
                    }));
                }
                Operand::Scalar(s) => {
                    types.push(Type::Scalar(r.inner.param_type(k)));
                    args.push(s.value.clone());
                }
                Operand::Absent => {
                    return Err(arg_error(format!("output `{}` was not allocated", p.name)));
                }
            }
            if k >= n_in
                && let Operand::Array(a) = o
            {
                outputs.push(a.clone());
            }
        }
        // The partial results (Grid), then the sizes.
        types.push(Type::array(r.reduce_type, 1, Layout::C));
        args.push(ArgValue::Array(ArrayArg {
            data: 0,
            shape: vec![0],
            strides: vec![1],
        }));
        types.push(Type::Scalar(Scalar::Int64));
        args.push(ArgValue::Int(n_out as i64));
        types.push(Type::Scalar(Scalar::Int64));
        args.push(ArgValue::Int(n_red as i64));
        Ok(ReductionLaunch {
            types,
            args,
            strategy,
            n_out,
            n_red,
            outputs,
            reduce_type: r.reduce_type,
            placeholders: r.inner.placeholders.clone(),
            param_types: (0..params.len()).map(|k| r.inner.param_type(k)).collect(),
            kdims: kshape.len(),
            rdims: rshape.len(),
            tile,
            splits,
        })
    }

    /// The generated kernel(s); with `host`, one `@device.func` that folds every output
    /// element in turn on the calling thread (§20.8).
    #[allow(clippy::too_many_lines)]
    fn generate(
        &self,
        launch: &ReductionLaunch,
        host: bool,
    ) -> (GeneratedSource, HashMap<String, String>) {
        let (types, kdims, rdims, strategy) =
            (&launch.types, launch.kdims, launch.rdims, launch.strategy);
        let params: Vec<&Param> = self.ins.iter().chain(&self.outs).collect();
        let n_in = self.ins.len();
        let rt = launch.reduce_type;
        let rt_conv = convert(rt);
        let mut renames = HashMap::new();
        let mut b = SourceBuilder::new(self.def.part_span(2));
        b.line(0, "from cuda import device");
        if [&self.map, &self.reduce, &self.post, &self.identity]
            .iter()
            .any(|x| x.names.loaded.contains("math"))
        {
            b.line(0, "import math");
        }
        let mut defined: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        defined.extend(["i", "a", "b", "_ind_size"]);
        let ph: Vec<String> = launch
            .placeholders
            .iter()
            .map(|(c, _)| c.to_string())
            .collect();
        defined.extend(ph.iter().map(String::as_str));
        let mut names = super::BodyNames::default();
        for body in [&self.map, &self.reduce, &self.post, &self.identity] {
            names.loaded.extend(body.names.loaded.iter().cloned());
            names.stored.extend(body.names.stored.iter().cloned());
        }
        for (c, s) in &launch.placeholders {
            if names.loaded.contains(&c.to_string()) {
                let line = if *s == Scalar::Bool {
                    format!("{c} = bool")
                } else {
                    format!("from cuda.device import {} as {c}", s.name())
                };
                b.line(0, &line);
            }
        }
        let (math, device) = imports_for(&names, &defined);
        if !math.is_empty() {
            b.line(0, &format!("from math import {}", math.join(", ")));
        }
        if !device.is_empty() {
            b.line(0, &format!("from cuda.device import {}", device.join(", ")));
        }
        let pnames: Vec<String> = params
            .iter()
            .enumerate()
            .map(|(k, p)| {
                if types[k].as_array().is_some() && !p.raw {
                    let n = format!("_p_{}", p.name);
                    renames.insert(n.clone(), p.name.clone());
                    n
                } else {
                    p.name.clone()
                }
            })
            .chain(["_partials", "_n_out", "_n_red"].map(String::from))
            .collect();
        let first = params
            .iter()
            .enumerate()
            .find(|(k, p)| *k < n_in && !p.raw && types[*k].as_array().is_some())
            .map(|(k, _)| pnames[k].clone());
        let shuffle = !rt.is_complex();
        // Folds `b` into `a` (the reduce expression, converted to the reduce type).
        let fold = |b: &mut SourceBuilder, ind: usize| {
            b.expr_line(ind, &format!("a = {rt_conv}("), &self.reduce, ")");
        };
        let identity = |b: &mut SourceBuilder, ind: usize, target: &str| {
            b.expr_line(ind, &format!("{target} = {rt_conv}("), &self.identity, ")");
        };
        // Combines `a` across the 32 lanes of the warp (every lane ends with the result).
        let warp_combine = |b: &mut SourceBuilder, ind: usize| {
            b.line(ind, "for _s in (16, 8, 4, 2, 1):");
            if shuffle {
                b.line(ind + 4, "b = device.shfl_xor_sync(0xFFFFFFFF, a, _s)");
            } else {
                b.line(ind + 4, "_xch[device.thread_idx.x] = a");
                b.line(ind + 4, "device.syncwarp()");
                b.line(ind + 4, "b = _xch[device.thread_idx.x ^ _s]");
                b.line(ind + 4, "device.syncwarp()");
            }
            fold(b, ind + 4);
        };
        // Combines `a` across the block; thread 0 ends with the result.
        let block_combine = |b: &mut SourceBuilder, ind: usize| {
            warp_combine(b, ind);
            b.line(ind, "if device.thread_idx.x % 32 == 0:");
            b.line(ind + 4, "_warps[device.thread_idx.x // 32] = a");
            b.line(ind, "device.syncthreads()");
            b.line(ind, "if device.thread_idx.x < 32:");
            b.line(ind + 4, "if device.thread_idx.x < 8:");
            b.line(ind + 8, "a = _warps[device.thread_idx.x]");
            b.line(ind + 4, "else:");
            identity(b, ind + 8, "a");
            warp_combine(b, ind + 4);
            b.line(ind, "device.syncthreads()");
        };
        let shared_decls = |b: &mut SourceBuilder| {
            b.line(
                4,
                &format!("_warps = device.shared_array(8, device.{})", rt.name()),
            );
            if !shuffle {
                b.line(
                    4,
                    &format!("_xch = device.shared_array(256, device.{})", rt.name()),
                );
            }
        };
        // Loads the inputs of element (o, r) and folds its mapped value into `a`.
        // The multi-index of `var` over `dims` merged dimensions starting at `from` of the
        // first input's shape (lines emitted at `ind`).
        let unravel =
            |b: &mut SourceBuilder, ind: usize, var: &str, from: usize, dims: usize, tag: &str| {
                let Some(f) = &first else {
                    return Vec::new();
                };
                if dims == 1 {
                    return vec![var.to_string()];
                }
                b.line(ind, &format!("_{tag}r0 = {var}"));
                let mut parts = vec![String::new(); dims];
                for d in (1..dims).rev() {
                    let k = dims - 1 - d;
                    b.line(
                        ind,
                        &format!("_{tag}{d} = _{tag}r{k} % {f}.shape[{}]", from + d),
                    );
                    b.line(
                        ind,
                        &format!("_{tag}r{} = _{tag}r{k} // {f}.shape[{}]", k + 1, from + d),
                    );
                    parts[d] = format!("_{tag}{d}");
                }
                parts[0] = format!("_{tag}r{}", dims - 1);
                parts
            };
        // The kept part of the index of output element `o`, computed once per output.
        let kept = |b: &mut SourceBuilder, ind: usize, o: &str| {
            if kdims > 0 {
                unravel(b, ind, o, 0, kdims, "k")
            } else {
                Vec::new()
            }
        };
        let element = |b: &mut SourceBuilder, ind: usize, kept: &[String], o: &str, rv: &str| {
            let mut idx = kept.to_vec();
            idx.extend(unravel(b, ind, rv, kdims, rdims, "q"));
            let index = idx.join(", ");
            if self.map.names.loaded.contains("i") {
                b.line(ind, &format!("i = {rv} * _n_out + {o}"));
            }
            for (k, p) in params.iter().enumerate().take(n_in) {
                let Some(at) = types[k].as_array() else {
                    continue;
                };
                if p.raw || !self.map.names.loaded.contains(&p.name) {
                    continue;
                }
                let want = launch.param_types[k];
                let load = format!("{}[{index}]", pnames[k]);
                let v = if at.dtype != want {
                    format!("{}({load})", convert(want))
                } else {
                    load
                };
                b.line_at(ind, &format!("{} = {v}", p.name), p.span);
            }
            b.expr_line(ind, &format!("b = {rt_conv}("), &self.map, ")");
            fold(b, ind);
        };
        // The elements `start, start + step, …` below `stop` (`step` a constant): four per
        // iteration, so that each thread has four independent loads in flight before the
        // folds that wait for them (ptxas unrolls that loop again), then the rest one by
        // one. The fold order is that of the plain loop. `start` must be provably
        // non-negative (§5.1), and so then are `_r0`, `_q4` and every row index.
        let unrolled = |b: &mut SourceBuilder,
                        ind: usize,
                        start: &str,
                        stop: &str,
                        step: u32,
                        body: &dyn Fn(&mut SourceBuilder, usize, &str)| {
            let s4 = 4 * step;
            b.line(ind, &format!("_r0 = {start}"));
            // The thread's element count, rounded down to a multiple of 4, times `step`.
            if step == 1 {
                b.line(ind, &format!("_q4 = max({stop} - _r0, 0) // 4 * 4"));
            } else {
                b.line(
                    ind,
                    &format!(
                        "_q4 = (max({stop} - _r0, 0) + {}) // {step} // 4 * {s4}",
                        step - 1
                    ),
                );
            }
            b.line(ind, &format!("for _r in range(_r0, _r0 + _q4, {s4}):"));
            for u in 0..4 {
                let rv = if u == 0 {
                    "_r".to_string()
                } else {
                    format!("(_r + {})", u * step)
                };
                body(b, ind + 4, &rv);
            }
            b.line(ind, &format!("for _r in range(_r0 + _q4, {stop}, {step}):"));
            body(b, ind + 4, "_r");
        };
        // Assigns and stores the outputs of element `o` from `a`.
        let finish = |b: &mut SourceBuilder, ind: usize, o: &str| {
            let oindex = if kdims <= 1 {
                o.to_string()
            } else {
                let f = pnames[n_in..]
                    .iter()
                    .zip(&params[n_in..])
                    .find(|(_, p)| !p.raw)
                    .map(|(n, _)| n.clone())
                    .unwrap_or_default();
                b.line(ind, &format!("_or0 = {o}"));
                let mut parts = vec![String::new(); kdims];
                for d in (1..kdims).rev() {
                    let k = kdims - 1 - d;
                    b.line(ind, &format!("_o{d} = _or{k} % {f}.shape[{d}]"));
                    b.line(ind, &format!("_or{} = _or{k} // {f}.shape[{d}]", k + 1));
                    parts[d] = format!("_o{d}");
                }
                parts[0] = format!("_or{}", kdims - 1);
                parts.join(", ")
            };
            for (k, p) in params.iter().enumerate().skip(n_in) {
                if !p.raw && self.post.names.loaded.contains(&p.name) {
                    b.line_at(
                        ind,
                        &format!("{} = {}[{oindex}]", p.name, pnames[k]),
                        p.span,
                    );
                }
            }
            b.body(ind, &self.post);
            for (k, p) in params.iter().enumerate().skip(n_in) {
                if !p.raw && self.post.names.stored.contains(&p.name) {
                    b.line_at(
                        ind,
                        &format!("{}[{oindex}] = {}", pnames[k], p.name),
                        p.span,
                    );
                }
            }
        };
        // Folds `a` over the row groups of a Columns block (`256 / tile` of them): thread t
        // folds t + s (the same column) for s = 128, 64, …, tile, so that row group 0 ends
        // with each column's result.
        let tree = |b: &mut SourceBuilder, tile: u32| {
            b.line(8, "_tree[device.thread_idx.x] = a");
            b.line(8, "device.syncthreads()");
            let steps: Vec<String> = std::iter::successors(Some(BLOCK / 2), |s| Some(s / 2))
                .take_while(|&s| s >= tile)
                .map(|s| s.to_string())
                .collect();
            if !steps.is_empty() {
                let list = if steps.len() == 1 {
                    format!("({},)", steps[0])
                } else {
                    format!("({})", steps.join(", "))
                };
                b.line(8, &format!("for _s in {list}:"));
                b.line(12, "if device.thread_idx.x < _s:");
                b.line(16, "b = _tree[device.thread_idx.x + _s]");
                fold(b, 16);
                b.line(16, "_tree[device.thread_idx.x] = a");
                b.line(12, "device.syncthreads()");
            }
        };
        b.line(0, "");
        b.line(0, "");
        b.line(
            0,
            if host {
                "@device.func"
            } else {
                "@device.kernel"
            },
        );
        b.line(0, &format!("def {}({}):", self.name, pnames.join(", ")));
        if names.loaded.contains("_ind_size") {
            b.line(4, "_ind_size = _n_out * _n_red");
        }
        if host {
            // One output element after the other. Its elements are folded in chunks of
            // `HOST_CHUNK`, each from the identity, and the chunks' results folded in turn:
            // the expression is associative and commutative (the device folds in its own
            // order too), and a long float sum then rounds about as NumPy's pairwise sum.
            b.line(4, "for _o in range(_n_out):");
            let kp = kept(&mut b, 8, "_o");
            identity(&mut b, 8, "_acc");
            b.line(8, &format!("for _c in range(0, _n_red, {HOST_CHUNK}):"));
            identity(&mut b, 12, "a");
            b.line(
                12,
                &format!("for _r in range(_c, min(_c + {HOST_CHUNK}, _n_red)):"),
            );
            element(&mut b, 16, &kp, "_o", "_r");
            b.line(12, "b = a");
            b.line(12, "a = _acc");
            fold(&mut b, 12);
            b.line(12, "_acc = a");
            b.line(8, "a = _acc");
            finish(&mut b, 8, "_o");
            return (b.finish(), renames);
        }
        match strategy {
            Strategy::Thread => {
                b.line(
                    4,
                    "for _o in range(device.tid(1), _n_out, device.grid_size(1)):",
                );
                identity(&mut b, 8, "a");
                let kp = kept(&mut b, 8, "_o");
                unrolled(&mut b, 8, "0", "_n_red", 1, &|b, ind, rv| {
                    element(b, ind, &kp, "_o", rv);
                });
                finish(&mut b, 8, "_o");
            }
            Strategy::Warp => {
                if !shuffle {
                    shared_decls(&mut b);
                }
                b.line(4, "_lane = device.thread_idx.x % 32");
                b.line(
                    4,
                    "for _o in range(device.tid(1) // 32, _n_out, device.grid_size(1) // 32):",
                );
                identity(&mut b, 8, "a");
                let kp = kept(&mut b, 8, "_o");
                unrolled(&mut b, 8, "_lane", "_n_red", 32, &|b, ind, rv| {
                    element(b, ind, &kp, "_o", rv);
                });
                warp_combine(&mut b, 8);
                b.line(8, "if _lane == 0:");
                finish(&mut b, 12, "_o");
            }
            Strategy::Block => {
                shared_decls(&mut b);
                b.line(
                    4,
                    "for _o in range(device.block_idx.x, _n_out, device.grid_dim.x):",
                );
                identity(&mut b, 8, "a");
                let kp = kept(&mut b, 8, "_o");
                b.line(
                    8,
                    "for _r in range(device.thread_idx.x, _n_red, device.block_dim.x):",
                );
                element(&mut b, 12, &kp, "_o", "_r");
                block_combine(&mut b, 8);
                b.line(8, "if device.thread_idx.x == 0:");
                finish(&mut b, 12, "_o");
            }
            Strategy::Grid => {
                shared_decls(&mut b);
                identity(&mut b, 4, "a");
                b.line(
                    4,
                    "for _r in range(device.tid(1), _n_red, device.grid_size(1)):",
                );
                element(&mut b, 8, &[], "0", "_r");
                block_combine(&mut b, 4);
                b.line(4, "if device.thread_idx.x == 0:");
                b.line(8, "_partials[device.block_idx.x] = a");
                b.line(0, "");
                b.line(0, "");
                b.line(0, "@device.kernel");
                b.line(
                    0,
                    &format!("def {}_final({}):", self.name, pnames.join(", ")),
                );
                shared_decls(&mut b);
                identity(&mut b, 4, "a");
                b.line(
                    4,
                    "for _r in range(device.thread_idx.x, len(_partials), 256):",
                );
                b.line(8, "b = _partials[_r]");
                fold(&mut b, 8);
                block_combine(&mut b, 4);
                b.line(4, "if device.thread_idx.x == 0:");
                finish(&mut b, 8, "0");
            }
            Strategy::Columns => {
                let tile = launch.tile;
                let groups = BLOCK / tile;
                b.line(
                    4,
                    &format!("_tree = device.shared_array({BLOCK}, device.{})", rt.name()),
                );
                b.line(4, &format!("_c = device.thread_idx.x % {tile}"));
                b.line(4, &format!("_g = device.thread_idx.x // {tile}"));
                // Written so that the checker proves the row index non-negative (§5.1): no
                // negative-index wrap in the loop.
                b.line(4, "_nr = max(_n_red, 0)");
                b.line(
                    4,
                    "_chunk = _nr // device.grid_dim.y + min(_nr % device.grid_dim.y, 1)",
                );
                b.line(4, "_lo = device.block_idx.y * _chunk");
                b.line(4, "_hi = min(_lo + _chunk, _n_red)");
                b.line(
                    4,
                    &format!(
                        "for _t in range(device.block_idx.x * {tile}, _n_out, device.grid_dim.x * {tile}):"
                    ),
                );
                b.line(8, "_o = _t + _c");
                identity(&mut b, 8, "a");
                b.line(8, "if _o < _n_out:");
                let kp = kept(&mut b, 12, "_o");
                unrolled(&mut b, 12, "_lo + _g", "_hi", groups, &|b, ind, rv| {
                    element(b, ind, &kp, "_o", rv);
                });
                tree(&mut b, tile);
                b.line(
                    8,
                    &format!("if device.thread_idx.x < {tile} and _o < _n_out:"),
                );
                b.line(12, "if device.grid_dim.y == 1:");
                finish(&mut b, 16, "_o");
                b.line(12, "else:");
                b.line(16, "_partials[device.block_idx.y * _n_out + _o] = a");
                // The second pass: the partials as a (slices, n_out) matrix, reduced over
                // its slices by the same tiles (one slice per block row group at a time).
                b.line(0, "");
                b.line(0, "");
                b.line(0, "@device.kernel");
                b.line(
                    0,
                    &format!("def {}_final({}):", self.name, pnames.join(", ")),
                );
                b.line(
                    4,
                    &format!("_tree = device.shared_array({BLOCK}, device.{})", rt.name()),
                );
                b.line(4, &format!("_c = device.thread_idx.x % {tile}"));
                b.line(4, &format!("_g = device.thread_idx.x // {tile}"));
                b.line(4, "_m = max(_n_out, 0)");
                b.line(4, "_splits = len(_partials) // _m");
                b.line(
                    4,
                    &format!(
                        "for _t in range(device.block_idx.x * {tile}, _m, device.grid_dim.x * {tile}):"
                    ),
                );
                b.line(8, "_o = _t + _c");
                identity(&mut b, 8, "a");
                b.line(8, "if _o < _m:");
                unrolled(&mut b, 12, "_g", "_splits", groups, &|b, ind, rv| {
                    b.line(ind, &format!("b = _partials[{rv} * _m + _o]"));
                    fold(b, ind);
                });
                tree(&mut b, tile);
                b.line(8, &format!("if device.thread_idx.x < {tile} and _o < _m:"));
                finish(&mut b, 12, "_o");
            }
        }
        (b.finish(), renames)
    }

    /// The generated source of every specialization this kernel has compiled, in the order
    /// of their descriptions: `(description, source)`, the description naming the argument
    /// types, where it runs (`device`, `cpu` for the CPU back end, `host`) and how the
    /// reduction is spread. One entry per specialization, however often it ran (CuPy's
    /// `ReductionKernel._cached_codes` holds its generated CUDA C++ the same way).
    pub fn cached_codes(&self) -> Vec<(String, String)> {
        super::lock(&self.codes)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// [`ReductionKernel::generate`] for a compilation: the source is recorded in
    /// [`ReductionKernel::cached_codes`] under the specialization's description.
    fn generate_compiled(
        &self,
        launch: &ReductionLaunch,
        host: bool,
        target: &str,
    ) -> (GeneratedSource, HashMap<String, String>) {
        let g = self.generate(launch, host);
        let types: Vec<String> = launch.types.iter().map(|t| t.to_string()).collect();
        let spread = if host {
            format!(
                "{} kept and {} reduced dimensions",
                launch.kdims, launch.rdims
            )
        } else {
            format!("{:?}, tile {}", launch.strategy, launch.tile)
        };
        let key = format!("({}) on {target}: {spread}", types.join(", "));
        super::lock(&self.codes).insert(key, g.0.text.clone());
        g
    }

    /// The generated source for a launch (both kernels of a full reduction).
    pub fn source(&self, launch: &ReductionLaunch) -> String {
        self.generate(launch, false).0.text
    }

    /// The generated host function's source for a launch (§20.8).
    pub fn host_source(&self, launch: &ReductionLaunch) -> String {
        self.generate(launch, true).0.text
    }

    /// The host function for a launch (§20.8), JIT-compiled through Cranelift on the first
    /// request for its argument types, then reused. It takes the launch's arguments
    /// ([`ReductionLaunch::args`], the partial results' array left empty) with host
    /// addresses.
    pub fn compile_host(&self, launch: &ReductionLaunch) -> Result<HostKernel, Error> {
        // The types alone do not say how the dimensions split into kept and reduced ones
        // (a full reduction's input has no kept dimension).
        let key = (launch.types.clone(), launch.kdims, launch.rdims);
        super::cached_host_kernel(
            &self.host_compiled,
            key,
            &format!("<ReductionKernel {}>", self.name),
            &self.def,
            &self.name,
            &launch.types,
            || self.generate_compiled(launch, true, "host"),
        )
    }

    /// Runs a launch on the host, on the calling thread.
    ///
    /// # Safety
    ///
    /// Every array of the launch must be host memory valid for every element its shape and
    /// strides reach, as [`HostKernel::run`] requires.
    pub unsafe fn run_host(&self, launch: &ReductionLaunch) -> Result<(), Error> {
        let k = self.compile_host(launch)?;
        if launch.n_out == 0 {
            return Ok(());
        }
        // SAFETY: the caller vouches for the arrays; the partial results' array (empty) is
        // not used by the host function.
        unsafe { k.run(&launch.args) }
    }

    /// Runs a launch's device kernels (those [`ReductionKernel::launch`] runs on a GPU: the
    /// kernel, then for a full or split column reduction the `_final` kernel over the
    /// partial results, kept in host memory here) on the CPU back end (docs/semantics.md
    /// §22.4), on arrays in host memory. Compiled on the first call for these types.
    ///
    /// # Safety
    ///
    /// As [`ReductionKernel::run_host`]: every array of the launch is host memory valid for
    /// every element its shape and strides reach.
    pub unsafe fn launch_cpu(&self, launch: &ReductionLaunch) -> Result<(), Error> {
        let file = format!("<ReductionKernel {}>", self.name);
        let kernel = |entry: &str, fin: bool| {
            super::cached_cpu_kernel(
                &self.cpu_compiled,
                ((launch.types.clone(), fin), launch.strategy, launch.tile),
                &file,
                &self.def,
                entry,
                &launch.types,
                || self.generate_compiled(launch, false, "cpu"),
            )
        };
        let main = kernel(&self.name, false)?;
        if launch.n_out == 0 {
            return Ok(());
        }
        let mut args = launch.args.clone();
        let grid = launch.grid();
        let Some((len, fin_grid)) = launch.final_pass() else {
            // SAFETY: the caller vouches for the arrays.
            return unsafe { super::launch_on_cpu(&main, &args, &grid) };
        };
        let fin = kernel(&format!("{}_final", self.name), true)?;
        // The partial results: host memory of `partials_len` values of the reduce type.
        let bytes = launch.partials_len().max(len).max(1) * launch.reduce_type.size();
        let mut partials = vec![0u64; bytes.div_ceil(8) as usize];
        let slot = args.len() - 3;
        args[slot] = ArgValue::Array(ArrayArg {
            data: partials.as_mut_ptr() as u64,
            shape: vec![len],
            strides: vec![1],
        });
        // SAFETY: the caller vouches for the arrays; `partials` holds `len` values and lives
        // until both kernels are done.
        unsafe {
            super::launch_on_cpu(&main, &args, &grid)?;
            super::launch_on_cpu(&fin, &args, &fin_grid)
        }
    }

    /// The whole call on the host, on arrays in host memory: resolves, allocates the
    /// missing outputs (C-contiguous), runs and returns the outputs.
    ///
    /// # Safety
    ///
    /// As [`ReductionKernel::run_host`]: every array operand must be valid host memory for
    /// every element its shape and strides reach.
    pub unsafe fn call_host(
        &self,
        operands: &[Operand],
        axis: Option<&[i64]>,
        keepdims: bool,
    ) -> Result<Vec<HostOutput>, Error> {
        let r = self.resolve(operands, axis, keepdims)?;
        let (arrays, mut buffers) = super::allocate_host(&r.missing, &r.out_dtypes, &r.out_shape)?;
        let launch = self.bind(&r, arrays)?;
        // SAFETY: the caller vouches for the operands; the allocated outputs are `buffers`.
        unsafe { self.run_host(&launch)? };
        Ok(super::host_outputs(
            launch.outputs,
            &r.missing,
            &mut buffers,
        ))
    }

    fn compile_entry(
        &self,
        launch: &ReductionLaunch,
        entry: &str,
    ) -> Result<Arc<CompiledKernel>, Error> {
        let (source, renames) = self.generate_compiled(launch, false, "device");
        let file = format!("<ReductionKernel {}>", self.name);
        self.cache
            .get_or_compile_source(&file, &source.text, entry, &launch.types, &self.options)
            .map_err(|e| match e {
                Error::Diagnostics(d) => source.map(d, &self.def, &renames),
                e => e,
            })
    }

    /// The compiled kernels of a launch: the kernel, and for [`Strategy::Grid`] and a split
    /// [`Strategy::Columns`] the `_final` kernel that folds the partial results.
    pub fn compile(
        &self,
        launch: &ReductionLaunch,
    ) -> Result<(Arc<CompiledKernel>, Option<Arc<CompiledKernel>>), Error> {
        let key = ((launch.types.clone(), false), launch.strategy, launch.tile);
        let main = super::lock(&self.compiled).get(&key).cloned();
        let main = match main {
            Some(k) => k,
            None => {
                let k = self.compile_entry(launch, &self.name)?;
                super::lock(&self.compiled).insert(key.clone(), k.clone());
                k
            }
        };
        if launch.partials_len() == 0 {
            return Ok((main, None));
        }
        let fkey = ((launch.types.clone(), true), launch.strategy, launch.tile);
        if let Some(k) = super::lock(&self.compiled).get(&fkey) {
            return Ok((main, Some(k.clone())));
        }
        let fin = self.compile_entry(launch, &format!("{}_final", self.name))?;
        super::lock(&self.compiled).insert(fkey, fin.clone());
        Ok((main, Some(fin)))
    }

    /// Compiles, loads and launches on `stream`. A full reduction and a split column
    /// reduction need `partials`: device memory for [`ReductionLaunch::partials_len`] values
    /// of the reduce type (kept until the launch is done).
    pub fn launch(
        &self,
        device: &Device,
        launch: &ReductionLaunch,
        partials: Option<u64>,
        stream: &Stream,
    ) -> Result<(), Error> {
        let (main, fin) = self.compile(launch)?;
        if launch.n_out == 0 {
            return Ok(());
        }
        let mut args = launch.args.clone();
        let slot = args.len() - 3;
        let grid = launch.grid();
        if let Some(fin) = fin {
            let data = partials
                .ok_or_else(|| arg_error("this reduction needs memory for its partial results"))?;
            // Grid: one block folds the partials; Columns: the tiles again, one slice each.
            let (len, fin_grid) = launch
                .final_pass()
                .ok_or_else(|| arg_error("internal: a final kernel without a final pass"))?;
            args[slot] = ArgValue::Array(ArrayArg {
                data,
                shape: vec![len],
                strides: vec![1],
            });
            let k = device.load_cached(&main)?;
            device.launch_packed(&k, &k.pack(&args)?, &grid, stream)?;
            let f = device.load_cached(&fin)?;
            device.launch_packed(&f, &f.pack(&args)?, &fin_grid, stream)?;
            return Ok(());
        }
        let k = device.load_cached(&main)?;
        device.launch_packed(&k, &k.pack(&args)?, &grid, stream)?;
        Ok(())
    }

    /// The whole call through the runtime: resolves, allocates the missing outputs (and the
    /// partial results), launches on the default stream, and returns the outputs.
    pub fn call(
        &self,
        device: &Device,
        operands: &[Operand],
        axis: Option<&[i64]>,
        keepdims: bool,
    ) -> Result<Vec<Output>, Error> {
        let r = self.resolve(operands, axis, keepdims)?;
        let (arrays, buffers) = allocate(device, &r.missing, &r.out_dtypes, &r.out_shape)?;
        let launch = self.bind(&r, arrays)?;
        let scratch: DeviceBuffer =
            device.alloc_zeroed((launch.partials_len().max(1) * r.reduce_type.size()) as usize)?;
        let addr = device.address(&scratch);
        self.launch(device, &launch, Some(addr), &device.default_stream())?;
        device.synchronize()?;
        let mut buffers: Vec<Option<DeviceBuffer>> = buffers.into_iter().map(Some).collect();
        Ok(launch
            .outputs
            .into_iter()
            .enumerate()
            .map(|(k, array)| Output {
                array,
                buffer: r
                    .missing
                    .iter()
                    .position(|&m| m == k)
                    .and_then(|j| buffers[j].take()),
            })
            .collect())
    }
}
