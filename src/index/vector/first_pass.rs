//! The compact first pass: one bit per dimension ([`Coded`]), scanned against the query's
//! own values, its shortlist rescored exactly on the stored vectors.

use super::*;

/// How many candidates the compact first pass hands to exact rescoring for a request of `k`.
/// Chosen on SciFact's train queries with both models (`examples/first_pass`): the smallest
/// tried (100–1,600 for k = 100) at which recall@100 reaches HNSW's (`docs/measurements/2026-11-29-compact-codes-vs-hnsw.md`).
pub fn shortlist(k: usize) -> usize {
    k.saturating_mul(SHORTLIST_FACTOR).max(SHORTLIST_MIN)
}
pub(super) const SHORTLIST_FACTOR: usize = 16;
pub(super) const SHORTLIST_MIN: usize = 1600;

/// One bit per dimension of each int8 vector, for a first pass that reads 1/8 of their bytes.
/// Bit `b` of byte `j` of a code is set when dimension `d = 8j + b` of the vector lies above
/// the collection's mean there; the first pass reads a set bit as `high[d]` and a clear one as
/// `low[d]`, the collection's mean value of that dimension on each side of its mean (the best
/// one-bit reconstruction of the dimension, which keeps how much each one varies).
#[derive(Debug, Clone, PartialEq)]
pub struct Coded {
    /// Per dimension, the mean of the values at or below the collection's mean.
    pub low: Vec<f32>,
    /// Per dimension, the mean of the values above it.
    pub high: Vec<f32>,
    /// The codes in blocks of [`BLOCK`]: byte `j` of the code of `vectors[i]` is at
    /// `(i / BLOCK) · BLOCK · code_bytes(dims) + j · BLOCK + i % BLOCK` (the last block padded
    /// with zeros), so that byte `j` of a block's codes lies side by side for the first pass's
    /// SIMD look-ups ([`Coded::first_pass`]). [`Coded::code`] reads one code. With
    /// `shared`, code `i` is that of the `i`-th distinct vector, not of `vectors[i]`.
    pub(super) codes: Vec<u8>,
    /// Sorted by chunk id.
    pub vectors: Vectors,
    /// Where vectors repeat, each distinct one's code once, and the positions that share it.
    pub(super) shared: Option<Shared>,
}

/// The positions whose vectors are the same to the bit (scale and values): they have one
/// code, so one first-pass score, and the first pass scores each code once. Versioned docs
/// repeat their sections (PowerShell-Docs keeps five copies of each cmdlet page: 68,078
/// chunks, 24,014 distinct texts), and a copy's chunk is embedded to the same vector.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Shared {
    /// Code `k`'s positions are `members[starts[k]..starts[k + 1]]`, rising; the codes are
    /// numbered in the order of their first position.
    pub(super) starts: Vec<u32>,
    pub(super) members: Vec<u32>,
}

