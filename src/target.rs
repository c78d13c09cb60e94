//! The compilation target: the GPU architecture (`sm_90`) that code is compiled for and that
//! a device reports, and the optimization level. Shared by every stage that needs them
//! (`lower`, `toolkit`, `runtime`, the compiler's API); it knows nothing of them.
//!
//! Both are valid by construction: an [`Arch`] is a compute capability with a major version
//! from 1 to 99 and a minor one from 0 to 9 (so `sm_XY` names it exactly), and an
//! [`OptLevel`] is 0 to 3. Constructors, parsers and deserialization check this and return
//! errors; nothing clamps or wraps.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A CUDA GPU architecture (compute capability), such as `sm_90`.
///
/// ```
/// use pydevice::Arch;
/// assert_eq!(Arch::new(9, 0), Ok(Arch::SM_90));
/// assert!(Arch::new(0, 0).is_err());
/// assert_eq!("sm_80".parse::<Arch>(), Ok(Arch::SM_80));
/// assert!("0090".parse::<Arch>().is_err());
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "RawArch")]
pub struct Arch {
    /// Major version (9 for sm_90), 1 to 99.
    major: u32,
    /// Minor version (0 for sm_90), 0 to 9.
    minor: u32,
    /// The architecture-specific variant (`sm_90a`): the PTX may use instructions only this
    /// exact architecture has (`wgmma`, `setmaxnreg`), and runs on it alone. Serialized only
    /// when set, so `{"major": 9, "minor": 0}` keeps naming sm_90.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    specific: bool,
}

/// An `Arch` as it is serialized (`{"major": 9, "minor": 0}`), before validation.
#[derive(Deserialize)]
struct RawArch {
    major: u32,
    minor: u32,
    #[serde(default)]
    specific: bool,
}

impl TryFrom<RawArch> for Arch {
    type Error = ArchError;
    fn try_from(r: RawArch) -> Result<Arch, ArchError> {
        let a = Arch::new(r.major, r.minor)?;
        if r.specific {
            a.specific().ok_or(ArchError::Unsupported {
                text: format!("sm_{}a", a.number()),
            })
        } else {
            Ok(a)
        }
    }
}

impl Arch {
    /// Turing (sm_75).
    pub const SM_75: Arch = Arch::known(7, 5);
    /// Ampere A100 (sm_80).
    pub const SM_80: Arch = Arch::known(8, 0);
    /// Ampere GA10x (sm_86).
    pub const SM_86: Arch = Arch::known(8, 6);
    /// Jetson Orin (sm_87).
    pub const SM_87: Arch = Arch::known(8, 7);
    /// Ada (sm_89).
    pub const SM_89: Arch = Arch::known(8, 9);
    /// Hopper (sm_90).
    pub const SM_90: Arch = Arch::known(9, 0);
    /// Hopper with its architecture-specific features (sm_90a: `wgmma`, `setmaxnreg`;
    /// docs/semantics.md §18.4). PTX for it runs on compute capability 9.0 only.
    pub const SM_90A: Arch = Arch {
        major: 9,
        minor: 0,
        specific: true,
    };
    /// Blackwell B100/B200 (sm_100).
    pub const SM_100: Arch = Arch::known(10, 0);
    /// Blackwell GeForce (sm_120).
    pub const SM_120: Arch = Arch::known(12, 0);

    /// Every architecture the PTX back end accepts, oldest first.
    pub const SUPPORTED: [Arch; 8] = [
        Arch::SM_75,
        Arch::SM_80,
        Arch::SM_86,
        Arch::SM_87,
        Arch::SM_89,
        Arch::SM_90,
        Arch::SM_100,
        Arch::SM_120,
    ];

    /// The default when no GPU is present: Hopper.
    pub const DEFAULT: Arch = Arch::SM_90;

    /// For the constants above, which are valid.
    const fn known(major: u32, minor: u32) -> Arch {
        Arch {
            major,
            minor,
            specific: false,
        }
    }

    /// The architecture-specific variant of this architecture (`sm_90` → `sm_90a`), where
    /// the back end has one (sm_90 only).
    pub fn specific(self) -> Option<Arch> {
        (self.number() == 90).then_some(Arch::SM_90A)
    }

    /// Whether this is an architecture-specific variant (`sm_90a`).
    pub fn is_specific(self) -> bool {
        self.specific
    }

