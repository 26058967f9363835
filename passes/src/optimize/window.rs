//! Window ops (`tfn_ir::op_window`) in the e-graph: their attributes as one list leaf of
//! integers, `[kernel h, w, stride h, w, padding h, w, dilation h, w, output_padding h, w,
//! groups, ceil_mode, count_include_pad]`, read back exactly.

use tfn_ir::WindowAttrs;

/// The attribute leaf of a window e-node.
pub fn attr_ints(a: &WindowAttrs) -> Vec<i64> {
    let mut v = Vec::with_capacity(13);
    for pair in [a.kernel, a.stride, a.padding, a.dilation, a.output_padding] {
        v.extend(pair.iter().map(|&x| i64::from(x)));
    }
    v.push(i64::from(a.groups));
    v.push(i64::from(a.ceil_mode));
    v.push(i64::from(a.count_include_pad));
    v
}

/// The attributes a window e-node's leaf holds.
pub fn attrs_of(v: &[i64]) -> Result<WindowAttrs, String> {
    let u = |i: usize| -> Result<u32, String> {
        v.get(i)
            .and_then(|&x| u32::try_from(x).ok())
            .ok_or_else(|| format!("window attributes {v:?}: item {i}"))
    };
    let pair = |i: usize| -> Result<[u32; 2], String> { Ok([u(i)?, u(i + 1)?]) };
    if v.len() != 13 {
        return Err(format!("window attributes {v:?}: 13 integers expected"));
    }
    Ok(WindowAttrs {
        kernel: pair(0)?,
        stride: pair(2)?,
        padding: pair(4)?,
        dilation: pair(6)?,
        output_padding: pair(8)?,
        groups: u(10)?,
        ceil_mode: u(11)? != 0,
        count_include_pad: u(12)? != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_round_trip() {
        let a = WindowAttrs {
            kernel: [3, 2],
            stride: [2, 1],
            padding: [1, 0],
            dilation: [1, 2],
            output_padding: [1, 0],
            groups: 4,
            ceil_mode: true,
            count_include_pad: false,
        };
        assert_eq!(attrs_of(&attr_ints(&a)), Ok(a));
        assert!(attrs_of(&[1, 2]).is_err());
    }
}
