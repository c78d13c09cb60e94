//! GPU tests of cooperative groups (`cuda.device.cg`, docs/semantics.md §17): a
//! single-kernel grid-synchronized reduction and scan under a cooperative launch, tile
//! collectives and reductions, coalesced groups, and the refused launches (a grid too large
//! to be co-resident, a grid-synchronizing kernel launched the ordinary way). Each compares
//! with a CPU reference on random inputs; the warp collectives run compiled for sm_75
//! (shuffle trees) and for the device (`redux.sync` on sm_80+).

use super::*;
use pydevice::runtime::{RuntimeError, Stream};

fn compile_for(dev: &Dev, src: &str, entry: &str, sig: &str, arch: Arch) -> Loaded {
    let module = Module::parse(entry, src).unwrap_or_else(|d| panic!("{d}"));
    let (args, _) = parse_signature(sig).expect("signature");
    let options = CompileOptions {
        arch,
        ..CompileOptions::default()
    };
    dev.compile(&module, entry, &args, &options)
}

/// The architectures to test collectives on: sm_75 (shuffle trees) and the device's own
/// (one run on the CPU back end, which has no architectures).
fn arches(dev: &Dev) -> Vec<Arch> {
    if dev.is_cpu() {
        return vec![Arch::DEFAULT];
    }
    let mut v = vec!["sm_75".parse::<Arch>().expect("arch")];
    let own = arch_for(dev);
    if !v.contains(&own) {
        v.push(own);
    }
    v
}

const REDUCE_SCAN: &str = r#"
from cuda import device
from cuda.device import cg

@device.kernel
def reduce_scan(x, k, warp_sums, total, scan):
    grid = cg.this_grid()
    tile = cg.tiled_partition(cg.this_thread_block(), 32)
    t = grid.thread_rank()
    n = len(x)
    s = device.int64(0)
    for j in range(t * k, t * k + k):
        if j < n:
            s += x[j]
    # The warp's inclusive scan of the threads' sums.
    incl = s
    d = 1
    while d < 32:
        y = tile.shfl_up(incl, d)
        if tile.thread_rank() >= d:
            incl += y
        d *= 2
    w = t // 32
    if tile.thread_rank() == 31:
        warp_sums[w] = incl
    # The same total through cg.reduce, one atomic per warp.
    r = cg.reduce(tile, s, 'add')
    if tile.thread_rank() == 0:
        device.atomic_ref(total, 1).add(r)
    grid.sync()
    if t == 0:
        acc = device.int64(0)
        for i in range(len(warp_sums)):
            v = warp_sums[i]
            warp_sums[i] = acc
            acc += v
        total[0] = acc
    grid.sync()
    run = warp_sums[w] + incl - s
    for j in range(t * k, t * k + k):
        if j < n:
            run += x[j]
            scan[j] = run
"#;

const REDUCE_SCAN_SIG: &str = "int32[::1], int32, int64[::1], int64[::1], int64[::1]";