impl Shared {
    /// Groups `vectors` by equal vectors, where that pays: `None` when fewer than a quarter
    /// of them repeat another (the positions, 4 bytes each, and the starts would cost more
    /// than the codes they save), else the groups and each position's code.
    pub(super) fn of(vectors: &Vectors) -> Option<(Shared, Vec<u32>)> {
        use std::collections::HashMap;
        use std::hash::{BuildHasherDefault, Hash, Hasher};
        let n = vectors.len();
        if n < 2 || n > u32::MAX as usize {
            return None;
        }
        // A vector as a key: its bits, hashed once (on every core natively), with the
        // process's random keys, so that no bundle can make its rows collide.
        struct Key<'a>(u64, u32, &'a [u8]);
        impl PartialEq for Key<'_> {
            fn eq(&self, o: &Self) -> bool {
                self.0 == o.0 && self.1 == o.1 && self.2 == o.2
            }
        }
        impl Eq for Key<'_> {}
        impl Hash for Key<'_> {
            fn hash<H: Hasher>(&self, h: &mut H) {
                h.write_u64(self.0);
            }
        }
        #[derive(Default)]
        struct Given(u64);
        impl Hasher for Given {
            fn finish(&self) -> u64 {
                self.0
            }
            fn write(&mut self, _: &[u8]) {
                unreachable!("keys hash as one u64")
            }
            fn write_u64(&mut self, x: u64) {
                self.0 = x;
            }
        }
        let random = std::hash::RandomState::new();
        let key = |i: usize| {
            let (scale, row) = (vectors.scales[i].to_bits(), vectors.row(i));
            Key(
                std::hash::BuildHasher::hash_one(&random, (scale, row)),
                scale,
                row,
            )
        };
        #[cfg(not(target_arch = "wasm32"))]
        let keys: Vec<Key> = {
            use rayon::prelude::*;
            (0..n).into_par_iter().with_min_len(4096).map(key).collect()
        };
        #[cfg(target_arch = "wasm32")]
        let keys: Vec<Key> = (0..n).map(key).collect();
        let mut first: HashMap<&Key, u32, BuildHasherDefault<Given>> = HashMap::default();
        let code_of: Vec<u32> = keys
            .iter()
            .map(|k| {
                let next = first.len() as u32;
                *first.entry(k).or_insert(next)
            })
            .collect();
        let codes = first.len();
        if codes * 4 > n * 3 {
            return None;
        }
        let mut starts = vec![0u32; codes + 1];
        for &k in &code_of {
            starts[k as usize + 1] += 1;
        }
        for k in 0..codes {
            starts[k + 1] += starts[k];
        }
        let mut fill = starts.clone();
        let mut members = vec![0u32; n];
        for (i, &k) in code_of.iter().enumerate() {
            members[fill[k as usize] as usize] = i as u32;
            fill[k as usize] += 1;
        }
        Some((Shared { starts, members }, code_of))
    }

    pub(super) fn codes(&self) -> usize {
        self.starts.len() - 1
    }

    /// The positions of code `k`.
    pub(super) fn of_code(&self, k: usize) -> &[u32] {
        &self.members[self.starts[k] as usize..self.starts[k + 1] as usize]
    }

    /// Structural checks for groups read from outside (the CLI's vector cache): `n`
    /// positions, each in one group, groups not empty and rising, numbered by first position.
    pub(super) fn check(&self, n: usize) -> std::result::Result<(), String> {
        let bad = |m: &str| Err(format!("shared vectors: {m}"));
        if self.starts.first() != Some(&0)
            || self.starts.last().map(|&l| l as usize) != Some(n)
            || self.members.len() != n
        {
            return bad("the groups do not cover the vectors");
        }
        if self.starts.windows(2).any(|w| w[0] >= w[1]) {
            return bad("an empty group");
        }
        let mut seen = vec![false; n];
        let mut last_first = None;
        for k in 0..self.codes() {
            let group = self.of_code(k);
            if group.windows(2).any(|w| w[0] >= w[1]) || last_first >= Some(group[0]) {
                return bad("a group out of order");
            }
            last_first = Some(group[0]);
            for &m in group {
                match seen.get_mut(m as usize) {
                    Some(s) if !*s => *s = true,
                    _ => return bad("a position twice or past the end"),
                }
            }
        }
        Ok(())
    }
}

/// Bytes of one code for `dims` dimensions.
pub fn code_bytes(dims: usize) -> usize {
    dims.div_ceil(8)
}

/// Codes a block of [`Coded`]'s layout holds: the lanes of one AVX2 register.
pub const BLOCK: usize = 32;

/// Where byte 0 of code `i` lies in [`Coded`]'s blocks of `cb`-byte codes (byte `j` is
/// `j · BLOCK` further).
pub(super) fn block_offset(i: usize, cb: usize) -> usize {
    i / BLOCK * BLOCK * cb + i % BLOCK
}

/// Bytes of `n` codes of `dims` dimensions in blocks.
pub(super) fn blocked_len(n: usize, dims: usize) -> usize {
    n.div_ceil(BLOCK) * BLOCK * code_bytes(dims)
}

/// Codes stored one after another (formats 4–7) in [`Coded`]'s blocks, when there is one
/// for each of `vectors`.
pub(super) fn blocked(rows: &[u8], vectors: &Vectors) -> std::result::Result<Vec<u8>, String> {
    let (n, cb) = (vectors.len(), code_bytes(vectors.dims()));
    if rows.len() as u64 != n as u64 * cb as u64 {
        return Err(format!(
            "{} code bytes for {n} vectors of {} dims",
            rows.len(),
            vectors.dims()
        ));
    }
    let mut codes = vec![0u8; blocked_len(n, vectors.dims())];
    for (i, code) in rows.chunks_exact(cb.max(1)).enumerate().take(n) {
        let at = block_offset(i, cb);
        for (j, &b) in code.iter().enumerate() {
            codes[at + j * BLOCK] = b;
        }
    }
    Ok(codes)
}

