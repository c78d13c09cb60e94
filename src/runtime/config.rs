//! Launch geometry: the spec's `Dim3Like` (an `int32` or a tuple of one to three `int32`) as
//! [`Dim3`], and [`LaunchConfig`] (grid, block, dynamic shared memory).
//!
//! Rust callers convert with `From` (`256u32`, `(4u32, 2u32)`, `[4, 2, 1]`); values that come
//! from another language (Python ints, command-line text) go through the checked
//! [`Dim3::from_ints`] and [`str::parse`], which reject zero, negative and out-of-range
//! extents with an error instead of leaving them for the driver.

use super::RuntimeError;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The extent of a level of the thread hierarchy in x, y and z (each at least 1).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Dim3 {
    /// Extent in x.
    pub x: u32,
    /// Extent in y.
    pub y: u32,
    /// Extent in z.
    pub z: u32,
}

impl Dim3 {
    /// `(x, y, z)`.
    pub const fn new(x: u32, y: u32, z: u32) -> Dim3 {
        Dim3 { x, y, z }
    }

    /// `x * y * z`.
    pub fn product(self) -> u64 {
        u64::from(self.x) * u64::from(self.y) * u64::from(self.z)
    }

    /// As an array `[x, y, z]`.
    pub fn to_array(self) -> [u32; 3] {
        [self.x, self.y, self.z]
    }

    /// A `Dim3Like` given as one to three integers (a Python `int` or tuple), checked: each must
    /// be an `int32` of at least 1; missing trailing extents are 1.
    ///
    /// ```
    /// use pydevice::runtime::Dim3;
    /// assert_eq!(Dim3::from_ints(&[4, 2]).unwrap(), Dim3::new(4, 2, 1));
    /// assert!(Dim3::from_ints(&[0]).is_err());
    /// assert!(Dim3::from_ints(&[1, 1, 1, 1]).is_err());
    /// ```
    pub fn from_ints(values: &[i64]) -> Result<Dim3, RuntimeError> {
        if values.is_empty() || values.len() > 3 {
            return Err(RuntimeError::Argument(format!(
                "a Dim3Like is an int or a tuple of 1 to 3 ints, got {} values",
                values.len()
            )));
        }
        let mut out = [1u32; 3];
        for (i, v) in values.iter().enumerate() {
            if *v < 1 || *v > i64::from(i32::MAX) {
                return Err(RuntimeError::Argument(format!(
                    "extent {} of a Dim3Like is {v}; each must be an int32 of at least 1",
                    ["x", "y", "z"][i]
                )));
            }
            out[i] = *v as u32;
        }
        Ok(out.into())
    }
}

impl fmt::Display for Dim3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {}, {})", self.x, self.y, self.z)
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Dim3 {
        Dim3::new(x, 1, 1)
    }
}

impl From<(u32,)> for Dim3 {
    fn from((x,): (u32,)) -> Dim3 {
        Dim3::new(x, 1, 1)
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Dim3 {
        Dim3::new(x, y, 1)
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Dim3 {
        Dim3::new(x, y, z)
    }
}

impl From<[u32; 1]> for Dim3 {
    fn from([x]: [u32; 1]) -> Dim3 {
        Dim3::new(x, 1, 1)
    }
}

impl From<[u32; 2]> for Dim3 {
    fn from([x, y]: [u32; 2]) -> Dim3 {
        Dim3::new(x, y, 1)
    }
}

impl From<[u32; 3]> for Dim3 {
    fn from([x, y, z]: [u32; 3]) -> Dim3 {
        Dim3::new(x, y, z)
    }
}

impl From<Dim3> for [u32; 3] {
    fn from(d: Dim3) -> [u32; 3] {
        d.to_array()
    }
}

impl FromStr for Dim3 {
    type Err = RuntimeError;

    /// Parses a `Dim3Like` written as in Python: `256`, `(4, 2)`, `(4,)`, `[4, 2, 1]`, or
    /// without brackets, `4, 2`.
    fn from_str(s: &str) -> Result<Dim3, RuntimeError> {
        let t = s.trim();
        let inner = t
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .or_else(|| t.strip_prefix('[').and_then(|r| r.strip_suffix(']')))
            .unwrap_or(t)
            .trim();
        let inner = inner.strip_suffix(',').unwrap_or(inner);
        let values = inner
            .split(',')
            .map(|p| {
                let p = p.trim();
                p.parse::<i64>().map_err(|_| {
                    RuntimeError::Argument(format!(
                        "`{s}` is not a Dim3Like: `{p}` is not an integer"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Dim3::from_ints(&values)
    }
}

/// Launch geometry: grid and block shapes and dynamic shared memory.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LaunchConfig {
    /// Blocks in the grid (x, y, z).
    pub grid: [u32; 3],
    /// Threads per block (x, y, z).
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory per block.
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// A launch of `grid` blocks of `block` threads, each a `Dim3Like`, without dynamic shared
    /// memory.
    ///
    /// ```
    /// use pydevice::runtime::LaunchConfig;
    /// let c = LaunchConfig::new(4, (16u32, 16u32)).with_shared(1024);
    /// assert_eq!((c.grid, c.block, c.shared_bytes), ([4, 1, 1], [16, 16, 1], 1024));
    /// ```
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> LaunchConfig {
        LaunchConfig {
            grid: grid.into().to_array(),
            block: block.into().to_array(),
            shared_bytes: 0,
        }
    }

    /// A 1-D launch.
    pub fn linear(grid: u32, block: u32) -> LaunchConfig {
        LaunchConfig::new(grid, block)
    }

    /// Enough 1-D blocks of `block` threads to cover `n` elements (at least one block).
    pub fn for_elements(n: u64, block: u32) -> LaunchConfig {
        let blocks = n
            .div_ceil(u64::from(block.max(1)))
            .clamp(1, u64::from(u32::MAX));
        LaunchConfig::new(blocks as u32, block)
    }

    /// The same geometry with `bytes` of dynamic shared memory per block.
    pub fn with_shared(mut self, bytes: u32) -> LaunchConfig {
        self.shared_bytes = bytes;
        self
    }

    /// Threads per block.
    pub fn threads_per_block(&self) -> u64 {
        Dim3::from(self.block).product()
    }
}

impl fmt::Display for LaunchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "grid {}, block {}, {} bytes of dynamic shared memory",
            Dim3::from(self.grid),
            Dim3::from(self.block),
            self.shared_bytes
        )
    }
}
