"""numba-cuda's own test suite, replayed through `pydevice run` (issue #8's acceptance measure).

Phase 1 runs a chosen part of numba-cuda's test suite (the modules in MODULES, each in its own
process, several at once) with real numba-cuda. A hook on kernel launch (`CUDADispatcher.call`,
which every `kernel[grid, block](...)` and `forall` launch goes through; the simulator's
`FakeCUDAKernel.__call__` under NUMBA_ENABLE_CUDASIM=1) captures, for the first launch of each
distinct (kernel, argument types):
  - the kernel's source (inspect.getsource of py_func, dedented, its decorators replaced by a
    plain `@cuda.jit`), the @cuda.jit device functions it calls, the module-level (or closure)
    numbers it reads and the modules, numba types and functions it names, found from the
    LOAD_GLOBAL/LOAD_DEREF names of its code, recursively;
  - the launch configuration and the arguments copied to the host before the launch (device
    arrays -> NumPy; scalars with the numba type the launched overload gave them);
  - every array argument after numba's launch (numba's outputs).
Phase 2 runs `pydevice run kernel.py --entry NAME --grid --block --shared --arg ... --out ...` for
each captured kernel (several at once, each with a timeout) and compares every array argument
with numba's: integers and bools exactly, floats within TOLERANCE (NaNs equal each other).
Each kernel is one of:
  match        every output equal (bit-exact or within tolerance; both are counted)
  mismatch     pydevice ran it, some output differs
  diagnostic   exit status 1 with a rustc-style `error[E....]` message (its first line is kept)
  run error    exit status 2: a usage or run-time error pydevice reports as `error: ...`
  crash        anything else: a panic, a signal, a timeout
  uncapturable the hook could not express the launch for `pydevice run` (the reason is kept)
The rate is matches / kernels launched (every class above counted in the denominator).
--compile-only (no GPU: with the simulator) replaces `run` by `pydevice compile --sig` and
reports diagnostics only.

What the capture also expresses (each otherwise an "uncapturable" launch): kernels built by
`exec(text)` (their text is registered with linecache), modules made at run time
(`mymod.add` -> a global `mymod__add`), recursive device functions bound to another name and
their explicit text signatures (`@cuda.jit("i8(i8)", device=True)`), members of enums with
integer values (`Color.red` -> its number), and tuples holding arrays (the kernel becomes a
device function called by a kernel `NAME__launch` that takes the tuple's items one by one).

The GPU command (one device call; bundle first with `bash scripts/device_bundle.sh`, then carry
[".carry"]; numba-cuda must be installed on the GPU machine: its wheel ships numba/cuda/tests,
else the test files are looked for under .carry/numba_tests/tests, or $NUMBA_SUITE_TESTS/tests):
  python3 scripts/numba_suite.py .carry/pydevice-*.whl.xz --jobs 12 --budget 540 --keep $OUT/numba_cases.tar.gz
PYDEVICE may be the bundle's wheel (.whl.xz, which carries the CLI: scripts/carry_cli.py), an
xz-compressed CLI binary (unpacked to a temporary file) or a plain
executable. Other options: [--report FILE.md] [--json FILE.json] [--modules a,b] [--cases DIR].
Reports go to $OUT (or the current folder): numba_suite.md and numba_suite.json. About 4
minutes on the H100 with --jobs 12.

Without a GPU (numba-cuda installed in a private folder, no pydevice run): the simulator and
--compile-only give the capture and the diagnostics part:
  NUMBA_ENABLE_CUDASIM=1 PYTHONPATH=/tmp/site-numba python3 scripts/numba_suite.py \
      target/debug/pydevice --compile-only --jobs 3 --budget 1200 --module-timeout 300

On pydevice's CPU back end (issue 33): --cpu replays each kernel with `pydevice run --cpu`
(no GPU needed), and --bench N times N more launches of each. Under NUMBA_ENABLE_CUDASIM=1
the references and numba's times come from the simulator, so the report's timing section
compares the CPU back end with the simulator on the same kernels:
  NUMBA_ENABLE_CUDASIM=1 PYTHONPATH=/tmp/site-numba python3 scripts/numba_suite.py \
      target/release/pydevice --cpu --bench 5 --jobs 2 --budget 2300 --module-timeout 400
--replay-only --cases DIR replays a capture kept in DIR again (phase 2 only).
"""
import argparse
import ast
import collections
import concurrent.futures as futures
import contextlib
import dis
import enum
import importlib
import importlib.util
import inspect
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import traceback
import types as pytypes
import unittest
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CARRIED_TESTS = Path(os.environ.get("NUMBA_SUITE_TESTS", ROOT / ".carry" / "numba_tests"))

# The part of the suite replayed: numba/cuda/tests/cudapy modules whose tests launch kernels,
# and the documentation examples. Left out (and why): test_caching, test_debuginfo*,
# test_lineinfo, test_inspect, test_compiler, test_analysis, test_ir*, test_optimization,
# test_fastmath, test_warning, test_errors, test_debug, test_typeinfer (they inspect compiled
# code or compile without launching); test_ipc, test_multiprocessing, test_multithreads,
# test_multigpu (processes, threads, several GPUs); test_gufunc*, test_vectorize*, test_ufuncs
# (numba generates those kernels: there is no source to replay); test_extending*, test_overload,
# test_cffi, test_print, test_exception, test_userexc (numba extension APIs, FFI, printing and
# exceptions); test_sm*, test_cooperative_groups (cooperative launches). None of the kept
# modules takes more than a minute on the H100 (12 run at once, about 70 s in all).
MODULES = [
    "cudapy.test_alignment", "cudapy.test_array", "cudapy.test_array_alignment",
    "cudapy.test_array_args", "cudapy.test_array_methods", "cudapy.test_array_reductions",
    "cudapy.test_atomics", "cudapy.test_bfloat16", "cudapy.test_blackscholes",
    "cudapy.test_boolean", "cudapy.test_byteflow", "cudapy.test_cache_hints",
    "cudapy.test_casting", "cudapy.test_complex", "cudapy.test_complex_kernel",
    "cudapy.test_const_string", "cudapy.test_constmem", "cudapy.test_copy_propagate",
    "cudapy.test_cuda_array_interface", "cudapy.test_cuda_jit_no_types", "cudapy.test_datetime",
    "cudapy.test_device_array_capture", "cudapy.test_device_func", "cudapy.test_dispatcher",
    "cudapy.test_enums", "cudapy.test_flow_control", "cudapy.test_forall", "cudapy.test_freevar",
    "cudapy.test_frexp_ldexp", "cudapy.test_globals", "cudapy.test_idiv", "cudapy.test_inline",
    "cudapy.test_intrinsics", "cudapy.test_iterators", "cudapy.test_lang", "cudapy.test_laplace",
    "cudapy.test_libdevice", "cudapy.test_localmem", "cudapy.test_mandel", "cudapy.test_math",
    "cudapy.test_matmul", "cudapy.test_minmax", "cudapy.test_montecarlo", "cudapy.test_nondet",
    "cudapy.test_operator", "cudapy.test_powi", "cudapy.test_py2_div_issue",
    "cudapy.test_random", "cudapy.test_record_dtype", "cudapy.test_recursion",
    "cudapy.test_reduction", "cudapy.test_retrieve_autoconverted_arrays",
    "cudapy.test_slicing", "cudapy.test_ssa", "cudapy.test_stream_api", "cudapy.test_sync",
    "cudapy.test_transpose", "cudapy.test_typeconv", "cudapy.test_vector_type",
    "cudapy.test_warp_ops",
    "doc_examples.test_globals", "doc_examples.test_laplace", "doc_examples.test_matmul",
    "doc_examples.test_montecarlo", "doc_examples.test_random", "doc_examples.test_reduction",
    "doc_examples.test_sessionize", "doc_examples.test_vecadd", "doc_examples.test_cpu_gpu_compat",
]

# Float outputs: |pydevice - numba| <= atol + rtol * |numba|, NaNs equal. float32 and float16
# allow a few ulps for the order of atomic additions and for fast-math / libdevice differences.
TOLERANCE = {"float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2), "float32": (1e-5, 1e-6),
             "float64": (1e-9, 1e-12)}
MAX_ARG_BYTES = 256 << 20


# ---------------------------------------------------------------- phase 1: capture (worker)

class Uncapturable(Exception):
    """The launch cannot be written as a `pydevice run` command; the message says why."""


def numba_type_name(t):
    s = str(t)
    return {"bool": "bool", "boolean": "bool"}.get(s, s)


