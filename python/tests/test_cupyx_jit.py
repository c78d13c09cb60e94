"""cupyx.jit as CuPy's own jit tests write it (tests/cupyx_tests/jit_tests, CuPy v14.2.0):
device functions and constants from enclosing functions, `jit.cg`, `jit.range(unroll=)`,
`jit.atomic_inc/dec`, and the exceptions CuPy raises (docs/semantics.md §15.4).

The compile-side tests need no GPU; the launches take the `cupy` fixture and are skipped,
saying why, without a GPU or CuPy."""

import importlib.util
import textwrap

import numpy as np
import pytest

from pydevice.cupyx import _cupyx_error
from pydevice.errors import CompileError

I32 = "int32[::1]"


def load_module(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# The kernels of CuPy's tests, with only the import changed; each test function builds them
# as CuPy's tests do (inside a function, the device function beside the kernel).
SOURCE = """
    import numpy
    import numpy as cupy  # CuPy's tests write `cupy.dtype(...)`, `cupy.inf`; NumPy's are the same
    from pydevice.cupyx import jit


    def device_function_after_kernel():
        @jit.rawkernel()
        def f(x, y, z):
            tid = jit.threadIdx.x
            z[tid] = g(x[tid], y[tid]) + x[tid] + y[tid]

        @jit.rawkernel(device=True)
        def g(x, y):
            x += 1
            y += 1
            return x + y

        return f


    def device_function_before_kernel():
        @jit.rawkernel(device=True)
        def g(x):
            x[0] += 1
            return 1

        @jit.rawkernel()
        def f(x):
            x[g(x)] += 1

        return f


    def recursive():
        @jit.rawkernel()
        def f(x, y, z):
            tid = jit.threadIdx.x
            z[tid] = g(x[tid], y[tid])

        @jit.rawkernel(device=True)
        def g(x, y):
            return x + y + g(x, y)

        return f


    def closure_constants(n, unroll, flag):
        @jit.rawkernel()
        def f(a):
            value = jit.shfl_up_sync(0xffffffff, a[jit.threadIdx.x], n)
            if unroll == None:  # noqa: E711
                for i in jit.range(5):
                    value += 2
            else:
                for i in jit.range(5, unroll=unroll):
                    value += 2
            if flag:
                value += 1
            a[jit.threadIdx.x] = value

        return f


    def unpack_int():
        @jit.rawkernel()
        def f():
            x, = jit.grid(1)  # noqa: F841

        return f


    def unknown_name():
        @jit.rawkernel()
        def f(x):
            return unknown_var  # noqa: F821

        return f


    def thrust_call():
        @jit.rawkernel()
        def f(x, y):
            tid = jit.threadIdx.x
            y[tid] = jit.thrust.count(jit.thrust.device, x, x + 32, tid)

        return f


    def factory_device_functions():
        # CuPy's test_device_function_duplicated_names: `g(10)` is called on the host while
        # compiling; each instance is its own device function (all named `f`, as the kernel).
        @jit.rawkernel()
        def f(x, y, z):
            tid = jit.threadIdx.x
            z[tid] = g(10)(x[tid], y[tid])
            z[tid] += g(20)(x[tid], y[tid])
            z[tid] += g(30)(x[tid], y[tid])
            z[tid] += g(10)(x[tid], y[tid])

        def g(const):
            @jit.rawkernel(device=True)
            def f(x, y):
                return x + y + const
            return f

        return f


    def factory_recursion():
        # CuPy's test_device_function_template_recursion: the `if step < 256` of each instance
        # is decided while compiling, which ends the recursion; its barrier under `tid % ...`
        # is pydevice's E0241.
        @jit.rawkernel()
        def f(x, y):
            tid = jit.threadIdx.x
            y[tid] = x[tid]
            jit.syncthreads()
            g(1)(y)

        def g(step):
            @jit.rawkernel(device=True)
            def f(x):
                if step < 256:
                    tid = jit.threadIdx.x
                    if tid % (step * 2) == 0:
                        x[tid] += x[tid + step]
                        jit.syncthreads()
                        g(step * 2)(x)
            return f

        return f


    def factory_of_a_variable():
        @jit.rawkernel()
        def f(x):
            x[0] = g(x[1])(x[0])

        def g(const):
            @jit.rawkernel(device=True)
            def f(x):
                return x + const
            return f

        return f


    def cub_call():
        @jit.rawkernel()
        def f(x, y):
            BlockScan = jit.cub.BlockScan[numpy.int32, 32]  # noqa: F841
            y[0] = x[0]

        return f


    def warp_reduce(dtype, op):
        # CuPy's three WarpReduce kernels: Sum, Reduce(Sum()), Reduce(Max()).
        @jit.rawkernel()
        def warp_sum(x, y):
            WarpReduce = jit.cub.WarpReduce[dtype]
            temp_storage = jit.shared_memory(dtype=WarpReduce.TempStorage, size=1)
            i, j = jit.blockIdx.x, jit.threadIdx.x
            value = x[i, j]
            aggregator = WarpReduce(temp_storage[0])
            aggregate = aggregator.Sum(value)
            if j == 0:
                y[i] = aggregate

        @jit.rawkernel()
        def warp_reduce_sum(x, y):
            WarpReduce = jit.cub.WarpReduce[dtype]
            temp_storage = jit.shared_memory(dtype=WarpReduce.TempStorage, size=1)
            i, j = jit.blockIdx.x, jit.threadIdx.x
            value = x[i, j]
            aggregator = WarpReduce(temp_storage[0])
            aggregate = aggregator.Reduce(value, jit.cub.Sum())
            if j == 0:
                y[i] = aggregate

        @jit.rawkernel()
        def warp_reduce_max(x, y):
            WarpReduce = jit.cub.WarpReduce[dtype]
            temp_storage = jit.shared_memory(dtype=WarpReduce.TempStorage, size=1)
            i, j = jit.blockIdx.x, jit.threadIdx.x
            value = x[i, j]
            aggregator = WarpReduce(temp_storage[0])
            aggregate = aggregator.Reduce(value, jit.cub.Max())
            if j == 0:
                y[i] = aggregate

        return {"Sum": warp_sum, "Reduce(Sum)": warp_reduce_sum, "Max": warp_reduce_max}[op]


    def block_reduce(dtype, op):
        # CuPy's two BlockReduce kernels: Sum, Reduce(Min()).
        @jit.rawkernel()
        def block_sum(x, y):
            BlockReduce = jit.cub.BlockReduce[dtype, 256]
            temp_storage = jit.shared_memory(dtype=BlockReduce.TempStorage, size=1)
            i, j = jit.blockIdx.x, jit.threadIdx.x
            value = x[i, j]
            aggregator = BlockReduce(temp_storage[0])
            aggregate = aggregator.Sum(value)
            if j == 0:
                y[i] = aggregate

        @jit.rawkernel()
        def block_reduce_min(x, y):
            BlockReduce = jit.cub.BlockReduce[dtype, 256]
            temp_storage = jit.shared_memory(dtype=BlockReduce.TempStorage, size=1)
            i, j = jit.blockIdx.x, jit.threadIdx.x
            value = x[i, j]
            aggregator = BlockReduce(temp_storage[0])
            aggregate = aggregator.Reduce(value, jit.cub.Min())
            if j == 0:
                y[i] = aggregate

        return {"Sum": block_sum, "Min": block_reduce_min}[op]


    def grid_of(n):
        @jit.rawkernel()
        def f():
            x = jit.grid(n)  # noqa: F841

        return f


    def two_values_of_one_name():
        def make(n):
            @jit.rawkernel(device=True)
            def h(x):
                return x + n

            return h

        h = make(1)
        n = 2

        @jit.rawkernel()
        def f(x):
            x[0] = h(x[0]) + n

        return f


    def cg_kernel():
        @jit.rawkernel()
        def test_grid(x):
            g = jit.cg.this_grid()
            if g.thread_rank() == 0:
                x[0] = g.is_valid()
            if g.thread_rank() == 1:
                x[1] = g.num_threads()
            if g.thread_rank() == 32:
                g_dim = g.group_dim()
                x[2], x[3], x[4] = g_dim.x, g_dim.y, g_dim.z
            if g.thread_rank() == 33:
                x[5] = g.block_rank()
            g.sync()

        return test_grid


    def cg_copy(aligned):
        @jit.rawkernel()
        def test_copy(x, y):
            if aligned:
                smem = jit.shared_memory(numpy.int32, 32 * 2, alignment=16)
            else:
                smem = jit.shared_memory(numpy.int32, 32 * 2)
            g = jit.cg.this_thread_block()
            tid = g.thread_rank()
            if aligned:
                jit.cg.memcpy_async(g, smem, 0, x, 0, 4 * 32, aligned_size=16)
                jit.cg.memcpy_async(g, smem, 32, x, 32, 4 * 32, aligned_size=16)
            else:
                jit.cg.memcpy_async(g, smem, 0, x, 0, 4 * 32)
                jit.cg.memcpy_async(g, smem, 32, x, 32, 4 * 32)
            jit.cg.wait_prior(g, 1)
            if tid < 32:
                y[tid] = smem[tid]
            jit.cg.wait(g)
            if 32 <= tid and tid < 64:
                y[tid] = smem[tid]

        return test_copy


    def fill_with(dtype, inf):
        @jit.rawkernel()
        def f(x):
            tid = jit.threadIdx.x + jit.blockDim.x * jit.blockIdx.x
            if inf:
                x[tid] = cupy.dtype(dtype).type(cupy.inf)
            else:
                x[tid] = cupy.dtype(dtype).type(cupy.nan)

        return f


    def shfl_width():
        @jit.rawkernel()
        def f(a, b, w):
            laneId = jit.threadIdx.x & 0x1f
            value = jit.shfl_sync(0xffffffff, b[jit.threadIdx.x], 0, width=w)
            b[laneId] = value

        return f


    def def_inside_kernel():
        @jit.rawkernel()
        def f(x):
            @jit.rawkernel(device=True)
            def g(y):
                return y + 1

            x[0] = g(x[0])

        return f


    def atomic_add():
        @jit.rawkernel()
        def f(x, index, out):
            tid = jit.blockDim.x * jit.blockIdx.x + jit.threadIdx.x
            jit.atomic_add(out, index[tid], x[tid])

        return f


    def atomic_inc():
        @jit.rawkernel()
        def f(x, out):
            tid = jit.blockDim.x * jit.blockIdx.x + jit.threadIdx.x
            if tid < x.size:
                jit.atomic_inc(out, tid, x[tid])

        return f
"""


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_module(tmp_path_factory.mktemp("cupyx_jit"), "cupyx_jit_tests", SOURCE)


def test_device_function_defined_after_the_kernel_in_the_same_function(mod):
    ptx = mod.device_function_after_kernel().ptx(types=[I32] * 3)
    assert ".entry f(" in ptx


def test_device_function_defined_before_the_kernel_in_the_same_function(mod):
    assert ".entry f(" in mod.device_function_before_kernel().ptx(types=["int64[::1]"])


def test_recursive_device_function_is_a_value_error(mod):
    with pytest.raises(CompileError) as info:
        mod.recursive().ptx(types=[I32] * 3)
    assert info.value.diagnostics[0].code == "E0105"
    e = _cupyx_error(info.value)
    assert isinstance(e, ValueError) and isinstance(e, CompileError)


@pytest.mark.parametrize("unroll", [True, False, None, 5])
def test_constants_of_the_enclosing_function(mod, unroll):
    k = mod.closure_constants(5, unroll, True)
    ir = k.typed_ir(types=[I32])
    expect = {True: "[unroll full]", False: "[unroll disabled]", None: "loop while", 5: "[unroll 5]"}
    assert expect[unroll] in ir
    if unroll is None:
        assert "[unroll" not in ir
    assert ".entry f(" in k.ptx(types=[I32])


def test_unknown_name_is_cupys_name_error(mod):
    with pytest.raises(CompileError) as info:
        mod.unknown_name().ptx(types=["float32[::1]"])
    e = _cupyx_error(info.value)
    assert isinstance(e, NameError)
    assert str(e).startswith("Unbound name: unknown_var\n")


def test_unpacking_an_int_is_cupys_value_error(mod):
    with pytest.raises(CompileError) as info:
        mod.unpack_int().ptx(types=[])
    assert info.value.diagnostics[0].code == "E0203"
    e = _cupyx_error(info.value)
    assert isinstance(e, ValueError) and not isinstance(e, TypeError)


def test_thrust_calls_become_extern_shims_the_kernel_carries(mod):
    # `jit.thrust.count(policy, smem_or_array, x + 32, tid)`: one extern shim, whose CUDA C++
    # the kernel carries for NVRTC (docs/semantics.md §15.5).
    k = mod.thrust_call()
    sym = "__pyd_thrust_count__it_int32__it_int32__v_int32"
    assert f") {sym}" in k.ptx(types=[I32, I32])
    (name, src), = k.cuda(types=[I32, I32])
    assert name.endswith(".cu") and f"long long {sym}(" in src
    assert "thrust::count(thrust::seq" in src and "#include <thrust/count.h>" in src
    assert mod.device_function_after_kernel().cuda(types=[I32] * 3) == []


def test_cub_diagnostic_names_the_cupyx_dialect(mod):
    with pytest.raises(CompileError) as info:
        mod.cub_call().ptx(types=[I32, I32])
    msg = info.value.diagnostics[0].message
    assert "`cupyx.jit.cub.BlockScan` is not available in device code (cupyx dialect)" == msg


def test_factory_calls_make_one_device_function_per_value(mod):
    k = mod.factory_device_functions()
    ptx = k.ptx(types=[I32] * 3)
    text = k._src.text()
    # Three instances for three values (`g(10)` twice is one), none named like the kernel.
    assert text.count("@jit.rawkernel(device=True)\ndef _pyd_factory_") == 3
    assert "return x + y + 10" in text and "return x + y + 30" in text
    assert ".entry f(" in ptx


def test_factory_recursion_ends_and_its_divergent_barrier_is_e0241(mod):
    k = mod.factory_recursion()
    with pytest.raises(CompileError) as info:
        k.ptx(types=[I32] * 2)
    assert {d.code for d in info.value.diagnostics} == {"E0241"}
    # step = 1, 2, ..., 256: nine instances, the last one empty.
    assert "def _pyd_factory_9_f(x):\n    pass" in k._src.text()


def test_factory_call_with_a_variable_stays_an_error(mod):
    # `g(x[1])`: not a constant, so `g` is read in device code (CuPy's TypeError when
    # launched, the compiler's E0101 here).
    with pytest.raises(CompileError, match="name `g` is not defined"):
        mod.factory_of_a_variable().ptx(types=[I32])


def test_gpu_factory_device_functions(cupy, mod):
    x = cupy.arange(30, dtype=cupy.int32)
    y = cupy.arange(30, dtype=cupy.int32) * 7
    z = cupy.zeros(30, dtype=cupy.int32)
    mod.factory_device_functions()((1,), (30,), (x, y, z))
    np.testing.assert_array_equal(cupy.asnumpy(z), np.arange(30) * 8 * 4 + 70)


def test_cub_reductions_compile_to_shuffles_and_one_shared_array(mod):
    ptx = mod.block_reduce(np.float32, "Sum").ptx(types=["float32[:, ::1]", "float32[::1]"])
    assert "shfl.sync.down" in ptx and "bar.sync" in ptx and ".shared" in ptx
    ptx = mod.warp_reduce(np.complex128, "Max").ptx(types=["complex128[:, ::1]", "complex128[::1]"])
    assert "shfl.sync.down" in ptx and "bar.sync" not in ptx


# CuPy's TestCubWarpReduce / TestCubBlockReduce: every dtype but bool (on the CPU back end
# without a GPU).
CUB_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
              "float16", "float32", "float64", "complex64", "complex128"]


