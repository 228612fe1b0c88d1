//! The first pass's SIMD kernels: codes from 4-bit rows (AVX2), and the codes' quantized
//! sums (AVX2, wasm SIMD, or a table), every path giving the same bits.

use super::*;

/// The code of one 4-bit vector (`row`, two values a byte, `scale`): bit `d` where
/// `(v − 8) · scale > mean[d]` in f64 (an i8 times an f32 is exact there, so every path gives
/// the codes the build made). Natively on x86-64 with AVX2, eight dimensions at a time
/// ([`code_4bit_avx2`]: a quarter of the time, which was a quarter of a one-off hybrid call over
/// 2.24M vectors); the rest, and every other machine, through [`code_4bit_scalar`].
pub(super) fn code_4bit(row: &[u8], scale: f64, mean: &[f64], code: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        let whole = (mean.len() / 8).min(row.len() / 4).min(code.len());
        // SAFETY: AVX2 is there (checked just above), and the kernel reads only the first
        // `whole` groups of 4 row bytes, 8 means and 1 code byte, which `whole` bounds.
        unsafe { code_4bit_avx2(row, scale, mean, code, whole) };
        code_4bit_scalar(
            &row[4 * whole..],
            scale,
            &mean[8 * whole..],
            &mut code[whole..],
        );
        return;
    }
    code_4bit_scalar(row, scale, mean, code)
}

/// [`code_4bit`] a dimension at a time, with the vector's 16 possible values worked out once.
pub(super) fn code_4bit_scalar(row: &[u8], scale: f64, mean: &[f64], code: &mut [u8]) {
    let level: [f64; 16] = std::array::from_fn(|k| (k as i8 - 8) as f64 * scale);
    // Four bytes of values (eight dimensions) make a byte of code.
    for (byte, (values, means)) in code.iter_mut().zip(row.chunks(4).zip(mean.chunks(8))) {
        let mut b = 0u8;
        for (k, (&v, m)) in values.iter().zip(means.chunks(2)).enumerate() {
            b |= ((level[(v & 0x0f) as usize] > m[0]) as u8) << (2 * k);
            if let Some(&m) = m.get(1) {
                b |= ((level[(v >> 4) as usize] > m) as u8) << (2 * k + 1);
            }
        }
        *byte = b;
    }
}

/// The first `groups` code bytes of [`code_4bit`], eight dimensions a step: the four row
/// bytes' nibbles in dimension order, widened to i32, less 8, to f64 (exact), times the scale
/// (the scalar path's product), compared with the means (`>`, false on NaN as in Rust).
///
/// # Safety
/// The CPU has AVX2, `row` holds at least `4 · groups` bytes, `mean` `8 · groups` values and
/// `code` `groups` bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn code_4bit_avx2(
    row: &[u8],
    scale: f64,
    mean: &[f64],
    code: &mut [u8],
    groups: usize,
) {
    use std::arch::x86_64::*;
    debug_assert!(row.len() >= 4 * groups && mean.len() >= 8 * groups && code.len() >= groups);
    let scale = _mm256_set1_pd(scale);
    let eight = _mm256_set1_epi32(8);
    const LOW: u32 = 0x0f0f_0f0f;
    for g in 0..groups {
        // SAFETY (of every access below): g < groups, and the caller's bounds.
        unsafe {
            let x = u32::from_le_bytes(row.as_ptr().add(4 * g).cast::<[u8; 4]>().read());
            let low = _mm_cvtsi32_si128((x & LOW) as i32);
            let high = _mm_cvtsi32_si128((x >> 4 & LOW) as i32);
            // Byte k of the row holds dimension 2k (low nibble) and 2k + 1 (high).
            let v = _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_unpacklo_epi8(low, high)), eight);
            let a = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(v)), scale);
            let b = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(v, 1)), scale);
            let m = mean.as_ptr().add(8 * g);
            let above_a = _mm256_movemask_pd(_mm256_cmp_pd(a, _mm256_loadu_pd(m), _CMP_GT_OQ));
            let above_b =
                _mm256_movemask_pd(_mm256_cmp_pd(b, _mm256_loadu_pd(m.add(4)), _CMP_GT_OQ));
            *code.get_unchecked_mut(g) = (above_a | above_b << 4) as u8;
        }
    }
}

