//! GPU tests of shared and local memory, atomics, memory ordering, warp collectives and the
//! numeric intrinsics, each against a CPU reference.

use super::*;

on_each_backend! {
fn shared_memory_tiled_matmul(dev) {
    let k = kernel(
        &dev,
        &fixture("shared_tiled_matmul.py"),
        "matmul",
        "float32[:, ::1], float32[:, ::1], float32[:, ::1]",
    );
    let (m, kk, n) = (200usize, 300usize, 170usize);
    let mut r = Rng(11);
    let a: Vec<f32> = (0..m * kk).map(|_| r.f32(-1.0, 1.0)).collect();
    let b: Vec<f32> = (0..kk * n).map(|_| r.f32(-1.0, 1.0)).collect();
    let (_ab, aa) = array(&dev, &a, &[m as u64, kk as u64], &[kk as i64, 1]);
    let (_bb, ba) = array(&dev, &b, &[kk as u64, n as u64], &[n as i64, 1]);
    let (cb, ca) = array(
        &dev,
        &vec![0f32; m * n],
        &[m as u64, n as u64],
        &[n as i64, 1],
    );
    k.launch(
        &[aa, ba, ca],
        [blocks(n, 16), blocks(m, 16), 1],
        [16, 16, 1],
    );
    let c: Vec<f32> = from_bytes(&dev.download(&cb).expect("download"));
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..kk)
                .map(|t| f64::from(a[i * kk + t]) * f64::from(b[t * n + j]))
                .sum();
            assert!(
                (f64::from(c[i * n + j]) - want).abs() < 1e-3,
                "({i}, {j}): {} vs {want}",
                c[i * n + j]
            );
        }
    }
}
}