def _shaped_random(shape, dtype, seed):
    a = np.random.RandomState(seed).rand(*shape) * 10
    if np.dtype(dtype).kind == "c":
        a = a + 1j * np.random.RandomState(seed + 1).rand(*shape) * 10
    return a.astype(dtype)


@pytest.mark.parametrize("op", ["Sum", "Reduce(Sum)", "Max"])
@pytest.mark.parametrize("dtype", CUB_DTYPES)
def test_gpu_cub_warp_reduce(cupy, mod, dtype, op):
    h, w = 32, 32  # CuPy's shape
    x = _shaped_random((h, w), dtype, 0)
    y = cupy.zeros((h,), dtype=dtype)
    mod.warp_reduce(np.dtype(dtype).type, op)[h, w](cupy.asarray(x), y)
    want = x.max(axis=-1) if op == "Max" else x.sum(axis=-1, dtype=dtype)
    got = cupy.asnumpy(y)
    if np.dtype(dtype).kind in "iu" or op == "Max":
        np.testing.assert_array_equal(got, want)
    else:
        # CuPy checks these sums at rtol=1e-6: float16 too (accumulated in float32).
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("op", ["Sum", "Min"])
@pytest.mark.parametrize("dtype", CUB_DTYPES)
def test_gpu_cub_block_reduce(cupy, mod, dtype, op):
    h, w = 32, 256  # CuPy's shape
    x = _shaped_random((h, w), dtype, 1)
    y = cupy.zeros((h,), dtype=dtype)
    mod.block_reduce(np.dtype(dtype).type, op)[h, w](cupy.asarray(x), y)
    want = x.min(axis=-1) if op == "Min" else x.sum(axis=-1, dtype=dtype)
    got = cupy.asnumpy(y)
    if np.dtype(dtype).kind in "iu" or op == "Min":
        np.testing.assert_array_equal(got, want)
    else:
        # CuPy checks these sums at rtol=1e-6: float16 too (accumulated in float32).
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("n, cls", [(0, ValueError), (4, ValueError), ((1,), TypeError),
                                    ("abc", TypeError), ([0], TypeError)])
