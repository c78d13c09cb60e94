"""SASS instruction counts of the corpus kernels, ours against nvcc's, without a GPU.

For each kernel of the given ports (default: all), compiles ours with the `pydevice` CLI
(`pydevice compile --arch sm_90`), assembles it with ptxas, and counts the instructions
`cuobjdump -sass` prints (NOPs and the trailing `BRA` to itself left out); nvcc's figure is
the same count for the kernel in `nvcc -O3 -arch=sm_90 -cubin` of the original
(.peers/corpus/<port>.cu, from fetch_originals.sh). Registers come from the cubins
(`cuobjdump -res-usage`). Prints a Markdown table and the geomean of ours/nvcc.

  [PYDEVICE=target/debug/pydevice] [NVCC=..] [PTXAS=..] [CUOBJDUMP=..] \
      python3 bench/corpus/sass_counts.py [PORT ...] [--sass DIR]

`--sass DIR` also writes each kernel's SASS, ours and nvcc's, to DIR/<port>.<entry>.{ours,nvcc}.sass.
"""

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ORIGINALS = os.path.join(ROOT, ".peers", "corpus")
sys.path.insert(0, HERE)
from run import entries, mangled_for, ports  # noqa: E402


def tool(env, name):
    if os.environ.get(env):
        return os.environ[env]
    for d in ["/usr/local/cuda/bin", os.path.join(sysconfig.get_paths()["purelib"], "nvidia", "cu13", "bin")]:
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return shutil.which(name) or name


def functions(sass):
    """{function symbol: [instruction text]} from `cuobjdump -sass` output."""
    out, cur = {}, None
    for line in sass.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            cur = out.setdefault(m.group(1), [])
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?);", line)
        if m and cur is not None:
            cur.append(m.group(1).strip())
    return out


def count(insts):
    body = [i for i in insts if not i.startswith("NOP")]
    while body and re.match(r"BRA `?\(?\.L_x_\d+\)?", body[-1]) and len(body) > 1 and body[-2].startswith("EXIT"):
        body.pop()
    return len(body)


def registers(cubin, cuobjdump):
    r = subprocess.run([cuobjdump, "-res-usage", cubin], capture_output=True, text=True)
    out, cur = {}, None
    for line in r.stdout.splitlines():
        m = re.search(r"Function (\S+):", line)
        if m:
            cur = m.group(1)
        m = re.search(r"REG:(\d+)", line)
        if m and cur:
            out[cur] = int(m.group(1))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ports", nargs="*")
    ap.add_argument("--sass", help="write each kernel's SASS here")
    a = ap.parse_args()
    pyd = os.environ.get("PYDEVICE") or os.path.join(ROOT, "target", "debug", "pydevice")
    nvcc, ptxas, cuobjdump = tool("NVCC", "nvcc"), tool("PTXAS", "ptxas"), tool("CUOBJDUMP", "cuobjdump")
    if a.sass:
        os.makedirs(a.sass, exist_ok=True)
    rows = ["| kernel | SASS ours/nvcc | ratio | regs ours/nvcc |", "|---|---:|---:|---:|"]
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for stem in a.ports or ports():
            ref, ref_regs = {}, {}
            src = os.path.join(ORIGINALS, stem + ".cu")
            if os.path.exists(src):
                cub = os.path.join(tmp, "nvcc.cubin")
                r = subprocess.run([nvcc, "-O3", "-arch=sm_90", "-cubin", "-o", cub, src], capture_output=True, text=True)
                if r.returncode == 0:
                    ref = functions(subprocess.run([cuobjdump, "-sass", cub], capture_output=True, text=True).stdout)
                    ref_regs = registers(cub, cuobjdump)
            symbols = mangled_for([e for e, _ in entries(stem)], list(ref))
            for e, sig in entries(stem):
                ptx, cub = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
                r = subprocess.run([pyd, "compile", "--entry", e, "--sig", sig, "--arch", "sm_90", "-o", ptx,
                                    os.path.join(HERE, stem + ".py")], capture_output=True, text=True)
                if r.returncode != 0:
                    rows.append(f"| {stem}/{e} | compile failed: {r.stderr.strip()[:80]} | | |")
                    continue
                subprocess.run([ptxas, "-O3", "-arch=sm_90", "-o", cub, ptx], check=True)
                ours = functions(subprocess.run([cuobjdump, "-sass", cub], capture_output=True, text=True).stdout)
                regs = registers(cub, cuobjdump)
                oi = ours.get(e, [])
                ni = ref.get(symbols.get(e, e))
                if a.sass:
                    with open(os.path.join(a.sass, f"{stem}.{e}.ours.sass"), "w") as f:
                        f.write("\n".join(oi) + "\n")
                    if ni is not None:
                        with open(os.path.join(a.sass, f"{stem}.{e}.nvcc.sass"), "w") as f:
                            f.write("\n".join(ni) + "\n")
                nc = count(ni) if ni is not None else None
                ratio = count(oi) / nc if nc else None
                if ratio:
                    ratios.append(ratio)
                rows.append(f"| {stem}/{e} | {count(oi)}/{nc if nc is not None else '-'} | "
                            f"{'%.3f' % ratio if ratio else '-'} | {regs.get(e, '-')}/{ref_regs.get(symbols.get(e, e), '-')} |")
    print("\n".join(rows))
    if ratios:
        print(f"\ngeomean SASS ours/nvcc over {len(ratios)} kernels: "
              f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}")


if __name__ == "__main__":
    main()
