"""Kernels exported as Apache TVM-FFI functions (`pydevice.tvm_ffi`, issue 35).

Without the apache-tvm-ffi package the module is skipped, saying so. Without a GPU, what
runs is the export itself: the description (parameters, layouts, launch shape, refusals),
the generated C++ built with the system compiler and loaded with `tvm_ffi`, its metadata
(pydevice's JSON and TVM-FFI's type schema), and the refusals that need no GPU (a CPU
tensor, a wrong argument count or type). The launches need a GPU (PyTorch's CUDA tensors, or
JAX's through `jax_tvm_ffi`) and skip without one, saying why. The CPU back end cannot run an
exported function: the library holds PTX and launches it through the CUDA driver.
"""
import json
import os
import shutil

import numpy as np
import pytest

from cuda import device

tvm_ffi = pytest.importorskip("tvm_ffi", reason="needs the apache-tvm-ffi package (pip install apache-tvm-ffi)")
# A `tvm_ffi` without `libinfo` (another package of that name) cannot build exports either.
pytest.importorskip("tvm_ffi.libinfo", reason="needs the apache-tvm-ffi package (pip install apache-tvm-ffi)")
import pydevice.tvm_ffi as export  # noqa: E402

_CXX = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
needs_cxx = pytest.mark.skipif(_CXX is None, reason="needs a C++ compiler to build the exported library")

AXPB = "float32[::1], float32[::1], float32[::1], float32"
SCALE = "float64[::1, :], float64[::1, :], int32"


@device.kernel
def _axpb(a, b, c, s):
    i = device.tid(1)
    if i < c.shape[0]:
        c[i] = a[i] * s + b[i]


@device.kernel
def _copy(a, b):
    i = device.tid(1)
    if i < b.shape[0]:
        b[i] = a[i]


@device.kernel
def _scale_cols(x, out, k):
    # One thread per element of a column-major matrix, 2-D grid: out[i, j] = x[i, j] * (j + k).
    i, j = device.tid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = x[i, j] * (j + k)


def test_spec_describes_parameters_and_launch_shape():
    s = export.spec(_axpb, AXPB, block=128, cover="c")
    assert [p.name for p in s.params] == ["a", "b", "c", "s"]
    assert [p.kind for p in s.params] == ["array", "array", "array", "float"]
    assert [(p.ndim, p.layout, p.size) for p in s.params[:3]] == [(1, "C", 24)] * 3
    assert (s.params[3].dtype, s.params[3].size) == ("float32", 4)
    assert [p.offset for p in s.params] == [0, 24, 48, 72]
    assert s.args_size == 80
    assert s.block == (128, 1, 1) and s.grid is None and s.cover == 2
    assert ".entry" in s.ptx and s.symbol in s.ptx
    meta = s.metadata()
    assert meta["cover"] == "c" and meta["params"][3] == {
        "name": "s", "type": "float32", "kind": "float", "dtype": "float32", "ndim": 0}

    m = export.spec(_scale_cols, SCALE, block=(16, 16), grid=(4, 4))
    assert [(p.kind, p.ndim, p.layout) for p in m.params] == [("array", 2, "F"), ("array", 2, "F"), ("int", 0, "C")]
    assert m.block == (16, 16, 1) and m.grid == (4, 4, 1)


def test_spec_refuses_what_cannot_be_exported():
    with pytest.raises(export.ExportError, match="cover='s' is not an array parameter"):
        export.spec(_axpb, AXPB, cover="s")
    with pytest.raises(export.ExportError, match="block must be"):
        export.spec(_axpb, AXPB, block=0)
    with pytest.raises(export.ExportError, match="arrays of float16 cannot be exported"):
        export.spec(_copy, "float16[::1], float16[::1]")
    with pytest.raises(export.ExportError, match="not a C identifier"):
        export.spec(_axpb, AXPB, name="a-b")


def test_source_embeds_ptx_and_parameter_table():
    s = export.spec(_scale_cols, SCALE, block=(16, 16), grid=(4, 4))
    src = export.source(s)
    assert '{"x", "float64[::1, :]", Kind::kArray, 2, 64, 2, \'F\', 0, 40},' in src
    assert '{"k", "int32", Kind::kInt, 0, 32, 0, \'C\', 80, 4},' in src
    assert "void Call(DLTensor* x, DLTensor* out, int64_t k)" in src
    assert "TVM_FFI_DLL_EXPORT_TYPED_FUNC(_scale_cols, Call);" in src
    assert s.ptx in src


@pytest.fixture(scope="module")
def axpb_lib(tmp_path_factory):
    if _CXX is None:
        pytest.skip("needs a C++ compiler to build the exported library")
    s = export.spec(_axpb, AXPB, name="axpb", block=256)
    path = export.build(s, str(tmp_path_factory.mktemp("tvm_ffi") / "axpb.so"))
    return s, path


@needs_cxx
def test_built_library_exports_function_and_metadata(axpb_lib):
    s, path = axpb_lib
    mod = export.load(path)
    assert mod.implements_function("axpb")
    assert json.loads(mod.get_function_doc("axpb")) == s.metadata()
    assert json.loads(mod.pydevice_metadata_axpb()) == s.metadata()
    schema = json.loads(mod.get_function_metadata("axpb")["type_schema"])
    assert [p["type"] for p in schema["named_args"]["params"]] == ["DLTensor*"] * 3 + ["float"]


