//! `rand_like`/`randn_like` in loop kernels: [`tfn_ir::philox`] and [`tfn_ir::random`]
//! instantiated on Cranelift values, so the JIT runs the interpreter's definition operation for
//! operation (bit-identical results, see `tfn_ir::random`).
//!
//! Vector loops hold four elements' Philox words in the lanes of `i32x4` values (an `f64x2`
//! step uses lanes 0 and 1). Philox needs the high half of 32×32-bit products:
//! `imul(uwiden_low(m), uwiden_low(c))` and its `uwiden_high` twin are one `pmuludq` each on
//! x86-64 (after a `pshufd`), and two `shufps` pick the high and low halves of the four
//! products. Measured against a per-lane loop (`extractlane`, a scalar 64-bit multiply,
//! `insertlane` for each of the four lanes): `rand_like` of 4M `f32` on one thread took 23 ms
//! this way and 70 ms per lane; `randn_like` `f64` 131 ms and 241 ms. The key is read once per call (two `i64` loads from the key operand's base
//! pointer) and its ten round keys are splatted in the entry block. An element's flat index is
//! the offset of a *counter operand* (see `LoopPlan::randoms`), which the loop nest advances
//! like a contiguous buffer of the node's shape, plus the inner position and the lane.

use super::ops::{self, Width};
use super::{At, Emitter};
use crate::error::CodegenError;
use cranelift::codegen::ir::{
    condcodes::FloatCC, condcodes::IntCC, types, ConstantData, Endianness, InstBuilder,
    MemFlagsData, Type, Value,
};
use cranelift::frontend::FunctionBuilder;
use tfn_ir::philox::{self, WordOps, ROUNDS};
use tfn_ir::random::{self, FloatOps};
use tfn_ir::{DType, RandomDist};

/// The per-call key material of one random node, as scalars and (vector loops) splats.
#[derive(Clone, Copy)]
pub(super) struct KeyWords {
    rounds: [[Value; 2]; ROUNDS],
    /// Counter words 2 and 3 (the key's second element).
    high: [Value; 2],
}

#[derive(Clone, Copy)]
pub(super) struct RandomKeys {
    scalar: KeyWords,
    vector: Option<KeyWords>,
}

/// Cranelift instructions as [`WordOps`]/[`FloatOps`]: scalars (`i32` words, `f32`/`f64`
/// floats) or vectors (`i32x4` words; `f32x4`, or `f64x2` on the low two word lanes).
pub(super) struct Lanes<'a, 'f> {
    pub b: &'a mut FunctionBuilder<'f>,
    pub vector: bool,
    pub double: bool,
}

fn lane_change() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

impl Lanes<'_, '_> {
    fn float_ty(&self) -> Type {
        match (self.vector, self.double) {
            (false, false) => types::F32,
            (false, true) => types::F64,
            (true, false) => types::F32X4,
            (true, true) => types::F64X2,
        }
    }

    /// The integer type of the floats' bits.
    fn bits_ty(&self) -> Type {
        match (self.vector, self.double) {
            (false, false) => types::I32,
            (false, true) => types::I64,
            (true, false) => types::I32X4,
            (true, true) => types::I64X2,
        }
    }

    fn splat_bits(&mut self, c: u64) -> Value {
        let lane = self.bits_ty().lane_type();
        let s = self.b.ins().iconst(lane, c as i64);
        if self.vector {
            let ty = self.bits_ty();
            self.b.ins().splat(ty, s)
        } else {
            s
        }
    }

    fn shuffle_words(&mut self, p: Value, q: Value, lanes: [u8; 4]) -> Value {
        let mask: Vec<u8> = lanes.iter().flat_map(|&l| (0..4).map(move |k| l * 4 + k)).collect();
        let mask = self.b.func.dfg.immediates.push(mask.into());
        let (p, q) = (
            self.b.ins().bitcast(types::I8X16, lane_change(), p),
            self.b.ins().bitcast(types::I8X16, lane_change(), q),
        );
        let r = self.b.ins().shuffle(p, q, mask);
        self.b.ins().bitcast(types::I32X4, lane_change(), r)
    }
}

impl WordOps for Lanes<'_, '_> {
    type Word = Value;

    fn word(&mut self, c: u32) -> Value {
        let s = self.b.ins().iconst(types::I32, i64::from(c as i32));
        if self.vector {
            self.b.ins().splat(types::I32X4, s)
        } else {
            s
        }
    }

    fn add(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().iadd(a, b)
    }

    fn xor(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().bxor(a, b)
    }

