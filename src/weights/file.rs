//! [`Weights`]: a safetensors file, memory-mapped and validated before anything is read.
//!
//! The format: 8 bytes (little-endian `u64`) giving the length `n` of a JSON header, the
//! header (`{"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}`,
//! offsets relative to the end of the header), then the data. Opening checks, before any
//! tensor is touched and without allocating anything the header claims: the header fits the
//! file, is UTF-8 JSON of at most 100 MB, every dtype is a safetensors dtype, every tensor's
//! byte length is `shape × dtype` (overflow-checked), the tensors' data is contiguous (no gap,
//! no overlap, in order) and ends exactly at the end of the file — the `safetensors` crate's
//! `read_metadata`, preceded by tfn's own check of the header length so that the message says
//! what is wrong.
//!
//! Tensors are views into the mapping ([`Weights::tensor`]): nothing is copied, except
//! `bool` tensors (their bytes are checked to be 0 or 1 and decoded once) and tensors whose
//! data is not aligned for their dtype in the file (decoded once); both are cached.
//!
//! A mapped file must not be truncated or modified by another process while in use (as for
//! every memory-mapped file: the reader would see the change, or fault).

use super::bind::Store;
use super::error::WeightsError;
use crate::npy::Element;
use crate::value::TensorValue;
use ndarray::{ArrayD, ArrayViewD, IxDyn, ShapeBuilder};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use tfn_ir::half::slice::HalfBitsSliceExt;
use tfn_ir::half::{bf16, f16};
use tfn_ir::{DType, Tensor};

/// An opened safetensors file. Cloning is cheap (the mapping is shared).
#[derive(Clone)]
pub struct Weights {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Weights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Weights")
            .field("path", &self.inner.path)
            .field("tensors", &self.inner.entries.len())
            .finish()
    }
}

struct Inner {
    path: String,
    bytes: Bytes,
    entries: BTreeMap<String, Entry>,
}

enum Bytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

struct Entry {
    /// The tfn dtype, or the safetensors dtype's name when tfn has no such dtype.
    dtype: Result<DType, String>,
    shape: Vec<usize>,
    /// Where the data is in the file (validated: in bounds, `shape × dtype` bytes).
    range: Range<usize>,
    /// The decoded copy of a tensor that cannot be viewed in place (bool, misaligned).
    decoded: OnceLock<Result<Tensor, String>>,
}