def snapshot(value, ty, simulator):
    """The host copy of one kernel argument: ('array', ndarray) or ('scalar', dtype, text)."""
    from numba import cuda
    from numba.cuda.args import ArgHint
    if isinstance(value, ArgHint):
        value = value.value
    if isinstance(value, enum.Enum):
        # a member of an enum: the number the kernel's source reads for it (see
        # `enum_member_number`), an int64 as numba's Enum<int64>/IntEnum<int64> types hold
        return ("scalar", "int64", str(enum_member_number(type(value), value)))
    if isinstance(value, (np.datetime64, np.timedelta64)):
        # numba's NPDatetime/NPTimedelta scalars are int64 counts of their unit
        return ("scalar", "int64", str(int(datetime_as_int64(np.asarray(value), "scalar"))))
    if isinstance(value, (bool, np.bool_)):
        return ("scalar", "bool", "true" if value else "false")
    if isinstance(value, (complex, np.complexfloating)):
        name = numba_type_name(ty)
        if name not in ("complex64", "complex128"):
            raise Uncapturable(f"complex scalar argument of numba type {name}")
        z = complex(value)
        return ("scalar", name, f"{z.real!r},{z.imag!r}")
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        # a namedtuple of numbers: one record by value with its field names (`p.x` works on
        # a record; the C layout of a struct of numbers is that of the tuple)
        items = getattr(ty, "types", None)
        names = {"bool": "bool", "boolean": "bool"}
        if items is None or len(items) != len(value) or not all(
                isinstance(v, (int, float, np.integer, np.floating, bool, np.bool_)) for v in value):
            raise Uncapturable(f"namedtuple argument of numba type {ty}")
        dt = np.dtype([(f, names.get(str(t), str(t))) for f, t in zip(value._fields, items)], align=True)
        return ("record", np.array(tuple(value), dtype=dt))
    if isinstance(value, tuple):
        return ("scalar", "tuple", tuple_text(value, ty))
    if isinstance(value, (int, float, np.integer, np.floating)):
        name = numba_type_name(ty)
        if name not in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                        "float16", "float32", "float64"):
            raise Uncapturable(f"scalar argument of numba type {name}")
        text = repr(float(value)) if "float" in name else str(int(value))
        return ("scalar", name, text)
    if isinstance(value, np.void):
        # one record, passed by value: a zero-dimensional structured .npy
        return ("record", np.array(value, dtype=value.dtype).view(np.ndarray))
    if isinstance(value, np.ndarray):
        arr = value.copy()
    elif hasattr(value, "copy_to_host"):
        arr = value.copy_to_host()
    elif hasattr(value, "__cuda_array_interface__") and not simulator:
        arr = cuda.as_cuda_array(value).copy_to_host()
    else:
        raise Uncapturable(f"argument of Python type {type(value).__name__}")
    if not isinstance(arr, np.ndarray):
        raise Uncapturable(f"argument copied to host as {type(arr).__name__}")
    if arr.dtype.names is not None:
        # `pydevice run` reads structured .npy files (align=True layouts); a plain ndarray view
        # of a recarray saves the same bytes and descr.
        arr = arr.view(np.ndarray)
        if arr.dtype.type is not np.void:
            arr = arr.view(np.dtype((np.void, arr.dtype)))
    if arr.dtype.kind in "mM":
        arr = datetime_as_int64(arr, "array")
    # NumPy's text dtypes (`S12`, `<U12`) are read by `pydevice run` as arrays of strings
    # (docs/semantics.md §5.16.2); a big-endian `>U12` is not.
    if arr.dtype.kind in "mMO" or (arr.dtype.kind == "U" and arr.dtype.byteorder == ">") \
            or (arr.dtype.kind == "V" and arr.dtype.names is None):
        raise Uncapturable(f"array of dtype {arr.dtype} (datetime, object or bytes)")
    if arr.nbytes > MAX_ARG_BYTES:
        raise Uncapturable("arguments too large to copy")
    return ("array", np.ascontiguousarray(arr) if not arr.flags.f_contiguous else arr)


DATETIME_UNITS = threading.local()


def datetime_as_int64(arr, what):
    """A datetime64/timedelta64 array (or 0-d scalar) as the int64 counts numba computes on.

    numba lowers datetime64 and timedelta64 of one unit to int64 arithmetic (subtraction of
    two dates is a timedelta of the same unit, comparisons compare the counts), except that
    NaT (the int64 minimum) propagates through arithmetic and compares unequal. So a launch
    is captured as int64 only when its datetime arguments share one unit and hold no NaT;
    anything else (mixed units, which numba rescales, or NaT) stays uncapturable."""
    unit = np.datetime_data(arr.dtype)
    seen = getattr(DATETIME_UNITS, "unit", None)
    if seen is not None and seen != unit:
        raise Uncapturable(f"datetime arguments of different units ({seen[0]} and {unit[0]})")
    DATETIME_UNITS.unit = unit
    ints = arr.view(np.int64)
    if np.any(ints == np.iinfo(np.int64).min):
        raise Uncapturable(f"datetime {what} holding NaT")
    return ints


def enum_member_number(cls, member):
    """The number a member of enum `cls` is written as in captured code: its value when
    every member's value is an integer (numba's Enum<int64>/IntEnum<int64>), else its
    position among the members (then only ==, !=, `is` and `is not` keep their meaning, as
    distinct members get distinct numbers; any other use fails to compile)."""
    members = list(cls.__members__.values())
    if all(isinstance(m.value, int) and not isinstance(m.value, bool) for m in members):
        return int(member.value)
    return list(dict.fromkeys(members)).index(member)


def tuple_text(value, ty):
    """A tuple argument as `pydevice run` takes it: `(int64:1, (float64:2.5, bool:true))`."""
    items_ty = getattr(ty, "types", None)
    if items_ty is None or len(items_ty) != len(value):
        raise Uncapturable(f"tuple argument of numba type {ty}")
    parts = []
    for v, t in zip(value, items_ty):
        if isinstance(v, tuple):
            parts.append(tuple_text(v, t))
            continue
        if isinstance(v, (bool, np.bool_)):
            parts.append("bool:" + ("true" if v else "false"))
            continue
        name = numba_type_name(t)
        if isinstance(v, (complex, np.complexfloating)) and name in ("complex64", "complex128"):
            parts.append(f"{name}:({complex(v).real!r},{complex(v).imag!r})")
        elif isinstance(v, (int, float, np.integer, np.floating)) and name in (
                "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64"):
            parts.append(f"{name}:" + (repr(float(v)) if "float" in name else str(int(v))))
        else:
            raise Uncapturable(f"tuple argument holding {type(v).__name__} ({t})")
    return "(" + ", ".join(parts) + (",)" if len(parts) == 1 else ")")


def record_sig(dt):
    """numba's `Record(...)` notation of an aligned structured dtype of numbers (for --sig)."""
    fields = ",".join(f"{n}[type={dt.fields[n][0].name};offset={dt.fields[n][1]}]" for n in dt.names)
    return f"Record({fields};{dt.itemsize};True)"


def tuple_sig(text):
    """The --sig spelling of a tuple argument's text: `(int64:1, (float64:2.5,))` -> types."""
    return re.sub(r"([a-z0-9]+):(\([^()]*\)|[^,()]+)", r"\1", text)


def _code_names(code):
    """Global and free names a code object (and the code nested in it) loads."""
    names = []
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLOSURE",
                          "LOAD_FROM_DICT_OR_DEREF", "LOAD_FROM_DICT_OR_GLOBALS"):
            if isinstance(ins.argval, str) and ins.argval not in names:
                names.append(ins.argval)
    for c in code.co_consts:
        if isinstance(c, pytypes.CodeType):
            names += [n for n in _code_names(c) if n not in names]
    return names


def _lambda_source(fn, decorator):
    """A lambda (`cuda.reduce(lambda a, b: a + b)`, which numba compiles as a device function)
    written as `def <lambda>(a, b): return a + b`; the caller renames it to the name it is
    bound to. The lambda is found in its source line by its parameters; if that is not one
    lambda, it stays uncapturable."""
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError) as e:
        raise Uncapturable(f"source of a lambda unavailable ({type(e).__name__})")
    code = fn.__code__
    params = list(code.co_varnames[:code.co_argcount])
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
             and [a.arg for a in n.args.args] == params and not n.args.vararg
             and not n.args.kwarg and not n.args.kwonlyargs and not n.args.defaults]
    if len(found) != 1:
        raise Uncapturable("`<lambda>` is not a plain def (a lambda or generated code)")
    body = ast.unparse(found[0].body)
    return f"{decorator}\ndef <lambda>({', '.join(params)}):\n    return {body}\n"


def _function_source(fn, decorator):
    if fn.__name__ == "<lambda>":
        return _lambda_source(fn, decorator)
    try:
        src = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as e:
        raise Uncapturable(f"source of `{getattr(fn, '__name__', fn)}` unavailable ({e})")
    try:
        tree = ast.parse(src)
    except SyntaxError:
        raise Uncapturable(f"source of `{fn.__name__}` does not parse on its own")
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef) or node.name != fn.__name__:
        raise Uncapturable(f"`{fn.__name__}` is not a plain def (a lambda or generated code)")
    lines = src.splitlines()[node.lineno - 1:node.end_lineno]
    if decorator == "@cuda.jit(device=True)":
        # keep a device function's one explicit signature written as text
        # (`@cuda.jit("i8(i8)", device=True)`): numba converts the arguments to it, and a
        # recursive function takes its result type from it. The simulator's dispatcher keeps
        # no signature, so it is read from the source.
        for dec in node.decorator_list:
            if isinstance(dec, ast.Call) and dec.args and isinstance(dec.args[0], ast.Constant) \
                    and isinstance(dec.args[0].value, str) and ast.unparse(dec.func).endswith("jit"):
                decorator = f"@cuda.jit({dec.args[0].value!r}, device=True)"
    return decorator + "\n" + "\n".join(lines) + "\n"


