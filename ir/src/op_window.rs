//! Sliding-window ops, `Op::Window { kind, attrs }`: 2-D convolution, transposed convolution,
//! max and average pooling, and the internal ops their gradients need. PyTorch semantics and
//! layouts (NCHW activations, OIHW weights); this file is their meaning: the op-table row,
//! the symbolic output sizes, and the concrete geometry every backend checks a call against.
//!
//! Every convolution is described as one *forward* convolution between a "big" image
//! `[n, cin, h, w]` (the side that is padded and read through the window), a "small" image
//! `[n, cout, oh, ow]` and a weight `[cout, cin / groups, kh, kw]`:
//! `small[n, o, i, j] = Σ big[n, g·cin_g + c, i·s - p + a·d, j·s - p + b·d] · w[o, c, a, b]`
//! over `c < cin_g`, the window `a < kh`, `b < kw` (positions outside `big` read 0), where
//! `g = o / cout_g` is `o`'s group.
//! - `conv2d(x, w[, like])`: big = `x`, weight = `w`, result = small (its spatial size the
//!   window formula's, or `like`'s axes 2 and 3: the gradient of `conv_transpose2d`).
//! - `conv_transpose2d(x, w[, like])`: the adjoint in `big`: small = `x`, weight = `w` (its
//!   PyTorch layout `[cin_T, cout_T / groups, kh, kw]` *is* the forward weight's), result =
//!   big, of size `(h - 1)·s - 2p + d·(k - 1) + output_padding + 1`, or `like`'s (the
//!   gradient of `conv2d`, whose input size the formula cannot recover).
//! - `conv2d_weight(x, grad, like)`: the adjoint in the weight: big = `x`, small = `grad`,
//!   result = the weight, of `like`'s shape.
//!
//! Pooling reads `x` of rank 3 or 4 (`[.., h, w]`) through `kernel` windows: `max_pool2d`
//! (padding reads as `-inf`; the gradient `max_pool2d_grad(x, grad)` goes to the first
//! maximum in window order, or the last NaN of the window), `avg_pool2d` (no dilation; the divisor counts the
//! padding inside `h + p` when `count_include_pad`, else only the elements read) and
//! `avg_pool2d_grad(grad, like)`. With `ceil_mode`, the last window may be partial but must
//! start inside the input or the left padding (PyTorch's rule).

use crate::dtype::DTypeSet;
use crate::graph::TensorType;
use crate::shape::{Dim, DimExpr, Shape};
use std::fmt;

/// Which window op (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WindowKind {
    Conv,
    ConvTranspose,
    ConvWeight,
    MaxPool,
    AvgPool,
    MaxPoolGrad,
    AvgPoolGrad,
}

/// Every [`WindowKind`], for tables keyed by name.
pub const ALL_WINDOW: [WindowKind; 7] = [
    WindowKind::Conv,
    WindowKind::ConvTranspose,
    WindowKind::ConvWeight,
    WindowKind::MaxPool,
    WindowKind::AvgPool,
    WindowKind::MaxPoolGrad,
    WindowKind::AvgPoolGrad,
];

impl WindowKind {
    pub fn name(self) -> &'static str {
        match self {
            WindowKind::Conv => "conv2d",
            WindowKind::ConvTranspose => "conv_transpose2d",
            WindowKind::ConvWeight => "conv2d_weight",
            WindowKind::MaxPool => "max_pool2d",
            WindowKind::AvgPool => "avg_pool2d",
            WindowKind::MaxPoolGrad => "max_pool2d_grad",
            WindowKind::AvgPoolGrad => "avg_pool2d_grad",
        }
    }

    pub fn from_name(name: &str) -> Option<WindowKind> {
        ALL_WINDOW.into_iter().find(|k| k.name() == name)
    }

    /// Convolutions (a weight operand, a GEMM kernel) rather than pooling.
    pub fn is_conv(self) -> bool {
        matches!(self, WindowKind::Conv | WindowKind::ConvTranspose | WindowKind::ConvWeight)
    }

    /// The data operands' dtypes: floats.
    pub fn dtypes(self) -> DTypeSet {
        DTypeSet::FLOAT
    }

    /// `(min, max)` number of tensor inputs.
    pub fn arity(self) -> (usize, usize) {
        match self {
            WindowKind::Conv | WindowKind::ConvTranspose => (2, 3),
            WindowKind::ConvWeight => (3, 3),
            WindowKind::MaxPool | WindowKind::AvgPool => (1, 1),
            WindowKind::MaxPoolGrad | WindowKind::AvgPoolGrad => (2, 2),
        }
    }

    /// Inputs read only for their shape (the `like` operand), by position.
    pub fn shape_only(self, input: usize) -> bool {
        match self {
            WindowKind::Conv | WindowKind::ConvTranspose | WindowKind::ConvWeight => input == 2,
            WindowKind::AvgPoolGrad => input == 1,
            WindowKind::MaxPool | WindowKind::AvgPool | WindowKind::MaxPoolGrad => false,
        }
    }
}

