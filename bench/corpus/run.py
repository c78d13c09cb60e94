"""Runs the public-code corpus (bench/corpus/*.py) on a GPU beside the original CUDA C++.

For every port file and each kernel its `# entry:` lines name, three implementations run on
the same seeded inputs, launched the way the original's host code launches them:

  ours   the port compiled by pydevice (the `pydevice` Python package);
  nvcc   the original kernel (.peers/corpus/<port>.cu, written by fetch_originals.sh) built
         with `nvcc -O3 -arch=sm_90 -cubin`, loaded with CuPy's RawModule;
  nvrtc  the same source compiled by NVRTC through CuPy's RawModule.

Every output the port's TOL names is checked against its NumPy reference (rtol, atol per
output) after one run of the port's launch sequence from fresh inputs. Each kernel is then
timed with CUDA events around each launch (warm-up runs, then the median over the repeats
of its per-launch time). ptxas's registers, stack frame and spill bytes are read for ours
(`ptxas -v` on our PTX) and for nvcc's build (`-Xptxas -v`).

Each port runs in a child process (a device fault would poison the CUDA context of the
rest), under a time limit; a port or implementation that fails is reported as failed and
the run goes on. Writes OUT/report.md (the table and the geomeans) and OUT/results.json.

  python3 bench/corpus/run.py --out $OUT [--only polybench_2mm llmc_adamw ...] [--reps 20]

On the GPU machine the pydevice wheel comes from .carry/pydevice-*.whl.xz
(scripts/device_bundle.sh) when the package is not importable, and the originals from
.peers/corpus (bash bench/corpus/fetch_originals.sh here, then carry .peers/corpus).
"""

import argparse
import glob
import importlib
import json
import lzma
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ORIGINALS = os.path.join(ROOT, ".peers", "corpus")
CUDA_BIN = "/usr/local/cuda/bin"
SEED = 1234
PORT_TIMEOUT_S = 240
TOTAL_BUDGET_S = 540  # the device tool allows 10 minutes a command
TIME_BUDGET_S = 0.6  # timing repeats a port gets, at most, per implementation


def log(*a):
    print("[corpus %s]" % time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


def ports():
    """The port files' stems, sorted."""
    out = []
    for p in sorted(glob.glob(os.path.join(HERE, "*.py"))):
        stem = os.path.splitext(os.path.basename(p))[0]
        if header(stem, "entry:"):  # run.py and emulate.py have none
            out.append(stem)
    return out


def header(stem, key):
    vals = []
    with open(os.path.join(HERE, stem + ".py")) as f:
        for line in f:
            if not line.startswith("#"):
                break
            body = line[1:].strip()
            if body.startswith(key):
                vals.append(body[len(key):].strip())
    return vals


def entries(stem):
    """[(entry, sig)] from the port's header."""
    return list(zip(header(stem, "entry:"), header(stem, "sig:")))


def tool(name):
    p = os.path.join(CUDA_BIN, name)
    return p if os.path.exists(p) else (shutil.which(name) or name)


# ---------------------------------------------------------------- pydevice, ptxas -v

def ensure_pydevice():
    libdevice = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"
    if os.path.exists(libdevice):
        os.environ.setdefault("PYDEVICE_LIBDEVICE", libdevice)
    try:
        import pydevice  # noqa: F401
        return
    except ImportError:
        pass
    whl = sorted(glob.glob(os.path.join(ROOT, ".carry", "pydevice-*.whl.xz")))
    if not whl:
        raise RuntimeError("pydevice is not importable and there is no .carry/pydevice-*.whl.xz")
    site = os.path.join(tempfile.gettempdir(), "pydevice-corpus-site")
    if not os.path.isdir(os.path.join(site, "pydevice")):
        dest = os.path.join(tempfile.gettempdir(), os.path.basename(whl[-1])[:-3])
        with lzma.open(whl[-1]) as src, open(dest, "wb") as dst:
            shutil.copyfileobj(src, dst)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                        "--target", site, dest], check=True)
    sys.path.insert(0, site)


