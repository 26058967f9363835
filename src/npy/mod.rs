//! Reading and writing tensors as NumPy `.npy` files (dtypes bool, i8, u8, i32, i64, f16, bf16,
//! f32, f64 — bf16 as ml_dtypes writes it, a 2-byte void `<V2`; C or
//! Fortran order on read, C order on write).
//!
//! Reading never trusts the header: the declared data size is compared with the file before
//! anything is allocated (a header claiming 10^10 elements over 24 bytes is "truncated", not an
//! allocation failure), allocation failures are errors, data is decoded in bounded chunks, and
//! a stream that is not a file (`/dev/zero`) is read no further than the header says. Writing
//! is atomic: see [`write_all`].

mod header;
mod write;

use header::{read_header, Header};
use ndarray::{ArrayD, IxDyn};
use std::io::Read;
use std::path::Path;
use tfn_ir::half;
use tfn_ir::{DType, Tensor};

pub use write::{encode, write, write_all};
pub(crate) use write::{encode_data, write_all_with, Encoder};

#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    #[error("cannot read `{path}`: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("`{path}` is not a .npy file tfn can read: {reason}")]
    Format { path: String, reason: String },
    /// The header declares more data than the file holds.
    #[error("`{path}` is truncated: its header declares {declared} ({expected} bytes of data) but the file holds only {found} bytes of data")]
    Truncated { path: String, declared: String, expected: u64, found: u64 },
    #[error("cannot write `{path}`: {reason}")]
    Write { path: String, reason: String },
}

/// An element type of a `.npy` file: little-endian, fixed size.
pub(crate) trait Element: Copy {
    const SIZE: usize;
    /// `None` when the bytes are not a valid value (a bool other than 0 or 1).
    fn decode(bytes: &[u8]) -> Option<Self>;
    fn encode(self, out: &mut Vec<u8>);
}

macro_rules! element {
    ($t:ty) => {
        impl Element for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn decode(bytes: &[u8]) -> Option<Self> {
                bytes.try_into().ok().map(<$t>::from_le_bytes)
            }
            fn encode(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    };
}
element!(i8);
element!(u8);
element!(i32);
element!(i64);
element!(f32);
element!(f64);

impl Element for half::f16 {
    const SIZE: usize = 2;
    fn decode(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(|b| half::f16::from_bits(u16::from_le_bytes(b)))
    }
    fn encode(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bits().to_le_bytes());
    }
}

impl Element for half::bf16 {
    const SIZE: usize = 2;
    fn decode(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(|b| half::bf16::from_bits(u16::from_le_bytes(b)))
    }
    fn encode(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bits().to_le_bytes());
    }
}

