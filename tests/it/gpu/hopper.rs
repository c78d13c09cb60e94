//! GPU tests of the Hopper extensions (§17): thread block clusters with distributed shared
//! memory, inline PTX, and kernels launched from device code. They need sm_90: on an older
//! GPU, or without a driver, each says why it is skipped and passes.

use super::*;
use pydevice::runtime::RuntimeError;
use pydevice::runtime::cpu::CpuError;

/// A device of compute capability 9.0 or newer.
fn hopper(test: &str) -> Option<Dev> {
    let dev = device(test)?;
    match dev.arch() {
        Ok(a) if a.number() >= 90 => Some(dev),
        Ok(a) => {
            eprintln!("skipped {test}: thread block clusters need sm_90, this GPU is {a}");
            None
        }
        Err(e) => {
            eprintln!("skipped {test}: {e}");
            None
        }
    }
}

/// Whether a test of the mbarriers and bulk copies runs on `dev`: the CPU back end emulates
/// them (docs/semantics.md §22.1); a GPU needs sm_90 (said when it is older).
fn sm90_or_cpu(dev: &Dev, test: &str) -> bool {
    let Some(gpu) = dev.gpu() else {
        return true;
    };
    match gpu.arch() {
        Ok(a) if a.number() >= 90 => true,
        Ok(a) => {
            eprintln!("skipped {test}: needs sm_90, this GPU is {a}");
            false
        }
        Err(e) => {
            eprintln!("skipped {test}: {e}");
            false
        }
    }
}

/// Launches in clusters of `cluster` blocks and waits (on either back end: the CPU back
/// end runs a cluster's blocks together, docs/semantics.md §22.1).
fn launch_cluster(
    dev: &Dev,
    k: &Kernel<'_>,
    args: &[ArgValue],
    grid: [u32; 3],
    block: [u32; 3],
    cluster: [u32; 3],
) -> Result<(), DevError> {
    let cfg = LaunchConfig::new(grid, block);
    dev.launch_cluster(&k.k, args, &cfg, cluster)
}

on_each_backend! {
fn cluster_neighbour_exchange_through_distributed_shared_memory(dev) {
    if !sm90_or_cpu(&dev, "cluster_neighbour_exchange_through_distributed_shared_memory") {
        return;
    }
    // `cluster=(4, 1, 1)`, 128 threads per block: block b of the grid has rank b % 4.
    let k = kernel(
        &dev,
        &fixture("cluster_dsmem.py"),
        "neighbour_sum",
        "float32[::1], float32[::1]",
    );
    assert_eq!(k.k.required_cluster(), Some([4, 1, 1]));
    let (block, cluster, clusters) = (128usize, 4usize, 24usize);
    let n = block * cluster * clusters;
    let mut rng = Rng(0x5eed_c1a5);
    let src: Vec<f32> = (0..n).map(|_| rng.f32(-100.0, 100.0)).collect();
    let (_sb, sa) = vec1(&dev, &src);
    let (db, da) = vec1(&dev, &vec![f32::NAN; n]);
    // An ordinary launch: the kernel's own cluster shape applies.
    k.launch(&[sa, da], [(n / block) as u32, 1, 1], [block as u32, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&db).expect("download"));
    for i in 0..n {
        let (b, t) = (i / block, i % block);
        let first = b - b % cluster;
        let neighbour = first + (b % cluster + 1) % cluster;
        let want = src[i] + src[neighbour * block + t];
        assert_eq!(out[i], want, "element {i} (block {b}, thread {t})");
    }
}
}

const POSITIONS: &str = r#"
from cuda import device

@device.kernel
def positions(out):
    b = device.block_idx.y * device.grid_dim.x + device.block_idx.x
    row = b * device.block_dim.x + device.thread_idx.x
    c = device.cluster_idx
    d = device.cluster_dim
    p = device.block_idx_in_cluster
    out[row, 0] = c.x
    out[row, 1] = c.y
    out[row, 2] = d.x
    out[row, 3] = d.y
    out[row, 4] = p.x
    out[row, 5] = p.y
    out[row, 6] = device.block_rank_in_cluster
    out[row, 7] = device.cluster_size
    device.cluster_arrive(memory='relaxed')
    device.cluster_wait()
"#;

