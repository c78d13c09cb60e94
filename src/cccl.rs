//! CUDA C++ that calls CCCL (Thrust) for `jit.thrust.*` in cupyx.jit kernels
//! (docs/semantics.md §15.5).
//!
//! Each `jit.thrust.f(policy, ...)` call becomes a call of an `extern "C" __device__` shim,
//! one per algorithm and argument types, such as
//! `__pyd_thrust_sort_i32(long long first, long long first_stride, long long last, long long
//! last_stride)`. Iterators cross as a generic byte address and a byte stride (an array's
//! `begin()` of a strided view walks its stride), numbers as themselves. The shims are
//! gathered into one translation unit ([`translation_unit`]) that the kernel carries
//! ([`crate::CompiledKernel::cuda`]); the runtime compiles it with NVRTC (`-rdc=true`, the
//! options of [`nvrtc_options`]; cached by content) and links it with the kernel's PTX when the
//! kernel is loaded.
//!
//! Thrust is not meant for NVRTC: its headers reach for the C++ standard library and for the
//! CUDA back end's host code. The prelude makes them compile there: the device system is the
//! sequential C++ one (so no kernel launches from device code: each thread runs its algorithm
//! sequentially, which is what CuPy's `thrust.device` does inside a kernel compiled without
//! relocatable device code), `std::` names come from `cuda::std`, host-only helpers become
//! device functions, and the few C headers it includes are empty stubs ([`stub_dir`]).

use std::path::PathBuf;

/// What every translation unit of shims starts with: the configuration that lets Thrust's
/// headers compile under NVRTC (see the module documentation), Thrust's algorithm headers and
/// the strided iterator that shims build from an address and a stride.
pub const PRELUDE: &str = r#"// pydevice: shims of jit.thrust calls (generated)
#define THRUST_DEVICE_SYSTEM THRUST_DEVICE_SYSTEM_CPP
#define CCCL_DISABLE_NVRTC_COMPATIBILITY_CHECK
#include <cuda/std/cstddef>
#include <cuda/std/iterator>
#include <cuda/std/utility>
#include <cuda/std/type_traits>
#include <cuda/std/functional>
#include <cuda/std/limits>
namespace std {
using namespace cuda::std;
template <class I> struct iterator_traits : cuda::std::iterator_traits<I> {};
template <class C, class T> class basic_ostream;
template <class C> struct char_traits;
struct runtime_error { __device__ runtime_error(const char*) {} };
struct bad_alloc {};
struct exception { __device__ const char* what() const { return ""; } };
}
#define _CCCL_NVTX_RANGE_SCOPE(...)
#define _CCCL_NVTX_RANGE_SCOPE_IF(...)
#undef _CCCL_HOST
#define _CCCL_HOST __device__
#include <thrust/execution_policy.h>

// A random-access iterator over elements `s` bytes apart from address `p`.
template <class T> struct pyd_it {
  using iterator_category = cuda::std::random_access_iterator_tag;
  using value_type = T;
  using difference_type = long long;
  using pointer = T*;
  using reference = T&;
  char* p;
  long long s;
  __device__ pyd_it() : p(nullptr), s(sizeof(T)) {}
  __device__ pyd_it(long long a, long long stride) : p(reinterpret_cast<char*>(a)), s(stride) {}
  __device__ long long addr() const { return reinterpret_cast<long long>(p); }
  __device__ T& operator*() const { return *reinterpret_cast<T*>(p); }
  __device__ T* operator->() const { return reinterpret_cast<T*>(p); }
  __device__ T& operator[](long long i) const { return *reinterpret_cast<T*>(p + i * s); }
  __device__ pyd_it& operator++() { p += s; return *this; }
  __device__ pyd_it operator++(int) { pyd_it t = *this; p += s; return t; }
  __device__ pyd_it& operator--() { p -= s; return *this; }
  __device__ pyd_it operator--(int) { pyd_it t = *this; p -= s; return t; }
  __device__ pyd_it& operator+=(long long n) { p += n * s; return *this; }
  __device__ pyd_it& operator-=(long long n) { p -= n * s; return *this; }
  __device__ pyd_it operator+(long long n) const { pyd_it t = *this; t.p += n * s; return t; }
  __device__ pyd_it operator-(long long n) const { pyd_it t = *this; t.p -= n * s; return t; }
  friend __device__ pyd_it operator+(long long n, pyd_it i) { return i + n; }
  __device__ long long operator-(const pyd_it& o) const { return (p - o.p) / s; }
  __device__ bool operator==(const pyd_it& o) const { return p == o.p; }
  __device__ bool operator!=(const pyd_it& o) const { return p != o.p; }
  __device__ bool operator<(const pyd_it& o) const { return (p - o.p) / s < 0; }
  __device__ bool operator>(const pyd_it& o) const { return o < *this; }
  __device__ bool operator<=(const pyd_it& o) const { return !(o < *this); }
  __device__ bool operator>=(const pyd_it& o) const { return !(*this < o); }
};

