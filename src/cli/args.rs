//! Parsing of `--arg NAME=VALUE` command-line arguments.
//!
//! `run` takes a path to a `.npy` file or a literal (`2`, `0.5`, `true`, `[0, 1]`, `f64`);
//! `ir` and `bench` take a tensor type `f32[1024, 1024]` instead of a file.

use std::fmt;
use tfn_ir::{Attr, DType};

/// The value part of `--arg NAME=VALUE`.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// A `.npy` file to load.
    NpyPath(String),
    /// A tensor type with concrete sizes, for `ir` and `bench` (random data of that shape).
    TensorType(DType, Vec<usize>),
    /// A literal attribute.
    Literal(Attr),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgParseError(pub String);

impl fmt::Display for ArgParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ArgParseError {}

/// Splits `NAME=VALUE` (for clap's `value_parser`).
pub fn parse_named(s: &str) -> Result<(String, String), ArgParseError> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| ArgParseError(format!("expected NAME=VALUE, got `{s}`")))?;
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(ArgParseError(format!("`{name}` is not a parameter name")));
    }
    Ok((name.to_string(), value.trim().to_string()))
}

/// The first name given twice among `--arg NAME=VALUE` pairs.
pub fn repeated_name(args: &[(String, String)]) -> Option<&str> {
    let mut seen = std::collections::HashSet::new();
    args.iter().map(|(n, _)| n.as_str()).find(|n| !seen.insert(*n))
}