impl fmt::Display for WindowKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The compile-time attributes of a window op (per spatial axis: height, width). Fields a kind
/// does not use keep their defaults (`kernel` is `[0, 0]` for convolutions, whose window is
/// the weight's).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WindowAttrs {
    pub kernel: [u32; 2],
    pub stride: [u32; 2],
    pub padding: [u32; 2],
    pub dilation: [u32; 2],
    pub output_padding: [u32; 2],
    pub groups: u32,
    pub ceil_mode: bool,
    pub count_include_pad: bool,
}

impl Default for WindowAttrs {
    fn default() -> Self {
        WindowAttrs {
            kernel: [0, 0],
            stride: [1, 1],
            padding: [0, 0],
            dilation: [1, 1],
            output_padding: [0, 0],
            groups: 1,
            ceil_mode: false,
            count_include_pad: true,
        }
    }
}

/// Output length of a window sliding along one axis: `(size + 2·pad - dil·(k - 1) - 1) / s + 1`
/// rounded down, or up with `ceil` (dropping a last window that would start in the right
/// padding). An error when no window fits: the window is larger than the padded input (with
/// `ceil`, by so much that even its first place would start past the input).
pub fn window_len(
    size: i64,
    k: i64,
    s: i64,
    pad: i64,
    dil: i64,
    ceil: bool,
) -> Result<i64, String> {
    if s <= 0 || dil <= 0 || k <= 0 {
        return Err(format!("kernel {k}, stride {s} and dilation {dil} must be positive"));
    }
    let span = dil * (k - 1) + 1;
    let room = size + 2 * pad - span;
    // Rounded towards -inf, as PyTorch's `pooling_output_shape`: with `ceil`, a window a
    // little wider than the padded input still has one place (starting inside the input).
    let mut out = if ceil { (room + s - 1).div_euclid(s) } else { room.div_euclid(s) };
    out += 1;
    if ceil && (out - 1) * s >= size + pad {
        out -= 1;
    }
    if out < 1 {
        return Err(format!(
            "the window (kernel {k}, dilation {dil}: {span} wide) is larger than the padded \
             input ({size} + 2·{pad})"
        ));
    }
    Ok(out)
}

fn boxed(d: Dim) -> Box<DimExpr> {
    Box::new(DimExpr::Dim(d))
}

fn konst(c: u64) -> Box<DimExpr> {
    Box::new(DimExpr::Dim(Dim::Const(c)))
}

/// The size `(h - 1)·s - 2p + d·(k - 1) + output_padding + 1` of a transposed convolution.
fn transposed_len(h: Dim, k: Dim, a: &WindowAttrs, axis: usize) -> DimExpr {
    let (s, p, d, op) = (a.stride[axis], a.padding[axis], a.dilation[axis], a.output_padding[axis]);
    let grown = DimExpr::Mul(Box::new(DimExpr::Sub(boxed(h), konst(1))), konst(u64::from(s)));
    let reach = DimExpr::Mul(Box::new(DimExpr::Sub(boxed(k), konst(1))), konst(u64::from(d)));
    let total = DimExpr::Add(Box::new(grown), Box::new(reach));
    let total = DimExpr::Add(Box::new(total), konst(u64::from(op) + 1));
    DimExpr::Sub(Box::new(total), konst(2 * u64::from(p)))
}

