//! Symbolic shapes.
//!
//! A graph is instantiated once per call *signature* (dtypes, ranks, which dimensions are 1 and
//! broadcast), never per size: sizes are runtime parameters so that a new batch size does not
//! recompile. So every dimension is either a compile-time constant ([`Dim::Const`], e.g. the `1`
//! of a broadcast axis or a literal in `reshape`) or a symbol ([`Dim::Sym`]) bound at call time.
//! A graph's [`SymDef`] table says where each symbol's value comes from.

use std::fmt;

/// A symbolic size, index into a graph's `syms` table. Printed `s0`, `s1`, ...
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dim {
    Const(u64),
    Sym(Sym),
}

impl Dim {
    pub fn as_const(self) -> Option<u64> {
        match self {
            Dim::Const(c) => Some(c),
            Dim::Sym(_) => None,
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Const(c) => write!(f, "{c}"),
            Dim::Sym(s) => write!(f, "s{}", s.0),
        }
    }
}

/// The shape of a tensor: one [`Dim`] per axis (rank 0 = a scalar).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Shape(pub Vec<Dim>);

impl Shape {
    pub fn scalar() -> Shape {
        Shape(Vec::new())
    }

    pub fn rank(&self) -> usize {
        self.0.len()
    }

    pub fn dims(&self) -> &[Dim] {
        &self.0
    }

    /// All dimensions, if every one is a constant.
    pub fn as_const(&self) -> Option<Vec<u64>> {
        self.0.iter().map(|d| d.as_const()).collect()
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

/// Where a symbol's runtime value comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SymDef {
    /// The size of axis `axis` of tensor parameter `param`. When several parameter axes must
    /// agree (e.g. broadcasting `x + y` with neither axis of size 1), the symbol lists all of
    /// them and the call checks they are equal, reporting both shapes when they are not.
    Input { sources: Vec<(u32, u32)> },
    /// A size computed from other sizes (e.g. `reshape(x, [-1, 4])`, `slice`, `concat`).
    Derived(DimExpr),
}

/// Integer arithmetic over dimensions, evaluated at call time.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DimExpr {
    Dim(Dim),
    Add(Box<DimExpr>, Box<DimExpr>),
    Sub(Box<DimExpr>, Box<DimExpr>),
    Mul(Box<DimExpr>, Box<DimExpr>),
    /// Exact division; the call fails with a shape error when it is not exact.
    Div(Box<DimExpr>, Box<DimExpr>),
    /// Division rounded up, `ceil(a / b)` for `b > 0` (the call fails for `b <= 0`): the number
    /// of rows of length `b` that hold `a` elements, as gradients need to align a runtime offset
    /// to a row boundary (`lower::select`).
    CeilDiv(Box<DimExpr>, Box<DimExpr>),
    /// Python-style slice length: `len(range(start, end, step))` after clamping to `size`.
    SliceLen {
        size: Box<DimExpr>,
        start: i64,
        end: Option<i64>,
        step: i64,
    },
    /// Output length of a window (convolution, pooling) sliding along an axis of `size`
    /// ([`crate::op_window::window_len`]); the call fails when the window does not fit.
    Window {
        size: Box<DimExpr>,
        kernel: Box<DimExpr>,
        stride: u32,
        padding: u32,
        dilation: u32,
        ceil: bool,
    },
}