def enum_members_as_numbers(name, cls, text):
    """`Color.red` and `Color['red']` in `text` written as the member's integer value.

    numba types a member of an `IntEnum` as its integer and compares members of an `Enum` by
    value; for an enum whose values are all integers, reading a member in device code is
    reading that number (int64, numba's integer literal type). Any other use of the class
    (passing it, iterating it, members with other values) stays uncapturable."""
    members = cls.__members__

    def value_of(m):
        member = m.group(1) or m.group(2)
        if member not in members:
            raise Uncapturable(f"enum `{name}` has no member `{member}`")
        return repr(enum_member_number(cls, members[member]))
    n = re.escape(name)
    text = re.sub(rf"\b{n}\s*\.\s*(\w+)\b|\b{n}\s*\[\s*['\"](\w+)['\"]\s*\]", value_of, text)
    if re.search(rf"\b{n}\b", text.split("\n", 1)[1]):
        raise Uncapturable(f"global `{name}` of type {type(cls).__name__} used other than as `{name}.member`")
    return text


def fold_enum_identity(src, kernel, params, args):
    """`a is b` (or `is not`) in the kernel, of two parameters given members of different
    enums, written as numba types it: False (True), a constant, even when the members'
    numbers agree (the capture passes members as their numbers, which `is` could not tell
    apart). Any other `is` between members of different enums stays uncapturable."""
    classes = {p: type(a) for p, a in zip(params, args) if isinstance(a, enum.Enum)}
    tree = ast.parse(src)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == kernel), None)
    if fn is None:
        raise Uncapturable("members of different enums compared with `is`")
    stored = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    lines = src.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    edits = []
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Compare)
                and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops)):
            continue
        names = [node.left, *node.comparators]
        enums = [isinstance(n, ast.Name) and n.id in classes for n in names]
        if not any(enums):
            continue
        if not (len(node.ops) == 1 and all(enums) and not {n.id for n in names} & stored):
            raise Uncapturable("members of different enums compared with `is`")
        a, b = (classes[n.id] for n in names)
        if a is b:
            continue  # members of one enum: `is` is equality of their numbers
        value = isinstance(node.ops[0], ast.IsNot)
        begin = starts[node.lineno - 1] + len(lines[node.lineno - 1].encode()[:node.col_offset].decode())
        end = starts[node.end_lineno - 1] + len(lines[node.end_lineno - 1].encode()[:node.end_col_offset].decode())
        edits.append((begin, end, repr(value)))
    for begin, end, text in sorted(edits, reverse=True):
        src = src[:begin] + text + src[end:]
    return src


class SourceBuilder:
    """The module text for one kernel: imports, constants, device functions, the kernel."""

    def __init__(self):
        self.imports = []
        self.constants = []
        self.functions = []
        self.bound = {}  # name -> identity of what it is bound to
        self.tags = set()

    def bind(self, name, ident):
        old = self.bound.get(name)
        if old is not None and old != ident:
            raise Uncapturable(f"name `{name}` means different things in different functions")
        self.bound[name] = ident
        return old is None

    def add_function(self, fn, decorator, as_name=None):
        """Adds `fn`'s source (renamed to `as_name`, the global it is bound to, if that differs)."""
        name = as_name or fn.__name__
        if name == "<lambda>":
            raise Uncapturable("a lambda launched as a kernel")
        if not self.bind(name, ("fn", id(fn))):
            return
        text = _function_source(fn, decorator)
        if name != fn.__name__:
            text = re.sub(rf"^def {re.escape(fn.__name__)}\(", f"def {name}(", text, count=1, flags=re.M)
        idx = len(self.functions)
        self.functions.append(text)
        values = {}
        if fn.__closure__:
            for n, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    values[n] = cell.cell_contents
                except ValueError:
                    raise Uncapturable(f"closure variable `{n}` is unset")
        for name in _code_names(fn.__code__):
            if name == fn.__name__:
                if as_name and as_name != name and fn.__globals__.get(name) is not None and \
                        getattr(fn.__globals__[name], "py_func", None) is fn:
                    # a recursive function bound to another name (`cfunc = fib1`): its calls
                    # to itself follow the rename
                    text = re.sub(rf"\b{re.escape(name)}\b(?=\s*\()", as_name, text)
                    self.functions[idx] = text
                continue
            value = values[name] if name in values else fn.__globals__.get(name)
            if isinstance(value, enum.EnumMeta):
                text = enum_members_as_numbers(name, value, text)
                self.functions[idx] = text
                continue
            if isinstance(value, pytypes.ModuleType) and sys.modules.get(value.__name__) is not value:
                # a module made at run time (`types.ModuleType("mymod")`), which no import
                # finds: each `mymod.attr` it is used through becomes a global of its own
                for attr in sorted(set(re.findall(rf"\b{re.escape(name)}\.(\w+)", text))):
                    if not hasattr(value, attr):
                        raise Uncapturable(f"module `{name}` made at run time has no `{attr}`")
                    flat = f"{name}__{attr}"
                    text = re.sub(rf"\b{re.escape(name)}\.{attr}\b", flat, text)
                    self.functions[idx] = text
                    self.add_global(flat, getattr(value, attr), user=text)
                continue
            if name in values:
                self.add_global(name, values[name], user=text)
            elif name in fn.__globals__:
                self.add_global(name, fn.__globals__[name], user=text)
            # else: a builtin (range, len, min, ...)

    def add_global(self, name, value, user=None):
        import numba
        from numba.core import types as nbtypes
        try:
            from numba.core.registry import CPUDispatcher
        except ImportError:  # pragma: no cover
            CPUDispatcher = ()
        inner = getattr(value, "py_func", None) or getattr(value, "fn", None)
        if isinstance(value, pytypes.ModuleType):
            mod = value.__name__
            if mod == "cmath":
                self.tags.add("complex")
            if mod.startswith("numba_cuda.numba"):
                mod = mod[len("numba_cuda."):]
            if not self.bind(name, ("module", mod)):
                return
            if "." in mod:
                parent, child = mod.rsplit(".", 1)
                line = f"from {parent} import {child}" + (f" as {name}" if name != child else "")
            else:
                line = f"import {mod}" + (f" as {name}" if name != mod else "")
            self.imports.append(line)
        elif inner is not None and callable(inner) and (
                hasattr(value, "targetoptions") or hasattr(value, "_device")
                or isinstance(value, CPUDispatcher)):
            opts = getattr(value, "targetoptions", {}) or {}
            # A kernel (`@cuda.jit` without device=True) called from device code: numba-cuda
            # compiles the callee as a device function there, which is what it becomes here.
            device = opts.get("device", getattr(value, "_device", True))
            if not device and getattr(value, "_can_compile", True) is False:
                raise Uncapturable(f"kernel `{name}` with eager signatures called from device code")
            # A device function compiled eagerly for one signature of numbers
            # (`cuda.jit("(int64, int64)", device=True)`) converts its arguments to it: keep
            # the signature. Several eager signatures (overloads) are left to specialization.
            decorator = "@cuda.jit(device=True)"
            if getattr(value, "_can_compile", True) is False:
                keys = list(getattr(value, "overloads", {}) or {})
                number = (nbtypes.Integer, nbtypes.Float, nbtypes.Boolean)
                if len(keys) == 1 and all(isinstance(t, number) for t in keys[0]):
                    # with its result type when that is a number: a recursive function
                    # (`fib1(n - 1) + fib1(n - 2)`) takes its result type from it
                    cres = value.overloads[keys[0]]
                    ret = getattr(getattr(cres, "signature", None), "return_type", None)
                    ret = str(ret) if isinstance(ret, number) else ""
                    decorator = f'@cuda.jit("{ret}(' + ", ".join(str(t) for t in keys[0]) + ')", device=True)'
            self.add_function(inner, decorator, as_name=name)
        elif isinstance(value, (np.integer, np.floating)):
            # Checked before Python numbers: np.float64 is a subclass of float. int64 is the
            # numba dialect's literal type (a literal keeps it usable as a shape); the others,
            # float64 included, keep their dtype (`numpy.float64(x) * float32` is a float64,
            # as numba types it, where a Python float would adapt to the float32).
            text = repr(value.item()) if value.dtype.name == "int64" else \
                f"numpy.{value.dtype.name}({value.item()!r})"
            if self.bind(name, ("const", text)):
                self.constants.append(f"{name} = {text}")
                self._import("import numpy")
        elif isinstance(value, (bool, np.bool_)):
            if self.bind(name, ("const", repr(bool(value)))):
                self.constants.append(f"{name} = {bool(value)!r}")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            # np.float64 is a float subclass whose repr is `np.float64(…)`: write the number.
            text = repr(float(value)) if isinstance(value, float) else repr(int(value))
            if text in ("nan", "inf", "-inf"):
                text = _const_item(float(value), False)
            if self.bind(name, ("const", text)):
                self.constants.append(f"{name} = {text}")
        elif isinstance(value, (np.integer, np.floating)):
            # int64 and float64 are the numba dialect's literal types; others keep their dtype.
            text = repr(value.item()) if value.dtype.name in ("int64", "float64") else \
                f"numpy.{value.dtype.name}({value.item()!r})"
            if self.bind(name, ("const", text)):
                self.constants.append(f"{name} = {text}")
                self._import("import numpy")
        elif isinstance(value, (complex, np.complexfloating)):
            self.tags.add("complex")
            raise Uncapturable(f"global complex constant `{name}`")
        elif isinstance(value, tuple) and all(isinstance(v, (int, float)) for v in value):
            if self.bind(name, ("const", repr(value))):
                self.constants.append(f"{name} = {value!r}")
        elif isinstance(value, np.ndarray) or (
                isinstance(value, tuple) and value and all(isinstance(v, np.ndarray) for v in value)):
            # A global NumPy array (or a tuple of them, `literal_unroll`'s `cases`) is a
            # constant numba copies into the kernel: written out as an `np.array` literal.
            self.tags.add("global array")
            text = const_array_text(value)
            if self.bind(name, ("const", text)):
                self.constants.append(f"{name} = {text}")
                self._import("import numpy")
        elif hasattr(value, "__cuda_array_interface__"):
            # numba captures a device array global by reference; one the kernel only reads
            # is the same as a constant copy of its contents at the launch.
            self.tags.add("global array")
            if user is not None and writes_global(user, name):
                raise Uncapturable(f"kernel writes `{name}`, a device array captured as a global (DeviceNDArray)")
            try:
                host = value.copy_to_host() if hasattr(value, "copy_to_host") else \
                    numba.cuda.as_cuda_array(value).copy_to_host()
            except Exception as e:  # noqa: BLE001 - any failure means we cannot see the data
                raise Uncapturable(f"`{name}`, a device array captured as a global (DeviceNDArray), could not be copied ({e})")
            text = const_array_text(host)
            if self.bind(name, ("const", text)):
                self.constants.append(f"{name} = {text}")
                self._import("import numpy")
        elif isinstance(value, (nbtypes.Record, np.dtype)) and (
                isinstance(value, nbtypes.Record) or value.names is not None):
            # A structured dtype as a global (`dt = numba.from_dtype(arr.dtype)` used as
            # `cuda.shared.array(n, dtype=dt)`): written as the `numpy.dtype([...])` it
            # comes from, which the numba dialect reads as the record type (§5.16).
            self.tags.add("records (structured dtypes)")
            text = record_dtype_text(value)
            if self.bind(name, ("const", text)):
                self.constants.append(f"{name} = {text}")
                self._import("import numpy")
        elif isinstance(value, nbtypes.Type) or (
                callable(value) and str(getattr(value, "__module__", "")).startswith(("numba", "_numba"))
                and ".tests." not in str(getattr(value, "__module__", ""))):
            line = numba_import(name, value)
            if line is None:
                raise Uncapturable(f"global `{name}` ({value}) is not exported by numba or numba.cuda")
            if self.bind(name, ("import", line)):
                self.imports.append(line)
        elif isinstance(value, type) and issubclass(value, np.generic):
            tname = value.__name__
            line = f"from numpy import {tname}" + (f" as {name}" if name != tname else "")
            if self.bind(name, ("import", line)):
                self.imports.append(line)
        elif callable(value) and getattr(value, "__module__", None) in ("math", "cmath", "numpy", "operator",
                                                                         "_operator"):
            mod = value.__module__.lstrip("_")
            if mod == "cmath":
                self.tags.add("complex")
            line = f"from {mod} import {value.__name__}" + (f" as {name}" if name != value.__name__ else "")
            if self.bind(name, ("import", line)):
                self.imports.append(line)
        else:
            kind = type(value).__name__
            raise Uncapturable(f"global `{name}` of type {kind}")

    def _import(self, line):
        if line not in self.imports:
            self.imports.append(line)

    def text(self):
        head = ["from numba import cuda"] + [i for i in self.imports if i != "from numba import cuda"]
        return "\n".join(head) + "\n\n" + "".join(c + "\n" for c in self.constants) + "\n" + \
            "\n\n".join(reversed(self.functions))


