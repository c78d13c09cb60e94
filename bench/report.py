"""Merge the suites' JSON lines into one Markdown report.

usage: report.py FILE_OR_DIR ...   (a directory means every *.jsonl in it)

Reads the records printed by bench_cuda, numba_suite.py, cupyx_suite.py and run_ours.py
(lines that are not JSON objects are skipped; a later record for the same impl and kernel
replaces an earlier one) and prints:
  - one table of kernel times: the median of each implementation, with its ratio to nvcc
    (above 1 = slower than nvcc), our GB/s and that as a share of the D2D copy bandwidth;
  - one table of what users would pick instead (frameworks_suite.py: torch, Triton, CuPy,
    cuSPARSE): each call's median, its ratio to nvcc, and ours over it (above 1 = the
    framework is faster than our kernel);
  - one table of the compile and launch costs;
  - the notes of every failed or missing check.
"""

import glob
import json
import os
import sys

COLUMNS = ("ours", "numba", "cupyx")
FRAMEWORKS = ("torch", "triton", "cupy", "cusparse")
COSTS = ("launch_overhead", "compile_ptx", "first_call")


def load(paths):
    records = {}
    for path in paths:
        if not os.path.exists(path):
            raise SystemExit(f"report.py: no such file or directory: {path}")
        files = sorted(glob.glob(os.path.join(path, "*.jsonl"))) if os.path.isdir(path) else [path]
        for name in files:
            with open(name) as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(rec, dict) and "impl" in rec and "kernel" in rec:
                        records[(rec["impl"], rec["kernel"], rec.get("target"))] = rec
    return records


def cell(rec, base):
    """'312.4 (1.05x)' for a timed record, with a mark when its check failed."""
    if rec is None:
        return "—"
    if "median_us" not in rec:
        return "n/a"
    text = f"{rec['median_us']:.1f}"
    if base:
        text += f" ({rec['median_us'] / base:.2f}×)"
    if not rec.get("ok", False):
        text += " ✗"
    return text


def kernel_table(records):
    kernels = []
    for impl, kernel, target in records:
        if (target is None and impl not in FRAMEWORKS and kernel not in COSTS
                and kernel != "d2d_copy" and kernel not in kernels):
            kernels.append(kernel)
    copy = records.get(("nvcc", "d2d_copy", None), {}).get("gbps")
    rows = [
        "| kernel | nvcc µs | ours µs (×nvcc) | numba µs (×nvcc) | cupyx µs (×nvcc) "
        "| GB/s ours | % of D2D copy |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for k in kernels:
        nvcc = records.get(("nvcc", k, None))
        base = nvcc.get("median_us") if nvcc and nvcc.get("ok") else None
        cells = [cell(nvcc, None)] + [cell(records.get((impl, k, None)), base) for impl in COLUMNS]
        ours = records.get(("ours", k, None)) or {}
        gbps = ours.get("gbps")
        cells.append(f"{gbps:.0f}" if gbps else "—")
        cells.append(f"{100 * gbps / copy:.0f}%" if gbps and copy else "—")
        rows.append(f"| {k} | " + " | ".join(cells) + " |")
    if copy:
        rows.append("")
        rows.append(f"D2D copy (cudaMemcpy, bytes read + written): {copy:.0f} GB/s. "
                    "GB/s counts each input read once and each output written once. "
                    "✗: the output did not match the numpy/CPU reference.")
    return rows


def framework_table(records):
    """What users would pick instead: one row per (kernel, framework call)."""
    rows = [
        "| kernel | instead | µs | ×nvcc | ours ÷ it |",
        "|---|---|---:|---:|---:|",
    ]
    for (impl, kernel, target), rec in records.items():
        if impl not in FRAMEWORKS or target is not None:
            continue
        nvcc = records.get(("nvcc", kernel, None)) or {}
        ours = records.get(("ours", kernel, None)) or {}
        base = nvcc.get("median_us") if nvcc.get("ok") else None
        mine = ours.get("median_us") if ours.get("ok") else None
        it = rec.get("median_us")
        cells = [
            f"{kernel}",
            rec.get("call", impl),
            cell(rec, None),
            f"{it / base:.2f}×" if it and base else "—",
            f"{mine / it:.2f}" if it and mine else "—",
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return rows if len(rows) > 2 else []


def cost_table(records):
    rows = ["| cost | value |", "|---|---:|"]
    for (impl, kernel, target), rec in records.items():
        if kernel == "launch_overhead" and "host_us" in rec:
            low = f" (min {rec['host_us_min']:.1f})" if "host_us_min" in rec else ""
            rows.append(f"| host µs per async launch, {impl} | {rec['host_us']:.1f}{low} |")
    for (impl, kernel, target), rec in records.items():
        if kernel == "compile_ptx" and "cold_ms" in rec:
            rows.append(f"| {impl} compile_ptx {target}, ms cold / warm "
                        f"| {rec['cold_ms']:.0f} / {rec['warm_ms']:.1f} |")
        elif kernel == "first_call" and "ms" in rec:
            rows.append(f"| {impl} first call of {target}, ms | {rec['ms']:.0f} |")
        elif kernel == "cost" and "label" in rec:
            rows.append(f"| {rec['label']} | {rec['value']} |")
    return rows if len(rows) > 2 else []


def variant_table(records):
    """Our kernels rewritten by bench/variants.py (`"impl": "ours+VARIANT"`), against ours."""
    rows = ["| kernel | variant | µs | ×ours |", "|---|---|---:|---:|"]
    for (impl, kernel, target), rec in records.items():
        if not impl.startswith("ours+") or target is not None or not rec.get("median_us"):
            continue
        ours = (records.get(("ours", kernel, None)) or {}).get("median_us")
        ratio = f"{rec['median_us'] / ours:.3f}" if ours else "n/a"
        rows.append(f"| {kernel} | {impl[5:]} | {rec['median_us']:.1f} | {ratio} |")
    return rows if len(rows) > 2 else []


def notes(records):
    out = []
    for (impl, kernel, target), rec in records.items():
        if rec.get("ok") is False or rec.get("note"):
            what = f"{kernel} ({target})" if target else kernel
            call = f" ({rec['call']})" if rec.get("call") else ""
            out.append(f"- {impl}{call} {what}: {rec.get('note') or 'check failed'}")
    return out


def main(paths):
    if not paths:
        raise SystemExit(__doc__)
    records = load(paths)
    if not records:
        raise SystemExit("report.py: no records found")
    parts = [
        kernel_table(records),
        variant_table(records),
        framework_table(records),
        cost_table(records),
        notes(records),
    ]
    print("\n\n".join("\n".join(p) for p in parts if p))


if __name__ == "__main__":
    main(sys.argv[1:])
