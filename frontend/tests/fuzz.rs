//! Robustness: random and mutated sources never make parsing or checking panic, and every
//! source that loads prints to text that loads again to the same text (print/parse round trip).
//!
//! The corpus is the `parse` file-test cases (which include every example of the language
//! spec), the prelude and `std:nn`. Each case applies 1–4 seeded mutations (delete, insert,
//! duplicate or swap characters or tokens, truncate) or generates a token soup. The number of
//! cases is `TFN_FUZZ_CASES` (default 2000), the seed `TFN_FUZZ_SEED` (default 1).

use std::path::Path;
use tfn_frontend::{load_source, prelude, print_library, MemLoader, PRELUDE, STD_NN};
use tfn_ir::Library;
use tfn_test_utils::{fuzz_cases, fuzz_seed, Rng};

const TOKENS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    ":",
    "=",
    "==",
    "=>",
    "->",
    "<",
    ">",
    "<=",
    "-",
    "+",
    "*",
    "**",
    "/",
    ".",
    "?x",
    "\n",
    " ",
    "\"",
    "//",
    "/*",
    "*/",
    "op",
    "extern",
    "fn",
    "let",
    "if",
    "else",
    "return",
    "grad",
    "rewrite",
    "use",
    "var",
    "for",
    "in",
    "..",
    "while",
    ", at most",
    ", checkpoint",
    "x[0]",
    "shape",
    "dtype",
    "broadcast",
    "Tensor",
    "Tensor<T>",
    "Tensor<f32>",
    "Int[]",
    "Scalar",
    "DType",
    "Bool",
    "x",
    "y",
    "result",
    "T",
    "f32",
    "i64",
    "true",
    "0",
    "1",
    "-1",
    "0.5",
    "1e-5",
    "99999999999999999999",
    "exp",
    "add",
    "add.scalar",
    "sum",
    "dims=",
    "keepdim=true",
    "\u{e9}",
    "\t",
];

fn corpus() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/parse");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "tfn"))
                .filter_map(|p| std::fs::read_to_string(p).ok())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files.push(PRELUDE.to_string());
    files.push(STD_NN.to_string());
    files
}

/// Byte offsets of char boundaries where tokens start (roughly: after whitespace/punctuation).
fn boundaries(s: &str) -> Vec<usize> {
    let mut out: Vec<usize> = s.char_indices().map(|(i, _)| i).collect();
    out.push(s.len());
    out
}

/// The largest boundary not after `x`.
fn floor(b: &[usize], x: usize) -> usize {
    b.iter().copied().filter(|&k| k <= x).max().unwrap_or(0)
}

fn mutate(rng: &mut Rng, src: &str) -> String {
    let mut s = src.to_string();
    for _ in 0..1 + rng.index(4) {
        let b = boundaries(&s);
        let i = b[rng.index(b.len())];
        let j = b[rng.index(b.len())];
        let (lo, hi) = (i.min(j), i.max(j));
        match rng.index(7) {
            0 => {
                // delete one character
                let end = b.iter().copied().find(|&k| k > lo).unwrap_or(lo);
                s.replace_range(lo..end, "");
            }
            1 => s.insert_str(lo, rng.pick(TOKENS)),
            2 => {
                // delete a short range
                let end =
                    b.iter().copied().filter(|&k| k >= lo).nth(1 + rng.index(8)).unwrap_or(s.len());
                s.replace_range(lo..end, "");
            }
            3 => {
                // duplicate a range
                let end = floor(&b, hi.min(lo + 200));
                let piece = s[lo..end].to_string();
                s.insert_str(lo, &piece);
            }
            4 => s.truncate(lo),
            5 => {
                // swap two characters
                let (a, b2) = (s[lo..].chars().next(), s[hi..].chars().next());
                if let (Some(a), Some(c)) = (a, b2) {
                    if lo + a.len_utf8() <= hi {
                        let mut t = String::new();
                        t.push_str(&s[..lo]);
                        t.push(c);
                        t.push_str(&s[lo + a.len_utf8()..hi]);
                        t.push(a);
                        t.push_str(&s[hi + c.len_utf8()..]);
                        s = t;
                    }
                }
            }
            _ => {
                // replace a range with a token
                let end = floor(&b, hi.min(lo + 12));
                s.replace_range(lo..end, rng.pick(TOKENS));
            }
        }
    }
    s
}

fn soup(rng: &mut Rng) -> String {
    let n = rng.index(60);
    (0..n).map(|_| rng.pick(TOKENS)).collect::<Vec<_>>().join(if rng.index(2) == 0 {
        " "
    } else {
        ""
    })
}

/// Loads `src` (must not panic); if it loads, printing and reloading must reproduce the text.
fn check_one(base: &Library, src: &str) {
    let mut lib = base.clone();
    let before = lib.sources.files().count();
    if load_source(&mut lib, "fuzz.tfn", src, &MemLoader::new()).is_err() {
        return;
    }
    let ids: Vec<_> = lib.sources.files().skip(before).map(|(id, _)| id).collect();
    let printed = print_library(&lib, Some(&ids));
    let mut again = base.clone();
    let before = again.sources.files().count();
    let reloaded = load_source(&mut again, "printed.tfn", &printed, &MemLoader::new());
    assert!(
        reloaded.is_ok(),
        "printed text does not load:\n--- source\n{src}\n--- printed\n{printed}"
    );
    let ids: Vec<_> = again.sources.files().skip(before).map(|(id, _)| id).collect();
    let reprinted = print_library(&again, Some(&ids));
    assert_eq!(printed, reprinted, "print/parse round trip differs for:\n{src}");
}

#[test]
fn mutated_sources_never_panic() {
    let (cases, seed) = (fuzz_cases(2000), fuzz_seed(1));
    let base = match prelude() {
        Ok(lib) => lib,
        Err(d) => panic!("prelude does not load: {d:?}"),
    };
    let corpus = corpus();
    assert!(corpus.len() > 10, "corpus not found");
    // Every corpus file loads and round-trips unmutated (except the no-prelude ones, which
    // redefine primitives; they are still parsed and checked without panicking).
    for src in &corpus {
        check_one(&base, src);
        check_one(&Library::default(), src);
    }
    let mut rng = Rng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    for i in 0..cases {
        let src = if i % 10 == 9 {
            soup(&mut rng)
        } else {
            let pick = rng.index(corpus.len());
            mutate(&mut rng, &corpus[pick])
        };
        check_one(&base, &src);
    }
}

#[test]
fn limits_keep_recursion_bounded() {
    let base = Library::default();
    let near = |open: &str, close: &str, n: usize| {
        format!(
            "fn f(Tensor x) -> Tensor {{\n    return {}x{}\n}}\n",
            open.repeat(n),
            close.repeat(n)
        )
    };
    for n in [10, 63, 64, 65, 1000] {
        check_one(&base, &near("(", ")", n));
        check_one(&base, &near("[", "]", n));
        check_one(&base, &near("-", "", n));
        check_one(&base, &near("exp(", ")", n));
    }
    let chain = |op: &str, n: usize| {
        format!("fn f(Tensor x) -> Tensor {{\n    return x{}\n}}\n", format!(" {op} x").repeat(n))
    };
    for n in [100, 511, 600, 5000] {
        check_one(&base, &chain("+", n));
        check_one(&base, &chain("**", n));
    }
    check_one(&base, &"{".repeat(100_000));
    check_one(&base, &"fn f(".repeat(10_000));
}
