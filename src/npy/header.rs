//! The `.npy` header: the magic string, the version, and the Python dict literal
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }` describing the data.
//!
//! Parsing is strict and bounded: the header may be at most [`MAX_HEADER_LEN`] bytes, every
//! key must appear once, and the shape's element and byte counts must fit a `usize`, so that
//! what follows can compare the declared data size with the file before allocating anything.

use std::io::Read;
use tfn_ir::DType;

/// The longest header accepted (NumPy's own default `max_header_size` is 10,000 bytes).
pub(super) const MAX_HEADER_LEN: usize = 1 << 20;

const MAGIC: &[u8] = b"\x93NUMPY";

/// The dtype strings tfn reads and writes, per dtype (NumPy's little-endian `descr`).
/// `bfloat16` has no NumPy dtype: ml_dtypes saves it as a 2-byte void (`<V2`; `|V2` is the
/// same), and a 2-byte void is read back as `bf16`. The first entry of a dtype is what tfn
/// writes.
pub(super) const DESCRS: [(&str, DType); 10] = [
    ("|b1", DType::Bool),
    ("|i1", DType::I8),
    ("|u1", DType::U8),
    ("<f2", DType::F16),
    ("<V2", DType::BF16),
    ("|V2", DType::BF16),
    ("<i4", DType::I32),
    ("<i8", DType::I64),
    ("<f4", DType::F32),
    ("<f8", DType::F64),
];

/// What a header declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Header {
    pub dtype: DType,
    pub fortran_order: bool,
    pub shape: Vec<usize>,
    /// Number of elements (product of `shape`, checked).
    pub elements: usize,
    /// Bytes of data that follow the header (checked).
    pub data_bytes: usize,
    /// Bytes of magic, version, length and dict: where the data starts.
    pub header_bytes: usize,
}

/// Reads and parses the header from the start of `r`; `Err` is the reason in words.
pub(super) fn read_header(r: &mut impl Read) -> Result<Header, String> {
    let mut prefix = [0u8; 8];
    read_exactly(r, &mut prefix, "the magic string and version")?;
    if &prefix[..6] != MAGIC {
        return Err("missing the `\\x93NUMPY` magic string (not a .npy file)".into());
    }
    let (major, minor) = (prefix[6], prefix[7]);
    let len = match major {
        1 => {
            let mut b = [0u8; 2];
            read_exactly(r, &mut b, "the header length")?;
            u16::from_le_bytes(b) as usize
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            read_exactly(r, &mut b, "the header length")?;
            u32::from_le_bytes(b) as usize
        }
        _ => return Err(format!("unsupported .npy format version {major}.{minor}")),
    };
    if len > MAX_HEADER_LEN {
        return Err(format!("header of {len} bytes is longer than the limit of {MAX_HEADER_LEN}"));
    }
    let mut dict = vec![0u8; len];
    read_exactly(r, &mut dict, "the header")?;
    let text =
        std::str::from_utf8(&dict).map_err(|_| "the header is not text (ASCII)".to_string())?;
    let mut header = parse_dict(text)?;
    header.header_bytes = 8 + if major == 1 { 2 } else { 4 } + len;
    Ok(header)
}

fn read_exactly(r: &mut impl Read, buf: &mut [u8], what: &str) -> Result<(), String> {
    r.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => format!("the file ends inside {what} (truncated)"),
        _ => format!("cannot read {what}: {e}"),
    })
}

/// A tiny cursor over the dict literal.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn skip_space(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_space();
        if self.text[self.at..].starts_with(c) {
            self.at += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("malformed header: expected `{c}` at byte {} of `{}`", self.at, self.text))
        }
    }

    fn string(&mut self) -> Result<&'a str, String> {
        self.skip_space();
        let quote = self.text[self.at..].chars().next().filter(|c| *c == '\'' || *c == '"');
        let Some(quote) = quote else {
            return Err(format!("malformed header: expected a string at byte {}", self.at));
        };
        let start = self.at + 1;
        let end = self.text[start..]
            .find(quote)
            .ok_or_else(|| "malformed header: unterminated string".to_string())?;
        self.at = start + end + 1;
        Ok(&self.text[start..start + end])
    }

    fn word(&mut self) -> &'a str {
        self.skip_space();
        let rest = &self.text[self.at..];
        let len = rest.find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(rest.len());
        self.at += len;
        &rest[..len]
    }
}

/// Parses `{'descr': ..., 'fortran_order': ..., 'shape': (...), }`.
fn parse_dict(text: &str) -> Result<Header, String> {
    let mut c = Cursor { text, at: 0 };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    c.expect('{')?;
    while !c.eat('}') {
        let key = c.string()?;
        c.expect(':')?;
        let duplicate = match key {
            "descr" => descr.replace(c.string()?).is_some(),
            "fortran_order" => {
                let value = match c.word() {
                    "True" => true,
                    "False" => false,
                    other => return Err(format!("malformed header: `fortran_order` is `{other}`")),
                };
                fortran.replace(value).is_some()
            }
            "shape" => shape.replace(parse_shape(&mut c)?).is_some(),
            other => return Err(format!("malformed header: unknown key `{other}`")),
        };
        if duplicate {
            return Err(format!("malformed header: `{key}` is given twice"));
        }
        if !c.eat(',') {
            c.expect('}')?;
            break;
        }
    }
    if !c.text[c.at..].trim().is_empty() {
        return Err("malformed header: text after the dict".into());
    }
    let descr = descr.ok_or("malformed header: no `descr`")?;
    let fortran_order = fortran.ok_or("malformed header: no `fortran_order`")?;
    let shape: Vec<usize> = shape.ok_or("malformed header: no `shape`")?;
    // A one-byte dtype has no byte order: `<i1`, `>i1` and `=i1` are NumPy's `|i1` too.
    let descr = match descr.as_bytes() {
        [b'<' | b'>' | b'=', b'i' | b'u' | b'b', b'1'] => format!("|{}", &descr[1..]),
        _ => descr.to_string(),
    };
    let dtype = DESCRS.iter().find(|(d, _)| *d == descr).map(|(_, t)| *t).ok_or_else(|| {
        let hint = if descr.starts_with('>') {
            " (big-endian: save it little-endian)"
        } else if descr.contains("bfloat16") {
            " (a bfloat16 array is saved by ml_dtypes as the 2-byte void `<V2`, which tfn reads)"
        } else {
            ""
        };
        format!(
            "dtype `{descr}` is not supported{hint}; use bool, int8, uint8, int32, int64, float16, float32, float64 or bfloat16 (as `<V2`)"
        )
    })?;
    let too_large = || format!("shape {shape:?} of dtype {dtype} is too large");
    let elements = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).ok_or_else(too_large)?;
    let data_bytes = elements.checked_mul(dtype.size_bytes()).ok_or_else(too_large)?;
    Ok(Header { dtype, fortran_order, shape, elements, data_bytes, header_bytes: 0 })
}

/// `(2, 3)`, `(5,)` or `()`.
fn parse_shape(c: &mut Cursor) -> Result<Vec<usize>, String> {
    c.expect('(')?;
    let mut dims = Vec::new();
    while !c.eat(')') {
        let word = c.word();
        if word.is_empty() {
            let found =
                c.text[c.at..].chars().next().map_or("the end".into(), |ch| format!("`{ch}`"));
            return Err(format!(
                "malformed header: expected a dimension of `shape`, found {found}"
            ));
        }
        let dim = word
            .strip_suffix('L') // Python 2 longs
            .unwrap_or(word)
            .parse::<usize>()
            .map_err(|_| format!("malformed header: `{word}` is not a dimension of `shape`"))?;
        dims.push(dim);
        if !c.eat(',') {
            c.expect(')')?;
            break;
        }
    }
    Ok(dims)
}

/// The header NumPy writes for a C-order array: version 1.0 when the dict fits (it always
/// does below rank ~3000), padded with spaces so that the data starts at a multiple of 64.
pub(super) fn encode_header(dtype: DType, shape: &[usize]) -> Vec<u8> {
    let descr = DESCRS.iter().find(|(_, t)| *t == dtype).map_or("|b1", |(d, _)| *d);
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let v1 = dict.len() + 11 < usize::from(u16::MAX);
    let prefix = if v1 { 10 } else { 12 };
    let total = (prefix + dict.len() + 1).div_ceil(64) * 64;
    dict.push_str(&" ".repeat(total - prefix - dict.len() - 1));
    dict.push('\n');
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    if v1 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(dict: &str) -> Result<Header, String> {
        parse_dict(dict)
    }

    #[test]
    fn parses_what_numpy_writes_and_rejects_the_rest() {
        let h = parse("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }    \n");
        let h = h.unwrap();
        assert_eq!((h.dtype, h.fortran_order, h.shape.clone()), (DType::F32, false, vec![2, 3]));
        assert_eq!((h.elements, h.data_bytes), (6, 24));
        let h = parse("{'shape': (), 'descr': '|b1', 'fortran_order': True}").unwrap();
        assert_eq!((h.shape.len(), h.elements, h.fortran_order), (0, 1, true));
        assert_eq!(parse("{'descr':'<i8','fortran_order':False,'shape':(5,)}").unwrap().shape, [5]);
        for bad in [
            "",
            "{",
            "{'descr': '<f4'}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}",
            "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}",
            "{'descr': '>f4', 'fortran_order': False, 'shape': (2,)}",
            "{'descr': '<c8', 'fortran_order': False, 'shape': (2,)}",
            "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999)}",
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} extra",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} must be rejected");
        }
    }

    /// One-byte dtypes have no byte order: NumPy writes `|i1` but reads `<i1`, `>i1`, `=i1`
    /// (and `<u1`, `<b1`, ...) as the same dtype, and so does tfn.
    #[test]
    fn one_byte_dtypes_in_any_byte_order() {
        for (order, (code, dtype)) in ["<", ">", "=", "|"].into_iter().flat_map(|o| {
            [("i1", DType::I8), ("u1", DType::U8), ("b1", DType::Bool)].map(|c| (o, c))
        }) {
            let dict =
                format!("{{'descr': '{order}{code}', 'fortran_order': False, 'shape': (3,), }}");
            let h = parse(&dict).unwrap_or_else(|e| panic!("{dict}: {e}"));
            assert_eq!((h.dtype, h.data_bytes), (dtype, 3), "{dict}");
        }
        // What tfn writes stays NumPy's own spelling.
        let bytes = encode_header(DType::I8, &[3]);
        assert!(String::from_utf8_lossy(&bytes).contains("'descr': '|i1'"));
        // Multi-byte dtypes still need their byte order.
        assert!(parse("{'descr': '|f4', 'fortran_order': False, 'shape': (2,)}").is_err());
    }

    #[test]
    fn encoded_headers_are_aligned_and_parse_back() {
        for shape in [&[][..], &[0], &[3, 0, 1], &[1; 40]] {
            for (_, dtype) in DESCRS {
                let bytes = encode_header(dtype, shape);
                assert_eq!(bytes.len() % 64, 0);
                let h = read_header(&mut &bytes[..]).unwrap();
                assert_eq!((h.dtype, h.shape.as_slice()), (dtype, shape));
                assert_eq!(h.header_bytes, bytes.len());
            }
        }
    }
}
