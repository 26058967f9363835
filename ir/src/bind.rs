//! Runtime size binding: from the concrete shapes of a call's inputs to the value of every
//! symbolic size ([`Sym`]) of a [`Graph`].
//!
//! A graph is compiled once per signature, so its shapes are symbolic; at call time
//! [`bind_sizes`] checks each input against its parameter's rank and constant dimensions, binds
//! the [`SymDef::Input`] symbols (every source of one symbol must agree, and a disagreement names
//! both parameters and shows both shapes), then evaluates the [`SymDef::Derived`] ones.
//! [`concrete_shape`] then turns any symbolic [`Shape`] of the graph into a `Vec<usize>`.
//! Last, every pair of the graph's [`Graph::checks`] must come out equal.
//!
//! Evaluation of derived sizes uses checked `i64` arithmetic: a division must be exact, a size
//! must not be negative, and nothing may overflow; each failure is a typed [`BindError`].

use crate::graph::{Graph, GraphParam};
use crate::shape::{Dim, DimExpr, Shape, Sym, SymDef};
use smallvec::SmallVec;
use thiserror::Error;

/// Why a call's input shapes do not fit a graph.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum BindError {
    #[error("expected {expected} tensor argument(s), got {got}")]
    ArgCount { expected: usize, got: usize },
    #[error("`{param}` must have rank {expected}, but has shape {shape:?} (rank {})", shape.len())]
    Rank { param: String, expected: usize, shape: Vec<usize> },
    #[error("`{param}` has shape {shape:?}, but axis {axis} must be {expected}")]
    StaticDim { param: String, axis: usize, expected: u64, shape: Vec<usize> },
    /// Two sources of one symbol disagree. When both are the same parameter, the shapes are
    /// equal and the message names the two axes.
    #[error("{}", mismatch_message(.first, .second))]
    Mismatch { first: AxisRef, second: AxisRef },
    // A derived size's errors name it as computed from the inputs' axes (`size`, from
    // `Binder::describe`: `size(x, 0) * size(x, 1) / 2`), not by its internal symbol `sym`.
    #[error("size `{size}` = {numerator} / {denominator} is not a whole number")]
    InexactDiv { sym: u32, size: String, numerator: i64, denominator: i64 },
    #[error("size `{size}` divides by {denominator}, which is not positive")]
    BadDivisor { sym: u32, size: String, denominator: i64 },
    #[error("size `{size}` would be negative ({value})")]
    Negative { sym: u32, size: String, value: i64 },
    /// A convolution or pooling window does not fit its (padded) input.
    #[error("size `{size}`: {message}")]
    Window { sym: u32, size: String, message: String },
    #[error("size `{size}` overflows")]
    Overflow { sym: u32, size: String },
    #[error("size `{size}` is a slice with step 0")]
    ZeroStep { sym: u32, size: String },
    /// Two sizes the graph requires equal (one of [`Graph::checks`]) differ for these inputs:
    /// e.g. two slices multiplied elementwise have different lengths, or a `reshape` to a
    /// static shape gets the wrong number of elements.
    #[error("the input shapes give size `{left}` = {left_value} but `{right}` = {right_value}, and the function needs them equal")]
    SizeCheck { left: Dim, left_value: usize, right: Dim, right_value: usize },
    /// A value the call would allocate is too large for these inputs (e.g.
    /// `full([100000, 100000, 100000], 0.0)`): refused before anything is allocated, so that a
    /// program cannot abort the process. `bytes` is `None` when the size does not fit 64 bits.
    #[error("{}", too_large_message(*.value, .shape, *.bytes, *.limit))]
    TooLarge { value: u32, shape: Vec<usize>, bytes: Option<u64>, limit: u64 },
    /// A value whose nonzero sizes times its element size multiply past `i64::MAX` bytes,
    /// empty (`full([0, 2^32, 2^32])`) or computed without being stored (`sum(full([2^32,
    /// 2^32], 1.0))`): no array library can describe it (its strides in bytes, or its element
    /// count, would overflow; NumPy refuses it).
    #[error("{}", unrepresentable_message(shape))]
    Unrepresentable { value: u32, shape: Vec<usize> },
    /// [`MAX_TENSOR_BYTES_VAR`] is invalid.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// The graph itself is malformed (a bug in whoever built it, not in the call).
    #[error("malformed graph: {0}")]
    Malformed(String),
}

