"""Export a compiled kernel as an Apache TVM-FFI function (``pip install apache-tvm-ffi``).

``export(kernel, signature, path)`` compiles a ``@kernel`` for one signature to PTX (no GPU
needed), writes a small C++ library that embeds the PTX and exports one TVM-FFI function
named after the kernel, and builds it with the system C++ compiler against the headers and
``libtvm_ffi`` of the installed ``tvm_ffi`` package. The function takes the kernel's
arguments: a DLPack tensor (``DLTensor*``) per array parameter, a number per scalar one.
It checks them (CUDA memory on one GPU, dtype, rank, the contiguity the type promises),
launches on the stream TVM-FFI's environment names for that GPU and returns; the library
links neither pydevice nor the CUDA runtime (the driver is opened at the first call), so it
runs wherever ``libtvm_ffi`` does:

- from Python with PyTorch tensors (``tvm_ffi.load_module(path).vec_add(a, b, c)``): TVM-FFI
  takes them through the DLPack C exchange API (``torch.Tensor.__dlpack_c_exchange_api__``)
  and launches on PyTorch's current stream;
- from JAX through ``jax_tvm_ffi.register_ffi_target`` and ``jax.ffi.ffi_call`` (XLA's stream);
- from C++ through ``tvm::ffi::Module::LoadFromFile(path)->GetFunction(name)``.

The launch shape is fixed at export: ``block`` threads per block (an int or a tuple) and
``grid`` blocks, or, when ``grid`` is None, enough 1-D blocks to cover the elements of array
parameter ``cover`` (by default the first array parameter).

``spec`` and ``source`` build the description and the C++ text without a compiler; ``build``
compiles; ``load`` loads a built library with ``tvm_ffi``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
from typing import Optional, Sequence, Union

__all__ = ["ExportSpec", "Param", "export", "spec", "source", "build", "load"]

# DLPack type codes (dlpack.h): kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBool 6.
_DTYPES = {
    "int8": ("int", 0, 8), "int16": ("int", 0, 16), "int32": ("int", 0, 32), "int64": ("int", 0, 64),
    "uint8": ("uint", 1, 8), "uint16": ("uint", 1, 16), "uint32": ("uint", 1, 32), "uint64": ("uint", 1, 64),
    "float32": ("float", 2, 32), "float64": ("float", 2, 64), "bool": ("bool", 6, 8),
}
_KINDS = {"int": "kInt", "uint": "kUInt", "float": "kFloat", "bool": "kBool"}
_CXX_ARG = {"int": "int64_t", "uint": "int64_t", "float": "double", "bool": "bool"}
_ARRAY = re.compile(r"^(\w+)\[(.*)\]$")


class ExportError(ValueError):
    """A kernel or signature that cannot be exported as a TVM-FFI function (says why)."""


@dataclasses.dataclass(frozen=True)
class Param:
    """One kernel parameter as the exported function takes it."""

    name: str
    type_name: str  # pydevice's spelling: float32[::1], int32
    kind: str  # "array", "int", "uint", "float", "bool"
    dtype: str  # the element type of an array, the type of a scalar
    ndim: int  # 0 for a scalar
    layout: str  # "C", "F" or "A" for an array ("C" for a scalar)
    offset: int  # in the launch buffer
    size: int


@dataclasses.dataclass(frozen=True)
class ExportSpec:
    """Everything the generated library holds: the function's name, the kernel's PTX symbol
    and text, its parameters and the launch shape (``grid`` None: cover ``cover``)."""

    name: str
    symbol: str
    ptx: str
    arch: str
    params: tuple
    block: tuple
    grid: Optional[tuple]
    cover: int
    shared: int

    @property
    def args_size(self) -> int:
        end = max((p.offset + p.size for p in self.params), default=0)
        return (end + 7) // 8 * 8

    def metadata(self) -> dict:
        """What the exported function takes, as JSON-ready data (also embedded in the
        library as its documentation string)."""
        return {
            "name": self.name,
            "symbol": self.symbol,
            "arch": self.arch,
            "params": [
                {"name": p.name, "type": p.type_name, "kind": p.kind, "dtype": p.dtype, "ndim": p.ndim}
                for p in self.params
            ],
            "block": list(self.block),
            "grid": None if self.grid is None else list(self.grid),
            "cover": self.params[self.cover].name if self.grid is None else None,
        }


def _dim3(v, what: str) -> tuple:
    t = (v,) if isinstance(v, int) else tuple(v)
    if not 1 <= len(t) <= 3 or not all(isinstance(x, int) and x > 0 for x in t):
        raise ExportError(f"{what} must be a positive int or a tuple of 1 to 3 positive ints, given {v!r}")
    return t + (1,) * (3 - len(t))


def _param(p: dict) -> Param:
    name, ty = p["name"], p["type"]
    m = _ARRAY.match(ty)
    if m:
        dtype, dims = m.group(1), [d.strip() for d in m.group(2).split(",")]
        if dtype not in _DTYPES or dtype == "bool":
            raise ExportError(f"parameter `{name}`: arrays of {dtype} cannot be exported (supported: "
                              f"{', '.join(t for t in _DTYPES if t != 'bool')})")
        contiguous = [i for i, d in enumerate(dims) if d == "::1"]
        layout = "A"
        if contiguous == [len(dims) - 1]:
            layout = "C"
        elif contiguous == [0]:
            layout = "F"
        if p["size"] != 8 + 16 * len(dims):
            raise ExportError(f"parameter `{name}` ({ty}): unexpected descriptor size {p['size']}")
        return Param(name, ty, "array", dtype, len(dims), layout, p["offset"], p["size"])
    if ty not in _DTYPES:
        raise ExportError(f"parameter `{name}` has type {ty}, which an exported function cannot take "
                          "(arrays and int, uint, float32/64 and bool scalars can)")
    kind, _, bits = _DTYPES[ty]
    return Param(name, ty, kind, ty, 0, "C", p["offset"], bits // 8)


def spec(kernel, signature, *, name: Optional[str] = None, block: Union[int, Sequence[int]] = 256,
         grid: Union[None, int, Sequence[int]] = None, cover: Optional[str] = None,
         arch: str = "sm_90", opt: int = 3, shared: int = 0) -> ExportSpec:
    """Compiles ``kernel`` (a ``@kernel``) for ``signature`` (numba notation, such as
    ``"float32[::1], float32[::1], float32[::1], float32"``, or a list of type names) to PTX
    for ``arch`` and describes the function to export. No GPU or compiler is needed."""
    types = kernel._arg_types((), signature)
    compiled = kernel._mod().compile(kernel.__name__, types, arch, opt)
    raw = json.loads(compiled.abi_json)
    if raw.get("seed"):
        raise ExportError(f"{kernel.__name__} draws random numbers (cuda.device.random), which an "
                          "exported function does not seed yet")
    if raw.get("cooperative"):
        raise ExportError(f"{kernel.__name__} synchronizes the grid, which needs a cooperative launch "
                          "that an exported function does not make")
    if list(compiled.cuda):
        raise ExportError(f"{kernel.__name__} links CUDA C++ (jit.thrust), which an exported function "
                          "does not carry")
    abi = kernel.abi(types=types)
    params, offset = [], 0
    for p in abi["params"]:
        offset = (offset + 7) // 8 * 8
        params.append(_param(dict(p, offset=offset)))
        offset += p["size"]
    arrays = [i for i, p in enumerate(params) if p.kind == "array"]
    if grid is None:
        if cover is None:
            if not arrays:
                raise ExportError(f"{kernel.__name__} has no array parameter to cover: give grid=")
            c = arrays[0]
        else:
            names = [p.name for p in params]
            if cover not in names or params[names.index(cover)].kind != "array":
                raise ExportError(f"cover={cover!r} is not an array parameter of {kernel.__name__}")
            c = names.index(cover)
    else:
        c = 0
    fname = name or kernel.__name__
    if not re.fullmatch(r"[A-Za-z_]\w*", fname):
        raise ExportError(f"name {fname!r} is not a C identifier")
    return ExportSpec(fname, raw["symbol"], compiled.ptx, arch, tuple(params), _dim3(block, "block"),
                      None if grid is None else _dim3(grid, "grid"), c, int(shared))


def _c_string(s: str) -> str:
    """A C++ raw string literal holding ``s`` (PTX has no parenthesis-quote sequence)."""
    delim = "ptx"
    while f"){delim}\"" in s:
        delim += "_"
    return f'R"{delim}({s}){delim}"'


def source(s: ExportSpec) -> str:
    """The C++ source of the library exporting ``s`` (includes ``tvm_ffi_shim.h``)."""
    rows = []
    for p in s.params:
        kind = "kArray" if p.kind == "array" else _KINDS[p.kind]
        _, code, bits = _DTYPES[p.dtype]
        rows.append(f'    {{"{p.name}", "{p.type_name}", Kind::{kind}, {code}, {bits}, {p.ndim}, '
                    f"'{p.layout}', {p.offset}, {p.size}}},")
    args = ", ".join(
        f"DLTensor* {p.name}" if p.kind == "array" else f"{_CXX_ARG[p.kind]} {p.name}" for p in s.params
    )
    names = ", ".join(p.name for p in s.params)
    grid = (0, 1, 1) if s.grid is None else s.grid
    doc = json.dumps(s.metadata())
    return f"""// Generated by pydevice.tvm_ffi: kernel `{s.name}` ({s.symbol}, {s.arch}) as a TVM-FFI function.
