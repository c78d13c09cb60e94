"""Measures the accuracy of device math (`import math` in kernels, lowered through libdevice)
in ulps against a float64 CPU reference (Python's math module), for float32 and float64.

Usage: python3 scripts/math_accuracy.py PATH_TO_PYDEVICE [OUT.md]
Runs `pydevice run` on the GPU; prints a table of max and mean ulp error per function and
exits non-zero if any function is off by more than its documented bound."""
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

# name: (domain of x, domain of y or None, bound in ulps for float32, for float64)
FUNCS = {
    "sqrt": ((0, 1e4), None, 0.5, 0.5), "exp": ((-20, 20), None, 2, 2), "exp2": ((-20, 20), None, 2, 2),
    "expm1": ((-5, 5), None, 2, 2), "log": ((1e-3, 1e4), None, 2, 2), "log2": ((1e-3, 1e4), None, 2, 2),
    "log10": ((1e-3, 1e4), None, 2, 2), "log1p": ((-0.9, 100), None, 2, 2), "sin": ((-10, 10), None, 2, 2),
    "cos": ((-10, 10), None, 2, 2), "tan": ((-1.5, 1.5), None, 4, 2), "asin": ((-1, 1), None, 4, 2),
    "acos": ((-1, 1), None, 4, 2), "atan": ((-10, 10), None, 2, 2), "sinh": ((-10, 10), None, 3, 2),
    "cosh": ((-10, 10), None, 2, 2), "tanh": ((-5, 5), None, 2, 2), "asinh": ((-10, 10), None, 3, 2),
    "acosh": ((1, 100), None, 4, 2), "atanh": ((-0.99, 0.99), None, 3, 2), "erf": ((-4, 4), None, 2, 2),
    "erfc": ((-4, 4), None, 5, 5), "gamma": ((0.1, 10), None, 8, 10), "lgamma": ((0.1, 10), None, 8, 8),
    "floor": ((-100, 100), None, 0, 0), "ceil": ((-100, 100), None, 0, 0), "trunc": ((-100, 100), None, 0, 0),
    "fabs": ((-100, 100), None, 0, 0), "cbrt": ((-100, 100), None, 1, 1),
    "pow": ((0.1, 10), (-5, 5), 2, 2), "atan2": ((-10, 10), (-10, 10), 3, 2),
    "copysign": ((-10, 10), (-10, 10), 0, 0), "fmod": ((-100, 100), (0.5, 10), 0, 0),
    "hypot": ((-100, 100), (-100, 100), 3, 2),
}
names = list(FUNCS)
lines = ["import math", "from cuda import device", "", "@device.kernel", "def m(x, y, out):",
         "    i = device.tid(1)", "    if i < x.shape[0]:"]
for k, name in enumerate(names):
    call = "device.cbrt" if name == "cbrt" else f"math.{name}"
    args = f"x[i, {k}], y[i, {k}]" if FUNCS[name][1] else f"x[i, {k}]"
    lines.append(f"        out[i, {k}] = {call}({args})")
source = "\n".join(lines) + "\n"

pydevice = sys.argv[1]
n = 4096
rng = np.random.default_rng(7)
rows = []
failed = False
with tempfile.TemporaryDirectory() as d:
    d = Path(d)
    (d / "m.py").write_text(source)
    for dtype, col in ((np.float32, 2), (np.float64, 3)):
        x = np.empty((n, len(names)), dtype)
        y = np.ones((n, len(names)), dtype)
        for k, name in enumerate(names):
            lo, hi = FUNCS[name][0]
            x[:, k] = rng.uniform(lo, hi, n)
            if FUNCS[name][1]:
                lo, hi = FUNCS[name][1]
                y[:, k] = rng.uniform(lo, hi, n)
        np.save(d / "x.npy", x)
        np.save(d / "y.npy", y)
        np.save(d / "out.npy", np.zeros_like(x))
        subprocess.run([pydevice, "run", str(d / "m.py"), "--entry", "m", "--grid", str((n + 127) // 128),
                        "--block", "128", "--arg", f"x={d/'x.npy'}", "--arg", f"y={d/'y.npy'}",
                        "--arg", f"out={d/'out.npy'}", "--out", f"out={d/'res.npy'}"], check=True,
                       stderr=subprocess.DEVNULL)
        got = np.load(d / "res.npy")
        for k, name in enumerate(names):
            f = math.gamma if name == "gamma" else (lambda v: math.copysign(abs(v) ** (1 / 3), v)) if name == "cbrt" else getattr(math, name)
            ref = np.array([f(float(a), float(b)) if FUNCS[name][1] else f(float(a)) for a, b in zip(x[:, k], y[:, k])])
            ulp = np.spacing(np.abs(ref).astype(dtype)).astype(np.float64)
            if name == "lgamma":
                # lgamma has zeros at 1 and 2, where relative error is meaningless (and CPython's
                # own lgamma loses digits): measure in ulps of 1.0 there.
                ulp = np.maximum(ulp, np.spacing(dtype(1.0)))
            err = np.abs(got[:, k].astype(np.float64) - ref) / ulp
            worst, mean = float(err.max()), float(err.mean())
            bound = FUNCS[name][col]
            ok = worst <= bound + 0.5
            failed |= not ok
            rows.append((name, np.dtype(dtype).name, worst, mean, bound, ok))

table = ["| function | dtype | max ulp | mean ulp | bound | ok |", "|---|---|---:|---:|---:|---|"]
table += [f"| math.{n_} | {t} | {w:.2f} | {m:.3f} | {b} | {'yes' if ok else 'NO'} |" for n_, t, w, m, b, ok in rows]
text = "\n".join(table)
print(text)
if len(sys.argv) > 2:
    Path(sys.argv[2]).write_text(text + "\n")
sys.exit(1 if failed else 0)