on_each_backend! {
fn block_and_warp_shuffle_reduction(dev) {
    let k = kernel(
        &dev,
        &fixture("warp_reduction.py"),
        "reduce",
        "float32[:], float32[::1]",
    );
    let n = (1 << 20) + 13;
    let mut r = Rng(12);
    let x: Vec<f32> = (0..n).map(|_| r.f32(0.0, 1.0)).collect();
    let (_xb, xa) = vec1(&dev, &x);
    let (ob, oa) = vec1(&dev, &[0f32]);
    k.launch(&[xa, oa], [blocks(n, 256), 1, 1], [256, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let want: f64 = x.iter().map(|v| f64::from(*v)).sum();
    assert!(
        (f64::from(out[0]) - want).abs() / want < 1e-4,
        "{} vs {want}",
        out[0]
    );
}
}

on_each_backend! {
fn histogram_with_integer_and_float_atomics(dev) {
    let k = kernel(
        &dev,
        &fixture("histogram_atomics.py"),
        "hist",
        "uint8[:], int32[::1], float64[::1], float64[:]",
    );
    let n = 1 << 20;
    let mut r = Rng(13);
    let data: Vec<u8> = (0..n).map(|_| (r.next() % 256) as u8).collect();
    let w: Vec<f64> = (0..n).map(|_| f64::from(r.f32(0.0, 2.0))).collect();
    let (_db, da) = vec1(&dev, &data);
    let (bb, ba) = vec1(&dev, &[0i32; 256]);
    let (sb, sa) = vec1(&dev, &[0f64; 8]);
    let (_wb, wa) = vec1(&dev, &w);
    k.launch(&[da, ba, sa, wa], [blocks(n, 256), 1, 1], [256, 1, 1]);
    let bins: Vec<i32> = from_bytes(&dev.download(&bb).expect("download"));
    let sums: Vec<f64> = from_bytes(&dev.download(&sb).expect("download"));
    let mut want = [0i32; 256];
    let mut want_s = [0f64; 8];
    for (d, wt) in data.iter().zip(&w) {
        want[*d as usize] += 1;
        want_s[(*d % 8) as usize] += wt;
    }
    assert_eq!(bins, want.to_vec());
    for k in 0..8 {
        assert!((sums[k] - want_s[k]).abs() < 1e-6 * want_s[k], "bin {k}");
    }
}
}

const SCAN: &str = r#"
from cuda import device
from cuda.device import int32

BLOCK = 1024

@device.kernel
def scan(x, out):
    buf = device.shared_array(BLOCK, int32)
    t = device.thread_idx.x
    i = device.tid(1)
    buf[t] = x[i] if i < len(x) else 0
    device.syncthreads()
    offset = 1
    while offset < BLOCK:
        v = buf[t - offset] if t >= offset else 0
        device.syncthreads()
        buf[t] += v
        device.syncthreads()
        offset *= 2
    if i < len(out):
        out[i] = buf[t]
"#;

on_each_backend! {
fn block_prefix_scan(dev) {
    let k = kernel(&dev, SCAN, "scan", "int32[::1], int32[::1]");
    let n = 1024 * 37 + 100;
    let mut r = Rng(14);
    let x: Vec<i32> = (0..n).map(|_| r.i32(-100, 100)).collect();
    let (_xb, xa) = vec1(&dev, &x);
    let (ob, oa) = vec1(&dev, &vec![0i32; n]);
    k.launch(&[xa, oa], [blocks(n, 1024), 1, 1], [1024, 1, 1]);
    let out: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
    for b in 0..blocks(n, 1024) as usize {
        let mut acc = 0;
        for i in b * 1024..((b + 1) * 1024).min(n) {
            acc += x[i];
            assert_eq!(out[i], acc, "index {i}");
        }
    }
}
}

const MESSAGE: &str = r#"
from cuda import device

@device.kernel
def message(data, flag, out):
    if device.thread_idx.x != 0:
        return
    if device.block_idx.x == 0:
        for i in range(len(data)):
            data[i] = i * 7 + 1
        device.atomic_ref(flag, 0).store(1, memory='release', scope='device')
    else:
        f = device.atomic_ref(flag, 0)
        while f.load(memory='acquire', scope='device') == 0:
            pass
        for i in range(len(data)):
            out[i] = data[i]
"#;

on_each_backend! {
fn release_acquire_message_passing_across_blocks(dev) {
    let k = kernel(
        &dev,
        MESSAGE,
        "message",
        "int32[::1], int32[::1], int32[::1]",
    );
    for round in 0..20 {
        let n = 4096;
        let (_db, da) = vec1(&dev, &vec![0i32; n]);
        let (_fb, fa) = vec1(&dev, &[0i32]);
        let (ob, oa) = vec1(&dev, &vec![-1i32; n]);
        k.launch(&[da, fa, oa], [2, 1, 1], [32, 1, 1]);
        let out: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
        for (i, v) in out.iter().enumerate() {
            assert_eq!(*v, i as i32 * 7 + 1, "round {round}, index {i}");
        }
    }
}
}

on_each_backend! {
fn every_warp_collective(dev) {
    let k = kernel(
        &dev,
        &fixture("warp_collectives.py"),
        "warps",
        "int32[:, ::1], float64[::1]",
    );
    let (grid, block) = (4usize, 128usize);
    let n = grid * block;
    let mut r = Rng(15);
    let mut out = vec![0i32; n * 16];
    for i in 0..n {
        // Warp 3 holds only positive values below 1000, so its match_all succeeds.
        out[i * 16] = if i / 32 == 3 {
            r.i32(1, 999)
        } else {
            r.i32(-50, 150)
        };
    }
    let vals: Vec<f64> = (0..n).map(|i| i as f64 * 1.5).collect();
    let (ob, oa) = array(&dev, &out, &[n as u64, 16], &[16, 1]);
    let (vb, va) = vec1(&dev, &vals);
    k.launch(&[oa, va], [grid as u32, 1, 1], [block as u32, 1, 1]);
    let got: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
    let got_v: Vec<f64> = from_bytes(&dev.download(&vb).expect("download"));
    let x = |i: usize| out[i * 16];
    for i in 0..n {
        let (w, lane) = (i / 32 * 32, i % 32);
        let warp: Vec<i32> = (w..w + 32).map(x).collect();
        let row = &got[i * 16..i * 16 + 16];
        let ballot = warp
            .iter()
            .enumerate()
            .filter(|(_, v)| **v > 0)
            .fold(0u32, |m, (l, _)| m | 1 << l);
        let b0 = i / block * block;
        let blk: Vec<i32> = (b0..b0 + block).map(x).collect();
        let count = blk.iter().filter(|v| **v > 0).count() as i32;
        let all_same = warp
            .iter()
            .all(|v| v.div_euclid(1000) == warp[0].div_euclid(1000));
        let same4 = warp
            .iter()
            .enumerate()
            .filter(|(_, v)| v.rem_euclid(4) == x(i).rem_euclid(4))
            .fold(0u32, |m, (l, _)| m | 1 << l);
        let want = [
            x(i),
            warp.iter().all(|v| *v > 0) as i32,
            warp.iter().any(|v| *v > 100) as i32,
            (warp.iter().all(|v| v % 2 == 0) || warp.iter().all(|v| v % 2 != 0)) as i32,
            ballot as i32,
            warp[0],
            if lane >= 1 {
                warp[lane - 1]
            } else {
                warp[lane]
            },
            if lane + 1 < 32 {
                warp[lane + 1]
            } else {
                warp[lane]
            },
            warp[lane ^ 1],
            same4 as i32,
            if all_same { -1 } else { 0 },
            all_same as i32,
            ((1u64 << lane) - 1) as i32,
            1,
            count,
            (count == block as i32) as i32 + 2 * (count > 0) as i32,
        ];
        assert_eq!(row, &want, "thread {i} (lane {lane})");
        let wv = if lane + 2 < 32 { vals[i + 2] } else { vals[i] };
        assert_eq!(got_v[i], wv, "shfl_down of float64, thread {i}");
    }
}
}

on_each_backend! {
fn every_integer_and_float_intrinsic(dev) {
    let k = kernel(
        &dev,
        &fixture("intrinsics_all.py"),
        "bits",
        "uint32[::1], int64[::1], int8[::1], int32[:, ::1], float32[::1], float64[::1]",
    );
    let n = 5000;
    let mut r = Rng(16);
    let mut u: Vec<u32> = (0..n).map(|_| r.next() as u32 >> (r.next() % 32)).collect();
    u[0] = 0;
    let l: Vec<i64> = (0..n).map(|_| r.next() as i64 >> (r.next() % 64)).collect();
    let b: Vec<i8> = (0..n).map(|_| r.next() as i8).collect();
    let f: Vec<f32> = (0..n).map(|_| r.f32(-100.0, 100.0)).collect();
    let d: Vec<f64> = (0..n).map(|_| f64::from(r.f32(-100.0, 100.0))).collect();
    let (_ub, ua) = vec1(&dev, &u);
    let (_lb, la) = vec1(&dev, &l);
    let (_bb, ba) = vec1(&dev, &b);
    let (ob, oa) = array(&dev, &vec![0i32; n * 6], &[n as u64, 6], &[6, 1]);
    let (fb, fa) = vec1(&dev, &f);
    let (db, da) = vec1(&dev, &d);
    k.launch(
        &[ua, la, ba, oa, fa, da],
        [blocks(n, 128), 1, 1],
        [128, 1, 1],
    );
    let out: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
    let fo: Vec<f32> = from_bytes(&dev.download(&fb).expect("download"));
    let dout: Vec<f64> = from_bytes(&dev.download(&db).expect("download"));
    let ffs = |bits: u64| {
        if bits == 0 {
            0
        } else {
            bits.trailing_zeros() as i32 + 1
        }
    };
    for i in 0..n {
        let lu = l[i] as u64;
        let bu = b[i] as u8;
        let want = [
            u[i].count_ones() as i32,
            u[i].reverse_bits() as i32,
            u[i].leading_zeros() as i32,
            ffs(u64::from(u[i])),
            lu.count_ones() as i32 + lu.leading_zeros() as i32 + ffs(lu),
            bu.count_ones() as i32
                + bu.leading_zeros() as i32
                + ffs(u64::from(bu))
                + i32::from(bu.reverse_bits() as i8),
        ];
        assert_eq!(
            &out[i * 6..i * 6 + 6],
            &want,
            "u={} l={} b={}",
            u[i],
            l[i],
            b[i]
        );
        let wf = f64::from(f[i]).cbrt() + f64::from(f[i]).mul_add(2.0, 1.0);
        assert!(
            (f64::from(fo[i]) - wf).abs() <= 1e-5 * wf.abs().max(1.0),
            "f32 cbrt+fma of {}: {} vs {wf}",
            f[i],
            fo[i]
        );
        let wd = d[i].mul_add(d[i], 0.5) + d[i].cbrt();
        assert!(
            (dout[i] - wd).abs() <= 1e-13 * wd.abs().max(1.0),
            "f64 cbrt+fma of {}: {} vs {wd}",
            d[i],
            dout[i]
        );
    }
}
}

on_each_backend! {
fn dynamic_shared_memory_views(dev) {
    let k = kernel(
        &dev,
        &fixture("dynamic_shared_views.py"),
        "dyn",
        "float32[::1], int32[::1]",
    );
    let f: Vec<f32> = (0..256).map(|i| i as f32 + 0.5).collect();
    let ns: Vec<i32> = (0..256).map(|i| i * 3).collect();
    let (fb, fa) = vec1(&dev, &f);
    let (nb, na) = vec1(&dev, &ns);
    k.launch_shared(&[fa, na], [1, 1, 1], [256, 1, 1], 1024 + 256 * 4);
    let fo: Vec<f32> = from_bytes(&dev.download(&fb).expect("download"));
    let no: Vec<i32> = from_bytes(&dev.download(&nb).expect("download"));
    for t in 0..256 {
        let want = if t % 2 == 0 { 0.0 } else { f[255 - t] };
        assert_eq!(fo[t], want, "f[{t}]");
        assert_eq!(no[t], ns[255] + 256, "n[{t}]");
    }
}
}

on_each_backend! {
fn local_array_in_fortran_order(dev) {
    let k = kernel(
        &dev,
        &fixture("local_array_fortran.py"),
        "loc",
        "float64[:, :]",
    );
    let rows = 10;
    let (ob, oa) = array(&dev, &vec![0f64; rows * 4], &[rows as u64, 4], &[4, 1]);
    k.launch(&[oa], [1, 1, 1], [32, 1, 1]);
    let out: Vec<f64> = from_bytes(&dev.download(&ob).expect("download"));
    for i in 0..rows {
        for c in 0..4 {
            assert_eq!(
                out[i * 4 + c],
                ((i % 4) * 10 + c) as f64 + 32.0,
                "({i}, {c})"
            );
        }
    }
}
}

on_each_backend! {
fn ticket_mutex_serializes_blocks(dev) {
    let k = kernel(
        &dev,
        &fixture("ticket_lock.py"),
        "count_under_lock",
        "int32[::1], int64[::1]",
    );
    let blocks_n = 512u32;
    for round in 0..5 {
        let (_mb, ma) = vec1(&dev, &[0i32, 0]);
        let (cb, ca) = vec1(&dev, &[0i64, 0]);
        k.launch(&[ma, ca], [blocks_n, 1, 1], [64, 1, 1]);
        let c: Vec<i64> = from_bytes(&dev.download(&cb).expect("download"));
        let want_sum: i64 = (0..i64::from(blocks_n)).sum();
        assert_eq!(
            c,
            vec![i64::from(blocks_n), want_sum],
            "round {round}: lost updates under the lock"
        );
    }
}
}

on_each_backend! {
fn ticket_mutex_struct_in_shared_memory_guards_struct_cells(dev) {
    let k = kernel(
        &dev,
        &fixture("ticket_mutex_struct.py"),
        "count",
        "int32[::1]",
    );
    let mut r = Rng(29);
    for round in 0..4 {
        let blocks_n = 1 + (r.f32(0.0, 64.0) as u32);
        let threads = [32u32, 96, 256, 1024][round];
        let (cb, ca) = vec1(&dev, &vec![-1i32; 8 * blocks_n as usize]);
        k.launch(&[ca], [blocks_n, 1, 1], [threads, 1, 1]);
        let c: Vec<i32> = from_bytes(&dev.download(&cb).expect("download"));
        for b in 0..blocks_n as usize {
            for cell in 0..4u32 {
                // Threads t with t % 4 == cell each add one hit and 0.5 under the lock.
                let want = (threads - cell).div_ceil(4) as i32;
                assert_eq!(c[b * 8 + cell as usize], want, "block {b} cell {cell} hits");
                assert_eq!(
                    c[b * 8 + 4 + cell as usize],
                    want,
                    "block {b} cell {cell} x * 2"
                );
            }
        }
    }
}
}

on_each_backend! {
/// `wait` makes each thread of a block wait for the thread after it: thread `t` waits until
/// the block's turn counter reaches `block_dim - 1 - t`, writes its rank into the order
/// array at that position and passes the turn on, so the threads finish in reverse rank
/// order (the last one first), whatever order they start in. Blocks of 96 threads (three
/// warps, lanes of one warp waiting on each other) and a partial last block of work.
fn atomic_wait_orders_threads_in_reverse(dev) {
    let src = r#"
from cuda import device
from cuda.device import int32

@device.kernel
def reverse(turns, order):
    t = device.thread_idx.x
    b = device.block_idx.x
    n = device.block_dim.x
    mine = n - 1 - t
    turn = device.atomic_ref(turns, b)
    while True:
        now = turn.load(memory='acquire')
        if now == mine:
            break
        turn.wait(now, memory='acquire')
    order[b * n + mine] = int32(t)
    turn.add(1, memory='release')
    turn.notify_all()
"#;
    let k = kernel(&dev, src, "reverse", "int32[::1], int32[::1]");
    let (blocks_n, bs) = (5usize, 96usize);
    let (tb, ta) = vec1(&dev, &vec![0i32; blocks_n]);
    let (ob, oa) = vec1(&dev, &vec![-1i32; blocks_n * bs]);
    k.launch(&[ta, oa], [blocks_n as u32, 1, 1], [bs as u32, 1, 1]);
    let turns: Vec<i32> = from_bytes(&dev.download(&tb).expect("download"));
    let order: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
    assert_eq!(turns, vec![bs as i32; blocks_n], "every thread passed the turn on");
    for b in 0..blocks_n {
        for p in 0..bs {
            assert_eq!(order[b * bs + p], (bs - 1 - p) as i32, "block {b}, position {p}");
        }
    }
}
}

on_each_backend! {
/// `activemask()` on both sides of a divergent branch reports each side's lanes (numba-cuda's
/// `test_activemask`); LLVM once merged the two calls into one before the branch.
fn activemask_in_divergent_branches(dev) {
    let src = include_str!("../../fixtures/numba/activemask_branches.py");
    let k = kernel(&dev, src, "use_activemask", "uint32[::1]");
    let (xb, xa) = vec1(&dev, &[0u32; 32]);
    k.launch(&[xa], [1, 1, 1], [32, 1, 1]);
    let x: Vec<u32> = from_bytes(&dev.download(&xb).expect("download"));
    for (i, m) in x.iter().enumerate() {
        let want = if i % 2 == 0 { 0x5555_5555 } else { 0xaaaa_aaaa };
        assert_eq!(*m, want, "lane {i}: {m:#010x}");
    }
}
}

on_each_backend! {
/// `exch` and `cas` on 1- and 2-byte cells (CAS loops on their 32-bit words, with the
/// neighbouring bytes of the same word updated by other threads at the same time) and
/// `load`/`store`/`exch`/`cas` on complex64 (64-bit), against what must hold whatever the
/// order of the threads: each cell's chain of exchanges returns every value written to it
/// but the last, plus the initial one; CAS increments add one per thread; guard cells of
/// the same words stay untouched.
fn small_and_complex_atomics(dev) {
    let src = r#"
from cuda import device
from cuda.device import int8, int16, complex64

@device.kernel
def k(x8, olds8, c8, c16, xc, oldsc, cc, seeds):
    i = device.thread_idx.x + device.block_idx.x * device.block_dim.x
    s = seeds[i]
    olds8[i] = device.atomic_ref(x8, i % 7).exch(int8(s))
    r8 = device.atomic_ref(c8, i % 7)
    cur8 = r8.load()
    while True:
        prev8 = r8.cas(cur8, int8(cur8 + 1))
        if prev8 == cur8:
            break
        cur8 = prev8
    r16 = device.atomic_ref(c16, i % 3)
    cur16 = c16[i % 3]
    while True:
        prev16 = r16.cas(cur16, int16(cur16 + 3))
        if prev16 == cur16:
            break
        cur16 = prev16
    oldsc[i] = device.atomic_ref(xc, i % 3).exch(complex64(s, -s))  # -0 is the int 0: +0.0
    rc = device.atomic_ref(cc, i % 2)
    curc = rc.load()
    while True:
        prevc = rc.cas(curc, curc + complex64(1, 2))
        if prevc == curc:
            break
        curc = prevc
    if i == 0:
        device.atomic_ref(cc, 3).store(rc.load() * 0 + complex64(7, 8))
"#;
    let k = kernel(
        &dev,
        src,
        "k",
        "int8[::1], int8[::1], int8[::1], int16[::1], complex64[::1], complex64[::1], \
         complex64[::1], int32[::1]",
    );
    let n = 2048usize;
    let mut r = Rng(29);
    let seeds: Vec<i32> = (0..n).map(|_| r.i32(-100, 100)).collect();
    let x8_init: Vec<i8> = vec![1, 2, 3, 4, 5, 6, 7, 99];
    let c8_init: Vec<i8> = vec![0, 10, 20, 30, 40, 50, 60, -42];
    let c16_init: Vec<i16> = vec![-5, 1000, 7, 1234];
    let xc_init: Vec<[f32; 2]> = vec![[0.5, -0.5], [1.5, 2.5], [3.0, 4.0]];
    let cc_init: Vec<[f32; 2]> = vec![[0.0, 0.0], [10.0, -10.0], [5.0, 5.0], [0.0, 0.0]];
    let (x8b, x8) = vec1(&dev, &x8_init);
    let (o8b, o8) = vec1(&dev, &vec![0i8; n]);
    let (c8b, c8) = vec1(&dev, &c8_init);
    let (c16b, c16) = vec1(&dev, &c16_init);
    let (xcb, xc) = vec1(&dev, &xc_init);
    let (ocb, oc) = vec1(&dev, &vec![[0f32; 2]; n]);
    let (ccb, cc) = vec1(&dev, &cc_init);
    let (_sb, sa) = vec1(&dev, &seeds);
    k.launch(
        &[x8, o8, c8, c16, xc, oc, cc, sa],
        [blocks(n, 256), 1, 1],
        [256, 1, 1],
    );
    let x8: Vec<i8> = from_bytes(&dev.download(&x8b).expect("download"));
    let o8: Vec<i8> = from_bytes(&dev.download(&o8b).expect("download"));
    let c8: Vec<i8> = from_bytes(&dev.download(&c8b).expect("download"));
    let c16: Vec<i16> = from_bytes(&dev.download(&c16b).expect("download"));
    let xc: Vec<[f32; 2]> = from_bytes(&dev.download(&xcb).expect("download"));
    let oc: Vec<[f32; 2]> = from_bytes(&dev.download(&ocb).expect("download"));
    let cc: Vec<[f32; 2]> = from_bytes(&dev.download(&ccb).expect("download"));
    // Exchange chains: returned olds plus the final value == initial plus every value written.
    for cell in 0..7 {
        let mut got: Vec<i8> = (0..n).filter(|i| i % 7 == cell).map(|i| o8[i]).collect();
        got.push(x8[cell]);
        let mut want: Vec<i8> = (0..n)
            .filter(|i| i % 7 == cell)
            .map(|i| seeds[i] as i8)
            .collect();
        want.push(x8_init[cell]);
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "int8 exch cell {cell}");
    }
    assert_eq!(x8[7], 99, "int8 guard byte");
    for cell in 0..7 {
        let count = (0..n).filter(|i| i % 7 == cell).count();
        let want = (i32::from(c8_init[cell]) + count as i32) as i8;
        assert_eq!(c8[cell], want, "int8 cas cell {cell}");
    }
    assert_eq!(c8[7], -42, "int8 guard byte");
    for cell in 0..3 {
        let count = (0..n).filter(|i| i % 3 == cell).count();
        let want = (i32::from(c16_init[cell]) + 3 * count as i32) as i16;
        assert_eq!(c16[cell], want, "int16 cas cell {cell}");
    }
    assert_eq!(c16[3], 1234, "int16 guard");
    let key = |z: &[f32; 2]| (z[0].to_bits(), z[1].to_bits());
    for cell in 0..3 {
        let mut got: Vec<_> = (0..n)
            .filter(|i| i % 3 == cell)
            .map(|i| key(&oc[i]))
            .collect();
        got.push(key(&xc[cell]));
        let mut want: Vec<_> = (0..n)
            .filter(|i| i % 3 == cell)
            .map(|i| key(&[seeds[i] as f32, (-seeds[i]) as f32]))
            .collect();
        want.push(key(&xc_init[cell]));
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "complex64 exch cell {cell}");
    }
    for cell in 0..2 {
        let count = (0..n).filter(|i| i % 2 == cell).count() as f32;
        let want = [cc_init[cell][0] + count, cc_init[cell][1] + 2.0 * count];
        assert_eq!(cc[cell], want, "complex64 cas cell {cell}");
    }
    assert_eq!(cc[2], [5.0, 5.0], "complex64 untouched cell");
    assert_eq!(cc[3], [7.0, 8.0], "complex64 store");
}
}