/// Whether an array of these sizes, `item_bytes` per element, can be described at all: its
/// nonzero sizes times its element size fit in `i64` (its strides in bytes; NumPy refuses
/// more). An empty tensor holds no bytes whatever its other axes (`[2^62, 0]`), but it must
/// still pass this. The one rule for binding, checkpoints and the Python door.
pub fn describable(sizes: impl IntoIterator<Item = u64>, item_bytes: u64) -> bool {
    let mut nonzero = sizes.into_iter().filter(|&s| s != 0);
    nonzero.try_fold(item_bytes, |n, s| n.checked_mul(s)).is_some_and(|b| b <= i64::MAX as u64)
}

/// The environment variable holding the largest tensor a call may create, in bytes.
pub const MAX_TENSOR_BYTES_VAR: &str = "TFN_MAX_TENSOR_BYTES";

/// The limit when [`MAX_TENSOR_BYTES_VAR`] is not set: 16 GiB.
pub const DEFAULT_MAX_TENSOR_BYTES: u64 = 16 << 30;

/// [`MAX_TENSOR_BYTES_VAR`] is set to something that is not a whole number of bytes.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{MAX_TENSOR_BYTES_VAR}=`{value}` is not a number of bytes (a whole number such as 17179869184; unset it for the default of 16 GiB)")]
pub struct LimitError {
    /// The variable's value (its first 64 characters).
    pub value: String,
}

/// The largest tensor a call may create: [`MAX_TENSOR_BYTES_VAR`], by default
/// [`DEFAULT_MAX_TENSOR_BYTES`] (read once per process). An invalid value is an error, never
/// silently the default.
pub fn max_tensor_bytes() -> Result<u64, LimitError> {
    static LIMIT: std::sync::OnceLock<Result<u64, LimitError>> = std::sync::OnceLock::new();
    LIMIT.get_or_init(|| parse_max_tensor_bytes(std::env::var_os(MAX_TENSOR_BYTES_VAR))).clone()
}

/// The limit a value of [`MAX_TENSOR_BYTES_VAR`] sets: decimal digits only (no sign, exponent
/// or unit); unset means the default. Set but empty is an error like any other non-number
/// (`TFN_MAX_TENSOR_BYTES= cmd` is more likely a mistake than a wish for the default).
pub fn parse_max_tensor_bytes(value: Option<std::ffi::OsString>) -> Result<u64, LimitError> {
    let Some(value) = value else { return Ok(DEFAULT_MAX_TENSOR_BYTES) };
    let text = value.to_string_lossy();
    let invalid = || LimitError { value: text.chars().take(64).collect() };
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    text.parse::<u64>().map_err(|_| invalid())
}

/// The message of [`BindError::TooLarge`]; the value's number (an index into the graph that
/// runs, not something the user wrote) is left out.
fn too_large_message(_value: u32, shape: &[usize], bytes: Option<u64>, limit: u64) -> String {
    let size = match bytes {
        Some(b) => format!("{b} bytes is more than the limit of {limit} bytes"),
        None => format!("more than 2^64 bytes, over the limit of {limit} bytes"),
    };
    format!("a tensor this call would create has shape {shape:?}: {size} (TFN_MAX_TENSOR_BYTES)")
}

fn unrepresentable_message(shape: &[usize]) -> String {
    let what = if shape.contains(&0) {
        "it is empty, but its nonzero sizes times its element size pass"
    } else {
        "its sizes times its element size pass"
    };
    format!(
        "a tensor this call would create has shape {shape:?}: {what} 2^63 - 1 bytes, which no \
         array can describe"
    )
}