    fn mul_hi_lo(&mut self, m: u32, a: Value) -> (Value, Value) {
        if self.vector {
            let mv = self.word(m);
            let (ml, al) = (self.b.ins().uwiden_low(mv), self.b.ins().uwiden_low(a));
            let low_pair = self.b.ins().imul(ml, al);
            let (mh, ah) = (self.b.ins().uwiden_high(mv), self.b.ins().uwiden_high(a));
            let high_pair = self.b.ins().imul(mh, ah);
            // As i32x4: [lo0, hi0, lo1, hi1] and [lo2, hi2, lo3, hi3].
            let hi = self.shuffle_words(low_pair, high_pair, [1, 3, 5, 7]);
            let lo = self.shuffle_words(low_pair, high_pair, [0, 2, 4, 6]);
            (hi, lo)
        } else {
            let wide = self.b.ins().uextend(types::I64, a);
            let p = self.b.ins().imul_imm_u(wide, i64::from(m));
            let hi = self.b.ins().ushr_imm_u(p, 32);
            let hi = self.b.ins().ireduce(types::I32, hi);
            let lo = self.b.ins().ireduce(types::I32, p);
            (hi, lo)
        }
    }
}

impl FloatOps for Lanes<'_, '_> {
    type Float = Value;

    fn double(&self) -> bool {
        self.double
    }

    fn shr(&mut self, a: Value, bits: u32) -> Value {
        self.b.ins().ushr_imm_u(a, i64::from(bits))
    }

    fn and(&mut self, a: Value, mask: u32) -> Value {
        let m = self.word(mask);
        self.b.ins().band(a, m)
    }

    fn to_float(&mut self, a: Value) -> Value {
        let ty = self.float_ty();
        if self.vector && self.double {
            // `cvtdq2pd` of the low two lanes.
            let low = self.b.ins().swiden_low(a);
            self.b.ins().fcvt_from_sint(ty, low)
        } else {
            self.b.ins().fcvt_from_sint(ty, a)
        }
    }

    fn constant(&mut self, c: f64) -> Value {
        let s =
            if self.double { self.b.ins().f64const(c) } else { self.b.ins().f32const(c as f32) };
        if self.vector {
            let ty = self.float_ty();
            self.b.ins().splat(ty, s)
        } else {
            s
        }
    }

    fn fadd(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fadd(a, b)
    }

    fn fsub(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fsub(a, b)
    }

    fn fmul(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fmul(a, b)
    }

    fn fdiv(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fdiv(a, b)
    }

    fn fsqrt(&mut self, a: Value) -> Value {
        self.b.ins().sqrt(a)
    }

    fn frexp(&mut self, x: Value) -> (Value, Value) {
        let (mant, bias, one) = if self.double {
            (52, 1023.0, 0x3ff0_0000_0000_0000_u64)
        } else {
            (23, 127.0, 0x3f80_0000_u64)
        };
        let (fty, ity) = (self.float_ty(), self.bits_ty());
        let bits = self.b.ins().bitcast(ity, MemFlagsData::new(), x);
        let biased = self.b.ins().ushr_imm_u(bits, mant);
        let e = if self.vector && self.double {
            // i64x2 → f64x2 exactly: 2^52 + E as bits, minus 2^52.
            let magic = self.splat_bits(0x4330_0000_0000_0000);
            let with_magic = self.b.ins().bor(biased, magic);
            let f = self.b.ins().bitcast(fty, MemFlagsData::new(), with_magic);
            let offset = self.constant(2f64.powi(52) + bias);
            return (self.b.ins().fsub(f, offset), self.mantissa(bits, mant, one));
        } else {
            self.b.ins().fcvt_from_sint(fty, biased)
        };
        let bias = self.constant(bias);
        let e = self.b.ins().fsub(e, bias);
        (e, self.mantissa(bits, mant, one))
    }

    fn select_gt(&mut self, a: Value, b: Value, x: Value, y: Value) -> Value {
        let mask = self.b.ins().fcmp(FloatCC::GreaterThan, a, b);
        ops::blend(self.b, mask, x, y)
    }
}

impl Lanes<'_, '_> {
    /// The float with `bits`' significand and exponent 0: in `[1, 2)`.
    fn mantissa(&mut self, bits: Value, mant: i64, one: u64) -> Value {
        let keep = self.splat_bits((1u64 << mant) - 1);
        let one = self.splat_bits(one);
        let m = self.b.ins().band(bits, keep);
        let m = self.b.ins().bor(m, one);
        let ty = self.float_ty();
        self.b.ins().bitcast(ty, MemFlagsData::new(), m)
    }
}

