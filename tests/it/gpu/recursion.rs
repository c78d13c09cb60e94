//! GPU test of recursive device functions (docs/semantics.md §1.4): direct and mutual
//! recursion as real calls on the device's call stack, checked against the CPU.

use super::*;

const RECURSIVE: &str = r#"
from cuda import device
from cuda.device import int32, int64

@device.func
def fib(n: int32) -> int32:
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)

@device.func
def is_even(n: int32) -> bool:
    if n == 0:
        return True
    return is_odd(n - 1)

@device.func
def is_odd(n: int32) -> bool:
    if n == 0:
        return False
    return is_even(n - 1)

@device.func
def ackermann(m: int64, n: int64) -> int64:
    if m == 0:
        return n + 1
    if n == 0:
        return ackermann(m - 1, 1)
    return ackermann(m - 1, ackermann(m, n - 1))

@device.kernel
def k(x, fibs, evens, acks):
    i = device.tid(1)
    if i < len(x):
        fibs[i] = fib(x[i] % 16)
        evens[i] = int32(is_even(x[i] % 40))
        acks[i] = ackermann(int64(2), int64(x[i] % 6))
"#;

fn fib(n: i32) -> i32 {
    if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
}

fn ackermann(m: i64, n: i64) -> i64 {
    if m == 0 {
        n + 1
    } else if n == 0 {
        ackermann(m - 1, 1)
    } else {
        ackermann(m - 1, ackermann(m, n - 1))
    }
}

on_each_backend! {
fn recursive_device_functions_random(dev) {
    let k = kernel(
        &dev,
        RECURSIVE,
        "k",
        "int32[::1], int32[::1], int32[::1], int64[::1]",
    );
    let n = 4096;
    let mut r = Rng(23);
    let x: Vec<i32> = (0..n).map(|_| r.i32(0, 1000)).collect();
    let (_xb, xa) = vec1(&dev, &x);
    let (fb, fa) = vec1(&dev, &vec![0i32; n]);
    let (eb, ea) = vec1(&dev, &vec![0i32; n]);
    let (ab, aa) = vec1(&dev, &vec![0i64; n]);
    k.launch(&[xa, fa, ea, aa], [blocks(n, 64), 1, 1], [64, 1, 1]);
    let fibs: Vec<i32> = from_bytes(&dev.download(&fb).expect("download"));
    let evens: Vec<i32> = from_bytes(&dev.download(&eb).expect("download"));
    let acks: Vec<i64> = from_bytes(&dev.download(&ab).expect("download"));
    for i in 0..n {
        assert_eq!(fibs[i], fib(x[i] % 16), "fib, index {i}");
        assert_eq!(
            evens[i],
            i32::from((x[i] % 40) % 2 == 0),
            "is_even, index {i}"
        );
        assert_eq!(
            acks[i],
            ackermann(2, i64::from(x[i] % 6)),
            "ackermann, index {i}"
        );
    }
}
}