def test_grid_of_a_bad_count_is_cupys_exception(mod, n, cls):
    k = mod.grid_of(n)
    with pytest.raises(CompileError) as info:
        k.ptx(types=[])
    e = _cupyx_error(info.value, k._unusable())
    assert isinstance(e, cls) and not isinstance(e, ({ValueError, TypeError} - {cls}).pop())


def test_cached_codes_start_empty(mod):
    k = mod.thrust_call()
    assert k.cached_codes == {}
    with pytest.raises(RuntimeError):
        k.cached_code


def test_one_name_with_two_values_is_refused(mod):
    with pytest.raises(CompileError, match="`n` has two values"):
        mod.two_values_of_one_name().ptx(types=[I32])


def test_cooperative_groups_compile_and_mark_the_kernel_cooperative(mod):
    # The grid barrier of §17.4 (which makes the kernel need a cooperative launch).
    assert "__pyd_grid_barrier" in mod.cg_kernel().ptx(types=["uint64[::1]"])
    for aligned in (True, False):
        assert ".entry test_copy(" in mod.cg_copy(aligned).ptx(types=[I32, I32])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64, np.complex128])
def test_dtype_of_the_enclosing_function_converts(mod, dtype):
    name = np.dtype(dtype).name
    ir = mod.fill_with(dtype, True).typed_ir(types=[f"{name}[::1]"])
    assert f"x[tid] = {name}(inf" in ir


