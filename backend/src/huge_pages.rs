//! Large buffers on transparent huge pages, as NumPy's arrays are.
//!
//! A kernel streaming a buffer larger than the caches pays for its 4 KB pages twice: a page
//! fault per page on first touch, and a hardware prefetcher that stops at every page
//! boundary. Linux backs a region with 2 MB pages when asked (`madvise(MADV_HUGEPAGE)`; the
//! usual `transparent_hugepage=madvise` setting does it only then), and NumPy asks for every
//! array of 4 MB or more — so the arrays a Python caller passes are on huge pages, and the
//! inputs tfn reads itself (`tfnc bench`'s random ones, `.npy` files) are advised the same
//! way. The buffers the executor allocates (outputs, intermediates) are advised only beyond
//! [`MIN_OWN_BYTES`], a last-level cache's size. Measured on a 64 MB `sum` (1 thread, SSE loop): 21–30 GB/s on 4 KB pages, 31–35 GB/s
//! advised (docs/benchmarks.md).
//!
//! [`advise`] marks the 2 MB-aligned interior of a buffer before it is first written; it is
//! advice only (errors are ignored, nothing changes elsewhere than Linux).
//! `TFN_HUGE_PAGES=off` turns it off (NumPy's `NUMPY_MADVISE_HUGEPAGE=0`), for machines where
//! the kernel compacting memory on a fault costs more than the pages save.

/// Inputs from this many bytes on are advised (NumPy's threshold for its arrays).
pub const MIN_BYTES: usize = 4 << 20;

/// Buffers the executor allocates (outputs, intermediates) are advised from this size on:
/// larger than a last-level cache, where streaming them is what the pages speed up. Below
/// it the 2 MB faults cost more than they save: advising from 4 MB made the char-LM's first
/// training step 6–33 ms slower (its later steps alike).
pub const MIN_OWN_BYTES: usize = 32 << 20;

/// The huge page size the advice is aligned to.
const HUGE: usize = 2 << 20;

/// Whether advice is given (`TFN_HUGE_PAGES`, read once).
fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        let Ok(v) = std::env::var("TFN_HUGE_PAGES") else { return true };
        match v.trim().to_ascii_lowercase().as_str() {
            "" | "1" | "on" | "yes" | "true" => true,
            "0" | "off" | "no" | "false" => false,
            _ => {
                eprintln!("tfn: ignoring TFN_HUGE_PAGES={v:?} (expected on or off); using on");
                true
            }
        }
    })
}

/// Asks for huge pages under the `bytes` from `ptr` (an allocation of this process, not yet
/// written, for the advice to take effect) when there are at least [`MIN_BYTES`].
pub fn advise(ptr: *const u8, bytes: usize) {
    advise_from(ptr, bytes, MIN_BYTES);
}

/// [`advise`] with the threshold `min` bytes.
pub(crate) fn advise_from(ptr: *const u8, bytes: usize, min: usize) {
    if bytes < min || !enabled() {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize).saturating_add(bytes) / HUGE * HUGE;
    if end <= start {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const MADV_HUGEPAGE: i32 = 14;
        extern "C" {
            fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
        }
        // SAFETY: `start..end` lies inside the caller's allocation (aligned inwards); the
        // advice changes how its pages are backed, never their contents or the mapping.
        let _advice_only =
            unsafe { madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE) };
    }
}

/// An empty vector with room for exactly `n` elements, advised ([`advise`]) before anything
/// is written; `None` when the memory is not there.
pub fn with_capacity<T>(n: usize) -> Option<Vec<T>> {
    with_capacity_from(n, MIN_BYTES)
}

/// [`with_capacity`] with the threshold `min` bytes.
pub(crate) fn with_capacity_from<T>(n: usize, min: usize) -> Option<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).ok()?;
    advise_from(v.as_ptr() as *const u8, n.saturating_mul(std::mem::size_of::<T>()), min);
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advised_buffers_keep_their_contents() {
        let mut v: Vec<f32> = with_capacity(3 << 20).expect("12 MB");
        v.extend((0..3 << 20).map(|i| i as f32));
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as f32));
        // Small, empty and unaligned ranges are no-ops.
        advise(v.as_ptr() as *const u8, 10);
        advise(std::ptr::null(), 0);
        advise(v.as_ptr().wrapping_add(1) as *const u8, MIN_BYTES);
    }
}