on_each_backend! {
fn cluster_positions_with_the_launch_attribute(dev) {
    if !sm90_or_cpu(&dev, "cluster_positions_with_the_launch_attribute") {
        return;
    }
    let k = kernel(&dev, POSITIONS, "positions", "int32[:, ::1]");
    assert_eq!(k.k.required_cluster(), None);
    let (gx, gy, cx, cy, threads) = (8u32, 6u32, 2u32, 3u32, 32u32);
    let rows = (gx * gy * threads) as usize;
    let (ob, oa) = array(&dev, &vec![-1i32; rows * 8], &[rows as u64, 8], &[8, 1]);
    launch_cluster(&dev, &k, &[oa], [gx, gy, 1], [threads, 1, 1], [cx, cy, 1])
        .expect("cluster launch");
    let out: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
    for by in 0..gy {
        for bx in 0..gx {
            let (px, py) = (bx % cx, by % cy);
            let want = [bx / cx, by / cy, cx, cy, px, py, px + py * cx, cx * cy].map(|v| v as i32);
            for t in 0..threads {
                let row = ((by * gx + bx) * threads + t) as usize;
                assert_eq!(
                    &out[row * 8..row * 8 + 8],
                    &want,
                    "block ({bx}, {by}) thread {t}"
                );
            }
        }
    }
}
}

on_each_backend! {
fn cluster_launch_refused_for_a_bad_grid(dev) {
    if !sm90_or_cpu(&dev, "cluster_launch_refused_for_a_bad_grid") {
        return;
    }
    let k = kernel(
        &dev,
        &fixture("cluster_dsmem.py"),
        "neighbour_sum",
        "float32[::1], float32[::1]",
    );
    let n = 8 * 128;
    let (_sb, sa) = vec1(&dev, &vec![1f32; n]);
    let (_db, da) = vec1(&dev, &vec![0f32; n]);
    // 6 blocks are not a whole number of clusters of 4: refused before the driver.
    let cfg = LaunchConfig::new(6u32, 128u32);
    let e = dev
        .launch(&k.k, &[sa.clone(), da.clone()], &cfg)
        .expect_err("a grid of 6 blocks cannot hold clusters of 4");
    let text = e.to_string();
    assert!(
        matches!(
            e,
            DevError::Gpu(RuntimeError::Launch { .. }) | DevError::Cpu(_, CpuError::Config(_))
        ) && text.contains("neighbour_sum")
            && text.contains("grid extent x is 6")
            && text.contains("cluster= option"),
        "{text}"
    );
    assert!(e.context_usable());
    // A launch shape other than the compiled one is refused too.
    let e = launch_cluster(
        &dev,
        &k,
        &[sa.clone(), da.clone()],
        [8, 1, 1],
        [128, 1, 1],
        [2, 1, 1],
    )
    .expect_err("clusters of 2 for a kernel compiled with cluster=4");
    assert!(
        e.to_string().contains("compiled with cluster=(4, 1, 1)"),
        "{e}"
    );
    // The launch attribute's shape is checked the same way.
    let p = kernel(&dev, POSITIONS, "positions", "int32[:, ::1]");
    let (_ob, oa) = array(&dev, &vec![0i32; 3 * 32 * 8], &[96, 8], &[8, 1]);
    let e = launch_cluster(
        &dev,
        &p,
        std::slice::from_ref(&oa),
        [3, 1, 1],
        [32, 1, 1],
        [2, 1, 1],
    )
    .expect_err("3 blocks in clusters of 2");
    assert!(e.to_string().contains("the launch's cluster shape"), "{e}");
    // The context is still usable: a good launch runs.
    launch_cluster(&dev, &p, &[oa], [2, 1, 1], [32, 1, 1], [2, 1, 1]).expect("good launch");
    k.launch(&[sa, da], [8, 1, 1], [128, 1, 1]);
}
}

/// The byte permutation of PTX's `prmt.b32 d, a, b, c` in its default mode.
fn prmt(a: u32, b: u32, c: u32) -> u32 {
    let bytes = (u64::from(b) << 32 | u64::from(a)).to_le_bytes();
    let mut d = 0u32;
    for k in 0..4 {
        let sel = (c >> (4 * k)) & 0xf;
        let mut byte = bytes[(sel & 7) as usize];
        if sel & 8 != 0 {
            byte = if byte & 0x80 != 0 { 0xff } else { 0 };
        }
        d |= u32::from(byte) << (8 * k);
    }
    d
}

