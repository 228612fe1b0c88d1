//! Raw DEFLATE inflation, exact to a recorded length: the one inflater every docloupe build
//! uses. Natively and in the full and portable wasm builds it is linked into the engine
//! (`docloupe`'s `encoding/deflate.rs`). The lexical wasm build, sized for first paint, leaves it out
//! and calls this crate built on its own (`www/pkg/inflate/inflate.wasm`, 8 KB brotli), which
//! its host loads only for a whole bundle (a split bundle's files are never deflated): the
//! exports below are that module's interface.

#![forbid(unsafe_op_in_unsafe_fn)]

/// Fills `out` with what `deflated` inflates to, and says whether it was exactly that: a raw
/// DEFLATE stream that ends, all of it read, with exactly `out.len()` bytes. A stream that
/// wants more than `out` holds stops there, so no input can make it write past `out` or
/// allocate beyond the decompressor's fixed state.
///
/// Natively through zlib-rs (about 1.45× miniz_oxide's speed on the vector blocks of a
/// 2.24M-chunk bundle, which a one-off hybrid call inflates whole: 153 MB); in wasm through
/// miniz_oxide, which is smaller. Both read DEFLATE as RFC 1951 defines it, so they accept and
/// refuse the same streams (`tests` below runs both over the same ones).
pub fn inflate_exact(deflated: &[u8], out: &mut [u8]) -> bool {
    #[cfg(not(target_arch = "wasm32"))]
    {
        zlib_exact(deflated, out)
    }
    #[cfg(target_arch = "wasm32")]
    {
        miniz_exact(deflated, out)
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn zlib_exact(deflated: &[u8], out: &mut [u8]) -> bool {
    use zlib_rs::{Inflate, InflateFlush, Status};
    // One call sees the whole input and output only below 4 GiB (zlib's counters are u32).
    if u32::try_from(deflated.len()).is_err() || u32::try_from(out.len()).is_err() {
        return false;
    }
    let mut state = Inflate::new(false, 15);
    matches!(
        state.decompress(deflated, out, InflateFlush::Finish),
        Ok(Status::StreamEnd)
    ) && state.total_in() == deflated.len() as u64
        && state.total_out() == out.len() as u64
}

#[cfg_attr(not(any(target_arch = "wasm32", test)), allow(dead_code))]
fn miniz_exact(deflated: &[u8], out: &mut [u8]) -> bool {
    use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
    use miniz_oxide::inflate::TINFLStatus;
    let mut state = Box::<DecompressorOxide>::default();
    let flags = inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
    let (status, read, written) = decompress(&mut state, deflated, out, 0, flags);
    status == TINFLStatus::Done && read == deflated.len() && written == out.len()
}

/// The wasm module's interface (`--crate-type cdylib` for wasm32; see `www/build-wasm.sh`):
/// the host copies a stream into memory from [`alloc`], asks [`inflate`] for it, copies the
/// result out and hands both buffers back with [`free`].
#[cfg(target_arch = "wasm32")]
mod exports {
    use std::alloc::{alloc as allocate, dealloc, Layout};

    /// `n` bytes of this module's memory (null when `n` is 0 or does not fit).
    #[no_mangle]
    pub extern "C" fn alloc(n: usize) -> *mut u8 {
        match Layout::array::<u8>(n) {
            // SAFETY: the layout has a non-zero size.
            Ok(layout) if n > 0 => unsafe { allocate(layout) },
            _ => std::ptr::null_mut(),
        }
    }

    /// Gives back what [`alloc`] returned for `n` bytes.
    ///
    /// # Safety
    /// `ptr` comes from `alloc(n)` with the same `n` and is not used again.
    #[no_mangle]
    pub unsafe extern "C" fn free(ptr: *mut u8, n: usize) {
        if let (false, Ok(layout)) = (ptr.is_null(), Layout::array::<u8>(n)) {
            // SAFETY: the caller's contract.
            unsafe { dealloc(ptr, layout) }
        }
    }

    /// 1 when the `src_len` bytes at `src` inflate to exactly the `out_len` bytes written at
    /// `out`, else 0 ([`super::inflate_exact`]).
    ///
    /// # Safety
    /// Both ranges come from [`alloc`] and do not overlap.
    #[no_mangle]
    pub unsafe extern "C" fn inflate(
        src: *const u8,
        src_len: usize,
        out: *mut u8,
        out_len: usize,
    ) -> u32 {
        let empty = |p: *const u8, n: usize| p.is_null() || n == 0;
        // SAFETY: the caller's contract; empty ranges are never dereferenced.
        let (deflated, target) = unsafe {
            (
                if empty(src, src_len) {
                    &[][..]
                } else {
                    std::slice::from_raw_parts(src, src_len)
                },
                if empty(out, out_len) {
                    &mut [][..]
                } else {
                    std::slice::from_raw_parts_mut(out, out_len)
                },
            )
        };
        super::inflate_exact(deflated, target) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::{inflate_exact, miniz_exact};
    use miniz_oxide::deflate::compress_to_vec;

    #[test]
    fn inflates_exactly_or_not_at_all() {
        let raw: Vec<u8> = (0..10_000u32)
            .map(|i| (i % 251) as u8 ^ (i / 97) as u8)
            .collect();
        let deflated = compress_to_vec(&raw, 9);
        let mut out = vec![0u8; raw.len()];
        assert!(inflate_exact(&deflated, &mut out));
        assert_eq!(out, raw);
        // Too little room, too much room, a cut stream, trailing bytes: all refused.
        assert!(!inflate_exact(&deflated, &mut vec![0u8; raw.len() - 1]));
        assert!(!inflate_exact(&deflated, &mut vec![0u8; raw.len() + 1]));
        assert!(!inflate_exact(&deflated[..deflated.len() - 1], &mut out));
        let mut longer = deflated.clone();
        longer.push(0);
        assert!(!inflate_exact(&longer, &mut out));
        assert!(!inflate_exact(b"not deflate at all", &mut out));
        let empty = compress_to_vec(b"", 9);
        assert!(inflate_exact(&empty, &mut []));
    }

    /// zlib-rs (native) and miniz_oxide (wasm) agree on every stream: the bytes of a good one,
    /// and the refusal of each of thousands of damaged ones (one bit flipped, cut, lengthened),
    /// so a bundle reads the same natively and in a browser.
    #[test]
    #[cfg(not(target_arch = "wasm32"))]
    fn both_inflaters_take_and_refuse_the_same_streams() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let text: Vec<u8> = (0..6_000)
            .flat_map(|i| format!("word{} ", (i * 7919) % 613).into_bytes())
            .collect();
        let noise: Vec<u8> = (0..3_000).map(|_| next() as u8 & 0x3f).collect();
        for (raw, level) in [(&text, 1), (&text, 6), (&text, 9), (&noise, 6), (&noise, 0)] {
            let good = compress_to_vec(raw, level);
            let (mut a, mut b) = (vec![0u8; raw.len()], vec![1u8; raw.len()]);
            assert!(super::zlib_exact(&good, &mut a) && miniz_exact(&good, &mut b));
            assert_eq!((&a, &b), (raw, raw));
            for _ in 0..1_500 {
                let mut bad = good.clone();
                match next() % 3 {
                    0 => {
                        let bit = (next() % (8 * bad.len() as u64)) as usize;
                        bad[bit / 8] ^= 1 << (bit % 8);
                    }
                    1 => bad.truncate((next() % bad.len() as u64) as usize),
                    _ => bad.push(next() as u8),
                }
                let (za, ma) = (super::zlib_exact(&bad, &mut a), miniz_exact(&bad, &mut b));
                assert_eq!(za, ma, "zlib-rs {za}, miniz_oxide {ma}");
                if za {
                    assert_eq!(a, b);
                }
            }
        }
    }
}