def parse_ptxas(text):
    """{function name: {regs, stack, spill_stores, spill_loads}} from `ptxas -v` output."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            cur = out.setdefault(m.group(1), {"regs": None, "stack": None, "spill_stores": None, "spill_loads": None})
            continue
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            cur = out.get(m.group(1), cur)
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            cur["stack"], cur["spill_stores"], cur["spill_loads"] = (int(g) for g in m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            cur["regs"] = int(m.group(1))
    return out


def mangled_for(names, symbols):
    """{kernel name: its symbol}: the name itself (extern "C") or its Itanium mangling."""
    out = {}
    for n in names:
        for s in symbols:
            if s == n or s.startswith("_Z%d%s" % (len(n), n)):
                out[n] = s
                break
    return out


# ---------------------------------------------------------------- the three implementations

class Impl:
    """Launches a port's kernels one way; `timing` records CUDA events around each launch."""

    def __init__(self, name, launch_one):
        self.name = name
        self.launch_one = launch_one
        self.events = None

    def __call__(self, kernel, grid, block, *args, shared=0):
        kname = kernel_name(kernel)
        if self.events is None:
            self.launch_one(kname, kernel, dim3(grid), dim3(block), args, shared)
            return
        import cupy as cp
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        self.launch_one(kname, kernel, dim3(grid), dim3(block), args, shared)
        b.record()
        self.events.append((kname, a, b))


def kernel_name(k):
    u = getattr(k, "underlying", None)
    return getattr(u, "__name__", None) or getattr(k, "__name__")


def dim3(d):
    if isinstance(d, int):
        return (d, 1, 1)
    d = tuple(int(x) for x in d)
    return d + (1,) * (3 - len(d))


def ours_impl():
    from cuda import device

    def one(kname, kernel, grid, block, args, shared):
        device.launch(kernel, *args, grid=grid, block=block, shared=shared)
    return Impl("ours", one)


def raw_impl(name, module, symbols):
    funcs = {}

    def one(kname, kernel, grid, block, args, shared):
        f = funcs.get(kname)
        if f is None:
            f = funcs[kname] = module.get_function(symbols[kname])
        f(grid, block, args, shared_mem=shared)
    return Impl(name, one)


# ---------------------------------------------------------------- one port (child process)