#include "tvm_ffi_shim.h"

namespace {{
using pydevice_tvm_ffi::Kind;

const char kPtx[] = {_c_string(s.ptx)};

const char kMetadata[] = {_c_string(doc)};

const pydevice_tvm_ffi::ParamSpec kParams[] = {{
{chr(10).join(rows)}
}};

const pydevice_tvm_ffi::KernelSpec kSpec = {{
    "{s.name}", "{s.symbol}", kPtx, kParams, {len(s.params)}, {s.args_size},
    {{{s.block[0]}, {s.block[1]}, {s.block[2]}}}, {{{grid[0]}, {grid[1]}, {grid[2]}}}, {s.cover}, {s.shared}}};

void Call({args}) {{ pydevice_tvm_ffi::Launch(kSpec, {{{names}}}); }}

tvm::ffi::String Metadata() {{ return tvm::ffi::String(kMetadata); }}
}}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC({s.name}, Call);
TVM_FFI_DLL_EXPORT_TYPED_FUNC_DOC({s.name}, {_c_string(doc)});
// The export's description as JSON (pydevice.tvm_ffi.ExportSpec.metadata()).
TVM_FFI_DLL_EXPORT_TYPED_FUNC(pydevice_metadata_{s.name}, Metadata);
"""


def _tvm_ffi_paths():
    try:
        import tvm_ffi.libinfo as info
    except ImportError as e:
        raise ImportError("pydevice.tvm_ffi needs the apache-tvm-ffi package (pip install apache-tvm-ffi)") from e
    return info.find_include_path(), info.find_dlpack_include_path(), info.find_libtvm_ffi()


def build(s: ExportSpec, path: str, *, cxx: Optional[str] = None, keep_source: bool = True) -> str:
    """Writes ``source(s)`` next to ``path`` and compiles it into the shared library ``path``
    with ``cxx`` (``$CXX``, else ``c++``/``g++``). Returns ``path``."""
    inc, dlpack_inc, lib = _tvm_ffi_paths()
    cxx = cxx or os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not cxx:
        raise RuntimeError("pydevice.tvm_ffi.build: no C++ compiler (set CXX)")
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    src = os.path.splitext(path)[0] + ".cc"
    with open(src, "w") as f:
        f.write(source(s))
    here = os.path.dirname(os.path.abspath(__file__))
    libdir = os.path.dirname(lib)
    cmd = [cxx, "-std=c++17", "-O2", "-shared", "-fPIC", "-DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1",
           f"-I{here}", f"-I{inc}", f"-I{dlpack_inc}", src, "-o", path,
           f"-L{libdir}", "-ltvm_ffi", f"-Wl,-rpath,{libdir}", "-ldl"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"pydevice.tvm_ffi.build: {' '.join(cmd)} failed:\n{r.stderr}")
    if not keep_source:
        os.unlink(src)
    return path


def load(path: str):
    """The ``tvm_ffi.Module`` of a built library (its function: ``module.<name>``)."""
    import tvm_ffi

    return tvm_ffi.load_module(path)


def export(kernel, signature, path: Optional[str] = None, *, cxx: Optional[str] = None, **options):
    """Compiles, generates and builds in one step (``spec``'s options: ``name``, ``block``,
    ``grid``, ``cover``, ``arch``, ``opt``, ``shared``); returns the loaded function.
    Without ``path`` the library goes to ``$PYDEVICE_CACHE_DIR/tvm_ffi`` (else
    ``~/.cache/pydevice/tvm_ffi``) under a name hashed from its source."""
    s = spec(kernel, signature, **options)
    if path is None:
        digest = hashlib.sha256(source(s).encode()).hexdigest()[:16]
        root = os.environ.get("PYDEVICE_CACHE_DIR") or os.path.expanduser("~/.cache/pydevice")
        path = os.path.join(root, "tvm_ffi", f"{s.name}-{digest}.so")
        if not os.path.exists(path):
            build(s, path, cxx=cxx)
    else:
        build(s, path, cxx=cxx)
    return getattr(load(path), s.name)