    /// The architecture without its architecture-specific features (`sm_90a` → `sm_90`).
    pub fn generic(self) -> Arch {
        Arch::known(self.major, self.minor)
    }

    /// An architecture from its compute capability: `major` from 1 to 99, `minor` from 0
    /// to 9. Any such compute capability is an `Arch` (a device may report one the back end
    /// does not compile for; see [`Arch::SUPPORTED`]).
    pub fn new(major: u32, minor: u32) -> Result<Arch, ArchError> {
        if (1..=99).contains(&major) && minor <= 9 {
            Ok(Arch::known(major, minor))
        } else {
            Err(ArchError::NotAnArch { major, minor })
        }
    }

    /// Major version (9 for sm_90).
    pub fn major(self) -> u32 {
        self.major
    }

    /// Minor version (0 for sm_90).
    pub fn minor(self) -> u32 {
        self.minor
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
        write!(
            f,
            "sm_{}{}",
            self.number(),
            if self.specific { "a" } else { "" }
        )
    }
}

/// A decimal number written without sign, spaces or leading zeros (`"0"` itself allowed).
fn plain_number(s: &str) -> Option<u32> {
    let canonical =
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    canonical.then(|| s.parse().ok()).flatten()
}

/// Why an [`Arch`] could not be made ([`Arch::new`], parsing, deserialization).
///
/// ```
/// use pydevice::{Arch, target::ArchError};
/// assert_eq!(Arch::new(0, 0), Err(ArchError::NotAnArch { major: 0, minor: 0 }));
/// let e = "sm_70".parse::<Arch>().unwrap_err();
/// assert!(matches!(e, ArchError::Unsupported { .. }));
/// assert!(e.to_string().starts_with("unsupported architecture `sm_70`"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArchError {
    /// A compute capability outside 1.0 to 99.9, which no `sm_XY` names.
    NotAnArch {
        /// The major version given.
        major: u32,
        /// The minor version given.
        minor: u32,
    },
    /// Text that names no architecture of [`Arch::SUPPORTED`].
    Unsupported {
        /// The text, as given.
        text: String,
    },
}

impl fmt::Display for ArchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArchError::NotAnArch { major, minor } => write!(
                f,
                "compute capability {major}.{minor} is not an architecture: the major version \
                 is 1 to 99 and the minor 0 to 9"
            ),
            ArchError::Unsupported { text } => write!(
                f,
                "unsupported architecture `{text}`; supported: {}",
                Arch::SUPPORTED
                    .iter()
                    .map(|a| a.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

impl std::error::Error for ArchError {}

/// For callers that report errors as text.
impl From<ArchError> for String {
    fn from(e: ArchError) -> String {
        e.to_string()
    }
}

impl FromStr for Arch {
    type Err = ArchError;
    /// Parses `sm_90`, `sm90`, `compute_90`, `90` or `9.0`: one prefix at most, then
    /// digits without a sign or leading zeros. Only [`Arch::SUPPORTED`] architectures parse,
    /// and `sm_90a` (or `compute_90a`, `90a`), the architecture-specific [`Arch::SM_90A`].
    fn from_str(s: &str) -> Result<Arch, ArchError> {
        let t = s.trim();
        if let Some(base) = t.strip_suffix('a')
            && !base.ends_with('a')
        {
            return base
                .parse::<Arch>()
                .ok()
                .filter(|_| !base.contains('.'))
                .and_then(|a| a.specific())
                .ok_or_else(|| ArchError::Unsupported {
                    text: s.to_string(),
                });
        }
        let t = t
            .strip_prefix("sm_")
            .or_else(|| t.strip_prefix("compute_"))
            .or_else(|| t.strip_prefix("sm"))
            .unwrap_or(t);
        let arch = if let Some((a, b)) = t.split_once('.') {
            plain_number(a)
                .zip(plain_number(b))
                .and_then(|(a, b)| Arch::new(a, b).ok())
        } else {
            plain_number(t)
                .filter(|n| *n >= 10)
                .and_then(|n| Arch::new(n / 10, n % 10).ok())
        };
        match arch {
            Some(a) if Arch::SUPPORTED.contains(&a) => Ok(a),
            _ => Err(ArchError::Unsupported {
                text: s.to_string(),
            }),
        }
    }
}

/// How hard LLVM optimizes device code: `-O0` to `-O3`.
///
/// ```
/// use pydevice::OptLevel;
/// assert_eq!("2".parse::<OptLevel>(), Ok(OptLevel::O2));
/// assert!("9".parse::<OptLevel>().is_err());
/// assert!(OptLevel::try_from(4u8).is_err());
/// ```
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[non_exhaustive]
pub enum OptLevel {
    /// No optimization.
    O0,
    /// Light optimization.
    O1,
    /// Most optimizations.
    O2,
    /// All optimizations (the default).
    #[default]
    O3,
}

impl OptLevel {
    /// The level as a number, 0 to 3.
    pub fn number(self) -> u8 {
        match self {
            OptLevel::O0 => 0,
            OptLevel::O1 => 1,
            OptLevel::O2 => 2,
            OptLevel::O3 => 3,
        }
    }
}

/// Why an [`OptLevel`] could not be made: the level given is not 0, 1, 2 or 3.
///
/// ```
/// use pydevice::{OptLevel, target::OptLevelError};
/// let e = "fast".parse::<OptLevel>().unwrap_err();
/// assert_eq!(e, OptLevelError::OutOfRange { text: "fast".into() });
/// assert_eq!(e.to_string(), "optimization level `fast`: it is 0, 1, 2 or 3");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptLevelError {
    /// Not 0 to 3.
    OutOfRange {
        /// The level as given (a number, or the text parsed).
        text: String,
    },
}

impl fmt::Display for OptLevelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptLevelError::OutOfRange { text } => {
                write!(f, "optimization level `{text}`: it is 0, 1, 2 or 3")
            }
        }
    }
}

