//! The vectors as an engine holds them: flat, in chunk order, 4 bits a value where they fit.

use super::*;

/// Vectors held flat, in chunk order as the builder writes them: a chunk id and a scale each,
/// and their values side by side, two a byte while every value fits the 4-bit form (−8..=7,
/// stored as `q + 8`, dimension `2i` in the low nibble of byte `i`) and one a byte (int8)
/// otherwise. A 384-dim 4-bit vector takes 200 bytes, where a [`QVec`] with its own allocation
/// took about 430: over the 2.24M chunks of the 100K-document collection (`docs/measurements/2026-11-29-hybrid-100k.md`), about
/// 0.5 GB less for an engine that holds them, and no allocation per vector when a bundle loads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Vectors {
    pub(super) dims: usize,
    /// 4 or 8 (4 also when empty).
    pub(super) bits: u8,
    pub(super) chunks: Vec<u32>,
    pub(super) scales: Vec<f32>,
    /// `len × row_bytes` bytes.
    pub(super) values: Vec<u8>,
}

impl Vectors {
    /// An empty set of `dims`-dimension vectors.
    pub fn new(dims: usize) -> Vectors {
        Vectors {
            dims,
            bits: 4,
            ..Vectors::default()
        }
    }

    /// The vectors of `qvecs`, in their order; `Err` when they differ in length.
    pub fn from_qvecs(qvecs: Vec<QVec>) -> std::result::Result<Vectors, String> {
        let mut out = Vectors::new(qvecs.first().map_or(0, |v| v.data.len()));
        out.reserve(qvecs.len());
        for v in qvecs {
            out.push(v.chunk, v.scale, &v.data)?;
        }
        Ok(out)
    }

    pub(super) fn reserve(&mut self, n: usize) {
        self.chunks.reserve_exact(n);
        self.scales.reserve_exact(n);
        self.values
            .reserve_exact(n.saturating_mul(self.row_bytes()));
    }

    /// Appends a vector (`value[i] ≈ data[i] · scale`). The first value that does not fit 4
    /// bits turns the whole set to int8, so the form is a function of the values alone.
    pub fn push(&mut self, chunk: u32, scale: f32, data: &[i8]) -> std::result::Result<(), String> {
        if data.len() != self.dims {
            return Err(format!(
                "the vector of chunk {chunk} has {} dims, the others {}",
                data.len(),
                self.dims
            ));
        }
        if self.bits == 4 && !data.iter().all(|d| (-8..=7).contains(d)) {
            self.widen();
        }
        self.chunks.push(chunk);
        self.scales.push(scale);
        if self.bits == 4 {
            let level = |d: i8| (d + 8) as u8;
            self.values.extend(
                data.chunks(2)
                    .map(|p| level(p[0]) | p.get(1).map_or(0, |&d| level(d)) << 4),
            );
        } else {
            self.values.extend(data.iter().map(|&d| d as u8));
        }
        Ok(())
    }

    /// From 4 bits a value to 8.
    pub(super) fn widen(&mut self) {
        let rows: Vec<u8> = (0..self.len())
            .flat_map(|i| self.values(i))
            .map(|d| d as u8)
            .collect();
        self.bits = 8;
        self.values = rows;
    }

    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Bits a value: 4 or 8.
    pub fn bits(&self) -> u8 {
        self.bits
    }

    /// Each vector's chunk, in storage order.
    pub fn chunks(&self) -> &[u32] {
        &self.chunks
    }

    /// Whether the chunks rise strictly (as the builder writes them).
    pub(super) fn sorted_by_chunk(&self) -> bool {
        self.chunks.windows(2).all(|w| w[0] < w[1])
    }

    /// Bytes of one vector's values.
    pub(super) fn row_bytes(&self) -> usize {
        if self.bits == 4 {
            self.dims.div_ceil(2)
        } else {
            self.dims
        }
    }

    pub(super) fn row(&self, i: usize) -> &[u8] {
        let per = self.row_bytes();
        &self.values[i * per..(i + 1) * per]
    }

    /// The int8 values of vector `i`.
    pub fn values(&self, i: usize) -> impl Iterator<Item = i8> + '_ {
        let (row, four) = (self.row(i), self.bits == 4);
        (0..self.dims).map(move |d| {
            if four {
                (row[d / 2] >> (4 * (d % 2)) & 0x0f) as i8 - 8
            } else {
                row[d] as i8
            }
        })
    }

    /// Vector `i` as a [`QVec`].
    pub fn get(&self, i: usize) -> QVec {
        QVec {
            chunk: self.chunks[i],
            scale: self.scales[i],
            data: self.values(i).collect(),
        }
    }

    /// Every vector as a [`QVec`], in storage order.
    pub fn iter(&self) -> impl Iterator<Item = QVec> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// [`QVec::dot_f32`] of vector `i`: the same products summed in the same order.
    pub fn dot_f32(&self, i: usize, q: &[f32]) -> f32 {
        self.values(i)
            .zip(q)
            .map(|(a, &b)| a as f32 * b)
            .sum::<f32>()
            * self.scales[i]
    }

    /// [`Vectors::dot_f32`] of the vector at each of `positions`, four at a time: each sum
    /// adds the same products in the same order in a register of its own (the same bits),
    /// and four chains of additions keep the adders busy where one waits on its last sum.
    pub fn dots_f32(&self, positions: &[u32], q: &[f32]) -> Vec<f32> {
        let mut out = Vec::with_capacity(positions.len());
        let mut fours = positions.chunks_exact(4);
        let n = self.dims.min(q.len());
        for four in &mut fours {
            let rows = [0, 1, 2, 3].map(|k| self.row(four[k] as usize));
            // From −0, as `Iterator::sum` starts.
            let mut sums = [-0.0f32; 4];
            if self.bits == 4 {
                for (d, &qd) in q.iter().enumerate().take(n) {
                    let (byte, shift) = (d / 2, 4 * (d % 2));
                    for (sum, row) in sums.iter_mut().zip(&rows) {
                        *sum += ((row[byte] >> shift & 0x0f) as i8 - 8) as f32 * qd;
                    }
                }
            } else {
                for (d, &qd) in q.iter().enumerate().take(n) {
                    for (sum, row) in sums.iter_mut().zip(&rows) {
                        *sum += row[d] as i8 as f32 * qd;
                    }
                }
            }
            out.extend((0..4).map(|k| sums[k] * self.scales[four[k] as usize]));
        }
        out.extend(
            fours
                .remainder()
                .iter()
                .map(|&i| self.dot_f32(i as usize, q)),
        );
        out
    }

    /// Vector `i`'s dequantized values, as the codes' sums read them, into `out`.
    pub(super) fn dequantize_into(&self, i: usize, out: &mut [f64]) {
        let scale = self.scales[i] as f64;
        let row = self.row(i);
        if self.bits == 4 {
            for (pair, &b) in out.chunks_mut(2).zip(row) {
                pair[0] = ((b & 0x0f) as i8 - 8) as f64 * scale;
                if let Some(hi) = pair.get_mut(1) {
                    *hi = ((b >> 4) as i8 - 8) as f64 * scale;
                }
            }
        } else {
            for (o, &b) in out.iter_mut().zip(row) {
                *o = (b as i8) as f64 * scale;
            }
        }
    }
}