@needs_cxx
def test_exported_function_refuses_bad_calls_without_a_gpu(axpb_lib):
    _, path = axpb_lib
    f = export.load(path).axpb
    host = tvm_ffi.from_dlpack(np.zeros(8, np.float32))
    with pytest.raises(ValueError, match=r"axpb\(\): parameter `a` \(float32\[::1\]\) needs a CUDA tensor"):
        f(host, host, host, 1.0)
    with pytest.raises(TypeError, match="Expected 4 but got 3"):
        f(host, host, host)
    with pytest.raises(TypeError, match="argument #3"):
        f(host, host, host, "two")


@needs_cxx
def test_export_caches_by_source(tmp_path, monkeypatch):
    monkeypatch.setenv("PYDEVICE_CACHE_DIR", str(tmp_path))
    f = export.export(_axpb, AXPB, name="axpb_cached")
    built = os.listdir(tmp_path / "tvm_ffi")
    assert any(n.startswith("axpb_cached-") and n.endswith(".so") for n in built)
    g = export.export(_axpb, AXPB, name="axpb_cached")  # found in the cache, not rebuilt
    assert sorted(os.listdir(tmp_path / "tvm_ffi")) == sorted(built)
    assert f is not None and g is not None


# ---- on the GPU ------------------------------------------------------------------------


@needs_cxx
@pytest.mark.gpu_only("PyTorch's CUDA tensors through TVM-FFI")
def test_torch_calls_exported_kernel(real_gpu, torch, axpb_lib):
    _, path = axpb_lib
    f = export.load(path).axpb
    g = torch.Generator(device="cuda").manual_seed(1)
    n = 100_003
    a = torch.randn(n, device="cuda", generator=g)
    b = torch.randn(n, device="cuda", generator=g)
    c = torch.full((n,), float("nan"), device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        f(a, b, c, -1.75)
    s.synchronize()
    want = (a.double() * -1.75 + b.double()).float()
    assert torch.allclose(c, want, rtol=1e-6, atol=1e-6)
    with pytest.raises(TypeError, match="parameter `a` is float32"):
        f(a.double(), b, c, 1.0)
    with pytest.raises(ValueError, match="rank 1"):
        f(a.reshape(1, n), b, c, 1.0)
    with pytest.raises(ValueError, match="C-contiguous"):
        f(a[::2], b[: (n + 1) // 2], c[: (n + 1) // 2], 1.0)


@needs_cxx
@pytest.mark.gpu_only("PyTorch's CUDA tensors through TVM-FFI")
def test_torch_calls_exported_2d_kernel_with_int_scalar(real_gpu, torch, tmp_path):
    s = export.spec(_scale_cols, SCALE, name="scale_cols", block=(16, 16), grid=(8, 5))
    f = export.load(export.build(s, str(tmp_path / "scale.so"))).scale_cols
    rows, cols = 123, 77  # covered by 8*16 x 5*16 threads
    x = torch.randn(cols, rows, device="cuda", dtype=torch.float64).t()  # column-major view
    out = torch.zeros(cols, rows, device="cuda", dtype=torch.float64).t()
    f(x, out, 3)
    torch.cuda.synchronize()
    want = x * (torch.arange(cols, device="cuda", dtype=torch.float64) + 3)
    assert torch.equal(out, want)
    with pytest.raises(ValueError, match="out of range"):
        f(x, out, 2**40)
    with pytest.raises(ValueError, match="F-contiguous"):
        f(x.contiguous(), out, 1)


_JAX_CALL = """
import sys
import numpy as np
import jax
import jax.numpy as jnp
import jax_tvm_ffi
import pydevice.tvm_ffi as export

if not any(d.platform == "gpu" for d in jax.devices()):
    print("SKIP: JAX has no GPU device here", jax.devices())
    sys.exit(0)
f = export.load(sys.argv[1]).axpb
jax_tvm_ffi.register_ffi_target("pydevice_test_axpb", f, ["args", "rets", "attrs.s"], platform="gpu")


@jax.jit
def axpb(a, b):
    return jax.ffi.ffi_call("pydevice_test_axpb", jax.ShapeDtypeStruct(a.shape, a.dtype))(a, b, s=np.float32(0.5))


rng = np.random.default_rng(2)
a = rng.standard_normal(5000).astype(np.float32)
b = rng.standard_normal(5000).astype(np.float32)
c = np.asarray(axpb(jnp.asarray(a), jnp.asarray(b)))
np.testing.assert_allclose(c, (a.astype(np.float64) * 0.5 + b).astype(np.float32), rtol=1e-6, atol=1e-6)
print("OK")
"""


@needs_cxx
@pytest.mark.gpu_only("JAX's GPU arrays through jax_tvm_ffi")
def test_jax_calls_exported_kernel(real_gpu, axpb_lib):
    # In a process of its own: JAX and PyTorch initialising CUDA in one process abort it
    # (seen on the H200 with torch 2.11 and JAX's CUDA 13 plugin), and the torch tests of this
    # module run first.
    import importlib.util
    import subprocess
    import sys

    for name in ("jax", "jax_tvm_ffi"):
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"{name} is not installed")
    _, path = axpb_lib
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-c", _JAX_CALL, path], capture_output=True, text=True, timeout=300, env=env)
    if r.returncode == 0 and r.stdout.startswith("SKIP"):
        pytest.skip(r.stdout.strip())
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), f"exit {r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}"
