"""CuPy's user-defined kernels with Python bodies: ``ElementwiseKernel`` and
``ReductionKernel`` (docs/semantics.md §20).

The crate does the work (``pydevice._native.Elementwise``/``Reduction``: type resolution,
broadcasting, the generated kernel, compiling, caching, launching). This module describes the
arguments, allocates the outputs with the inputs' framework and returns them:

- CuPy arrays in, CuPy arrays out (launched on CuPy's current stream);
- PyTorch CUDA tensors in, tensors out (on PyTorch's current stream);
- NumPy arrays in, NumPy arrays out: the kernel runs on the host, compiled through Cranelift
  (``run_host``, docs/semantics.md §20.8), on the arrays in place (any strides; a given
  NumPy output is filled in place); no GPU is needed. With the CPU back end selected
  (``PYDEVICE_BACKEND=cpu``, as the GPU tests select it without a GPU) the device kernel
  itself runs there instead (``launch_cpu``, docs/semantics.md §22.4);
- other arrays with ``__dlpack__`` or ``__cuda_array_interface__``: outputs are allocated
  with CuPy (which must be installed).
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from . import _core, _native
from ._core import _TORCH_DTYPES, _Unsupported, _describe, _dtype_name, _is_read_only, _stream_handle

__all__ = ["ElementwiseKernel", "ReductionKernel"]


class _Args:
    """The arguments of one call: their descriptions for the crate, the framework the outputs
    come from, the GPU and the stream, or whether the call runs on the host (NumPy arrays)."""

    __slots__ = ("descs", "framework", "ordinal", "keep", "torch_device", "on_host")

    def __init__(self, args: Sequence[Any], n_in: int, raw: frozenset = frozenset()):
        self.descs: List[Any] = []
        self.framework: Optional[str] = None
        self.ordinal = 0
        self.keep: List[Any] = []
        self.torch_device = None
        host_pending = []
        for i, a in enumerate(args):
            if a is None:
                if i < n_in:
                    raise TypeError(f"input {i} is None")
                self.descs.append(None)
                continue
            if isinstance(a, np.ndarray):
                host_pending.append((i, a))
                self.descs.append(None)
                self._framework("numpy")
                continue
            try:
                k, v = _describe(a)
            except _Unsupported as e:
                raise TypeError(f"argument {i}: {e}") from None
            tag = k[0]
            if tag == "i" or tag == "f" or tag == "b" or tag == "c":
                self.descs.append(("S", None, v))
            elif tag == "n":
                self.descs.append(("S", _dtype_name(k[1]), v))
            elif tag in ("A", "D") and i >= n_in and _is_read_only(k):
                raise ValueError(f"output {i - n_in} is read-only: assignment destination is read-only")
            elif tag == "A":
                self._framework("cupy" if type(a).__module__.startswith("cupy") else "other")
                self.ordinal = k[4] or 0
                self.descs.append(("A", _dtype_name(k[1]), v[0], tuple(v[1]), tuple(v[2])))
            elif tag == "T":
                self._framework("torch")
                self.ordinal = k[4] or 0
                self.torch_device = a.device
                self.descs.append(("A", _TORCH_DTYPES[k[1]], v[0], tuple(v[1]), tuple(v[2])))
            elif tag == "D":
                self._framework("other")
                self.ordinal = k[4] or 0
                self.descs.append(("A", k[1], v[0], tuple(v[1]), tuple(v[2])))
            else:
                raise TypeError(
                    f"argument {i}: {type(a).__module__}.{type(a).__qualname__} is not an array "
                    "or a number"
                )
        # NumPy arrays, or no arrays at all: the call runs on the host.
        self.on_host = self.framework in ("numpy", None)
        outputs = [a for i, a in host_pending if i >= n_in]
        for i, a in host_pending:
            # An input that overlaps an output (but is not the very same view) is read from
            # a copy, as NumPy buffers overlapping operands: every element reads the input as
            # it was before the call.
            if i < n_in and any(_overlaps(a, o, i in raw) for o in outputs):
                a = a.copy()
            # The call runs on the arrays themselves.
            if not a.dtype.isnative:
                raise TypeError(f"argument {i}: arrays of byte-swapped dtype {a.dtype} are not supported")
            if any(st % a.itemsize for st in a.strides):
                if i >= n_in:
                    raise TypeError(
                        f"output {i - n_in}: its strides {a.strides} are not multiples of its item size"
                    )
                a = np.ascontiguousarray(a)
            elif i >= n_in and not a.flags.writeable:
                raise ValueError(f"output {i - n_in} is read-only")
            self.keep.append(a)
            self.descs[i] = _host_desc(a)

    def _framework(self, f: str) -> None:
        if self.framework is None:
            self.framework = f
        elif self.framework != f and "numpy" in (f, self.framework):
            raise TypeError("NumPy arrays cannot be mixed with arrays in device memory in one call")

    def stream(self, stream) -> int:
        if stream is not None:
            return _stream_handle(stream)
        if self.framework == "cupy":
            import cupy

            return cupy.cuda.get_current_stream().ptr
        if self.framework == "torch":
            import torch

            return torch.cuda.current_stream(self.torch_device).cuda_stream
        return 0

    def empty(self, shape, dtype_name: str):
        """A new C-contiguous array of the call's framework, and its description."""
        shape = tuple(int(s) for s in shape)
        if self.framework == "torch":
            import torch

            t = torch.empty(shape, dtype=getattr(torch, dtype_name), device=self.torch_device)
            return t, ("A", dtype_name, t.data_ptr(), shape, _c_strides(shape))
        import cupy

        with cupy.cuda.Device(self.ordinal):
            a = cupy.empty(shape, dtype=dtype_name)
        return a, ("A", dtype_name, a.data.ptr, shape, _c_strides(shape))

    def outputs(self, shape, dtypes, missing):
        """New C-contiguous outputs of the call's framework for the `missing` output
        parameters (all of `shape`), and their descriptions."""
        made = [self.empty(shape, dtypes[m]) for m in missing]
        return [arr for arr, _ in made], tuple(d for _, d in made)

    def scratch(self, nbytes: int):
        if self.framework == "torch":
            import torch

            t = torch.empty((nbytes,), dtype=torch.uint8, device=self.torch_device)
            return t, t.data_ptr()
        import cupy

        with cupy.cuda.Device(self.ordinal):
            a = cupy.empty((nbytes,), dtype=np.uint8)
        return a, a.data.ptr

