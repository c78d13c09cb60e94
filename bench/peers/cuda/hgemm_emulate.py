"""Emulates the shared-memory pipeline of hgemm_mma lane by lane, without a GPU.

suite::hgemm_mma (bench/peers/cuda/suite.cuh, = hgemm_tile<128, 256, 32, 4>), the dialect's
bench/kernels/hgemm_mma.py (the same offsets in elements) and the shapes of
variants::hgemm_tile (hgemm_variants.cuh) place 16-byte cp.async pieces in XOR-swizzled
shared rows and read mma fragments back with ldmatrix.x4; an index slip there gives wrong
results only on the GPU. This replays the kernel's index arithmetic on a byte array:
cp.async copies (landing when their group is waited for), ldmatrix
(matrix i from the addresses of lanes 8i..8i+7; element (g, 2t) or, transposed, (2t, g)), the
m16n8k16 fragment layouts of the PTX ISA, the grouped block order and the epilogue, and
compares c with a @ b. It also counts bank conflicts: 8 accesses of 16 bytes (a phase of an
ldmatrix, or 8 threads' cp.async stores) that do not cover the 8 16-byte bank groups; and
races: the barriers cut the run into intervals within which warps drift freely, so a stage
that a copy group may still be filling (from the interval of its issue to that of the wait
that covers it) must not be read in those intervals, and a tile's fragments may only be read
after the interval of the wait for its copies (then a barrier makes every thread's copies
visible).

usage: python3 hgemm_emulate.py BM BN BK STAGES m n k [early]
  e.g. python3 hgemm_emulate.py 128 256 32 4 256 512 320   (about a minute)
`early` is hgemm_tile's EARLY order. Prints the largest error against float64 a @ b (~1e-6),
the bank conflicts (0) and the races (0).
"""

import sys

import numpy as np