/// Which values of a graph a call allocates, for the size limit ([`bind_sizes_allocating`]).
#[derive(Clone, Copy, Debug)]
pub enum Allocated<'a> {
    /// Every value (the interpreter stores each one).
    Every,
    /// Only these (a compiled function stores its kernels' outputs; a value a kernel computes
    /// and consumes in registers, such as the `[n, n]` product a reduction fuses with, is
    /// never stored). `Only(&[])` checks nothing (sizes for display).
    Only(&'a [crate::graph::ValueId]),
    /// A compiled function's call: the byte limit for `stored` (as `Only`), and for `fused`,
    /// values its kernels compute without storing, that their element counts fit in 64 bits
    /// (a kernel counts and indexes them so). One `fused` value per distinct shape is enough.
    Compiled { stored: &'a [crate::graph::ValueId], fused: &'a [crate::graph::ValueId] },
}

/// Refuses sizes that would make a value `allocated` of `graph` larger than
/// [`max_tensor_bytes`]. Allocation-free unless it fails: this runs on every call.
fn check_value_sizes(
    graph: &Graph,
    sizes: &[usize],
    allocated: Allocated<'_>,
) -> Result<(), BindError> {
    let limit = max_tensor_bytes()?;
    let check = |i: usize| -> Result<(), BindError> {
        let Some(node) = graph.nodes.get(i) else { return Ok(()) };
        let size = |d: &Dim| match *d {
            Dim::Const(c) => c,
            Dim::Sym(s) => sizes.get(s.0 as usize).map_or(u64::MAX, |&v| v as u64),
        };
        // An empty tensor holds no bytes, whatever its other axes (`[2^63 - 1, 0]`), but its
        // nonzero sizes must still multiply within `isize` (its strides).
        let empty = node.ty.shape.dims().iter().any(|d| size(d) == 0);
        if empty {
            let item = node.ty.dtype.size_bytes() as u64;
            if !describable(node.ty.shape.dims().iter().map(size), item) {
                let shape = concrete_shape(&node.ty.shape, sizes);
                return Err(BindError::Unrepresentable { value: i as u32, shape });
            }
            return Ok(());
        }
        let mut bytes = Some(node.ty.dtype.size_bytes() as u64);
        for d in node.ty.shape.dims() {
            bytes = bytes.and_then(|b| b.checked_mul(size(d)));
        }
        if bytes.is_none_or(|b| b > limit) {
            let shape = concrete_shape(&node.ty.shape, sizes);
            return Err(BindError::TooLarge { value: i as u32, shape, bytes, limit });
        }
        Ok(())
    };
    // A value computed in registers must be describable too: a kernel counts and indexes its
    // elements in 64 bits (a fused `[2^32, 2^32]` operand of a sum wrapped to 0 elements).
    let describable_value = |i: usize| -> Result<(), BindError> {
        let Some(node) = graph.nodes.get(i) else { return Ok(()) };
        let size = |d: &Dim| match *d {
            Dim::Const(c) => c,
            Dim::Sym(s) => sizes.get(s.0 as usize).map_or(u64::MAX, |&v| v as u64),
        };
        let item = node.ty.dtype.size_bytes() as u64;
        if describable(node.ty.shape.dims().iter().map(size), item) {
            return Ok(());
        }
        let shape = concrete_shape(&node.ty.shape, sizes);
        Err(BindError::Unrepresentable { value: i as u32, shape })
    };
    match allocated {
        Allocated::Every => (0..graph.nodes.len()).try_for_each(check),
        Allocated::Only(values) => values.iter().try_for_each(|v| check(v.index())),
        Allocated::Compiled { stored, fused } => {
            // The stored values first: their error names the byte limit.
            stored.iter().try_for_each(|v| check(v.index()))?;
            fused.iter().try_for_each(|v| describable_value(v.index()))
        }
    }
}

