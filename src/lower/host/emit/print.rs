//! `print` on the host: one call of a runtime helper per piece (`__pyd_print_*`, which pass
//! the piece's printf directive and value to C `printf`, so the host formats as the device's
//! `vprintf` does), then `__pyd_print_flush`. A float without a format spec is written as
//! Python's `repr` writes it (`__pyd_print_repr`), which printf cannot do. Each directive is a NUL-terminated
//! data object of the JIT module.

use super::*;
use crate::ir::{PrintConv, PrintPiece};
use cranelift_module::DataDescription;

impl FnCx<'_, '_> {
    /// The address of a NUL-terminated copy of `text`, owned by the JIT module.
    fn cstr(&mut self, text: &str) -> R<Value> {
        let id = self
            .m
            .declare_anonymous_data(false, false)
            .map_err(|e| err(e.to_string()))?;
        let mut bytes = text.as_bytes().to_vec();
        bytes.push(0);
        let mut d = DataDescription::new();
        d.define(bytes.into_boxed_slice());
        self.m.define_data(id, &d).map_err(|e| err(e.to_string()))?;
        let gv = self.m.declare_data_in_func(id, self.b.func);
        Ok(self.b.ins().symbol_value(ct::I64, gv))
    }

    /// Emits a `print`.
    pub(super) fn print(&mut self, pieces: &[PrintPiece]) -> R<()> {
        for p in pieces {
            let fmt = self.cstr(&p.printf())?;
            match p {
                PrintPiece::Text(_) => {
                    self.call_helper("__pyd_print_text", &[ct::I64], ct::I32, &[fmt])?;
                }
                PrintPiece::Value {
                    value,
                    spec,
                    letter,
                    ..
                } if *letter == PrintPiece::REPR => {
                    // Python's `repr` (`runtime::float_repr`), at the width `spec` names.
                    let v = self.scalar(*value)?;
                    let digits: i64 = spec.trim_start_matches('.').parse().unwrap_or(16);
                    let d = self.b.ins().iconst(ct::I32, digits);
                    self.call_helper("__pyd_print_repr", &[ct::I32, ct::F64], ct::I32, &[d, v])?;
                }
                PrintPiece::Value { value, conv, .. } => {
                    let mut v = self.scalar(*value)?;
                    let (name, t) = match conv {
                        PrintConv::Signed => ("__pyd_print_i64", ct::I64),
                        PrintConv::Unsigned => ("__pyd_print_u64", ct::I64),
                        PrintConv::Float => ("__pyd_print_f64", ct::F64),
                        PrintConv::Bool => {
                            // Widened here: the C ABI leaves a byte argument's upper bits
                            // to the caller.
                            v = self.b.ins().uextend(ct::I32, v);
                            ("__pyd_print_bool", ct::I32)
                        }
                    };
                    self.call_helper(name, &[ct::I64, t], ct::I32, &[fmt, v])?;
                }
            }
        }
        self.call_helper("__pyd_print_flush", &[], ct::I32, &[])?;
        Ok(())
    }
}
