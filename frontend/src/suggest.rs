//! "Did you mean" suggestions: the closest known name by edit distance.

/// Names longer than this get no suggestion: a typo of a 200-character name is implausible,
/// and the edit distance is quadratic in the length.
const MAX_NAME_CHARS: usize = 64;

/// The candidate closest to `name`, if it is close enough to be a plausible typo
/// (distance at most a third of the name's length, and at least 1). Bounded: names longer than
/// [`MAX_NAME_CHARS`] get none, and a candidate whose length alone rules it out costs nothing.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    // Bytes bound characters from above: a quick refusal before counting anything.
    if name.len() > 4 * MAX_NAME_CHARS {
        return None;
    }
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return None;
    }
    let limit = (chars / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        // The distance is at least the difference in length.
        if c == name || c.len() > 4 * (chars + limit) || c.chars().count().abs_diff(chars) > limit {
            continue;
        }
        let d = distance(name, c);
        if d <= limit && best.is_none_or(|(bd, bc)| d < bd || (d == bd && c < bc)) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// Levenshtein distance over characters (a swap of neighbours counts as one edit).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev2: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(prev2[j - 2] + 1);
            }
            cur[j] = d;
        }
        prev2 = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_typos() {
        assert_eq!(closest("tanhh", ["tanh", "exp", "than"]), Some("tanh"));
        assert_eq!(closest("mena", ["mean", "max"]), Some("mean"));
        assert_eq!(closest("foo", ["tanh", "exp"]), None);
        assert_eq!(distance("abc", "acb"), 1);
        let long = "x".repeat(65);
        assert_eq!(closest(&long, [&long[1..]]), None, "no suggestion for very long names");
        let huge = "y".repeat(1 << 20);
        assert_eq!(closest("yyy", [huge.as_str(), "yyyy"]), Some("yyyy"));
    }
}