on_each_backend! {
fn cg_grid_sync_reduction_and_scan(dev) {
    let k = compile_for(
        &dev,
        REDUCE_SCAN,
        "reduce_scan",
        REDUCE_SCAN_SIG,
        arch_for(&dev),
    );
    // The PTX's ABI says so (the CPU back end finds the grid sync in its own code).
    assert!(
        dev.is_cpu() || k.abi().cooperative,
        "grid sync marks the kernel cooperative"
    );
    let block = 256u32;
    let cfg0 = LaunchConfig {
        grid: [1, 1, 1],
        block: [block, 1, 1],
        shared_bytes: 0,
    };
    let limit = dev.cooperative_limit(&k, &cfg0).expect("limit");
    assert!(limit >= 1, "the device launches cooperatively");
    for (round, blocks) in [1u64, limit.min(7), limit].into_iter().enumerate() {
        let threads = blocks as usize * block as usize;
        let per = 5usize;
        // Not a multiple of the threads: the last threads have fewer elements.
        let n = threads * per - 37 * (round + 1);
        let mut rng = Rng(0x5eed + round as u64);
        let x: Vec<i32> = (0..n).map(|_| rng.i32(-100_000, 100_000)).collect();
        let (_xb, xa) = vec1(&dev, &x);
        let (_wb, wa) = vec1(&dev, &vec![0i64; threads / 32]);
        let (tb, ta) = vec1(&dev, &[0i64, 0]);
        let (sb, sa) = vec1(&dev, &vec![0i64; n]);
        let cfg = LaunchConfig {
            grid: [blocks as u32, 1, 1],
            block: [block, 1, 1],
            shared_bytes: 0,
        };
        dev.launch_cooperative(
            &k,
            &[xa, ArgValue::Int(per as i64), wa, ta, sa],
            &cfg,
            &Stream::default_stream(),
        )
        .expect("cooperative launch");
        dev.synchronize().expect("synchronize");
        let total: Vec<i64> = from_bytes(&dev.download(&tb).expect("download"));
        let scan: Vec<i64> = from_bytes(&dev.download(&sb).expect("download"));
        let want: i64 = x.iter().map(|&v| i64::from(v)).sum();
        assert_eq!(total[0], want, "grid-synchronized total, {blocks} blocks");
        assert_eq!(total[1], want, "cg.reduce total, {blocks} blocks");
        let mut acc = 0i64;
        for (j, &v) in x.iter().enumerate() {
            acc += i64::from(v);
            assert_eq!(scan[j], acc, "scan[{j}], {blocks} blocks");
        }
    }
}
}

/// Whether `e` is a refused launch: the driver's launch error, or the CPU back end's
/// refusal of the launch's configuration.
fn refused(e: &DevError) -> bool {
    matches!(
        e,
        DevError::Gpu(RuntimeError::Launch { .. })
            | DevError::Cpu(_, pydevice::runtime::cpu::CpuError::Config(_))
    )
}

on_each_backend! {
fn cg_cooperative_launch_refusals(dev) {
    let k = compile_for(
        &dev,
        REDUCE_SCAN,
        "reduce_scan",
        REDUCE_SCAN_SIG,
        arch_for(&dev),
    );
    let block = 256u32;
    let one = LaunchConfig {
        grid: [1, 1, 1],
        block: [block, 1, 1],
        shared_bytes: 0,
    };
    // The device's co-residency limit; on the CPU back end, the threads it runs together
    // (`MAX_COOPERATIVE_THREADS`; the harness's `cooperative_limit` is lower, for memory).
    let limit = if dev.is_cpu() {
        pydevice::runtime::cpu::MAX_COOPERATIVE_THREADS / u64::from(block)
    } else {
        dev.cooperative_limit(&k, &one).expect("limit")
    };
    let (_xb, xa) = vec1(&dev, &[1i32; 64]);
    let (_wb, wa) = vec1(&dev, &vec![0i64; 1 << 16]);
    let (_tb, ta) = vec1(&dev, &[0i64, 0]);
    let (_sb, sa) = vec1(&dev, &[0i64; 64]);
    let args = [xa, ArgValue::Int(1), wa, ta, sa];
    // One block more than can be resident.
    let big = LaunchConfig {
        grid: [limit as u32 + 1, 1, 1],
        ..one
    };
    let e = dev
        .launch_cooperative(&k, &args, &big, &Stream::default_stream())
        .expect_err("a grid larger than the device holds is refused");
    let msg = e.to_string();
    assert!(refused(&e), "{msg}");
    assert!(msg.contains(&format!("at most {limit}")), "{msg}");
    // The ordinary launch of a grid-synchronizing kernel.
    let e = dev
        .launch(&k, &args, &one)
        .expect_err("grid sync without a cooperative launch is refused");
    let msg = e.to_string();
    assert!(refused(&e), "{msg}");
    assert!(msg.contains("cooperative launch"), "{msg}");
    assert!(e.context_usable());
    // The context still works: the cooperative launch at the limit succeeds.
    dev.launch_cooperative(&k, &args, &one, &Stream::default_stream())
        .expect("a one-block cooperative launch");
    dev.synchronize().expect("synchronize");
}
}

const TILES: &str = r#"
from cuda import device
from cuda.device import cg

