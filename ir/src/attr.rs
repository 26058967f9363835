//! Compile-time attribute values: the non-tensor arguments a function is specialised on.
//!
//! Like TensorFlow's `AttrValue`: a kernel is instantiated per distinct set of attribute values,
//! so attributes must be hashable and comparable — floats compare and hash by their bits.

use crate::dtype::DType;
use std::fmt;
use std::hash::{Hash, Hasher};

/// A scalar literal or attribute value of one of the language's non-tensor types.
#[derive(Clone, Debug)]
pub enum Attr {
    Bool(bool),
    Int(i64),
    Float(f64),
    DType(DType),
    IntList(Vec<i64>),
    FloatList(Vec<f64>),
}

impl Attr {
    /// The language-level type name, as written in signatures (`Int`, `Float[]`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            Attr::Bool(_) => "Bool",
            Attr::Int(_) => "Int",
            Attr::Float(_) => "Float",
            Attr::DType(_) => "DType",
            Attr::IntList(_) => "Int[]",
            Attr::FloatList(_) => "Float[]",
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Attr::Int(i) => Some(i as f64),
            Attr::Float(f) => Some(f),
            _ => None,
        }
    }
}

impl PartialEq for Attr {
    fn eq(&self, other: &Attr) -> bool {
        match (self, other) {
            (Attr::Bool(a), Attr::Bool(b)) => a == b,
            (Attr::Int(a), Attr::Int(b)) => a == b,
            (Attr::Float(a), Attr::Float(b)) => a.to_bits() == b.to_bits(),
            (Attr::DType(a), Attr::DType(b)) => a == b,
            (Attr::IntList(a), Attr::IntList(b)) => a == b,
            (Attr::FloatList(a), Attr::FloatList(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            _ => false,
        }
    }
}

impl Eq for Attr {}

impl Hash for Attr {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Attr::Bool(b) => b.hash(state),
            Attr::Int(i) => i.hash(state),
            Attr::Float(f) => f.to_bits().hash(state),
            Attr::DType(d) => d.hash(state),
            Attr::IntList(v) => v.hash(state),
            Attr::FloatList(v) => v.iter().for_each(|f| f.to_bits().hash(state)),
        }
    }
}

/// Formats a float so that it always reads back as a float (`6.0`, not `6`), exactly.
pub fn fmt_float(f: f64) -> String {
    if f.is_nan() {
        "nan".to_string()
    } else if f.is_infinite() {
        if f > 0.0 {
            "inf".to_string()
        } else {
            "-inf".to_string()
        }
    } else {
        let s = format!("{f:?}");
        if s.contains(['.', 'e', 'E']) {
            s
        } else {
            format!("{s}.0")
        }
    }
}

impl fmt::Display for Attr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Attr::Bool(b) => write!(f, "{b}"),
            Attr::Int(i) => write!(f, "{i}"),
            Attr::Float(x) => f.write_str(&fmt_float(*x)),
            Attr::DType(d) => write!(f, "{d}"),
            Attr::IntList(v) => {
                let items: Vec<String> = v.iter().map(|i| i.to_string()).collect();
                write!(f, "[{}]", items.join(", "))
            }
            Attr::FloatList(v) => {
                let items: Vec<String> = v.iter().map(|x| fmt_float(*x)).collect();
                write!(f, "[{}]", items.join(", "))
            }
        }
    }
}

/// A scalar constant inside the IR (`Op::Const`, `Op::Full`): its dtype is the node's dtype.
#[derive(Clone, Copy, Debug)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as i64 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }
}

impl PartialEq for Scalar {
    fn eq(&self, other: &Scalar) -> bool {
        match (self, other) {
            (Scalar::Bool(a), Scalar::Bool(b)) => a == b,
            (Scalar::Int(a), Scalar::Int(b)) => a == b,
            (Scalar::Float(a), Scalar::Float(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }
    }
}

impl Eq for Scalar {}

impl Hash for Scalar {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Scalar::Bool(b) => b.hash(state),
            Scalar::Int(i) => i.hash(state),
            Scalar::Float(f) => f.to_bits().hash(state),
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => f.write_str(&fmt_float(*x)),
        }
    }
}
