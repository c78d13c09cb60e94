//! The typed intermediate representation: what the front end produces and every back end
//! consumes.
//!
//! A [`Program`] is one specialization: an entry function and every function it calls, each
//! instantiated for concrete argument types. Functions keep their control flow structured
//! (blocks, `if`, loops), as Python has it; expressions live in a per-function [`Arena`] and
//! refer to each other by [`Handle`], each with its [`Type`] and source [`Span`] beside it.
//! The IR is plain data: it prints (see the `Display` impls) and compares, and nothing in
//! it refers to the AST or to LLVM.

use crate::diag::Span;
use crate::types::tensor::MatrixLayout;
use crate::types::{DType, GroupKind, MemSpace, Scalar, Type};
use std::fmt;
use std::marker::PhantomData;

mod stores;
pub use stores::holds_memory;
pub mod analysis;
pub mod expand;
mod flags;
mod validate;
pub use flags::{BarrierScope, IntrinsicFlags, Signature};
pub use validate::{ValidationError, validate};

mod arena;
pub use arena::*;
mod program;
pub use program::*;
mod operators;
pub use operators::*;
mod intrinsic;
pub use intrinsic::*;
mod hopper;
pub use hopper::*;
mod math;
pub use math::*;
mod expr;
pub use expr::*;
mod stmt;
pub use stmt::*;
mod display;
