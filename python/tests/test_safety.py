"""The Python API used carelessly or hostilely (issue 37): host calls on aliasing and
read-only NumPy arrays, decorator options given from Python, ElementwiseKernel outputs of
another dtype and overlapping operands, unchecked array descriptors, argument conversion
and its errors, pathological tuples, and a refused cache directory. No GPU needed, but for
the tests that take the `gpu` fixture (they skip without one, saying so)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pydevice
from cuda import device

from test_cpu import FakeCAI, load_module


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    m, _ = load_module(tmp_path_factory.mktemp("safety"), "safety_funcs", """
        from cuda import device
        from cuda.device import uint32, float64


        @device.func
        def add_into(a, b):
            for i in range(a.shape[0]):
                a[i] = a[i] + b[i]


        @device.func
        def copy_into(dst, src):
            for i in range(dst.shape[0]):
                dst[i] = src[i]


        @device.func
        def total(a):
            s = float64(0.0)
            for i in range(a.shape[0]):
                s += a[i]
            return s


        @device.func
        def total2(a):
            s = float64(0.0)
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    s += a[i, j]
            return s


        @device.func
        def fill2(a, v):
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    a[i, j] = v


        @device.func
        def set_first(a, v):
            a[0] = v


        @device.func
        def set_first_through_callee(a, v):
            set_first(a, v)


        @device.func
        def total_through_callee(a):
            return total(a)


        @device.func
        def set_first_through_local(a, v):
            b = a
            b[0] = v


        @device.func
        def set_first_of_view(a, v):
            b = a[1:]
            b[0] = v


        @device.func
        def first_of_pair(t):
            return t[0][0]


        @device.func
        def next_u32(x: uint32) -> uint32:
            return x + 1


        @device.func
        def half(x: float) -> float:
            return x / 2


        @device.func
        def half64(x: float64) -> float64:
            return x / 2


        @device.func
        def sum_pair(t):
            return t[0] + t[1]
    """)
    return m


# --- 1. aliasing: host calls see the arguments' own memory --------------------------------

def test_one_array_passed_twice_sees_its_own_stores(mod):
    x = np.arange(6, dtype=np.float64)
    mod.add_into(x, x)
    assert x.tolist() == [2.0 * i for i in range(6)]


def test_overlapping_views_see_each_others_stores(mod):
    x = np.arange(6, dtype=np.float64)
    expect = x.copy()
    for i in range(5):  # the same loop in Python: each store is seen by the next load
        expect[1:][i] = expect[:-1][i]
    mod.copy_into(x[1:], x[:-1])
    assert x.tolist() == expect.tolist() == [0.0] * 6


def test_strided_and_reversed_views_are_passed_in_place(mod):
    x = np.arange(12, dtype=np.float32)
    mod.set_first(x[::-3], 100.0)
    assert x[11] == 100.0
    y = np.arange(12, dtype=np.float64).reshape(3, 4).T  # F-contiguous
    mod.fill2(y[:, ::2], 7.0)
    assert (y[:, ::2] == 7.0).all() and (y[:, 1] == [4.0, 5.0, 6.0, 7.0]).all()
    assert mod.total2(np.arange(6, dtype=np.float64).reshape(2, 3)[:, ::-1]) == 15.0


def test_unaligned_field_views_are_copied_and_written_back(mod):
    rec = np.zeros(4, dtype=np.dtype([("a", "f8"), ("b", "i1")], align=False))  # itemsize 9
    col = rec["a"]
    assert col.strides[0] % col.itemsize != 0
    mod.set_first(col, 2.5)
    assert rec["a"].tolist() == [2.5, 0.0, 0.0, 0.0]
    # A copy that shares memory with another argument could not see its stores: refused.
    raw = rec.view(np.uint8)
    with pytest.raises(pydevice.ArgumentError, match="shares memory with argument 1"):
        mod.add_into(col, raw)


def test_tuple_of_arrays_is_passed_in_place(mod):
    x = np.array([3.0, 4.0])
    assert mod.first_of_pair((x, x)) == 3.0


# --- 2. read-only arrays ------------------------------------------------------------------

def test_store_into_read_only_array_raises_as_numpy_does(mod):
    x = np.zeros(4)
    x.setflags(write=False)
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        mod.set_first(x, 1.0)
    assert x[0] == 0.0
    b = np.broadcast_to(np.arange(3.0), (4, 3))
    with pytest.raises(ValueError, match="read-only"):
        mod.fill2(b, 1.0)
    for f in (mod.set_first_through_callee, mod.set_first_through_local, mod.set_first_of_view):
        with pytest.raises(ValueError, match="parameter `a`"):
            f(x, 1.0)


def test_reading_a_read_only_array_is_allowed(mod):
    x = np.arange(4.0)
    x.setflags(write=False)
    assert mod.total(x) == 6.0
    assert mod.total_through_callee(x) == 6.0
    assert mod.total2(np.broadcast_to(np.arange(3.0), (4, 3))) == 12.0


def test_the_abi_says_which_parameters_are_only_read(tmp_path):
    m, _ = load_module(tmp_path, "ro_kernels", """
        from cuda import device

        @device.func
        def put(o, i, v):
            o[i] = v

        @device.kernel
        def axpy(a, x, y, out):
            i = device.tid(1)
            if i < out.shape[0]:
                put(out, i, a * x[i] + y[i])
    """)
    abi = m.axpy.abi(2.0, FakeCAI((8,)), FakeCAI((8,)), FakeCAI((8,)))
    assert abi["read_only"] == [1, 2]


class ReadOnly:
    """A CUDA Array Interface view of an array, flagged read-only (``data=(p, True)``)."""

    def __init__(self, a):
        cai = dict(a.__cuda_array_interface__)
        cai["data"] = (cai["data"][0], True)
        self.__cuda_array_interface__ = cai
        self.keep = a


@pytest.mark.gpu_only('the CUDA Array Interface of device arrays')
def test_read_only_cai_is_refused_where_the_kernel_stores(real_gpu, cupy, tmp_path):
    # The CUDA Array Interface's read-only flag: host arrays on the CPU back end have none.
    m, _ = load_module(tmp_path, "ro_cai", """
        from cuda import device

        @device.kernel
        def copy(x, out):
            i = device.tid(1)
            if i < out.shape[0]:
                out[i] = x[i]
    """)
    x = cupy.arange(8, dtype=cupy.float32)
    out = cupy.zeros(8, dtype=cupy.float32)
    device.launch(m.copy, ReadOnly(x), out, grid=1, block=8)  # read-only input: fine
    device.synchronize()
    assert out.get().tolist() == list(range(8))
    with pytest.raises(ValueError, match="read-only"):
        device.launch(m.copy, x, ReadOnly(out), grid=1, block=8)
    # An ElementwiseKernel output flagged read-only is refused too.
    k = pydevice.ElementwiseKernel("float32 x", "float32 z", "z = x + 1", "ro_out")
    with pytest.raises(ValueError, match="output 0 is read-only"):
        k(x, ReadOnly(out))


def test_kernel_on_read_only_host_arrays_is_refused_where_it_stores(gpu, tmp_path):
    m, _ = load_module(tmp_path, "ro_host", """
        from cuda import device

        @device.kernel
        def copy(x, out):
            i = device.tid(1)
            if i < out.shape[0]:
                out[i] = x[i]
    """)
    x = np.arange(8, dtype=np.float32)
    x.setflags(write=False)
    out = np.zeros(8, dtype=np.float32)
    device.launch(m.copy, x, out, grid=1, block=8)
    assert out.tolist() == list(range(8))
    out.setflags(write=False)
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        device.launch(m.copy, x, out, grid=1, block=8)
    # One host array twice: each would get its own device copy, so it is refused.
    y = np.arange(8, dtype=np.float32)
    with pytest.raises(pydevice.ArgumentError, match="share memory"):
        device.launch(m.copy, y[:-1], y[1:], grid=1, block=8)


# --- 3. decorator options given from Python ------------------------------------------------

def test_kernel_options_given_from_python_reach_the_compiler(tmp_path):
    m, _ = load_module(tmp_path, "opts_py", """
        from cuda import device

        @device.kernel
        def k(a):
            a[0] = 1.0


        def plain(a):
            a[0] = 2.0
    """)
    k64 = device.kernel(max_threads=64)(m.k.underlying)
    assert ".maxntid 64, 1, 1" in k64.ptx(types=["float32[::1]"])
    assert ".maxntid" not in m.k.ptx(types=["float32[::1]"])
    kp = device.kernel(max_threads=128, min_blocks=2)(m.plain)
    ptx = kp.ptx(types=["float32[::1]"])
    assert ".maxntid 128, 1, 1" in ptx and ".minnctapersm 2" in ptx


def test_options_from_python_merge_with_the_sources_and_keep_line_numbers(tmp_path):
    m, path = load_module(tmp_path, "opts_merge", """
        from cuda import device

        @device.kernel(
            fastmath=True,
        )
        def k(a):
            a[0] = 1.0


        def broken(a):
            a[0] = not_defined
    """)
    k32 = device.kernel(fastmath=True, max_threads=32)(m.k.underlying)
    assert ".maxntid 32, 1, 1" in k32.ptx(types=["float32[::1]"])
    kb = device.kernel(max_threads=32)(m.broken)
    with pytest.raises(pydevice.CompileError) as info:
        kb.ptx(types=["float32[::1]"])
    assert f"{path}:12:" in str(info.value)


def test_numba_jit_options_given_from_python_reach_the_compiler(tmp_path):
    m, _ = load_module(tmp_path, "opts_numba", """
        from pydevice.numba import cuda


        @cuda.jit
        def k(a):
            a[0] = 1.0


        @cuda.jit("void(float32[::1])")
        def ks(a):
            a[0] = 2.0


        def plain(a):
            a[0] = 3.0
    """)
    from pydevice.numba import cuda

    t = ["float32[::1]"]
    assert ".maxnreg 32" in cuda.jit(max_registers=32)(m.k.underlying).ptx(types=t)
    assert ".maxnreg" not in m.k.ptx(types=t)
    assert ".maxnreg 40" in cuda.jit("void(float32[::1])", max_registers=40)(m.ks.underlying).ptx(types=t)
    assert ".maxnreg 48" in cuda.jit(max_registers=48)(m.plain).ptx(types=t)


@pytest.mark.parametrize(
    "options, error, text",
    [
        (dict(max_threads=-1), ValueError, "`max_threads` must be an integer from 1 to 1024"),
        (dict(max_threads=4096), ValueError, "from 1 to 1024"),
        (dict(max_threads=True), TypeError, "max_threads"),
        (dict(bounds_check="no"), TypeError, "`bounds_check` must be True or False"),
        (dict(min_blocks=2), ValueError, "needs `max_threads`"),
        (dict(cluster=(0, 1)), ValueError, "cluster"),
    ],
)
def test_invalid_option_values_raise(options, error, text):
    with pytest.raises(error, match=text):
        device.kernel(**options)


# --- 4. ElementwiseKernel outputs and overlapping operands ---------------------------------

def test_elementwise_output_of_another_dtype_is_refused_as_cupy_does():
    k = pydevice.ElementwiseKernel("float64 x", "float64 z", "z = x * 1e10", "scale_out")
    x = np.array([1.0, np.nan])
    out = np.zeros(2, dtype=np.int8)
    with pytest.raises(TypeError, match="output `z` is float64, but the array given is int8"):
        k(x, out)
    assert out.tolist() == [0, 0]
    good = np.zeros(2)
    k(x, good)
    assert good[0] == 1e10 and np.isnan(good[1])


def test_elementwise_output_aliasing_an_input_in_reverse_matches_numpy():
    k = pydevice.ElementwiseKernel("T x", "T z", "z = x + 1", "inc_rev")
    x = np.arange(8, dtype=np.float64)
    expect = x.copy()
    np.add(expect[::-1], 1, out=expect)  # NumPy buffers the overlapping input
    k(x[::-1], x)
    assert x.tolist() == expect.tolist()
    # The very same view is updated in place, element by element.
    y = np.arange(4, dtype=np.float64)
    k(y, y)
    assert y.tolist() == [1.0, 2.0, 3.0, 4.0]
    # A raw input is read anywhere: the same view as the output is buffered too (the
    # non-raw output decides the loop size; CuPy refuses `size=` beside it).
    rev = pydevice.ElementwiseKernel("raw T y", "T z", "z = y[_ind.size() - i - 1]", "rev_raw")
    w = np.arange(5, dtype=np.float64)
    rev(w, w)
    assert w.tolist() == [4.0, 3.0, 2.0, 1.0, 0.0]


# --- 5. array descriptors -------------------------------------------------------------------

@pytest.mark.parametrize(
    "value, text",
    [
        ((0, (4,), (1,)), "data pointer is null"),
        ((0x1000, (2**64 - 1,), (1,)), "too large"),
        ((2**64 - 16, (8,), (1,)), "runs past the end of the address space"),
        ((0x10, (8,), (-1,)), "runs past the end of the address space"),
        ((0x1000, (2**40,), (2**40,)), "reach past 2\\*\\*63 bytes"),
    ],
)
def test_bad_array_descriptors_are_refused_before_launch(tmp_path, value, text):
    m, _ = load_module(tmp_path, "desc", """
        from cuda import device

        @device.kernel
        def k(a):
            a[0] = 1.0
    """)
    compiled = m.k._mod().compile("k", ["float32[:]"], "sm_90", 3)
    launcher = compiled.dry_run_launcher(0)
    with pytest.raises(pydevice.ArgumentError, match=text):
        launcher.launch((value,), 1, 1, 0, 0, None, False, None)
    launcher.launch(((0, (0,), (1,)),), 1, 1, 0, 0, None, False, None)  # empty: fine


def test_malformed_cuda_array_interface_is_refused_with_a_clear_error(tmp_path):
    m, _ = load_module(tmp_path, "desc_cai", """
        from cuda import device

        @device.kernel
        def k(a):
            a[0] = 1.0
    """)
    for shape, text in [((2**64 - 1,), "shape"), (("a", "b"), "shape"), ((-1,), "shape")]:
        with pytest.raises(TypeError, match=text) as info:
            m.k.ptx(FakeCAI(shape))
        assert "can't multiply" not in str(info.value)


# --- 6. arguments ----------------------------------------------------------------------------

def test_python_int_for_uint32_parameter_converts_when_it_fits(mod):
    assert mod.next_u32(5) == 6
    assert mod.next_u32(np.int64(7)) == 8
    assert mod.next_u32(2**32 - 1) == 0  # uint32 arithmetic wraps
    for bad in (-1, 2**32, 2**70, -(2**70)):
        with pytest.raises(OverflowError, match="out of range for a uint32 parameter") as info:
            mod.next_u32(bad)
        assert isinstance(info.value, pydevice.ArgumentError)
        assert "parameter `x`" in str(info.value)
        assert "C long" not in str(info.value)


def test_float_annotation_accepts_numpy_scalars(mod):
    assert mod.half(np.float64(3.0)) == 1.5
    assert mod.half(np.float32(3.0)) == 1.5
    assert mod.half(np.int16(3)) == 1.5
    assert mod.half64(np.float64(3.0)) == 1.5


def test_conversion_errors_are_pydevices_own(mod):
    with pytest.raises(pydevice.ArgumentError) as info:
        mod.sum_pair((1, "x"))
    assert "can't multiply" not in str(info.value)
    with pytest.raises(TypeError, match="parameter `x`"):
        mod.next_u32("3")


# --- 7. pathological tuples ------------------------------------------------------------------

def test_tuple_subclass_with_an_endless_iter_does_not_hang(mod):
    class Endless(tuple):
        def __iter__(self):
            while True:
                yield 1

    assert mod.sum_pair(Endless((2, 3))) == 5


def test_deeply_nested_tuple_is_refused_not_a_crash(tmp_path):
    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        import deep
        sys.setrecursionlimit(1_000_000)
        t = 1
        for _ in range(10_000):
            t = (t,)
        try:
            deep.ident(t)
        except TypeError as e:
            print("refused:", e)
    """)
    (tmp_path / "deep.py").write_text(
        "from cuda import device\n\n@device.func\ndef ident(t):\n    return 0\n"
    )
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "refused:" in r.stdout and "nested deeper than 64 levels" in r.stdout


