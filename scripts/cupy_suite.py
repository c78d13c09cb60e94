"""CuPy's own tests of cupyx.jit, cupy.fuse and the user-defined kernels, run on CuPy and on
pydevice side by side (issue #30's acceptance measure).

The tests come from CuPy's repository at the tag of the CuPy installed here
(`scripts/fetch_cupy_tests.sh` extracts them into `.peers/cupy/`, which git ignores: CuPy's
code is never committed). For each suite the test files are copied twice into a temporary
folder:

  cupy/      unchanged: CuPy runs its own tests;
  pydevice/  the same files with ONLY import lines rewritten (`rewrite_source`):
               import cupy            -> import _pydevice_cupy as cupy  (not in the
                                         cupyx.jit tests, which keep `import cupy`)
               from cupyx import jit  -> from pydevice.cupyx import jit
             `_pydevice_cupy` (written beside the tests, `SHIM`) is a module whose `fuse`,
             `ElementwiseKernel` and `ReductionKernel` are pydevice's and whose every other
             attribute is CuPy's (PEP 562 `__getattr__`). Test logic is never touched.

Each test file, cut into parts of `--chunk` tests by CuPy's collection, runs in pytest
processes (`-p no:cacheprovider`, `--junitxml`), several at once, each with a timeout, all
within one `--deadline`. A small plugin (`PLUGIN`) appends each test's outcome and the first
line of its exception to a JSON-lines file as it goes, so a test that kills its process (a
segfault, an abort) is recorded as `crashed` and the part is run again without the tests
already done. A part past its timeout counts its unfinished tests as `timed out`.

The figure per suite is `N passed, M failed` over the tests CuPy itself passes, less the
written exclusions (`EXCLUDED`, each with its reason; they must stay under 3% of the suite,
checked at run time). Scope: the jit and fuse suites are every test of their folders; the
user-kernel suite is the tests whose `ElementwiseKernel`/`ReductionKernel` bodies are Python
(`python_bodied_tests`: every kernel text the test builds, directly or through the helper
methods of its class, parses as Python and has no `;`), since pydevice's bodies are Python and
CuPy's C++ bodies are out of its scope by design (docs/semantics.md §20.1).

The parts run all at once, up to `--jobs`.

Usage (GPU machine, CuPy and pydevice installed):
  python3 scripts/cupy_suite.py --tests .peers/cupy --out $OUT [--suite jit,fuse,userkernel]
      [--jobs N] [--timeout 480] [--keep-tmp]
Writes $OUT/cupy_suite.md (tables per suite, per file and per failure cause), cupy_suite.json
(every test's outcome on both) and the junit files under $OUT/junit/.
"""

from __future__ import annotations

import argparse
import ast
import collections
import concurrent.futures as futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

#: The suites: their test files, relative to CuPy's `tests/` folder (a folder means every
#: `test_*.py` in it).
SUITES = {
    "jit": ["cupyx_tests/jit_tests"],
    "fuse": ["cupy_tests/core_tests/fusion_tests"],
    "userkernel": [
        "cupy_tests/core_tests/test_userkernel.py",
        "cupy_tests/core_tests/test_elementwise.py",
        "cupy_tests/core_tests/test_reduction.py",
        "cupy_tests/core_tests/test_raw.py",
    ],
}

#: Tests left out of the figures, each with its reason: they check CuPy's internals (its
#: generated C++ text, private attributes, private classes), not what a user observes. Keys
#: are `file::Class::test` with parametrization stripped (`_param_N_...` class suffixes and
#: `[...]` test ids), so one key covers every parametrization of a test.
EXCLUDED = {
    # Its four parametrizations (unroll True, False, None, 5).
    "cupyx_tests/jit_tests/test_raw.py::TestRaw::test_range": (
        "jit",
        "asserts on the CUDA C++ text CuPy generates (`#pragma unroll` in "
        "`RawKernel.cached_code`); pydevice compiles to PTX, and its `cached_code` is that PTX "
        "(the kernel's result, checked first in the same test, is not the question)",
    ),
    "cupy_tests/core_tests/fusion_tests/test_misc.py::TestOldFusionExplicit::test_weak_int": (
        "fuse",
        "wraps the fused function in CuPy's private class cupy._core.fusion.Fusion and counts "
        "how often CuPy's old tracer calls it",
    ),
}