def test_shfl_width_compiles_to_segments(mod):
    ptx = mod.shfl_width().ptx(types=[I32, I32, "int64"])
    assert "shfl.sync.idx.b32" in ptx


def test_def_inside_a_kernel_is_a_diagnostic_with_its_span(mod):
    with pytest.raises(CompileError) as info:
        mod.def_inside_kernel().ptx(types=[I32])
    d = info.value.diagnostics[0]
    assert d.severity == "error" and d.line > 0


def test_atomic_inc_compiles(mod):
    assert "atom.relaxed.gpu.global.inc.u32" in mod.atomic_inc().ptx(types=["uint32[::1]", "uint32[::1]"])


# --- on the GPU ---------------------------------------------------------------------------


def test_gpu_device_functions_beside_the_kernel(cupy, mod):
    x = cupy.arange(30, dtype=cupy.int32)
    y = cupy.arange(30, dtype=cupy.int32) * 3
    z = cupy.zeros(30, dtype=cupy.int32)
    mod.device_function_after_kernel()((1,), (30,), (x, y, z))
    np.testing.assert_array_equal(cupy.asnumpy(z), (np.arange(30) * 4 + 1) * 2)
    x = cupy.array([0, 0])
    mod.device_function_before_kernel()((1,), (1,), (x,))
    np.testing.assert_array_equal(cupy.asnumpy(x), [1, 1])
    with pytest.raises(ValueError):
        mod.recursive()((1,), (30,), (x, y, z))