# --- 8. a cache directory the cache refuses ----------------------------------------------------

@pytest.mark.parametrize("kind", ["world-writable", "regular file"])
def test_refused_cache_dir_warns_at_import_and_host_calls_work(tmp_path, kind):
    if kind == "world-writable":
        bad = tmp_path / "shared"
        bad.mkdir()
        os.chmod(bad, 0o777)
    else:
        bad = tmp_path / "file"
        bad.write_text("")
    (tmp_path / "hostonly.py").write_text(
        "from cuda import device\n\n@device.func\ndef twice(x: float) -> float:\n    return 2 * x\n"
    )
    script = textwrap.dedent("""
        import sys, warnings
        sys.path.insert(0, sys.argv[1])
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            import pydevice
        print("WARN", [str(x.message) for x in w if issubclass(x.category, RuntimeWarning)])
        import hostonly
        print("CALL", hostonly.twice(2.0))
        pydevice.set_cache_dir(None)
        try:
            pydevice.set_cache_dir(sys.argv[2])
        except ValueError as e:
            print("SET", e)
    """)
    env = dict(os.environ, PYDEVICE_CACHE_DIR=str(bad))
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path), str(bad)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "CALL 4.0" in out
    assert "PYDEVICE_CACHE_DIR" in out and "cache is off" in out
    assert "DiskTrust" not in out and "  " not in out.replace("\n", " ")
    if kind == "world-writable":
        assert "pass shared=True to pydevice.set_cache_dir" in out
        pydevice_ok = subprocess.run(
            [sys.executable, "-c", "import sys, pydevice; pydevice.set_cache_dir(sys.argv[1], shared=True)", str(bad)],
            capture_output=True, text=True, timeout=120)
        assert pydevice_ok.returncode == 0, pydevice_ok.stderr


