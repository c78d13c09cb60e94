"""The CPU-only part of the Python tests: decorators, compiling to PTX, reflection, host
calls of @func, errors with real line numbers, the ABI and wrong arguments. No GPU needed."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import pydevice
from cuda import device

import kernels as K

F32C = "float32[::1]"


class FakeCAI:
    """A device array description without memory: enough to type and specialize a kernel."""

    def __init__(self, shape, dtype="float32", strides=None, ptr=0x7F0000000000):
        dt = np.dtype(dtype)
        self.__cuda_array_interface__ = {
            "shape": tuple(shape),
            "typestr": dt.str,
            "descr": dt.descr,
            "data": (ptr, False),
            "strides": strides,
            "version": 3,
        }


def load_module(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, str(path)


# --- the namespace --------------------------------------------------------------------------

def test_cuda_device_is_a_namespace_portion():
    import cuda

    # PEP 420: `cuda` has no __init__.py of ours, so cuda.core / cuda.bindings can live beside it.
    assert getattr(cuda, "__file__", None) is None
    assert hasattr(cuda, "__path__")
    assert device.kernel is pydevice.kernel and device.launch is pydevice.launch
    assert device.machine_representation() == "itanium"


def test_cuda_core_and_bindings_import_beside_cuda_device():
    pytest.importorskip("cuda.core", reason="cuda-python's cuda.core is not installed")
    import cuda
    import cuda.bindings.driver  # noqa: F401
    import cuda.core
    import cuda.device

    assert cuda.device.launch is device.launch
    assert hasattr(cuda.core, "Device")


def test_device_only_names_raise_on_the_host():
    with pytest.raises(TypeError, match="device code"):
        device.tid(1)
    with pytest.raises(TypeError, match="device code"):
        device.syncthreads()


# --- decorators -----------------------------------------------------------------------------

def test_decorators_return_objects_with_underlying():
    assert K.vec_add.underlying.__name__ == "vec_add"
    assert K.recip.underlying(4.0) == 0.25  # the plain Python function
    assert K.diff.interop and not K.recip.interop
    assert K.point.underlying.__name__ == "point"
    assert K.complex._align == 16
    p = K.Particle(1.0, 2.0)
    assert (p.x, p.y) == (1.0, 2.0)
    assert K.Particle(y=2.0, x=1.0) == p
    with pytest.raises(AttributeError):
        p.x = 3.0  # heterogeneous structs are immutable


def test_unknown_keywords_raise_at_decoration_time():
    with pytest.raises(TypeError, match="unknown keyword argument 'link_me'"):
        device.kernel(link_me=["x.cu"])
    with pytest.raises(TypeError, match="unknown keyword"):
        device.func(max_threads=128)
    with pytest.raises(TypeError, match="unknown keyword"):
        device.struct(packed=True)
    from pydevice.numba import cuda

    with pytest.raises(TypeError, match="unknown keyword"):
        cuda.jit(nonsense=True)
    with pytest.raises(ValueError, match="power of two"):
        device.struct(align=3)
    # the spec's own keywords are accepted
    assert callable(device.kernel(interop=True)) and callable(device.func(interop=True))
    # pydevice's kernel options (§12)
    assert callable(device.kernel(wraparound=False, assertions=False, bounds_check=True))
    assert callable(device.struct(align=16))


def test_kernels_cannot_be_called_on_the_host():
    with pytest.raises(TypeError, match="device.launch"):
        K.vec_add(1, 2, 3)


# --- compile and reflection -----------------------------------------------------------------

def test_ptx_for_types_and_for_example_arguments():
    ptx = K.vec_add.ptx(types=[F32C] * 3)
    assert ".visible .entry vec_add(" in ptx and ".target sm_90" in ptx
    fake = FakeCAI((1024,))
    assert K.vec_add.ptx(fake, fake, fake) == ptx
    assert ".target sm_80" in K.vec_add.ptx(types=[F32C] * 3, arch="sm_80")


def test_compile_ptx_llvm_and_typed_ir():
    ptx = device.compile_ptx(K.vec_add, "void(float64[::1], float64[::1], float64[::1])")
    assert "ld.global.f64" in ptx or "ld.global.nc.f64" in ptx
    llvm = K.vec_add.llvm_ir(types=[F32C] * 3)
    assert "define" in llvm and "vec_add" in llvm
    ir = K.vec_add.typed_ir(types=[F32C] * 3)
    assert ir.startswith("kernel vec_add(a: float32[::1], b: float32[::1], c: float32[::1])")


def test_strided_arrays_specialize_as_any_layout():
    strided = FakeCAI((8,), strides=(8,))
    ir = K.vec_add.typed_ir(strided, strided, strided)
    assert "a: float32[:]" in ir
    two_d = FakeCAI((4, 4))
    assert "m: float32[:, ::1]" in K.scale2d.typed_ir(two_d, np.float32(2))
    fortran = FakeCAI((4, 4), strides=(4, 16))
    assert "m: float32[::1, :]" in K.scale2d.typed_ir(fortran, 2.0)


def test_abi_as_python_data():
    abi = K.all_kinds.abi(FakeCAI((4,)), 1, 2.0, (1, 2.0), device.float32x3(1, 2, 3),
                          K.Particle(1.0, 2.0), K.point(1, 2, 3), K.complex(1.0, 2.0))
    assert abi["symbol"] == "all_kinds"
    params = {p["name"]: p for p in abi["params"]}
    assert params["out"]["cxx"] == "cuda::interoperable_array_descriptor<float, 1>"
    assert (params["out"]["size"], params["out"]["align"]) == (24, 8)
    assert params["n"]["type"] == "int32" and params["f"]["type"] == "float32"  # spec typing
    assert (params["t"]["size"], params["t"]["align"]) == (8, 4)
    assert (params["v"]["size"], params["v"]["align"]) == (12, 4)  # float3
    assert (params["p"]["size"], params["q"]["size"]) == (8, 12)
    assert (params["c"]["size"], params["c"]["align"]) == (16, 16)  # @struct(align=16)
    assert [f["name"] for f in params["p"]["fields"]] == ["x", "y"]


def test_numpy_scalars_keep_their_dtype():
    fake = FakeCAI((4,))
    ir = K.all_kinds.typed_ir(fake, np.int64(1), np.float64(2), (np.int8(1), np.float16(2)),
                              device.float32x3(1, 2, 3), K.Particle(1.0, 2.0), K.point(1, 2, 3),
                              K.complex(1.0, 2.0))
    assert "n: int64" in ir and "f: float64" in ir and "t: tuple[int8, float16]" in ir


def test_header_of_a_module():
    h = device.header(K.diff)
    assert "struct alignas(16) complex" in h
    assert "struct point" in h


def test_dialect_modules_compile_with_only_their_import_changed():
    import numba_dialect as N
    import cupyx_dialect as C

    f64 = FakeCAI((16,), "float64")
    ir = N.axpy.typed_ir(f64, 2.0, f64, f64)
    assert "a: float64" in ir  # numba types a Python float as float64
    assert ".entry axpy(" in N.axpy.ptx(f64, 2.0, f64, f64)
    assert ".entry copy(" in N.copy.ptx(f64, f64)
    assert N.sq(3.0) == 9.0  # a numba device function, called on the host
    f32 = FakeCAI((16,))
    assert ".entry elementwise_copy(" in C.elementwise_copy.ptx(f32, f32, 16)


def test_globals_are_read_at_compile_time(tmp_path):
    mod, _ = load_module(tmp_path, "late_globals", """
        from cuda import device
        import numpy as np
        FACTOR = int(np.sqrt(49.0))  # not a literal: computed when the module runs

        @device.func
        def times(x):
            return x * FACTOR
    """)
    assert mod.times(3) == 21


# --- host calls of @func --------------------------------------------------------------------

def test_host_calls_with_scalars_tuples_structs_and_arrays():
    assert K.recip(2.0) == 0.5
    assert K.recip(4) == 0.25
    assert K.diff(3, 5) == 2
    assert K.hyp(3.0, 4.0) == 5.0
    assert K.swap((1, 2.5)) == (2.5, 1)
    assert K.norm2(K.Particle(3.0, 4.0)) == 25.0
    moved = K.moved(K.Particle(1.0, 2.0), 0.5)
    assert isinstance(moved, K.Particle) and moved == K.Particle(1.5, 1.5)
    assert K.scaled(np.int64(5)) == 15
    a = np.arange(5, dtype=np.float32)
    assert K.total_and_clear(a) == 10.0
    assert not a.any()  # what the function stored is copied back
    assert isinstance(K.recip(np.float32(8)), float)


def test_host_call_float32_semantics():
    # cuda.device's float is float32: 1/3 rounds to float32.
    assert K.recip(3.0) == float(np.float32(1) / np.float32(3))
    assert K.recip(np.float64(3.0)) == 1 / 3


def test_wrong_argument_to_annotated_function():
    with pytest.raises(TypeError, match=r"parameter `p`.*expected Particle, given tuple\[float32, float32\]"):
        K.norm2((1.0, 2.0))


# --- errors ---------------------------------------------------------------------------------

def test_compile_error_points_at_the_real_file_and_line(tmp_path):
    mod, path = load_module(tmp_path, "broken_kernel", """
        from cuda import device
        import numpy as np


        # a comment, so that the kernel is not at the top

        @device.kernel
        def broken(a):
            i = device.tid(1)
            a[i] = undefined_name + 1
    """)
    with pytest.raises(device.CompileError) as info:
        mod.broken.ptx(types=[F32C])
    e = info.value
    assert len(e.diagnostics) == 1
    d = e.diagnostics[0]
    assert (d.code, d.file, d.line, d.column) == ("E0101", path, 11, 12)
    assert "undefined_name" in d.message
    assert f"--> {path}:11:12" in str(e)
    assert "a[i] = undefined_name + 1" in e.rendered


def test_nested_kernel_keeps_its_line_numbers(tmp_path):
    mod, path = load_module(tmp_path, "nested", """
        from cuda import device

        def make():
            @device.kernel
            def inner(a):
                a[0] = nope
            return inner
    """)
    with pytest.raises(device.CompileError) as info:
        mod.make().ptx(types=[F32C])
    assert (info.value.diagnostics[0].line, info.value.diagnostics[0].file) == (7, path)


def test_nested_kernel_with_a_local_import_compiles(tmp_path):
    # A kernel defined inside a function that imports `device` itself (as tests and
    # benchmarks do): the import moves to the top level with the kernel.
    mod, _ = load_module(tmp_path, "nested_import", """
        def make():
            from cuda import device

            @device.kernel
            def inner(a, b):
                i = device.tid(1)
                if i < len(a):
                    b[i] = a[i] * 2.0
            return inner
    """)
    ptx = mod.make().ptx(types=[F32C, F32C])
    assert ".entry inner" in ptx


def test_wrong_arguments_name_parameter_expected_and_given():
    with pytest.raises(TypeError, match=r"argument 1 \(parameter `b`\).*builtins\.str"):
        device.launch(K.vec_add, FakeCAI((4,)), "no", FakeCAI((4,)), grid=1, block=4)
    with pytest.raises(TypeError, match=r"parameter `a`.*expected float32\[::1\], given float64\[::1\]"):
        device.launch(K.annotated, FakeCAI((4,), "float64"), 4, grid=1, block=4)
    with pytest.raises(TypeError, match=r"parameter `a`.*expected float32\[::1\], given float32\[:\]"):
        device.launch(K.annotated, FakeCAI((4,), strides=(8,)), 4, grid=1, block=4)
    with pytest.raises(TypeError, match=r"parameter `n`.*expected int32, given float32"):
        device.launch(K.annotated, FakeCAI((4,)), 4.5, grid=1, block=4)
    with pytest.raises(TypeError, match="takes 2 arguments, 1 given"):
        device.launch(K.annotated, FakeCAI((4,)), grid=1, block=4)
    with pytest.raises(TypeError, match="expected a @kernel"):
        device.launch(print, grid=1, block=1)


@pytest.mark.skipif(pydevice.driver_available(), reason="checks the no-driver error")
def test_launch_without_a_driver_is_an_exception():
    with pytest.raises(device.NoDriverError):
        device.launch(K.vec_add, FakeCAI((4,)), FakeCAI((4,)), FakeCAI((4,)), grid=1, block=4)


def test_error_classes():
    assert issubclass(device.BoundsError, IndexError)
    assert issubclass(device.ArgumentError, TypeError)
    for cls in (device.CompileError, device.LaunchError, device.DeviceFault, device.BoundsError):
        assert issubclass(cls, device.PydeviceError)
    assert len({device.LaunchError, device.DeviceFault, device.BoundsError}) == 3


# --- caching and threads --------------------------------------------------------------------

def test_compiles_from_eight_threads(tmp_path):
    mod, _ = load_module(tmp_path, "threaded", """
        from cuda import device

        @device.kernel
        def add_one(a):
            i = device.tid(1)
            if i < len(a):
                a[i] += 1
    """)
    dtypes = ["float32", "float64", "int32", "int64"]
    results = {}

    def work(n):
        dt = dtypes[n % 4]
        results[n] = mod.add_one.ptx(FakeCAI((8,), dt))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8
    for n in range(4):
        assert results[n] == results[n + 4]


def test_disk_cache_is_shared_across_processes(tmp_path):
    src = tmp_path / "cached.py"
    src.write_text("from cuda import device\n\n@device.kernel\ndef k(a):\n    a[0] = 1.0\n")
    script = (
        "import sys, pydevice; sys.path.insert(0, sys.argv[1]); import cached; "
        "cached.k.ptx(types=['float32[::1]']); print(pydevice.cache_stats())"
    )
    env = dict(os.environ, PYDEVICE_CACHE_DIR=str(tmp_path / "cache"))
    outs = [
        subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True,
                       text=True, check=True).stdout
        for _ in range(2)
    ]
    first = eval(outs[0])  # noqa: S307 (our own dict repr)
    second = eval(outs[1])  # noqa: S307
    assert first["disk_writes"] == 1 and first["compiles"] == 1
    assert second["disk_hits"] == 1 and second["compiles"] == 0
    assert any((tmp_path / "cache").iterdir())


def test_ranks_started_together_compile_each_kernel_once_per_node(tmp_path):
    """Issue 36: processes started at once with one PYDEVICE_CACHE_DIR (the ranks of a job on
    one node) compile a kernel once; the others wait for that compile and load its entry."""
    src = tmp_path / "ranked.py"
    src.write_text("from cuda import device\n\n@device.kernel\ndef k(a, b):\n"
                   "    i = device.tid(1)\n    if i < a.shape[0]:\n        a[i] = a[i] * b[i] + 1.0\n")
    go = tmp_path / "go"
    script = (
        "import os, sys, time, pydevice; sys.path.insert(0, sys.argv[1]); import ranked\n"
        "while not os.path.exists(sys.argv[2]): time.sleep(0.001)\n"
        "ranked.k.ptx(types=['float32[::1]', 'float32[::1]']); print(pydevice.cache_stats())"
    )
    env = dict(os.environ, PYDEVICE_CACHE_DIR=str(tmp_path / "cache"))
    ranks = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), str(go)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(6)]
    time.sleep(1.0)  # every rank imported pydevice and is waiting
    go.write_text("")
    stats = []
    for p in ranks:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        stats.append(eval(out))  # noqa: S307 (our own dict repr)
    assert sum(s["compiles"] for s in stats) == 1, stats
    assert sum(s["disk_hits"] for s in stats) == len(ranks) - 1, stats
    assert all(s["disk_ignored"] == 0 and s["disk_write_errors"] == 0 for s in stats), stats


def test_host_call_out_of_range_is_a_bounds_error(tmp_path):
    mod, _ = load_module(tmp_path, "host_oob", """
        from cuda import device

        @device.func
        def at(a, i):
            return a[i]
    """)
    a = np.arange(4, dtype=np.float32)
    assert mod.at(a, 2) == 2.0
    with pytest.raises(device.BoundsError) as info:
        mod.at(a, 7)
    assert info.value.line == 6


# --- cuda.device.random on the host ----------------------------------------------------------

RANDOM_SRC = """
from cuda import device
from cuda.device import random
from cuda.device.random import randn