impl Element for bool {
    const SIZE: usize = 1;
    fn decode(bytes: &[u8]) -> Option<Self> {
        match bytes {
            [0] => Some(false),
            [1] => Some(true),
            _ => None,
        }
    }
    fn encode(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
}

/// Reads a `.npy` file of any supported dtype.
pub fn read(path: &Path) -> Result<Tensor, NpyError> {
    let shown = path.display().to_string();
    let io = |source| NpyError::Io { path: shown.clone(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    let format = |reason: String| NpyError::Format { path: shown.clone(), reason };
    if meta.is_dir() {
        return Err(format("it is a directory".into()));
    }
    let mut r = std::io::BufReader::new(file);
    let header = read_header(&mut r).map_err(format)?;
    let truncated = |found: u64| NpyError::Truncated {
        path: shown.clone(),
        declared: format!("{}{:?}", header.dtype, header.shape),
        expected: header.data_bytes as u64,
        found,
    };
    if meta.is_file() {
        // Known size: refuse a short file before allocating what its header claims.
        let found = meta.len().saturating_sub(header.header_bytes as u64);
        if found < header.data_bytes as u64 {
            return Err(truncated(found));
        }
    }
    let data = match header.dtype {
        DType::Bool => read_data(&mut r, &header).map(|a| a.map(Tensor::Bool)),
        DType::I32 => read_data(&mut r, &header).map(|a| a.map(Tensor::I32)),
        DType::I64 => read_data(&mut r, &header).map(|a| a.map(Tensor::I64)),
        DType::F32 => read_data(&mut r, &header).map(|a| a.map(Tensor::F32)),
        DType::F64 => read_data(&mut r, &header).map(|a| a.map(Tensor::F64)),
        DType::I8 => read_data(&mut r, &header).map(|a| a.map(Tensor::I8)),
        DType::U8 => read_data(&mut r, &header).map(|a| a.map(Tensor::U8)),
        DType::F16 => read_data(&mut r, &header).map(|a| a.map(Tensor::F16)),
        DType::BF16 => read_data(&mut r, &header).map(|a| a.map(Tensor::BF16)),
    };
    match data {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(found)) => Err(truncated(found)),
        Err(DataError::Io(source)) => Err(io(source)),
        Err(DataError::Format(reason)) => Err(format(reason)),
    }
}

enum DataError {
    Io(std::io::Error),
    Format(String),
}

/// Reads `r.read` until `buf` is full or the stream ends; the number of bytes read.
fn fill(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Decodes the data after the header in chunks. `Ok(Err(found))`: the stream ended after
/// `found` bytes of data, fewer than the header declares.
fn read_data<T: Element>(
    r: &mut impl Read,
    h: &Header,
) -> Result<Result<ArrayD<T>, u64>, DataError> {
    // Advised onto huge pages from 4 MB on, as NumPy's arrays are (`huge_pages`).
    let mut values: Vec<T> =
        tfn_backend::huge_pages::with_capacity(h.elements).ok_or_else(|| {
            DataError::Format(format!(
                "not enough memory for its {}{:?} ({} bytes)",
                h.dtype, h.shape, h.data_bytes
            ))
        })?;
    let mut buf = vec![0u8; (64 << 10) / T::SIZE * T::SIZE];
    let mut done = 0usize;
    while done < h.data_bytes {
        let want = (h.data_bytes - done).min(buf.len());
        let got = fill(r, &mut buf[..want]).map_err(DataError::Io)?;
        if got < want {
            return Ok(Err((done + got) as u64));
        }
        for (i, chunk) in buf[..got].chunks_exact(T::SIZE).enumerate() {
            let value = T::decode(chunk).ok_or_else(|| {
                let index = done / T::SIZE + i;
                DataError::Format(format!("element {index} is byte {}, not a bool", chunk[0]))
            })?;
            values.push(value);
        }
        done += got;
    }
    if fill(r, &mut [0u8; 1]).map_err(DataError::Io)? != 0 {
        return Err(DataError::Format(format!(
            "it has bytes after the {} declared by its header {}{:?}",
            h.data_bytes, h.dtype, h.shape
        )));
    }
    let malformed = |_| DataError::Format("the data does not fit the shape".into());
    if !h.fortran_order {
        return ArrayD::from_shape_vec(IxDyn(&h.shape), values).map(Ok).map_err(malformed);
    }
    // Fortran order: the reversed shape in C order, transposed, then laid out in C order.
    let reversed: Vec<usize> = h.shape.iter().rev().copied().collect();
    let a = ArrayD::from_shape_vec(IxDyn(&reversed), values).map_err(malformed)?;
    Ok(Ok(a.reversed_axes().as_standard_layout().into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Dimension, ShapeBuilder};

    fn scratch() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("tfn-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn every_dtype(shape: &[usize]) -> Vec<Tensor> {
        let n: usize = shape.iter().product();
        let sh = || IxDyn(shape);
        vec![
            Tensor::Bool(ArrayD::from_shape_fn(sh(), |i| i.slice().iter().sum::<usize>() % 2 == 0)),
            Tensor::I32(
                ArrayD::from_shape_vec(sh(), (0..n as i32).map(|v| v - 3).collect()).unwrap(),
            ),
            Tensor::I64(
                ArrayD::from_shape_vec(sh(), (0..n as i64).map(|v| v << 40).collect()).unwrap(),
            ),
            Tensor::F32(
                ArrayD::from_shape_vec(sh(), (0..n).map(|v| v as f32 * 0.5).collect()).unwrap(),
            ),
            Tensor::F64(
                ArrayD::from_shape_vec(sh(), (0..n).map(|v| -(v as f64) / 3.0).collect()).unwrap(),
            ),
        ]
    }

    #[test]
    fn round_trips_every_dtype_and_zero_size_shapes() {
        let dir = scratch();
        for shape in [&[][..], &[2], &[1, 2], &[0], &[0, 3], &[3, 0, 1], &[2, 3, 4]] {
            for t in every_dtype(shape) {
                let p = dir.join(format!("rt-{}-{shape:?}.npy", t.dtype()));
                write(&p, &t).unwrap_or_else(|e| panic!("{shape:?} {}: {e}", t.dtype()));
                let back = read(&p).unwrap_or_else(|e| panic!("{shape:?} {}: {e}", t.dtype()));
                assert_eq!(back, t, "{shape:?}");
            }
        }
        // Zero-size arrays with the strides results can have (these made `ndarray-npy` panic).
        for (shape, strides) in [(&[0usize, 3][..], &[1usize, 0][..]), (&[3, 0, 1], &[0, 0, 0])] {
            let dims = IxDyn(shape).strides(IxDyn(strides));
            let t = Tensor::F32(ArrayD::from_shape_vec(dims, vec![]).unwrap());
            write(&dir.join("z.npy"), &t).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
            assert_eq!(read(&dir.join("z.npy")).unwrap().shape(), shape);
        }
        // Any strides: a transposed view is written in C order of its logical shape.
        let a = ArrayD::from_shape_vec(IxDyn(&[2, 3]), (0..6).map(|v| v as f32).collect());
        let t = Tensor::F32(a.unwrap().reversed_axes());
        write(&dir.join("t.npy"), &t).unwrap();
        assert_eq!(read(&dir.join("t.npy")).unwrap(), t);
        let f = ArrayD::from_shape_vec(IxDyn(&[3, 2]), vec![0f32, 3.0, 1.0, 4.0, 2.0, 5.0]);
        assert_eq!(Tensor::F32(f.unwrap()), t);
    }

    #[test]
    fn rejects_bad_files_without_panicking() {
        let dir = scratch();
        assert!(matches!(read(&dir.join("missing.npy")), Err(NpyError::Io { .. })));
        assert!(matches!(read(&dir), Err(NpyError::Format { .. })));
        let mut good = Vec::new();
        encode(&every_dtype(&[2, 3])[3], &mut good).unwrap();
        let header_len = header::encode_header(DType::F32, &[2, 3]).len();
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("garbage", b"not numpy".to_vec()),
            ("empty", Vec::new()),
            ("header only", good[..header_len].to_vec()),
            ("short data", good[..good.len() - 1].to_vec()),
            ("trailing data", [&good[..], &[0u8]].concat()),
            ("cut header", good[..20].to_vec()),
            ("bad version", [&good[..6], &[9, 0], &good[8..]].concat()),
            ("bad bool", {
                let mut b = header::encode_header(DType::Bool, &[2]);
                b.extend_from_slice(&[1, 7]);
                b
            }),
        ];
        for (what, bytes) in cases {
            let p = dir.join("bad.npy");
            std::fs::write(&p, bytes).unwrap();
            let e = read(&p).expect_err(what);
            assert!(e.to_string().contains("bad.npy"), "{what}: {e}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn replacing_keeps_permissions_and_links() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch();
        let (target, link) = (dir.join("target.npy"), dir.join("link.npy"));
        std::fs::write(&target, b"old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let t = every_dtype(&[2])[1].clone();
        write(&link, &t).unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(read(&target).unwrap(), t);
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_huge_header_over_little_data_is_truncated_not_an_allocation() {
        let dir = scratch();
        let mut bytes = header::encode_header(DType::F64, &[10_000_000_000]);
        bytes.extend_from_slice(&[0u8; 24]);
        let p = dir.join("huge.npy");
        std::fs::write(&p, bytes).unwrap();
        let e = read(&p).expect_err("truncated");
        assert!(matches!(e, NpyError::Truncated { found: 24, .. }), "{e}");
        assert!(e.to_string().contains("truncated"), "{e}");
    }
}
