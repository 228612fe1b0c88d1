//! Tests of the vector index: quantization, the wire forms, the first pass and its kernels.

use super::*;

fn store(vectors: Vec<QVec>) -> Vectors {
    Vectors::from_qvecs(vectors).unwrap()
}

/// The 4-bit codes, eight dimensions a step where the CPU allows (AVX2), are the scalar
/// path's bit for bit: every nibble against means on either side of it, at it exactly (a
/// tie is not above), at ±0 and far out, over widths with and without a partial last byte.
#[test]
fn codes_eight_dimensions_a_step_are_the_scalar_codes() {
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    for dims in [8usize, 16, 100, 383, 384, 768] {
        for _ in 0..200 {
            let row: Vec<u8> = (0..dims.div_ceil(2)).map(|_| next() as u8).collect();
            let scale = match next() % 4 {
                0 => 0.0,
                1 => f32::MIN_POSITIVE as f64,
                _ => f32::from_bits(0x3c00_0000 + (next() % 0x0100_0000) as u32) as f64,
            };
            let mean: Vec<f64> = (0..dims)
                .map(|_| match next() % 5 {
                    // A level exactly: equal is not above.
                    0 => ((next() % 16) as i32 - 8) as f64 * scale,
                    1 => [0.0, -0.0, 1e300, -1e300][(next() % 4) as usize],
                    _ => ((next() % 2001) as f64 - 1000.0) / 1000.0 * 8.0 * scale,
                })
                .collect();
            let mut fast = vec![0u8; code_bytes(dims)];
            let mut slow = vec![0xa5u8; code_bytes(dims)];
            code_4bit(&row, scale, &mean, &mut fast);
            code_4bit_scalar(&row, scale, &mean, &mut slow);
            assert_eq!(fast, slow, "{dims} dims, scale {scale}");
        }
    }
}

/// A xorshift sequence from `seed` (not 0).
pub(super) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// Coded vectors: `distinct` unit vectors of `dims` dimensions, each `times` over in a row
/// (equal codes, equal scores), numbered as chunks in order.
fn repeated(distinct: usize, dims: usize, times: usize) -> Coded {
    numbered(
        unit_vectors(distinct, dims)
            .into_iter()
            .flat_map(|v| std::iter::repeat_n(v, times)),
    )
}

/// Coded `vectors`, numbered as chunks in order.
fn numbered(vectors: impl Iterator<Item = QVec>) -> Coded {
    let vectors: Vec<QVec> = vectors
        .enumerate()
        .map(|(c, v)| QVec {
            chunk: c as u32,
            ..v
        })
        .collect();
    let VectorIndex::Coded(coded) = VectorIndex::build(store(vectors), 1) else {
        unreachable!()
    };
    coded
}

/// `n` unit vectors of `dims` dimensions from a fixed linear congruential sequence, with a
/// shared offset (real embeddings share one too: it is what the codes' mean removes).
fn unit_vectors(n: usize, dims: usize) -> Vec<QVec> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
    };
    (0..n as u32)
        .map(|c| {
            let mut v: Vec<f32> = (0..dims).map(|d| next() + 0.3 * (d % 3) as f32).collect();
            crate::embed::normalize(&mut v);
            QVec::quantize(c, &v)
        })
        .collect()
}

fn query(dims: usize, seed: usize) -> Vec<f32> {
    let mut q: Vec<f32> = (0..dims)
        .map(|d| (((d * 7 + seed * 13) % 11) as f32 - 5.0) + 1.5 * (d % 3) as f32)
        .collect();
    crate::embed::normalize(&mut q);
    q
}

