//! Source locations: files held by a [`SourceMap`] and byte [`Span`]s into them.
//!
//! Spans are plain data so that every layer (front end, IR, optimiser, session) can point a
//! diagnostic at the user's source without knowing anything about the parser.

/// Index of a file in a [`SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// A half-open byte range `[start, end)` in one source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span { file, start: start as u32, end: end as u32 }
    }

    /// The smallest span covering both (they must be in the same file; otherwise `self`).
    pub fn to(self, other: Span) -> Span {
        if self.file != other.file {
            return self;
        }
        Span { file: self.file, start: self.start.min(other.start), end: self.end.max(other.end) }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// One loaded source file.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// The name shown in diagnostics (a path as the user gave it, or e.g. `<prelude>`).
    pub name: String,
    pub text: String,
    /// Byte offset of the start of each line (the first is 0): line lookups are a binary
    /// search, so rendering many diagnostics is not quadratic in the file's size.
    line_starts: Vec<usize>,
    /// The text is ASCII: a column is a byte difference, no character counting.
    ascii: bool,
}

impl SourceFile {
    fn new(name: String, text: String) -> SourceFile {
        // A line ends at `\n`, `\r\n` or a bare `\r` (classic Mac line endings).
        let bytes = text.as_bytes();
        let ends = (0..bytes.len()).filter(|&i| {
            bytes[i] == b'\n' || (bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n'))
        });
        let line_starts = std::iter::once(0).chain(ends.map(|i| i + 1)).collect();
        let ascii = text.is_ascii();
        SourceFile { name, text, line_starts, ascii }
    }

    /// The text of 1-based line `line`, without its newline (empty past the end).
    pub fn line(&self, line: usize) -> &str {
        let Some(&start) = line.checked_sub(1).and_then(|i| self.line_starts.get(i)) else {
            return "";
        };
        let end = self.line_starts.get(line).map_or(self.text.len(), |&next| next - 1);
        let text = &self.text[start..end.max(start)];
        text.strip_suffix('\r').unwrap_or(text)
    }

    /// 1-based (line, column) of a byte offset, columns counted in characters.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(&self.text, offset.min(self.text.len()));
        let line = self.line_starts.partition_point(|&s| s <= offset);
        let start = self.line_starts[line - 1];
        let col =
            if self.ascii { offset - start } else { self.text[start..offset].chars().count() };
        (line, col + 1)
    }
}

/// All source files of a session; [`FileId`]s index into it.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        self.files.push(SourceFile::new(name.into(), text.into()));
        FileId(self.files.len() as u32 - 1)
    }

    pub fn get(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id.0 as usize)
    }

    pub fn files(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files.iter().enumerate().map(|(i, f)| (FileId(i as u32), f))
    }

    /// 1-based (line, column) of a byte offset, columns counted in characters.
    pub fn line_col(&self, id: FileId, offset: u32) -> (usize, usize) {
        match self.get(id) {
            Some(file) => file.line_col(offset as usize),
            None => (1, 1),
        }
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns() {
        let mut sm = SourceMap::new();
        let f = sm.add("a", "ab\nπx\r\n\nlast");
        let cases = [
            (0, (1, 1)),
            (2, (1, 3)),
            (3, (2, 1)),
            (5, (2, 2)),
            (4, (2, 1)),
            (8, (3, 1)),
            (9, (4, 1)),
        ];
        for (offset, expected) in cases {
            assert_eq!(sm.line_col(f, offset), expected, "offset {offset}");
        }
        assert_eq!(sm.line_col(f, 10), (4, 2));
        assert_eq!(sm.line_col(f, 1000), (4, 5));
        let file = sm.get(f).unwrap();
        let lines: Vec<&str> = (0..6).map(|l| file.line(l)).collect();
        assert_eq!(lines, ["", "ab", "πx", "", "last", ""]);
        let g = sm.add("b", "");
        assert_eq!((sm.line_col(g, 0), sm.get(g).unwrap().line(1)), ((1, 1), ""));
        // Classic Mac line endings: a bare `\r` ends a line.
        let h = sm.add("c", "ab\rcd\r\ne");
        assert_eq!([sm.line_col(h, 3), sm.line_col(h, 7)], [(2, 1), (3, 1)]);
        let file = sm.get(h).unwrap();
        assert_eq!([file.line(1), file.line(2), file.line(3)], ["ab", "cd", "e"]);
    }
}