def _const_item(x, complex_ok):
    """One element of a constant array literal, written so that it reads back exactly."""
    if isinstance(x, (bool, np.bool_)):
        return repr(bool(x))
    if isinstance(x, (int, np.integer)):
        return repr(int(x))
    if isinstance(x, (complex, np.complexfloating)):
        # complex(re, im): exact parts, -0.0, NaN and infinities included.
        return f"complex({_const_item(float(x.real), False)}, {_const_item(float(x.imag), False)})"
    f = float(x)
    if np.isnan(f):
        return "float('nan')"
    if np.isinf(f):
        return "float('inf')" if f > 0 else "-float('inf')"
    return repr(f)


def record_dtype_text(value):
    """`numpy.dtype([(name, 'type', shape), ...], align=...)` for a structured dtype (a NumPy
    dtype or numba's Record): number fields and sub-arrays of numbers at NumPy's packed or
    aligned offsets. Anything else (string or nested fields, custom offsets) is Uncapturable."""
    from numba.core import types as nbtypes
    from numba.np import numpy_support

    dt = numpy_support.as_dtype(value) if isinstance(value, nbtypes.Record) else value
    fields = []
    for fname in dt.names:
        ft = dt.fields[fname][0]
        base, shape = (ft.subdtype if ft.subdtype is not None else (ft, ()))
        if base.kind not in "biufc" or base.names is not None:
            raise Uncapturable(f"structured dtype global with field `{fname}` of dtype {ft.str}")
        fields.append((fname, base.name, shape) if shape else (fname, base.name))
    for aligned in (False, True):
        if np.dtype(fields, align=aligned) == dt:
            return "numpy.dtype(" + repr(fields) + (", align=True" if aligned else "") + ")"
    raise Uncapturable(f"structured dtype global {dt} with offsets neither packed nor aligned")