BM, BN, BK, S = map(int, sys.argv[1:5])
m, n, k = map(int, sys.argv[5:8])
EARLY = len(sys.argv) > 8 and sys.argv[8] == "early"
GROUP = 16
WN = BN // 64
TH = (BM // 64) * WN * 32
SA = BM * BK * 2  # bytes of a stage's a tile
ST = SA + BK * BN * 2
ACH, BCH = BK // 8, BN // 8  # 16-byte chunks a row
AP, BP = BM * ACH // TH, BK * BCH // TH  # pieces a thread copies a stage
SUB = BK // 16


def swz(row, c):
    return c ^ ((row >> 1) & 3) if BK == 32 else c ^ (row & 7)


rng = np.random.default_rng(2)
A = (rng.random((m, k)) * 2 - 1).astype(np.float16)
B = (rng.random((k, n)) * 2 - 1).astype(np.float16)
Af, Bf = A.reshape(-1), B.reshape(-1)
C = np.full((m, n), np.nan, np.float32)
conflicts = 0
races = []


def banks(addrs):
    global conflicts
    if len({(x // 16) % 8 for x in addrs}) != 8:
        conflicts += 1


def ldsm(smem, addrs, trans):
    mats = []
    for i in range(4):
        ad = addrs[8 * i:8 * i + 8]
        banks(ad)
        mats.append(np.stack([smem[x:x + 16].view(np.float16) for x in ad]))
    out = np.zeros((32, 4, 2), np.float16)
    for lane in range(32):
        g, tq = lane // 4, lane % 4
        for i in range(4):
            out[lane, i] = mats[i][g, 2 * tq:2 * tq + 2] if not trans else mats[i][2 * tq:2 * tq + 2, g]
    return out


def mma(acc, fa, b0, b1):
    am, bm = np.zeros((16, 16)), np.zeros((16, 8))
    for lane in range(32):
        g, t = lane // 4, lane % 4
        am[g, 2 * t:2 * t + 2] = fa[lane][0]
        am[g + 8, 2 * t:2 * t + 2] = fa[lane][1]
        am[g, 2 * t + 8:2 * t + 10] = fa[lane][2]
        am[g + 8, 2 * t + 8:2 * t + 10] = fa[lane][3]
        bm[2 * t:2 * t + 2, g] = b0[lane]
        bm[2 * t + 8:2 * t + 10, g] = b1[lane]
    d = am @ bm
    for lane in range(32):
        g, t = lane // 4, lane % 4
        acc[lane] += [d[g, 2 * t], d[g, 2 * t + 1], d[g + 8, 2 * t], d[g + 8, 2 * t + 1]]


gn, gm = n // BN, m // BM
nk = k // BK
for bid in range(gn * gm):
    per = GROUP * gn
    first = bid // per * GROUP
    rows = min(gm - first, GROUP)
    inner = bid % per
    row0, col0 = (first + inner % rows) * BM, inner // rows * BN
    smem = np.zeros(S * ST, np.uint8)
    acc = np.zeros((TH // 32, 32, 4, 8, 4))
    frags = [None, None]  # per buffer: (fa, fb) of every warp
    groups = []  # committed copy groups: dict(tile, stage, copies, issued, waited)
    open_group = []
    reads = []  # (interval, tile) of every fragment load
    state = {"interval": 0, "tile_of_open": None}

    def load_tile(kt):
        st = (kt % S) * ST
        per_ins = [[] for _ in range(AP + BP)]
        for t in range(TH):
            ar, ac, br, bc = t // ACH, t % ACH, t // BCH, t % BCH
            sa = ar * BK * 2 + swz(ar, ac) * 16
            sb = SA + br * BN * 2 + (bc ^ (br & 7)) * 16
            pa = (row0 + ar) * k + ac * 8 + kt * BK
            pb = br * n + col0 + bc * 8 + kt * BK * n
            for i in range(AP):
                d = st + sa + i * (TH // ACH) * BK * 2
                open_group.append((d, Af, pa + i * (TH // ACH) * k))
                per_ins[i].append(d)
            for i in range(BP):
                d = st + sb + i * (TH // BCH) * BN * 2
                open_group.append((d, Bf, pb + i * (TH // BCH) * n))
                per_ins[AP + i].append(d)
        for d in per_ins:
            for q in range(0, TH, 8):
                banks(d[q:q + 8])
        state["tile_of_open"] = kt
        state["issued"] = state["interval"]

    def commit():
        tile = state["tile_of_open"]
        issued = state["issued"] if tile is not None else state["interval"]
        if tile is not None:  # a read of the stage earlier in this interval may come later
            for interval, read in reads:
                if interval == issued and read % S == tile % S:
                    races.append(f"block {bid}: tile {tile} copied while tile {read} is read")
        groups.append({"tile": tile, "copies": list(open_group), "issued": issued,
                       "waited": None})
        open_group.clear()
        state["tile_of_open"] = None

    def wait(pending):
        for g in groups[:len(groups) - pending]:
            if g["waited"] is None:
                g["waited"] = state["interval"]
                for d, src, e in g["copies"]:
                    smem[d:d + 16] = src[e:e + 8].view(np.uint8)

    def barrier():
        state["interval"] += 1

    def read_stage(tile):
        """Check a read of `tile`'s stage in this interval against the copy groups."""
        now = state["interval"]
        stage = tile % S
        reads.append((now, tile))
        for g in groups:
            if g["tile"] is None:
                continue
            end = g["waited"] if g["waited"] is not None else 1 << 30
            if g["tile"] % S == stage and g["issued"] <= now <= end:
                races.append(f"block {bid}: tile {tile} read while tile {g['tile']} is copied")
            if g["tile"] == tile and (g["waited"] is None or g["waited"] >= now):
                races.append(f"block {bid}: tile {tile} read before its copies are waited for")

    def load_frags(buf, tile, s):
        read_stage(tile)
        st = (tile % S) * ST
        out = []
        for w in range(TH // 32):
            wm, wn = w // WN * 64, w % WN * 64
            fa = [ldsm(smem, [st + (wm + l % 16) * BK * 2 + swz(l % 16, 2 * s + l // 16) * 16
                              + i * 16 * BK * 2 for l in range(32)], False) for i in range(4)]
            fb = [ldsm(smem, [st + SA + (l % 16) * BN * 2
                              + (wn // 8 + ((2 * j + l // 16) ^ (l % 16 & 7))) * 16
                              + s * 16 * BN * 2 for l in range(32)], True) for j in range(4)]
            out.append((fa, fb))
        frags[buf] = out

    def mma_all(buf):
        for w, (fa, fb) in enumerate(frags[buf]):
            for i in range(4):
                for j in range(8):
                    mma(acc[w, :, i, j], fa[i], fb[j // 2][:, j % 2 * 2], fb[j // 2][:, j % 2 * 2 + 1])

    for s in range(S - 1):
        if s < nk:
            load_tile(s)
        commit()
    if not EARLY:
        for kt in range(nk):
            wait(S - 2)
            barrier()
            if kt + S - 1 < nk:
                load_tile(kt + S - 1)
            commit()
            load_frags(0, kt, 0)
            for s in range(SUB):
                if s + 1 < SUB:
                    load_frags((s + 1) % 2, kt, s + 1)
                mma_all(s % 2)
    else:
        wait(S - 2)
        barrier()
        load_frags(0, 0, 0)
        for kt in range(nk):
            if kt + S - 1 < nk:
                load_tile(kt + S - 1)
            commit()
            for s in range(SUB):
                if s + 1 < SUB:
                    load_frags((s + 1) % 2, kt, s + 1)
                elif kt + 1 < nk:
                    wait(S - 2)
                    barrier()
                    load_frags((s + 1) % 2, kt + 1, 0)
                mma_all(s % 2)
    for w in range(TH // 32):
        wm, wn = w // WN * 64, w % WN * 64
        for lane in range(32):
            g, q = lane // 4, lane % 4
            for i in range(4):
                for j in range(8):
                    r, col = row0 + wm + i * 16 + g, col0 + wn + j * 8 + 2 * q
                    C[r, col:col + 2] = acc[w, lane, i, j, 0:2]
                    C[r + 8, col:col + 2] = acc[w, lane, i, j, 2:4]

ref = A.astype(np.float64) @ B.astype(np.float64)
print(" ".join(sys.argv[1:]), "| unwritten:", int(np.isnan(C).sum()),
      "max error:", float(np.nanmax(np.abs(C - ref))), "bank conflicts:", conflicts,
      "races:", len(races), *races[:3])