#: The limit on exclusions, as a fraction of each suite.
EXCLUDED_MAX = 0.03

#: The module that stands for `cupy` in the rewritten tests.
SHIM = '''"""`cupy` as the rewritten tests see it: pydevice's `fuse`, `ElementwiseKernel` and
`ReductionKernel`, CuPy's everything else (written by scripts/cupy_suite.py)."""
import cupy as _cupy
import pydevice as _pydevice

fuse = _pydevice.fuse
ElementwiseKernel = _pydevice.ElementwiseKernel
ReductionKernel = _pydevice.ReductionKernel


def __getattr__(name):
    return getattr(_cupy, name)


def __dir__():
    return sorted(set(dir(_cupy)) | {"fuse", "ElementwiseKernel", "ReductionKernel"})
'''

#: A pytest plugin that records each test's outcome as it finishes (one JSON line per test in
#: $CUPY_SUITE_LOG), so a crash loses nothing but the crashing test.
PLUGIN = '''import json, os
import pytest

_LOG = os.environ["CUPY_SUITE_LOG"]
_state = {}


def pytest_runtest_logstart(nodeid, location):
    with open(_LOG, "a") as f:
        f.write(json.dumps({"nodeid": nodeid, "event": "start"}) + "\\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    st = _state.setdefault(item.nodeid, {"outcome": "passed", "cause": ""})
    if rep.failed:
        cause = ""
        if call.excinfo is not None:
            msg = str(call.excinfo.value).strip().splitlines()
            cause = call.excinfo.typename + (": " + msg[0] if msg else "")
        if st["outcome"] != "failed":
            st["outcome"], st["cause"] = "failed", cause
    elif rep.skipped and st["outcome"] == "passed":
        st["outcome"] = "xfailed" if hasattr(rep, "wasxfail") else "skipped"


def pytest_runtest_logfinish(nodeid, location):
    st = _state.pop(nodeid, {"outcome": "passed", "cause": ""})
    with open(_LOG, "a") as f:
        f.write(json.dumps({"nodeid": nodeid, "event": "finish", **st}) + "\\n")
'''

_IMPORT_REWRITES = [
    # (pattern over one whole line, replacement); the pattern keeps indentation and comments.
    (re.compile(r"^(\s*)import cupy(\s*(#.*)?)$"), r"\1import _pydevice_cupy as cupy\2"),
    (re.compile(r"^(\s*)from cupyx import jit(\s*(#.*)?)$"), r"\1from pydevice.cupyx import jit\2"),
    (re.compile(r"^(\s*)import cupyx\.jit as jit(\s*(#.*)?)$"), r"\1from pydevice.cupyx import jit\2"),
]


def rewrite_source(text: str, keep_cupy: bool = False) -> str:
    """The test file `text` with its import lines pointed at pydevice (only whole import lines
    matching `_IMPORT_REWRITES` change; every other line is kept byte for byte). With
    `keep_cupy` (the cupyx.jit tests, which use `cupy` only for arrays and constants, never for
    `fuse` or the kernel classes), `import cupy` stays: kernels then read `cupy.inf` from the
    module they really import, as a user's would."""
    out = []
    rules = _IMPORT_REWRITES[1:] if keep_cupy else _IMPORT_REWRITES
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        end = line[len(body):]
        for pat, rep in rules:
            if pat.match(body):
                body = pat.sub(rep, body)
                break
        out.append(body + end)
    return "".join(out)


def base_key(nodeid: str) -> str:
    """`file::Class::test` of a pytest node id, parametrization stripped."""
    parts = nodeid.split("::")
    parts[-1] = parts[-1].split("[", 1)[0]
    if len(parts) == 3:
        parts[1] = re.sub(r"_param_\d+.*$", "", parts[1])
    return "::".join(parts)


# --- the user-kernel suite's scope -----------------------------------------------------------

#: The arguments of each builder that hold code (positions and keywords): the body of an
#: ElementwiseKernel; map, reduce and post-map expressions and the identity of a
#: ReductionKernel. Parameter lists and names are not code.
_KERNELS = {
    "ElementwiseKernel": ((2,), ("operation",)),
    "ReductionKernel": ((2, 3, 4, 5), ("map_expr", "reduce_expr", "post_map_expr", "identity")),
}