def const_array_text(value):
    """A global NumPy array (or a tuple of them) as a `numpy.array` literal that pydevice reads
    as a compile-time constant array: nested lists, exact float reprs, the dtype, the order."""
    if isinstance(value, tuple):
        items = [const_array_text(v) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    arr = np.asarray(value)
    if arr.dtype.fields is not None:
        return _const_records_text(arr)
    if arr.dtype.kind not in "biufc" or arr.dtype.name in ("float128", "complex256"):
        raise Uncapturable(f"global NumPy array of dtype {arr.dtype}")
    if arr.size > 1 << 16:
        raise Uncapturable("global NumPy array too large to write out")
    if arr.size == 0 and arr.ndim > 1:
        raise Uncapturable("global NumPy array, empty and multi-dimensional (a literal cannot give its shape)")

    def nest(a):
        if a.ndim == 0:
            return _const_item(a.item(), True)
        if a.ndim == 1:
            return "[" + ", ".join(_const_item(x, True) for x in a) + "]"
        return "[" + ", ".join(nest(sub) for sub in a) + "]"

    order = ", order='F'" if arr.ndim > 1 and arr.flags.f_contiguous and not arr.flags.c_contiguous else ""
    return f"numpy.array({nest(arr)}, dtype=numpy.{arr.dtype.name}{order})"


def _const_records_text(arr):
    """A global record array as `numpy.array([(…), …], dtype=numpy.dtype([...], align=True))`
    when its fields are numbers laid out as C lays them out (what kernels use, §5.16)."""
    names = arr.dtype.names
    fields = []
    for n in names:
        ft = arr.dtype.fields[n][0]
        if ft.fields is not None or ft.subdtype is not None or ft.kind not in "biuf":
            raise Uncapturable("global record array with nested, sub-array or complex fields")
        fields.append((n, ft))
    c_layout = np.dtype(fields, align=True)
    if c_layout.itemsize != arr.dtype.itemsize or any(
            c_layout.fields[n][1] != arr.dtype.fields[n][1] for n in names):
        raise Uncapturable("global record array whose fields are not in C layout (packed dtype)")
    if arr.ndim == 0 or arr.size > 1 << 16:
        raise Uncapturable("global record array that is zero-dimensional or too large")

    def nest(a):
        if a.ndim == 1:
            return "[" + ", ".join(
                "(" + ", ".join(_const_item(r[n], False) for n in names) + ("," if len(names) == 1 else "") + ")"
                for r in a) + "]"
        return "[" + ", ".join(nest(sub) for sub in a) + "]"

    spec = ", ".join(f"({n!r}, numpy.{ft.name})" for n, ft in fields)
    return f"numpy.array({nest(arr)}, dtype=numpy.dtype([{spec}], align=True))"


def writes_global(src, name):
    """Whether function source `src` stores into `name[...]` or passes `name` to an atomic."""
    import ast as pyast
    try:
        tree = pyast.parse(src)
    except SyntaxError:
        return True
    for node in pyast.walk(tree):
        targets = []
        if isinstance(node, pyast.Assign):
            targets = node.targets
        elif isinstance(node, (pyast.AugAssign, pyast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            while isinstance(t, (pyast.Subscript, pyast.Attribute)):
                t = t.value
            if isinstance(t, pyast.Name) and t.id == name and t is not node:
                if not (isinstance(node, pyast.Assign) and node.targets[0] is t):
                    return True
        if isinstance(node, pyast.Call) and node.args and isinstance(node.args[0], pyast.Name) \
                and node.args[0].id == name and "atomic" in pyast.unparse(node.func):
            return True
    return False


def numba_import(name, value):
    """An import that binds `name` to `value` from numba, numba.types or numba.cuda, if any."""
    import numba
    import numba.cuda
    from numba.core import types as nbtypes
    own = getattr(value, "__name__", None) or str(value)
    places = [(numba, "numba"), (numba.cuda, "numba.cuda"), (nbtypes, "numba.types")]
    for sub in ("fp16", "bf16", "libdevice"):
        m = getattr(numba.cuda, sub, None)
        if isinstance(m, pytypes.ModuleType):
            places.append((m, f"numba.cuda.{sub}"))
    try:  # `literal_unroll`'s home in numba-cuda
        import numba.cuda.misc.special as special
        places.append((special, "numba.cuda.misc.special"))
    except ImportError:
        pass
    # `to_fixed_tuple`'s home (numba-cuda's broadcasting `setitem` kernel uses it): numba's
    # when numba is installed, else numba-cuda's own copy.
    for modname in ("numba.np.unsafe.ndarray", "numba.cuda.np.unsafe.ndarray"):
        try:
            places.append((importlib.import_module(modname), modname))
        except ImportError:
            pass
    for mod, modname in places:
        # also any public name bound to the very object (`cuda.bf16.heq` is `__heq`)
        aliases = [a for a in dir(mod) if not a.startswith("_") and getattr(mod, a, None) is value]
        for attr in (name, own, str(value), *aliases):
            try:
                found = getattr(mod, attr, None)
                same = found is value or (found is not None and isinstance(value, nbtypes.Type) and found == value)
            except Exception:
                same = False
            if same:
                return f"from {modname} import {attr}" + (f" as {name}" if name != attr else "")
    return None


def tags_of(src, arrays):
    tags = set()
    if re.search(r"\bcmath\b|\bcomplex\(|\.real\b|\.imag\b|\.conjugate\(|\b\d+(\.\d*)?j\b", src):
        tags.add("complex")
    if any(a.dtype.kind == "c" for a in arrays):
        tags.add("complex")
    if ".reshape(" in src:
        tags.add("reshape")
    if re.search(r"\[[^\[\]\n]*:[^\[\]\n]*,[^\[\]\n]*\]|\[[^\[\]\n]*,[^\[\]\n]*:[^\[\]\n]*\]", src):
        tags.add("multi-dim slicing")
    return tags


def _holds_array(value):
    return isinstance(value, tuple) and not hasattr(value, "_fields") and any(
        isinstance(v, np.ndarray) or hasattr(v, "copy_to_host") or hasattr(v, "__cuda_array_interface__")
        for v in value)


def flat_params(params, args):
    """The parameters of the launch wrapper: a tuple holding arrays gives one per item."""
    out = []
    for p, a in zip(params, args):
        out += [f"{p}__{j}" for j in range(len(a))] if _holds_array(a) else [p]
    return out


def flatten_args(values, args):
    """`values` (the arguments or their numba types) with each tuple holding arrays spread."""
    out = []
    for v, a in zip(values, args):
        if _holds_array(a):
            items = list(v) if isinstance(v, tuple) else list(getattr(v, "types", None) or [])
            if len(items) != len(a):
                raise Uncapturable(f"tuple argument holding arrays of numba type {v}")
            out += items
        else:
            out.append(v)
    return out


def array_tuple_wrapper(name, params, args):
    """A kernel that takes a tuple holding arrays (`f[1, n]((x0, x1, x2))`), which `pydevice
    run` cannot pass, is written as a device function plus a kernel `NAME__launch` that takes
    the tuple's items one by one and calls it with the tuple rebuilt; None if none does."""
    if not any(_holds_array(a) for a in args):
        return None
    for a in args:
        if _holds_array(a) and any(_holds_array(v) for v in a):
            raise Uncapturable("tuple argument holding tuples of arrays")
    call = []
    for p, a in zip(params, args):
        if _holds_array(a):
            items = [f"{p}__{j}" for j in range(len(a))]
            call.append("(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")")
        else:
            call.append(p)
    return (f"@cuda.jit\ndef {name}__launch({', '.join(flat_params(params, args))}):\n"
            f"    {name}({', '.join(call)})\n")


class Capturer:
    """Writes one case folder per distinct (kernel, argument types)."""

    def __init__(self, cases_dir, module):
        self.cases = Path(cases_dir)
        self.module = module
        self.seen = set()
        self.count = 0
        self.busy = threading.local()

    def current_test(self):
        for frame in inspect.stack()[2:]:
            s = frame.frame.f_locals.get("self")
            if isinstance(s, unittest.TestCase):
                return s.id().split(".", 3)[-1]
        return "?"

    def around(self, py_func, args, typeof_types, grid, block, shared, launch, overload_types,
               device_flag_ok=True, simulator=False):
        """Captures one launch made by `launch()`, if it is the first of its kind."""
        if getattr(self.busy, "on", False):
            return launch()
        key = (py_func.__module__, py_func.__qualname__, py_func.__code__.co_firstlineno,
               tuple(str(t) for t in typeof_types))
        if key in self.seen:
            return launch()
        self.seen.add(key)
        self.busy.on = True
        try:
            self.count += 1
            d = self.cases / f"{self.module.replace('.', '_')}-{self.count:04d}"
            d.mkdir(parents=True)
            meta = {"module": self.module, "test": self.current_test(), "kernel": py_func.__name__,
                    "qualname": py_func.__qualname__, "grid": list(grid), "block": list(block),
                    "shared": int(shared), "types": [str(t) for t in typeof_types]}
            before, wrapper = None, None
            try:
                params = list(inspect.signature(py_func).parameters)
                if len(params) != len(args):
                    raise Uncapturable("argument count differs from the parameters (*args?)")
                sb = SourceBuilder()
                wrapper = array_tuple_wrapper(py_func.__name__, params, args)
                sb.add_function(py_func, "@cuda.jit(device=True)" if wrapper else "@cuda.jit")
                src = sb.text()
                if wrapper:
                    src += "\n\n" + wrapper
                    meta["kernel"] = py_func.__name__ + "__launch"
                    params = flat_params(params, args)
                    flat_args = flatten_args(args, args)
                    flat_types = flatten_args(typeof_types, args)
                else:
                    flat_args, flat_types = list(args), list(typeof_types)
                meta["tags"] = sorted(sb.tags)
                (d / "kernel.py").write_text(src)
                classes = {type(a) for a in args if isinstance(a, enum.Enum)}
                if len(classes) > 1:
                    src = fold_enum_identity(src, py_func.__name__, params, args)
                    (d / "kernel.py").write_text(src)
                DATETIME_UNITS.unit = None
                before = [snapshot(a, t, simulator) for a, t in zip(flat_args, flat_types)]
            except Uncapturable as e:
                meta["uncapturable"] = str(e)
            except Exception as e:  # the hook must never change the test's outcome
                meta["uncapturable"] = f"capture failed: {type(e).__name__}: {e}"
            try:
                t_launch = time.perf_counter()
                result = launch()
                if simulator:
                    meta["numba_launch_s"] = time.perf_counter() - t_launch
            except BaseException as e:
                meta["numba_failed"] = f"{type(e).__name__}: {str(e)[:200]}"
                (d / "meta.json").write_text(json.dumps(meta))
                raise
            try:
                if not simulator:
                    from numba import cuda
                    cuda.synchronize()
                    meta["numba_launch_s"] = time.perf_counter() - t_launch
                types_used = overload_types() or typeof_types
                if before is not None and wrapper:
                    types_used = flatten_args(types_used, args)
                meta["types"] = [str(t) for t in types_used]
                if before is not None and "uncapturable" not in meta:
                    argspec, outs = [], []
                    DATETIME_UNITS.unit = None
                    after_vals = [snapshot(a, t, simulator) for a, t in zip(flat_args, types_used)]
                    for i, (p, b, a, t) in enumerate(zip(params, before, after_vals, types_used)):
                        if b[0] == "array":
                            np.save(d / f"in_{p}.npy", b[1])
                            np.save(d / f"ref_{p}.npy", a[1])
                            argspec.append({"name": p, "array": f"in_{p}.npy", "dtype": str(b[1].dtype),
                                            "shape": list(b[1].shape)})
                            if (b[1].dtype.names is not None or b[1].dtype.kind in "SU") \
                                    and hasattr(t, "dtype"):
                                nd = b[1].ndim
                                argspec[-1]["sig"] = f"{t.dtype}[" + ", ".join([":"] * (nd - 1) + ["::1"]) + "]"
                            if type(flat_args[i]).__name__ != "In":
                                # `cuda.In(a)`: numba copies it to the device only, so the
                                # host array after the launch says nothing of the kernel
                                outs.append(p)
                        elif b[0] == "record":
                            np.save(d / f"in_{p}.npy", b[1])
                            argspec.append({"name": p, "record": f"in_{p}.npy", "sig": str(t) if str(t).startswith("Record(") else record_sig(b[1].dtype)})
                            if str(t).startswith("Record(") and a[0] == "record":
                                # numba passes a record by reference and copies it back;
                                # `pydevice run --out` writes it back too (semantics §5.16.1)
                                np.save(d / f"ref_{p}.npy", a[1])
                                outs.append(p)
                        else:
                            # the overload numba launched fixes the scalar's type
                            _, dtype, text = snapshot(flat_args[i], t, simulator)
                            if dtype == "tuple":
                                argspec.append({"name": p, "scalar": text, "sig": tuple_sig(text)})
                            else:
                                argspec.append({"name": p, "scalar": f"{dtype}:{text}"})
                    meta["args"] = argspec
                    meta["outs"] = outs
                    meta["tags"] = sorted(set(meta.get("tags", [])) | tags_of(
                        src, [b[1] for b in before if b[0] == "array"]))
            except Uncapturable as e:
                meta["uncapturable"] = str(e)
            except Exception as e:
                meta["uncapturable"] = f"capture failed: {type(e).__name__}: {e}"
            (d / "meta.json").write_text(json.dumps(meta))
            return result
        finally:
            self.busy.on = False


def keep_simulator_signatures():
    """Under the simulator, `cuda.jit("void(uint32[:], uint32)")(f)` keeps no signature, so
    a Python int argument would be captured as int64 where numba on a GPU converts it to the
    signature's uint32. The simulator's `cuda.jit` is wrapped to note a single signature given
    as text on the kernel it makes (`_suite_sig`); the hook types the arguments from it."""
    import numba.cuda
    from numba.cuda.simulator.kernel import FakeCUDAKernel
    orig_jit = numba.cuda.jit

    def jit(func_or_sig=None, *a, **k):
        made = orig_jit(func_or_sig, *a, **k)
        if isinstance(func_or_sig, str) and not isinstance(made, FakeCUDAKernel) and callable(made):
            def deco(fn):
                kern = made(fn)
                if isinstance(kern, FakeCUDAKernel):
                    kern._suite_sig = func_or_sig
                return kern
            return deco
        return made
    numba.cuda.jit = jit


def signature_types(text):
    """The argument types of a signature given as text (`void(uint32[:], uint32)`)."""
    try:
        from numba.cuda.core import sigutils
    except ImportError:
        from numba.core import sigutils
    args, _ = sigutils.normalize_signature(text)
    return tuple(args)


def install_hook(cap, simulator):
    if simulator:
        from numba.cuda.simulator.kernel import FakeCUDAKernel
        orig = FakeCUDAKernel.__call__
        keep_simulator_signatures()

        def call(self, *args):
            from numba.cuda.simulator import kernel as k
            if self._device or k._kernel_context:
                return orig(self, *args)
            import numba
            grid = tuple(self.grid_dim) if self.grid_dim is not None else (1, 1, 1)
            block = tuple(self.block_dim) if self.block_dim is not None else (1, 1, 1)
            grid, block = (tuple(list(x) + [1] * (3 - len(x))) for x in (grid, block))

            def typeof(a):
                try:
                    return numba.typeof(getattr(a, "_ary", a))
                except Exception:
                    return type(a).__name__
            tys = tuple(typeof(a) for a in args)
            sig = getattr(self, "_suite_sig", None)
            if sig is not None:
                given = None
                with contextlib.suppress(Exception):  # else the types of the values stay
                    given = signature_types(sig)
                if given is not None and len(given) == len(tys):
                    tys = given
            return cap.around(self.fn, args, tys, grid, block, self.dynshared_size,
                              lambda: orig(self, *args), lambda: None, simulator=True)
        FakeCUDAKernel.__call__ = call
    else:
        from numba.cuda.dispatcher import CUDADispatcher
        orig = CUDADispatcher.call

        def call(self, args, launch_config):
            try:
                tys = tuple(self.typeof_pyval(a) for a in args)
            except Exception:
                tys = tuple(type(a).__name__ for a in args)

            def used():
                if len(self.overloads) == 1:
                    return tuple(next(iter(self.overloads.keys())))
                return tys if tys in self.overloads else None
            return cap.around(self.py_func, args, tys, launch_config.griddim, launch_config.blockdim,
                              launch_config.sharedmem or 0, lambda: orig(self, args, launch_config), used)
        CUDADispatcher.call = call


def ensure_test_deps():
    try:
        import pytest  # noqa: F401
    except ImportError:  # numba.cuda.testing imports it for a decorator; unittest runs the tests
        stub = pytypes.ModuleType("pytest")

        class _Mark:
            def __getattr__(self, _):
                def deco(*a, **k):
                    if len(a) == 1 and callable(a[0]) and not k:
                        return a[0]
                    return lambda f: f
                return deco
        stub.mark = _Mark()
        stub.fixture = lambda *a, **k: (a[0] if a and callable(a[0]) else (lambda f: f))
        stub.skip = lambda *a, **k: (_ for _ in ()).throw(unittest.SkipTest(a[0] if a else ""))
        stub.raises = lambda exc, *a, **k: unittest.TestCase().assertRaises(exc)
        sys.modules["pytest"] = stub
    try:
        import filecheck  # noqa: F401
    except ImportError:  # numba.cuda.testing imports it for tests that check PTX text
        for sub, names in {"": [], "matcher": ["Matcher"], "options": ["Options"],
                           "parser": ["Parser", "pattern_for_opts"], "finput": ["FInput"]}.items():
            m = pytypes.ModuleType("filecheck" + ("." + sub if sub else ""))
            for n in names:
                setattr(m, n, type(n, (), {}))
            sys.modules[m.__name__] = m


def tests_package():
    """Imports numba.cuda.tests: the installed one, else the copy under .carry/numba_tests."""
    try:
        import numba.cuda.tests.cudapy  # noqa: F401
        return "installed"
    except ImportError:
        pass
    base = CARRIED_TESTS / "tests"
    if not base.is_dir():
        sys.exit(f"numba-cuda's tests are not installed and {base} does not exist")
    spec = importlib.util.spec_from_file_location("numba.cuda.tests", base / "__init__.py",
                                                  submodule_search_locations=[str(base)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["numba.cuda.tests"] = mod
    spec.loader.exec_module(mod)
    import numba.cuda
    numba.cuda.tests = mod
    return f"carried ({base})"


def keep_exec_source():
    """Makes the source of functions made by `exec(text)` visible to `inspect.getsource`.

    numba-cuda's tests build some kernels from text (test_atomics' `gen_atomic_extreme_funcs`
    formats four kernels per atomic and `exec`s them); `exec` of a string compiles it as
    `<string>`, whose lines `inspect` cannot find. Each string now gets its own file name,
    registered in `linecache` with its text, so the capture writes such kernels out as it does
    any other. Code objects and `exec` with a file name are passed on unchanged.
    """
    import builtins
    import linecache
    orig = builtins.exec
    counter = [0]

    def exec_(source, globals=None, locals=None, *rest, **kw):
        if isinstance(source, (str, bytes)) and not rest and not kw:
            text = source.decode() if isinstance(source, bytes) else source
            counter[0] += 1
            name = f"<numba_suite-exec-{counter[0]}>"
            linecache.cache[name] = (len(text), None, text.splitlines(True), name)
            source = compile(text, name, "exec", dont_inherit=True)
        if globals is None:  # exec's defaults are its caller's namespaces, not ours
            frame = sys._getframe(1)
            globals = frame.f_globals
            if locals is None:
                locals = frame.f_locals
        return orig(source, globals, locals, *rest, **kw)
    builtins.exec = exec_


def worker(module, cases_dir):
    np.row_stack = getattr(np, "row_stack", np.vstack)  # numba-cuda 0.30 with NumPy 2.5
    try:
        # numba-cuda's `.pth` hook sends `numba.cuda` to the numba_cuda package; a `.pth`
        # runs only in a site directory, not from PYTHONPATH (a private --target install),
        # where numba's own older numba.cuda would be found instead. Importing it twice
        # is a no-op.
        import _numba_cuda_redirector  # noqa: F401
    except ImportError:
        pass
    ensure_test_deps()
    keep_exec_source()
    from numba.core import config
    simulator = bool(config.ENABLE_CUDASIM)
    where = tests_package()
    cap = Capturer(cases_dir, module)
    install_hook(cap, simulator)
    t0 = time.time()
    summary = {"module": module, "tests_from": where}
    try:
        mod = importlib.import_module(f"numba.cuda.tests.{module}")
        suite = unittest.defaultTestLoader.loadTestsFromModule(mod)
        res = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
        summary.update(tests=res.testsRun, failures=len(res.failures), errors=len(res.errors),
                       skipped=len(res.skipped))
    except Exception as e:
        summary["import_error"] = f"{type(e).__name__}: {e}"
        traceback.print_exc()
    summary["seconds"] = round(time.time() - t0, 1)
    summary["launches_captured"] = cap.count
    (Path(cases_dir) / f"summary-{module}.json").write_text(json.dumps(summary))


# ---------------------------------------------------------------- phase 2: pydevice

def compare(ref, ours):
    if ref.shape != ours.shape or ref.dtype != ours.dtype:
        return False, False, f"shape/dtype {ours.shape} {ours.dtype} vs {ref.shape} {ref.dtype}"
    if ref.tobytes() == ours.tobytes():
        return True, True, ""
    if ref.dtype.names is not None:  # records: field by field (padding bytes are not data)
        oks, notes = [], []
        for f in ref.dtype.names:
            ok, bits, note = compare(ref[f], ours[f])
            oks.append((ok, bits))
            if not ok:
                notes.append(f"field {f}: {note}")
        return all(o for o, _ in oks), all(b for _, b in oks), "; ".join(notes)
    name = ref.dtype.name
    if ref.dtype.kind in "fc" and name in TOLERANCE or ref.dtype.kind == "c":
        rtol, atol = TOLERANCE.get(name, TOLERANCE["float64"] if "128" in name else TOLERANCE["float32"])
        ok = np.allclose(ours, ref, rtol=rtol, atol=atol, equal_nan=True)
        worst = np.nanmax(np.abs(ours.astype(np.complex128) - ref.astype(np.complex128))) if ref.size else 0
        return bool(ok), False, f"max |diff| {float(worst):.3g}"
    bad = int(np.count_nonzero(ref != ours))
    return False, False, f"{bad} of {ref.size} elements differ"


def replay(case, pydevice, compile_only, timeout, cpu=False, bench=0):
    meta = json.loads((case / "meta.json").read_text())
    out = {"case": case.name, **{k: meta.get(k) for k in ("module", "test", "kernel", "grid", "block",
                                                           "shared", "types", "tags")}}
    src_path = case / "kernel.py"
    out["source"] = src_path.read_text() if src_path.exists() else ""
    if "numba_failed" in meta:
        out["status"] = "numba failed"
        out["detail"] = meta["numba_failed"]
        return out
    if "uncapturable" in meta:
        out["status"] = "uncapturable"
        out["detail"] = meta["uncapturable"]
        return out
    if compile_only:
        sig = []
        for a in meta["args"]:
            if "sig" in a:
                sig.append(a["sig"])
            elif "scalar" in a:
                sig.append(a["scalar"].split(":")[0])
            else:
                nd = len(a["shape"])
                dims = ", ".join([":"] * (nd - 1) + ["::1"]) if nd else "()"
                sig.append(a["dtype"] + "[" + dims + "]")
        cmd = [pydevice, "compile", str(src_path), "--entry", meta["kernel"], "--sig", ", ".join(sig),
               "-o", os.devnull]
    else:
        cmd = [pydevice, "run", str(src_path), "--entry", meta["kernel"],
               "--grid", ",".join(map(str, meta["grid"])), "--block", ",".join(map(str, meta["block"])),
               "--shared", str(meta["shared"])]
        for a in meta["args"]:
            value = a["scalar"] if "scalar" in a else str(case / a.get("array", a.get("record")))
            cmd += ["--arg", f"{a['name']}=" + value]
        for o in meta["outs"]:
            cmd += ["--out", f"{o}={case / ('ours_' + o + '.npy')}"]
        if cpu:
            # pydevice's CPU back end (issue 33); `--bench N` times N more launches, the
            # compile left out, as the simulator's time is (it compiles nothing)
            cmd += ["--cpu"] + (["--bench", str(bench)] if bench else [])
    out["command"] = " ".join(cmd)
    out["numba_launch_s"] = meta.get("numba_launch_s")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        out["status"], out["detail"] = "crash", f"timeout after {timeout} s"
        return out
    err = p.stderr.strip()
    first = next((l for l in err.splitlines() if l.startswith("error")), err.splitlines()[0] if err else "")
    if p.returncode == 1 and re.search(r"^error\[E\d{4}\]", err, re.M):
        out["status"], out["detail"] = "diagnostic", first
        out["stderr"] = err[:3000]
        return out
    if p.returncode == 2 and first.startswith("error:"):
        out["status"], out["detail"] = "run error", first
        out["stderr"] = err[:3000]
        return out
    if p.returncode != 0:
        out["status"] = "crash"
        out["detail"] = f"exit status {p.returncode}: " + (err.splitlines()[-1] if err else "")
        out["stderr"] = err[-3000:]
        return out
    if compile_only:
        out["status"] = "compiles"
        return out
    for line in p.stdout.splitlines():
        if line.startswith("{") and '"median_us"' in line:
            t = json.loads(line)
            out["ours_launch_us"] = t["median_us"]
            out["ours_compile_us"] = t.get("compile_us")
            out["ours_first_us"] = t.get("first_us")
    exact, notes = True, []
    for o in meta["outs"]:
        ref = np.load(case / f"ref_{o}.npy")
        ours = np.load(case / f"ours_{o}.npy")
        ok, bits, note = compare(ref, ours)
        exact &= bits
        if not ok:
            notes.append(f"`{o}`: {note}")
    if notes:
        out["status"], out["detail"] = "mismatch", "; ".join(notes)
    else:
        out["status"] = "match"
        out["exact"] = exact
    return out


# ---------------------------------------------------------------- report

STATUSES = ["match", "mismatch", "diagnostic", "run error", "crash", "uncapturable", "compiles"]


def normalize(line):
    """A diagnostic's first line without the names it quotes, for the histogram."""
    return re.sub(r"/\S*/", "…/", re.sub(r"`[^`]*`", "`…`", line))


NEEDS = [
    (r"record", "records (structured dtypes)"),
    (r"complex|<c8|<c16", "complex"),
    (r"reshape", "reshape"),
    (r"slicing", "multi-dim slicing"),
    (r"this is not a value", "types and functions as device-function arguments"),
    (r"Python type (tuple|Point)|global `(arrays|cases)` of type tuple",
     "tuple arguments (pydevice run cannot pass them)"),
    (r"global NumPy array|DeviceNDArray", "global arrays (constant or captured device arrays)"),
    (r"source of .* unavailable|lambda", "generated kernels (no source)"),
    (r"enumerate|can only loop over", "enumerate / other iterables"),
]


def needs_of(detail):
    return {tag for pat, tag in NEEDS if re.search(pat, detail)}


def mode_of(args):
    from_sim = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
    if args.compile_only:
        return "compile only"
    where = "pydevice's CPU back end (`pydevice run --cpu`)" if args.cpu else "pydevice on the GPU"
    ref = "numba-cuda's simulator (NUMBA_ENABLE_CUDASIM=1)" if from_sim else "numba-cuda on the GPU"
    return f"run on {where}, references from {ref}"


def timing_section(launched):
    """Time per kernel launch, numba's side (as the capture hook measured it: the simulator
    runs the kernel in Python threads) against pydevice's (`--bench`: the median of N launches
    after the first, the JIT compile left out), over the kernels that matched."""
    rows = [r for r in launched if r["status"] == "match" and r.get("numba_launch_s")
            and r.get("ours_launch_us")]
    if not rows:
        return []
    ours = np.array([r["ours_launch_us"] * 1e-6 for r in rows])
    theirs = np.array([r["numba_launch_s"] for r in rows])
    first = np.array([(r.get("ours_compile_us") or 0) * 1e-6 + (r.get("ours_first_us") or 0) * 1e-6
                      for r in rows])
    ratio = theirs / ours
    total = f"{theirs.sum():.3f} s | {ours.sum():.3f} s | {theirs.sum() / ours.sum():.0f}x"
    median = (f"{np.median(theirs) * 1e3:.2f} ms | {np.median(ours) * 1e3:.3f} ms | "
              f"{np.median(ratio):.0f}x (median of the ratios)")
    with_jit = f"{theirs.sum():.3f} s | {first.sum():.3f} s | {theirs.sum() / first.sum():.1f}x"
    intro = (f"{len(rows)} kernels; numba's launch as the capture hook timed it, pydevice's the "
             "median of the `--bench` launches (compile left out); same machine, same process count.")
    lines = ["", "## Time per kernel launch (matched kernels)", "", intro, "",
             "| | numba | pydevice | numba / pydevice |", "|---|---:|---:|---:|",
             f"| total over the kernels | {total} |", f"| median per kernel | {median} |",
             f"| pydevice with its JIT compile and first launch, total | {with_jit} |",
             "", "| ratio numba / pydevice | kernels |", "|---|---:|"]
    for lo, hi in ((0, 1), (1, 10), (10, 100), (100, 1000), (1000, float("inf"))):
        n = int(((ratio >= lo) & (ratio < hi)).sum())
        lines.append(f"| {lo}x to {hi if hi != float('inf') else '…'}x | {n} |")
    slow = sorted(rows, key=lambda r: r["numba_launch_s"] / (r["ours_launch_us"] * 1e-6))[:8]
    lines += ["", "Smallest ratios: " + ", ".join(
        f"{r['module'].split('.')[-1]} `{r['kernel']}` {r['numba_launch_s'] * 1e3:.2f} ms vs "
        f"{r['ours_launch_us'] / 1e3:.3f} ms" for r in slow)]
    return lines


def report(results, summaries, args, elapsed, version):
    launched = [r for r in results if r["status"] != "numba failed"]
    counts = collections.Counter(r["status"] for r in launched)
    n = len(launched)
    lines = [f"# numba-cuda test suite through pydevice ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
             "", f"numba-cuda {version}; {len(summaries)} test modules; "
             f"{sum(s.get('tests', 0) for s in summaries)} tests run by numba in {elapsed[0]:.0f} s; "
             f"pydevice phase {elapsed[1]:.0f} s; mode: {mode_of(args)}", ""]
    exact = sum(1 for r in launched if r.get("exact"))
    lines += ["| class | kernels |", "|---|---|"]
    for s in STATUSES:
        if counts.get(s):
            extra = f" ({exact} bit-exact)" if s == "match" else ""
            lines.append(f"| {s} | {counts[s]}{extra} |")
    lines.append(f"| **launched (distinct kernel, argument types)** | {n} |")
    rate = counts.get("match", 0) / n if n else 0.0
    lines += ["", f"**rate: {counts.get('match', 0)} / {n} = {100 * rate:.1f}%** (matches / kernels launched)"]
    capt = n - counts.get("uncapturable", 0)
    if capt:
        lines.append(f"of the {capt} captured kernels: {100 * counts.get('match', 0) / capt:.1f}% match")
    failed = sum(1 for r in results if r["status"] == "numba failed")
    lines.append(f"(launches numba itself rejected, not counted: {failed})")

    def histogram(title, rows, k=40):
        c = collections.Counter(rows)
        out = ["", f"## {title}", "", "| count | first line |", "|---|---|"]
        out += ["| %d | %s |" % (v, t.replace("|", "\\|")) for t, v in c.most_common(k)]
        return out
    lines += histogram("Diagnostics (first lines, names elided)",
                       [normalize(r["detail"]) for r in launched if r["status"] == "diagnostic"])
    lines += histogram("Run errors and crashes", [f"{r['status']}: {normalize(r['detail'])}" for r in launched
                                                  if r["status"] in ("run error", "crash")])
    lines += histogram("Not capturable (why)", [r["detail"] for r in launched if r["status"] == "uncapturable"])
    tagged = collections.Counter()
    for r in launched:
        if r["status"] != "match":
            for t in set(r.get("tags") or []) | needs_of(r.get("detail") or ""):
                tagged[t] += 1
    lines += ["", "## What the kernels that do not match need", "",
              "(a kernel can need several; from its source, its arguments and its diagnostic)", "",
              "| needs | kernels |", "|---|---|"] + [f"| {t} | {v} |" for t, v in tagged.most_common()]
    lines += ["", "## Mismatches", ""] + [f"- {r['module']} {r['test']} `{r['kernel']}`: {r['detail']}"
                                         for r in launched if r["status"] == "mismatch"]
    lines += timing_section(launched)
    lines += ["", "## Per module", "", "| module | tests | kernels | match | seconds |", "|---|---|---|---|---|"]
    per = collections.defaultdict(lambda: [0, 0])
    for r in launched:
        per[r["module"]][0] += 1
        per[r["module"]][1] += r["status"] == "match"
    for s in sorted(summaries, key=lambda s: s["module"]):
        k, m = per.get(s["module"], [0, 0])
        note = f" ({s['import_error'][:60]})" if "import_error" in s else ""
        lines.append(f"| {s['module']}{note} | {s.get('tests', '-')} | {k} | {m} | {s.get('seconds', '-')} |")
    return "\n".join(lines) + "\n", rate


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pydevice", nargs="?")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--cases", help="folder for the captured cases (default: a temporary one)")
    ap.add_argument("--modules", help="comma-separated modules (default: MODULES)")
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 2))
    ap.add_argument("--module-timeout", type=int, default=150)
    ap.add_argument("--kernel-timeout", type=int, default=30)
    ap.add_argument("--budget", type=int, default=330, help="seconds for both phases together")
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--cpu", action="store_true",
                    help="replay on pydevice's CPU back end (`pydevice run --cpu`); with "
                         "NUMBA_ENABLE_CUDASIM=1 the references are the simulator's")
    ap.add_argument("--bench", type=int, default=0,
                    help="with --cpu: time N more launches of each kernel (median reported)")
    ap.add_argument("--replay-only", action="store_true",
                    help="reuse the cases already captured in --cases (phase 2 only)")
    ap.add_argument("--keep", help="a .tar.gz to keep the cases that did not match in")
    ap.add_argument("--report", default=os.path.join(os.environ.get("OUT", "."), "numba_suite.md"))
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "numba_suite.json"))
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.cases)
        return
    if not args.pydevice:
        ap.error("PYDEVICE is required")
    if args.pydevice.endswith(".whl.xz"):  # the bundle's wheel, which carries the CLI
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from carry_cli import install

        work = tempfile.mkdtemp(prefix="numba_suite_bin_")
        args.pydevice = install(work, str(Path(args.pydevice).resolve().parent))
    elif args.pydevice.endswith(".xz"):  # a compressed CLI binary
        import lzma
        exe = Path(tempfile.mkdtemp(prefix="numba_suite_bin_")) / "pydevice"
        with lzma.open(args.pydevice) as src, open(exe, "wb") as dst:
            shutil.copyfileobj(src, dst)
        exe.chmod(0o755)
        args.pydevice = str(exe)
    cases = Path(args.cases or tempfile.mkdtemp(prefix="numba_suite_"))
    if args.replay_only:
        if not args.cases or not cases.is_dir():
            ap.error("--replay-only needs --cases DIR holding a capture")
    else:
        if cases.exists():
            shutil.rmtree(cases)
        cases.mkdir(parents=True)
    modules = args.modules.split(",") if args.modules else MODULES
    env = dict(os.environ, NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS="0", NUMBA_DISABLE_PERFORMANCE_WARNINGS="1",
               PYTHONWARNINGS="ignore")
    t0 = time.time()

    def run_module(m):
        left = args.budget * 0.6 - (time.time() - t0)
        if left < 10:
            return f"{m}: skipped (time budget)"
        try:
            p = subprocess.run([sys.executable, __file__, "--worker", m, "--cases", str(cases)], env=env,
                               capture_output=True, text=True, timeout=min(args.module_timeout, left))
            return f"{m}: exit {p.returncode}" + (f"\n{p.stderr[-800:]}" if p.returncode else "")
        except subprocess.TimeoutExpired:
            return f"{m}: timed out"
    if not args.replay_only:
        with futures.ThreadPoolExecutor(args.jobs) as pool:
            for line in pool.map(run_module, modules):
                print(line, flush=True)
    t1 = time.time()
    summaries = [json.loads(p.read_text()) for p in cases.glob("summary-*.json")]
    done = {s["module"] for s in summaries}
    for m in modules:
        if m not in done:
            summaries.append({"module": m, "import_error": "no summary: timed out, crashed or skipped"})
    case_dirs = sorted(p for p in cases.iterdir() if p.is_dir() and (p / "meta.json").exists())
    print(f"captured {len(case_dirs)} kernel launches in {t1 - t0:.0f} s", flush=True)

    def one(c):
        if time.time() - t0 > args.budget:
            return {"case": c.name, "status": "crash", "detail": "not run: time budget spent",
                    **{k: json.loads((c / "meta.json").read_text()).get(k) for k in ("module", "test", "kernel")}}
        try:
            return replay(c, args.pydevice, args.compile_only, args.kernel_timeout, args.cpu, args.bench)
        except Exception as e:
            return {"case": c.name, "status": "crash", "detail": f"harness: {type(e).__name__}: {e}",
                    "module": "?", "test": "?", "kernel": "?"}
    with futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(one, case_dirs))
    t2 = time.time()
    try:
        from importlib.metadata import version
        nv = version("numba-cuda")
    except Exception:
        nv = "?"
    text, rate = report(results, summaries, args, (t1 - t0, t2 - t1), nv)
    print(text)
    Path(args.report).write_text(text)
    Path(args.json).write_text(json.dumps({"results": results, "summaries": summaries}, indent=1))
    if args.keep:  # the cases that did not match, for a closer look (at most about 12 MB)
        import tarfile
        total = 0
        with tarfile.open(args.keep, "w:gz") as tar:
            for r in results:
                c = cases / r["case"]
                if r["status"] in ("mismatch", "crash", "run error") and c.is_dir():
                    size = sum(f.stat().st_size for f in c.iterdir())
                    if total + size < 12 << 20:
                        tar.add(c, arcname=c.name)
                        total += size


if __name__ == "__main__":
    main()
