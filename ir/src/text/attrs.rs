//! Attribute blocks of the IR text format: turning a node's `{key=value, ...}` into the fields
//! of its [`Op`], each key checked for presence, type and range.

use super::parse::{AttrValue, PResult, Parser};
use crate::attr::{Attr, Scalar};
use crate::dtype::DType;
use crate::op::{BinaryOp, Op, ReduceOp, ScanOp, UnaryOp};

/// The attributes of one node, consumed by key as the op is built.
pub(super) struct Attrs<'p> {
    pub(super) parser: &'p mut Parser,
    pub(super) items: Vec<(String, AttrValue, usize)>,
}

impl Attrs<'_> {
    fn error_at<T>(&mut self, pos: usize, message: String) -> PResult<T> {
        self.parser.pos = pos;
        self.parser.error(message)
    }

    fn take(&mut self, key: &str, op_at: usize) -> PResult<(AttrValue, usize)> {
        match self.items.iter().position(|(k, ..)| k == key) {
            Some(i) => {
                let (_, v, at) = self.items.remove(i);
                Ok((v, at))
            }
            None => self.error_at(op_at, format!("missing attribute `{key}`")),
        }
    }

    pub(super) fn finish(mut self) -> PResult<()> {
        match self.items.first() {
            Some((key, _, at)) => {
                let (key, at) = (key.clone(), *at);
                self.error_at(at, format!("unknown attribute `{key}`"))
            }
            None => Ok(()),
        }
    }

    fn int(&mut self, key: &str, op_at: usize) -> PResult<i64> {
        match self.take(key, op_at)? {
            (AttrValue::Int(i), _) => Ok(i),
            (_, at) => self.error_at(at, format!("`{key}` must be an integer")),
        }
    }

    fn u32(&mut self, key: &str, op_at: usize) -> PResult<u32> {
        let (v, at) = self.take(key, op_at)?;
        match v {
            AttrValue::Int(i) => match u32::try_from(i) {
                Ok(v) => Ok(v),
                Err(_) => self.error_at(at, format!("`{key}` must be a non-negative integer")),
            },
            _ => self.error_at(at, format!("`{key}` must be a non-negative integer")),
        }
    }

    fn bool(&mut self, key: &str, op_at: usize) -> PResult<bool> {
        match self.take(key, op_at)? {
            (AttrValue::Bool(b), _) => Ok(b),
            (_, at) => self.error_at(at, format!("`{key}` must be `true` or `false`")),
        }
    }

    fn u32_list(&mut self, key: &str, op_at: usize) -> PResult<Vec<u32>> {
        let (v, at) = self.take(key, op_at)?;
        let items = match v {
            AttrValue::List(items) => items,
            _ => return self.error_at(at, format!("`{key}` must be a list of integers")),
        };
        let mut out = Vec::new();
        for item in items {
            match item {
                AttrValue::Int(i) if u32::try_from(i).is_ok() => out.push(i as u32),
                _ => {
                    return self
                        .error_at(at, format!("`{key}` must be a list of non-negative integers"))
                }
            }
        }
        Ok(out)
    }

    fn scalar(&mut self, key: &str, op_at: usize) -> PResult<Scalar> {
        match self.take(key, op_at)? {
            (AttrValue::Int(i), _) => Ok(Scalar::Int(i)),
            (AttrValue::Float(f), _) => Ok(Scalar::Float(f)),
            (AttrValue::Bool(b), _) => Ok(Scalar::Bool(b)),
            (_, at) => self.error_at(at, format!("`{key}` must be a number or a bool")),
        }
    }

    pub(super) fn op(&mut self, name: &str, op_at: usize) -> PResult<Op> {
        if let Some(u) = UnaryOp::from_name(name) {
            return Ok(Op::Unary(u));
        }
        if let Some(b) = BinaryOp::from_name(name) {
            return Ok(Op::Binary(b));
        }
        if let Some(r) = ReduceOp::from_name(name) {
            let axes = self.u32_list("axes", op_at)?;
            return Ok(Op::Reduce { op: r, axes, keepdim: self.bool("keepdim", op_at)? });
        }
        if let Some(kind) = crate::op_window::WindowKind::from_name(name) {
            let mut pair = |key: &str| -> PResult<[u32; 2]> {
                let v = self.u32_list(key, op_at)?;
                <[u32; 2]>::try_from(v.as_slice()).or_else(|_| {
                    self.parser.error(format!("`{key}` must be a list of two integers"))
                })
            };
            let attrs = crate::op_window::WindowAttrs {
                kernel: pair("kernel")?,
                stride: pair("stride")?,
                padding: pair("padding")?,
                dilation: pair("dilation")?,
                output_padding: pair("output_padding")?,
                groups: self.u32("groups", op_at)?,
                ceil_mode: self.bool("ceil_mode", op_at)?,
                count_include_pad: self.bool("count_include_pad", op_at)?,
            };
            return Ok(Op::Window { kind, attrs });
        }
        if let Some(kind) = crate::op_index::IndexKind::from_name(name) {
            return Ok(Op::Index { kind, axis: self.u32("axis", op_at)? });
        }
        Ok(match name {
            "where" => Op::Where,
            "mul_add" => Op::MulAdd,
            "matmul" => Op::MatMul,
            "reshape" => Op::Reshape,
            "broadcast_to" => Op::BroadcastTo,
            "cast" => match self.take("to", op_at)? {
                (AttrValue::Ident(d), at) => match d.parse::<DType>() {
                    Ok(d) => Op::Cast(d),
                    Err(()) => return self.error_at(at, format!("unknown dtype `{d}`")),
                },
                (_, at) => return self.error_at(at, "`to` must be a dtype".into()),
            },
            "argmax" => {
                let axis = self.u32("axis", op_at)?;
                Op::ArgMax { axis, keepdim: self.bool("keepdim", op_at)? }
            }
            "argmin" => {
                let axis = self.u32("axis", op_at)?;
                Op::ArgMin { axis, keepdim: self.bool("keepdim", op_at)? }
            }
            "iota" => Op::Iota { axis: self.u32("axis", op_at)? },
            "cumsum" | "cumprod" | "cumprod_grad" => {
                let axis = self.u32("axis", op_at)?;
                let exclusive = self.bool("exclusive", op_at)?;
                let reverse = self.bool("reverse", op_at)?;
                match name {
                    "cumsum" => Op::Scan { op: ScanOp::Sum, axis, exclusive, reverse },
                    "cumprod" => Op::Scan { op: ScanOp::Prod, axis, exclusive, reverse },
                    _ => Op::CumprodGrad { axis, exclusive, reverse },
                }
            }
            "transpose" => Op::Transpose { perm: self.u32_list("perm", op_at)? },
            "concat" => Op::Concat { axis: self.u32("axis", op_at)? },
            "slice" => {
                let axis = self.u32("axis", op_at)?;
                let start = self.int("start", op_at)?;
                let end = match self.take("end", op_at)? {
                    (AttrValue::None, _) => None,
                    (AttrValue::Int(i), _) => Some(i),
                    (_, at) => {
                        return self.error_at(at, "`end` must be an integer or `none`".into())
                    }
                };
                Op::Slice { axis, start, end, step: self.int("step", op_at)? }
            }
            "full" => Op::Full { value: self.scalar("value", op_at)? },
            "rand_like" => Op::Random { dist: crate::op::RandomDist::Uniform },
            "randn_like" => Op::Random { dist: crate::op::RandomDist::Normal },
            _ => match name.strip_prefix("extern.") {
                Some(ext) => {
                    let name = ext.to_string();
                    Op::Extern { name, attrs: self.extern_attrs(op_at)? }
                }
                None => return self.error_at(op_at, format!("unknown op `{name}`")),
            },
        })
    }

    fn extern_attrs(&mut self, op_at: usize) -> PResult<Vec<Attr>> {
        let (v, at) = self.take("attrs", op_at)?;
        let AttrValue::List(items) = v else {
            return self.error_at(at, "`attrs` must be a list".into());
        };
        let mut out = Vec::new();
        for item in items {
            let attr = match item {
                AttrValue::Int(i) => Attr::Int(i),
                AttrValue::Float(f) => Attr::Float(f),
                AttrValue::Bool(b) => Attr::Bool(b),
                AttrValue::Ident(d) => match d.parse::<DType>() {
                    Ok(d) => Attr::DType(d),
                    Err(()) => return self.error_at(at, format!("unknown dtype `{d}`")),
                },
                AttrValue::EmptyFloatList => Attr::FloatList(Vec::new()),
                AttrValue::List(list) => {
                    let ints: Option<Vec<i64>> = list
                        .iter()
                        .map(|v| if let AttrValue::Int(i) = v { Some(*i) } else { None })
                        .collect();
                    let floats: Option<Vec<f64>> = list
                        .iter()
                        .map(|v| if let AttrValue::Float(f) = v { Some(*f) } else { None })
                        .collect();
                    match (ints, floats) {
                        (Some(ints), _) => Attr::IntList(ints),
                        (None, Some(floats)) => Attr::FloatList(floats),
                        _ => {
                            return self.error_at(
                                at,
                                "a list attribute holds only integers or only floats".into(),
                            )
                        }
                    }
                }
                AttrValue::None => {
                    return self.error_at(at, "`none` is not an attribute value".into())
                }
            };
            out.push(attr);
        }
        Ok(out)
    }
}
