//! pydevice: a compiler library
pub mod diag;
pub mod front;
pub mod ir;
pub mod types;
pub mod lower;
pub mod toolkit;