impl std::error::Error for OptLevelError {}

/// For callers that report errors as text.
impl From<OptLevelError> for String {
    fn from(e: OptLevelError) -> String {
        e.to_string()
    }
}

impl TryFrom<u8> for OptLevel {
    type Error = OptLevelError;
    fn try_from(n: u8) -> Result<OptLevel, OptLevelError> {
        Ok(match n {
            0 => OptLevel::O0,
            1 => OptLevel::O1,
            2 => OptLevel::O2,
            3 => OptLevel::O3,
            n => {
                return Err(OptLevelError::OutOfRange {
                    text: n.to_string(),
                });
            }
        })
    }
}

impl From<OptLevel> for u8 {
    fn from(o: OptLevel) -> u8 {
        o.number()
    }
}

impl FromStr for OptLevel {
    type Err = OptLevelError;
    /// Parses `0`, `1`, `2` or `3`.
    fn from_str(s: &str) -> Result<OptLevel, OptLevelError> {
        match s.trim() {
            "0" => Ok(OptLevel::O0),
            "1" => Ok(OptLevel::O1),
            "2" => Ok(OptLevel::O2),
            "3" => Ok(OptLevel::O3),
            _ => Err(OptLevelError::OutOfRange {
                text: s.to_string(),
            }),
        }
    }
}

/// The number, as the level was written before it was a type (`opt_level: 3` in option
/// dumps and cache keys).
impl fmt::Debug for OptLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

impl fmt::Display for OptLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

impl Serialize for OptLevel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.number())
    }
}