/// The collection's mean of each dimension: sums in chunk order, in f64, so a build is
/// reproducible and a reader computes the same codes.
pub(super) fn means(vectors: &Vectors) -> Vec<f64> {
    let dims = vectors.dims();
    let mut sum = vec![0f64; dims];
    let mut values = vec![0f64; dims];
    for i in 0..vectors.len() {
        vectors.dequantize_into(i, &mut values);
        for (s, x) in sum.iter_mut().zip(&values) {
            *s += x;
        }
    }
    let n = vectors.len().max(1) as f64;
    sum.iter().map(|s| s / n).collect()
}

/// Each vector's code, or with `shared` each distinct vector's: bit `d` set where dimension
/// `d` lies above `mean[d]` (on every core natively; each code depends on its vector alone).
pub(super) fn codes_for(vectors: &Vectors, mean: &[f64], shared: Option<&Shared>) -> Vec<u8> {
    let cb = code_bytes(mean.len());
    let n = shared.map_or(vectors.len(), Shared::codes);
    let row = |k: usize| shared.map_or(k, |s| s.of_code(k)[0] as usize);
    let mut codes = vec![0u8; blocked_len(n, mean.len())];
    if cb == 0 {
        return codes;
    }
    // `value > m`, eight dimensions a byte (the same products: an i8 times an f32 is exact
    // in f64). At 4 bits a vector has 16 values, so those are computed once.
    let code = |values: &mut Vec<f64>, (k, code): (usize, &mut [u8])| {
        let i = row(k);
        if vectors.bits == 4 {
            code_4bit(vectors.row(i), vectors.scales[i] as f64, mean, code);
            return;
        }
        vectors.dequantize_into(i, values);
        for (byte, (values, means)) in code.iter_mut().zip(values.chunks(8).zip(mean.chunks(8))) {
            *byte = values
                .iter()
                .zip(means)
                .enumerate()
                .fold(0u8, |b, (k, (&x, &m))| b | ((x > m) as u8) << k);
        }
    };
    // A block's codes at a time (each on one core natively), each code made whole and then
    // laid into its lanes.
    let fill = |(values, one): &mut (Vec<f64>, Vec<u8>), (b, block): (usize, &mut [u8])| {
        for k in 0..BLOCK.min(n - b * BLOCK) {
            code(values, (b * BLOCK + k, one));
            for (j, &byte) in one.iter().enumerate() {
                block[j * BLOCK + k] = byte;
            }
        }
    };
    let buffer = || (vec![0f64; vectors.dims()], vec![0u8; cb]);
    #[cfg(not(target_arch = "wasm32"))]
    {
        use rayon::prelude::*;
        codes
            .par_chunks_exact_mut(BLOCK * cb)
            .enumerate()
            .with_min_len(32)
            .for_each_init(buffer, fill);
    }
    #[cfg(target_arch = "wasm32")]
    {
        let mut values = buffer();
        codes
            .chunks_exact_mut(BLOCK * cb)
            .enumerate()
            .for_each(|c| fill(&mut values, c));
    }
    codes
}

/// Code `i` of `codes` in [`Coded`]'s blocks, into `out` (`cb` bytes).
pub(super) fn code_of(codes: &[u8], cb: usize, i: usize, out: &mut [u8]) {
    let at = block_offset(i, cb);
    for (j, o) in out.iter_mut().enumerate().take(cb) {
        *o = codes[at + j * BLOCK];
    }
}

