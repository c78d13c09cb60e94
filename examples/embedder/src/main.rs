//! Runs the example framework: checks its kernel, prints the launch-buffer layout, compiles
//! to PTX, and, when a CUDA driver and GPU are present, launches the kernel and checks the
//! result. A user's broken kernel shows what `?` prints. Exits non-zero on any mismatch.
//! `cargo test --workspace` (scripts/test.sh) runs it as this binary's unit test.

use pydevice::abi::{ArgValue, ArrayArg};
use pydevice::runtime::{Device, LaunchConfig, driver_available};
use pydevice_embedder_example::Framework;
use std::error::Error;

fn main() -> Result<(), Box<dyn Error>> {
    run()
}

/// The whole example; an error says what did not hold.
fn run() -> Result<(), Box<dyn Error>> {
    let fw = Framework::new()?;
    for p in fw.params("float32")? {
        println!("{:>4}  {:<5} {} ({} bytes)", p.offset, p.name, p.ty, p.size);
    }
    let offsets: Vec<u64> = fw.params("float64")?.iter().map(|p| p.offset).collect();
    if offsets != [0, 8, 32, 56] {
        return Err(format!("float64 offsets {offsets:?}, want [0, 8, 32, 56]").into());
    }
    let kernel = fw.compile("float32")?;
    if !kernel.ptx.contains(".entry saxpy") {
        return Err("no .entry saxpy in the PTX".into());
    }
    println!(
        "PTX for {}: {} lines",
        kernel.arch,
        kernel.ptx.lines().count()
    );

    // A user's kernel with a mistake: the error renders like rustc's, through Display/Debug.
    let broken = "from cuda import device\nfrom cuda.device import float32\n\n@device.func\ndef f(x: float32) -> float32:\n    return x + undefined\n";
    match Framework::from_source("user.py", broken) {
        Ok(_) => return Err("a kernel using an undefined name was accepted".into()),
        Err(e) => {
            let shown = format!("{e:?}");
            if !shown.contains("return x + undefined") {
                return Err(format!("the error does not show the source line:\n{shown}").into());
            }
            println!("a user's mistake is reported as:\n{shown}");
        }
    }

    if !driver_available() {
        println!("no CUDA driver: launch skipped");
        return Ok(());
    }
    let device = Device::open(0)?;
    let loaded = device.load(&kernel.ptx, &kernel.abi)?;
    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
    let bytes = |v: &[f32]| v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
    let (dx, dy) = (device.upload(&bytes(&x))?, device.upload(&bytes(&y))?);
    let dout = device.alloc_zeroed(n * 4)?;
    let array = |buf| {
        ArgValue::Array(ArrayArg {
            data: device.address(buf),
            shape: vec![n as u64],
            strides: vec![1],
        })
    };
    let args = [ArgValue::Float(3.0), array(&dx), array(&dy), array(&dout)];
    let cfg = LaunchConfig {
        grid: [n.div_ceil(256) as u32, 1, 1],
        block: [256, 1, 1],
        shared_bytes: 0,
    };
    device.launch(&loaded, &args, &cfg)?;
    device.synchronize()?;
    let out: Vec<f32> = device
        .download(&dout)?
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    for i in 0..n {
        let want = 3.0 * x[i] + y[i];
        if out[i] != want {
            return Err(format!("out[{i}] = {}, want {want}", out[i]).into());
        }
    }
    println!("launched on {}: {n} results match", device.name()?);
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The example, run by `cargo test --workspace` with the build the crate's tests share.
    #[test]
    fn the_example_framework_runs() {
        if let Err(e) = super::run() {
            panic!("the embedder example failed: {e}");
        }
    }
}