@device.kernel
def tiles(x, f, out, fout):
    block = cg.this_thread_block()
    i = cg.this_grid().thread_rank()
    v = x[i]
    t4 = cg.tiled_partition(block, 4)
    t16 = cg.tiled_partition(block, 16)
    t32 = cg.tiled_partition(block, 32)
    out[i, 0] = cg.reduce(t4, v, 'add')
    out[i, 1] = cg.reduce(t16, v, 'min')
    out[i, 2] = cg.reduce(t32, v, 'max')
    out[i, 3] = t16.shfl(v, 3)
    out[i, 4] = t16.shfl_down(v, 1)
    out[i, 5] = t16.shfl_up(v, 2)
    out[i, 6] = t4.shfl_xor(v, 1)
    out[i, 7] = t16.thread_rank() + 100 * t16.meta_group_rank() + 10000 * t16.meta_group_size()
    out[i, 8] = device.int32(t16.ballot(v > 0))
    out[i, 9] = device.int32(t4.any(v > 500)) + 2 * device.int32(t4.all(v > -500))
    out[i, 10] = cg.reduce(t32, device.uint8(v), 'add')
    out[i, 11] = device.int32(cg.reduce(cg.tiled_partition(t16, 2), device.uint32(v), 'max') % 1000000007)
    fout[i, 0] = cg.reduce(t32, f[i], 'add')
    fout[i, 1] = cg.reduce(t4, f[i], 'min')
    fout[i, 2] = device.float32(cg.reduce(cg.tiled_partition(block, 8), device.float64(f[i]), 'max'))
"#;

on_each_backend! {
fn cg_tile_partitioned_warp_reduction(dev) {
    let (blocks, block) = (6u32, 128u32);
    let n = (blocks * block) as usize;
    let mut rng = Rng(77);
    let x: Vec<i32> = (0..n).map(|_| rng.i32(-1000, 1000)).collect();
    let f: Vec<f32> = (0..n).map(|_| rng.f32(-10.0, 10.0)).collect();
    let group = |i: usize, size: usize| i / size * size..i / size * size + size;
    for arch in arches(&dev) {
        let k = compile_for(
            &dev,
            TILES,
            "tiles",
            "int32[::1], float32[::1], int32[:, ::1], float32[:, ::1]",
            arch,
        );
        let (_xb, xa) = vec1(&dev, &x);
        let (_fb, fa) = vec1(&dev, &f);
        let (ob, oa) = array(&dev, &vec![0i32; n * 12], &[n as u64, 12], &[12, 1]);
        let (pb, pa) = array(&dev, &vec![0f32; n * 3], &[n as u64, 3], &[3, 1]);
        let cfg = LaunchConfig {
            grid: [blocks, 1, 1],
            block: [block, 1, 1],
            shared_bytes: 0,
        };
        dev.launch(&k, &[xa, fa, oa, pa], &cfg).expect("launch");
        dev.synchronize().expect("synchronize");
        let out: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
        let fout: Vec<f32> = from_bytes(&dev.download(&pb).expect("download"));
        for i in 0..n {
            let o = &out[i * 12..i * 12 + 12];
            let r16 = i % 16;
            let base16 = i - r16;
            let want = [
                group(i, 4).map(|j| x[j]).sum::<i32>(),
                group(i, 16).map(|j| x[j]).min().unwrap(),
                group(i, 32).map(|j| x[j]).max().unwrap(),
                x[base16 + 3],
                if r16 + 1 < 16 { x[i + 1] } else { x[i] },
                if r16 >= 2 { x[i - 2] } else { x[i] },
                x[i ^ 1],
                (r16 + 100 * ((i % block as usize) / 16) + 10000 * (block as usize / 16)) as i32,
                group(i, 16)
                    .enumerate()
                    .filter(|&(_, j)| x[j] > 0)
                    .map(|(b, _)| 1i32 << b)
                    .sum::<i32>(),
                i32::from(group(i, 4).any(|j| x[j] > 500))
                    + 2 * i32::from(group(i, 4).all(|j| x[j] > -500)),
                group(i, 32)
                    .map(|j| x[j] as u8)
                    .fold(0u8, |a, b| a.wrapping_add(b)) as i32,
                (group(i, 2).map(|j| x[j] as u32).max().unwrap() % 1_000_000_007) as i32,
            ];
            assert_eq!(o, &want, "{arch}: thread {i}");
            let fsum: f64 = group(i, 32).map(|j| f64::from(f[j])).sum();
            assert!(
                (f64::from(fout[i * 3]) - fsum).abs() < 1e-3,
                "{arch}: float sum {i}: {} vs {fsum}",
                fout[i * 3]
            );
            let fmin = group(i, 4).map(|j| f[j]).fold(f32::INFINITY, f32::min);
            assert_eq!(fout[i * 3 + 1], fmin, "{arch}: float min {i}");
            let fmax = group(i, 8).map(|j| f[j]).fold(f32::NEG_INFINITY, f32::max);
            assert_eq!(fout[i * 3 + 2], fmax, "{arch}: float max {i}");
        }
    }
}
}