impl Coded {
    /// `vectors` must be sorted by chunk id. Every sum runs over the dequantized int8 values
    /// in chunk order, in f64, so a build is reproducible and an incremental build (same int8
    /// vectors) writes the same codes.
    pub fn build(vectors: Vectors) -> Coded {
        let dims = vectors.dims();
        let mean = means(&vectors);
        let (shared, code_at) = Shared::of(&vectors).unzip();
        let codes = codes_for(&vectors, &mean, shared.as_ref());
        let cb = code_bytes(dims);
        let (mut above, mut below) = (vec![(0f64, 0u32); dims], vec![(0f64, 0u32); dims]);
        let mut values = vec![0f64; dims];
        let mut code = vec![0u8; cb];
        for i in 0..vectors.len() {
            let k = code_at.as_ref().map_or(i, |c| c[i] as usize);
            code_of(&codes, cb, k, &mut code);
            vectors.dequantize_into(i, &mut values);
            for (d, &x) in values.iter().enumerate() {
                let side = if code[d / 8] >> (d % 8) & 1 == 1 {
                    &mut above[d]
                } else {
                    &mut below[d]
                };
                side.0 += x;
                side.1 += 1;
            }
        }
        let level = |sides: Vec<(f64, u32)>| -> Vec<f32> {
            sides
                .iter()
                .zip(&mean)
                .map(|(&(s, k), &m)| {
                    if k > 0 {
                        (s / k as f64) as f32
                    } else {
                        m as f32
                    }
                })
                .collect()
        };
        Coded {
            low: level(below),
            high: level(above),
            codes,
            shared,
            vectors,
        }
    }

    /// `Coded` as [`Coded::build`] makes it from the same `vectors`, given what it computed
    /// of them: the per-dimension `mean` and levels (format 8 stores those and not the codes,
    /// which this computes: on en-large-cpp-docs, 5.8 MB of the bundle for tens of
    /// milliseconds a load).
    pub fn from_levels(vectors: Vectors, mean: &[f64], low: Vec<f32>, high: Vec<f32>) -> Coded {
        let shared = Shared::of(&vectors).map(|s| s.0);
        Coded {
            codes: codes_for(&vectors, mean, shared.as_ref()),
            low,
            high,
            shared,
            vectors,
        }
    }

    /// `Coded` from codes given for each of `vectors` (formats 4–7's layout), none shared.
    pub(super) fn from_codes(
        vectors: Vectors,
        low: Vec<f32>,
        high: Vec<f32>,
        rows: &[u8],
    ) -> std::result::Result<Coded, String> {
        Ok(Coded {
            codes: blocked(rows, &vectors)?,
            low,
            high,
            shared: None,
            vectors,
        })
    }

    /// How many codes the first pass scores: one for each distinct vector where they are
    /// shared, else one for each vector.
    pub fn n_codes(&self) -> usize {
        self.shared
            .as_ref()
            .map_or(self.vectors.len(), Shared::codes)
    }

    /// The positions whose vectors have code `k`.
    fn positions_of(&self, k: usize) -> std::ops::Range<usize> {
        match &self.shared {
            None => k..k + 1,
            Some(s) => s.starts[k] as usize..s.starts[k + 1] as usize,
        }
    }

    /// The `j`-th position of a range [`Coded::positions_of`] gave.
    fn position(&self, j: usize) -> u32 {
        match &self.shared {
            None => j as u32,
            Some(s) => s.members[j],
        }
    }

    /// The code of each position.
    fn code_at(&self) -> Vec<u32> {
        let mut at = vec![0u32; self.vectors.len()];
        for k in 0..self.n_codes() {
            for j in self.positions_of(k) {
                at[self.position(j) as usize] = k as u32;
            }
        }
        at
    }

    pub(super) fn dims(&self) -> usize {
        self.low.len()
    }

    /// The code of `vectors[i]`, its bytes in order.
    pub fn code(&self, i: usize) -> Vec<u8> {
        self.code_k(self.code_at()[i] as usize)
    }

    /// Code `k`'s bytes in order.
    fn code_k(&self, k: usize) -> Vec<u8> {
        let mut out = vec![0u8; code_bytes(self.vectors.dims())];
        code_of(&self.codes, out.len(), k, &mut out);
        out
    }

    /// Every vector's code, one after another (the layout formats 4–7 stored).
    pub fn row_codes(&self) -> Vec<u8> {
        let at = self.code_at();
        at.iter().flat_map(|&k| self.code_k(k as usize)).collect()
    }

    /// The same index with a code for every vector, none shared: what the first pass over
    /// shared codes must agree with.
    #[cfg(test)]
    pub(super) fn unshared(&self) -> Coded {
        Coded::from_codes(
            self.vectors.clone(),
            self.low.clone(),
            self.high.clone(),
            &self.row_codes(),
        )
        .expect("a code for every vector")
    }

