//! Writing named tensors as a safetensors file ([`save_safetensors`]), atomically: the file
//! is written beside its destination and renamed over it once complete (the `.npy` writer's
//! machinery, `crate::npy::write_all_with`), so a failed write leaves an existing file as it
//! was.
//!
//! Tensors are laid out by decreasing element size, then by name, after a header padded with
//! spaces to a multiple of 8 bytes: every tensor's data is aligned for its dtype, so reading
//! the file back ([`super::Weights`]) borrows every non-bool tensor in place. Any strides are
//! accepted; data is written in C order of the logical shape.

use super::error::WeightsError;
use super::file::safetensors_name;
use crate::npy::{encode_data, write_all_with, Encoder, NpyError};
use crate::value::TensorValue;
use std::io::Write;
use std::path::Path;

/// Writes `tensors` (name, tensor) to `path` as safetensors, atomically. Names must be
/// distinct and not `__metadata__` (the format's reserved key).
pub fn save_safetensors(path: &Path, tensors: &[(&str, TensorValue)]) -> Result<(), WeightsError> {
    let shown = path.display().to_string();
    let header = header(tensors)
        .map_err(|reason| WeightsError::Unwritable { path: shown.clone(), reason })?;
    let encoder: Encoder<'_> = Box::new(|mut w: &mut dyn Write| write_body(&header, &mut w));
    let outputs = [(path, encoder)];
    write_all_with(&outputs).map_err(|e| match e {
        NpyError::Write { path, reason } => WeightsError::Write { path, reason },
        other => WeightsError::Write { path: shown.clone(), reason: other.to_string() },
    })
}

/// Writes `tensors` as a safetensors file to `w` (no atomicity: see [`save_safetensors`]).
pub fn encode_safetensors(
    tensors: &[(&str, TensorValue)],
    w: &mut impl Write,
) -> Result<(), String> {
    let header = header(tensors)?;
    write_body(&header, w).map_err(|e| e.to_string())
}

/// The header's bytes (length prefix included) and the tensors in file order.
struct Header<'t, 'a> {
    bytes: Vec<u8>,
    order: Vec<&'t TensorValue<'a>>,
}

fn header<'t, 'a>(tensors: &'t [(&str, TensorValue<'a>)]) -> Result<Header<'t, 'a>, String> {
    let mut order: Vec<&(&str, TensorValue)> = tensors.iter().collect();
    for (i, (name, _)) in tensors.iter().enumerate() {
        if *name == "__metadata__" {
            return Err("`__metadata__` is reserved by the safetensors format".into());
        }
        if tensors[..i].iter().any(|(n, _)| n == name) {
            return Err(format!("two tensors are named `{name}`"));
        }
    }
    order.sort_by(|(na, a), (nb, b)| {
        b.dtype().size_bytes().cmp(&a.dtype().size_bytes()).then_with(|| na.cmp(nb))
    });
    let mut json = String::from("{");
    let mut offset = 0usize;
    for (k, (name, t)) in order.iter().enumerate() {
        let elements = t.shape().iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        let bytes = elements.and_then(|n| n.checked_mul(t.dtype().size_bytes()));
        let end = bytes.and_then(|b| offset.checked_add(b)).ok_or("the tensors are too large")?;
        if k > 0 {
            json.push(',');
        }
        let shape: Vec<String> = t.shape().iter().map(usize::to_string).collect();
        json.push_str(&format!(
            "{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{offset},{end}]}}",
            json_string(name),
            safetensors_name(t.dtype()),
            shape.join(",")
        ));
        offset = end;
    }
    json.push('}');
    while (8 + json.len()) % 8 != 0 {
        json.push(' ');
    }
    let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(json.as_bytes());
    Ok(Header { bytes, order: order.into_iter().map(|(_, t)| t).collect() })
}

fn write_body(h: &Header, w: &mut impl Write) -> std::io::Result<()> {
    w.write_all(&h.bytes)?;
    for t in &h.order {
        tfn_ir::each_dtype!(t, TensorValue, a => encode_data(a.iter().copied(), w))?;
    }
    Ok(())
}

/// A JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
