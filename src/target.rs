//! The compilation target: the GPU architecture (`sm_90`) that code is compiled for and that
//! a device reports. Shared by every stage that needs it (`lower`, `toolkit`, `runtime`);
//! it knows nothing of them.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A CUDA GPU architecture (compute capability), such as `sm_90`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Arch {
    /// Major version (9 for sm_90).
    pub major: u32,
    /// Minor version (0 for sm_90).
    pub minor: u32,
}

impl Arch {
    /// Every architecture the PTX back end accepts, oldest first.
    pub const SUPPORTED: [Arch; 8] = [
        Arch::new(7, 5),
        Arch::new(8, 0),
        Arch::new(8, 6),
        Arch::new(8, 7),
        Arch::new(8, 9),
        Arch::new(9, 0),
        Arch::new(10, 0),
        Arch::new(12, 0),
    ];

    /// The default when no GPU is present: Hopper.
    pub const DEFAULT: Arch = Arch::new(9, 0);

    /// An architecture from its compute capability.
    pub const fn new(major: u32, minor: u32) -> Arch {
        Arch { major, minor }
    }

    /// The number in `sm_XY` (90 for sm_90).
    pub fn number(self) -> u32 {
        self.major * 10 + self.minor
    }

    /// The PTX ISA version the module declares (`.version`), the lowest that supports the
    /// architecture and everything the back end emits.
    pub fn ptx_version(self) -> (u32, u32) {
        match self.number() {
            0..=89 => (7, 8),
            90..=99 => (8, 0),
            _ => (8, 7),
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}", self.number())
    }
}

impl FromStr for Arch {
    type Err = String;
    /// Parses `sm_90`, `sm90`, `90` or `9.0`.
    fn from_str(s: &str) -> Result<Arch, String> {
        let t = s
            .trim()
            .trim_start_matches("sm_")
            .trim_start_matches("sm")
            .trim_start_matches("compute_");
        let arch = if let Some((a, b)) = t.split_once('.') {
            a.parse()
                .ok()
                .zip(b.parse().ok())
                .map(|(a, b)| Arch::new(a, b))
        } else {
            t.parse::<u32>()
                .ok()
                .filter(|n| *n >= 10)
                .map(|n| Arch::new(n / 10, n % 10))
        };
        match arch {
            Some(a) if Arch::SUPPORTED.contains(&a) => Ok(a),
            _ => Err(format!(
                "unsupported architecture `{s}`; supported: {}",
                Arch::SUPPORTED
                    .iter()
                    .map(|a| a.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_arch_spellings() {
        assert_eq!("sm_90".parse::<Arch>().unwrap(), Arch::new(9, 0));
        assert_eq!("sm75".parse::<Arch>().unwrap(), Arch::new(7, 5));
        assert_eq!("8.6".parse::<Arch>().unwrap(), Arch::new(8, 6));
        assert!("sm_91".parse::<Arch>().is_err());
        assert!("banana".parse::<Arch>().is_err());
        assert_eq!(Arch::new(10, 0).to_string(), "sm_100");
    }
}
