"""Launches examples/vector_add.py through `pydevice run` on random inputs and checks the
result against NumPy. Usage: python3 scripts/run_example.py PATH_TO_PYDEVICE"""
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

pydevice = sys.argv[1]
n = 1 << 20
rng = np.random.default_rng(0)
a = rng.standard_normal(n, dtype=np.float32)
b = rng.standard_normal(n, dtype=np.float32)
with tempfile.TemporaryDirectory() as d:
    d = Path(d)
    np.save(d / "a.npy", a)
    np.save(d / "b.npy", b)
    np.save(d / "c.npy", np.zeros(n, np.float32))
    subprocess.run([pydevice, "run", "examples/vector_add.py", "--entry", "vector_add",
                    "--grid", str((n + 255) // 256), "--block", "256",
                    "--arg", f"a={d/'a.npy'}", "--arg", f"b={d/'b.npy'}", "--arg", f"c={d/'c.npy'}",
                    "--out", f"c={d/'c_out.npy'}"], check=True)
    c = np.load(d / "c_out.npy")
assert np.array_equal(c, a + b), "vector_add result differs from NumPy"
print(f"launched vector_add on {n} elements: matches NumPy")