#[test]
fn flat_vectors_hold_the_same_values_and_score_to_the_bit() {
    // Odd dims (a padded last nibble), 4-bit vectors, then one that needs int8.
    let four: Vec<QVec> = unit_vectors(30, 17).iter().map(QVec::to_4bit).collect();
    let mut v = Vectors::new(17);
    for q in &four {
        v.push(q.chunk, q.scale, &q.data).unwrap();
    }
    assert_eq!((v.bits(), v.len()), (4, 30));
    assert_eq!(v.values.len(), 30 * 9);
    let q = query(17, 3);
    for (i, x) in four.iter().enumerate() {
        assert_eq!(v.get(i), *x);
        assert_eq!(v.dot_f32(i, &q).to_bits(), x.dot_f32(&q).to_bits());
    }
    let wide = unit_vectors(31, 17).pop().unwrap();
    v.push(wide.chunk, wide.scale, &wide.data).unwrap();
    assert_eq!((v.bits(), v.len()), (8, 31));
    assert!(v.iter().take(30).eq(four.iter().cloned()));
    assert_eq!(v.get(30), wide);
    // The form is a function of the values: the same set read as int8 QVecs.
    assert_eq!(store(v.iter().collect()), v);
    // A vector of another length is refused, and the set is unchanged.
    let err = v.push(99, 1.0, &[1, 2, 3]).unwrap_err();
    assert!(err.contains("3 dims"), "{err}");
    assert_eq!(v.len(), 31);
    assert!(Vectors::from_qvecs(vec![four[0].clone(), unit_vectors(1, 5)[0].clone()]).is_err());
}

/// Four sums at a time give each vector's `dot_f32` to the bit: at 4 and 8 bits, odd dims,
/// any number of positions in any order, a query shorter than the vectors, and sums of
/// zeros (−0 where every product is, as `Iterator::sum` gives it).
#[test]
fn four_dot_products_at_a_time_are_each_ones_bits() {
    let mut four: Vec<QVec> = unit_vectors(30, 17).iter().map(QVec::to_4bit).collect();
    four[7].data.iter_mut().for_each(|d| *d = 0);
    // Every product −0 against the zero query: the sum keeps its sign only from −0.
    four[8].data.iter_mut().for_each(|d| *d = -3);
    let wide: Vec<QVec> = unit_vectors(30, 17)
        .into_iter()
        .map(|mut v| {
            v.data[0] = -100;
            v
        })
        .collect();
    for set in [store(four), store(wide)] {
        for q in [query(17, 1), query(17, 2)[..9].to_vec(), vec![0.0; 17]] {
            for positions in [
                (0..30).collect::<Vec<u32>>(),
                vec![7, 3, 29, 7, 0],
                vec![],
                vec![5, 6, 7],
                (0..30).rev().collect(),
            ] {
                let got = set.dots_f32(&positions, &q);
                let want: Vec<f32> = positions
                    .iter()
                    .map(|&i| set.dot_f32(i as usize, &q))
                    .collect();
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&got),
                    bits(&want),
                    "{} bits, {positions:?}",
                    set.bits()
                );
            }
        }
    }
}

#[test]
fn transposing_moves_every_byte_and_comes_back() {
    for (rows, cols) in [
        (8, 8),
        (16, 24),
        (13, 21),
        (3, 70),
        (200, 9),
        (1, 1),
        (0, 5),
        // More than one tile of columns, whole and with a partial last one.
        (24, 2 * TILE_COLUMNS),
        (19, 2 * TILE_COLUMNS + 13),
        (2 * TILE_COLUMNS + 5, 16),
    ] {
        let src: Vec<u8> = (0..rows * cols).map(|i| (i * 7 + i / 5) as u8).collect();
        let t = transpose(&src, rows, cols);
        for r in 0..rows {
            for c in 0..cols {
                assert_eq!(
                    t[c * rows + r],
                    src[r * cols + c],
                    "{rows}×{cols} at {r},{c}"
                );
            }
        }
        assert_eq!(transpose(&t, cols, rows), src);
    }
}

#[test]
fn codes_are_the_signs_around_the_mean() {
    let vectors = vec![
        QVec {
            chunk: 0,
            scale: 1.0,
            data: vec![3, -1, 0, 9, 1, 1, 1, 1, -5],
        },
        QVec {
            chunk: 1,
            scale: 1.0,
            data: vec![1, 1, 2, -9, 1, 1, 1, 1, 5],
        },
    ];
    let c = Coded::build(store(vectors));
    // Means 2, 0, 1, 0, 1, 1, 1, 1, 0. Dims 0..8 in byte 0 (bit d), dim 8 in bit 0 of
    // byte 1; equal to the mean is 0, and the levels are each side's mean.
    assert_eq!(c.row_codes(), vec![0b0000_1001, 0b0, 0b0000_0110, 0b1]);
    assert_eq!(c.high, vec![3.0, 1.0, 2.0, 9.0, 1.0, 1.0, 1.0, 1.0, 5.0]);
    assert_eq!(c.low, vec![1.0, -1.0, 0.0, -9.0, 1.0, 1.0, 1.0, 1.0, -5.0]);
}