// Two results (an iterator pair, or an iterator and a count), returned by value.
struct pyd_pair { long long a; long long b; };

// Two iterators, each its address and stride (what pydevice's iterator values hold),
// returned by value: the call's value is then the pair itself, evaluated once.
struct pyd_iters { long long a; long long sa; long long b; long long sb; };
"#;

/// Thrust's header of each algorithm a shim may call (fewer headers, faster NVRTC).
const HEADERS: [(&str, &[&str]); 21] = [
    ("adjacent_difference", &["adjacent_difference"]),
    (
        "binary_search",
        &["binary_search", "lower_bound", "upper_bound", "equal_range"],
    ),
    ("copy", &["copy"]),
    ("count", &["count"]),
    ("equal", &["equal"]),
    ("fill", &["fill"]),
    ("find", &["find"]),
    ("gather", &["gather"]),
    ("inner_product", &["inner_product"]),
    ("mismatch", &["mismatch"]),
    ("reduce", &["reduce", "reduce_by_key"]),
    ("remove", &["remove", "remove_copy"]),
    ("replace", &["replace", "replace_copy"]),
    ("reverse", &["reverse", "reverse_copy"]),
    (
        "scan",
        &[
            "inclusive_scan",
            "exclusive_scan",
            "inclusive_scan_by_key",
            "exclusive_scan_by_key",
        ],
    ),
    ("scatter", &["scatter"]),
    ("sequence", &["sequence"]),
    (
        "set_operations",
        &[
            "set_difference",
            "set_intersection",
            "set_symmetric_difference",
            "set_union",
            "set_difference_by_key",
            "set_intersection_by_key",
            "set_symmetric_difference_by_key",
            "set_union_by_key",
        ],
    ),
    (
        "sort",
        &[
            "sort",
            "stable_sort",
            "sort_by_key",
            "stable_sort_by_key",
            "is_sorted",
            "is_sorted_until",
        ],
    ),
    ("swap", &["swap_ranges"]),
    ("unique", &["unique", "unique_by_key"]),
];

/// The translation unit for a kernel's shims: the prelude, the Thrust headers the shims'
/// algorithms need, then each definition.
pub fn translation_unit(shims: &[String]) -> String {
    let mut s = String::from(PRELUDE);
    for (header, algorithms) in HEADERS {
        if algorithms
            .iter()
            .any(|a| shims.iter().any(|b| b.contains(&format!("thrust::{a}("))))
        {
            s.push_str(&format!("#include <thrust/{header}.h>\n"));
        }
    }
    for body in shims {
        s.push('\n');
        s.push_str(body);
        s.push('\n');
    }
    s
}

/// Empty stand-ins for the C headers Thrust includes (`cstdio`, `stdlib.h`, `stdint.h`),
/// which NVRTC does not have, written once into a folder under the temporary directory.
pub fn stub_dir() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("pydevice-nvrtc-stubs-{}", std::process::id()));
    for name in [
        "cstdio", "stdlib.h", "stdint.h", "cstdlib", "cstring", "string.h",
    ] {
        let path = dir.join(name);
        if path.is_file() {
            continue;
        }
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&path, "// pydevice: empty for NVRTC\n"))
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(dir)
}

/// The folder that holds CCCL's headers (`thrust/`, `cub/`, `cuda/std/`): `$PYDEVICE_CCCL`,
/// else the first CUDA include folder ([`crate::toolkit::include_dirs`]) with `thrust/sort.h`.
pub fn include_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("PYDEVICE_CCCL").map(PathBuf::from)
        && d.join("thrust/sort.h").is_file()
    {
        return Some(d);
    }
    crate::toolkit::include_dirs()
        .into_iter()
        .find(|d| d.join("thrust/sort.h").is_file())
}

/// NVRTC's options for a translation unit of shims (beside `-rdc=true` and the architecture):
/// C++17, the stub headers and CCCL's folder.
pub fn nvrtc_options() -> Result<Vec<String>, String> {
    let cccl = include_dir().ok_or_else(|| {
        format!(
            "jit.thrust needs CCCL's headers (thrust/sort.h), found in none of {} (install the \
             `nvidia-cuda-cccl` wheel or set PYDEVICE_CCCL to the folder that holds `thrust/`)",
            crate::toolkit::searched()
        )
    })?;
    Ok(vec![
        "-std=c++17".to_string(),
        "-default-device".to_string(),
        format!("-I{}", stub_dir()?.display()),
        format!("-I{}", cccl.display()),
    ])
}