impl Weights {
    /// Opens and validates a safetensors file, memory-mapped: nothing is copied.
    pub fn open(path: impl AsRef<Path>) -> Result<Weights, WeightsError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let io = |source| WeightsError::Io { path: shown.clone(), source };
        let format =
            |reason: &str| WeightsError::Format { path: shown.clone(), reason: reason.into() };
        // Opening a FIFO would wait for a writer: refuse what is not a file before opening.
        let before = std::fs::metadata(path).map_err(io)?;
        if !before.is_file() && !before.is_dir() {
            return Err(format("it is not a regular file (a checkpoint is memory-mapped)"));
        }
        let file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if meta.is_dir() {
            return Err(format("it is a directory"));
        }
        if !meta.is_file() {
            return Err(format("it is not a regular file (a checkpoint is memory-mapped)"));
        }
        if meta.len() < 8 {
            return Err(WeightsError::Format {
                path: shown.clone(),
                reason: format!(
                    "it has {} bytes, fewer than the 8 of the header length",
                    meta.len()
                ),
            });
        }
        let bytes = map(&file).map_err(io)?;
        Weights::parse(shown, Bytes::Mapped(bytes))
    }

    /// A checkpoint held in memory (`name` is shown in messages); validated like a file.
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Result<Weights, WeightsError> {
        Weights::parse(name.to_string(), Bytes::Owned(bytes))
    }

    fn parse(path: String, bytes: Bytes) -> Result<Weights, WeightsError> {
        let buffer = bytes.as_slice();
        let format = |reason: String| WeightsError::Format { path: path.clone(), reason };
        let Some(len) = buffer.get(..8) else {
            return Err(format(format!(
                "it has {} bytes, fewer than the 8 of the header length",
                buffer.len()
            )));
        };
        let declared = u64::from_le_bytes(len.try_into().unwrap_or([0xff; 8]));
        let available = buffer.len() as u64 - 8;
        if declared > available {
            return Err(format(format!(
                "its header length says {declared} bytes but only {available} bytes follow (truncated, or not a safetensors file)"
            )));
        }
        // serde keeps the last of two entries of one name (and the offsets of both then look
        // like a gap or an overlap): a checkpoint's name must mean one tensor.
        let header = buffer.get(8..8usize.saturating_add(declared as usize)).unwrap_or_default();
        if let Some(name) = duplicate_name(header) {
            return Err(format(format!("its header names `{name}` twice")));
        }
        let (header_len, metadata) =
            safetensors::SafeTensors::read_metadata(buffer).map_err(|e| {
                let header = buffer.get(8..8 + declared as usize).unwrap_or_default();
                format(describe(&e, buffer.len(), declared, header))
            })?;
        let data_start = 8 + header_len;
        let mut entries = BTreeMap::new();
        for (name, info) in metadata.tensors() {
            let (begin, end) = info.data_offsets;
            let range = data_start + begin..data_start + end;
            if range.end > buffer.len() {
                // (read_metadata checked this; a second check costs nothing.)
                return Err(format(format!(
                    "tensor `{name}`'s data runs past the end of the file"
                )));
            }
            // An empty tensor's other sizes must still describe an array: NumPy (and
            // ndarray's strides) refuse nonzero sizes whose bytes pass 2^63 - 1.
            let item = (info.dtype.bitsize() as u64).div_ceil(8).max(1);
            if !tfn_ir::describable(info.shape.iter().map(|&d| d as u64), item) {
                return Err(format(format!(
                    "tensor `{name}`'s shape {:?} is empty, but its nonzero sizes pass 2^63 - 1 bytes, which no array can describe",
                    info.shape
                )));
            }
            let entry = Entry {
                dtype: dtype_of(info.dtype),
                shape: info.shape.clone(),
                range,
                decoded: OnceLock::new(),
            };
            entries.insert(name, entry);
        }
        Ok(Weights { inner: Arc::new(Inner { path, bytes, entries }) })
    }

    /// The file's path, as given.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// The tensors' names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.inner.entries.keys().map(String::as_str)
    }

    /// The number of tensors.
    pub fn len(&self) -> usize {
        self.inner.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.entries.is_empty()
    }

    /// A tensor's dtype (`Err`: the safetensors dtype tfn does not have) and shape.
    pub fn info(&self, name: &str) -> Option<(Result<DType, &str>, &[usize])> {
        let e = self.inner.entries.get(name)?;
        Some((e.dtype.as_ref().copied().map_err(String::as_str), &e.shape))
    }

    /// The tensor `name`, borrowed from the file (see the module docs for the exceptions);
    /// `Ok(None)` when the file has no tensor of that name.
    pub fn tensor(&self, name: &str) -> Result<Option<TensorValue<'_>>, WeightsError> {
        let Some(entry) = self.inner.entries.get(name) else { return Ok(None) };
        let err = |reason: String| WeightsError::Tensor {
            origin: self.inner.path.clone(),
            tensor: name.to_string(),
            reason,
        };
        let dtype = entry.dtype.clone().map_err(|d| {
            err(format!(
                "its dtype {d} is not one tfn has (bool, i8, u8, i32, i64, f16, bf16, f32, f64)"
            ))
        })?;
        let bytes = &self.inner.bytes.as_slice()[entry.range.clone()];
        if let Some(t) = view(dtype, bytes, &entry.shape) {
            return Ok(Some(t));
        }
        let decoded = entry.decoded.get_or_init(|| decode(dtype, bytes, &entry.shape));
        match decoded {
            Ok(t) => Ok(Some(tensor_view(t))),
            Err(reason) => Err(err(reason.clone())),
        }
    }

    /// The tensors `names` (one dtype and shape, checked by the caller) stacked along a new
    /// leading axis as one view, when their data is evenly spaced in the file.
    fn stacked_view(&self, names: &[String]) -> Option<TensorValue<'_>> {
        let entries: Vec<&Entry> =
            names.iter().map(|n| self.inner.entries.get(n)).collect::<Option<_>>()?;
        let first = entries.first()?;
        let dtype = first.dtype.clone().ok()?;
        if dtype == DType::Bool {
            return None;
        }
        let len = first.range.len();
        let size = dtype.size_bytes();
        let step = match entries.get(1) {
            Some(second) => second.range.start.checked_sub(first.range.start)?,
            None => len,
        };
        let evenly = entries
            .windows(2)
            .all(|w| w[1].range.start.checked_sub(w[0].range.start) == Some(step));
        if !evenly || step < len || step % size != 0 {
            return None;
        }
        let last = entries.last()?;
        let bytes = &self.inner.bytes.as_slice()[first.range.start..last.range.end];
        let mut shape = vec![entries.len()];
        shape.extend_from_slice(&first.shape);
        let mut strides = vec![step / size];
        strides.extend(c_strides(&first.shape)?);
        strided_view(dtype, bytes, &shape, &strides)
    }
}

