//! Escaping in the DOT writer: names with every character special to DOT (quotes,
//! backslashes, `<`, `>`, braces, `|`, `&`, newlines) come out as text, and the picture's
//! structure (quoted strings, HTML-like labels) is intact. Checked by a small DOT lexer, so
//! the test does not need Graphviz.

use super::print_dot;
use crate::fusion::fuse;
use tfn_ir::{DType, Dim, Graph, GraphParam, Op, Shape, TensorType, UnaryOp};

const NASTY: &str = "a\"b\\c<d>{e}|f&g;h";

fn ty() -> TensorType {
    TensorType { dtype: DType::F32, shape: Shape(vec![Dim::Const(4)]) }
}

/// `nasty(x) = (exp(x), extern op ...(exp(x)))`, every name [`NASTY`].
fn nasty_graph() -> Graph {
    let mut g = Graph { name: format!("{NASTY}\nsecond line"), ..Graph::default() };
    g.params.push(GraphParam { name: NASTY.into(), ty: ty() });
    let x = g.push(Op::Param(0), vec![], ty(), Default::default());
    let e = g.push(Op::Unary(UnaryOp::Exp), vec![x], ty(), Default::default());
    let ext = Op::Extern { name: NASTY.into(), attrs: vec![] };
    let y = g.push(ext, vec![e], ty(), Default::default());
    g.outputs = vec![e, y];
    g
}

/// The pieces of a DOT text the lexer recognises.
#[derive(Debug, PartialEq)]
enum Token {
    /// A quoted string, unescaped (`\"` and `\\`).
    Quoted(String),
    /// An HTML-like label's text content: tags dropped, entities decoded.
    Html(String),
    /// Anything else, one character.
    Other(char),
}

/// Lexes DOT the way Graphviz does for the constructs the writer uses; an unterminated
/// string or label, an unbalanced `<`/`>` or an unknown entity is an error.
fn lex(dot: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = dot.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '"' => {
                let mut s = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err("unterminated quoted string".into()),
                        Some('"') => break,
                        Some('\\') if matches!(chars.get(i + 1), Some('"' | '\\')) => {
                            s.push(chars[i + 1]);
                            i += 2;
                        }
                        Some('\n') => return Err(format!("newline in quoted string {s:?}")),
                        Some(&c) => {
                            s.push(c);
                            i += 1;
                        }
                    }
                }
                tokens.push(Token::Quoted(s));
                i += 1;
            }
            '<' => {
                // An HTML-like label: `<` ... `>` with nested tags; text outside tags.
                let (mut depth, mut text, mut in_tag) = (0usize, String::new(), false);
                loop {
                    let Some(&c) = chars.get(i) else { return Err("unterminated label".into()) };
                    i += 1;
                    match c {
                        '<' => {
                            depth += 1;
                            in_tag = depth > 1;
                        }
                        '>' => {
                            depth = depth.checked_sub(1).ok_or("unbalanced `>`")?;
                            in_tag = false;
                            if depth == 0 {
                                break;
                            }
                        }
                        '"' if !in_tag => return Err(format!("raw `\"` in label text {text:?}")),
                        '&' if !in_tag => {
                            let entity: String =
                                chars[i..].iter().take_while(|&&c| c != ';').collect();
                            text.push(match entity.as_str() {
                                "amp" => '&',
                                "lt" => '<',
                                "gt" => '>',
                                "quot" => '"',
                                other => return Err(format!("unknown entity `&{other};`")),
                            });
                            i += entity.chars().count() + 1;
                        }
                        c if !in_tag => text.push(c),
                        _ => {}
                    }
                }
                tokens.push(Token::Html(text));
            }
            c => {
                tokens.push(Token::Other(c));
                i += 1;
            }
        }
    }
    Ok(tokens)
}

#[test]
fn names_with_dot_syntax_stay_text() {
    let graph = nasty_graph();
    let dot = print_dot(&fuse(&graph), &graph, &|s| s.to_string());
    let tokens = lex(&dot).unwrap_or_else(|e| panic!("{e}:\n{dot}"));
    // The graph's name is a quoted string (its newline a space); the parameter's label, the
    // extern kernel's op row and the edge labels hold the name as written.
    let quoted: Vec<&str> = tokens
        .iter()
        .filter_map(|t| match t {
            Token::Quoted(s) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    let html: Vec<&str> = tokens
        .iter()
        .filter_map(|t| match t {
            Token::Html(s) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    assert!(quoted.contains(&format!("{NASTY} second line").as_str()), "{dot}");
    assert!(html.contains(&format!("{NASTY}f32[4]").as_str()), "parameter label: {dot}");
    assert!(html.iter().any(|t| t.contains(&format!(".{NASTY}[](%1)"))), "op row: {dot}");
    // Braces, `|` and `;` never occur outside strings and labels except as DOT's own syntax:
    // `{`/`}` exactly once each (the graph body), one statement per `;`.
    let other: String = tokens
        .iter()
        .filter_map(|t| match t {
            Token::Other(c) => Some(*c),
            _ => None,
        })
        .collect();
    assert_eq!(other.matches('{').count(), 1, "{other}");
    assert_eq!(other.matches('}').count(), 1, "{other}");
    assert!(!other.contains('|'), "{other}");
    let statements = dot.lines().filter(|l| l.starts_with("  ")).count();
    assert_eq!(other.matches(';').count(), statements, "{other}");
}

#[test]
fn the_lexer_rejects_unescaped_text() {
    assert!(lex("digraph \"a\"b {}").is_ok_and(|t| t.contains(&Token::Other('b'))));
    assert!(lex("digraph \"ab {}").is_err());
    assert!(lex("n [label=<a \"b>];").is_err());
    assert!(lex("n [label=<a & b>];").is_err());
    assert!(lex("n [label=<<b>x</b>];").is_err());
    let tokens = lex("n [label=<<b>x&lt;</b>>];").unwrap();
    assert!(tokens.contains(&Token::Html("x<".into())), "{tokens:?}");
}