#[test]
fn a_shortlist_covering_everything_is_the_exact_scan() {
    let vectors = unit_vectors(300, 40);
    let flat = VectorIndex::Flat(store(vectors.clone()));
    let coded = VectorIndex::build(store(vectors), 1);
    assert!(matches!(coded, VectorIndex::Coded(_)));
    for seed in 0..5 {
        let q = query(40, seed);
        assert_eq!(coded.nearest(&q, 10), flat.nearest(&q, 10));
    }
}

#[test]
fn the_first_pass_keeps_the_best_of_every_score_ties_to_the_lower_position() {
    // Each vector four times over (equal codes, equal scores), so the floor the scan keeps
    // meets ties at every size; the best `keep` must be those of all the scores.
    let coded = repeated(500, 48, 4);
    let n = coded.vectors.len();
    let odd = |c: u32| c % 2 == 1;
    for seed in 0..4 {
        let q = query(48, seed);
        let mut all = coded.first_pass(&q, n, None);
        assert_eq!(all.len(), n);
        all.sort_by(best_first);
        let mut allowed = coded.first_pass(&q, n, Some(&odd));
        allowed.sort_by(best_first);
        assert!(allowed.iter().all(|&(i, _)| i % 2 == 1));
        for keep in [1, 3, 4, 7, 100, 999, n - 1, n + 5] {
            let mut got = coded.first_pass(&q, keep, None);
            got.sort_by(best_first);
            assert_eq!(got, all[..keep.min(n)], "keep {keep}");
            let mut got = coded.first_pass(&q, keep, Some(&odd));
            got.sort_by(best_first);
            assert_eq!(got, allowed[..keep.min(allowed.len())], "keep {keep}, odd");
        }
    }
}

/// The quantized sums, 32 codes a step where the CPU allows, are each code's parts added
/// one by one: random codes and parts, a partial last block, widths of 1 to 96 bytes.
#[test]
fn quantized_sums_are_each_codes_parts_added() {
    let mut next = xorshift(0x51_7cc1_b727_220a);
    for (cb, n) in [(1, 1), (1, 33), (6, 64), (48, 1_000), (48, 31), (96, 95)] {
        let parts: Vec<[u8; 16]> = (0..2 * cb)
            .map(|_| std::array::from_fn(|_| next() as u8))
            .collect();
        let rows: Vec<u8> = (0..n * cb).map(|_| next() as u8).collect();
        let vectors = store(unit_vectors(n, 8 * cb));
        let codes = blocked(&rows, &vectors).unwrap();
        let sums = quantized_sums(&codes, &parts, n);
        assert_eq!(sums.len(), n);
        for (i, code) in rows.chunks_exact(cb).enumerate() {
            let want: u32 = code
                .iter()
                .enumerate()
                .map(|(j, &v)| {
                    parts[j][(v & 15) as usize] as u32 + parts[cb + j][(v >> 4) as usize] as u32
                })
                .sum();
            assert_eq!(sums[i] as u32, want, "{cb} bytes, code {i}");
        }
    }
}

/// The first pass through integer bounds and SIMD sums keeps what one scan of every f32
/// score keeps, ties included (each vector eight times over, so equal scores straddle the
/// bound): without a filter, with one that allows half, one in 50 (the walk goes deep) and
/// fewer than it is asked to keep.
#[test]
fn the_bounded_first_pass_keeps_what_one_scan_keeps() {
    let coded = repeated(8_800, 16, 8).unshared();
    let n = coded.vectors.len();
    let half = |c: u32| c % 2 == 1;
    let sparse = |c: u32| c % 50 == 7;
    let few = |c: u32| c < 30;
    for seed in 0..3 {
        let q = query(16, seed);
        for keep in [1, 7, 8, 9, 1_600, 40_000, n - 1] {
            let bounded = coded.first_pass_best(&q, keep);
            assert_eq!(bounded.len(), keep);
            assert_eq!(
                bounded,
                coded.first_pass_scanned(&q, keep, None),
                "keep {keep}"
            );
            for (name, allow) in [
                ("half", &half as &dyn Fn(u32) -> bool),
                ("sparse", &sparse),
                ("few", &few),
            ] {
                let bounded = coded.first_pass_best_where(&q, keep, allow);
                let scanned = coded.first_pass_scanned(&q, keep, Some(allow));
                assert!(bounded.iter().all(|&c| allow(c)));
                assert_eq!(bounded, scanned, "keep {keep}, {name}");
            }
        }
    }
}

