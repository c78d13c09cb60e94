"""Run the benchmark kernels of bench/kernels/ through pydevice's CLI and print JSON lines.

For each case of bench/cases.py: write its arguments as .npy files (scalars go on the
command line as dtype:value), then call the CLI twice:

  check: $PYDEVICE run FILE --entry NAME --grid G --block B --arg name=VALUE ...
             --out name=PATH ...
         one launch; each output is read back from PATH and compared with the numpy
         reference (a separate launch, because the reduction and histogram kernels
         accumulate into their outputs and would be off after many runs).
  bench: the same with --bench RUNS; the CLI's LAST stdout line must be
         {"kernel": NAME, "median_us": .., "min_us": .., "runs": RUNS}.

Grids and blocks are written "X" or "X,Y". Prints one line per kernel:
{"impl": "ours", "kernel", "median_us", "min_us", "gbps", "ok"[, "note"]}.

usage: PYDEVICE=path/to/pydevice python3 run_ours.py [kernel ...]

With PYDEVICE_BENCH_VARIANT=bounds|asserts|asserts_off the kernels are first rewritten by
variants.py (bounds checks on; an `assert` before every array store; the same compiled
out) and the lines say "impl": "ours+VARIANT": the cost of the checks (bench/NOTES.md).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import cases
import variants

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_S = 60  # per CLI call (scan_lookback would spin forever if its look-back broke)


def dims(t):
    return ",".join(str(d) for d in t)


def arg_value(name, value, tmp):
    """The text after `name=` in --arg: a .npy path for arrays, dtype:value for scalars."""
    if isinstance(value, np.ndarray):
        path = os.path.join(tmp, f"{name}.npy")
        np.save(path, value)
        return path
    return f"{np.asarray(value).dtype.name}:{value}"


def call(cmd):
    """Run the CLI; (stdout, None) on success, (None, why) on failure."""
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {TIMEOUT_S} s"
    if res.returncode != 0:
        tail = (res.stderr.strip() or res.stdout.strip())[-400:]
        return None, f"exit {res.returncode}: {tail}"
    return res.stdout, None


def kernel_file(case, tmp):
    """The kernel's source file, rewritten for PYDEVICE_BENCH_VARIANT if that is set."""
    path = os.path.join(HERE, "kernels", f"{case.name}.py")
    variant = os.environ.get("PYDEVICE_BENCH_VARIANT")
    if not variant:
        return path
    with open(path) as f:
        src = variants.rewrite(variant, f.read())
    out = os.path.join(tmp, f"{case.name}.py")
    with open(out, "w") as f:
        f.write(src)
    return out


def bench(cli, case, tmp):
    args = case.inputs()
    cmd = [cli, "run", kernel_file(case, tmp),
           "--entry", case.name, "--grid", dims(case.grid), "--block", dims(case.block)]
    if case.shared:
        cmd += ["--shared", str(case.shared)]
    for name, value in args.items():
        cmd += ["--arg", f"{name}={arg_value(name, value, tmp)}"]

    outs = {name: os.path.join(tmp, f"{name}.out.npy") for name in case.outputs}
    check_cmd = cmd + [x for name, path in outs.items() for x in ("--out", f"{name}={path}")]
    _, err = call(check_cmd)
    if err:
        return {"ok": False, "note": f"check run: {err}"}
    try:
        ok, note = case.check(args, {name: np.load(path) for name, path in outs.items()})
    except OSError as e:
        ok, note = False, f"output not written: {e}"

    stdout, err = call(cmd + ["--bench", str(cases.RUNS)])
    if err:
        return {"ok": False, "note": f"bench run: {err}"}
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        rec = json.loads(lines[-1])
        median, low = float(rec["median_us"]), float(rec["min_us"])
    except (IndexError, ValueError, KeyError, TypeError):
        return {"ok": False, "note": f"no JSON timing on the last stdout line: {lines[-1:]}"}
    variant = os.environ.get("PYDEVICE_BENCH_VARIANT")
    impl = f"ours+{variant}" if variant else "ours"
    return cases.result(impl, case, median, low, ok, note)


def main(names):
    cli = os.environ.get("PYDEVICE")
    if not cli:
        raise SystemExit("run_ours.py: set PYDEVICE to the pydevice CLI")
    listed = {f[:-3] for f in os.listdir(os.path.join(HERE, "kernels")) if f.endswith(".py")}
    for extra in sorted(listed - cases.BY_NAME.keys()):
        print(f"run_ours: bench/kernels/{extra}.py has no case in cases.py; skipped",
              file=sys.stderr)
    shm = "/dev/shm"  # keep the .npy files in memory where there is room (~1 GiB a case)
    shm = shm if os.path.isdir(shm) and shutil.disk_usage(shm).free > 4 << 30 else None
    for case in cases.select(names):
        print(f"run_ours: {case.name}", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix="pydevice-bench-", dir=shm) as tmp:
            rec = bench(cli, case, tmp)
        if "impl" not in rec:
            rec = {"impl": "ours", "kernel": case.name, **rec}
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