def test_gpu_unknown_name_raises_name_error(cupy, mod):
    x = cupy.zeros((10,), dtype=cupy.float32)
    with pytest.raises(NameError, match="Unbound name: unknown_var"):
        mod.unknown_name()((1,), (1,), (x,))


@pytest.mark.parametrize("unroll", [True, False, None, 5])
def test_gpu_closure_constants_and_unroll(cupy, mod, unroll):
    a = cupy.arange(32, dtype=cupy.int32)
    mod.closure_constants(5, unroll, True)[1, 32](a)
    expect = np.array(list(range(5)) + list(range(27)), dtype=np.int32) + 11
    np.testing.assert_array_equal(cupy.asnumpy(a), expect)


def test_gpu_grid_group_launches_cooperatively(cupy, mod):
    x = cupy.empty((16,), dtype=cupy.uint64)
    x[:] = cupy.uint64(2**64 - 1)
    k = mod.cg_kernel()
    k[2, 32](x)
    k((2,), (32,), (x,))
    got = cupy.asnumpy(x)
    assert got[0] == 1 and got[1] == 64 and tuple(got[2:5]) == (2, 1, 1) and got[5] == 1
    assert (got[6:] == 2**64 - 1).all()


@pytest.mark.parametrize("aligned", [True, False])
def test_gpu_group_memcpy(cupy, mod, aligned):
    x = cupy.arange(64, dtype=cupy.int32)
    y = cupy.zeros(64, dtype=cupy.int32)
    mod.cg_copy(aligned)[2, 64](x, y)
    np.testing.assert_array_equal(cupy.asnumpy(y), np.arange(64))


