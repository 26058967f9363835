//! Element types of tensors.

use std::fmt;
use std::str::FromStr;

/// The element type of a tensor. Ordered from narrowest to widest kind for promotion tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    I32,
    I64,
    F32,
    F64,
}

impl DType {
    pub const ALL: [DType; 5] = [DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64];

    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    pub fn is_int(self) -> bool {
        matches!(self, DType::I32 | DType::I64)
    }

    /// Size of one element in bytes (bool is stored as one byte).
    pub fn size_bytes(self) -> usize {
        match self {
            DType::Bool => 1,
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
            "i32" => DType::I32,
            "i64" => DType::I64,
            "f32" => DType::F32,
            "f64" => DType::F64,
            _ => return Err(()),
        })
    }
}

/// A set of dtypes: what an op accepts (its row of the op table, [`crate::op`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DTypeSet(u8);

impl DTypeSet {
    pub const NONE: DTypeSet = DTypeSet(0);
    pub const BOOL: DTypeSet = DTypeSet::of(&[DType::Bool]);
    pub const FLOAT: DTypeSet = DTypeSet::of(&[DType::F32, DType::F64]);
    pub const INT: DTypeSet = DTypeSet::of(&[DType::I32, DType::I64]);
    /// Integers and floats.
    pub const NUMERIC: DTypeSet = DTypeSet(DTypeSet::FLOAT.0 | DTypeSet::INT.0);
    pub const ALL: DTypeSet = DTypeSet::of(&DType::ALL);
    /// Integers and bool: the bitwise ops.
    pub const INT_BOOL: DTypeSet = DTypeSet::of(&[DType::Bool, DType::I32, DType::I64]);

    pub const fn of(dtypes: &[DType]) -> DTypeSet {
        let mut bits = 0u8;
        let mut i = 0;
        while i < dtypes.len() {
            bits |= 1 << dtypes[i] as u8;
            i += 1;
        }
        DTypeSet(bits)
    }

    pub fn contains(self, d: DType) -> bool {
        self.0 >> d as u8 & 1 == 1
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