def test_annotated_parameter_of_a_partly_annotated_kernel_converts_python_ints(tmp_path):
    m, _ = load_module(tmp_path, "partly", """
        from cuda import device

        @device.kernel
        def k(a, n: device.uint32):
            a[0] = n
    """)
    ptx = m.k.ptx(np.zeros(2, np.uint32), 5)
    assert ".entry k" in ptx or "k(" in ptx
    assert m.k.abi(np.zeros(2, np.uint32), 5)["params"][1]["type"] == "uint32"


def test_unbounded_host_recursion_is_a_recursion_error(tmp_path):
    """A host ``@func`` that recurses without end raises ``HostRecursionError``, which is
    Python's ``RecursionError`` (it used to kill the interpreter with SIGSEGV); the function
    stays callable."""
    m, _ = load_module(tmp_path, "recursing", """
        from cuda import device
        from cuda.device import int32


        @device.func
        def down(n: int32) -> int32:
            if n == 0:
                return 0
            return down(n - 1) + 1
    """)
    assert m.down(500) == 500
    with pytest.raises(RecursionError, match="maximum recursion depth") as e:
        m.down(-1)
    assert isinstance(e.value, pydevice.HostRecursionError)
    assert isinstance(e.value, pydevice.HostError)
    assert m.down(7) == 7