/// One axis of one parameter, with the parameter's whole input shape (for messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxisRef {
    pub param: String,
    pub axis: usize,
    pub shape: Vec<usize>,
}

fn mismatch_message(a: &AxisRef, b: &AxisRef) -> String {
    let size = |r: &AxisRef| r.shape.get(r.axis).copied().unwrap_or(0);
    let (sa, sb) = (size(a), size(b));
    if a.param == b.param {
        return format!(
            "`{}` has shape {:?}: axes {} and {} must match ({sa} vs {sb})",
            a.param, a.shape, a.axis, b.axis
        );
    }
    let axes = if a.axis == b.axis {
        format!("axis {} must match", a.axis)
    } else {
        format!("axis {} of `{}` must match axis {} of `{}`", a.axis, a.param, b.axis, b.param)
    };
    if a.shape == b.shape {
        // Not "`x` has shape [3, 4] but `y` has shape [3, 4]", which reads as no difference.
        return format!(
            "`{}` and `{}` both have shape {:?}, but the program needs axis {} of `{}` to match \
             axis {} of `{}` ({sa} vs {sb})",
            a.param, b.param, a.shape, a.axis, a.param, b.axis, b.param
        );
    }
    format!(
        "`{}` has shape {:?} but `{}` has shape {:?}: {axes} ({sa} vs {sb})",
        a.param, a.shape, b.param, b.shape
    )
}

/// Binds every symbol of `graph` from the shapes of the call's tensor inputs (in parameter
/// order). Returns one value per entry of `graph.syms`. Also checks that every symbol the graph
/// mentions exists, so that [`concrete_shape`] cannot fail on the result, and that no value
/// is larger than [`max_tensor_bytes`] (the interpreter's case: it stores every value).
pub fn bind_sizes(graph: &Graph, input_shapes: &[&[usize]]) -> Result<Vec<usize>, BindError> {
    bind_sizes_allocating(graph, input_shapes, Allocated::Every)
}

/// [`bind_sizes`], with the size limit applied to the values `allocated` only.
pub fn bind_sizes_allocating(
    graph: &Graph,
    input_shapes: &[&[usize]],
    allocated: Allocated<'_>,
) -> Result<Vec<usize>, BindError> {
    bind_sizes_inline(graph, input_shapes, allocated).map(SmallVec::into_vec)
}

/// Bound symbol sizes on the stack for graphs of up to eight symbols (a call's hot path:
/// no allocation).
pub type Sizes = SmallVec<[usize; 8]>;

/// [`bind_sizes_allocating`] into [`Sizes`].
pub fn bind_sizes_inline(
    graph: &Graph,
    input_shapes: &[&[usize]],
    allocated: Allocated<'_>,
) -> Result<Sizes, BindError> {
    if graph.params.len() != input_shapes.len() {
        return Err(BindError::ArgCount { expected: graph.params.len(), got: input_shapes.len() });
    }
    check_sym_references(graph)?;
    for (param, &shape) in graph.params.iter().zip(input_shapes) {
        let dims = param.ty.shape.dims();
        if dims.len() != shape.len() {
            return Err(BindError::Rank {
                param: param.name.clone(),
                expected: dims.len(),
                shape: shape.to_vec(),
            });
        }
        for (axis, (dim, &size)) in dims.iter().zip(shape).enumerate() {
            if let Dim::Const(c) = *dim {
                if c != size as u64 {
                    return Err(BindError::StaticDim {
                        param: param.name.clone(),
                        axis,
                        expected: c,
                        shape: shape.to_vec(),
                    });
                }
            }
        }
    }

    let mut binder = Binder {
        params: &graph.params,
        syms: &graph.syms,
        input_shapes,
        values: smallvec::smallvec![None; graph.syms.len()],
    };
    for i in 0..graph.syms.len() {
        binder.eval_sym(i as u32, 0)?;
    }
    let sizes: Sizes = binder.values.iter().map(|v| v.unwrap_or(0)).collect();

    // Parameters may also mention derived symbols: their shapes must then come out right too.
    for (param, &shape) in graph.params.iter().zip(input_shapes) {
        for (axis, dim) in param.ty.shape.dims().iter().enumerate() {
            if let Dim::Sym(s) = *dim {
                let expected = sizes[s.0 as usize];
                if expected != shape[axis] {
                    return Err(BindError::StaticDim {
                        param: param.name.clone(),
                        axis,
                        expected: expected as u64,
                        shape: shape.to_vec(),
                    });
                }
            }
        }
    }
    for &(left, right) in &graph.checks {
        let value = |d: Dim| match d {
            Dim::Const(c) => usize::try_from(c).unwrap_or(usize::MAX),
            Dim::Sym(s) => sizes[s.0 as usize],
        };
        let (left_value, right_value) = (value(left), value(right));
        if left_value != right_value {
            return Err(BindError::SizeCheck { left, left_value, right, right_value });
        }
    }
    check_value_sizes(graph, &sizes, allocated)?;
    Ok(sizes)
}