on_each_backend! {
/// Shuffles of tuples and vectors of at most 8 bytes (element by element), of complex64,
/// and `match_*`
/// with the spec's `flag`, against a CPU model of one warp.
fn shuffles_of_tuples_and_vectors(dev) {
    let src = r#"
from cuda import device
from cuda.device import float32x2, int16x4, int8, int16, int32, float32, complex64

FULL = 0xFFFFFFFF

@device.kernel
def k(x, n, fout, iout):
    i = device.thread_idx.x
    v = device.shfl_xor_sync(FULL, float32x2(x[i], -2.0 * x[i]), 5)
    fout[2 * i] = v.x
    fout[2 * i + 1] = v.y
    z = device.shfl_sync(FULL, complex64(x[i], 3.0 * x[i]), 31 - i)
    fout[64 + 2 * i] = z.real
    fout[64 + 2 * i + 1] = z.imag
    t = device.shfl_sync(FULL, (int8(n[i]), int16(-3 * n[i]), n[i] > 5), (i * 7) % 32)
    iout[4 * i] = t[0]
    iout[4 * i + 1] = t[1]
    iout[4 * i + 2] = int(t[2])
    s = device.shfl_down_sync(FULL, int16x4(int16(n[i]), int16(i), int16(-i), int16(9)), 3)
    iout[4 * i + 3] = int32(s.x) * 1000 + int32(s.y) * 100 + int32(s.z) * 10 + int32(s.w)
    iout[128 + i] = device.match_any_sync(FULL, n[i] % 4, 7)
"#;
    let k = kernel(
        &dev,
        src,
        "k",
        "float32[::1], int32[::1], float32[::1], int32[::1]",
    );
    let mut r = Rng(41);
    let x: Vec<f32> = (0..32).map(|_| r.f32(-4.0, 4.0)).collect();
    let n: Vec<i32> = (0..32).map(|_| r.i32(-120, 120)).collect();
    let (_xb, xa) = vec1(&dev, &x);
    let (_nb, na) = vec1(&dev, &n);
    let (fb, fa) = vec1(&dev, &[0f32; 128]);
    let (ib, ia) = vec1(&dev, &[0i32; 160]);
    k.launch(&[xa, na, fa, ia], [1, 1, 1], [32, 1, 1]);
    let f: Vec<f32> = from_bytes(&dev.download(&fb).expect("download"));
    let io: Vec<i32> = from_bytes(&dev.download(&ib).expect("download"));
    for i in 0..32usize {
        let src = i ^ 5;
        assert_eq!(f[2 * i], x[src], "float32x2.x lane {i}");
        assert_eq!(f[2 * i + 1], -2.0 * x[src], "float32x2.y lane {i}");
        assert_eq!(f[64 + 2 * i], x[31 - i], "complex64.real lane {i}");
        assert_eq!(
            f[64 + 2 * i + 1],
            3.0 * x[31 - i],
            "complex64.imag lane {i}"
        );
        let s = (i * 7) % 32;
        assert_eq!(io[4 * i], i32::from(n[s] as i8), "tuple int8 lane {i}");
        assert_eq!(
            io[4 * i + 1],
            i32::from((-3 * n[s]) as i16),
            "tuple int16 lane {i}"
        );
        assert_eq!(io[4 * i + 2], i32::from(n[s] > 5), "tuple bool lane {i}");
        // shfl_down: lanes past the end keep their own value.
        let d = if i + 3 < 32 { i + 3 } else { i };
        let (a, b, c) = (n[d] as i16, d as i16, -(d as i16));
        let want = i32::from(a) * 1000 + i32::from(b) * 100 + i32::from(c) * 10 + 9;
        assert_eq!(io[4 * i + 3], want, "int16x4 lane {i}");
        let peers = (0..32usize)
            .filter(|&j| n[j].rem_euclid(4) == n[i].rem_euclid(4))
            .fold(0u32, |m, j| m | 1 << j);
        assert_eq!(io[128 + i] as u32, peers, "match_any_sync lane {i}");
    }
}
}

