//! GPU tests of the Hopper extensions (§17): thread block clusters with distributed shared
//! memory, inline PTX, and kernels launched from device code. They need sm_90: on an older
//! GPU, or without a driver, each says why it is skipped and passes.

use super::*;
use pydevice::runtime::{PackedArgs, RuntimeError, Stream};

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

/// Launches packed arguments in clusters of `cluster` blocks and waits.
fn launch_cluster(
    dev: &Device,
    k: &Kernel<'_>,
    args: &[ArgValue],
    grid: [u32; 3],
    block: [u32; 3],
    cluster: [u32; 3],
) -> Result<(), RuntimeError> {
    let packed: PackedArgs = k.k.pack(args)?;
    let cfg = LaunchConfig::new(grid, block);
    dev.launch_cluster(&k.k, &packed, &cfg, cluster, &Stream::default_stream())?;
    dev.synchronize()
}

#[test]
fn cluster_neighbour_exchange_through_distributed_shared_memory() {
    let Some(dev) = hopper("cluster_neighbour_exchange_through_distributed_shared_memory") else {
        return;
    };
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

#[test]
fn cluster_positions_with_the_launch_attribute() {
    let Some(dev) = hopper("cluster_positions_with_the_launch_attribute") else {
        return;
    };
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

#[test]
fn cluster_launch_refused_for_a_bad_grid() {
    let Some(dev) = hopper("cluster_launch_refused_for_a_bad_grid") else {
        return;
    };
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
        matches!(e, DevError::Gpu(RuntimeError::Launch { .. }))
            && text.contains("neighbour_sum")
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