def _overlaps(a: np.ndarray, out: np.ndarray, raw: bool) -> bool:
    """Whether input ``a`` may read memory that output ``out`` writes, other than each
    element at its own position (the same view of a non-``raw`` input, which an elementwise
    call may update in place; a ``raw`` input is indexed anywhere)."""
    same_view = (
        not raw
        and a.ctypes.data == out.ctypes.data
        and a.shape == out.shape
        and a.strides == out.strides
        and a.dtype == out.dtype
    )
    return not same_view and np.may_share_memory(a, out)


def _host_desc(a: np.ndarray) -> tuple:
    """The description of a NumPy array in host memory: its own address, shape and element
    strides."""
    return ("A", _dtype_name(a.dtype), a.ctypes.data, tuple(a.shape), tuple(s // a.itemsize for s in a.strides))


def _host_outputs(a: "_Args", shape, dtypes, missing):
    """Zeroed NumPy outputs for a host call, and their descriptions."""
    allocated = [np.zeros(tuple(int(x) for x in shape), dtype=dtypes[m]) for m in missing]
    a.keep.extend(allocated)
    return allocated, tuple(_host_desc(x) for x in allocated)


def _c_strides(shape) -> tuple:
    out = []
    acc = 1
    for n in reversed(shape):
        out.append(acc)
        acc *= int(n)
    return tuple(reversed(out))


def _describe_only(args, n_in) -> list:
    """Descriptions of arguments for source/PTX inspection: NumPy arrays and
    ``(dtype, shape)`` or ``(dtype, shape, strides)`` tuples stand for device arrays."""
    descs = []
    for a in args:
        if a is None:
            descs.append(None)
        elif isinstance(a, np.ndarray):
            st = tuple(s // a.itemsize for s in a.strides)
            descs.append(("A", _dtype_name(a.dtype), 1 << 32, tuple(a.shape), st))
        elif isinstance(a, tuple) and len(a) in (2, 3) and isinstance(a[0], str):
            shape = tuple(a[1])
            st = tuple(a[2]) if len(a) == 3 else _c_strides(shape)
            descs.append(("A", a[0], 1 << 32, shape, st))
        elif isinstance(a, np.generic):
            descs.append(("S", _dtype_name(a.dtype), a.item()))
        else:
            descs.append(("S", None, a))
    return descs


def _result(outs: list, n_out: int):
    return outs[0] if n_out == 1 else tuple(outs)


class ElementwiseKernel(_native.KernelCall):
    """CuPy's ``ElementwiseKernel`` with a Python body::

        squared_diff = pydevice.ElementwiseKernel(
            "float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)", "squared_diff")
        z = squared_diff(x, y)            # x, y: CuPy arrays, PyTorch tensors or NumPy arrays

    Call it with the inputs, optionally followed by the outputs; ``size=`` when every array
    parameter is ``raw``; ``stream=`` to pick a stream (default: the framework's current one).

    ``__call__`` is the native base class's: a call signature launched before (CuPy arrays,
    Python numbers) takes the repeated-call fast path there; everything else comes to
    ``_call``, the general path.
    """

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel", **options):
        unknown = set(options) - {
            "reduce_dims", "no_return", "return_tuple", "options", "preamble", "loop_prep", "after_loop",
            "preamble_python",
        }
        if unknown:
            raise TypeError(f"unknown options: {', '.join(sorted(unknown))}")
        for o in ("preamble", "loop_prep", "after_loop"):
            if options.get(o):
                raise TypeError(f"`{o}=` holds CUDA C++, which pydevice does not compile; write it in the body")
        if not name.isidentifier():
            # CuPy's error (its kernel name becomes a C++ identifier; here a Python one).
            raise ValueError(f"Invalid kernel name: {name!r}")
        if not operation.strip():
            # CuPy compiles an empty operation as a kernel that does nothing (its tests of
            # `size=` use one): the body `pass`, outputs left as they are.
            operation = "pass"
        self._no_return = bool(options.get("no_return", False))
        self._return_tuple = bool(options.get("return_tuple", False))
        # `preamble_python`: Python device functions (`@device.func`) the body may call. The
        # mode tells the native fast path how the outputs are returned.
        mode = 2 if self._no_return else 1 if self._return_tuple else 0
        self._k = _native.Elementwise(
            in_params, out_params, operation, name, options.get("preamble_python") or "", mode
        )
        self.name = name
        self.nin = _count(in_params)
        self.nout = _count(out_params)
        self.nargs = self.nin + self.nout
        self._raw = _raw_inputs(in_params)
        self._raw_all = _raw_inputs(in_params + ("," + out_params if out_params.strip() else ""))
        self._set_native(self._k)

    def __repr__(self) -> str:
        return f"<pydevice.ElementwiseKernel {self.name}>"

    def _call(self, *args, size: Optional[int] = None, stream=None, block_size=None, **kwargs):
        """The general path of a call (the native ``__call__`` found no remembered signature)."""
        if kwargs:
            raise TypeError(f"unknown keyword arguments: {', '.join(sorted(kwargs))}")
        if block_size is not None and (
            not isinstance(block_size, (int, np.integer)) or isinstance(block_size, bool) or block_size <= 0
        ):
            # CuPy's `block_size=` (threads per block) is validated as CuPy does; pydevice
            # picks the block size itself (docs/semantics.md §20.2), so a valid one changes
            # only the speed CuPy would get, never the result.
            raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
        if len(args) not in (self.nin, self.nargs):
            raise TypeError(
                f"{self.name} takes {self.nin} input{'s' if self.nin != 1 else ''} and optionally "
                f"{self.nout} output{'s' if self.nout != 1 else ''}; {len(args)} arguments were given"
            )
        # CuPy's rule for `size=`: only when every array argument given is `raw`, and
        # required then (its messages, as ValueError).
        plain = any(i not in self._raw_all and _is_array_arg(a) for i, a in enumerate(args))
        if size is not None and plain:
            raise ValueError(
                "Specified 'size' can be used only if all of the ndarray are 'raw'. "
                "(A non-raw array decides the loop size itself.)"
            )
        if size is None and not plain and self._raw_all:
            raise ValueError(
                "Loop size is undecided. (Every array argument is `raw`: give `size=`, "
                "the number of elements to loop over.)"
            )
        a = _Args(args, self.nin, self._raw)
        call = self._k.resolve(tuple(a.descs), size)
        missing = call.missing
        dtypes = call.out_dtypes
        shape = call.shape
        if a.on_host:
            allocated, descs = _host_outputs(a, shape, dtypes, missing)
            if _core._BACKEND == "cpu":
                # PYDEVICE_BACKEND=cpu: the device kernel itself, on the CPU back end (§22.4).
                self._k.launch_cpu(call, descs)
            else:
                self._k.run_host(call, descs)
        else:
            allocated, descs = a.outputs(shape, dtypes, missing)
            h = a.stream(stream)
            # CuPy's framework: later calls of this signature take the native fast path.
            remember = (args, size) if a.framework == "cupy" else None
            self._k.launch(call, descs, a.ordinal, h, remember)
        if self._no_return:
            return None
        outs = []
        k = 0
        for j in range(self.nout):
            if j in missing:
                outs.append(allocated[k])
                k += 1
            else:
                given = args[self.nin + j]
                outs.append(given)
        if self._return_tuple:
            return tuple(outs)
        return _result(outs, self.nout)

    def _call_for(self, args, size):
        call = self._k.resolve(tuple(_describe_only(args, self.nin)), size)
        outs = tuple(("A", call.out_dtypes[m], 1 << 33, tuple(call.shape), _c_strides(call.shape)) for m in call.missing)
        return call, outs

    def source(self, *args, size: Optional[int] = None) -> str:
        """The generated ``cuda.device`` kernel for arguments like ``args`` (NumPy arrays,
        ``(dtype, shape[, strides])`` tuples, numbers); no GPU needed."""
        call, outs = self._call_for(args, size)
        return self._k.source(call, outs)

    def host_source(self, *args, size: Optional[int] = None) -> str:
        """The generated host function (what a call on NumPy arrays runs) for arguments
        like ``args``."""
        call, outs = self._call_for(args, size)
        return self._k.host_source(call, outs)

    def ptx(self, *args, size: Optional[int] = None) -> str:
        """The PTX of the generated kernel for arguments like ``args``; no GPU needed."""
        call, outs = self._call_for(args, size)
        return self._k.ptx(call, outs)


def _is_array_arg(a) -> bool:
    """Whether a kernel argument is an array (NumPy, CUDA array interface or DLPack), not a
    scalar."""
    if isinstance(a, np.generic):
        return False
    return isinstance(a, np.ndarray) or hasattr(a, "__cuda_array_interface__") or hasattr(a, "__dlpack__")


def _count(params: str) -> int:
    return len([p for p in params.split(",") if p.strip()])


def _raw_inputs(params: str) -> frozenset:
    """The indices of the ``raw`` parameters of a parameter list."""
    items = [p.split() for p in params.split(",") if p.strip()]
    return frozenset(i for i, p in enumerate(items) if p and p[0] == "raw")


def _axis(axis, ndim_hint=None):
    if axis is None:
        return None
    if isinstance(axis, (int, np.integer)):
        return [int(axis)]
    return [int(x) for x in axis]


class ReductionKernel(_native.KernelCall):
    """CuPy's ``ReductionKernel`` with Python expressions::

        l2norm = pydevice.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
        l2norm(x, axis=1)

    ``axis`` is an int, a tuple or None (every axis); ``keepdims`` keeps reduced axes as 1.
    ``__call__`` is the native base class's (see ``ElementwiseKernel``); ``_call`` is the
    general path.
    """

    def __init__(
        self,
        in_params: str,
        out_params: str,
        map_expr: str,
        reduce_expr: str,
        post_map_expr: str,
        identity,
        name: str = "reduce_kernel",
        reduce_type: Optional[str] = None,
        **options,
    ):
        if not name.isidentifier():
            raise ValueError(f"Invalid kernel name: {name!r}")  # CuPy's error
        unknown = set(options) - {"reduce_dims", "options", "preamble"}
        if unknown:
            raise TypeError(f"unknown options: {', '.join(sorted(unknown))}")
        if options.get("preamble"):
            raise TypeError("`preamble=` holds CUDA C++, which pydevice does not compile")
        if identity is None:
            raise TypeError(f"{name}: identity=None is not supported; give the reduction's identity value")
        self._k = _native.Reduction(
            in_params, out_params, map_expr, reduce_expr, post_map_expr, str(identity), name, reduce_type
        )
        self.name = name
        self.nin = _count(in_params)
        self.nout = _count(out_params)
        self.nargs = self.nin + self.nout
        self._set_native(self._k)

    def __repr__(self) -> str:
        return f"<pydevice.ReductionKernel {self.name}>"

    @property
    def _cached_codes(self) -> dict:
        """The generated source of each specialization compiled so far, by a description of
        it (its argument types, where it ran, how the reduction is spread): one entry per
        specialization however often it ran, as CuPy's ``_cached_codes`` holds its generated
        CUDA C++. A snapshot; pydevice's kernel is the ``cuda.device`` source shown here."""
        return dict(self._k.cached_codes())

    def _call(self, *args, axis=None, keepdims: bool = False, stream=None, out=None, **kwargs):
        """The general path of a call (the native ``__call__`` found no remembered signature)."""
        if kwargs:
            raise TypeError(f"unknown keyword arguments: {', '.join(sorted(kwargs))}")
        if out is not None:
            args = args + (out,)
        if len(args) not in (self.nin, self.nargs):
            raise TypeError(
                f"{self.name} takes {self.nin} input{'s' if self.nin != 1 else ''} and optionally "
                f"{self.nout} output{'s' if self.nout != 1 else ''}; {len(args)} arguments were given"
            )
        # Every input counts as `raw` (read at other positions than the output's).
        a = _Args(args, self.nin, frozenset(range(self.nin)))
        call = self._k.resolve(tuple(a.descs), _axis(axis), bool(keepdims))
        missing = call.missing
        dtypes = call.out_dtypes
        shape = call.shape
        if a.on_host:
            allocated, descs = _host_outputs(a, shape, dtypes, missing)
            if _core._BACKEND == "cpu":
                # PYDEVICE_BACKEND=cpu: the device kernel itself, on the CPU back end (§22.4).
                self._k.launch_cpu(call, descs)
            else:
                self._k.run_host(call, descs)
        else:
            allocated, descs = a.outputs(shape, dtypes, missing)
            h = a.stream(stream)
            keep, ptr = a.scratch(call.partials_bytes)
            remember = (args, axis, bool(keepdims)) if a.framework == "cupy" else None
            self._k.launch(call, descs, ptr, a.ordinal, h, remember)
            del keep
        outs = []
        k = 0
        for j in range(self.nout):
            if j in missing:
                outs.append(allocated[k])
                k += 1
            else:
                outs.append(args[self.nin + j])
        return _result(outs, self.nout)

    def _call_for(self, args, axis, keepdims):
        call = self._k.resolve(tuple(_describe_only(args, self.nin)), _axis(axis), keepdims)
        outs = tuple(("A", call.out_dtypes[m], 1 << 33, tuple(call.shape), _c_strides(call.shape)) for m in call.missing)
        return call, outs

    def source(self, *args, axis=None, keepdims: bool = False) -> str:
        """The generated kernel(s) for arguments like ``args``; no GPU needed."""
        call, outs = self._call_for(args, axis, keepdims)
        return self._k.source(call, outs)

    def host_source(self, *args, axis=None, keepdims: bool = False) -> str:
        """The generated host function (what a call on NumPy arrays runs)."""
        call, outs = self._call_for(args, axis, keepdims)
        return self._k.host_source(call, outs)

    def strategy(self, *args, axis=None, keepdims: bool = False) -> str:
        """How the reduction is spread: ``Thread``, ``Warp``, ``Block``, ``Grid`` or ``Columns``
        (docs/semantics.md §20.4); no GPU needed."""
        call, outs = self._call_for(args, axis, keepdims)
        return self._k.strategy(call, outs)

    def ptx(self, *args, axis=None, keepdims: bool = False) -> str:
        """The PTX of the generated kernel; no GPU needed."""
        call, outs = self._call_for(args, axis, keepdims)
        return self._k.ptx(call, outs)