impl<'de> Deserialize<'de> for OptLevel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<OptLevel, D::Error> {
        OptLevel::try_from(u8::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// The spec's `machine_representation()`: the C++ ABI family that device code follows when
/// it crosses into CUDA C++ — `"itanium"` on Linux (and other non-Windows hosts), `"msvc"`
/// on Windows. Device code compiled on a host follows that host's family (nvcc compiles
/// `__device__` code with the host compiler's ABI), so one answer serves both.
pub fn machine_representation() -> &'static str {
    if cfg!(target_os = "windows") {
        "msvc"
    } else {
        "itanium"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_arch_spellings() {
        assert_eq!("sm_90".parse::<Arch>().unwrap(), Arch::SM_90);
        assert_eq!("sm75".parse::<Arch>().unwrap(), Arch::SM_75);
        assert_eq!("8.6".parse::<Arch>().unwrap(), Arch::SM_86);
        assert_eq!("compute_80".parse::<Arch>().unwrap(), Arch::SM_80);
        assert_eq!(" 90 ".parse::<Arch>().unwrap(), Arch::SM_90);
        assert_eq!("sm_120".parse::<Arch>().unwrap(), Arch::SM_120);
        assert!("sm_91".parse::<Arch>().is_err());
        assert!("banana".parse::<Arch>().is_err());
        assert_eq!(Arch::SM_100.to_string(), "sm_100");
    }

    #[test]
    fn sm_90a_is_the_architecture_specific_hopper() {
        for s in ["sm_90a", "sm90a", "compute_90a", "90a"] {
            assert_eq!(s.parse::<Arch>(), Ok(Arch::SM_90A), "{s}");
        }
        for s in ["sm_80a", "sm_90aa", "9.0a", "sm_100a", "a"] {
            assert!(s.parse::<Arch>().is_err(), "`{s}` parsed");
        }
        assert_eq!(Arch::SM_90A.to_string(), "sm_90a");
        assert_eq!(Arch::SM_90A.number(), 90);
        assert_eq!(Arch::SM_90A.generic(), Arch::SM_90);
        assert_eq!(Arch::SM_90.specific(), Some(Arch::SM_90A));
        assert_eq!(Arch::SM_80.specific(), None);
        let json = serde_json::to_string(&Arch::SM_90A).expect("serializes");
        assert_eq!(json, r#"{"major":9,"minor":0,"specific":true}"#);
        assert_eq!(serde_json::from_str::<Arch>(&json).ok(), Some(Arch::SM_90A));
        assert!(serde_json::from_str::<Arch>(r#"{"major":8,"minor":0,"specific":true}"#).is_err());
    }

    /// Issue #23: these parsed as sm_90.
    #[test]
    fn rejects_repeated_prefixes_signs_and_leading_zeros() {
        for s in [
            "smsm90", "+90", "0090", "sm_+90", "sm_090", "09.0", "9.00", "sm_sm_90", "9.+0", "",
            "sm_", "9.", ".0", "sm 90",
        ] {
            assert!(s.parse::<Arch>().is_err(), "`{s}` parsed");
        }
    }

    /// Issue #23: `Arch::new(0, 0)` was `sm_0`, and large values wrapped in `number`.
    #[test]
    fn new_accepts_compute_capabilities_only() {
        assert!(Arch::new(0, 0).is_err());
        assert!(Arch::new(9, 10).is_err());
        assert!(Arch::new(100, 0).is_err());
        assert!(Arch::new(u32::MAX, u32::MAX).is_err());
        assert!(Arch::new(u32::MAX / 10 + 1, 0).is_err());
        let a = Arch::new(99, 9).expect("valid");
        assert_eq!(a.number(), 999);
        assert_eq!(a.to_string(), "sm_999");
        // A device may report a capability the back end does not compile for.
        assert_eq!(Arch::new(7, 0).map(|a| a.to_string()), Ok("sm_70".into()));
        for a in Arch::SUPPORTED {
            assert_eq!(Arch::new(a.major(), a.minor()), Ok(a));
        }
    }

    #[test]
    fn deserializing_validates_arch() {
        let ok: Arch = serde_json::from_str(r#"{"major":9,"minor":0}"#).expect("valid");
        assert_eq!(ok, Arch::SM_90);
        assert_eq!(
            serde_json::to_string(&Arch::SM_90).expect("serializes"),
            r#"{"major":9,"minor":0}"#
        );
        assert!(serde_json::from_str::<Arch>(r#"{"major":0,"minor":0}"#).is_err());
        assert!(serde_json::from_str::<Arch>(r#"{"major":9,"minor":12}"#).is_err());
    }

    /// Issue #23: levels 4 to 255 silently meant -O3.
    #[test]
    fn opt_levels_are_0_to_3() {
        for n in 0..=3u8 {
            let o = OptLevel::try_from(n).expect("valid");
            assert_eq!(u8::from(o), n);
            assert_eq!(n.to_string().parse::<OptLevel>(), Ok(o));
            assert_eq!(
                serde_json::to_string(&o).expect("serializes"),
                n.to_string()
            );
        }
        for n in 4..=255u8 {
            assert!(OptLevel::try_from(n).is_err(), "{n}");
            assert!(serde_json::from_str::<OptLevel>(&n.to_string()).is_err());
        }
        for s in ["9", "4", "-1", "+3", "03", "O3", ""] {
            assert!(s.parse::<OptLevel>().is_err(), "`{s}` parsed");
        }
        assert_eq!(format!("{:?}", OptLevel::default()), "3");
    }
}