impl Store for Weights {
    fn origin(&self) -> &str {
        &self.inner.path
    }

    fn get(&self, name: &str) -> Result<Option<TensorValue<'_>>, WeightsError> {
        self.tensor(name)
    }

    fn names(&self) -> Vec<String> {
        self.inner.entries.keys().cloned().collect()
    }

    fn stacked(&self, names: &[String]) -> Option<TensorValue<'_>> {
        self.stacked_view(names)
    }
}

/// Memory-maps a whole file read-only.
#[allow(unsafe_code)]
fn map(file: &std::fs::File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the mapping is read-only and only ever read through `&[u8]`. The one hazard of
    // any file mapping, another process truncating or rewriting the file meanwhile, is
    // documented on `Weights` (as numpy.memmap, safetensors and PyTorch's mmap loading do).
    unsafe { memmap2::Mmap::map(file) }
}

fn dtype_of(d: safetensors::Dtype) -> Result<DType, String> {
    use safetensors::Dtype as S;
    match d {
        S::BOOL => Ok(DType::Bool),
        S::I8 => Ok(DType::I8),
        S::U8 => Ok(DType::U8),
        S::I32 => Ok(DType::I32),
        S::I64 => Ok(DType::I64),
        S::F16 => Ok(DType::F16),
        S::BF16 => Ok(DType::BF16),
        S::F32 => Ok(DType::F32),
        S::F64 => Ok(DType::F64),
        other => Err(format!("{other:?}")),
    }
}

/// The safetensors name of a tfn dtype.
pub(super) fn safetensors_name(d: DType) -> &'static str {
    match d {
        DType::Bool => "BOOL",
        DType::I8 => "I8",
        DType::U8 => "U8",
        DType::I32 => "I32",
        DType::I64 => "I64",
        DType::F16 => "F16",
        DType::BF16 => "BF16",
        DType::F32 => "F32",
        DType::F64 => "F64",
    }
}

/// The `safetensors` crate's error, in words about this file (`header`: its JSON header, to
/// name the tensor the crate's error leaves unnamed).
fn describe(
    e: &safetensors::SafeTensorError,
    file_len: usize,
    header_len: u64,
    header: &[u8],
) -> String {
    use safetensors::SafeTensorError as E;
    match e {
        E::HeaderTooLarge => format!("its header length ({header_len} bytes) is over the 100 MB limit"),
        E::HeaderTooSmall | E::InvalidHeaderLength => {
            format!("its header length ({header_len} bytes) does not fit the file ({file_len} bytes)")
        }
        E::InvalidHeader(e) => format!("its header is not UTF-8: {e}"),
        E::InvalidHeaderDeserialization(e) | E::JsonError(e) => {
            format!("its header is not a valid safetensors header: {}", json_reason(e))
        }
        E::InvalidOffset(name) => format!(
            "the data offsets of tensor `{name}` are invalid (tensors must be contiguous, in order, without gaps or overlaps)"
        ),
        E::TensorInvalidInfo | E::ValidationOverflow => bad_length(header).unwrap_or_else(|| {
            "a tensor's byte length is not its shape times its dtype's size".to_string()
        }),
        E::MetadataIncompleteBuffer => {
            "the tensors' data does not end where the file does (truncated, or trailing bytes)"
                .to_string()
        }
        E::MisalignedSlice => "a tensor of sub-byte elements does not fill whole bytes".to_string(),
        other => other.to_string(),
    }
}