on_each_backend! {
/// `Atomic` objects (docs/semantics.md §9.7, fixture lang/atomic_objects.py): a shared
/// `Atomic(int32)` counter per block, a shared array of `Atomic(float32)` as a histogram
/// flushed to global memory, and each thread's own `Atomic(int32)` and local array of
/// `Atomic(int32)` (plain loads and stores), against a CPU reference on random data.
fn atomic_objects_count_histogram_and_per_thread_state(dev) {
    let k = kernel(
        &dev,
        &fixture("atomic_objects.py"),
        "atomic_objects",
        "int32[::1], float32[::1], int32[::1], int32[::1]",
    );
    const NBINS: usize = 16;
    let block = 256u32;
    for (seed, n) in [(41u64, 100_003usize), (42, 256), (43, 1000)] {
        let mut r = Rng(seed);
        let data: Vec<i32> = (0..n).map(|_| r.i32(0, 64)).collect();
        let nblocks = blocks(n, block) as usize;
        let (_db, da) = vec1(&dev, &data);
        let (hb, ha) = vec1(&dev, &[0f32; NBINS]);
        let (cb, ca) = vec1(&dev, &vec![-1i32; nblocks]);
        let (pb, pa) = vec1(&dev, &vec![0i32; n]);
        k.launch(&[da, ha, ca, pa], [nblocks as u32, 1, 1], [block, 1, 1]);
        let hist: Vec<f32> = from_bytes(&dev.download(&hb).expect("download"));
        let counts: Vec<i32> = from_bytes(&dev.download(&cb).expect("download"));
        let per: Vec<i32> = from_bytes(&dev.download(&pb).expect("download"));
        let mut want_h = [0f64; NBINS];
        for v in &data {
            want_h[(*v as usize) % NBINS] += f64::from(*v) * 0.5;
        }
        // Sums of halves below 2**23: exact in float32 in any order.
        for b in 0..NBINS {
            assert_eq!(f64::from(hist[b]), want_h[b], "n={n}: bin {b}");
        }
        for (blk, c) in counts.iter().enumerate() {
            let want = n.saturating_sub(blk * block as usize).min(block as usize);
            assert_eq!(*c as usize, want, "n={n}: block {blk}");
        }
        for (i, v) in data.iter().enumerate() {
            // mine: 3v, exch(7), cas(7, 3v + 1), +2; slots [0, 1, 2, 3] with slot v % 4
            // raised to v.
            let want = (3 * v + 3) + (6 - v % 4 + v);
            assert_eq!(per[i], want, "n={n}: thread {i} (v={v})");
        }
    }
}
}