impl Emitter<'_> {
    /// Loads each random node's key and computes its round keys, in the entry block.
    pub(super) fn hoist_random(&mut self, b: &mut FunctionBuilder) -> Result<(), CodegenError> {
        for r in &self.plan.randoms {
            let ptr = *self
                .ptrs
                .get(r.key)
                .ok_or_else(|| CodegenError::Internal("random key operand".into()))?;
            let k0 = b.ins().load(types::I64, super::mem(), ptr, 0);
            let k1 = if r.pair {
                b.ins().load(types::I64, super::mem(), ptr, 8)
            } else {
                b.ins().iconst(types::I64, 0)
            };
            let split = |b: &mut FunctionBuilder, k: Value| {
                let hi = b.ins().ushr_imm_u(k, 32);
                [b.ins().ireduce(types::I32, k), b.ins().ireduce(types::I32, hi)]
            };
            let (key, high) = (split(b, k0), split(b, k1));
            let mut lanes = Lanes { b, vector: false, double: false };
            let rounds = philox::round_keys(&mut lanes, key);
            let pin = |b: &mut FunctionBuilder, v: Value| super::pin(b, v, self.ptr_ty);
            let pin_all = |b: &mut FunctionBuilder, k: &KeyWords| KeyWords {
                rounds: k.rounds.map(|p| p.map(|v| pin(b, v))),
                high: k.high.map(|v| pin(b, v)),
            };
            let scalar = pin_all(b, &KeyWords { rounds, high });
            let vector = match self.vector {
                Some(_) => {
                    let splat = |b: &mut FunctionBuilder, v: Value| b.ins().splat(types::I32X4, v);
                    let k = KeyWords {
                        rounds: scalar.rounds.map(|p| p.map(|v| splat(b, v))),
                        high: scalar.high.map(|v| splat(b, v)),
                    };
                    Some(pin_all(b, &k))
                }
                None => None,
            };
            self.random.insert(r.node, RandomKeys { scalar, vector });
        }
        Ok(())
    }

    /// The value of random node `k` at `at` (element loops), or at the row position `offs`
    /// (`at.i` unused when the node is constant along the inner axis).
    pub(super) fn random_value(
        &self,
        b: &mut FunctionBuilder,
        k: usize,
        at: At<'_>,
    ) -> Result<Value, CodegenError> {
        let node = &self.plan.nodes[k];
        let dist = match node.op {
            tfn_ir::Op::Random { dist } => dist,
            _ => return Err(CodegenError::Internal(format!("node {k} is not random"))),
        };
        let (r, pos) = self
            .plan
            .randoms
            .iter()
            .enumerate()
            .find(|(_, r)| r.node == k)
            .map(|(pos, r)| (r, pos))
            .ok_or_else(|| CodegenError::Internal(format!("random node {k} has no counter")))?;
        let keys = self
            .random
            .get(&k)
            .ok_or_else(|| CodegenError::Internal("random keys not hoisted".into()))?;
        let p = self.plan.inputs.len() + self.plan.outputs.len() + pos;
        let varies = self.inner_full(&r.counter.full);
        let mut index = at.offs[p];
        if varies {
            index = b.ins().iadd(index, at.i);
            index = b.ins().iadd_imm_s(index, at.delta);
        }
        let hi64 = b.ins().ushr_imm_u(index, 32);
        let (lo, hi) = (b.ins().ireduce(types::I32, index), b.ins().ireduce(types::I32, hi64));
        let double = match node.dtype {
            DType::F32 => false,
            DType::F64 => true,
            d => return Err(CodegenError::Internal(format!("random values of {d}"))),
        };
        let (words, counter) = match at.width {
            Width::Scalar => (keys.scalar, [lo, hi]),
            Width::Vector(t) => {
                if t != node.dtype {
                    return ops::unsupported(format!("{} values in a {t} kernel", node.dtype));
                }
                let words = keys
                    .vector
                    .ok_or_else(|| CodegenError::Internal("vector round keys".into()))?;
                let (lo_s, hi_s) =
                    (b.ins().splat(types::I32X4, lo), b.ins().splat(types::I32X4, hi));
                if varies {
                    let iota: Vec<u8> = (0u32..4).flat_map(|l| l.to_le_bytes()).collect();
                    let iota = b.func.dfg.constants.insert(ConstantData::from(iota));
                    let iota = b.ins().vconst(types::I32X4, iota);
                    let lo_v = b.ins().iadd(lo_s, iota);
                    // A carry into the high word when the low word wraps inside the vector.
                    let carry = b.ins().icmp(IntCC::UnsignedLessThan, lo_v, lo_s);
                    (words, [lo_v, b.ins().isub(hi_s, carry)])
                } else {
                    (words, [lo_s, hi_s])
                }
            }
        };
        let mut lanes = Lanes { b, vector: at.width != Width::Scalar, double };
        let ctr = [counter[0], counter[1], words.high[0], words.high[1]];
        let w = philox::rounds(&mut lanes, ctr, &words.rounds);
        Ok(match dist {
            RandomDist::Uniform => random::uniform(&mut lanes, w),
            RandomDist::Normal => random::normal(&mut lanes, w),
        })
    }
}