/// The concrete shape of a symbolic `shape`, given `sizes` from [`bind_sizes`] for the graph the
/// shape belongs to (which guarantees every symbol is in range). A symbol out of range (only
/// possible with `sizes` of another graph) maps to `usize::MAX`, which never matches a real
/// shape; use [`try_concrete_shape`] to detect it.
pub fn concrete_shape(shape: &Shape, sizes: &[usize]) -> Vec<usize> {
    shape
        .dims()
        .iter()
        .map(|d| match *d {
            Dim::Const(c) => c as usize,
            Dim::Sym(s) => sizes.get(s.0 as usize).copied().unwrap_or(usize::MAX),
        })
        .collect()
}

/// Like [`concrete_shape`], but `None` when a symbol is not in `sizes`.
pub fn try_concrete_shape(shape: &Shape, sizes: &[usize]) -> Option<Vec<usize>> {
    try_concrete_dims(shape, sizes)
}

/// [`try_concrete_shape`] into any collection (a stack one on a hot path).
pub fn try_concrete_dims<C: FromIterator<usize>>(shape: &Shape, sizes: &[usize]) -> Option<C> {
    shape
        .dims()
        .iter()
        .map(|d| match *d {
            Dim::Const(c) => usize::try_from(c).ok(),
            Dim::Sym(s) => sizes.get(s.0 as usize).copied(),
        })
        .collect()
}

/// Python's `range(*slice(start, end, step).indices(size))`: the first index and the number of
/// elements. `None` when `step == 0`. Shared by size binding and the interpreter's `slice`.
pub fn slice_range(size: i64, start: i64, end: Option<i64>, step: i64) -> Option<(i64, usize)> {
    if step == 0 {
        return None;
    }
    let size = size.max(0);
    let clamp = |i: i64, lo: i64, hi: i64| {
        let i = if i < 0 { i.saturating_add(size) } else { i };
        i.clamp(lo, hi)
    };
    let (first, count) = if step > 0 {
        let first = clamp(start, 0, size);
        let stop = end.map_or(size, |e| clamp(e, 0, size));
        let count = if stop > first { (stop - first - 1) / step + 1 } else { 0 };
        (first, count)
    } else {
        let first = clamp(start, -1, size - 1);
        let stop = end.map_or(-1, |e| clamp(e, -1, size - 1));
        let count = if first > stop { (first - stop - 1) / step.saturating_neg() + 1 } else { 0 };
        (first, count)
    };
    Some((first, count as usize))
}

