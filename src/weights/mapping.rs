//! [`Mapping`]: which checkpoint tensor binds which function parameter, when their names
//! differ.
//!
//! An entry is written `param=pattern` or `param=pattern:T`:
//! - `pattern` is a tensor name; `{i}` in it stands for `0, 1, 2, …`: the tensors
//!   `i = 0, 1, …` (up to the first missing `i`) are stacked along a new leading axis, the
//!   loop axis of a `for` over layers (`wq=encoder.layer.{i}.attention.self.query.weight`);
//! - `:T` says the tensor is stored `[out, in]` (PyTorch's `nn.Linear`) and the parameter
//!   takes `[in, out]`: its last two axes are swapped, as a strided view (never a copy).
//!
//! A parameter without an entry is bound from the tensor of its own name.

use super::error::WeightsError;

/// One `param=pattern[:T]` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapEntry {
    pub param: String,
    /// A tensor name, with `{i}` where the layer index goes.
    pub pattern: String,
    /// Swap the last two axes (`:T`).
    pub transpose: bool,
}

impl MapEntry {
    /// Whether the pattern stacks tensors (`{i}`).
    pub fn stacks(&self) -> bool {
        self.pattern.contains("{i}")
    }

    /// The tensor name for layer `i`.
    pub(super) fn name(&self, i: usize) -> String {
        self.pattern.replace("{i}", &i.to_string())
    }
}

impl std::str::FromStr for MapEntry {
    type Err = WeightsError;

    /// Parses `param=pattern[:T]`.
    fn from_str(text: &str) -> Result<MapEntry, WeightsError> {
        let bad = |why: &str| {
            WeightsError::Mapping(format!(
                "mapping `{text}`: {why} (expected `param=tensor-name`, `{{i}}` for stacked layers, `:T` to transpose)"
            ))
        };
        let (param, pattern) = text.split_once('=').ok_or_else(|| bad("no `=`"))?;
        let (param, pattern) = (param.trim(), pattern.trim());
        let (pattern, transpose) = match pattern.strip_suffix(":T") {
            Some(p) => (p, true),
            None => (pattern, false),
        };
        if param.is_empty() || !param.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return Err(bad("the parameter name is not an identifier"));
        }
        if pattern.is_empty() {
            return Err(bad("the tensor name is empty"));
        }
        Ok(MapEntry { param: param.to_string(), pattern: pattern.to_string(), transpose })
    }
}

impl std::fmt::Display for MapEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}{}", self.param, self.pattern, if self.transpose { ":T" } else { "" })
    }
}

/// A set of entries, at most one per parameter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mapping {
    entries: Vec<MapEntry>,
}

impl Mapping {
    /// The empty mapping: every parameter by its own name.
    pub fn new() -> Mapping {
        Mapping::default()
    }

    /// Parses entries `param=pattern[:T]`; a parameter mapped twice is an error.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Mapping, WeightsError> {
        let mut m = Mapping::new();
        for e in entries {
            m.push(e.as_ref().parse()?)?;
        }
        Ok(m)
    }

    /// Adds `param=pattern` (`transpose`: `:T`); a parameter mapped twice is an error.
    pub fn with(
        mut self,
        param: &str,
        pattern: &str,
        transpose: bool,
    ) -> Result<Mapping, WeightsError> {
        let text = format!("{param}={pattern}{}", if transpose { ":T" } else { "" });
        self.push(text.parse()?)?;
        Ok(self)
    }

    /// Adds an entry; a parameter mapped twice is an error.
    pub fn push(&mut self, entry: MapEntry) -> Result<(), WeightsError> {
        if let Some(old) = self.entries.iter().find(|e| e.param == entry.param) {
            return Err(WeightsError::Mapping(format!(
                "parameter `{}` is mapped twice: `{old}` and `{entry}`",
                entry.param
            )));
        }
        self.entries.push(entry);
        Ok(())
    }

    pub fn entries(&self) -> &[MapEntry] {
        &self.entries
    }

    pub fn get(&self, param: &str) -> Option<&MapEntry> {
        self.entries.iter().find(|e| e.param == param)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_entries_and_refuses_bad_ones() {
        let e: MapEntry = "wq=enc.layer.{i}.q.weight:T".parse().unwrap();
        assert_eq!(e.param, "wq");
        assert_eq!(e.pattern, "enc.layer.{i}.q.weight");
        assert!(e.transpose && e.stacks());
        assert_eq!(e.name(3), "enc.layer.3.q.weight");
        assert_eq!(e.to_string(), "wq=enc.layer.{i}.q.weight:T");
        let plain: MapEntry = "b = bias".parse().unwrap();
        assert!(!plain.transpose && !plain.stacks());
        for bad in ["wq", "=x", "w q=x", "w="] {
            let err = bad.parse::<MapEntry>().expect_err(bad).to_string();
            assert!(err.contains(bad), "{err}");
        }
        let twice = Mapping::parse(&["w=a", "w=b"]).expect_err("twice").to_string();
        assert!(twice.contains("`w` is mapped twice"), "{twice}");
    }
}