/// Parses a value: `dtype[dims]`, a literal, or otherwise a `.npy` path.
pub fn parse_value(s: &str) -> Result<ArgValue, ArgParseError> {
    let s = s.trim();
    if let Some((dtype, rest)) = s.split_once('[') {
        if let Ok(dt) = dtype.trim().parse::<DType>() {
            let dims = rest
                .strip_suffix(']')
                .ok_or_else(|| ArgParseError(format!("missing `]` in tensor type `{s}`")))?;
            let dims = split_list(dims)
                .map_err(|e| ArgParseError(format!("{e} in tensor type `{s}`")))?
                .into_iter()
                .map(|d| {
                    d.parse::<usize>()
                        .map_err(|_| ArgParseError(format!("`{d}` is not a size in `{s}`")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(ArgValue::TensorType(dt, dims));
        }
        // `f33[5, 3]`: a tensor type with a misspelt dtype (unless a file has that name).
        let name = dtype.trim();
        let ident = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if ident && s.ends_with(']') && !std::path::Path::new(s).exists() {
            let known: Vec<String> = DType::ALL.iter().map(|d| d.to_string()).collect();
            return Err(ArgParseError(format!(
                "unknown dtype `{name}` in tensor type `{s}` (the dtypes: {})",
                known.join(", ")
            )));
        }
    }
    if let Some(lit) = parse_literal(s)? {
        return Ok(ArgValue::Literal(lit));
    }
    if s.is_empty() {
        return Err(ArgParseError("empty value".into()));
    }
    Ok(ArgValue::NpyPath(s.to_string()))
}

/// The comma-separated items of a list's inside: none for an empty (or blank) list, and an
/// error for an empty item (`[,]`, `[1,,2]`, `[1,]`).
fn split_list(s: &str) -> Result<Vec<&str>, String> {
    if s.trim().is_empty() {
        return Ok(Vec::new());
    }
    let items: Vec<&str> = s.split(',').map(str::trim).collect();
    match items.iter().position(|x| x.is_empty()) {
        Some(i) => Err(format!("item {i} is empty")),
        None => Ok(items),
    }
}

/// A float literal; one that overflows a 64-bit float (`1e999`) is an error, not infinity.
fn parse_float(text: &str, whole: &str) -> Result<Option<f64>, ArgParseError> {
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() || !looks_numeric(text) => Ok(Some(f)),
        Ok(_) => {
            let within = if text == whole { String::new() } else { format!(" in `{whole}`") };
            Err(ArgParseError(format!(
                "`{text}`{within} is out of range: not a finite 64-bit float"
            )))
        }
        Err(_) => Ok(None),
    }
}

/// Digits with an optional sign, point and exponent (not a word such as `inf` or `nan`).
fn looks_numeric(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_digit() || matches!(c, '+' | '-' | '.' | 'e' | 'E'))
}

/// Digits with an optional sign.
fn is_integer(s: &str) -> bool {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

/// The error of an integer literal `text` outside `i64`.
fn out_of_range(text: &str) -> ArgParseError {
    ArgParseError(format!(
        "`{text}` is out of range: not a 64-bit integer (from {} to {})",
        i64::MIN,
        i64::MAX
    ))
}

/// A literal attribute, `None` when `s` does not look like one (then it is a path).
fn parse_literal(s: &str) -> Result<Option<Attr>, ArgParseError> {
    match s {
        "true" => return Ok(Some(Attr::Bool(true))),
        "false" => return Ok(Some(Attr::Bool(false))),
        // The language's own literals (a file of that name is `./inf`).
        "inf" | "+inf" => return Ok(Some(Attr::Float(f64::INFINITY))),
        "-inf" => return Ok(Some(Attr::Float(f64::NEG_INFINITY))),
        "nan" => return Ok(Some(Attr::Float(f64::NAN))),
        _ => {}
    }
    if let Ok(dt) = s.parse::<DType>() {
        return Ok(Some(Attr::DType(dt)));
    }
    if let Some(inner) = s.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or_else(|| ArgParseError(format!("missing `]` in list `{s}`")))?;
        let items = split_list(inner).map_err(|e| ArgParseError(format!("{e} in list `{s}`")))?;
        if let Ok(ints) = items.iter().map(|i| i.parse::<i64>()).collect::<Result<Vec<_>, _>>() {
            return Ok(Some(Attr::IntList(ints)));
        }
        // An integer item is an integer, as a scalar is: out of range, an error (never a
        // float list that a later `Int[]` parameter refuses in other words).
        if let Some(item) = items.iter().find(|i| is_integer(i) && i.parse::<i64>().is_err()) {
            return Err(out_of_range(&format!("{item}` in `{s}")));
        }
        if items.iter().any(|i| i.ends_with(".npy")) {
            return Err(ArgParseError(format!(
                "`{s}` is a list of files, and a `Tensor[]` argument cannot be given on the \
                 command line (one --arg is one tensor): call such a function from Rust or Python"
            )));
        }
        let mut floats = Vec::new();
        for item in items {
            let f = parse_float(item, s)?
                .ok_or_else(|| ArgParseError(format!("`{s}` is not a list of numbers")))?;
            floats.push(f);
        }
        return Ok(Some(Attr::FloatList(floats)));
    }
    if let Ok(i) = s.parse::<i64>() {
        return Ok(Some(Attr::Int(i)));
    }
    if is_integer(s) {
        return Err(out_of_range(s));
    }
    let numeric = s.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+' || c == '.');
    if numeric && !s.ends_with(".npy") {
        if let Some(f) = parse_float(s, s)? {
            return Ok(Some(Attr::Float(f)));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind_of_value() {
        let cases: &[(&str, ArgValue)] = &[
            ("2", ArgValue::Literal(Attr::Int(2))),
            ("-1", ArgValue::Literal(Attr::Int(-1))),
            ("0.5", ArgValue::Literal(Attr::Float(0.5))),
            ("1e-5", ArgValue::Literal(Attr::Float(1e-5))),
            ("true", ArgValue::Literal(Attr::Bool(true))),
            ("f64", ArgValue::Literal(Attr::DType(DType::F64))),
            ("[0, 1]", ArgValue::Literal(Attr::IntList(vec![0, 1]))),
            ("[0.5, 1]", ArgValue::Literal(Attr::FloatList(vec![0.5, 1.0]))),
            ("[]", ArgValue::Literal(Attr::IntList(vec![]))),
            ("inf", ArgValue::Literal(Attr::Float(f64::INFINITY))),
            ("-inf", ArgValue::Literal(Attr::Float(f64::NEG_INFINITY))),
            ("./inf", ArgValue::NpyPath("./inf".into())),
            ("f32[1024, 4]", ArgValue::TensorType(DType::F32, vec![1024, 4])),
            ("i64[]", ArgValue::TensorType(DType::I64, vec![])),
            ("x.npy", ArgValue::NpyPath("x.npy".into())),
            ("data/1.npy", ArgValue::NpyPath("data/1.npy".into())),
        ];
        for (text, expected) in cases {
            assert_eq!(&parse_value(text).unwrap(), expected, "{text}");
        }
        for malformed in ["f32[,]", "f32[1,,2]", "f32[2,]", "f32[,2]", "[1,,2]", "[,]", "[1e999]"] {
            assert!(parse_value(malformed).is_err(), "{malformed} must be rejected");
        }
        for overflow in [
            "1e999",
            "-1e999",
            "1e309",
            "[0.5, 1e400]",
            "99999999999999999999",
            "-9223372036854775809",
            "[0, 9223372036854775808]",
            "[1.5, 99999999999999999999999]",
        ] {
            let e = parse_value(overflow).expect_err(overflow);
            assert!(e.0.contains("out of range"), "{overflow}: {e}");
        }
        assert_eq!(parse_value("f32[ ]").unwrap(), ArgValue::TensorType(DType::F32, vec![]));
        assert_eq!(parse_value("1.7e308").unwrap(), ArgValue::Literal(Attr::Float(1.7e308)));
        assert!(parse_value("f32[3").is_err());
        assert!(parse_value("f32[a]").is_err());
        let e = parse_value("f33[5, 3, 4]").expect_err("a misspelt dtype");
        assert!(e.0.contains("unknown dtype `f33`"), "{e}");
        assert_eq!(parse_value("data[1].npy").unwrap(), ArgValue::NpyPath("data[1].npy".into()));
        assert!(parse_value("[1, x]").is_err());
        let e = parse_value("[a.npy, b.npy]").expect_err("a list of tensors");
        assert!(e.0.contains("a `Tensor[]` argument cannot be given on the command line"), "{e}");
        assert_eq!(parse_named("x=2").unwrap(), ("x".into(), "2".into()));
        assert!(parse_named("x").is_err());
        assert!(parse_named("=2").is_err());
    }
}