#[test]
fn inline_ptx_results_match_the_cpu() {
    let Some(dev) = device("inline_ptx_results_match_the_cpu") else {
        return;
    };
    let k = kernel(
        &dev,
        &fixture("inline_ptx.py"),
        "inline_ptx",
        "uint32[::1], uint32[::1], uint32[::1], int32[::1], float64[::1], int16[::1], float16[::1]",
    );
    let n = 3000usize;
    let mut rng = Rng(0xa5a5_1234);
    let a: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
    let b: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
    let s: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
    let d: Vec<f64> = (0..n).map(|_| f64::from(rng.f32(-8.0, 8.0))).collect();
    let h: Vec<i16> = (0..n).map(|_| rng.next() as i16).collect();
    // float16 bits of small integers 0..=64 (exact, and so are their doubles).
    let halves: Vec<u16> = (0..n)
        .map(|i| {
            let v = (i % 65) as u16;
            if v == 0 {
                0
            } else {
                let e = 15 - v.leading_zeros() as u16;
                ((e + 15) << 10) | ((v << (10 - e)) & 0x3ff)
            }
        })
        .collect();
    let (_ab, aa) = vec1(&dev, &a);
    let (_bb, ba) = vec1(&dev, &b);
    let (ob, oa) = vec1(&dev, &vec![0u32; 8 * n]);
    let (sb, sa) = vec1(&dev, &s);
    let (db, da) = vec1(&dev, &d);
    let (hb, ha) = vec1(&dev, &h);
    let (fb, fa) = vec1(&dev, &halves);
    k.launch(
        &[aa, ba, oa, sa, da, ha, fa],
        [blocks(n, 128), 1, 1],
        [128, 1, 1],
    );
    let out: Vec<u32> = from_bytes(&dev.download(&ob).expect("download"));
    let s2: Vec<i32> = from_bytes(&dev.download(&sb).expect("download"));
    let d2: Vec<f64> = from_bytes(&dev.download(&db).expect("download"));
    let h2: Vec<i16> = from_bytes(&dev.download(&hb).expect("download"));
    let f2: Vec<u16> = from_bytes(&dev.download(&fb).expect("download"));
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        let lane = (i % 32) as u32;
        let want = [
            lane,
            prmt(x, y, 0x5410),
            x ^ y ^ lane,
            y,
            x,
            (i64::from(s[i]) + 7) as u32,
            1,
            7,
        ];
        assert_eq!(&out[8 * i..8 * i + 8], &want, "element {i}");
        assert_eq!(s2[i], s[i].wrapping_add(x as i32), "s[{i}]");
        assert_eq!(d2[i], d[i].mul_add(d[i], 0.5), "d[{i}]");
        assert_eq!(h2[i], h[i].wrapping_add(3), "h[{i}]");
        // Doubling a float16 adds one to its exponent (zero stays zero).
        let want = if halves[i] == 0 {
            0
        } else {
            halves[i] + (1 << 10)
        };
        assert_eq!(f2[i], want, "f16[{i}]");
    }
}

#[test]
fn device_side_launch_scales_each_slice() {
    let Some(dev) = device("device_side_launch_scales_each_slice") else {
        return;
    };
    // The parent's blocks each launch a child grid over their slice (linked with the device
    // runtime when loaded).
    let k = kernel(
        &dev,
        &fixture("device_launch.py"),
        "parent",
        "float32[::1], float32[::1], int32",
    );
    let (n, per_block) = (10_000usize, 1000usize);
    let mut rng = Rng(0xcd9_2024);
    let src: Vec<f32> = (0..n).map(|_| rng.f32(-1000.0, 1000.0)).collect();
    let (_sb, sa) = vec1(&dev, &src);
    let (db, da) = vec1(&dev, &vec![f32::NAN; n]);
    k.launch(
        &[sa, da, ArgValue::Int(per_block as i64)],
        [(n / per_block) as u32, 1, 1],
        [32, 1, 1],
    );
    let out: Vec<f32> = from_bytes(&dev.download(&db).expect("download"));
    for i in 0..n {
        assert_eq!(out[i], src[i] * 2.5, "element {i}");
    }
}