/// The result type of window op `kind` on `inputs`, sizes derived through `derive`.
pub fn infer(
    kind: WindowKind,
    a: &WindowAttrs,
    inputs: &[&TensorType],
    derive: &mut dyn FnMut(DimExpr) -> Dim,
) -> Result<TensorType, String> {
    let name = kind.name();
    let x = inputs.first().ok_or_else(|| format!("`{name}` without input"))?;
    if let Some(other) =
        inputs.iter().enumerate().find(|(i, t)| !kind.shape_only(*i) && t.dtype != x.dtype)
    {
        return Err(format!("`{name}`: operand dtypes differ: {} and {}", x.dtype, other.1.dtype));
    }
    if a.stride.contains(&0) || a.dilation.contains(&0) || a.groups == 0 {
        return Err(format!("`{name}`: stride, dilation and groups must be positive"));
    }
    let rank4 = |t: &TensorType, what: &str| {
        if t.shape.rank() == 4 {
            Ok(t.shape.0.clone())
        } else {
            Err(format!("`{name}`: {what} must have rank 4, got {}", t.shape))
        }
    };
    let like = |i: usize| inputs.get(i).map(|t| rank4(t, "the shape operand")).transpose();
    let dims = match kind {
        WindowKind::Conv | WindowKind::ConvTranspose => {
            let xs = rank4(x, "x")?;
            let w = inputs.get(1).ok_or_else(|| format!("`{name}` without weight"))?;
            let ws = rank4(w, "the weight")?;
            match (kind, like(2)?) {
                (_, Some(l)) => {
                    let out_c = if kind == WindowKind::Conv { ws[0] } else { l[1] };
                    vec![xs[0], out_c, l[2], l[3]]
                }
                (WindowKind::Conv, None) => {
                    let mut out = vec![xs[0], ws[0]];
                    for axis in 0..2 {
                        out.push(derive(DimExpr::Window {
                            size: boxed(xs[2 + axis]),
                            kernel: boxed(ws[2 + axis]),
                            stride: a.stride[axis],
                            padding: a.padding[axis],
                            dilation: a.dilation[axis],
                            ceil: false,
                        }));
                    }
                    out
                }
                (_, None) => {
                    let c = if a.groups == 1 {
                        ws[1]
                    } else {
                        derive(DimExpr::Mul(boxed(ws[1]), konst(u64::from(a.groups))))
                    };
                    let mut out = vec![xs[0], c];
                    for axis in 0..2 {
                        out.push(derive(transposed_len(xs[2 + axis], ws[2 + axis], a, axis)));
                    }
                    out
                }
            }
        }
        WindowKind::ConvWeight => like(2)?.ok_or_else(|| format!("`{name}` without shape"))?,
        WindowKind::MaxPool | WindowKind::AvgPool => {
            let rank = x.shape.rank();
            if !(3..=4).contains(&rank) {
                return Err(format!("`{name}`: x must have rank 3 or 4, got {}", x.shape));
            }
            if a.kernel.contains(&0) {
                return Err(format!("`{name}`: the kernel must be positive"));
            }
            let mut out = x.shape.0[..rank - 2].to_vec();
            for axis in 0..2 {
                out.push(derive(DimExpr::Window {
                    size: boxed(x.shape.0[rank - 2 + axis]),
                    kernel: konst(u64::from(a.kernel[axis])),
                    stride: a.stride[axis],
                    padding: a.padding[axis],
                    dilation: a.dilation[axis],
                    ceil: a.ceil_mode,
                }));
            }
            out
        }
        WindowKind::MaxPoolGrad => x.shape.0.clone(),
        WindowKind::AvgPoolGrad => {
            inputs.get(1).ok_or_else(|| format!("`{name}` without shape"))?.shape.0.clone()
        }
    };
    Ok(TensorType { dtype: x.dtype, shape: Shape(dims) })
}

/// One convolution's concrete sizes, as a forward convolution (module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvGeom {
    pub n: usize,
    pub cin: usize,
    pub h: usize,
    pub w: usize,
    pub cout: usize,
    pub oh: usize,
    pub ow: usize,
    pub kh: usize,
    pub kw: usize,
    pub groups: usize,
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub dilation: [usize; 2],
}

