//! Parsing argument types written in Numba's notation: `float32[:]`, `float64[:, ::1]`,
//! `int32`, `(int32, float32)`, and whole signatures such as `void(float32[:], int32)`.
//! The one parser of the notation: [`parse_signature_with`] also resolves names the caller
//! knows (a module's `@struct` classes, through `Module::parse_signature`).

use super::{Layout, Scalar, Type};
use std::fmt;

/// Why a signature or a type in Numba's notation does not parse.
///
/// ```
/// use pydevice::types::signature::{parse_type, SignatureError};
/// assert_eq!(parse_type("float33"), Err(SignatureError::UnknownType { name: "float33".into() }));
/// let e = parse_type("float32[:").unwrap_err();
/// assert!(matches!(e, SignatureError::Syntax { column: 10, .. }), "{e:?}");
/// assert_eq!(e.to_string(), "expected `]` at column 10");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignatureError {
    /// The text does not follow the notation.
    Syntax {
        /// Where, counting bytes from 1.
        column: usize,
        /// What was expected or found there.
        message: String,
    },
    /// A name that is no type (nor one the caller resolves).
    UnknownType {
        /// The name.
        name: String,
    },
    /// Tuples or records nest deeper than the parser follows.
    TooDeep {
        /// `"types"` or `"records"`.
        what: &'static str,
        /// The deepest nesting accepted.
        limit: usize,
        /// Where the limit was passed, counting bytes from 1.
        column: usize,
    },
    /// Well-formed notation for a type that cannot be: an array of something that has no
    /// arrays, a record whose layout is not C's, a string field.
    Invalid {
        /// Why.
        message: String,
    },
}

impl fmt::Display for SignatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignatureError::Syntax { message, .. } | SignatureError::Invalid { message } => {
                f.write_str(message)
            }
            SignatureError::UnknownType { name } => write!(f, "unknown type `{name}`"),
            SignatureError::TooDeep {
                what,
                limit,
                column,
            } => write!(
                f,
                "{what} nest deeper than {limit} levels at column {column}"
            ),
        }
    }
}

impl std::error::Error for SignatureError {}

/// For callers that report errors as text.
impl From<SignatureError> for String {
    fn from(e: SignatureError) -> String {
        e.to_string()
    }
}

fn syntax(column: usize, message: String) -> SignatureError {
    SignatureError::Syntax { column, message }
}

fn invalid(message: String) -> SignatureError {
    SignatureError::Invalid { message }
}

/// Resolves a name that is not one of the notation's own (a `@struct` class) to a type.
pub type NameResolver<'a> = &'a dyn Fn(&str) -> Option<Type>;

/// Parses a comma-separated list of argument types, optionally wrapped as a whole Numba
/// signature `ret(args)`; the return type, if any, must be `void`/`none` for kernels and is
/// returned beside the arguments.
///
/// ```
/// use pydevice::types::{signature::parse_signature, Type, Scalar, Layout};
/// let (args, ret) = parse_signature("void(float32[::1], int32)").unwrap();
/// assert_eq!(args, vec![Type::array(Scalar::Float32, 1, Layout::C), Type::Scalar(Scalar::Int32)]);
/// assert_eq!(ret, Some(Type::None));
/// ```
pub fn parse_signature(text: &str) -> Result<(Vec<Type>, Option<Type>), SignatureError> {
    parse_signature_with(text, &|_| None)
}

/// [`parse_signature`] where a name the notation does not know is looked up with `names`,
/// alone or as an array's element (`Particle`, `Particle[:, ::1]`): how a module's
/// `@struct` classes are named in a signature.
///
/// ```
/// use pydevice::types::{signature::parse_signature_with, Layout, Scalar, Type};
/// let point = Type::Tuple(vec![Type::Scalar(Scalar::Float32); 2]); // stands in for a struct
/// let names = |n: &str| (n == "Point").then(|| point.clone());
/// let (args, _) = parse_signature_with("Point, int32", &names).unwrap();
/// assert_eq!(args[0], point);
/// assert!(parse_signature_with("Nope", &names).is_err());
/// ```
pub fn parse_signature_with(
    text: &str,
    names: NameResolver<'_>,
) -> Result<(Vec<Type>, Option<Type>), SignatureError> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        depth: 0,
        records: 0,
        names,
    };
    p.ws();
    // A whole signature: NAME '(' ... ')'
    let save = p.i;
    if let Some(name) = p.ident().filter(|n| n != "Record") {
        p.ws();
        if p.eat(b'(') {
            let ret = if matches!(name.as_str(), "void" | "none" | "None") {
                Type::None
            } else {
                p.i = save;
                let t = p.ty()?;
                p.ws();
                p.expect(b'(')?;
                t
            };
            let args = p.list(b')')?;
            p.expect(b')')?;
            p.end()?;
            validate(&args)?;
            return Ok((args, Some(ret)));
        }
    }
    p.i = save;
    let args = p.list(0)?;
    p.end()?;
    validate(&args)?;
    Ok((args, None))
}

