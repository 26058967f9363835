//! A [`Profile`] as a table (its `Display`, what `tfnc bench --profile` prints) and as JSON
//! (`tfnc bench --profile --json`).

use super::Profile;
use std::fmt::{self, Write as _};

impl fmt::Display for Profile {
    /// ```text
    /// profile      gelu: 1 kernel(s), 4.524 µs per call (mean of the faster 5000 of 10000 calls)
    /// kernel kind    ops                                 calls %kernels   %call   µs/call     GB/s  GFLOP/s
    ///      0 loop    mul×6 add×2 tanh                     5000    100.0    88.4     3.999     8.19     9.22
    ///      - outside (call overhead)                      5000        -    11.6     0.525        -        -
    /// ```
    ///
    /// A function with loops: a line naming each place before its kernels (each numbered
    /// from 0, `calls` the runs: the calls times the loop's trips), and the time outside
    /// kernels includes the loops' own work:
    ///
    /// ```text
    /// profile      layers: 3 kernel(s), 41.870 µs per call (mean of the faster 50 of 100 calls)
    /// kernel kind    ops                                 calls %kernels   %call   µs/call     GB/s  GFLOP/s
    ///        stage 0
    ///      0 loop    mul                                    50      4.0     3.5     1.482     1.11     0.17
    ///        for l in 0..size(w, 0) (6 trips)
    ///      0 matmul  matmul erf                            300     94.1    82.7    34.621     2.89     5.80
    ///        stage 1
    ///      0 rows    sum                                    50      1.9     1.7     0.711     0.79     0.18
    ///      - outside (call and loop overhead)               50        -    12.1     5.056        -        -
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "profile      {}: {} kernel(s), {:.3} µs per call (mean of the faster {} of {} calls)",
            self.function,
            self.kernels.len(),
            self.micros_per_call(self.total),
            self.counted,
            self.calls
        )?;
        if let Some(r) = &self.roofline {
            writeln!(
                f,
                "roofline     {:.1} GB/s memory, {:.1} GFLOP/s FMA on {} thread(s): %BW and %FMA are each kernel's share of them",
                r.bandwidth_gbps, r.fma_gflops, self.threads
            )?;
        }
        let roof = self.roofline.is_some();
        write!(
            f,
            "{:>6} {:<7} {:<34} {:>6} {:>8} {:>7} {:>9} {:>8} {:>8}",
            "kernel", "kind", "ops", "calls", "%kernels", "%call", "µs/call", "GB/s", "GFLOP/s"
        )?;
        if roof {
            write!(f, " {:>6} {:>6}", "%BW", "%FMA")?;
        }
        writeln!(f)?;
        let mut place: Option<&str> = None;
        for k in &self.kernels {
            if !k.place.is_empty() && place != Some(k.place.as_str()) {
                writeln!(f, "{:>6} {}", "", k.place)?;
                place = Some(&k.place);
            }
            write!(
                f,
                "{:>6} {:<7} {:<34} {:>6} {:>8.1} {:>7.1} {:>9.3} {:>8.2} {:>8.2}",
                k.index,
                k.strategy,
                k.ops,
                k.runs,
                self.kernel_share(k),
                self.call_share(k.time),
                self.micros_per_call(k.time),
                self.gbps(k),
                self.gflops(k)
            )?;
            if let (Some(bw), Some(fma)) = (self.bandwidth_share(k), self.fma_share(k)) {
                write!(f, " {bw:>6.1} {fma:>6.1}")?;
            }
            writeln!(f)?;
        }
        write!(
            f,
            "{:>6} {:<7} {:<34} {:>6} {:>8} {:>7.1} {:>9.3} {:>8} {:>8}",
            "-",
            "outside",
            if self.has_loops() { "(call and loop overhead)" } else { "(call overhead)" },
            self.counted,
            "-",
            self.call_share(self.outside()),
            self.micros_per_call(self.outside()),
            "-",
            "-"
        )
    }
}

impl Profile {
    /// One JSON object (no newline): `function`, `threads`, `calls` (profiled), `counted`
    /// (the faster half the times are over), `call_us`, `kernel_us`, `outside_us`,
    /// `outside_share`, and `kernels`, each with `id`, `kind`, `ops`, `calls` (its runs),
    /// `share` (of the kernel time), `call_share`, `us_per_call`, `bytes`, `flops`, `gbps`,
    /// `gflops`, for a function with loops `place` ([`super::KernelProfile::place`]), and with
    /// a roofline `bandwidth_share` and `fma_share` (percent), the object then ending with
    /// `roofline` (`bandwidth_gbps`, `fma_gflops`, `source`).
    pub fn to_json(&self) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "{{\"function\":{},\"threads\":{},\"calls\":{},\"counted\":{},\"call_us\":{:.3},\"kernel_us\":{:.3},\"outside_us\":{:.3},\"outside_share\":{:.2},\"kernels\":[",
            json_string(&self.function),
            self.threads,
            self.calls,
            self.counted,
            self.micros_per_call(self.total),
            self.micros_per_call(self.kernel_time()),
            self.micros_per_call(self.outside()),
            self.call_share(self.outside())
        );
        for (i, k) in self.kernels.iter().enumerate() {
            let _ = write!(
                s,
                "{}{{\"id\":{},\"kind\":{},\"ops\":{},\"calls\":{},\"share\":{:.2},\"call_share\":{:.2},\"us_per_call\":{:.3},\"bytes\":{},\"flops\":{},\"gbps\":{:.3},\"gflops\":{:.3}}}",
                if i == 0 { "" } else { "," },
                k.index,
                json_string(k.strategy),
                json_string(&k.ops),
                k.runs,
                self.kernel_share(k),
                self.call_share(k.time),
                self.micros_per_call(k.time),
                k.bytes,
                k.flops,
                self.gbps(k),
                self.gflops(k)
            );
            if let (Some(bw), Some(fma)) = (self.bandwidth_share(k), self.fma_share(k)) {
                s.pop();
                let _ = write!(s, ",\"bandwidth_share\":{bw:.2},\"fma_share\":{fma:.2}}}");
            }
            if !k.place.is_empty() {
                s.pop();
                let _ = write!(s, ",\"place\":{}}}", json_string(&k.place));
            }
        }
        s.push(']');
        if let Some(r) = &self.roofline {
            let _ = write!(
                s,
                ",\"roofline\":{{\"bandwidth_gbps\":{:.3},\"fma_gflops\":{:.3},\"source\":{}}}",
                r.bandwidth_gbps,
                r.fma_gflops,
                json_string(&r.source)
            );
        }
        s.push('}');
        s
    }
}

/// A JSON string literal.
pub(crate) fn json_string(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 2);
    s.push('"');
    for c in text.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}