/// A shortlist's cosines worked out once per distinct vector are each position's own, the
/// same bits: copies, and distinct vectors under one score (more of them than are compared).
#[test]
fn each_distinct_vector_of_a_shortlist_is_scored_once_to_the_same_bits() {
    let coded = numbered(unit_vectors(40, 16).into_iter().cycle().take(400));
    assert!(coded.shared.is_some());
    let q = query(16, 1);
    let positions: Vec<u32> = (0..400).rev().step_by(3).collect();
    let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
    let want = bits(coded.vectors.dots_f32(&positions, &q));
    for score in [
        |_: u32| 0.5f32,
        |i: u32| (i % 40 / 7) as f32,
        |i: u32| (i % 40) as f32,
    ] {
        let pass: Vec<(u32, f32)> = positions.iter().map(|&i| (i, score(i))).collect();
        assert_eq!(bits(coded.dots_once_each(&pass, &q)), want);
    }
}

/// Equal vectors share one code, scored once: the first pass over shared codes keeps what
/// the one over a code for each vector keeps, ties included, with the copies in a row or
/// spread over the collection, without a filter and with filters that cut groups apart.
#[test]
fn shared_codes_keep_what_a_code_for_each_vector_keeps() {
    let spread = numbered(unit_vectors(3_000, 64).into_iter().cycle().take(21_000));
    let mixed = numbered(
        unit_vectors(9_000, 16)
            .into_iter()
            .enumerate()
            .flat_map(|(i, v)| std::iter::repeat_n(v, 1 + (i % 4 == 0) as usize * 5)),
    );
    let half = |c: u32| c % 2 == 1;
    let sparse = |c: u32| c % 50 == 7;
    let few = |c: u32| c < 30;
    let none = |_: u32| false;
    for (name, shared, codes, dims) in [
        ("in a row", repeated(1_100, 16, 8), 1_100, 16),
        ("spread", spread, 3_000, 64),
        ("mixed", mixed, 9_000, 16),
    ] {
        assert_eq!(shared.n_codes(), codes, "{name}");
        assert!(VectorIndex::Coded(shared.clone())
            .validate(shared.vectors.len(), dims)
            .is_ok());
        let each = shared.unshared();
        assert_eq!(
            (each.n_codes(), each.row_codes()),
            (each.vectors.len(), shared.row_codes())
        );
        let n = shared.vectors.len();
        for seed in 0..3 {
            let q = query(dims, seed);
            for keep in [1, 5, 6, 7, 8, 9, 1_600, n - 1, n, n + 3] {
                let what = format!("{name}, keep {keep}, seed {seed}");
                assert_eq!(
                    shared.first_pass_best(&q, keep),
                    each.first_pass_best(&q, keep),
                    "{what}"
                );
                assert_eq!(
                    shared.first_pass_scanned(&q, keep, None),
                    each.first_pass_scanned(&q, keep, None),
                    "{what}"
                );
                assert_eq!(
                    shared.nearest_where(&q, keep, None),
                    each.nearest_where(&q, keep, None)
                );
                for (filter, allow) in [
                    ("half", &half as &dyn Fn(u32) -> bool),
                    ("sparse", &sparse),
                    ("few", &few),
                    ("none", &none),
                ] {
                    assert_eq!(
                        shared.nearest_where(&q, keep, Some(allow)),
                        each.nearest_where(&q, keep, Some(allow)),
                        "{what}, {filter}"
                    );
                    let got = shared.first_pass_best_where(&q, keep, allow);
                    assert_eq!(
                        got,
                        each.first_pass_best_where(&q, keep, allow),
                        "{what}, {filter}"
                    );
                    assert_eq!(
                        got,
                        shared.first_pass_scanned(&q, keep, Some(allow)),
                        "{what}, {filter}"
                    );
                }
            }
        }
    }
    // Distinct vectors, or too few repeats to pay, keep a code each.
    for coded in [
        numbered(unit_vectors(2_000, 16).into_iter()),
        numbered(unit_vectors(2_000, 16).into_iter().cycle().take(2_400)),
    ] {
        assert!(coded.shared.is_none());
        assert_eq!(coded.n_codes(), coded.vectors.len());
    }
}