fn check_sym_references(graph: &Graph) -> Result<(), BindError> {
    let n = graph.syms.len();
    let check_shape = |shape: &Shape, what: &dyn Fn() -> String| -> Result<(), BindError> {
        for d in shape.dims() {
            if let Dim::Sym(s) = *d {
                if s.0 as usize >= n {
                    return Err(BindError::Malformed(format!(
                        "{} uses `s{}` but the graph defines {n} symbol(s)",
                        what(),
                        s.0
                    )));
                }
            }
        }
        Ok(())
    };
    for p in &graph.params {
        check_shape(&p.ty.shape, &|| format!("parameter `{}`", p.name))?;
    }
    for (i, node) in graph.nodes.iter().enumerate() {
        check_shape(&node.ty.shape, &|| format!("%{i}"))?;
    }
    for (i, (a, b)) in graph.checks.iter().enumerate() {
        check_shape(&Shape(vec![*a, *b]), &|| format!("check {i}"))?;
    }
    Ok(())
}

/// Nesting bound for derived symbols referring to each other (cycles would recurse forever).
const MAX_DEPTH: usize = 256;

/// Characters of a size's description in an error message (a generated graph's sizes can be
/// long expressions).
const MAX_DESCRIPTION: usize = 200;

/// Evaluates symbols on demand (memoised) from a call's input shapes.
pub(crate) struct Binder<'a> {
    pub(crate) params: &'a [GraphParam],
    pub(crate) syms: &'a [SymDef],
    pub(crate) input_shapes: &'a [&'a [usize]],
    /// Per symbol, once bound (on the stack for up to 8: binding runs on every call).
    pub(crate) values: SmallVec<[Option<usize>; 8]>,
}

/// Renders sizes for error messages (see [`Describe::describe`]).
#[derive(Clone, Copy)]
pub(crate) struct Describe<'a> {
    pub params: &'a [GraphParam],
    pub syms: &'a [SymDef],
}

impl Describe<'_> {
    /// Size `sym` as users can read it, in the language's spelling: input sizes as
    /// `size(x, 1)`, derived ones as their expressions over those (`size(x, 0) * size(x, 1) /
    /// 2`), bounded in length.
    pub(crate) fn describe(&self, sym: u32) -> String {
        let mut out = String::new();
        self.describe_sym(sym, 0, false, &mut out);
        if out.chars().count() > MAX_DESCRIPTION {
            out = out.chars().take(MAX_DESCRIPTION).collect::<String>() + "…";
        }
        out
    }

    fn describe_sym(&self, sym: u32, depth: usize, nested: bool, out: &mut String) {
        use std::fmt::Write;
        match self.syms.get(sym as usize) {
            Some(SymDef::Input { sources }) => match sources.first() {
                Some(&(param, axis)) => match self.params.get(param as usize) {
                    Some(p) => {
                        let _ = write!(out, "size({}, {axis})", p.name);
                    }
                    None => {
                        let _ = write!(out, "s{sym}");
                    }
                },
                None => {
                    let _ = write!(out, "s{sym}");
                }
            },
            Some(SymDef::Derived(expr)) if depth < 8 && out.len() <= MAX_DESCRIPTION => {
                self.describe_expr(expr, depth + 1, nested, out)
            }
            _ => {
                let _ = write!(out, "s{sym}");
            }
        }
    }

    /// `nested`: the expression is an operand of an operator (parenthesised if it has one).
    fn describe_expr(&self, expr: &DimExpr, depth: usize, nested: bool, out: &mut String) {
        use std::fmt::Write;
        let binary = |op: &str, a: &DimExpr, b: &DimExpr, out: &mut String| {
            if nested {
                out.push('(');
            }
            self.describe_expr(a, depth, true, out);
            let _ = write!(out, " {op} ");
            self.describe_expr(b, depth, true, out);
            if nested {
                out.push(')');
            }
        };
        match expr {
            DimExpr::Dim(Dim::Const(c)) => {
                let _ = write!(out, "{c}");
            }
            DimExpr::Dim(Dim::Sym(Sym(s))) => self.describe_sym(*s, depth, nested, out),
            DimExpr::Add(a, b) => binary("+", a, b, out),
            DimExpr::Sub(a, b) => binary("-", a, b, out),
            DimExpr::Mul(a, b) => binary("*", a, b, out),
            DimExpr::Div(a, b) => binary("/", a, b, out),
            DimExpr::CeilDiv(a, b) => {
                out.push_str("ceil(");
                self.describe_expr(a, depth, true, out);
                out.push_str(" / ");
                self.describe_expr(b, depth, true, out);
                out.push(')');
            }
            DimExpr::SliceLen { size, start, end, step } => {
                out.push_str("len(range(");
                self.describe_expr(size, depth, false, out);
                let end = end.map_or("end".to_string(), |e| e.to_string());
                let _ = write!(out, ")[{start}:{end}:{step}])");
            }
            DimExpr::Window { size, kernel, stride, padding, dilation, .. } => {
                out.push_str("window(");
                self.describe_expr(size, depth, false, out);
                out.push_str(", kernel ");
                self.describe_expr(kernel, depth, false, out);
                let _ = write!(out, ", stride {stride}, padding {padding}, dilation {dilation})");
            }
        }
    }
}