/// What serde says of a header, in the file format's words rather than its parser's
/// (`unknown variant `F33`, expected one of ...` names the dtype; `expected struct
/// HashMetadata` means the header is not an object of tensors).
fn json_reason(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let at = format!("(line {}, column {})", e.line(), e.column());
    if let Some(rest) = text.strip_prefix("unknown variant `") {
        let variant: String = rest.chars().take_while(|&c| c != '`').take(64).collect();
        return format!("`{variant}` is not a safetensors dtype {at}");
    }
    if text.contains("HashMetadata") || text.contains("TensorInfo") {
        return format!(
            "it must be a JSON object mapping each tensor's name to its `dtype`, `shape` and \
             `data_offsets` {at}"
        );
    }
    text
}

/// The first name a header's JSON object holds twice (`None` if none, or if it does not
/// parse: `read_metadata` reported that).
fn duplicate_name(header: &[u8]) -> Option<String> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Names;
    impl<'de> Visitor<'de> for Names {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut seen = std::collections::HashSet::new();
            while let Some(name) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                if !seen.insert(name.clone()) {
                    return Ok(Some(name));
                }
            }
            Ok(None)
        }
    }
    serde_json::Deserializer::from_slice(header).deserialize_map(Names).ok().flatten()
}

/// The first tensor of a header whose data offsets do not hold its shape times its dtype's
/// size, in words (`None` if the header does not parse or every tensor fits).
fn bad_length(header: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(header).ok()?;
    for (name, info) in json.as_object()? {
        if name == "__metadata__" {
            continue;
        }
        let dtype: safetensors::Dtype = serde_json::from_value(info.get("dtype")?.clone()).ok()?;
        let shape: Vec<u64> =
            info.get("shape")?.as_array()?.iter().map(|d| d.as_u64()).collect::<Option<_>>()?;
        let offsets: Vec<u64> = info
            .get("data_offsets")?
            .as_array()?
            .iter()
            .map(|d| d.as_u64())
            .collect::<Option<_>>()?;
        let &[begin, end] = offsets.as_slice() else { continue };
        let bits = dtype.bitsize() as u64;
        let held = end.checked_sub(begin);
        // (In u128: a shape of 2^62 bytes is 2^65 bits.)
        let needed = shape
            .iter()
            .try_fold(1u128, |n, &d| n.checked_mul(u128::from(d)))
            .and_then(|n| n.checked_mul(u128::from(bits)))
            .map(|b| b.div_ceil(8))
            .and_then(|b| u64::try_from(b).ok());
        let shape_text = format!("{shape:?}");
        match (needed, held) {
            (Some(needed), Some(held)) if needed == held => continue,
            (None, _) => {
                return Some(format!(
                    "tensor `{name}`'s shape {shape_text} of {dtype:?} overflows (its size does not fit 64 bits)"
                ))
            }
            (Some(needed), _) => {
                return Some(format!(
                    "tensor `{name}`: its shape {shape_text} of {dtype:?} is {needed} bytes, but its data_offsets [{begin}, {end}] hold {}",
                    held.map_or("a negative length".to_string(), |h| format!("{h} bytes"))
                ))
            }
        }
    }
    None
}

/// The tensor as a view of `bytes`, when the dtype can be borrowed (not bool) and the bytes
/// are aligned for it (always on a little-endian host; tfn's writer aligns every tensor).
fn view<'a>(dtype: DType, bytes: &'a [u8], shape: &[usize]) -> Option<TensorValue<'a>> {
    strided_view(dtype, bytes, shape, &c_strides(shape)?)
}