/// A device of compute capability 9.0 exactly: the sm_90a instructions (`wgmma`,
/// `setmaxnreg`, §18.4) run there only.
fn hopper_a(test: &str) -> Option<Dev> {
    let dev = hopper(test)?;
    match dev.arch() {
        Ok(a) if a.number() == 90 => Some(dev),
        Ok(a) => {
            eprintln!(
                "skipped {test}: wgmma needs compute capability 9.0 (sm_90a), this GPU is {a}"
            );
            None
        }
        Err(e) => {
            eprintln!("skipped {test}: {e}");
            None
        }
    }
}

/// The bfloat16 bits of `x`, which must be exactly representable (checked).
fn bf16_bits(x: f32) -> u16 {
    let b = (x.to_bits() >> 16) as u16;
    assert_eq!(
        f32::from_bits(u32::from(b) << 16),
        x,
        "{x} is not a bfloat16"
    );
    b
}

on_each_backend! {
fn bulk_copy_with_mbarrier_transaction_count_round_trips(dev) {
    if !sm90_or_cpu(&dev, "bulk_copy_with_mbarrier_transaction_count_round_trips") {
        return;
    }
    // Each block: one elected lane arms the mbarrier with 4096 bytes and starts a bulk copy
    // into shared memory; all wait on phase 0, double the tile, and a bulk store writes it
    // back (§18.4).
    let k = kernel(
        &dev,
        &fixture("hopper_bulk_mbarrier.py"),
        "bulk_double",
        "float32[::1], float32[::1]",
    );
    let (per_block, blocks) = (1024usize, 12usize);
    let n = per_block * blocks;
    let mut rng = Rng(0xb01c_0de5);
    let src: Vec<f32> = (0..n).map(|_| rng.f32(-1000.0, 1000.0)).collect();
    let (_sb, sa) = vec1(&dev, &src);
    let (db, da) = vec1(&dev, &vec![f32::NAN; n]);
    k.launch(&[sa, da], [blocks as u32, 1, 1], [256, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&db).expect("download"));
    for i in 0..n {
        assert_eq!(out[i], src[i] * 2.0, "element {i}");
    }
}
}

/// A tensor map of `a` uploaded to the device, as the `uint64[::1]` argument TMA reads.
fn tensor_map_arg(
    dev: &Dev,
    a: &pydevice::runtime::DeviceArray,
    box_shape: &[u32],
    swizzle: u32,
) -> (Buffer, ArgValue) {
    let map = dev
        .tensor_map_tiled(a, box_shape, swizzle)
        .unwrap_or_else(|e| panic!("{e}"));
    vec1(dev, &map.words)
}

on_each_backend! {
fn tma_tile_load_store_and_reduce_match_the_cpu(dev) {
    if !sm90_or_cpu(&dev, "tma_tile_load_store_and_reduce_match_the_cpu") {
        return;
    }
    // 16×32 tiles of a 64×128 float32 matrix: loaded by TMA, doubled, stored through a
    // second map and added into a third (§18.4).
    let k = kernel(
        &dev,
        &fixture("hopper_tma_tiles.py"),
        "tma_tiles",
        "uint64[::1], uint64[::1], uint64[::1]",
    );
    let (rows, cols) = (64usize, 128usize);
    let mut rng = Rng(0x7a4a_71e5);
    let a: Vec<f32> = (0..rows * cols).map(|_| rng.f32(-100.0, 100.0)).collect();
    let r0: Vec<f32> = (0..rows * cols).map(|_| rng.i32(-50, 50) as f32).collect();
    let up = |v: &[f32]| {
        let buf = dev.upload(&bytes_of(v)).expect("upload");
        let arr = pydevice::runtime::DeviceArray::contiguous(
            dev.address(&buf),
            pydevice::types::Scalar::Float32,
            &[rows as u64, cols as u64],
        );
        (buf, arr)
    };
    let (_ab, aarr) = up(&a);
    let (ob, oarr) = up(&vec![f32::NAN; rows * cols]);
    let (rb, rarr) = up(&r0);
    let (_am, amap) = tensor_map_arg(&dev, &aarr, &[16, 32], 0);
    let (_om, omap) = tensor_map_arg(&dev, &oarr, &[16, 32], 0);
    let (_rm, rmap) = tensor_map_arg(&dev, &rarr, &[16, 32], 0);
    k.launch(
        &[amap, omap, rmap],
        [(cols / 32) as u32, (rows / 16) as u32, 1],
        [128, 1, 1],
    );
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let red: Vec<f32> = from_bytes(&dev.download(&rb).expect("download"));
    for i in 0..rows * cols {
        assert_eq!(out[i], a[i] * 2.0, "stored element {i}");
        assert_eq!(red[i], r0[i] + a[i] * 2.0, "reduced element {i}");
    }
}
}