fn validate(types: &[Type]) -> Result<(), SignatureError> {
    types.iter().try_for_each(Type::validate).map_err(invalid)
}

/// Parses one type in Numba's notation.
pub fn parse_type(text: &str) -> Result<Type, SignatureError> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        depth: 0,
        records: 0,
        names: &|_| None,
    };
    p.ws();
    let t = p.ty()?;
    p.end()?;
    t.validate().map_err(invalid)?;
    Ok(t)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    /// Tuples and records open around the current position: bounded by
    /// [`super::MAX_TYPE_DEPTH`], so that deep input is an error, not a stack overflow.
    depth: usize,
    /// Records open around the current position (each costs more stack than a tuple).
    records: usize,
    /// Names the notation does not know.
    names: NameResolver<'a>,
}

/// The deepest nesting of `Record(...)` accepted (as for `.npy` structured dtypes).
const MAX_RECORD_DEPTH: usize = 16;

impl Parser<'_> {
    /// Enters a tuple or record.
    fn enter(&mut self) -> Result<(), SignatureError> {
        self.depth += 1;
        if self.depth > super::MAX_TYPE_DEPTH {
            return Err(SignatureError::TooDeep {
                what: "types",
                limit: super::MAX_TYPE_DEPTH,
                column: self.i + 1,
            });
        }
        Ok(())
    }

    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), SignatureError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(syntax(
                self.i + 1,
                format!("expected `{}` at column {}", c as char, self.i + 1),
            ))
        }
    }

    fn end(&mut self) -> Result<(), SignatureError> {
        self.ws();
        if self.i == self.s.len() {
            Ok(())
        } else {
            Err(syntax(
                self.i + 1,
                format!("unexpected text at column {}", self.i + 1),
            ))
        }
    }

    fn ident(&mut self) -> Option<String> {
        self.ws();
        let start = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
        {
            self.i += 1;
        }
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    /// Types separated by commas up to (not consuming) `close`, or the end when `close` is 0.
    fn list(&mut self, close: u8) -> Result<Vec<Type>, SignatureError> {
        let mut out = Vec::new();
        self.ws();
        if self.s.get(self.i).copied() == Some(close) || (close == 0 && self.i == self.s.len()) {
            return Ok(out);
        }
        loop {
            out.push(self.ty()?);
            if !self.eat(b',') {
                return Ok(out);
            }
            self.ws();
            if self.s.get(self.i).copied() == Some(close) {
                return Ok(out);
            }
        }
    }

    /// The rest of numba's `[char x N]` / `[unichr x N]` after its `[`: the text kind and N.
    fn text_kind(
        &mut self,
        col: usize,
    ) -> Result<(crate::types::record::Text, u64), SignatureError> {
        let kind = match self.ident().as_deref() {
            Some("char") => crate::types::record::Text::Bytes,
            Some("unichr") => crate::types::record::Text::Unicode,
            _ => {
                return Err(syntax(
                    col,
                    format!("expected `[char x N]` or `[unichr x N]` at column {col}"),
                ));
            }
        };
        if self.ident().as_deref() != Some("x") {
            return Err(syntax(
                self.i + 1,
                format!("expected `x` at column {}", self.i + 1),
            ));
        }
        let n = self.number()?;
        self.expect(b']')?;
        Ok((kind, n))
    }

    fn ty(&mut self) -> Result<Type, SignatureError> {
        if self.eat(b'(') {
            self.enter()?;
            let elems = self.list(b')')?;
            self.expect(b')')?;
            self.depth -= 1;
            return Ok(Type::Tuple(elems));
        }
        self.named_ty()
    }

    /// A type that is not a tuple: a name, a record, a text type, then any array
    /// dimensions. Kept out of [`Parser::ty`] so that the frames of the tuple recursion
    /// stay small (64 levels must fit a small thread stack in a debug build).
    #[inline(never)]
    fn named_ty(&mut self) -> Result<Type, SignatureError> {
        let col = self.i + 1;
        let elem = if self.eat(b'[') {
            // numba's `[unichr x 12]` / `[char x 12]`: NumPy's text dtype `U12` / `S12`.
            let (kind, n) = self.text_kind(col)?;
            crate::types::record::text_element(kind, n)
                .map(|st| Type::Struct(Box::new(st)))
                .map_err(invalid)?
        } else {
            let name = self
                .ident()
                .ok_or_else(|| syntax(col, format!("expected a type at column {col}")))?;
            match name.as_str() {
                "int" => Type::Scalar(Scalar::Int32),
                "float" => Type::Scalar(Scalar::Float32),
                "Record" if self.eat(b'(') => Type::Struct(Box::new(self.record()?)),
                // A TMA tensor map by value (§18.4): `TensorMap` or `hopper.TensorMap`.
                "TensorMap" => Type::tensor_map(),
                "hopper" if self.eat(b'.') && self.ident().as_deref() == Some("TensorMap") => {
                    Type::tensor_map()
                }
                n => match super::vector_name(n) {
                    Some((elem, len)) => Type::Vector { elem, len },
                    None => match Scalar::from_name(n) {
                        Some(s) => Type::Scalar(s),
                        None => (self.names)(n).ok_or_else(|| SignatureError::UnknownType {
                            name: n.to_string(),
                        })?,
                    },
                },
            }
        };
        if !self.eat(b'[') {
            return Ok(elem);
        }
        // `float64[()]`: a zero-dimensional array (NumPy's `np.array(1.5)`).
        if self.eat(b'(') {
            self.expect(b')')?;
            self.expect(b']')?;
            return Type::array_of(&elem, 0, Layout::C)
                .ok_or_else(|| invalid(format!("`{elem}` cannot be the element of an array")));
        }
        // Dimensions: `:` or `::1`, separated by commas.
        let mut contiguous = Vec::new();
        loop {
            self.expect(b':')?;
            if self.eat(b':') {
                self.ws();
                if self.s.get(self.i) == Some(&b'1') {
                    self.i += 1;
                    contiguous.push(true);
                } else {
                    return Err(syntax(
                        self.i + 1,
                        format!("expected `::1` at column {}", self.i + 1),
                    ));
                }
            } else {
                contiguous.push(false);
            }
            if !self.eat(b',') {
                break;
            }
        }
        self.expect(b']')?;
        let n = contiguous.len();
        let layout = match contiguous.iter().position(|&c| c) {
            None => Layout::Any,
            Some(p) if contiguous.iter().filter(|&&c| c).count() > 1 => {
                return Err(syntax(
                    self.i,
                    format!("only one dimension can be `::1` (found at {p} and more)"),
                ));
            }
            Some(p) if p + 1 == n => Layout::C,
            Some(0) => Layout::F,
            Some(_) => {
                return Err(syntax(
                    self.i,
                    "`::1` must be the first or last dimension".into(),
                ));
            }
        };
        if n > 255 {
            return Err(syntax(self.i, "too many dimensions".into()));
        }
        Type::array_of(&elem, n as u8, layout)
            .ok_or_else(|| invalid(format!("no arrays of {elem}")))
    }

    /// A decimal number.
    fn number(&mut self) -> Result<u64, SignatureError> {
        self.ws();
        let start = self.i;
        while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i])
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| {
                syntax(
                    start + 1,
                    format!("expected a number at column {}", start + 1),
                )
            })
    }

    /// The inside of numba's `Record(x[type=float32;offset=0],y[type=int32;offset=4];8;True)`
    /// (what `str(numba.from_dtype(dtype))` prints), after `Record(`.
    fn record(&mut self) -> Result<crate::types::StructType, SignatureError> {
        self.enter()?;
        self.records += 1;
        if self.records > MAX_RECORD_DEPTH {
            return Err(SignatureError::TooDeep {
                what: "records",
                limit: MAX_RECORD_DEPTH,
                column: self.i + 1,
            });
        }
        let r = self.record_fields();
        self.records -= 1;
        self.depth -= 1;
        r
    }

    fn record_fields(&mut self) -> Result<crate::types::StructType, SignatureError> {
        use crate::types::record::{RecordField, record};
        let mut fields = Vec::new();
        loop {
            let col = self.i + 1;
            let name = self
                .ident()
                .ok_or_else(|| syntax(col, format!("expected a field name at column {col}")))?;
            self.expect(b'[')?;
            if self.ident().as_deref() != Some("type") {
                return Err(syntax(
                    self.i + 1,
                    format!("expected `type=` at column {}", self.i + 1),
                ));
            }
            self.expect(b'=')?;
            let col = self.i + 1;
            let mut text = None;
            if self.eat(b'[') {
                // numba's `[char x 12]` / `[unichr x 12]`: a text field (NumPy `S12`, `U12`).
                text = Some(self.text_kind(col)?);
            }
            let t = if text.is_some() {
                String::new()
            } else {
                self.ident()
                    .ok_or_else(|| syntax(col, format!("expected a type at column {col}")))?
            };
            let (t, shape, nested) = if let Some((kind, n)) = text {
                (kind.unit().to_string(), vec![n], None)
            } else if t == "nestedarray" && self.eat(b'(') {
                // A sub-array field: `nestedarray(float32, (3, 2))`.
                let col = self.i + 1;
                let elem = self
                    .ident()
                    .ok_or_else(|| syntax(col, format!("expected a type at column {col}")))?;
                let nested = if elem == "Record" && self.eat(b'(') {
                    Some(Type::Struct(Box::new(self.record()?)))
                } else {
                    None
                };
                self.expect(b',')?;
                self.expect(b'(')?;
                let mut shape = Vec::new();
                while !self.eat(b')') {
                    shape.push(self.number()?);
                    if !self.eat(b',') {
                        self.expect(b')')?;
                        break;
                    }
                }
                self.expect(b')')?;
                (elem, shape, nested)
            } else {
                (t, Vec::new(), None)
            };
            let ty = if let Some(n) = nested {
                n
            } else if t == "Record" && self.eat(b'(') {
                Type::Struct(Box::new(self.record()?))
            } else {
                Type::Scalar(
                    Scalar::from_name(&t)
                        .ok_or_else(|| invalid(format!("field `{name}`: unknown type `{t}`")))?,
                )
            };
            self.expect(b';')?;
            if self.ident().as_deref() != Some("offset") {
                return Err(syntax(
                    self.i + 1,
                    format!("expected `offset=` at column {}", self.i + 1),
                ));
            }
            self.expect(b'=')?;
            let offset = self.number()?;
            self.expect(b']')?;
            fields.push(RecordField {
                name,
                ty,
                offset,
                shape,
                text: text.map(|(kind, _)| kind),
            });
            if !self.eat(b',') {
                break;
            }
        }
        self.expect(b';')?;
        let size = self.number()?;
        if self.eat(b';') {
            self.ident();
        }
        self.expect(b')')?;
        record(&fields, size).map_err(invalid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numba_notation() {
        let (args, ret) = parse_signature("float32[:], float64[:, :], int32[::1], uint8").unwrap();
        assert_eq!(ret, None);
        assert_eq!(
            args,
            vec![
                Type::array(Scalar::Float32, 1, Layout::Any),
                Type::array(Scalar::Float64, 2, Layout::Any),
                Type::array(Scalar::Int32, 1, Layout::C),
                Type::Scalar(Scalar::UInt8),
            ]
        );
        assert_eq!(
            parse_type("f8[::1, :]").unwrap(),
            Type::array(Scalar::Float64, 2, Layout::F)
        );
        assert_eq!(
            parse_signature("float32(float32, (int32, int64))").unwrap(),
            (
                vec![
                    Type::Scalar(Scalar::Float32),
                    Type::Tuple(vec![Scalar::Int32.into(), Scalar::Int64.into()])
                ],
                Some(Type::Scalar(Scalar::Float32))
            )
        );
        assert_eq!(parse_signature("").unwrap(), (vec![], None));
        assert_eq!(
            parse_signature("void()").unwrap(),
            (vec![], Some(Type::None))
        );
    }

    #[test]
    fn parses_arrays_of_vectors() {
        for text in ["float8e4m3x4[::1]", "float32x3[:, :]", "uint8x2[::1, :]"] {
            let t = parse_type(text).unwrap();
            assert_eq!(t.to_string(), text);
        }
        let t = parse_type("float8e5m2x3[:]").unwrap();
        let Type::Array(a) = &t else { panic!("{t:?}") };
        assert_eq!(
            a.dtype.ty(),
            Type::Vector {
                elem: Scalar::Float8E5M2,
                len: 3
            }
        );
        assert!(parse_type("float32x5[:]").is_err());
    }

    #[test]
    fn resolves_names_the_caller_knows_alone_and_as_array_elements() {
        let st = parse_type("Record(x[type=float32;offset=0];4;True)").unwrap();
        let names = |n: &str| (n == "Particle").then(|| st.clone());
        let (args, ret) = parse_signature_with(
            "void(Particle[:, ::1], Particle, (Particle, int32))",
            &names,
        )
        .unwrap();
        assert_eq!(ret, Some(Type::None));
        assert_eq!(args[0], Type::array_of(&st, 2, Layout::C).unwrap());
        assert_eq!(args[1], st);
        assert_eq!(args[2], Type::Tuple(vec![st.clone(), Scalar::Int32.into()]));
        // The notation's own names come first; an unknown one is a typed error.
        assert_eq!(
            parse_signature_with("int32", &names).unwrap().0,
            vec![Type::Scalar(Scalar::Int32)]
        );
        assert_eq!(
            parse_signature_with("Nope[:]", &names),
            Err(SignatureError::UnknownType {
                name: "Nope".into()
            })
        );
    }

    #[test]
    fn errors_are_typed() {
        let deep = format!("{}int32{}", "(".repeat(70), ",)".repeat(70));
        assert!(matches!(
            parse_signature(&deep),
            Err(SignatureError::TooDeep {
                what: "types",
                limit: 64,
                ..
            })
        ));
        assert!(matches!(
            parse_type("float32[::2]"),
            Err(SignatureError::Syntax { .. })
        ));
        assert!(matches!(
            parse_type("Record(a[type=int8;offset=0],b[type=float32;offset=1];5;False)"),
            Err(SignatureError::Invalid { .. })
        ));
    }

    #[test]
    fn rejects_bad_notation() {
        assert!(parse_type("float33").is_err());
        assert!(parse_type("float32[:").is_err());
        assert!(parse_type("float32[:, ::1, :]").is_err());
        assert!(parse_type("float32[::2]").is_err());
        assert!(parse_signature("int32 int32").is_err());
        // Packed records are not C layout.
        assert!(
            parse_type("Record(a[type=int8;offset=0],b[type=float32;offset=1];5;False)[:]")
                .is_err()
        );
    }

    #[test]
    fn parses_numba_records() {
        let t = parse_type("Record(x[type=float32;offset=0],n[type=int64;offset=8];16;True)[::1]")
            .unwrap();
        assert_eq!(t.to_string(), "record_x_float32_n_int64[::1]");
        let nested = parse_type(
            "Record(id[type=int8;offset=0],pos[type=Record(x[type=float32;offset=0],\
             y[type=float32;offset=4];8;True);offset=4];12;True)",
        )
        .unwrap();
        assert_eq!(
            nested.to_string(),
            "record_id_int8_pos_record_x_float32_y_float32"
        );
    }

    #[test]
    fn parses_numba_nested_arrays() {
        // `str(numba.from_dtype(np.dtype([('i', np.int32), ('j', np.float32, (3, 2))])))`.
        let t = parse_type(
            "Record(i[type=int32;offset=0],j[type=nestedarray(float32, (3, 2));offset=4];28;False)",
        )
        .unwrap();
        let Type::Struct(st) = &t else { panic!("{t}") };
        assert_eq!(st.name, "record_i_int32_j_float32_3x2");
        assert_eq!(st.subarray_shape(1), &[3, 2]);
        let one = parse_type(
            "Record(g[type=int32;offset=0],h[type=nestedarray(float32, (2,));offset=4];12;True)",
        )
        .unwrap();
        assert_eq!(one.to_string(), "record_g_int32_h_float32_2");
        // numba-cuda test_const_string's record: a text field, held as 12 code units.
        let t = parse_type(
            "Record(x[type=float32;offset=0],y[type=[char x 12];offset=4];16;False)[::1]",
        )
        .unwrap();
        let Type::Array(at) = &t else { panic!("{t}") };
        let crate::types::DType::Struct(st) = &at.dtype else {
            panic!("{t}")
        };
        assert_eq!(st.field_text(1), Some(super::super::record::Text::Bytes));
        assert_eq!(st.subarray_shape(1), &[12]);
        // An array of NumPy's `<U12` itself, and a malformed text type.
        let u = parse_type("[unichr x 12][:, ::1]").unwrap();
        assert_eq!(u.to_string(), "U12[:, ::1]");
        assert!(parse_type("[wchar x 3][::1]").is_err());
    }
}