/// Groups that do not cover the vectors once each, in order, are corrupt.
#[test]
fn broken_groups_are_corrupt() {
    let coded = repeated(100, 16, 4);
    let good = coded.shared.clone().unwrap();
    assert!(good.check(400).is_ok());
    let mut cases = Vec::new();
    let mut s = good.clone();
    s.members.swap(0, 1);
    cases.push(("a group out of order", s));
    let mut s = good.clone();
    s.members[3] = 4;
    cases.push(("a position twice", s));
    let mut s = good.clone();
    s.members[3] = 400;
    cases.push(("past the end", s));
    let mut s = good.clone();
    s.starts[1] = 0;
    cases.push(("an empty group", s));
    let mut s = good.clone();
    *s.starts.last_mut().unwrap() = 401;
    cases.push(("do not cover", s));
    let mut s = good.clone();
    s.starts.pop();
    cases.push(("do not cover", s));
    let mut s = good.clone();
    s.members.swap(0, 4);
    s.members.swap(1, 5);
    s.members.swap(2, 6);
    s.members.swap(3, 7);
    cases.push(("out of order", s));
    for (want, shared) in cases {
        let m = shared.check(400).unwrap_err();
        assert!(m.contains(want), "{want}: {m}");
        let mut c = coded.clone();
        c.shared = Some(shared);
        let m = format!("{:?}", VectorIndex::Coded(c).validate(400, 16));
        assert!(m.contains("shared vectors"), "{m}");
    }
}

#[test]
fn the_first_pass_finds_most_true_neighbours_in_a_short_list() {
    let vectors = unit_vectors(20_000, 64);
    let flat = VectorIndex::Flat(store(vectors.clone()));
    let VectorIndex::Coded(coded) = VectorIndex::build(store(vectors), 1) else {
        unreachable!()
    };
    let (mut found, mut total) = (0, 0);
    for seed in 0..20 {
        let q = query(64, seed);
        let truth: Vec<u32> = flat.nearest(&q, 10).into_iter().map(|h| h.0).collect();
        let got = coded.nearest_where(&q, 10, None);
        // Whatever it finds carries its exact cosine, best first.
        assert!(got.windows(2).all(|w| w[0].1 >= w[1].1));
        for (c, s) in &got {
            let exact = flat.similarity(&q, &[*c])[0].unwrap();
            assert_eq!(*s, exact);
        }
        found += got.iter().filter(|h| truth.contains(&h.0)).count();
        total += truth.len();
    }
    // 1,600 of 20,000 (8 %) rescored; a first pass no better than chance would find 8 %.
    assert!(found * 10 >= total * 9, "{found} of {total}");
}

#[test]
fn a_filtered_search_reads_only_allowed_codes() {
    let vectors = unit_vectors(10_000, 32);
    let VectorIndex::Coded(coded) = VectorIndex::build(store(vectors.clone()), 1) else {
        unreachable!()
    };
    let q = query(32, 3);
    let odd = coded.nearest_where(&q, 20, Some(&|c| c % 2 == 1));
    assert_eq!(odd.len(), 20);
    assert!(odd.iter().all(|h| h.0 % 2 == 1));
    let exact: Vec<(u32, f32)> = VectorIndex::Flat(store(vectors))
        .nearest(&q, usize::MAX)
        .into_iter()
        .filter(|h| h.0 % 2 == 1)
        .take(20)
        .collect();
    // 5,000 allowed, 1,600 rescored: the best 20 are all found at this size.
    assert_eq!(odd, exact);
}