def test_gpu_atomic_inc(cupy, mod):
    x = cupy.arange(1, 1025, dtype=cupy.uint32)
    out = x - 1
    mod.atomic_inc()((32,), (32,), (x, out))
    np.testing.assert_array_equal(cupy.asnumpy(out), np.arange(1, 1025, dtype=np.uint32))


@pytest.mark.parametrize("special", ["inf", "nan"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
def test_gpu_dtype_of_the_enclosing_function(cupy, mod, dtype, special):
    x = cupy.zeros(30, dtype=dtype)
    mod.fill_with(np.dtype(dtype).type, special == "inf")((5,), (6,), (x,))
    np.testing.assert_array_equal(cupy.asnumpy(x), np.full(30, getattr(np, special), dtype=dtype))


def test_gpu_shfl_width(cupy, mod):
    k = mod.shfl_width()
    for w in (2, 4, 8, 16, 32):
        b = cupy.arange(32, dtype=cupy.int32)
        k[1, 32](cupy.int32(100), b, w)
        c = np.arange(32, dtype=np.int32)
        np.testing.assert_array_equal(cupy.asnumpy(b), c - c % w)


@pytest.mark.parametrize("dtype", ["int32", "uint32", "uint64", "float16", "float32", "float64"])
def test_gpu_atomic_add(cupy, mod, dtype):
    rng = np.random.default_rng(0)
    x = (rng.random(1024) * 10).astype(dtype)
    index = (rng.random(1024) > 0.5).astype(np.int32)
    out = cupy.zeros((2,), dtype=dtype)
    mod.atomic_add()((32,), (32,), (cupy.asarray(x), cupy.asarray(index), out))
    expected = np.zeros(2, dtype=np.float64)
    np.add.at(expected, index, x.astype(np.float64))
    tol = 3e-2 if dtype == "float16" else 1e-5
    np.testing.assert_allclose(cupy.asnumpy(out).astype(np.float64), expected, rtol=tol, atol=tol)
