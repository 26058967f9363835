//! Reading and writing tensors as NumPy `.npy` files (dtypes bool, i32, i64, f32, f64; C or
//! Fortran order on read, C order on write).

use ndarray::ArrayD;
use ndarray_npy::{ReadNpyExt, WriteNpyExt};
use std::io::Cursor;
use std::path::Path;
use tfn_ir::Tensor;

#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    #[error("cannot read `{path}`: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("`{path}` is not a .npy file tfn can read: {reason}")]
    Format { path: String, reason: String },
    #[error("cannot write `{path}`: {reason}")]
    Write { path: String, reason: String },
}

/// The `descr` entry of a `.npy` header, e.g. `<f4`.
fn descr(bytes: &[u8]) -> Option<String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return None;
    }
    let header = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).into_owned();
    let at = header.find("'descr'")?;
    let rest = &header[at + 7..];
    let open = rest.find('\'')?;
    let rest = &rest[open + 1..];
    let close = rest.find('\'')?;
    Some(rest[..close].to_string())
}

/// Reads a `.npy` file of any supported dtype.
pub fn read(path: &Path) -> Result<Tensor, NpyError> {
    let shown = path.display().to_string();
    let bytes =
        std::fs::read(path).map_err(|source| NpyError::Io { path: shown.clone(), source })?;
    let format = |reason: String| NpyError::Format { path: shown.clone(), reason };
    let d = descr(&bytes).ok_or_else(|| format("missing or malformed NumPy header".into()))?;
    let cursor = Cursor::new(&bytes);
    let result = match d.as_str() {
        "|b1" => ArrayD::<bool>::read_npy(cursor).map(Tensor::Bool),
        "<i4" => ArrayD::<i32>::read_npy(cursor).map(Tensor::I32),
        "<i8" => ArrayD::<i64>::read_npy(cursor).map(Tensor::I64),
        "<f4" => ArrayD::<f32>::read_npy(cursor).map(Tensor::F32),
        "<f8" => ArrayD::<f64>::read_npy(cursor).map(Tensor::F64),
        other => {
            return Err(format(format!(
                "dtype `{other}` is not supported (use bool, int32, int64, float32 or float64)"
            )))
        }
    };
    result.map_err(|e| format(e.to_string()))
}

/// Writes a tensor as a C-order `.npy` file.
pub fn write(path: &Path, t: &Tensor) -> Result<(), NpyError> {
    let mut buf = Vec::new();
    let r = match t {
        Tensor::Bool(a) => a.write_npy(&mut buf),
        Tensor::I32(a) => a.write_npy(&mut buf),
        Tensor::I64(a) => a.write_npy(&mut buf),
        Tensor::F32(a) => a.write_npy(&mut buf),
        Tensor::F64(a) => a.write_npy(&mut buf),
    };
    let shown = path.display().to_string();
    r.map_err(|e| NpyError::Write { path: shown.clone(), reason: e.to_string() })?;
    std::fs::write(path, buf).map_err(|e| NpyError::Write { path: shown, reason: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_dtype() {
        let dir = std::env::temp_dir().join(format!("tfn-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cases = [
            Tensor::Bool(ArrayD::from_shape_vec(vec![2], vec![true, false]).unwrap()),
            Tensor::I32(ArrayD::from_shape_vec(vec![1, 2], vec![1, -2]).unwrap()),
            Tensor::I64(ArrayD::from_shape_vec(vec![0], vec![]).unwrap()),
            Tensor::F32(ArrayD::from_shape_vec(vec![], vec![0.5]).unwrap()),
            Tensor::F64(ArrayD::from_shape_vec(vec![2, 1], vec![1.0, f64::NAN]).unwrap()),
        ];
        for (i, t) in cases.iter().enumerate() {
            let p = dir.join(format!("{i}.npy"));
            write(&p, t).unwrap();
            let back = read(&p).unwrap();
            assert_eq!(back.dtype(), t.dtype());
            assert_eq!(back.shape(), t.shape());
        }
        assert!(matches!(read(&dir.join("missing.npy")), Err(NpyError::Io { .. })));
        std::fs::write(dir.join("bad.npy"), b"not numpy").unwrap();
        assert!(matches!(read(&dir.join("bad.npy")), Err(NpyError::Format { .. })));
    }
}