#[test]
fn a_query_of_the_wrong_length_is_scored_without_panicking() {
    let coded = VectorIndex::build(store(unit_vectors(50, 16)), 1);
    assert_eq!(coded.nearest(&[0.5; 3], 5).len(), 5);
    assert_eq!(coded.nearest(&[0.1; 40], 5).len(), 5);
    assert_eq!(coded.nearest(&[], 5).len(), 5);
}

#[test]
fn the_4bit_form_reads_levels_off_the_int8_values() {
    let v = QVec {
        chunk: 7,
        scale: 0.5,
        data: vec![127, -127, 0, 9, -10, 64, -1, 118],
    };
    let f = v.to_4bit();
    // q = round(7d / 127), halves away from zero; scale 0.5 · 127 / 7.
    assert_eq!(f.data, vec![7, -7, 0, 0, -1, 4, 0, 7]);
    assert_eq!(f.scale, 0.5 * 127.0 / 7.0);
    assert_eq!(f.chunk, 7);
    assert!(f.is_4bit() && !v.is_4bit());
    // Already 4-bit: unchanged, so an incremental build reuses a vector as it was written.
    assert_eq!(f.to_4bit(), f);
    let zero = QVec {
        chunk: 1,
        scale: 1.0,
        data: vec![0; 4],
    };
    assert_eq!(zero.to_4bit(), zero);
}

#[test]
fn the_4bit_form_keeps_cosines_within_two_hundredths() {
    let vectors = unit_vectors(200, 384);
    let mut worst = 0f32;
    for seed in 0..5 {
        let q = query(384, seed);
        for v in &vectors {
            worst = worst.max((v.dot_f32(&q) - v.to_4bit().dot_f32(&q)).abs());
        }
    }
    assert!(worst < 0.02, "{worst}");
}

#[test]
fn vectors_are_written_in_deflated_rows_and_read_back() {
    let int8 = unit_vectors(300, 41);
    let four: Vec<QVec> = int8.iter().map(QVec::to_4bit).collect();
    for (index, expect) in [
        (VectorIndex::Flat(store(int8.clone())), ("exact", 8)),
        (VectorIndex::build(store(int8.clone()), 1), ("coded", 8)),
        (VectorIndex::Flat(store(four.clone())), ("exact", 4)),
        (VectorIndex::build(store(four.clone()), 1), ("coded", 4)),
    ] {
        let bytes = postcard::to_allocvec(&index).unwrap();
        assert_eq!(wire_kind(&bytes), Some(expect));
        // The builder's pieces are the same bytes.
        assert_eq!(index.section_pieces().unwrap().concat(), bytes);
        let back = decode(&bytes).unwrap();
        assert_eq!(
            back.vectors().collect::<Vec<_>>(),
            index.vectors().collect::<Vec<_>>()
        );
        // The codes computed when read are the ones the build made.
        if let (VectorIndex::Coded(a), VectorIndex::Coded(b)) = (&back, &index) {
            assert_eq!(a, b);
        }
        assert_eq!(postcard::to_allocvec(&back).unwrap(), bytes);
    }
    let size = |v: &VectorIndex| postcard::to_allocvec(v).unwrap().len();
    assert!(
        size(&VectorIndex::Flat(store(four))) * 2 < size(&VectorIndex::Flat(store(int8))) + 300 * 8
    );
}

#[test]
fn rows_span_blocks_and_keep_their_chunks() {
    // Vectors for every third chunk, over three blocks.
    let n = ROWS_PER_BLOCK * 2 + 10;
    let base = unit_vectors(7, 12);
    let vectors: Vec<QVec> = (0..n)
        .map(|i| QVec {
            chunk: 3 * i as u32 + 1,
            ..base[i % 7].to_4bit()
        })
        .collect();
    let rows = Rows::pack(&store(vectors.clone())).unwrap();
    assert_eq!(
        rows.blocks.iter().map(|b| b.rows).collect::<Vec<_>>(),
        [ROWS_PER_BLOCK as u32, ROWS_PER_BLOCK as u32, 10]
    );
    assert_eq!(rows.unpack().unwrap(), store(vectors.clone()));
    // Written in pieces, each block's bytes on their own, as a whole.
    for index in [
        VectorIndex::Flat(store(vectors.clone())),
        VectorIndex::build(store(vectors), 1),
    ] {
        let pieces = index.section_pieces().unwrap();
        assert!(pieces.len() >= 6, "{}", pieces.len());
        assert_eq!(pieces.concat(), postcard::to_allocvec(&index).unwrap());
    }
    // No vectors at all.
    let empty = VectorIndex::Flat(Vectors::new(12));
    let bytes = postcard::to_allocvec(&empty).unwrap();
    assert_eq!(empty.section_pieces().unwrap().concat(), bytes);
}

