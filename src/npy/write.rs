//! Writing `.npy` files, atomically: every output goes to a temporary file beside its
//! destination and is renamed over it only once every output of the batch has been written,
//! so a failed write (a full disk, a missing directory) leaves every existing file as it was.
//!
//! A destination that exists and is not a regular file (a device such as `/dev/stdout`, a
//! FIFO) is written in place in the commit phase: it cannot be replaced. A symbolic link to a
//! regular file is followed, so the file it points to is replaced, not the link.

use super::header::encode_header;
use super::{Element, NpyError};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use tfn_ir::Tensor;

/// Writes `t` to `w` as a C-order `.npy` file (any strides, any shape, zero-size included).
pub fn encode(t: &Tensor, w: &mut impl Write) -> std::io::Result<()> {
    w.write_all(&encode_header(t.dtype(), t.shape()))?;
    match t {
        Tensor::Bool(a) => encode_data(a.iter().copied(), w),
        Tensor::I32(a) => encode_data(a.iter().copied(), w),
        Tensor::I64(a) => encode_data(a.iter().copied(), w),
        Tensor::F32(a) => encode_data(a.iter().copied(), w),
        Tensor::F64(a) => encode_data(a.iter().copied(), w),
        Tensor::I8(a) => encode_data(a.iter().copied(), w),
        Tensor::U8(a) => encode_data(a.iter().copied(), w),
        Tensor::F16(a) => encode_data(a.iter().copied(), w),
        Tensor::BF16(a) => encode_data(a.iter().copied(), w),
    }
}

/// Writes `values` little-endian, in 64 KiB chunks.
pub(crate) fn encode_data<T: Element>(
    values: impl Iterator<Item = T>,
    w: &mut impl Write,
) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(64 << 10);
    for v in values {
        v.encode(&mut buf);
        if buf.len() >= 64 << 10 {
            w.write_all(&buf)?;
            buf.clear();
        }
    }
    w.write_all(&buf)
}

/// Writes a tensor as a C-order `.npy` file, atomically (see [`write_all`]).
pub fn write(path: &Path, t: &Tensor) -> Result<(), NpyError> {
    write_all(&[(path, t)])
}

/// Writes each tensor to its path; on any error no destination has been changed, except when
/// renaming itself fails part way (then the error names the first path not replaced).
pub fn write_all(outputs: &[(&Path, &Tensor)]) -> Result<(), NpyError> {
    let encoders: Vec<(&Path, Encoder)> = outputs
        .iter()
        .map(|&(path, t)| {
            (path, Box::new(move |mut w: &mut dyn Write| encode(t, &mut w)) as Encoder)
        })
        .collect();
    write_all_with(&encoders)
}

/// Writes the bytes of one file.
pub(crate) type Encoder<'a> = Box<dyn Fn(&mut dyn Write) -> std::io::Result<()> + 'a>;

/// Writes each file with its encoder, all or none (the machinery of [`write_all`], for any
/// format: safetensors checkpoints use it too).
pub(crate) fn write_all_with(outputs: &[(&Path, Encoder)]) -> Result<(), NpyError> {
    let mut staged = Staged(Vec::new());
    for (path, t) in outputs {
        let err = |reason: String| NpyError::Write { path: path.display().to_string(), reason };
        let step = match destination(path).map_err(err)? {
            Dest::Replace(dest, permissions) => {
                let tmp = temp_file(&dest, t, permissions).map_err(err)?;
                Step::Rename { tmp, dest }
            }
            Dest::InPlace => Step::InPlace,
        };
        staged.0.push(Some(step));
    }
    for ((path, t), step) in outputs.iter().zip(staged.0.iter_mut()) {
        let err = |reason: String| NpyError::Write { path: path.display().to_string(), reason };
        match step.take() {
            Some(Step::Rename { tmp, dest }) => {
                if let Err(e) = std::fs::rename(&tmp, &dest) {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(err(e.to_string()));
                }
            }
            Some(Step::InPlace) => {
                let file =
                    OpenOptions::new().write(true).open(path).map_err(|e| err(e.to_string()))?;
                let mut w = BufWriter::new(file);
                t(&mut w).and_then(|_| w.flush()).map_err(|e| err(e.to_string()))?;
            }
            None => {}
        }
    }
    Ok(())
}

enum Dest {
    /// Write a temporary file and rename it to this path (keeping an existing file's
    /// permissions).
    Replace(PathBuf, Option<std::fs::Permissions>),
    /// Write the existing special file in place.
    InPlace,
}

enum Step {
    Rename { tmp: PathBuf, dest: PathBuf },
    InPlace,
}

/// Outputs staged for the commit; temporary files not yet renamed are removed when dropped.
struct Staged(Vec<Option<Step>>);

impl Drop for Staged {
    fn drop(&mut self) {
        for step in &self.0 {
            if let Some(Step::Rename { tmp, .. }) = step {
                let _ = std::fs::remove_file(tmp);
            }
        }
    }
}

fn destination(path: &Path) -> Result<Dest, String> {
    if path.file_name().is_none() {
        return Err("not a file name".into());
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err("it is a directory".into()),
        Ok(m) if m.is_file() => match std::fs::canonicalize(path) {
            Ok(dest) => Ok(Dest::Replace(dest, Some(m.permissions()))),
            Err(e) => Err(e.to_string()),
        },
        Ok(_) => Ok(Dest::InPlace),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Ok(Dest::Replace(dangling_target(path)?, None))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Where a new file at `path` goes: `path`, or what it links to when it is a dangling symbolic
/// link (as `open` would create it, and `np.save` does), not a file replacing the link.
fn dangling_target(path: &Path) -> Result<PathBuf, String> {
    let mut at = path.to_path_buf();
    // Linux's own limit on links followed in one lookup.
    for _ in 0..40 {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&at).map_err(|e| e.to_string())?;
                at = match at.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(at),
        }
    }
    Err("too many levels of symbolic links".into())
}

/// Writes a new temporary file in `dest`'s directory; removes it on failure.
fn temp_file(
    dest: &Path,
    t: &Encoder,
    permissions: Option<std::fs::Permissions>,
) -> Result<PathBuf, String> {
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut attempt = 0u32;
    let (tmp, file) = loop {
        let tmp = dir.join(format!(".{name}.{}-{attempt}.tfn-tmp", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1
            }
            Err(e) => return Err(e.to_string()),
        }
    };
    let written = (|| -> std::io::Result<()> {
        let mut w = BufWriter::new(file);
        t(&mut w)?;
        let file: File = w.into_inner().map_err(|e| e.into_error())?;
        if let Some(p) = permissions {
            file.set_permissions(p)?;
        }
        file.sync_all()
    })();
    match written {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e.to_string())
        }
    }
}
