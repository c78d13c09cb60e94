//! The `pydevice` command line inside the extension module, so that the wheel carries it:
//! `python -m pydevice` and the `pydevice` console script (both `pydevice/__main__.py`) call
//! [`cli_main`], which runs the same clap command line as the crate's binary. The binary's
//! source, `src/bin/pydevice.rs`, is included as a module rather than copied, so the two
//! cannot drift; its `main` is the one item the package does not use.

#[allow(dead_code)] // `main`: the binary's entry point, unused here.
#[path = "../../src/bin/pydevice.rs"]
mod command;

use pyo3::prelude::*;
use std::ffi::OsString;
use std::io::Write;

/// Runs the command line on `argv` (the program's name first, as `sys.argv`) without the
/// GIL, and returns its exit status. `--help`, `--version` and usage errors end the process
/// (clap's exit), as they end the binary.
#[pyfunction]
pub fn cli_main(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    let status = py.detach(|| command::run(argv));
    // Python's exit does not flush Rust's buffered stdout.
    let _ = std::io::stdout().flush();
    status
}