_SPIN = """
import signal, sys, time
import numpy as np
sys.path.insert(0, {here!r})
from cuda import device
from cuda.device import int64

@device.func
def spin(a, n: int64) -> int64:
    i = int64(0)
    while True:
        a[0] = i
        i += 1
        if i == n:
            return i

@device.func
def nested(a) -> int64:
    # the loop is in a callee: the interrupt must reach the caller too
    return spin(a, int64(-1)) + 1

a = np.zeros(1, np.int64)
assert spin(a, 1000) == 1000
mode = sys.argv[1]
if mode == "handler":
    seen = []
    def handler(sig, frame):
        seen.append(sig)
        raise RuntimeError("handled")
    signal.signal(signal.SIGINT, handler)
for attempt in range(2):
    print("ready", flush=True)
    t = time.monotonic()
    try:
        spin(a, -1) if attempt == 0 else nested(a)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", a[0] > 0, round(time.monotonic() - t, 1), flush=True)
    except RuntimeError as e:
        print("RuntimeError", e, seen, flush=True)
assert spin(a, 5) == 5 and a[0] == 4
print("done", flush=True)
"""


@pytest.mark.parametrize("mode", ["default", "handler"])
def test_ctrl_c_interrupts_an_endless_host_loop(tmp_path, mode):
    """SIGINT stops a host ``@func`` looping forever (it used to wait for the native call
    to return): the loop polls a flag at its back-edge, and the call raises what Python's
    handler raises (``KeyboardInterrupt``, or a user handler's exception), also from a loop
    in a callee; the stores made before stay, and the function stays callable."""
    import signal
    import time

    script = tmp_path / "spin.py"
    script.write_text(_SPIN.format(here=os.path.dirname(__file__)))
    p = subprocess.Popen([sys.executable, str(script), mode], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(2):
            assert p.stdout.readline().strip() == "ready"
            time.sleep(0.5)  # inside the native loop by now
            p.send_signal(signal.SIGINT)
            line = p.stdout.readline().split()
            if mode == "default":
                assert line[:2] == ["KeyboardInterrupt", "True"], line
            else:
                assert line[:2] == ["RuntimeError", "handled"], line
        assert p.stdout.readline().strip() == "done"
        assert p.wait(timeout=60) == 0, p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


_PRINT_FLOATS = """
import sys
import numpy as np
from cuda import device

@device.func
def show64(a):
    for i in range(a.shape[0]):
        print(a[i])

@device.func
def show32(a):
    for i in range(a.shape[0]):
        print(a[i], end=";")

@device.func
def show16(a):
    for i in range(a.shape[0]):
        print(a[i], (a[i], 1.5))

data = np.load(sys.argv[1])
show64(data["f64"])
print("|")
show32(data["f32"])
print("|")
show16(data["f16"])
"""


def test_host_print_writes_floats_as_python_repr(tmp_path):
    """``print(x)`` of a float on the host writes what Python writes (``3.0``, not ``3``):
    the shortest digits that read back to the value at its width, Python's switch to
    exponent notation, ``nan``/``inf``; random values of every magnitude, compared with
    ``repr`` (for float32/float16, NumPy's shortest digits in Python's layout)."""
    rng = np.random.default_rng(37)
    special = [0.0, -0.0, 1.0, 3.0, 0.1, 1e16, 1e15, 9999999999999998.0, 1e-4, 1e-5,
               123456.5, 1.5e-7, np.nan, np.inf, -np.inf, 5e-324, 1.7976931348623157e308,
               2.0 ** 70, -1234.5]
    f64 = np.concatenate([special, rng.standard_normal(200) * 10.0 ** rng.integers(
        -30, 30, 200), rng.integers(-10 ** 6, 10 ** 6, 50).astype(np.float64)])
    f32 = np.concatenate([np.array(special[:13], np.float32),
                          (rng.standard_normal(200) * 10.0 ** rng.integers(-20, 20, 200))
                          .astype(np.float32)])
    f16 = np.concatenate([np.array([0.0, 1.0, 0.1, 65504.0, 6e-8, 1e-4, 3.14], np.float16),
                          rng.standard_normal(100).astype(np.float16)])
    np.savez(tmp_path / "data.npz", f64=f64, f32=f32, f16=f16)
    script = tmp_path / "show.py"
    script.write_text(_PRINT_FLOATS)
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "data.npz")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    def py(v):
        # The shortest digits at the value's width (NumPy's unique digits), laid out as
        # Python lays out a float (NumPy's own scalar str switches to exponent notation
        # earlier for float32/float16: docs/semantics.md §4.5.1).
        if not np.isfinite(v):
            return str(float(v))
        return repr(float(np.format_float_scientific(v, unique=True)))

    def same(got, v, t):
        # Where two shortest strings are equally near (the value is an exact tie between
        # them, as -150725.125 in float32), NumPy rounds the tie up and we (Rust's shortest
        # digits, as Python's own repr of a float64) to even: either is shortest and reads
        # back to the value.
        want = py(v)
        return got == want or (len(got) == len(want) and t(got) == v == t(want))

    f64_text, f32_text, f16_text = out.stdout.split("|\n")
    assert f64_text == "".join(f"{float(v)!r}\n" for v in f64)
    got32 = f32_text.split(";")[:-1]
    assert len(got32) == len(f32)
    bad = [(g, py(v)) for g, v in zip(got32, f32)
           if not (same(g, v, np.float32) or (np.isnan(v) and g == "nan"))]
    assert not bad
    lines16 = f16_text.splitlines()
    assert len(lines16) == len(f16)
    for line, v in zip(lines16, f16):
        g, rest = line.split(" ", 1)
        assert same(g, v, np.float16), (line, py(v))
        assert rest == f"({g}, 1.5)"