def _kernel_texts(node):
    """(builds a kernel, the literal code strings it is given) of the calls in `node`."""
    found, texts = False, []
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in _KERNELS:
                found = True
                pos, kws = _KERNELS[name]
                code = [a for i, a in enumerate(n.args) if i in pos]
                code += [k.value for k in n.keywords if k.arg in kws]
                for a in code:
                    if isinstance(a, ast.Constant) and isinstance(a.value, str):
                        texts.append(a.value)
    return found, texts


def _is_python(text: str) -> bool:
    if ";" in text:
        return False
    try:
        ast.parse(textwrap.dedent(text).strip() or "pass")
    except SyntaxError:
        return False
    return True


def python_bodied_tests(source: str) -> set:
    """`Class::test` (or `test`) of the tests in `source` that build ElementwiseKernels or
    ReductionKernels, directly or through methods of their class (and its bases in the same
    file), all of whose literal texts (parameter lists, bodies, expressions) are Python."""
    tree = ast.parse(source)
    classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}

    def methods(cls, seen=None):
        seen = seen or set()
        if cls.name in seen:
            return {}
        seen.add(cls.name)
        out = {}
        for b in cls.bases:
            if isinstance(b, ast.Name) and b.id in classes:
                out.update(methods(classes[b.id], seen))
        for f in cls.body:
            if isinstance(f, ast.FunctionDef):
                out[f.name] = f
        for f in cls.body:  # class attributes that build kernels count for every test
            if isinstance(f, ast.Assign):
                out.setdefault("<class>", []).append(f)
        return out

    def reached(fn, meths):
        todo, seen, nodes = [fn], set(), []
        while todo:
            f = todo.pop()
            if id(f) in seen:
                continue
            seen.add(id(f))
            nodes.append(f)
            for n in ast.walk(f):
                if (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                        and n.value.id == "self" and isinstance(meths.get(n.attr), ast.FunctionDef)):
                    todo.append(meths[n.attr])
        nodes.extend(meths.get("<class>", []))
        return nodes

    selected = set()
    for top in tree.body:
        if isinstance(top, ast.ClassDef):
            meths = methods(top)
            tests = [(f"{top.name}::{n}", f) for n, f in meths.items()
                     if n.startswith("test") and isinstance(f, ast.FunctionDef)]
        elif isinstance(top, ast.FunctionDef) and top.name.startswith("test"):
            meths, tests = {}, [(top.name, top)]
        else:
            continue
        for name, fn in tests:
            builds, texts = False, []
            for n in reached(fn, meths):
                b, t = _kernel_texts(n)
                builds |= b
                texts += t
            if builds and all(_is_python(t) for t in texts):
                selected.add(name)
    return selected


# --- running ---------------------------------------------------------------------------------

def suite_files(tests_root: Path, suite: str):
    files = []
    for rel in SUITES[suite]:
        p = tests_root / rel
        if p.is_dir():
            files += sorted(p.glob("test_*.py"))
        elif p.exists():
            files.append(p)
    return [f.relative_to(tests_root).as_posix() for f in files]


def file_parts(source: str):
    """The parts of a test file run as separate processes (so that one long file does not
    hold the run back): a pytest `-k` expression per top-level test class (its
    parametrized copies `Class_param_N_...` included, other classes whose names extend it
    excluded), and one for the module-level tests; `[None]` for a file without classes."""
    tree = ast.parse(source)
    classes = [c.name for c in tree.body if isinstance(c, ast.ClassDef) and c.name.startswith("Test")]
    funcs = [f.name for f in tree.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test")]
    if len(classes) < 2:
        return [None]
    parts = []
    for c in classes:
        others = [o for o in classes if o != c and o.startswith(c)]
        parts.append(" and ".join([c] + [f"not {o}" for o in others]))
    if funcs:
        parts.append(" and ".join(f"not {c}" for c in classes))
    return parts


def collect(side_root: Path, rel: str, python: str, timeout: float = 120.0):
    """The node ids of the tests in one file (pytest's collection), or None when it fails."""
    try:
        p = subprocess.run([python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", rel],
                           cwd=side_root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           timeout=timeout, text=True,
                           env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                               [str(side_root)] + [q for q in os.environ.get("PYTHONPATH", "").split(os.pathsep) if q])))
    except subprocess.TimeoutExpired:
        return None
    ids = [line.strip() for line in p.stdout.splitlines() if line.startswith(rel + "::")]
    return ids if p.returncode == 0 and ids else None