const COALESCED: &str = r#"
from cuda import device
from cuda.device import cg

@device.kernel
def coalesced(x, out):
    i = cg.this_grid().thread_rank()
    v = x[i]
    if v % 3 != 0:
        act = cg.coalesced_threads()
        out[i, 0] = act.thread_rank()
        out[i, 1] = act.num_threads()
        out[i, 2] = cg.reduce(act, v, 'add')
        out[i, 3] = cg.reduce(act, v, 'max')
        out[i, 4] = act.shfl(v, 0)
        out[i, 5] = act.shfl_down(v, 1)
        out[i, 6] = act.shfl_up(v, 2)
        out[i, 7] = device.int32(act.ballot(v > 0))
        out[i, 8] = device.int32(cg.reduce(act, device.int64(v) * 1000000, 'min') // 1000000)
        # The members' lanes, gathered by rank.
        m = 0
        for r in range(act.num_threads()):
            m |= 1 << act.shfl(device.lane_id, r)
        out[i, 9] = m
        out[i, 10] = device.int32(act.ballot(True))
        act.sync()
"#;

on_each_backend! {
fn cg_coalesced_groups(dev) {
    let (blocks, block) = (4u32, 96u32);
    let n = (blocks * block) as usize;
    let mut rng = Rng(4242);
    let x: Vec<i32> = (0..n).map(|_| rng.i32(-1000, 1000)).collect();
    for arch in arches(&dev) {
        let k = compile_for(
            &dev,
            COALESCED,
            "coalesced",
            "int32[::1], int32[:, ::1]",
            arch,
        );
        let (_xb, xa) = vec1(&dev, &x);
        let (ob, oa) = array(&dev, &vec![-7i32; n * 11], &[n as u64, 11], &[11, 1]);
        let cfg = LaunchConfig {
            grid: [blocks, 1, 1],
            block: [block, 1, 1],
            shared_bytes: 0,
        };
        dev.launch(&k, &[xa, oa], &cfg).expect("launch");
        dev.synchronize().expect("synchronize");
        let out: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
        for i in 0..n {
            let o = &out[i * 11..i * 11 + 11];
            if x[i].rem_euclid(3) == 0 {
                assert!(o.iter().all(|&v| v == -7), "{arch}: thread {i} wrote {o:?}");
                continue;
            }
            // The group is the lanes active together (gathered by `shfl` of `lane_id` from
            // each rank); it holds this thread and only threads that took the branch.
            let m = o[9] as u32;
            let warp = i / 32 * 32;
            let lane = i % 32;
            assert!(
                m & (1 << lane) != 0,
                "{arch}: thread {i} not in its group {m:#x}"
            );
            let members: Vec<usize> = (0..32)
                .filter(|b| m & (1 << b) != 0)
                .map(|b| warp + b)
                .collect();
            assert!(members.iter().all(|&j| j < n && x[j].rem_euclid(3) != 0));
            let rank = members.iter().position(|&j| j == i).unwrap();
            let vals: Vec<i32> = members.iter().map(|&j| x[j]).collect();
            let want = [
                rank as i32,
                members.len() as i32,
                vals.iter().sum(),
                *vals.iter().max().unwrap(),
                vals[0],
                *vals.get(rank + 1).unwrap_or(&x[i]),
                if rank >= 2 { vals[rank - 2] } else { x[i] },
                // Bit r for the member of rank r (CUDA's packed ballot).
                vals.iter()
                    .enumerate()
                    .filter(|&(_, &v)| v > 0)
                    .map(|(r, _)| 1u32 << r)
                    .sum::<u32>() as i32,
                *vals.iter().min().unwrap(),
                m as i32,
                (((1u64 << members.len()) - 1) as u32) as i32,
            ];
            assert_eq!(o, &want, "{arch}: thread {i}");
        }
    }
}
}

const SPLIT_BARRIER: &str = r#"
from cuda import device
from cuda.device import cg

@device.kernel
def rotate(x, out, rounds):
    block = cg.this_thread_block()
    t = block.thread_rank()
    n = block.num_threads()
    buf = device.shared_array(1024, device.int32)
    i = cg.this_grid().thread_rank()
    acc = 0
    for step in range(rounds):
        buf[t] = x[i] * (step + 1)
        token = cg.barrier_arrive(block)
        own = x[i] + step
        cg.barrier_wait(block, token)
        acc += buf[(t + 1 + step) % n] + own
        # Nobody overwrites `buf` before every thread has read it.
        token = cg.barrier_arrive(block)
        cg.barrier_wait(block, token)
    out[i] = acc
"#;

on_each_backend! {
fn cg_split_barrier_arrive_wait(dev) {
    let (blocks, block) = (5usize, 160usize);
    let n = blocks * block;
    let rounds = 9i32;
    let mut rng = Rng(99);
    let x: Vec<i32> = (0..n).map(|_| rng.i32(-1000, 1000)).collect();
    for arch in arches(&dev) {
        let k = compile_for(
            &dev,
            SPLIT_BARRIER,
            "rotate",
            "int32[::1], int32[::1], int32",
            arch,
        );
        let (_xb, xa) = vec1(&dev, &x);
        let (ob, oa) = vec1(&dev, &vec![0i32; n]);
        let cfg = LaunchConfig {
            grid: [blocks as u32, 1, 1],
            block: [block as u32, 1, 1],
            shared_bytes: 0,
        };
        dev.launch(&k, &[xa, oa, ArgValue::Int(i64::from(rounds))], &cfg)
            .expect("launch");
        dev.synchronize().expect("synchronize");
        let out: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
        for i in 0..n {
            let (b0, t) = (i / block * block, i % block);
            let want: i32 = (0..rounds)
                .map(|s| {
                    let j = b0 + (t + 1 + s as usize) % block;
                    x[j] * (s + 1) + x[i] + s
                })
                .sum();
            assert_eq!(out[i], want, "{arch}: thread {i}");
        }
    }
}
}

const PIPELINE: &str = r#"
from cuda import device
from cuda.device import cg

W = 512

@device.kernel
def pipeline(x, out, sums):
    # Double-buffered: stage k + 1 is copied (cp.async, 16 bytes a thread) while stage k is
    # read. Block b handles the chunks k * nb + b of W elements.
    block = cg.this_thread_block()
    t = block.thread_rank()
    b = cg.this_grid().block_rank()
    nb = cg.this_grid().num_blocks()
    buf = device.shared_array(1024, device.float32, align=16)
    stages = len(x) // (W * nb)
    if stages > 0:
        cg.memcpy_async(buf, 4 * t, x, b * W + 4 * t, 4)
    cg.memcpy_async_commit()
    acc = device.float32(0)
    for k in range(stages):
        cur = (k % 2) * W
        if k + 1 < stages:
            cg.memcpy_async(buf, ((k + 1) % 2) * W + 4 * t, x, ((k + 1) * nb + b) * W + 4 * t, 4)
        cg.memcpy_async_commit()
        cg.memcpy_async_wait(1)
        block.sync()
        base = (k * nb + b) * W
        for j in range(4):
            # Another thread's elements: the block barrier publishes its copy.
            e = (4 * t + j + 4) % W
            out[base + e] = buf[cur + e] * 2.0
            acc += buf[cur + e]
        block.sync()
    cg.memcpy_async_wait_all()
    sums[b * 128 + t] = acc

@device.kernel
def small(y, z, oy, oz):
    t = cg.this_thread_block().thread_rank()
    sy = device.shared_array(384, device.int16, align=16)
    sz = device.shared_array(192, device.float64, align=16)
    cg.memcpy_async(sy, 4 * t, y, 4 * t, 4)
    cg.memcpy_async(sy, 256 + 2 * t, y, 256 + 2 * t, 2)
    cg.memcpy_async(sz, t, z, t)
    cg.memcpy_async(sz, 64 + 2 * t, z, 64 + 2 * t, 2)
    cg.memcpy_async_commit()
    cg.memcpy_async_wait(0)
    cg.this_thread_block().sync()
    for j in range(t, 384, 64):
        oy[j] = sy[j]
    for j in range(t, 192, 64):
        oz[j] = sz[j]
"#;

on_each_backend! {
fn cg_memcpy_async_pipeline(dev) {
    let (blocks, block, stages) = (6usize, 128usize, 9usize);
    let w = 512usize;
    let n = blocks * w * stages;
    let mut rng = Rng(1234);
    let x: Vec<f32> = (0..n).map(|_| rng.f32(-4.0, 4.0)).collect();
    let y: Vec<i16> = (0..384).map(|_| rng.i32(-30000, 30000) as i16).collect();
    let z: Vec<f64> = (0..192).map(|_| f64::from(rng.f32(-1e3, 1e3))).collect();
    for arch in arches(&dev) {
        let k = compile_for(
            &dev,
            PIPELINE,
            "pipeline",
            "float32[::1], float32[::1], float32[::1]",
            arch,
        );
        let (_xb, xa) = vec1(&dev, &x);
        let (ob, oa) = vec1(&dev, &vec![0f32; n]);
        let (sb, sa) = vec1(&dev, &vec![0f32; blocks * block]);
        let cfg = LaunchConfig {
            grid: [blocks as u32, 1, 1],
            block: [block as u32, 1, 1],
            shared_bytes: 0,
        };
        dev.launch(&k, &[xa, oa, sa], &cfg).expect("launch");
        dev.synchronize().expect("synchronize");
        let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
        let sums: Vec<f32> = from_bytes(&dev.download(&sb).expect("download"));
        for i in 0..n {
            assert_eq!(out[i], x[i] * 2.0, "{arch}: out[{i}]");
        }
        for b in 0..blocks {
            for t in 0..block {
                let mut acc = 0f32;
                for kk in 0..stages {
                    let base = (kk * blocks + b) * w;
                    for j in 0..4 {
                        acc += x[base + (4 * t + j + 4) % w];
                    }
                }
                assert_eq!(sums[b * block + t], acc, "{arch}: sums[{b}, {t}]");
            }
        }
        let k = compile_for(
            &dev,
            PIPELINE,
            "small",
            "int16[::1], float64[::1], int16[::1], float64[::1]",
            arch,
        );
        let (_yb, ya) = vec1(&dev, &y);
        let (_zb, za) = vec1(&dev, &z);
        let (oyb, oya) = vec1(&dev, &[0i16; 384]);
        let (ozb, oza) = vec1(&dev, &[0f64; 192]);
        let cfg = LaunchConfig {
            grid: [1, 1, 1],
            block: [64, 1, 1],
            shared_bytes: 0,
        };
        dev.launch(&k, &[ya, za, oya, oza], &cfg).expect("launch");
        dev.synchronize().expect("synchronize");
        let oy: Vec<i16> = from_bytes(&dev.download(&oyb).expect("download"));
        let oz: Vec<f64> = from_bytes(&dev.download(&ozb).expect("download"));
        assert_eq!(oy, y, "{arch}: 8- and 4-byte copies of int16");
        assert_eq!(oz, z, "{arch}: 8- and 16-byte copies of float64");
    }
}
}