impl ConvGeom {
    pub fn cin_g(&self) -> usize {
        self.cin / self.groups
    }

    pub fn cout_g(&self) -> usize {
        self.cout / self.groups
    }

    /// Multiply-adds of the convolution.
    pub fn macs(&self) -> usize {
        self.n * self.cout * self.oh * self.ow * self.cin_g() * self.kh * self.kw
    }

    /// The big-image row read by small row `i` at window row `a` (`None`: padding).
    #[inline]
    pub fn in_row(&self, i: usize, a: usize) -> Option<usize> {
        let r = (i * self.stride[0] + a * self.dilation[0]).checked_sub(self.padding[0])?;
        (r < self.h).then_some(r)
    }

    /// The big-image column read by small column `j` at window column `b` (`None`: padding).
    #[inline]
    pub fn in_col(&self, j: usize, b: usize) -> Option<usize> {
        let c = (j * self.stride[1] + b * self.dilation[1]).checked_sub(self.padding[1])?;
        (c < self.w).then_some(c)
    }
}

fn dims4(s: &[usize], what: &str, name: &str) -> Result<[usize; 4], String> {
    <[usize; 4]>::try_from(s).map_err(|_| format!("`{name}`: {what} must have rank 4, got {s:?}"))
}

/// The geometry of convolution `kind` for the concrete shapes of its inputs and result, with
/// the run-time checks (channels against groups and the weight) every backend makes.
pub fn conv_geom(
    kind: WindowKind,
    a: &WindowAttrs,
    inputs: &[&[usize]],
    out: &[usize],
) -> Result<ConvGeom, String> {
    let name = kind.name();
    let shape = |i: usize| inputs.get(i).copied().ok_or_else(|| format!("`{name}`: operand {i}"));
    let (big, small, weight) = match kind {
        WindowKind::Conv => (shape(0)?, out, shape(1)?),
        WindowKind::ConvTranspose => (out, shape(0)?, shape(1)?),
        WindowKind::ConvWeight => (shape(0)?, shape(1)?, out),
        _ => return Err(format!("`{name}` is not a convolution")),
    };
    let [n, cin, h, w] = dims4(big, "the input", name)?;
    let [n2, cout, oh, ow] = dims4(small, "the output", name)?;
    let [wo, wc, kh, kw] = dims4(weight, "the weight", name)?;
    let g = a.groups as usize;
    let (xname, yname) = match kind {
        WindowKind::ConvTranspose => ("the result", "x"),
        WindowKind::ConvWeight => ("x", "grad"),
        _ => ("x", "the result"),
    };
    if n != n2 {
        return Err(format!("`{name}`: batch sizes differ ({n} and {n2})"));
    }
    if g == 0 || cin % g != 0 || cout % g != 0 {
        return Err(format!(
            "`{name}`: groups = {g} must divide the channels of {xname} ({cin}) and of {yname} \
             ({cout})"
        ));
    }
    if wo != cout || wc * g != cin {
        let expected = [cout, cin / g.max(1), kh, kw];
        return Err(format!(
            "`{name}`: the weight has shape {weight:?}, but {xname} has {cin} channels and {yname} \
             {cout} (groups = {g}), so it must be {expected:?}"
        ));
    }
    if kh == 0 || kw == 0 {
        return Err(format!("`{name}`: the weight's window {kh}×{kw} is empty"));
    }
    let u = |v: [u32; 2]| [v[0] as usize, v[1] as usize];
    let geom = ConvGeom {
        n,
        cin,
        h,
        w,
        cout,
        oh,
        ow,
        kh,
        kw,
        groups: g,
        stride: u(a.stride),
        padding: u(a.padding),
        dilation: u(a.dilation),
    };
    if kind == WindowKind::Conv && inputs.len() == 2 {
        for (axis, (size, k, o)) in [(h, kh, oh), (w, kw, ow)].into_iter().enumerate() {
            let want = window_len(
                size as i64,
                k as i64,
                geom.stride[axis] as i64,
                geom.padding[axis] as i64,
                geom.dilation[axis] as i64,
                false,
            )
            .map_err(|m| format!("`{name}` along axis {}: {m}", axis + 2))?;
            if want != o as i64 {
                return Err(format!(
                    "`{name}`: result size {o} along axis {}, not {want}",
                    axis + 2
                ));
            }
        }
    }
    Ok(geom)
}