def fresh(h):
    import cupy as cp
    import numpy as np
    return {k: (cp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in h.items()}


def check(mod, d, ref):
    import cupy as cp
    import numpy as np
    res = {}
    for name, (rtol, atol) in mod.TOL.items():
        got = cp.asnumpy(d[name]).astype(np.float64)
        want = np.asarray(ref[name], dtype=np.float64).reshape(got.shape)
        err = np.abs(got - want)
        bad = ~(err <= atol + rtol * np.abs(want)) & ~(np.isnan(got) & np.isnan(want))
        res[name] = {"ok": not bool(bad.any()), "bad": int(bad.sum()),
                     "max_abs_err": float(np.nanmax(err)) if err.size else 0.0}
    return res


# One thread that waits on the GPU's clock: queued before a timed repeat, it keeps the GPU busy
# while the host enqueues the repeat's launches and events, so that the events measure the
# kernels, not the host's cost per launch (which differs between pydevice and RawKernel).
SPIN_SRC = r"""
extern "C" __global__ void corpus_spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}
"""


def time_impl(mod, h, impl, reps):
    import cupy as cp
    import numpy as np
    d = fresh(h)
    mod.run(impl, d)  # warm-up (module loads, our JIT)
    cp.cuda.runtime.deviceSynchronize()
    t0 = time.perf_counter()
    mod.run(impl, d)
    cp.cuda.runtime.deviceSynchronize()
    once = time.perf_counter() - t0
    n = max(3, min(reps, int(TIME_BUDGET_S / max(once, 1e-6))))
    spin = cp.RawKernel(SPIN_SRC, "corpus_spin")
    # Longer than the host takes for a repeat, at a clock no GPU exceeds (2.5 GHz; the H200's
    # is 1.98), so the spin lasts at least that long on any clock.
    cycles = np.int64(int((1.5 * once + 0.002) * 2.5e9))
    impl.events = []
    for _ in range(n):
        spin((1,), (1,), (cycles,))
        mod.run(impl, d)
        cp.cuda.runtime.deviceSynchronize()
    per = {}
    for kname, a, b in impl.events:
        per.setdefault(kname, []).append(cp.cuda.get_elapsed_time(a, b) * 1000.0)
    impl.events = None
    return {k: sorted(v)[len(v) // 2] for k, v in per.items()}, n


def run_port(stem, reps):
    import numpy as np
    ensure_pydevice()
    import cupy as cp
    sys.path.insert(0, HERE)
    mod = importlib.import_module(stem)
    ents = entries(stem)
    names = [e for e, _ in ents]
    result = {"port": stem, "kernels": {n: {} for n in names}, "impls": {}, "errors": {}}
    rng = np.random.default_rng(SEED)
    h = mod.setup(rng)
    ref = mod.reference(h)
    cc = sys.modules.get("cupy")
    impls = []

    # ours
    try:
        impls.append(ours_impl())
        site = os.environ.get("PTXAS", tool("ptxas"))
        for e, sig in ents:
            ptx = getattr(mod, e).ptx(types=sig, arch="sm_90")
            with tempfile.TemporaryDirectory() as tmp:
                p = os.path.join(tmp, e + ".ptx")
                with open(p, "w") as f:
                    f.write(ptx)
                r = subprocess.run([site, "-v", "-arch=sm_90", "-o", os.devnull, p], capture_output=True, text=True)
            result["kernels"][e]["ours_ptxas"] = parse_ptxas(r.stderr).get(e)
    except Exception as ex:  # noqa: BLE001
        result["errors"]["ours_compile"] = "".join(traceback.format_exception_only(type(ex), ex)).strip()

    # the original, nvcc and NVRTC
    src_path = os.path.join(ORIGINALS, stem + ".cu")
    if not os.path.exists(src_path):
        result["errors"]["original"] = f"{src_path} missing: run bench/corpus/fetch_originals.sh and carry .peers/corpus"
    else:
        with open(src_path) as f:
            src = f.read()
        symbols = None
        try:
            if True:  # the cubin stays on disk for the process's life (RawModule may load it lazily)
                tmp = tempfile.mkdtemp(prefix="corpus-")
                cubin = os.path.join(tmp, stem + ".cubin")
                r = subprocess.run([tool("nvcc"), "-O3", "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o", cubin, src_path],
                                   capture_output=True, text=True, timeout=120)
                if r.returncode != 0:
                    raise RuntimeError("nvcc failed:\n" + r.stderr[-2000:])
                stats = parse_ptxas(r.stderr)
                symbols = mangled_for(names, list(stats))
                for e in names:
                    result["kernels"][e]["nvcc_ptxas"] = stats.get(symbols.get(e, e))
                impls.append(raw_impl("nvcc", cc.RawModule(path=cubin), symbols))
        except Exception as ex:  # noqa: BLE001
            result["errors"]["nvcc_compile"] = str(ex)[-2000:]
        try:
            if symbols is None:
                raise RuntimeError("no symbol names (the nvcc build failed)")
            m = cc.RawModule(code=src, options=("--std=c++17", "-I" + os.path.join(os.path.dirname(CUDA_BIN), "include")),
                             backend="nvrtc")
            m.compile()
            impls.append(raw_impl("nvrtc", m, symbols))
        except Exception as ex:  # noqa: BLE001
            result["errors"]["nvrtc_compile"] = str(ex)[-2000:]

    for impl in impls:
        try:
            d = fresh(h)
            mod.run(impl, d)
            cp.cuda.runtime.deviceSynchronize()
            result["impls"][impl.name] = {"check": check(mod, d, ref)}
            del d
            times, n = time_impl(mod, h, impl, reps)
            result["impls"][impl.name]["us"] = times
            result["impls"][impl.name]["reps"] = n
        except Exception as ex:  # noqa: BLE001
            result["errors"][impl.name + "_run"] = "".join(traceback.format_exception_only(type(ex), ex)).strip()[-2000:]
        cp.get_default_memory_pool().free_all_blocks()
    return result


# ---------------------------------------------------------------- the report

def fmt(v, spec="{:.1f}"):
    return "–" if v is None else spec.format(v)


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def report(results):
    rows = ["| kernel | ours µs | nvcc µs | nvrtc µs | ours/nvcc | ours/nvrtc | regs ours/nvcc | stack ours/nvcc | spill st+ld ours/nvcc | check ours/nvcc/nvrtc |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    r_nvcc, r_nvrtc, failures = [], [], []
    for res in results:
        port = res["port"]
        for e, k in res.get("kernels", {}).items():
            name = f"{port}/{e}"
            t = {i: res.get("impls", {}).get(i, {}).get("us", {}).get(e) for i in ("ours", "nvcc", "nvrtc")}
            ok = {}
            for i in ("ours", "nvcc", "nvrtc"):
                c = res.get("impls", {}).get(i, {}).get("check")
                ok[i] = None if c is None else all(v["ok"] for v in c.values())
            a = t["ours"] / t["nvcc"] if t["ours"] and t["nvcc"] else None
            b = t["ours"] / t["nvrtc"] if t["ours"] and t["nvrtc"] else None
            if ok["ours"] and a:
                r_nvcc.append(a)
            if ok["ours"] and b:
                r_nvrtc.append(b)
            po, pn = k.get("ours_ptxas") or {}, k.get("nvcc_ptxas") or {}
            sp = lambda p: None if p.get("spill_stores") is None else p["spill_stores"] + p["spill_loads"]
            mark = "/".join({True: "ok", False: "FAIL", None: "–"}[ok[i]] for i in ("ours", "nvcc", "nvrtc"))
            rows.append(f"| {name} | {fmt(t['ours'])} | {fmt(t['nvcc'])} | {fmt(t['nvrtc'])} | {fmt(a, '{:.3f}')} | {fmt(b, '{:.3f}')} | "
                        f"{fmt(po.get('regs'), '{}')}/{fmt(pn.get('regs'), '{}')} | {fmt(po.get('stack'), '{}')}/{fmt(pn.get('stack'), '{}')} | "
                        f"{fmt(sp(po), '{}')}/{fmt(sp(pn), '{}')} | {mark} |")
        for what, err in res.get("errors", {}).items():
            failures.append(f"- `{port}` {what}: {err.splitlines()[-1] if err else ''}")
    g1, g2 = geomean(r_nvcc), geomean(r_nvrtc)
    head = [f"# Corpus run {time.strftime('%Y-%m-%d %H:%M')}", "",
            f"Geomean ours/nvcc: **{fmt(g1, '{:.3f}')}** over {len(r_nvcc)} kernels; "
            f"ours/nvrtc: **{fmt(g2, '{:.3f}')}** over {len(r_nvrtc)} (kernels whose output checked).", ""]
    tail = ["", "## Failures", ""] + (failures or ["none"])
    return "\n".join(head + rows + tail) + "\n"


def static_figures(stems):
    """ptxas figures of ours and nvcc's for every kernel, without a GPU (no CuPy needed)."""
    ensure_pydevice()
    sys.path.insert(0, HERE)
    rows = ["| kernel | regs ours/nvcc | stack ours/nvcc | spill st+ld ours/nvcc |", "|---|---:|---:|---:|"]
    for stem in stems:
        try:
            mod = importlib.import_module(stem)
        except Exception as ex:  # noqa: BLE001
            rows.append(f"| {stem} | import failed: {ex} | | |")
            continue
        stats = {}
        src = os.path.join(ORIGINALS, stem + ".cu")
        if os.path.exists(src):
            with tempfile.TemporaryDirectory() as tmp:
                r = subprocess.run([os.environ.get("NVCC", tool("nvcc")), "-O3", "-arch=sm_90", "-cubin", "-Xptxas", "-v",
                                    "-o", os.path.join(tmp, "k.cubin"), src], capture_output=True, text=True)
                stats = parse_ptxas(r.stderr)
        symbols = mangled_for([e for e, _ in entries(stem)], list(stats))
        for e, sig in entries(stem):
            try:
                ptx = getattr(mod, e).ptx(types=sig, arch="sm_90")
                with tempfile.TemporaryDirectory() as tmp:
                    p = os.path.join(tmp, "k.ptx")
                    with open(p, "w") as f:
                        f.write(ptx)
                    r = subprocess.run([os.environ.get("PTXAS", tool("ptxas")), "-v", "-arch=sm_90", "-o", os.devnull, p],
                                       capture_output=True, text=True)
                po = parse_ptxas(r.stderr).get(e) or {}
            except Exception as ex:  # noqa: BLE001
                po = {}
                log(f"{stem}/{e}: {ex}")
            pn = stats.get(symbols.get(e, e)) or {}
            sp = lambda p: None if p.get("spill_stores") is None else p["spill_stores"] + p["spill_loads"]
            rows.append(f"| {stem}/{e} | {fmt(po.get('regs'), '{}')}/{fmt(pn.get('regs'), '{}')} | "
                        f"{fmt(po.get('stack'), '{}')}/{fmt(pn.get('stack'), '{}')} | {fmt(sp(po), '{}')}/{fmt(sp(pn), '{}')} |")
    return "\n".join(rows) + "\n"


def gpu_line():
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True)
        return r.stdout.strip()
    except OSError:
        return "unknown GPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--only", nargs="*", default=None, help="port stems to run (default: all)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--static", action="store_true",
                    help="no GPU: print ptxas's registers, stack and spills of ours and nvcc's only "
                         "($NVCC, $PTXAS name the tools when they are not in /usr/local/cuda/bin)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # child mode: run one port, print JSON
    a = ap.parse_args()
    if a.static:
        print(static_figures(a.only or ports()), end="")
        return
    if a.one:
        print("CORPUS-RESULT " + json.dumps(run_port(a.one, a.reps)), flush=True)
        return
    os.makedirs(a.out, exist_ok=True)
    results = []
    start = time.time()
    for stem in a.only or ports():
        if time.time() - start > TOTAL_BUDGET_S:
            results.append({"port": stem, "kernels": {e: {} for e, _ in entries(stem)},
                            "errors": {"runner": f"not run: the run's {TOTAL_BUDGET_S} s budget was spent"}})
            continue
        log(stem)
        t0 = time.time()
        try:
            r = subprocess.run([sys.executable, __file__, "--one", stem, "--reps", str(a.reps)],
                               capture_output=True, text=True, timeout=PORT_TIMEOUT_S)
            line = [x for x in r.stdout.splitlines() if x.startswith("CORPUS-RESULT ")]
            if line:
                results.append(json.loads(line[-1][len("CORPUS-RESULT "):]))
            else:
                results.append({"port": stem, "kernels": {e: {} for e, _ in entries(stem)},
                                "errors": {"runner": f"exit {r.returncode}: {r.stderr.strip()[-1500:]}"}})
        except subprocess.TimeoutExpired:
            results.append({"port": stem, "kernels": {e: {} for e, _ in entries(stem)},
                            "errors": {"runner": f"timed out after {PORT_TIMEOUT_S} s"}})
        log(f"{stem} done in {time.time() - t0:.1f} s; errors: {list(results[-1].get('errors', {}))}")
        with open(os.path.join(a.out, "results.json"), "w") as f:
            json.dump({"gpu": gpu_line(), "results": results}, f, indent=1)
    text = report(results)
    text = text.replace("\n\n", f"\n\nGPU: {gpu_line()}\n\n", 1)
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