def chunks(ids, size: int):
    """`ids` cut into runs of at most `size` (each part is one pytest process)."""
    return [tuple(ids[i:i + size]) for i in range(0, len(ids), size)]


def prepare(tests_root: Path, work: Path) -> None:
    """`work/cupy` (the tests as they are) and `work/pydevice` (imports rewritten), each with
    the recording plugin; `work/pydevice` also gets the `cupy` shim."""
    for side in ("cupy", "pydevice"):
        dst = work / side
        shutil.copytree(tests_root, dst, ignore=shutil.ignore_patterns("__pycache__"))
        if side == "pydevice":
            for f in dst.rglob("*.py"):
                text = f.read_text()
                new = rewrite_source(text, keep_cupy="jit_tests" in f.parts)
                if new != text:
                    f.write_text(new)
            (dst / "_pydevice_cupy.py").write_text(SHIM)
        (dst / "_cupy_suite_plugin.py").write_text(PLUGIN)


def run_file(side_root: Path, rel: str, out: Path, timeout: float, python: str, select=None,
             end: float = float("inf")):
    """Runs one test file (or the part `select`, a `-k` expression, of it) under pytest,
    again without the finished tests after a crash, and returns {nodeid: (outcome, cause)}.
    Nothing runs past `end` (a `time.monotonic()` instant: the whole run's deadline)."""
    if isinstance(select, tuple):  # node ids
        label = f"{select[0].split('::', 1)[-1]}+{len(select) - 1}"
    else:
        label = select
    tag = rel.replace("/", "__") + ("" if label is None else "__" + re.sub(r"\W+", "_", label)[:80])
    log = out / "log" / f"{side_root.name}__{tag}.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)
    results, attempt, deadline = {}, 0, min(time.monotonic() + timeout, end)
    env = dict(os.environ, CUPY_SUITE_LOG=str(log), PYTHONPATH=os.pathsep.join(
        [str(side_root)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    while True:
        attempt += 1
        junit = out / "junit" / f"{side_root.name}__{tag}.{attempt}.xml"
        junit.parent.mkdir(parents=True, exist_ok=True)
        cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "_cupy_suite_plugin",
               f"--junitxml={junit}", "-o", "junit_family=xunit1"]
        if isinstance(select, tuple):
            cmd += [n for n in select if n not in results]
        else:
            cmd += [rel] + [f"--deselect={n}" for n in results]
            if select is not None:
                cmd += ["-k", select]
        left = deadline - time.monotonic()
        timed_out = left <= 0
        rc = None
        if not timed_out:
            try:
                p = subprocess.run(cmd, cwd=side_root, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, timeout=left)
                rc = p.returncode
                (out / "log" / f"{side_root.name}__{tag}.{attempt}.txt").write_bytes(p.stdout)
            except subprocess.TimeoutExpired:
                timed_out = True
        started = None
        if log.exists():
            for line in log.read_text().splitlines():
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev["event"] == "start":
                    started = ev["nodeid"]
                else:
                    results[ev["nodeid"]] = (ev["outcome"], ev["cause"])
                    started = None
        if started is not None and started not in results:
            why = "timed out" if timed_out else f"crashed (exit status {rc})"
            results[started] = ("failed", f"Crash: the test {why}")
            if not timed_out:
                continue
        part = f"{rel}::<{label or 'file'}>"
        if timed_out:
            results[f"{part}<rest>"] = ("failed", "Crash: the file timed out")
        elif rc not in (0, 1, 5) and not results:
            results[f"{part}<collection>"] = ("failed", f"Crash: pytest exit status {rc}")
        elif rc == 2 or rc == 3 or rc == 4:
            results[f"{part}<collection>"] = ("failed", f"Error: pytest exit status {rc} (collection)")
        return results


def summarize(suite, files, cupy_res, pyd_res, scope, md):
    """Appends the suite's tables to `md` (a list of lines) and returns its figures."""
    rows, causes, per_file, excluded = [], collections.Counter(), {}, []
    examples = {}
    for nodeid, (outcome, _) in sorted(cupy_res.items()):
        key = base_key(nodeid)
        rel = nodeid.split("::", 1)[0]
        if scope is not None and "::".join(key.split("::")[1:]) not in scope.get(rel, set()):
            continue
        if key in EXCLUDED:
            excluded.append(nodeid)
            continue
        pf = per_file.setdefault(rel, [0, 0, 0])
        pf[0] += 1
        if outcome != "passed":
            continue
        pf[1] += 1
        p_out, p_cause = pyd_res.get(nodeid, ("failed", "Missing: the test did not run on pydevice"))
        if p_out == "passed":
            pf[2] += 1
        else:
            cause = p_cause or f"{p_out.capitalize()}"
            cause = cause[:160]
            causes[cause] += 1
            examples.setdefault(cause, nodeid)
            rows.append((nodeid, p_out, cause))
    total = sum(v[0] for v in per_file.values())
    ok_cupy = sum(v[1] for v in per_file.values())
    ok_pyd = sum(v[2] for v in per_file.values())
    n_scope = total + len(excluded)
    frac = len(excluded) / n_scope if n_scope else 0.0
    md.append(f"## {suite}\n")
    md.append(f"**{ok_pyd} passed, {ok_cupy - ok_pyd} failed** over the {ok_cupy} tests CuPy passes "
              f"({100.0 * ok_pyd / ok_cupy if ok_cupy else 0:.1f}%); {n_scope} tests in scope, "
              f"{len(excluded)} excluded ({100 * frac:.1f}%, limit {100 * EXCLUDED_MAX:.0f}%).\n")
    cut = [sum(1 for n in r if n.endswith("<rest>")) for r in (cupy_res, pyd_res)]
    if any(cut):
        md.append(f"**Incomplete:** {cut[0]} part(s) on CuPy and {cut[1]} on pydevice ran out of time "
                  "(`--timeout`, `--deadline`); their unfinished tests are missing from CuPy's "
                  "column and failures in pydevice's.\n")
    notes = sorted({f"{side}: `{n}` ({c})" for side, r in (("CuPy", cupy_res), ("pydevice", pyd_res))
                    for n, (_, c) in r.items() if "::<" in n and not n.endswith("<rest>")})
    if notes:
        md.append("**Parts that did not run** (their tests are missing above): " + "; ".join(notes) + "\n")
    md.append("| file | tests | CuPy passes | pydevice passes |")
    md.append("|---|---:|---:|---:|")
    for rel in sorted(per_file):
        t, c, p = per_file[rel]
        md.append(f"| `{rel}` | {t} | {c} | {p} |")
    md.append("")
    if causes:
        md.append("| failures | cause (first line of the exception) | e.g. |")
        md.append("|---:|---|---|")
        for cause, n in causes.most_common():
            c = cause.replace("|", "\\|").replace("\n", " ")
            md.append(f"| {n} | `{c}` | `{examples[cause].split('::', 1)[-1][:80]}` |")
        md.append("")
    if excluded:
        md.append("Excluded: " + ", ".join(sorted({f"`{base_key(n)}` ({EXCLUDED[base_key(n)][1]})"
                                                     for n in excluded})) + "\n")
    return {"suite": suite, "in_scope": n_scope, "excluded": len(excluded),
            "excluded_fraction": frac, "cupy_passes": ok_cupy, "pydevice_passes": ok_pyd,
            "failures": [list(r) for r in rows]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", default=".peers/cupy", help="the folder fetch_cupy_tests.sh filled")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--suite", default="jit,fuse,userkernel")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=float, default=480.0,
                    help="seconds per test file part (a class) and side")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--deadline", type=float, default=540.0,
                    help="seconds for the whole run: parts still running then are stopped and "
                         "counted as timed out, and the report is written")
    ap.add_argument("--chunk", type=int, default=10, help="tests per pytest process")
    ap.add_argument("--only", default=None, help="run only the test files whose path contains this")
    ap.add_argument("--keep-tmp", action="store_true")
    args = ap.parse_args(argv)

    root = Path(args.tests).resolve()
    tests_root = root / "tests" if (root / "tests").is_dir() else root
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    suites = [s.strip() for s in args.suite.split(",") if s.strip()]
    for s in suites:
        if s not in SUITES:
            ap.error(f"unknown suite {s!r} (known: {', '.join(SUITES)})")
    work = Path(tempfile.mkdtemp(prefix="cupy_suite_"))
    t0 = time.monotonic()
    try:
        prepare(tests_root, work)
        jobs, files_of = [], {}
        for s in suites:
            files_of[s] = [f for f in suite_files(tests_root, s) if args.only is None or args.only in f]
        # Each file is cut into parts of at most --chunk tests (by CuPy's collection; by test
        # class where collecting fails), so that no part holds the run back.
        # The user-kernel suite runs only its Python-bodied tests (the rest is out of scope).
        scopes = {s: {rel: python_bodied_tests((tests_root / rel).read_text()) for rel in files_of[s]}
                  for s in suites if s == "userkernel"}
        every = [(s, rel) for s in suites for rel in files_of[s]
                 if s not in scopes or scopes[s][rel]]
        with futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            collected = list(pool.map(lambda sr: collect(work / "cupy", sr[1], args.python), every))
        for (s, rel), ids in zip(every, collected):
            if ids and s in scopes:
                ids = [n for n in ids if "::".join(base_key(n).split("::")[1:]) in scopes[s][rel]]
            parts = chunks(ids, args.chunk) if ids else file_parts((tests_root / rel).read_text())
            for select in parts:
                for side in ("cupy", "pydevice"):
                    jobs.append((s, side, rel, select))
        results = {(s, side): {} for s in suites for side in ("cupy", "pydevice")}
        with futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            end = t0 + args.deadline
            todo = {pool.submit(run_file, work / side, rel, out, args.timeout, args.python, select, end):
                    (s, side, rel) for s, side, rel, select in jobs}
            for f in futures.as_completed(todo):
                s, side, rel = todo[f]
                try:
                    results[(s, side)].update(f.result())
                except Exception as e:  # the harness itself must not stop on one file
                    results[(s, side)][f"{rel}::<harness>"] = ("failed", f"Harness: {e!r}")
                print(f"[{time.monotonic() - t0:6.0f}s] {side:8s} {rel}", flush=True)
        version = (root / "VERSION").read_text().strip() if (root / "VERSION").exists() else "?"
        md = [f"# CuPy's own tests on pydevice\n",
              f"CuPy tests of `{version}`; imports rewritten by `scripts/cupy_suite.py`; "
              f"{time.monotonic() - t0:.0f} s.\n",
              "| suite | in scope | excluded | CuPy passes | pydevice passes | rate |",
              "|---|---:|---:|---:|---:|---:|"]
        body, figures, over = [], [], []
        for s in suites:
            scope = scopes.get(s)
            fig = summarize(s, files_of[s], results[(s, "cupy")], results[(s, "pydevice")], scope, body)
            figures.append(fig)
            rate = 100.0 * fig["pydevice_passes"] / fig["cupy_passes"] if fig["cupy_passes"] else 0.0
            md.append(f"| {s} | {fig['in_scope']} | {fig['excluded']} | {fig['cupy_passes']} | "
                      f"{fig['pydevice_passes']} | {rate:.1f}% |")
            if fig["excluded_fraction"] >= EXCLUDED_MAX:
                over.append(s)
        md.append("")
        md += body
        (out / "cupy_suite.md").write_text("\n".join(md) + "\n")
        raw = {f"{s}/{side}": {k: list(v) for k, v in r.items()} for (s, side), r in results.items()}
        (out / "cupy_suite.json").write_text(json.dumps({"figures": figures, "results": raw}, indent=1))
        print("\n".join(md[:4 + len(suites)]))
        if over:
            print(f"error: exclusions reach {100 * EXCLUDED_MAX:.0f}% of suite(s) {', '.join(over)}",
                  file=sys.stderr)
            return 1
        return 0
    finally:
        if args.keep_tmp:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