    /// The first pass's best `keep` allowed codes for the unit query `q`, as (position, score)
    /// in no particular order, scored ⟨q − c, x̂ − c⟩, where x̂ reads each bit as `high` or
    /// `low` and `c` is the midpoint of the two levels. Centring the query matters: with E5's
    /// vectors, which share a large common direction, the uncentred ⟨q, x̂⟩ found 64 % of the
    /// true top 100 in a shortlist of 400 on SciFact's train queries, the centred one 85 %
    /// (MiniLM: 98 % and 97 %). One 256-entry table per code byte turns the sum into
    /// `code_bytes` look-ups per vector. `allow` (None: every chunk) is asked with chunk ids.
    ///
    /// With fewer to keep than there are codes, the integer bounds of
    /// [`Coded::first_pass_bounded`] find the same best `keep` from a few thousand f32 scores.
    /// Otherwise (or where the bounds cannot be had) [`Coded::scan`] scores every allowed code,
    /// keeping the best as it goes: once
    /// `2 × keep` are held, the best `keep` of them stay and the worst of those becomes a
    /// floor that a later code must beat. A later code has a higher position, which loses a
    /// tie (`best_first`), so one at the floor cannot be among the best either: the result is
    /// the best `keep` of all the scores, as when every score was collected and the best
    /// taken (2.24M codes: 18 MB of scores a query).
    pub(super) fn first_pass(
        &self,
        q: &[f32],
        keep: usize,
        allow: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<(u32, f32)> {
        let Some(table) = self.tables(q).filter(|_| keep > 0) else {
            return Vec::new();
        };
        if keep < self.vectors.len() {
            if let Some(best) = self.first_pass_bounded(&table, keep, allow) {
                return best;
            }
        }
        self.scan(&table, keep, allow)
    }

    /// The first pass's look-up tables for the unit query `q`, one per code byte (none when the
    /// codes have no bytes): `table[j][v]` = Σ over the dims d of byte j of
    /// w[d] × (bit set ? ½ : −½), with w = (q − c)(high − low).
    pub(super) fn tables(&self, q: &[f32]) -> Option<Vec<[f32; 256]>> {
        let dims = self.dims();
        let cb = code_bytes(dims);
        if cb == 0 {
            return None;
        }
        let mut table = vec![[0f32; 256]; cb];
        for (j, t) in table.iter_mut().enumerate() {
            let span = j * 8..(j * 8 + 8).min(dims);
            // A query shorter than the codes (only a hand-given vector can be) reads as zeros
            // there, as `dot_f32` reads it.
            let w = |d: usize| {
                let (lo, hi) = (self.low[d], self.high[d]);
                (q.get(d).copied().unwrap_or(0.0) - (hi + lo) / 2.0) * (hi - lo)
            };
            let lows: Vec<f32> = span.clone().map(|d| -w(d) / 2.0).collect();
            let gains: Vec<f32> = span.map(w).collect();
            t[0] = lows.iter().sum();
            // Built from the value with its lowest bit cleared.
            for v in 1..256usize {
                let bit = v.trailing_zeros() as usize;
                t[v] = t[v & (v - 1)] + gains.get(bit).copied().unwrap_or(0.0);
            }
        }
        Some(table)
    }

    /// Code `k`'s score: its bytes' look-ups added in byte order from −0, as [`Coded::scan`]
    /// adds them.
    pub(super) fn score(&self, table: &[[f32; 256]], k: usize) -> f32 {
        let cb = table.len();
        let at = block_offset(k, cb);
        table
            .iter()
            .enumerate()
            .fold(-0.0, |s, (j, t)| s + t[self.codes[at + j * BLOCK] as usize])
    }

    /// Every allowed code's score, in order, and the best `keep` of them.
    pub(super) fn scan(
        &self,
        table: &[[f32; 256]],
        keep: usize,
        allow: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<(u32, f32)> {
        let cb = table.len();
        let (n, codes) = (self.vectors.len(), self.n_codes());
        let mut best: Vec<(u32, f32)> = Vec::with_capacity(keep.saturating_mul(2).min(n));
        let mut floor: Option<f32> = None;
        // Positions come in order unless codes are shared: then a later one may have a lower
        // position, which wins a tie, so only a score below the floor is out.
        let out = match self.shared {
            None => std::cmp::Ordering::is_le,
            Some(_) => std::cmp::Ordering::is_lt,
        };
        let mut consider = |i: u32, s: f32| {
            if floor.is_some_and(|f| out(s.total_cmp(&f)))
                || allow.is_some_and(|allow| !allow(self.vectors.chunks[i as usize]))
            {
                return;
            }
            best.push((i, s));
            if best.len() >= keep.saturating_mul(2) {
                best.select_nth_unstable_by(keep - 1, best_first);
                best.truncate(keep);
                floor = Some(best[keep - 1].1);
            }
        };
        // A block's codes side by side: each sum still adds its look-ups in byte order.
        for (b, block) in self.codes.chunks_exact(BLOCK * cb).enumerate() {
            let mut s = [-0.0f32; BLOCK];
            for (t, bytes) in table.iter().zip(block.chunks_exact(BLOCK)) {
                for (s, &v) in s.iter_mut().zip(bytes) {
                    *s += t[v as usize];
                }
            }
            for (k, s) in s.into_iter().enumerate().take(codes - b * BLOCK) {
                for j in self.positions_of(b * BLOCK + k) {
                    consider(self.position(j), s);
                }
            }
        }
        keep_best(&mut best, keep);
        best
    }

    /// [`Coded::scan`]'s answer for every code, found through integer bounds first. Each
    /// byte's table is split into a part per nibble (`t[v] ≈ lo[v & 15] + hi[v >> 4]`, in
    /// f64, the largest difference from the f32 entries measured), each part quantized to a
    /// byte on one scale Δ (`⌊(x − min) / Δ⌋`), and each code's 2 × `code_bytes` quantized
    /// parts summed in u16 (`Q`): 32 codes a step with AVX2 natively, 16 with wasm's SIMD,
    /// or one 256-entry table of sums a byte elsewhere; the same sums either way. A code's
    /// score then lies within `[base + QΔ − E, base + (Q + 2·code_bytes)Δ + E]`, `E` bounding
    /// the split, the rounding of the f32 sums and of the quantization. So whatever the
    /// `keep`-th highest `Q` is, every code among the best `keep` by score has a `Q` at most
    /// `2·code_bytes + 2E/Δ` below it; those codes (a few thousand among 2.24M) are scored as
    /// the scan scores them, and the best `keep` of them are the scan's. `None` (the scan is
    /// used) where the tables have no spread or the sums could pass u16. Shared codes are
    /// summed once and count for each of their (allowed) positions.
    pub(super) fn first_pass_bounded(
        &self,
        table: &[[f32; 256]],
        keep: usize,
        allow: Option<&dyn Fn(u32) -> bool>,
    ) -> Option<Vec<(u32, f32)>> {
        let cb = table.len();
        let mut parts = vec![[0f64; 16]; 2 * cb];
        let (mut err, mut magnitude) = (0f64, 0f64);
        for (j, t) in table.iter().enumerate() {
            let (lo, hi) = (j, cb + j);
            for v in 0..16 {
                parts[lo][v] = t[v] as f64;
                parts[hi][v] = t[16 * v] as f64 - t[0] as f64;
            }
            let mut split = 0f64;
            let mut largest = 0f64;
            for (v, &x) in t.iter().enumerate() {
                let x = x as f64;
                split = split.max((x - parts[lo][v & 15] - parts[hi][v >> 4]).abs());
                largest = largest.max(x.abs());
            }
            err += split;
            magnitude += largest;
        }
        // Adding `cb` f32 values moves each partial sum by at most half an ulp of it, so the
        // total by at most cb · 2⁻²⁴ · Σ|values|; doubled, with room for the f64 above.
        err = 2.0 * (err + magnitude * cb as f64 * f64::from(f32::EPSILON));
        let range = parts
            .iter()
            .map(|p| {
                p.iter().fold(f64::MIN, |m, &x| m.max(x))
                    - p.iter().fold(f64::MAX, |m, &x| m.min(x))
            })
            .fold(0f64, f64::max);
        if !(range.is_finite() && range > 0.0 && err.is_finite())
            || 2 * cb * 255 > u16::MAX as usize
        {
            return None;
        }
        let delta = range / 255.0;
        let mut quantized = vec![[0u8; 16]; 2 * cb];
        for (q, p) in quantized.iter_mut().zip(&parts) {
            let min = p.iter().fold(f64::MAX, |m, &x| m.min(x));
            for (q, &x) in q.iter_mut().zip(p) {
                *q = ((x - min) / delta).floor().clamp(0.0, 255.0) as u8;
            }
        }
        // The window is 2 · cb steps wide; a quotient rounded in f64 can floor to the step
        // below where a part sits on a step's edge, far less than a step off, which the
        // second 2 · cb steps cover with room to spare.
        let slack = 2 * (2 * cb) + (2.0 * err / delta).ceil() as usize + 1;
        let codes = self.n_codes();
        let sums = quantized_sums(&self.codes, &quantized, codes);
        let mut best: Vec<(u32, f32)> = Vec::new();
        match (allow, &self.shared) {
            // Shared codes with a filter: the codes are walked in order of their sums (a
            // counting sort of the few distinct ones), the filter asked of their positions
            // until `keep` are allowed and then down to the bound below that one's sum.
            (Some(allow), Some(_)) => {
                let mut at = vec![0u32; 2 * cb * 255 + 2];
                for &q in &sums {
                    at[q as usize] += 1;
                }
                // Highest sum first: the codes of sum q start at at[q].
                let mut next = 0u32;
                for q in (0..at.len()).rev() {
                    (at[q], next) = (next, next + at[q]);
                }
                let mut order = vec![0u32; codes];
                for (k, &q) in sums.iter().enumerate() {
                    order[at[q as usize] as usize] = k as u32;
                    at[q as usize] += 1;
                }
                let (mut seen, mut floor) = (0usize, None);
                for k in order {
                    let k = k as usize;
                    if floor.is_some_and(|f| sums[k] < f) {
                        break;
                    }
                    let mut score = None;
                    for j in self.positions_of(k) {
                        let i = self.position(j);
                        if allow(self.vectors.chunks[i as usize]) {
                            let s = *score.get_or_insert_with(|| self.score(table, k));
                            best.push((i, s));
                            seen += 1;
                        }
                    }
                    if seen >= keep && floor.is_none() {
                        floor = Some((sums[k] as usize).saturating_sub(slack) as u16);
                    }
                }
            }
            // Each code counts for its positions, or with a filter for its allowed ones: the
            // bound is the `keep`-th highest sum among allowed positions, and every allowed
            // position down to the bound below that sum is kept. Each position's filter is
            // asked once. (A counting sort of every code, asked going down until `keep` were
            // allowed, was a sixth of a loaded server's time at 2.24M distinct codes: a 9 MB
            // order written at random.)
            _ => {
                let allowed: Option<Vec<bool>> =
                    allow.map(|allow| self.vectors.chunks.iter().map(|&c| allow(c)).collect());
                let weight = |k: usize| match &allowed {
                    None => self.positions_of(k).len(),
                    Some(a) => self
                        .positions_of(k)
                        .filter(|&j| a[self.position(j) as usize])
                        .count(),
                };
                let mut counts = vec![0u32; 2 * cb * 255 + 1];
                for (k, &q) in sums.iter().enumerate() {
                    counts[q as usize] += weight(k) as u32;
                }
                let mut seen = 0usize;
                let kth = (0..counts.len())
                    .rev()
                    .find(|&q| {
                        seen += counts[q] as usize;
                        seen >= keep
                    })
                    .unwrap_or(0);
                let floor = kth.saturating_sub(slack) as u16;
                let is_allowed = |i: u32| allowed.as_ref().is_none_or(|a| a[i as usize]);
                for (k, _) in sums.iter().enumerate().filter(|&(_, &q)| q >= floor) {
                    let mut score = None;
                    for j in self.positions_of(k) {
                        let i = self.position(j);
                        if is_allowed(i) {
                            let s = *score.get_or_insert_with(|| self.score(table, k));
                            best.push((i, s));
                        }
                    }
                }
            }
        }
        keep_best(&mut best, keep);
        Some(best)
    }

    /// The `k` allowed chunks nearest to `q`: the first pass's best [`shortlist`]`(k)`,
    /// rescored exactly (cosine on the int8 vectors), best first. `allow`: None for every chunk.
    pub fn nearest_where(
        &self,
        q: &[f32],
        k: usize,
        allow: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<(u32, f32)> {
        let pass = self.first_pass(q, shortlist(k), allow);
        let positions: Vec<u32> = pass.iter().map(|&(i, _)| i).collect();
        let cosines = match self.shared {
            Some(_) => self.dots_once_each(&pass, q),
            None => self.vectors.dots_f32(&positions, q),
        };
        let mut hits: Vec<(u32, f32)> = positions
            .iter()
            .zip(cosines)
            .map(|(&i, cos)| (self.vectors.chunks[i as usize], cos))
            .collect();
        hits.sort_by(best_first);
        hits.truncate(k);
        hits
    }

    /// [`Vectors::dots_f32`] of the positions of a first pass, each distinct vector's once.
    /// Equal vectors share a code, so a score: a shortlist over a collection that repeats its
    /// sections holds each of them once per copy (PowerShell-Docs ×33: 1,600 positions, a
    /// few dozen vectors). Positions of one score are compared byte for byte (scale and
    /// values) with the ones already scored, so a vector's cosine is its own, the same bits.
    pub(super) fn dots_once_each(&self, pass: &[(u32, f32)], q: &[f32]) -> Vec<f32> {
        let v = &self.vectors;
        let same = |a: u32, b: u32| {
            let (a, b) = (a as usize, b as usize);
            v.scales[a].to_bits() == v.scales[b].to_bits() && v.row(a) == v.row(b)
        };
        let mut by_score: Vec<usize> = (0..pass.len()).collect();
        by_score.sort_unstable_by_key(|&j| (pass[j].1.to_bits(), pass[j].0));
        // Each entry's first equal position: one of the distinct vectors of its score met so
        // far, at most a few of them compared (different vectors of one score are rare, and a
        // bundle that makes many costs a cosine each, not a comparison with every other).
        const COMPARED: usize = 8;
        let mut first = vec![0u32; pass.len()];
        let mut distinct: Vec<u32> = Vec::new();
        let mut run: Vec<u32> = Vec::new();
        let mut score = None;
        for &j in &by_score {
            let (i, s) = pass[j];
            if score != Some(s.to_bits()) {
                score = Some(s.to_bits());
                run.clear();
            }
            first[j] = match run.iter().find(|&&r| same(r, i)) {
                Some(&r) => r,
                None => {
                    distinct.push(i);
                    if run.len() < COMPARED {
                        run.push(i);
                    }
                    i
                }
            };
        }
        distinct.sort_unstable();
        let dots = v.dots_f32(&distinct, q);
        first
            .iter()
            .map(|f| dots[distinct.binary_search(f).expect("kept above")])
            .collect()
    }

    /// Positions (into `vectors`) of the first pass's best `n` for `q`, best first: what
    /// `examples/first_pass` measures recall on.
    pub fn first_pass_best(&self, q: &[f32], n: usize) -> Vec<u32> {
        self.chunks_of(self.first_pass(q, n, None))
    }

    /// [`Coded::first_pass_best`] among the chunks `allow` allows.
    pub fn first_pass_best_where(
        &self,
        q: &[f32],
        n: usize,
        allow: &dyn Fn(u32) -> bool,
    ) -> Vec<u32> {
        self.chunks_of(self.first_pass(q, n, Some(allow)))
    }

    /// [`Coded::first_pass_best_where`] (every chunk when `allow` is None) through the f32
    /// scan of every allowed code, without the integer bounds: the same, which the wasm spec
    /// checks on wasm's SIMD (`tests/wasm_engine.rs`).
    pub fn first_pass_scanned(
        &self,
        q: &[f32],
        n: usize,
        allow: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<u32> {
        let Some(table) = self.tables(q).filter(|_| n > 0) else {
            return Vec::new();
        };
        self.chunks_of(self.scan(&table, n, allow))
    }

    pub(super) fn chunks_of(&self, mut pass: Vec<(u32, f32)>) -> Vec<u32> {
        pass.sort_by(best_first);
        pass.into_iter()
            .map(|(i, _)| self.vectors.chunks[i as usize])
            .collect()
    }
}
