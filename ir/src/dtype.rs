//! Element types of tensors.

use std::fmt;
use std::str::FromStr;

/// The element type of a tensor. Ordered from narrowest to widest kind for promotion tables.
/// The one dtype dispatch: expands `$body` once per dtype over an enum with one variant per
/// dtype named as [`DType`]'s (`Tensor`, the backend's `TensorView`/`TensorViewMut`, the
/// session's `TensorValue`), binding the payload to `$a` and, in the second form, the
/// variant's [`DType`] to the constant `$d`. A new dtype is a compile error at every use.
#[macro_export]
macro_rules! each_dtype {
    ($e:expr, $enum:ident, $a:pat => $body:expr) => {
        $crate::each_dtype!($e, $enum, $a, _D => $body)
    };
    ($e:expr, $enum:ident, $a:pat, $d:ident => $body:expr) => {
        match $e {
            $enum::Bool($a) => {
                #[allow(dead_code)]
                const $d: $crate::DType = $crate::DType::Bool;
                $body
            }
            $enum::I8($a) => {
                #[allow(dead_code)]
                const $d: $crate::DType = $crate::DType::I8;
                $body
            }
            $enum::U8($a) => {
                #[allow(dead_code)]
                const $d: $crate::DType = $crate::DType::U8;
                $body
            }
            $enum::I32($a) => {
                #[allow(dead_code)]
                const $d: $crate::DType = $crate::DType::I32;
                $body
            }
            $enum::I64($a) => {
                #[allow(dead_code)]
                const $d: $crate::DType = $crate::DType::I64;
                $body
            }
            $enum::F16($a) => {
                #[allow(dead_code)]
                const $d: $crate::DType = $crate::DType::F16;
                $body
            }
            $enum::BF16($a) => {
                #[allow(dead_code)]
                const $d: $crate::DType = $crate::DType::BF16;
                $body
            }
            $enum::F32($a) => {
                #[allow(dead_code)]
                const $d: $crate::DType = $crate::DType::F32;
                $body
            }
            $enum::F64($a) => {
                #[allow(dead_code)]
                const $d: $crate::DType = $crate::DType::F64;
                $body
            }
        }
    };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    /// Storage dtypes (`i8`, `u8`, `f16`, `bf16`): loaded, stored, cast, moved by every shape
    /// op; arithmetic on them computes in their [`DType::compute`] dtype (see `ir::storage`).
    I8,
    U8,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

impl DType {
    pub const ALL: [DType; 9] = [
        DType::Bool,
        DType::I8,
        DType::U8,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// The storage dtypes: no op computes in them (lowering widens their operands to
    /// [`DType::compute`] and narrows the result back, `ir::storage`).
    pub const STORAGE: [DType; 4] = [DType::I8, DType::U8, DType::F16, DType::BF16];

    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    pub fn is_int(self) -> bool {
        matches!(self, DType::I8 | DType::U8 | DType::I32 | DType::I64)
    }

    /// Whether this is a storage dtype (`i8`, `u8`, `f16`, `bf16`).
    pub fn is_storage(self) -> bool {
        matches!(self, DType::I8 | DType::U8 | DType::F16 | DType::BF16)
    }

    /// The dtype arithmetic on this dtype computes in: `f32` for `f16`/`bf16`, `i32` for
    /// `i8`/`u8`, the dtype itself otherwise. Every value of a storage dtype converts to its
    /// compute dtype exactly.
    pub fn compute(self) -> DType {
        match self {
            DType::F16 | DType::BF16 => DType::F32,
            DType::I8 | DType::U8 => DType::I32,
            DType::Bool | DType::I32 | DType::I64 | DType::F32 | DType::F64 => self,
        }
    }

    /// Size of one element in bytes (bool is stored as one byte).
    pub fn size_bytes(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DType {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Ok(match s {
            "bool" => DType::Bool,
            "i8" => DType::I8,
            "u8" => DType::U8,
            "i32" => DType::I32,
            "i64" => DType::I64,
            "f16" => DType::F16,
            "bf16" => DType::BF16,
            "f32" => DType::F32,
            "f64" => DType::F64,
            _ => return Err(()),
        })
    }
}

/// A set of dtypes: what an op accepts (its row of the op table, [`crate::op`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DTypeSet(u16);

impl DTypeSet {
    pub const NONE: DTypeSet = DTypeSet(0);
    pub const BOOL: DTypeSet = DTypeSet::of(&[DType::Bool]);
    /// The floats arithmetic runs on (the IR's op table; see [`DTypeSet::with_storage`]).
    pub const FLOAT: DTypeSet = DTypeSet::of(&[DType::F32, DType::F64]);
    /// The integers arithmetic runs on.
    pub const INT: DTypeSet = DTypeSet::of(&[DType::I32, DType::I64]);
    /// The IR's op table before storage dtypes: what the compute ops accept.
    pub const COMPUTE: DTypeSet =
        DTypeSet::of(&[DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64]);
    /// Integers and floats.
    pub const NUMERIC: DTypeSet = DTypeSet(DTypeSet::FLOAT.0 | DTypeSet::INT.0);
    pub const ALL: DTypeSet = DTypeSet::of(&DType::ALL);
    /// Integers and bool: the bitwise ops.
    pub const INT_BOOL: DTypeSet = DTypeSet::of(&[DType::Bool, DType::I32, DType::I64]);

    pub const fn of(dtypes: &[DType]) -> DTypeSet {
        let mut bits = 0u16;
        let mut i = 0;
        while i < dtypes.len() {
            bits |= 1 << dtypes[i] as u8;
            i += 1;
        }
        DTypeSet(bits)
    }

    pub fn contains(self, d: DType) -> bool {
        self.0 >> d as u16 & 1 == 1
    }

    /// The set plus every storage dtype whose compute dtype is in it: what a user may pass to
    /// an op whose IR row is `self` (lowering widens the storage operands, `ir::storage`).
    pub fn with_storage(self) -> DTypeSet {
        let mut bits = self.0;
        for d in DType::STORAGE {
            if self.contains(d.compute()) {
                bits |= 1 << d as u16;
            }
        }
        DTypeSet(bits)
    }

    /// The members, narrowest first.
    pub fn iter(self) -> impl Iterator<Item = DType> {
        DType::ALL.into_iter().filter(move |d| self.contains(*d))
    }
}

impl fmt::Display for DTypeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(DType::name).collect();
        write!(f, "{{{}}}", names.join(", "))
    }
}