/// One pooling's concrete sizes: `planes` images of `h × w` pooled to `oh × ow`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolGeom {
    pub planes: usize,
    pub h: usize,
    pub w: usize,
    pub oh: usize,
    pub ow: usize,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub dilation: [usize; 2],
    pub count_include_pad: bool,
}

impl PoolGeom {
    /// Window `(i, j)`: for each axis, the first position (may be negative: padding), and
    /// for average pooling the divisor.
    #[inline]
    pub fn start(&self, i: usize, j: usize) -> (isize, isize) {
        (
            (i * self.stride[0]) as isize - self.padding[0] as isize,
            (j * self.stride[1]) as isize - self.padding[1] as isize,
        )
    }

    /// Average pooling of window `(i, j)`: the clipped row and column ranges read and the
    /// divisor (PyTorch's: the window clipped to `size + padding`, then to the input unless
    /// `count_include_pad`).
    #[inline]
    pub fn avg_window(&self, i: usize, j: usize) -> ([usize; 2], [usize; 2], usize) {
        let (r0, c0) = self.start(i, j);
        let r1 = (r0 + self.kernel[0] as isize).min((self.h + self.padding[0]) as isize);
        let c1 = (c0 + self.kernel[1] as isize).min((self.w + self.padding[1]) as isize);
        let padded = ((r1 - r0) * (c1 - c0)) as usize;
        let (ra, rb) = (r0.max(0) as usize, (r1.min(self.h as isize)).max(0) as usize);
        let (ca, cb) = (c0.max(0) as usize, (c1.min(self.w as isize)).max(0) as usize);
        let inside = rb.saturating_sub(ra) * cb.saturating_sub(ca);
        ([ra, rb.max(ra)], [ca, cb.max(ca)], if self.count_include_pad { padded } else { inside })
    }
}

/// The geometry of pooling `kind` from the shape of `x` (the pooled tensor: the input of the
/// forward op, the shape operand of the gradients) and of the pooled result.
pub fn pool_geom(
    kind: WindowKind,
    a: &WindowAttrs,
    x: &[usize],
    out: &[usize],
) -> Result<PoolGeom, String> {
    let name = kind.name();
    let rank = x.len();
    if !(3..=4).contains(&rank) || out.len() != rank || x[..rank - 2] != out[..rank - 2] {
        return Err(format!("`{name}`: shapes {x:?} and {out:?} do not pool"));
    }
    let u = |v: [u32; 2]| [v[0] as usize, v[1] as usize];
    let geom = PoolGeom {
        planes: x[..rank - 2].iter().product(),
        h: x[rank - 2],
        w: x[rank - 1],
        oh: out[rank - 2],
        ow: out[rank - 1],
        kernel: u(a.kernel),
        stride: u(a.stride),
        padding: u(a.padding),
        dilation: u(a.dilation),
        count_include_pad: a.count_include_pad,
    };
    for axis in 0..2 {
        let want = window_len(
            x[rank - 2 + axis] as i64,
            a.kernel[axis] as i64,
            a.stride[axis] as i64,
            a.padding[axis] as i64,
            a.dilation[axis] as i64,
            a.ceil_mode,
        )
        .map_err(|m| format!("`{name}` along axis {}: {m}", rank - 2 + axis))?;
        if want != out[rank - 2 + axis] as i64 {
            return Err(format!("`{name}`: pooled size {out:?} does not fit input {x:?}"));
        }
    }
    Ok(geom)
}

/// Printed attributes of the IR text format (every field, in a fixed order).
pub fn print_attrs(a: &WindowAttrs) -> String {
    let l = |v: [u32; 2]| format!("[{}, {}]", v[0], v[1]);
    format!(
        "kernel={}, stride={}, padding={}, dilation={}, output_padding={}, groups={}, \
         ceil_mode={}, count_include_pad={}",
        l(a.kernel),
        l(a.stride),
        l(a.padding),
        l(a.dilation),
        l(a.output_padding),
        a.groups,
        a.ceil_mode,
        a.count_include_pad
    )
}
