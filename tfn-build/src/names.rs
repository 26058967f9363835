//! Rust spellings of `.tfn` names: identifiers that are Rust keywords become raw identifiers
//! (or get a trailing `_` where Rust has no raw form), overloads become `name_suffix`, and
//! argument structs are `CamelCase` + `Args`.

/// Every Rust keyword (strict, reserved and edition-2018+) an identifier may collide with.
const KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// Keywords that cannot be raw identifiers.
const NOT_RAW: &[&str] = &["crate", "self", "Self", "super", "_"];

/// `name` as a Rust identifier (a binding, field or method name).
pub fn ident(name: &str) -> String {
    if NOT_RAW.contains(&name) {
        format!("{name}_")
    } else if KEYWORDS.contains(&name) {
        format!("r#{name}")
    } else {
        name.to_string()
    }
}

/// The method name of a function or overload: `scale`, `scale.scalar` → `scale_scalar`.
pub fn method(name: &str, overload: Option<&str>) -> String {
    match overload {
        Some(o) => format!("{name}_{o}"),
        None => name.to_string(),
    }
}

/// `layer_norm` → `LayerNorm`, `scale_scalar` → `ScaleScalar`.
pub fn camel(snake: &str) -> String {
    let mut out = String::new();
    for part in snake.split('_').filter(|p| !p.is_empty()) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    if out.is_empty() {
        out.push('F');
    }
    out
}

/// `base`, or `base_`, `base__`, ... : the first spelling not in `taken`.
pub fn fresh(base: &str, taken: &[String]) -> String {
    let mut name = base.to_string();
    while taken.contains(&name) {
        name.push('_');
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_become_raw_or_suffixed() {
        assert_eq!(ident("type"), "r#type");
        assert_eq!(ident("self"), "self_");
        assert_eq!(ident("x"), "x");
    }

    #[test]
    fn camel_case_of_methods() {
        assert_eq!(camel("layer_norm"), "LayerNorm");
        assert_eq!(camel(&method("scale", Some("scalar"))), "ScaleScalar");
        assert_eq!(camel("_x__y"), "XY");
    }

    #[test]
    fn fresh_avoids_taken_names() {
        let taken = vec!["out".to_string(), "out_".to_string()];
        assert_eq!(fresh("out", &taken), "out__");
        assert_eq!(fresh("cotangent", &taken), "cotangent");
    }
}
