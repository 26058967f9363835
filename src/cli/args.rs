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

/// Parses a value: `dtype[dims]`, a literal, or otherwise a `.npy` path.
pub fn parse_value(s: &str) -> Result<ArgValue, ArgParseError> {
    let s = s.trim();
    if let Some((dtype, rest)) = s.split_once('[') {
        if let Ok(dt) = dtype.trim().parse::<DType>() {
            let dims = rest
                .strip_suffix(']')
                .ok_or_else(|| ArgParseError(format!("missing `]` in tensor type `{s}`")))?;
            let dims = split_list(dims)
                .map(|d| {
                    d.parse::<usize>()
                        .map_err(|_| ArgParseError(format!("`{d}` is not a size in `{s}`")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(ArgValue::TensorType(dt, dims));
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

fn split_list(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|x| !x.is_empty())
}

/// A literal attribute, `None` when `s` does not look like one (then it is a path).
fn parse_literal(s: &str) -> Result<Option<Attr>, ArgParseError> {
    match s {
        "true" => return Ok(Some(Attr::Bool(true))),
        "false" => return Ok(Some(Attr::Bool(false))),
        _ => {}
    }
    if let Ok(dt) = s.parse::<DType>() {
        return Ok(Some(Attr::DType(dt)));
    }
    if let Some(inner) = s.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or_else(|| ArgParseError(format!("missing `]` in list `{s}`")))?;
        let items: Vec<&str> = split_list(inner).collect();
        if let Ok(ints) = items.iter().map(|i| i.parse::<i64>()).collect::<Result<Vec<_>, _>>() {
            return Ok(Some(Attr::IntList(ints)));
        }
        let floats = items
            .iter()
            .map(|i| i.parse::<f64>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| ArgParseError(format!("`{s}` is not a list of numbers")))?;
        return Ok(Some(Attr::FloatList(floats)));
    }
    if let Ok(i) = s.parse::<i64>() {
        return Ok(Some(Attr::Int(i)));
    }
    let numeric = s.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+' || c == '.');
    if numeric && !s.ends_with(".npy") {
        if let Ok(f) = s.parse::<f64>() {
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
            ("f32[1024, 4]", ArgValue::TensorType(DType::F32, vec![1024, 4])),
            ("i64[]", ArgValue::TensorType(DType::I64, vec![])),
            ("x.npy", ArgValue::NpyPath("x.npy".into())),
            ("data/1.npy", ArgValue::NpyPath("data/1.npy".into())),
        ];
        for (text, expected) in cases {
            assert_eq!(&parse_value(text).unwrap(), expected, "{text}");
        }
        assert!(parse_value("f32[3").is_err());
        assert!(parse_value("f32[a]").is_err());
        assert!(parse_value("[1, x]").is_err());
        assert_eq!(parse_named("x=2").unwrap(), ("x".into(), "2".into()));
        assert!(parse_named("x").is_err());
        assert!(parse_named("=2").is_err());
    }
}