on_each_backend! {
fn tma_grid_constant_maps_load_store_and_reduce_match_the_cpu(dev) {
    if !sm90_or_cpu(&dev, "tma_grid_constant_maps_load_store_and_reduce_match_the_cpu") {
        return;
    }
    // As above, but the load and the store read maps passed by value (`hopper.TensorMap`,
    // grid constants in the parameter space), the reduction a map in global memory (§18.4).
    let k = kernel(
        &dev,
        &fixture("hopper_tma_grid_constant.py"),
        "tma_grid_constant",
        "hopper.TensorMap, hopper.TensorMap, uint64[::1]",
    );
    let (rows, cols) = (96usize, 64usize);
    let mut rng = Rng(0x6c_0de5);
    let a: Vec<f32> = (0..rows * cols).map(|_| rng.f32(-100.0, 100.0)).collect();
    let r0: Vec<f32> = (0..rows * cols).map(|_| rng.i32(-50, 50) as f32).collect();
    let up = |v: &[f32]| {
        let buf = dev.upload(&bytes_of(v)).expect("upload");
        let arr = pydevice::runtime::DeviceArray::contiguous(
            dev.address(&buf),
            pydevice::types::Scalar::Float32,
            &[rows as u64, cols as u64],
        );
        (buf, arr)
    };
    let (_ab, aarr) = up(&a);
    let (ob, oarr) = up(&vec![f32::NAN; rows * cols]);
    let (rb, rarr) = up(&r0);
    let by_value = |arr| {
        dev.tensor_map_tiled(arr, &[16, 32], 0)
            .unwrap_or_else(|e| panic!("{e}"))
            .arg()
    };
    let (amap, omap) = (by_value(&aarr), by_value(&oarr));
    let (_rm, rmap) = tensor_map_arg(&dev, &rarr, &[16, 32], 0);
    k.launch(
        &[amap, omap, rmap],
        [(cols / 32) as u32, (rows / 16) as u32, 1],
        [128, 1, 1],
    );
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    let red: Vec<f32> = from_bytes(&dev.download(&rb).expect("download"));
    for i in 0..rows * cols {
        assert_eq!(out[i], a[i] * 2.0, "stored element {i}");
        assert_eq!(red[i], r0[i] + a[i] * 2.0, "reduced element {i}");
    }
}
}