def test_many_stray_tokens_give_a_bounded_message_in_linear_time():
    """100 KB of stray tokens (issue 37: about five minutes and a 10 MB message) give a
    capped ``CompileError`` quickly through the Python API, as through the CLI
    (tests/it/robustness.rs ``cli_many_stray_tokens_give_a_bounded_message``); twice the
    input takes about twice the time, not four times."""
    import time

    from pydevice import _native

    def run(lines):
        src = "from cuda import device\n\n@device.kernel\ndef k(a):\n" + \
            "    a[0] = 1 $\n" * lines
        t = time.perf_counter()
        with pytest.raises(pydevice.CompileError) as e:
            _native.Module("stray.py", src)
        return time.perf_counter() - t, str(e.value), len(src)

    small, _, _ = run(3_500)
    big, text, size = run(7_000)
    assert size > 100_000
    assert text.count("error[E0001]") == 100
    assert "more syntax errors from here on are not shown" in text
    assert len(text) < 40_000
    assert big < 30.0
    assert big < 3.0 * small + 0.5, (small, big)


def test_redefinition_runs_the_last_definition(tmp_path):
    """A ``@func`` or ``@kernel`` defined twice under one name runs and compiles the last
    body, as Python binds it (it used to run the first); the CLI's side is
    tests/it/robustness.rs ``cli_redefined_kernel_is_the_last_definition``."""
    m, _ = load_module(tmp_path, "redefined", """
        from cuda import device
        from cuda.device import int32, float32


        @device.func
        def f(x: int32) -> int32:
            return x + 1


        @device.func
        def f(x: int32) -> int32:
            return x * 10


        @device.func
        def g(x: int32) -> int32:
            return f(x) + 2


        @device.kernel
        def k(a):
            a[0] = float32(1.0)


        @device.kernel
        def k(a):
            a[0] = float32(1234.5)
    """)
    assert m.f(3) == 30
    assert m.g(3) == 32
    ptx = m.k.ptx(types=["float32[::1]"])
    # The last body stores 1234.5 (bits 0x449A5000), the first 1.0 (0x3F800000); the PTX
    # writes the bits as a float literal or as the integer of a 32-bit move.
    last = ("0f449A5000", str(0x449A5000))
    first = ("0f3F800000", str(0x3F800000))
    assert any(t in ptx for t in last), ptx
    assert not any(t in ptx for t in first), ptx