@device.func
def each(k: int, which: int) -> device.float64:
    for _ in range(k):
        random.rand()
    if which == 0:
        return device.float64(random.rand())
    if which == 1:
        return random.rand(device.float64)
    if which == 2:
        return device.float64(randn())
    return randn(device.float64)
"""


def test_host_random_numbers_match_an_independent_python_reference(tmp_path):
    import philox_ref as R

    mod, _ = load_module(tmp_path, "rnd_host", RANDOM_SRC)
    refs = [R.rand32, R.rand64, R.randn32, R.randn64]
    for seed, thread in [(0, 0), (42, 7), (2**64 - 1, 2**40 + 3)]:
        for k in (0, 1, 5):
            for which in range(4):
                device.random.seed(seed, thread)
                got = mod.each(k, which)
                assert got == refs[which](seed, thread, k), (seed, thread, k, which)
    # The Python-level names exist for imports and refuse to run outside compiled code.
    with pytest.raises(TypeError):
        device.random.rand()


def test_constexpr_parameters_are_compile_time_values():
    from pydevice.errors import CompileError

    m = K.window_scale._mod()
    assert K.window_scale._const == ["width", "scale"]
    assert K.window_scale._params == ["a", "out"]
    t = ["float32[::1]", "float32[::1]"]
    p3 = m.compile("window_scale", t, "sm_90", 3, [("width", 3), ("scale", 2.0)]).ptx
    p5 = m.compile("window_scale", t, "sm_90", 3, [("width", 5), ("scale", 2.0)]).ptx
    assert p3 != p5
    with pytest.raises(CompileError, match="E0218"):
        m.compile("window_scale", t, "sm_90", 3, [("width", 2.5), ("scale", 2.0)])


def test_constexpr_parameters_of_a_func_called_on_the_host():
    @device.func
    def times(x, k: device.ConstExpr[int]):
        return x * k

    assert times(3, 4) == 12
    assert times(3, 5) == 15
    assert times(2.5, 2) == 5.0
    with pytest.raises(TypeError, match="ConstExpr"):
        times(3, "4")


# ---------------------------------------------------------------------------------------
# Which GPU a launch runs on, decided without a GPU: real CuPy arrays over memory that is
# never touched (CuPy's UnownedMemory says which device; no driver call), and dry-run
# launchers (everything but the driver call). The GPU tests (test_multi_gpu.py) check the
# same on real GPUs.


def _cupy_on(cupy, dev, base, n=64):
    from cupy.cuda import memory

    mem = memory.UnownedMemory(base, n * 4, None, device_id=dev)
    return cupy.ndarray((n,), dtype=np.float32, memptr=memory.MemoryPointer(mem, 0))


@device.kernel
def _placed(a, b):
    i = device.tid(1)
    if i < len(a):
        a[i] = b[i]


def test_the_launch_gpu_follows_the_stream_then_the_arrays():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    from pydevice import _core

    a0 = _cupy_on(cupy, 0, 0x7F0000000000)
    b0 = _cupy_on(cupy, 0, 0x7F0000010000)
    a1 = _cupy_on(cupy, 1, 0x7F0000020000)
    keys = tuple(_core._describe(x)[0] for x in (a0, b0))
    # The arrays decide; a stream's GPU comes first; nothing known: the default device.
    assert _core._launch_device(_placed, (a0, b0), keys, None) == 0
    assert _core._launch_device(_placed, (a1, a1), (_core._describe(a1)[0],) * 2, None) == 1
    assert _core._launch_device(_placed, (1, 2), (("i",), ("i",)), None) == _core._default_device()
    assert _core._launch_device(_placed, (a0, 2), (keys[0], ("i",)), None) == 0
    # Managed memory (no GPU) is placed anywhere.
    managed = ("A", np.dtype("float32"), 1, "C", None)
    assert _core._launch_device(_placed, (a0, a0), (managed, managed), 3) == 3
    with pytest.raises(pydevice.DeviceMismatchError, match=r"parameter `b`\) is on GPU 1, but the launch runs on GPU 0") as e:
        _core._launch_device(_placed, (a0, a1), (keys[0], _core._describe(a1)[0]), None)
    assert (e.value.found, e.value.launch) == (1, 0)
    with pytest.raises(pydevice.DeviceMismatchError, match="its stream is on GPU 1"):
        _core._launch_device(_placed, (a0, b0), keys, 1)

    # Through device.launch: a dry-run launcher for GPU 0 in both paths.
    m = _placed._mod()
    launcher = m.compile("_placed", _placed._types_of_keys(keys, (a0, b0), m), "sm_90", 3).dry_run_launcher(0)
    _placed._specs[(keys, 0)] = _core._Specialization(None, launcher, ())
    assert _placed._dispatcher.insert((a0, b0), launcher)
    assert _placed._dispatcher.try_launch((a0, b0), 1, 64, None)  # the fast path takes it
    assert _placed._dispatcher.try_launch((a0, b0), (1, 1), (64,), 0)
    device.launch(_placed, a0, b0, grid=1, block=64)
    # Arrays of two GPUs: the fast path declines, the Python path names both GPUs.
    assert not _placed._dispatcher.try_launch((a0, a1), 1, 64, None)
    for _ in range(2):
        with pytest.raises(pydevice.DeviceMismatchError, match="GPU 1.*GPU 0"):
            device.launch(_placed, a0, a1, grid=1, block=64)
    # The same kinds on GPU 1 are another specialization (not GPU 0's launcher).
    assert not _placed._dispatcher.try_launch((a1, a1), 1, 64, None)
    with pytest.raises(ValueError, match="dry-run launcher has no GPU"):
        launcher.attributes()


# --- complex numbers on the host, Atomic objects (issue 17) ---------------------------------

def test_host_calls_with_complex_numbers(tmp_path):
    mod, _ = load_module(tmp_path, "host_complex", """
        import cmath
        from cuda import device
        from cuda.device import complex64, complex128


        @device.func
        def mix(z: complex128, w: complex128):
            return (z * w - z / (w + 1.0), cmath.exp(z) + cmath.atanh(w * 0.5), abs(z), z.conjugate())


        @device.func
        def twice(z: complex64):
            return z + z
    """)
    import cmath
    z, w = complex(0.3, -1.7), complex(-2.5, 0.75)
    a, b, m, c = mod.mix(z, w)
    assert a == z * w - z / (w + 1.0)
    assert abs(b - (cmath.exp(z) + cmath.atanh(w * 0.5))) < 1e-13
    assert m == abs(z) and c == z.conjugate()
    assert isinstance(a, complex)
    # complex64: the parts round to float32.
    t = mod.twice(complex(0.1, -0.2))
    assert t == complex(np.complex64(complex(0.1, -0.2)) * 2)


def test_atomic_objects_compile_to_shared_and_plain_local_accesses(tmp_path):
    mod, _ = load_module(tmp_path, "atomic_objects", """
        from cuda import device
        from cuda.device import float32, int32


        @device.kernel
        def hist(data, out):
            bins = device.shared_array(8, device.Atomic(float32))
            mine = device.Atomic(int32)
            t = device.thread_idx.x
            if t < 8:
                bins[t].store(0.0, memory='relaxed', scope='block')
            device.syncthreads()
            i = device.tid(1)
            if i < len(data):
                bins[i % 8].add(data[i], memory='relaxed', scope='block')
                mine.add(1)
            device.syncthreads()
            if t < 8:
                device.atomic_ref(out, t).add(bins[t].load(memory='relaxed', scope='block') + float32(mine.load()))
    """)
    ptx = device.compile_ptx(mod.hist, "void(float32[::1], float32[::1])")
    assert "atom.relaxed.cta.shared.add.f32" in ptx
    # `mine` belongs to the thread: its add is a plain local update, so the only atomics are
    # the shared histogram's add and the global one (the seq_cst default: fence + atom).
    atoms = [line for line in ptx.splitlines() if "atom." in line]
    assert len(atoms) == 2, atoms
    assert "global.add.f32" in atoms[1]


def test_assigning_an_atomic_object_is_a_compile_error(tmp_path):
    mod, _ = load_module(tmp_path, "atomic_assign", """
        from cuda import device
        from cuda.device import int32


        @device.kernel
        def k(a):
            c = device.Atomic(int32)
            c = 3
            a[0] = c.load()
    """)
    with pytest.raises(Exception, match="E0260"):
        device.compile_ptx(mod.k, "void(int32[::1])")