fn strided_view<'a>(
    dtype: DType,
    bytes: &'a [u8],
    shape: &[usize],
    strides: &[usize],
) -> Option<TensorValue<'a>> {
    if cfg!(target_endian = "big") {
        return None;
    }
    fn typed<'a, T: bytemuck::Pod>(
        bytes: &'a [u8],
        shape: &[usize],
        strides: &[usize],
    ) -> Option<ArrayViewD<'a, T>> {
        let slice: &[T] = bytemuck::try_cast_slice(bytes).ok()?;
        ArrayViewD::from_shape(IxDyn(shape).strides(IxDyn(strides)), slice).ok()
    }
    fn half_bits<'a>(
        bytes: &'a [u8],
        shape: &[usize],
        strides: &[usize],
    ) -> Option<(&'a [u16], IxDyn, IxDyn)> {
        let bits: &[u16] = bytemuck::try_cast_slice(bytes).ok()?;
        Some((bits, IxDyn(shape), IxDyn(strides)))
    }
    Some(match dtype {
        DType::Bool => return None,
        DType::I8 => TensorValue::I8(typed::<i8>(bytes, shape, strides)?.into()),
        DType::U8 => TensorValue::U8(typed::<u8>(bytes, shape, strides)?.into()),
        DType::I32 => TensorValue::I32(typed::<i32>(bytes, shape, strides)?.into()),
        DType::I64 => TensorValue::I64(typed::<i64>(bytes, shape, strides)?.into()),
        DType::F32 => TensorValue::F32(typed::<f32>(bytes, shape, strides)?.into()),
        DType::F64 => TensorValue::F64(typed::<f64>(bytes, shape, strides)?.into()),
        DType::F16 => {
            let (bits, sh, st) = half_bits(bytes, shape, strides)?;
            let values: &[f16] = bits.reinterpret_cast();
            TensorValue::F16(ArrayViewD::from_shape(sh.strides(st), values).ok()?.into())
        }
        DType::BF16 => {
            let (bits, sh, st) = half_bits(bytes, shape, strides)?;
            let values: &[bf16] = bits.reinterpret_cast();
            TensorValue::BF16(ArrayViewD::from_shape(sh.strides(st), values).ok()?.into())
        }
    })
}

/// Row-major element strides of `shape` (`None` on overflow).
fn c_strides(shape: &[usize]) -> Option<Vec<usize>> {
    let mut strides = vec![0usize; shape.len()];
    let mut inner = 1usize;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = inner;
        inner = inner.checked_mul(d)?;
    }
    Some(strides)
}

/// Decodes a tensor's little-endian bytes (checked: a bool is 0 or 1).
fn decode(dtype: DType, bytes: &[u8], shape: &[usize]) -> Result<Tensor, String> {
    fn values<T: Element>(bytes: &[u8], shape: &[usize]) -> Result<ArrayD<T>, String> {
        let mut out = Vec::new();
        out.try_reserve_exact(bytes.len() / T::SIZE)
            .map_err(|_| format!("not enough memory to decode its {} bytes", bytes.len()))?;
        for (i, chunk) in bytes.chunks_exact(T::SIZE).enumerate() {
            out.push(
                T::decode(chunk)
                    .ok_or_else(|| format!("element {i} is byte {}, not a bool", chunk[0]))?,
            );
        }
        ArrayD::from_shape_vec(IxDyn(shape), out)
            .map_err(|e| format!("its data does not fit its shape: {e}"))
    }
    Ok(match dtype {
        DType::Bool => Tensor::Bool(values(bytes, shape)?),
        DType::I8 => Tensor::I8(values(bytes, shape)?),
        DType::U8 => Tensor::U8(values(bytes, shape)?),
        DType::I32 => Tensor::I32(values(bytes, shape)?),
        DType::I64 => Tensor::I64(values(bytes, shape)?),
        DType::F16 => Tensor::F16(values(bytes, shape)?),
        DType::BF16 => Tensor::BF16(values(bytes, shape)?),
        DType::F32 => Tensor::F32(values(bytes, shape)?),
        DType::F64 => Tensor::F64(values(bytes, shape)?),
    })
}

/// A borrowed view of an owned tensor.
pub(crate) fn tensor_view(t: &Tensor) -> TensorValue<'_> {
    match t {
        Tensor::Bool(a) => TensorValue::Bool(a.view().into()),
        Tensor::I8(a) => TensorValue::I8(a.view().into()),
        Tensor::U8(a) => TensorValue::U8(a.view().into()),
        Tensor::I32(a) => TensorValue::I32(a.view().into()),
        Tensor::I64(a) => TensorValue::I64(a.view().into()),
        Tensor::F16(a) => TensorValue::F16(a.view().into()),
        Tensor::BF16(a) => TensorValue::BF16(a.view().into()),
        Tensor::F32(a) => TensorValue::F32(a.view().into()),
        Tensor::F64(a) => TensorValue::F64(a.view().into()),
    }
}
