//! The integration tests, one binary so that LLVM is linked once (tests/fixtures.rs, with its
//! own harness, and tests/fork.rs, which must fork a process no other test thread shares, are
//! the other two). Each module is one former test file; `gpu*` modules skip their launches,
//! saying so, without a CUDA driver. Run one area with a filter: `cargo test --test it host::`.

#[path = "../support/mod.rs"]
mod support;

mod abi_layouts;
mod array_views;
mod builtin_table;
mod cpu;
mod debug_info;
mod disk_cache;
mod funnelshift;
mod fuzz_replay;
mod gpu;
mod gpu_debug;
mod gpu_multi;
mod gpu_runtime;
mod host;
mod interop_link;
mod kernels;
mod layers;
mod proptest_api;
mod proptest_host;
mod proptest_programs;
mod ptx_features;
mod random;
mod robustness;
mod runtime;
mod thrust_link;
mod validate;
