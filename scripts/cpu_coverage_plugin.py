"""pytest plugin of scripts/cpu_coverage.sh: counts the Python GPU tests (those taking a GPU
fixture: `gpu`, `cupy`, `real_gpu`, `torch`) by outcome, and lists those that did not pass.

Loaded with `-p cpu_coverage_plugin` (scripts/ on PYTHONPATH); writes its summary to the file
named by `PYDEVICE_COVERAGE_OUT` (default: stdout at the end of the session). With
`PYDEVICE_COVERAGE_ONLY_GPU=1` the other tests are deselected."""

import os

_GPU_FIXTURES = {"gpu", "cupy", "real_gpu", "torch"}
_RESULTS = {}


def pytest_runtest_logreport(report):
    if report.when == "setup" and report.skipped:
        _RESULTS[report.nodeid] = ("skipped", str(report.longrepr[-1]) if report.longrepr else "")
    elif report.when == "call":
        _RESULTS[report.nodeid] = (report.outcome, "")
    elif report.when == "setup" and report.failed:
        _RESULTS[report.nodeid] = ("error", "")


_GPU_IDS = set()


def pytest_collection_modifyitems(session, config, items):  # noqa: ARG001
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if _GPU_FIXTURES & names:
            _GPU_IDS.add(item.nodeid)
    if os.environ.get("PYDEVICE_COVERAGE_ONLY_GPU"):
        # Only the GPU tests run (the count needs no other).
        keep = [i for i in items if i.nodeid in _GPU_IDS]
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid not in _GPU_IDS])
        items[:] = keep


def pytest_sessionfinish(session, exitstatus):
    gpu = {k: v for k, v in _RESULTS.items() if k in _GPU_IDS}
    passed = sorted(k for k, v in gpu.items() if v[0] == "passed")
    other = sorted((k, v) for k, v in gpu.items() if v[0] != "passed")
    lines = [f"python GPU tests: {len(gpu)}, passed on this machine: {len(passed)}"]
    for k, (outcome, why) in other:
        lines.append(f"  {outcome}: {k} {why[:160]}")
    text = "\n".join(lines) + "\n"
    out = os.environ.get("PYDEVICE_COVERAGE_OUT")
    if out:
        with open(out, "w") as f:
            f.write(text)
    else:
        print("\n" + text)
