"""One pydevice kernel, c = a * s + b, exported as an Apache TVM-FFI function and called from
PyTorch and from JAX (examples/tvm_ffi/main.cc calls it from C++).

    python3 examples/tvm_ffi/axpb.py build [--out examples/tvm_ffi/build]   # no GPU needed
    python3 examples/tvm_ffi/axpb.py torch [--lib build/axpb.so]
    python3 examples/tvm_ffi/axpb.py jax   [--lib build/axpb.so]

`build` compiles the kernel to PTX (sm_90) and builds build/axpb.so (with build/axpb.cc, the
generated source) and, with a C++ compiler, the C++ caller build/main. `torch` and `jax`
load the library with tvm_ffi alone (pydevice is not imported), check the result on random
inputs against the framework's own a * s + b and print one JSON line with the time per call.
Exit status 2: skipped (no GPU, or the framework is missing), saying why.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SIGNATURE = "float32[::1], float32[::1], float32[::1], float32"


def kernel():
    from cuda import device

    @device.kernel
    def axpb(a, b, c, s):
        i = device.tid(1)
        if i < c.shape[0]:
            c[i] = a[i] * s + b[i]

    return axpb


def build(out):
    import tvm_ffi.libinfo as info

    import pydevice.tvm_ffi as export

    s = export.spec(kernel(), SIGNATURE, block=256, cover="c")
    lib = export.build(s, os.path.join(out, "axpb.so"))
    print(json.dumps({"built": lib, "metadata": s.metadata()}))
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        print("no C++ compiler: build/main not built")
        return 0
    libdir = os.path.dirname(info.find_libtvm_ffi())
    cmd = [cxx, "-std=c++17", "-O2", f"-I{info.find_include_path()}", f"-I{info.find_dlpack_include_path()}",
           os.path.join(HERE, "main.cc"), "-o", os.path.join(out, "main"), f"-L{libdir}", "-ltvm_ffi",
           f"-Wl,-rpath,{libdir}", "-ldl"]
    subprocess.run(cmd, check=True)
    print(json.dumps({"built": os.path.join(out, "main")}))
    return 0


def timed(call, sync, calls):
    for _ in range(200):
        call()
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    t1 = time.perf_counter()
    sync()
    return (t1 - t0) / calls * 1e6


def run_torch(lib, calls):
    try:
        import torch
    except ImportError:
        print(json.dumps({"caller": "PyTorch", "skipped": "no torch"}))
        return 2
    if not torch.cuda.is_available():
        print(json.dumps({"caller": "PyTorch", "skipped": "no GPU"}))
        return 2
    import tvm_ffi

    f = tvm_ffi.load_module(lib).axpb
    g = torch.Generator(device="cuda").manual_seed(0)
    n = 1 << 20
    a = torch.rand(n, device="cuda", generator=g) - 0.5
    b = torch.rand(n, device="cuda", generator=g) - 0.5
    c = torch.empty_like(a)
    s = 2.5
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):  # TVM-FFI launches on PyTorch's current stream
        f(a, b, c, s)
    stream.synchronize()
    want = (a.double() * s + b.double()).float()
    err = (c - want).abs().max().item()
    # Refusals: a CPU tensor, a wrong dtype.
    refused = []
    for bad in (torch.zeros(n), torch.zeros(n, device="cuda", dtype=torch.float64)):
        try:
            f(bad, b, c, s)
        except Exception as e:  # noqa: BLE001 (the message is what is shown)
            refused.append(f"{type(e).__name__}: {e}".splitlines()[0][:120])
    sa, sb, sc = a[:4096], b[:4096], c[:4096]
    us = timed(lambda: f(sa, sb, sc, s), torch.cuda.synchronize, calls)
    ok = err <= 1e-6 and len(refused) == 2
    print(json.dumps({
        "caller": "PyTorch", "ok": ok, "max_abs_err": err, "us_per_call": round(us, 3),
        "dlpack_c_exchange_api": hasattr(torch.Tensor, "__dlpack_c_exchange_api__"),
        "refused": refused, "torch": torch.__version__,
    }))
    return 0 if ok else 1


def run_jax(lib, calls):
    try:
        import jax
        import jax.numpy as jnp
        import numpy as np
    except ImportError:
        print(json.dumps({"caller": "JAX", "skipped": "no jax"}))
        return 2
    try:
        import jax_tvm_ffi
    except ImportError as e:
        print(json.dumps({"caller": "JAX", "skipped": f"no jax_tvm_ffi ({e})"}))
        return 2
    if not any(d.platform == "gpu" for d in jax.devices()):
        print(json.dumps({"caller": "JAX", "skipped": f"no GPU device in JAX ({jax.devices()})"}))
        return 2
    import tvm_ffi

    f = tvm_ffi.load_module(lib).axpb
    # The kernel's (a, b, c, s) from XLA's (inputs a, b; result c; attribute s).
    jax_tvm_ffi.register_ffi_target("pydevice_axpb", f, ["args", "rets", "attrs.s"], platform="gpu")

    def axpb(a, b, s):
        out = jax.ShapeDtypeStruct(a.shape, a.dtype)
        return jax.ffi.ffi_call("pydevice_axpb", out)(a, b, s=np.float32(s))

    step = jax.jit(axpb, static_argnums=2)
    n = 1 << 20
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    a = jax.random.uniform(k1, (n,), jnp.float32) - 0.5
    b = jax.random.uniform(k2, (n,), jnp.float32) - 0.5
    c = step(a, b, 2.5).block_until_ready()
    want = (np.asarray(a, np.float64) * 2.5 + np.asarray(b, np.float64)).astype(np.float32)
    err = float(np.abs(np.asarray(c) - want).max())
    sa, sb = a[:4096], b[:4096]
    us = timed(lambda: step(sa, sb, 2.5), lambda: step(sa, sb, 2.5).block_until_ready(), calls)
    ok = err <= 1e-6
    print(json.dumps({"caller": "JAX (jit, jax.ffi.ffi_call)", "ok": ok, "max_abs_err": err,
                      "us_per_call": round(us, 3), "jax": jax.__version__}))
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["build", "torch", "jax"])
    p.add_argument("--out", default=os.path.join(HERE, "build"))
    p.add_argument("--lib", default=os.path.join(HERE, "build", "axpb.so"))
    p.add_argument("--calls", type=int, default=2000)
    o = p.parse_args()
    if o.what == "build":
        return build(o.out)
    return (run_torch if o.what == "torch" else run_jax)(os.path.abspath(o.lib), o.calls)


if __name__ == "__main__":
    sys.exit(main())