impl Binder<'_> {
    pub(crate) fn eval_sym(&mut self, sym: u32, depth: usize) -> Result<usize, BindError> {
        let names = Describe { params: self.params, syms: self.syms };
        let Some(def) = self.syms.get(sym as usize) else {
            return Err(BindError::Malformed(format!("`s{sym}` is not defined")));
        };
        if let Some(v) = self.values[sym as usize] {
            return Ok(v);
        }
        if depth > MAX_DEPTH {
            return Err(BindError::Malformed(format!("`s{sym}` is defined in terms of itself")));
        }
        let value = match def {
            SymDef::Input { sources } => self.bind_input(sym, sources)?,
            SymDef::Derived(expr) => {
                let v = self.eval_expr(sym, expr, depth)?;
                usize::try_from(v).map_err(|_| BindError::Negative {
                    sym,
                    size: names.describe(sym),
                    value: v,
                })?
            }
        };
        self.values[sym as usize] = Some(value);
        Ok(value)
    }

    /// The size of axis `axis` of parameter `param` in this call (the error of [`Self::axis_ref`]
    /// when there is no such axis).
    fn axis_size(&self, sym: u32, (param, axis): (u32, u32)) -> Result<usize, BindError> {
        let shape = self.input_shapes.get(param as usize);
        match (self.params.get(param as usize), shape.and_then(|s| s.get(axis as usize))) {
            (Some(_), Some(&n)) => Ok(n),
            _ => self.axis_ref(sym, (param, axis)).map(|a| a.shape[a.axis]),
        }
    }

    fn axis_ref(&self, sym: u32, (param, axis): (u32, u32)) -> Result<AxisRef, BindError> {
        let p = self.params.get(param as usize);
        let shape = self.input_shapes.get(param as usize);
        match (p, shape) {
            (Some(p), Some(shape)) if (axis as usize) < shape.len() => {
                Ok(AxisRef { param: p.name.clone(), axis: axis as usize, shape: shape.to_vec() })
            }
            _ => Err(BindError::Malformed(format!(
                "`s{sym}` comes from axis {axis} of parameter {param}, which does not exist"
            ))),
        }
    }

    fn bind_input(&self, sym: u32, sources: &[(u32, u32)]) -> Result<usize, BindError> {
        let Some(&first_source) = sources.first() else {
            return Err(BindError::Malformed(format!("input size `s{sym}` has no source")));
        };
        // Sizes are read in place; the named `AxisRef`s (a parameter name and a shape each)
        // are built only for an error: this runs on every call.
        let value = self.axis_size(sym, first_source)?;
        for &source in &sources[1..] {
            if self.axis_size(sym, source)? != value {
                let first = self.axis_ref(sym, first_source)?;
                let second = self.axis_ref(sym, source)?;
                return Err(BindError::Mismatch { first, second });
            }
        }
        Ok(value)
    }

    fn eval_pair(
        &mut self,
        sym: u32,
        a: &DimExpr,
        b: &DimExpr,
        depth: usize,
    ) -> Result<(i64, i64), BindError> {
        Ok((self.eval_expr(sym, a, depth)?, self.eval_expr(sym, b, depth)?))
    }

    fn eval_expr(&mut self, sym: u32, expr: &DimExpr, depth: usize) -> Result<i64, BindError> {
        let names = Describe { params: self.params, syms: self.syms };
        let overflow = || BindError::Overflow { sym, size: names.describe(sym) };
        match expr {
            DimExpr::Dim(Dim::Const(c)) => i64::try_from(*c).map_err(|_| overflow()),
            DimExpr::Dim(Dim::Sym(Sym(s))) => {
                let v = self.eval_sym(*s, depth + 1)?;
                i64::try_from(v).map_err(|_| overflow())
            }
            DimExpr::Add(a, b) => {
                let (a, b) = self.eval_pair(sym, a, b, depth)?;
                a.checked_add(b).ok_or_else(overflow)
            }
            DimExpr::Sub(a, b) => {
                let (a, b) = self.eval_pair(sym, a, b, depth)?;
                a.checked_sub(b).ok_or_else(overflow)
            }
            DimExpr::Mul(a, b) => {
                let (a, b) = self.eval_pair(sym, a, b, depth)?;
                a.checked_mul(b).ok_or_else(overflow)
            }
            DimExpr::Div(a, b) => {
                let (a, b) = self.eval_pair(sym, a, b, depth)?;
                if b == 0 || a.checked_rem(b) != Some(0) {
                    let size = names.describe(sym);
                    return Err(BindError::InexactDiv { sym, size, numerator: a, denominator: b });
                }
                a.checked_div(b).ok_or_else(overflow)
            }
            DimExpr::CeilDiv(a, b) => {
                let (a, b) = self.eval_pair(sym, a, b, depth)?;
                if b <= 0 {
                    let size = names.describe(sym);
                    return Err(BindError::BadDivisor { sym, size, denominator: b });
                }
                Ok(a.div_euclid(b) + i64::from(a.rem_euclid(b) != 0))
            }
            DimExpr::SliceLen { size, start, end, step } => {
                let size = self.eval_expr(sym, size, depth)?;
                let (_, len) = slice_range(size, *start, *end, *step)
                    .ok_or_else(|| BindError::ZeroStep { sym, size: names.describe(sym) })?;
                i64::try_from(len).map_err(|_| overflow())
            }
            DimExpr::Window { size, kernel, stride, padding, dilation, ceil } => {
                let (n, k) = self.eval_pair(sym, size, kernel, depth)?;
                let (s, p, d) = (i64::from(*stride), i64::from(*padding), i64::from(*dilation));
                crate::op_window::window_len(n, k, s, p, d, *ceil).map_err(|message| {
                    BindError::Window { sym, size: names.describe(sym), message }
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two parameters of one shape whose different axes must match: the message says the
    /// shapes are the same and which axes differ (not "[3, 4] but [3, 4]").
    #[test]
    fn a_mismatch_between_equal_shapes_names_the_axes() {
        let at = |param: &str, axis| AxisRef { param: param.into(), axis, shape: vec![3, 4] };
        let e = BindError::Mismatch { first: at("x", 0), second: at("y", 1) }.to_string();
        assert_eq!(
            e,
            "`x` and `y` both have shape [3, 4], but the program needs axis 0 of `x` to match \
             axis 1 of `y` (3 vs 4)"
        );
        let other = AxisRef { param: "y".into(), axis: 0, shape: vec![4] };
        let e = BindError::Mismatch { first: at("x", 0), second: other }.to_string();
        assert_eq!(e, "`x` has shape [3, 4] but `y` has shape [4]: axis 0 must match (3 vs 4)");
    }
}
