"""Variants of the benchmark kernels that measure the cost of pydevice's checks.

`run_ours.py` compiles `bench/kernels/NAME.py` as is; with PYDEVICE_BENCH_VARIANT set it
compiles a rewritten copy instead:

  bounds   every `@device.kernel` gets `bounds_check=True` (every array access checked).
  asserts  every array store `a[i] = v` / `a[i] op= v` (one statement on its line) is
           preceded by `assert 0 <= i < a.shape[0] and ..., "index"` for each index, an
           assertion that never fails, as a user guarding their stores would write it
           (compiled in: the default).
  asserts_off  the same with `assertions=False` on the kernel (must time as the original).
  wraparound  `wraparound=False` taken off the kernels that have it (spmv_csr): Python's
           negative indices, the cost of the wrap (bench/NOTES.md, "spmv_csr and the wrap").
  sreg_order  `device.tid(1)` written out as `int32(block_dim.x * block_idx.x +
           thread_idx.x)`: the same value, but the PTX reads %ntid.x before %ctaid.x, and
           ptxas then reads ctaid with S2R and ntid with ULDC (nvcc's and cupyx's scan_block
           prologue) instead of S2UR and LDC (bench/NOTES.md, "Session 17").

usage: PYDEVICE=... PYDEVICE_BENCH_VARIANT=bounds python3 run_ours.py [kernel ...]
       python3 variants.py VARIANT FILE.py   (prints the rewritten source)
"""

import re
import sys

STORE = re.compile(r"^(\s*)([A-Za-z_]\w*)\[(.+)\]\s*(?:[-+*/%&|^]|//|<<|>>|\*\*)?=(?!=)(.*)$")


def split_top(text):
    """The comma-separated parts of `text` outside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return parts


def decorate(src, option):
    """Add `option` to every `@device.kernel` decorator."""
    src = re.sub(r"@device\.kernel\(", f"@device.kernel({option}, ", src)
    return re.sub(r"@device\.kernel(?=\s*\n)", f"@device.kernel({option})", src)


def add_asserts(src):
    out = []
    for line in src.splitlines():
        m = STORE.match(line)
        if m and "[" not in m.group(3) and ":" not in m.group(3):
            indent, name, idx = m.group(1), m.group(2), split_top(m.group(3))
            conds = " and ".join(f"0 <= ({i}) < {name}.shape[{d}]" for d, i in enumerate(idx))
            out.append(f'{indent}assert {conds}, "index"')
        out.append(line)
    return "\n".join(out) + "\n"


def rewrite(variant, src):
    if variant == "bounds":
        return decorate(src, "bounds_check=True")
    if variant == "asserts":
        return add_asserts(src)
    if variant == "asserts_off":
        return decorate(add_asserts(src), "assertions=False")
    if variant == "wraparound":
        src = re.sub(r"@device\.kernel\(wraparound=False\)", "@device.kernel", src)
        src = re.sub(r"(@device\.kernel\(.*?)wraparound=False, ", r"\1", src)
        return re.sub(r"(@device\.kernel\(.*?), wraparound=False", r"\1", src)
    if variant == "sreg_order":
        return src.replace(
            "device.tid(1)",
            "device.int32(device.block_dim.x * device.block_idx.x + device.thread_idx.x)",
        )
    raise SystemExit(
        f"unknown PYDEVICE_BENCH_VARIANT {variant!r}: bounds, asserts, asserts_off, wraparound, "
        "sreg_order"
    )


if __name__ == "__main__":
    with open(sys.argv[2]) as f:
        sys.stdout.write(rewrite(sys.argv[1], f.read()))