on_each_backend! {
fn tma_multicast_fills_every_block_of_the_cluster(dev) {
    if dev.gpu().is_some() && hopper_a("tma_multicast_fills_every_block_of_the_cluster").is_none() {
        return;
    }
    let k = kernel(
        &dev,
        &fixture("hopper_tma_multicast.py"),
        "tma_multicast",
        "uint64[::1], float32[::1]",
    );
    let t = 32usize;
    let mut rng = Rng(0x3c_a57);
    let a: Vec<f32> = (0..t * t).map(|_| rng.f32(-1.0, 1.0)).collect();
    let buf = dev.upload(&bytes_of(&a)).expect("upload");
    // A (1, 32, 32) view: three coordinates in the kernel.
    let arr = pydevice::runtime::DeviceArray::contiguous(
        dev.address(&buf),
        pydevice::types::Scalar::Float32,
        &[1, t as u64, t as u64],
    );
    let (_m, map) = tensor_map_arg(&dev, &arr, &[1, 32, 32], 0);
    let blocks = 4usize;
    let (ob, oa) = vec1(&dev, &vec![f32::NAN; blocks * t * t]);
    k.launch(&[map, oa], [blocks as u32, 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    for b in 0..blocks {
        for i in 0..t * t {
            assert_eq!(out[b * t * t + i], a[i], "block {b}, element {i}");
        }
    }
}
}

on_each_backend! {
fn tma_multicast_through_a_grid_constant_map_fills_every_block(dev) {
    if dev.gpu().is_some()
        && hopper_a("tma_multicast_through_a_grid_constant_map_fills_every_block").is_none()
    {
        return;
    }
    // The multicast load of the test above, its map passed by value (§18.4).
    let k = kernel(
        &dev,
        &fixture("hopper_tma_multicast_grid_constant.py"),
        "tma_multicast_by_value",
        "hopper.TensorMap, float32[::1]",
    );
    let t = 32usize;
    let mut rng = Rng(0x9c_0a57);
    let a: Vec<f32> = (0..t * t).map(|_| rng.f32(-1.0, 1.0)).collect();
    let buf = dev.upload(&bytes_of(&a)).expect("upload");
    let arr = pydevice::runtime::DeviceArray::contiguous(
        dev.address(&buf),
        pydevice::types::Scalar::Float32,
        &[1, t as u64, t as u64],
    );
    let map = dev
        .tensor_map_tiled(&arr, &[1, 32, 32], 0)
        .unwrap_or_else(|e| panic!("{e}"));
    let blocks = 4usize;
    let (ob, oa) = vec1(&dev, &vec![f32::NAN; blocks * t * t]);
    k.launch(&[map.into(), oa], [blocks as u32, 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&ob).expect("download"));
    for b in 0..blocks {
        for i in 0..t * t {
            assert_eq!(out[b * t * t + i], a[i], "block {b}, element {i}");
        }
    }
}
}

on_each_backend! {
fn mbarrier_phases_complete_in_order_with_transaction_counts(dev) {
    if !sm90_or_cpu(&dev, "mbarrier_phases_complete_in_order_with_transaction_counts") {
        return;
    }
    // Four rounds of one mbarrier: every thread arrives, thread 0 adds 128 bytes of
    // transactions retired by a bulk copy; `try_wait.parity` polls each phase (§18.4).
    let k = kernel(
        &dev,
        &fixture("hopper_mbarrier_phases.py"),
        "phases",
        "int32[::1], uint64[::1]",
    );
    let threads = 128usize;
    let mut rng = Rng(0x9a5e);
    let src: Vec<u64> = (0..16).map(|_| rng.next()).collect();
    let (_sb, sa) = vec1(&dev, &src);
    let (ob, oa) = vec1(&dev, &vec![-1i32; 4 * threads + 1]);
    k.launch(&[oa, sa], [1, 1, 1], [threads as u32, 1, 1]);
    let out: Vec<i32> = from_bytes(&dev.download(&ob).expect("download"));
    for r in 0..4 {
        for t in 0..threads {
            assert_eq!(out[r * threads + t], r as i32 + 2, "round {r}, thread {t}");
        }
    }
    assert_eq!(out[4 * threads], 0, "a 16-byte aligned shared buffer");
}
}

/// The e4m3 bits of `x`, a normal number with at most four significant bits (checked).
fn e4m3_bits(x: f32) -> u8 {
    if x == 0.0 {
        return 0;
    }
    let sign = if x < 0.0 { 0x80u8 } else { 0 };
    let a = x.abs();
    let e = a.log2().floor() as i32;
    let m = a / 2f32.powi(e) - 1.0;
    let mant = m * 8.0;
    assert!(
        mant.fract() == 0.0 && (-6..=8).contains(&e),
        "{x} is not an e4m3 number"
    );
    sign | (((e + 7) as u8) << 3) | mant as u8
}

on_each_backend! {
fn wgmma_each_input_family_matches_the_cpu(dev) {
    if dev.gpu().is_some() && hopper_a("wgmma_each_input_family_matches_the_cpu").is_none() {
        return;
    }
    // One warpgroup, one K step per family (fixture `hopper_wgmma_kinds.py`): D (64×64) =
    // A (64×K) · Bᵀ (B is 64×K) for bf16 (K = 16), tf32 (K = 8), e4m3 (K = 32) into float32
    // and s8 (K = 32) into int32, the tiles staged K-major without swizzle (§18.4). Inputs
    // are exactly representable in each type and small enough that every sum is exact.
    let k = kernel(
        &dev,
        &fixture("hopper_wgmma_kinds.py"),
        "wgmma_kinds",
        "bfloat16[:, ::1], bfloat16[:, ::1], float32[:, ::1], float32[:, ::1], float32[:, ::1], \
         float32[:, ::1], float8e4m3[:, ::1], float8e4m3[:, ::1], float32[:, ::1], int8[:, ::1], \
         int8[:, ::1], int32[:, ::1]",
    );
    let (m, n) = (64usize, 64usize);
    let mut rng = Rng(0x3a9_90a);
    let dot = |a: &[f32], b: &[f32], k: usize, r: usize, c: usize| -> f32 {
        (0..k).map(|i| a[r * k + i] * b[c * k + i]).sum()
    };
    // bf16 and tf32: multiples of 1/4 in [-8, 8]; e4m3: multiples of 1/2 in [-8, 8].
    let mut quarters =
        |k: usize| -> Vec<f32> { (0..64 * k).map(|_| rng.i32(-32, 33) as f32 / 4.0).collect() };
    let (a16, b16) = (quarters(16), quarters(16));
    let (a32, b32) = (quarters(8), quarters(8));
    let a8: Vec<f32> = (0..64 * 32)
        .map(|_| rng.i32(-16, 17) as f32 / 2.0)
        .collect();
    let b8: Vec<f32> = (0..64 * 32)
        .map(|_| rng.i32(-16, 17) as f32 / 2.0)
        .collect();
    let as8: Vec<i8> = (0..64 * 32).map(|_| rng.i32(-100, 101) as i8).collect();
    let bs8: Vec<i8> = (0..64 * 32).map(|_| rng.i32(-100, 101) as i8).collect();
    let bits16: Vec<Vec<u16>> = [&a16, &b16]
        .iter()
        .map(|v| v.iter().map(|&x| bf16_bits(x)).collect())
        .collect();
    let bits8: Vec<Vec<u8>> = [&a8, &b8]
        .iter()
        .map(|v| v.iter().map(|&x| e4m3_bits(x)).collect())
        .collect();
    let tile = |k: usize| ([m as u64, k as u64], [k as i64, 1]);
    let ((s16, t16), (s8, t8), (s32, t32)) = (tile(16), tile(32), tile(8));
    let ins = [
        array(&dev, &bits16[0], &s16, &t16),
        array(&dev, &bits16[1], &s16, &t16),
        array(&dev, &a32, &s32, &t32),
        array(&dev, &b32, &s32, &t32),
        array(&dev, &bits8[0], &s8, &t8),
        array(&dev, &bits8[1], &s8, &t8),
        array(&dev, &as8, &s8, &t8),
        array(&dev, &bs8, &s8, &t8),
    ];
    let out_f32 = || {
        array(
            &dev,
            &vec![f32::NAN; m * n],
            &[m as u64, n as u64],
            &[n as i64, 1],
        )
    };
    let (d16, d32, d8) = (out_f32(), out_f32(), out_f32());
    let ds8 = array(
        &dev,
        &vec![i32::MIN; m * n],
        &[m as u64, n as u64],
        &[n as i64, 1],
    );
    let args = [
        ins[0].1.clone(),
        ins[1].1.clone(),
        d16.1.clone(),
        ins[2].1.clone(),
        ins[3].1.clone(),
        d32.1.clone(),
        ins[4].1.clone(),
        ins[5].1.clone(),
        d8.1.clone(),
        ins[6].1.clone(),
        ins[7].1.clone(),
        ds8.1.clone(),
    ];
    k.launch(&args, [1, 1, 1], [128, 1, 1]);
    let got = |b: &Buffer| -> Vec<f32> { from_bytes(&dev.download(b).expect("download")) };
    for (name, buf, a, b, kk) in [
        ("bf16", &d16.0, &a16, &b16, 16),
        ("tf32", &d32.0, &a32, &b32, 8),
        ("e4m3", &d8.0, &a8, &b8, 32),
    ] {
        let out = got(buf);
        for r in 0..m {
            for c in 0..n {
                assert_eq!(out[r * n + c], dot(a, b, kk, r, c), "{name}: D[{r}, {c}]");
            }
        }
    }
    let out: Vec<i32> = from_bytes(&dev.download(&ds8.0).expect("download"));
    for r in 0..m {
        for c in 0..n {
            let want: i32 = (0..32)
                .map(|i| i32::from(as8[r * 32 + i]) * i32::from(bs8[c * 32 + i]))
                .sum();
            assert_eq!(out[r * n + c], want, "s8: D[{r}, {c}]");
        }
    }
}
}

/// `wgmma` on operands staged with the 128-byte swizzle (§18.4): K-major rows of 128 bytes
/// (the first 32 hold the row's 16 bf16 of K), 8-row groups 1024 bytes apart (SBO), each
/// 16-byte chunk `c` of line `l` stored at chunk `c ^ (l % 8)` of the 1024-aligned window.
const WGMMA_SW128: &str = r#"
from cuda import device
from cuda.device import hopper

N = 64


@device.func
def sw128(r, k):
    # The element index of (r, k) of a bf16 K-major operand in the 128-byte swizzled layout.
    o = (r // 8) * 1024 + (r % 8) * 128 + k * 2
    return (o ^ (((o >> 7) & 7) << 4)) // 2


@device.kernel(max_threads=128)
def wgmma_sw128(a, b, d):
    sa = device.shared_array(64 * 64, device.bfloat16, align=1024)
    sb = device.shared_array(N * 64, device.bfloat16, align=1024)
    t = device.thread_idx.x
    for i in range(t, 64 * 16, 128):
        sa[sw128(i // 16, i % 16)] = a[i // 16, i % 16]
    for i in range(t, N * 16, 128):
        sb[sw128(i // 16, i % 16)] = b[i // 16, i % 16]
    hopper.fence_proxy_async()
    device.syncthreads()
    acc = device.local_array(N // 2, device.float32)
    for i in range(N // 2):
        acc[i] = 1.0
    da = hopper.wgmma_desc(sa, 0, 16, 1024, 128)
    db = hopper.wgmma_desc(sb, 0, 16, 1024, 128)
    hopper.wgmma_fence()
    hopper.wgmma(acc, da, db, N, "bf16", "bf16", scale_d=True)
    hopper.wgmma_commit_group()
    hopper.wgmma_wait_group(0)
    w = t // 32
    lane = t % 32
    for i in range(N // 2):
        row = w * 16 + lane // 4 + 8 * ((i // 2) % 2)
        col = 8 * (i // 4) + 2 * (lane % 4) + i % 2
        d[row, col] = acc[i]
"#;

on_each_backend! {
fn wgmma_bf16_with_128_byte_swizzle_matches_the_cpu(dev) {
    if dev.gpu().is_some() && hopper_a("wgmma_bf16_with_128_byte_swizzle_matches_the_cpu").is_none() {
        return;
    }
    // D = 1 + A·Bᵀ (scale_d: the accumulator's 1.0 is kept), inputs multiples of 1/4 in
    // [-8, 8]: every product and sum is exact in float32.
    let k = kernel(
        &dev,
        WGMMA_SW128,
        "wgmma_sw128",
        "bfloat16[:, ::1], bfloat16[:, ::1], float32[:, ::1]",
    );
    let (m, n, kk) = (64usize, 64usize, 16usize);
    let mut rng = Rng(0x5128);
    let a: Vec<f32> = (0..m * kk).map(|_| rng.i32(-32, 33) as f32 / 4.0).collect();
    let b: Vec<f32> = (0..n * kk).map(|_| rng.i32(-32, 33) as f32 / 4.0).collect();
    let ab: Vec<u16> = a.iter().map(|&x| bf16_bits(x)).collect();
    let bb: Vec<u16> = b.iter().map(|&x| bf16_bits(x)).collect();
    let (_ab, aa) = array(&dev, &ab, &[m as u64, kk as u64], &[kk as i64, 1]);
    let (_bb, ba) = array(&dev, &bb, &[n as u64, kk as u64], &[kk as i64, 1]);
    let (db, da) = array(&dev, &vec![f32::NAN; m * n], &[m as u64, n as u64], &[n as i64, 1]);
    k.launch(&[aa, ba, da], [1, 1, 1], [128, 1, 1]);
    let out: Vec<f32> = from_bytes(&dev.download(&db).expect("download"));
    for r in 0..m {
        for c in 0..n {
            let want: f32 = 1.0 + (0..kk).map(|i| a[r * kk + i] * b[c * kk + i]).sum::<f32>();
            assert_eq!(out[r * n + c], want, "D[{r}, {c}]");
        }
    }
}
}

#[test]
fn e4m3_encoder_matches_known_values() {
    assert_eq!(e4m3_bits(1.0), 0x38);
    assert_eq!(e4m3_bits(-2.0), 0xC0);
    assert_eq!(e4m3_bits(3.0), 0x44);
    assert_eq!(e4m3_bits(0.5), 0x30);
    assert_eq!(e4m3_bits(7.5), 0x4F);
}