#[test]
fn rows_that_do_not_add_up_are_refused() {
    let vectors: Vec<QVec> = unit_vectors(20, 10).iter().map(QVec::to_4bit).collect();
    let read = |rows: Rows| {
        let mut bytes = vec![5u8];
        bytes.extend(postcard::to_allocvec(&rows).unwrap());
        decode(&bytes).map(|_| ())
    };
    assert!(read(Rows::pack(&store(vectors.clone())).unwrap()).is_ok());
    let change = |f: &dyn Fn(&mut Rows)| {
        let mut rows = Rows::pack(&store(vectors.clone())).unwrap();
        f(&mut rows);
        read(rows).unwrap_err().to_string()
    };
    // More or fewer rows than the block holds, no rows, a damaged stream, an odd width.
    assert!(change(&|r| r.blocks[0].rows += 1).contains("does not inflate"));
    assert!(change(&|r| r.blocks[0].rows -= 1).contains("does not inflate"));
    assert!(change(&|r| r.blocks[0].rows = 0).contains("does not inflate"));
    assert!(change(&|r| r.blocks[0].rows = u32::MAX).contains("does not inflate"));
    assert!(change(&|r| r.blocks[0].deflated.0[3] ^= 0x5a).contains("block 0"));
    assert!(change(&|r| r.bits = 5).contains("5 bits"));
    assert!(change(&|r| r.dims = u32::MAX).contains("dims"));
    // A chunk step that runs past 2^32.
    let mut far = vectors.clone();
    far[19].chunk = u32::MAX;
    far[18].chunk = u32::MAX - 1;
    let mut rows = Rows::pack(&store(far.clone())).unwrap();
    let mut twice = Rows::pack(&store(far.clone())).unwrap();
    twice.blocks.push(rows.blocks.remove(0));
    assert!(read(twice)
        .unwrap_err()
        .to_string()
        .contains("past the last chunk"));
    // Codes' levels of another length than the vectors'.
    let VectorIndex::Coded(c) = VectorIndex::build(store(vectors.clone()), 1) else {
        unreachable!()
    };
    let mut bytes = vec![6u8];
    bytes.extend(
        postcard::to_allocvec(&CodedRows {
            rows: Rows::pack(&store(vectors.clone())).unwrap(),
            mean: means(&store(vectors.clone()))[1..].to_vec(),
            low: c.low,
            high: c.high,
        })
        .unwrap(),
    );
    let err = decode(&bytes).unwrap_err().to_string();
    assert!(err.contains("means"), "{err}");
}

#[test]
fn codes_that_do_not_fit_their_vectors_are_corrupt() {
    let VectorIndex::Coded(mut c) = VectorIndex::build(store(unit_vectors(10, 16)), 1) else {
        unreachable!()
    };
    c.codes.pop();
    let m = format!("{:?}", VectorIndex::Coded(c.clone()).validate(10, 16));
    assert!(m.contains("code bytes"), "{m}");
    c.codes.push(0);
    c.high.pop();
    let m = format!("{:?}", VectorIndex::Coded(c).validate(10, 16));
    assert!(m.contains("levels"), "{m}");
}

/// Formats 1 to 7's vector forms (an HNSW graph, 4-bit vectors packed) are no longer read:
/// their bundles are refused by version first, and one in a newer bundle is corrupt.
#[test]
fn the_retired_vector_forms_are_corrupt() {
    for variant in [1u8, 3, 4] {
        let m = decode(&[variant]).unwrap_err().to_string();
        assert!(m.contains("formats 1 to 7"), "{m}");
    }
}