/// Each of the first `n` codes' sum of its quantized nibble parts (`parts[j]` for the low
/// nibble of byte `j`, `parts[cb + j]` for its high one), a block at a time: on every core
/// natively, 32 codes a step with AVX2; 16 a step with wasm's SIMD; else through one table of
/// the two parts' sums a byte. Every path gives the same sums.
pub(super) fn quantized_sums(codes: &[u8], parts: &[[u8; 16]], n: usize) -> Vec<u16> {
    let cb = parts.len() / 2;
    let mut sums = vec![0u16; n.div_ceil(BLOCK) * BLOCK];
    let byte_sums: Vec<[u16; 256]> = (0..cb)
        .map(|j| std::array::from_fn(|v| parts[j][v & 15] as u16 + parts[cb + j][v >> 4] as u16))
        .collect();
    let block = |(out, codes): (&mut [u16], &[u8])| {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is there; `codes` is one block of `cb` rows of 32 bytes, `out` 32
            // sums, and `parts` 2 · cb tables.
            unsafe { block_sums_avx2(codes, parts, out) };
            return;
        }
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        {
            block_sums_simd128(codes, parts, out);
            return;
        }
        #[allow(unreachable_code)]
        {
            out.fill(0);
            for (t, bytes) in byte_sums.iter().zip(codes.chunks_exact(BLOCK)) {
                for (s, &v) in out.iter_mut().zip(bytes) {
                    *s += t[v as usize];
                }
            }
        }
    };
    #[cfg(not(target_arch = "wasm32"))]
    {
        use rayon::prelude::*;
        sums.par_chunks_exact_mut(BLOCK)
            .zip(codes.par_chunks_exact(BLOCK * cb))
            .with_min_len(256)
            .for_each(block);
    }
    #[cfg(target_arch = "wasm32")]
    sums.chunks_exact_mut(BLOCK)
        .zip(codes.chunks_exact(BLOCK * cb))
        .for_each(block);
    sums.truncate(n);
    sums
}

/// One block's sums of [`quantized_sums`]: per code byte, the 32 codes' low and high nibbles
/// looked up in their parts with one byte shuffle each, widened to u16 and added.
///
/// # Safety
/// The CPU has AVX2; `codes` holds `cb` rows of 32 bytes, `parts` 2 · cb tables, `out` 32.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn block_sums_avx2(codes: &[u8], parts: &[[u8; 16]], out: &mut [u16]) {
    use std::arch::x86_64::*;
    let cb = parts.len() / 2;
    debug_assert!(codes.len() >= cb * BLOCK && out.len() >= BLOCK);
    let nibble = _mm256_set1_epi8(0x0f);
    let (mut first, mut second) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    for j in 0..cb {
        // SAFETY (of every access below): j < cb, and the caller's bounds.
        unsafe {
            let v = _mm256_loadu_si256(codes.as_ptr().add(j * BLOCK).cast());
            let lo = _mm256_and_si256(v, nibble);
            let hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
            let ta = _mm256_broadcastsi128_si256(_mm_loadu_si128(parts[j].as_ptr().cast()));
            let tb = _mm256_broadcastsi128_si256(_mm_loadu_si128(parts[cb + j].as_ptr().cast()));
            let a = _mm256_shuffle_epi8(ta, lo);
            let b = _mm256_shuffle_epi8(tb, hi);
            let low = _mm256_add_epi16(
                _mm256_cvtepu8_epi16(_mm256_castsi256_si128(a)),
                _mm256_cvtepu8_epi16(_mm256_castsi256_si128(b)),
            );
            let high = _mm256_add_epi16(
                _mm256_cvtepu8_epi16(_mm256_extracti128_si256(a, 1)),
                _mm256_cvtepu8_epi16(_mm256_extracti128_si256(b, 1)),
            );
            first = _mm256_add_epi16(first, low);
            second = _mm256_add_epi16(second, high);
        }
    }
    // SAFETY: `out` holds 32 u16.
    unsafe {
        _mm256_storeu_si256(out.as_mut_ptr().cast(), first);
        _mm256_storeu_si256(out.as_mut_ptr().add(16).cast(), second);
    }
}

/// [`block_sums_avx2`] with wasm's 128-bit SIMD, 16 codes a step.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub(super) fn block_sums_simd128(codes: &[u8], parts: &[[u8; 16]], out: &mut [u16]) {
    use std::arch::wasm32::*;
    let cb = parts.len() / 2;
    let load = |b: &[u8]| {
        let b: [u8; 16] = b[..16].try_into().expect("16 bytes");
        u8x16(
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
            b[14], b[15],
        )
    };
    for half in 0..2 {
        let (mut first, mut second) = (u16x8_splat(0), u16x8_splat(0));
        for j in 0..cb {
            let at = j * BLOCK + half * 16;
            let v = load(&codes[at..at + 16]);
            let lo = v128_and(v, u8x16_splat(0x0f));
            let hi = u8x16_shr(v, 4);
            let a = u8x16_swizzle(load(&parts[j]), lo);
            let b = u8x16_swizzle(load(&parts[cb + j]), hi);
            first = u16x8_add(
                first,
                u16x8_add(u16x8_extend_low_u8x16(a), u16x8_extend_low_u8x16(b)),
            );
            second = u16x8_add(
                second,
                u16x8_add(u16x8_extend_high_u8x16(a), u16x8_extend_high_u8x16(b)),
            );
        }
        let lanes = |v| {
            [
                u16x8_extract_lane::<0>(v),
                u16x8_extract_lane::<1>(v),
                u16x8_extract_lane::<2>(v),
                u16x8_extract_lane::<3>(v),
                u16x8_extract_lane::<4>(v),
                u16x8_extract_lane::<5>(v),
                u16x8_extract_lane::<6>(v),
                u16x8_extract_lane::<7>(v),
            ]
        };
        out[half * 16..half * 16 + 8].copy_from_slice(&lanes(first));
        out[half * 16 + 8..half * 16 + 16].copy_from_slice(&lanes(second));
    }
}
