//! Chunk vectors, quantized to int8 with one scale per vector (4× smaller than f32; cosine
//! error ~1e-3, far below ranking noise), and from format 6 written in a 4-bit form of that
//! for models where it keeps quality ([`QVec::to_4bit`], [`crate::embed::four_bit_vectors`]).
//! Below a size threshold they are scanned exactly; from it on, a first pass scans compact
//! codes (one bit per dimension: whether the vector is above the collection's mean there, 48
//! bytes for 384 dims) against the query's own f32 values, and only its shortlist is rescored
//! exactly on the stored vectors ([`Coded`]). In memory the vectors are held flat, 4 bits a
//! value where they fit ([`Vectors`]).
//! Bundles of formats 1–3 may hold an `instant-distance` HNSW graph instead; it is still
//! searched, but no longer built (the scan measured better: `docs/measurements/2026-11-29-compact-codes-vs-hnsw.md`).

use instant_distance::{Hnsw, Point, Search};
use serde::{Deserialize, Serialize};
use serde_big_array::BigArray;

use crate::encoding::Bytes;
use crate::encoding::Pieces;
use crate::error::{Error, Result};

#[cfg(not(target_arch = "wasm32"))]
pub mod cache;

/// Seed of the HNSW level generator: fixed, so the graph is reproducible.
const HNSW_SEED: u64 = 0x00d0_c10b_e5ee_d001;

/// An int8 vector: `value[i] ≈ data[i] as f32 * scale` (in the 4-bit form, `data` lies in
/// −8..=7). Carries its chunk id so a graph search result names its chunk without a side
/// table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QVec {
    pub chunk: u32,
    pub scale: f32,
    pub data: Vec<i8>,
}

impl QVec {
    pub fn quantize(chunk: u32, v: &[f32]) -> QVec {
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        let data = v
            .iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
            .collect();
        QVec { chunk, scale, data }
    }

    /// Cosine with an f32 unit query (the stored vector was a unit vector before quantization).
    pub fn dot_f32(&self, q: &[f32]) -> f32 {
        self.data
            .iter()
            .zip(q)
            .map(|(&a, &b)| a as f32 * b)
            .sum::<f32>()
            * self.scale
    }

    /// The 4-bit form of this vector (format 6; half the bytes of int8 on disk): each value
    /// rounded to one of 15 levels, `q · scale` for q in −7..=7, with the largest at ±7. The
    /// levels are read off the int8 values in integers (`q = round(7d / max|d|)`, halves away
    /// from zero), so the form is a function of the int8 vector alone and a clean and an
    /// incremental build write the same bytes. In memory it stays an int8 vector (`data`
    /// within ±7, or −8, which a packed byte can also hold), so every scoring path is the same.
    /// A vector already in that form is returned as it is. Chosen on SciFact's train queries
    /// over three 16-level readings: `docs/measurements/2026-11-29-4bit-vectors.md`.
    pub fn to_4bit(&self) -> QVec {
        if self.is_4bit() {
            return self.clone();
        }
        let max = self
            .data
            .iter()
            .map(|d| d.unsigned_abs() as i32)
            .max()
            .unwrap_or(0);
        let data = self
            .data
            .iter()
            .map(|&d| {
                let q = (14 * d.unsigned_abs() as i32 + max) / (2 * max);
                (q.min(7) * (d as i32).signum()) as i8
            })
            .collect();
        QVec {
            chunk: self.chunk,
            scale: self.scale * max as f32 / 7.0,
            data,
        }
    }

    /// Whether every value fits the 4-bit form (−8..=7).
    pub fn is_4bit(&self) -> bool {
        self.data.iter().all(|&d| (-8..=7).contains(&d))
    }

    fn dot_i8(&self, other: &QVec) -> f32 {
        let s: i32 = self
            .data
            .iter()
            .zip(&other.data)
            .map(|(&a, &b)| a as i32 * b as i32)
            .sum();
        s as f32 * self.scale * other.scale
    }
}

/// Vectors held flat, in chunk order as the builder writes them: a chunk id and a scale each,
/// and their values side by side, two a byte while every value fits the 4-bit form (−8..=7,
/// stored as `q + 8`, dimension `2i` in the low nibble of byte `i`) and one a byte (int8)
/// otherwise. A 384-dim 4-bit vector takes 200 bytes, where a [`QVec`] with its own allocation
/// took about 430: over the 2.24M chunks of the 100K-document collection (`docs/measurements/2026-11-29-hybrid-100k.md`), about
/// 0.5 GB less for an engine that holds them, and no allocation per vector when a bundle loads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Vectors {
    dims: usize,
    /// 4 or 8 (4 also when empty).
    bits: u8,
    chunks: Vec<u32>,
    scales: Vec<f32>,
    /// `len × row_bytes` bytes.
    values: Vec<u8>,
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

    fn reserve(&mut self, n: usize) {
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
    fn widen(&mut self) {
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
    fn sorted_by_chunk(&self) -> bool {
        self.chunks.windows(2).all(|w| w[0] < w[1])
    }

    /// Bytes of one vector's values.
    fn row_bytes(&self) -> usize {
        if self.bits == 4 {
            self.dims.div_ceil(2)
        } else {
            self.dims
        }
    }

    fn row(&self, i: usize) -> &[u8] {
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

    /// Vector `i`'s dequantized values, as the codes' sums read them, into `out`.
    fn dequantize_into(&self, i: usize, out: &mut [f64]) {
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

impl Point for QVec {
    fn distance(&self, other: &Self) -> f32 {
        1.0 - self.dot_i8(other)
    }
}

/// The vectors section. Written through [`Wire`]: vectors that are all in the 4-bit form
/// ([`QVec::to_4bit`], format 6) are packed two values a byte.
pub enum VectorIndex {
    /// Sorted by chunk id; scanned exactly.
    Flat(Vectors),
    /// Points in graph order; each names its chunk. Read from formats 1–3, no longer built.
    Hnsw(Hnsw<QVec>),
    /// Compact first-pass codes and the int8 vectors they shortlist for (format 4).
    Coded(Coded),
}

/// The vectors section's bytes as read (postcard; variants in this order). `Flat`, `Hnsw` and
/// `Coded` hold int8 vectors as formats 1–5 wrote them; formats 6 and 7 wrote 4-bit vectors
/// as `Flat4` and `Coded4`. Format 8 writes either kind as `FlatRows` / `CodedRows`: the
/// vectors deflated in blocks of rows ([`Rows`]), and for `Coded` only the per-dimension mean
/// and levels, the codes being computed from them and the vectors when read
/// ([`Coded::from_levels`]).
#[derive(Deserialize)]
enum Wire {
    Flat(Vec<QVec>),
    Hnsw(Hnsw<QVec>),
    Coded(LegacyCoded),
    Flat4(Packed4),
    Coded4(Coded4),
    FlatRows(Rows),
    CodedRows(CodedRows),
}

/// The postcard variant indexes of the vectors section's first byte, as `index-builder
/// inspect` names them: (variant, index kind, bits a value).
pub const WIRE_KINDS: [(u8, &str, u8); 7] = [
    (0, "exact", 8),
    (1, "hnsw", 8),
    (2, "coded", 8),
    (3, "exact", 4),
    (4, "coded", 4),
    (5, "exact", 0),
    (6, "coded", 0),
];

/// The index kind and bits a value of a vectors section (`None`: not one this engine
/// writes or reads). Format 8's rows record their bits first.
pub fn wire_kind(section: &[u8]) -> Option<(&'static str, u8)> {
    let (&variant, rest) = section.split_first()?;
    let &(_, kind, bits) = WIRE_KINDS.iter().find(|k| k.0 == variant)?;
    Some((kind, if bits == 0 { *rest.first()? } else { bits }))
}

/// Vectors as format 8 writes them. Each vector is a row: its chunk's step from the previous
/// vector's (u32 LE), its scale (f32 LE), then its values (two a byte as in [`Packed4`] when
/// `bits` is 4, one when 8). Rows are cut into blocks of [`ROWS_PER_BLOCK`]; a block is
/// written column by column (byte 0 of every row, then byte 1, ...), so each dimension's
/// values lie together, and deflated. On en-large-cpp-docs (120,698 vectors of 384 dims at 4
/// bits) the section is 18.4 MB for 24.1 MB of rows; the nibbles alone deflated as they lie
/// came to 18.8 MB (`docs/measurements/2026-11-28-bundle-size-formats-5-to-8.md`).
#[derive(Serialize, Deserialize)]
struct Rows {
    bits: u8,
    dims: u32,
    blocks: Vec<RowBlock>,
}

#[derive(Serialize, Deserialize)]
struct RowBlock {
    rows: u32,
    /// Raw DEFLATE of `rows × width` bytes, column by column (`encoding/deflate.rs`).
    deflated: Bytes,
}

/// `Coded` as format 8 writes it: everything but the codes, which are a function of the
/// vectors and `mean` (see [`Coded::build`]).
#[derive(Serialize, Deserialize)]
struct CodedRows {
    rows: Rows,
    mean: Vec<f64>,
    low: Vec<f32>,
    high: Vec<f32>,
}

/// Rows a block of format 8's vectors holds. Chosen on en-large-cpp-docs: blocks of
/// 16,384 / 32,768 / 65,536 / all rows deflate to 18.42 / 18.29 / 18.23 / 18.18 MB; a
/// block bounds what a reader holds twice while it unpacks.
pub const ROWS_PER_BLOCK: usize = 65_536;

/// The most dimensions a vector may have (a crafted section cannot ask for huge rows).
const MAX_DIMS: u32 = 1 << 14;

impl Rows {
    /// `None` unless the vectors are sorted by chunk (and of at most [`MAX_DIMS`]). Each block
    /// is laid out, transposed and deflated in one step, natively on every core, so only the
    /// blocks in hand are held twice (laying out every block first took a copy of all the
    /// vectors: 0.47 GB at 2.24M).
    fn pack(vectors: &Vectors) -> Option<Rows> {
        let dims = vectors.dims();
        if dims as u64 > MAX_DIMS as u64 || !vectors.sorted_by_chunk() {
            return None;
        }
        let bits = vectors.bits();
        let width = row_width(bits, dims);
        let block = |start: usize| {
            let end = (start + ROWS_PER_BLOCK).min(vectors.len());
            let mut prev = start.checked_sub(1).map_or(0, |i| vectors.chunks[i]);
            let mut rows = Vec::with_capacity((end - start) * width);
            for i in start..end {
                let chunk = vectors.chunks[i];
                rows.extend_from_slice(&chunk.wrapping_sub(prev).to_le_bytes());
                prev = chunk;
                rows.extend_from_slice(&vectors.scales[i].to_le_bytes());
                rows.extend_from_slice(vectors.row(i));
            }
            let columns = transpose(&rows, end - start, width);
            drop(rows);
            RowBlock {
                rows: (end - start) as u32,
                deflated: Bytes(crate::encoding::deflate(&columns)),
            }
        };
        let starts = (0..vectors.len()).step_by(ROWS_PER_BLOCK);
        #[cfg(not(target_arch = "wasm32"))]
        let blocks = {
            use rayon::prelude::*;
            starts
                .collect::<Vec<_>>()
                .into_par_iter()
                .map(block)
                .collect()
        };
        #[cfg(target_arch = "wasm32")]
        let blocks = starts.map(block).collect();
        Some(Rows {
            bits,
            dims: dims as u32,
            blocks,
        })
    }

    /// What postcard writes for `self` (the derived `Serialize`), each block's deflated bytes
    /// moved into `out` rather than copied.
    fn write_pieces(self, out: &mut Pieces) -> Result<()> {
        out.put(&(self.bits, self.dims, self.blocks.len()))?;
        for block in self.blocks {
            out.put(&block.rows)?;
            out.put_bytes(block.deflated.0)?;
        }
        Ok(())
    }

    /// The vectors, read straight into one flat [`Vectors`] (its buffers sized once, each
    /// block filling its own part; on every core natively).
    fn unpack(self) -> std::result::Result<Vectors, String> {
        if !(self.bits == 4 || self.bits == 8) || self.dims > MAX_DIMS {
            return Err(format!(
                "vector rows of {} bits and {} dims",
                self.bits, self.dims
            ));
        }
        let (bits, dims) = (self.bits, self.dims as usize);
        let width = row_width(bits, dims);
        let per = width - 8;
        // Every block's rows must fit what its bytes can inflate to before anything is sized.
        for (k, block) in self.blocks.iter().enumerate() {
            let n = block.rows as u64;
            if n == 0 || !crate::encoding::within_ratio(n * width as u64, &block.deflated) {
                return Err(format!("vector block {k} does not inflate to its {n} rows"));
            }
        }
        // (Within the ratio, but a 32-bit target's sizes could still wrap.)
        let sizes = self
            .blocks
            .iter()
            .try_fold(0usize, |total, b| total.checked_add(b.rows as usize))
            .and_then(|total| Some((total, total.checked_mul(width)?)));
        let Some((total, _)) = sizes else {
            return Err(format!(
                "{} vector blocks too large to hold",
                self.blocks.len()
            ));
        };
        let mut out = Vectors {
            dims,
            bits,
            chunks: vec![0; total],
            scales: vec![0.0; total],
            values: vec![0; total * per],
        };
        // Each block's parts of the three buffers.
        let mut parts = Vec::with_capacity(self.blocks.len());
        let (mut chunks, mut scales, mut values) = (
            &mut out.chunks[..],
            &mut out.scales[..],
            &mut out.values[..],
        );
        for block in &self.blocks {
            let n = block.rows as usize;
            let (c, rest_c) = std::mem::take(&mut chunks).split_at_mut(n);
            let (s, rest_s) = std::mem::take(&mut scales).split_at_mut(n);
            let (v, rest_v) = std::mem::take(&mut values).split_at_mut(n * per);
            (chunks, scales, values) = (rest_c, rest_s, rest_v);
            parts.push((block, c, s, v));
        }
        // A block's chunks are counted from 0 here, and moved past the previous block's last
        // chunk below.
        let read = |(k, (block, chunks, scales, values)): (usize, BlockPart)| {
            let n = block.rows as usize;
            let columns = crate::encoding::inflate(&block.deflated, n * width)
                .ok_or_else(|| format!("vector block {k} does not inflate to its {n} rows"))?;
            let byte = |c: usize, r: usize| columns[c * n + r];
            let mut chunk = 0u32;
            for r in 0..n {
                let word = |at: usize| {
                    [
                        byte(at, r),
                        byte(at + 1, r),
                        byte(at + 2, r),
                        byte(at + 3, r),
                    ]
                };
                chunk = chunk
                    .checked_add(u32::from_le_bytes(word(0)))
                    .ok_or("a vector's chunk is past the last chunk")?;
                chunks[r] = chunk;
                scales[r] = f32::from_le_bytes(word(4));
            }
            transpose_into(&columns[8 * n..], per, n, values);
            Ok::<(), String>(())
        };
        #[cfg(not(target_arch = "wasm32"))]
        let done: Vec<_> = {
            use rayon::prelude::*;
            parts.into_par_iter().enumerate().map(read).collect()
        };
        #[cfg(target_arch = "wasm32")]
        let done: Vec<_> = parts.into_iter().enumerate().map(read).collect();
        done.into_iter()
            .collect::<std::result::Result<(), String>>()?;
        let mut last = 0u32;
        let mut at = 0;
        for block in &self.blocks {
            let n = block.rows as usize;
            for c in &mut out.chunks[at..at + n] {
                *c = last
                    .checked_add(*c)
                    .ok_or("a vector's chunk is past the last chunk")?;
            }
            last = out.chunks[at + n - 1];
            at += n;
        }
        Ok(out)
    }
}

/// A block of rows and its parts of the chunks, scales and values it unpacks into.
type BlockPart<'a> = (&'a RowBlock, &'a mut [u32], &'a mut [f32], &'a mut [u8]);

/// `src` read as `rows × cols` bytes row by row, written column by column (the inverse is
/// `transpose(out, cols, rows)`).
fn transpose(src: &[u8], rows: usize, cols: usize) -> Vec<u8> {
    let mut out = vec![0u8; src.len()];
    transpose_into(src, rows, cols, &mut out);
    out
}

/// [`transpose`] into `out` (`rows × cols` bytes): eight by eight bytes in registers, over
/// tiles of [`TILE_COLUMNS`] columns of `src`: eight of its rows are read along the whole
/// tile before the next eight, so each row's cache lines are read out while they are in cache
/// (rows 65,536 bytes apart, as a block's columns lie, all fall into one set of the L1
/// cache), and the tile's rows of `out` stay in L2 until all of their bytes are written; the
/// edges past a multiple of eight byte by byte.
fn transpose_into(src: &[u8], rows: usize, cols: usize, out: &mut [u8]) {
    let (rows8, cols8) = (rows / 8 * 8, cols / 8 * 8);
    for tile in (0..cols8).step_by(TILE_COLUMNS) {
        for r in (0..rows8).step_by(8) {
            for c in (tile..cols8.min(tile + TILE_COLUMNS)).step_by(8) {
                let mut x = [0u64; 8];
                for (i, x) in x.iter_mut().enumerate() {
                    let at = (r + i) * cols + c;
                    *x = u64::from_le_bytes(src[at..at + 8].try_into().expect("eight bytes"));
                }
                for (j, x) in transpose8(x).into_iter().enumerate() {
                    let at = (c + j) * rows + r;
                    out[at..at + 8].copy_from_slice(&x.to_le_bytes());
                }
            }
        }
    }
    let mut one = |r: usize, c: usize| out[c * rows + r] = src[r * cols + c];
    for r in rows8..rows {
        (0..cols).for_each(|c| one(r, c));
    }
    for c in cols8..cols {
        (0..rows8).for_each(|r| one(r, c));
    }
}

/// Columns of `src` a tile of [`transpose_into`] spans (a multiple of 8): unpacking a block of
/// 65,536 rows × 192 bytes took 4.7–5.4 ms a tile of 8 columns, 2.8–3.2 ms at 1,024 to 16,384.
const TILE_COLUMNS: usize = 2_048;

/// The 8 × 8 bytes `x` (byte `j` of `x[i]` is element (i, j)) transposed: swaps of 4 × 4,
/// then 2 × 2, then 1 × 1 blocks.
fn transpose8(mut x: [u64; 8]) -> [u64; 8] {
    for (half, mask) in [
        (4, 0x0000_0000_ffff_ffffu64),
        (2, 0x0000_ffff_0000_ffff),
        (1, 0x00ff_00ff_00ff_00ff),
    ] {
        for i in (0..8).filter(|i| i & half == 0) {
            let t = ((x[i] >> (8 * half)) ^ x[i + half]) & mask;
            x[i] ^= t << (8 * half);
            x[i + half] ^= t;
        }
    }
    x
}

/// Bytes of one row of [`Rows`].
fn row_width(bits: u8, dims: usize) -> usize {
    8 + if bits == 4 { dims.div_ceil(2) } else { dims }
}

/// 4-bit vectors, sorted by chunk, two values a byte.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct Packed4 {
    dims: u32,
    /// Each vector's chunk as the step from the previous vector's (the first: from 0).
    chunk_steps: Vec<u32>,
    scales: Vec<f32>,
    /// `⌈dims / 2⌉` bytes a vector; dimension `2i` in the low nibble of byte `i`, `2i + 1` in
    /// the high one, each as `q + 8` (0..=15) for the value `q · scale`.
    nibbles: Vec<u8>,
}

/// [`Coded`] as format 4 wrote it: its int8 vectors one by one.
#[derive(Serialize, Deserialize)]
struct LegacyCoded {
    low: Vec<f32>,
    high: Vec<f32>,
    codes: Vec<u8>,
    vectors: Vec<QVec>,
}

#[derive(Deserialize)]
struct Coded4 {
    low: Vec<f32>,
    high: Vec<f32>,
    codes: Vec<u8>,
    vectors: Packed4,
}

impl Packed4 {
    /// `None` unless every vector is in the 4-bit form and all share one length (formats 6
    /// and 7; only tests write it now).
    #[cfg(test)]
    fn pack(vectors: &[QVec]) -> Option<Packed4> {
        // `Vectors` lays 4-bit values out as this form does.
        let v = Vectors::from_qvecs(vectors.to_vec())
            .ok()
            .filter(|v| v.bits == 4 && v.sorted_by_chunk())?;
        let chunk_steps = super::lexical::deltas(v.chunks.iter().copied()).collect();
        Some(Packed4 {
            dims: v.dims as u32,
            chunk_steps,
            scales: v.scales,
            nibbles: v.values,
        })
    }

    fn unpack(self) -> std::result::Result<Vectors, String> {
        let dims = self.dims as usize;
        let per = dims.div_ceil(2);
        let n = self.chunk_steps.len();
        if self.scales.len() != n || self.nibbles.len() as u64 != n as u64 * per as u64 {
            return Err(format!(
                "{} 4-bit vectors with {} scales and {} bytes for {dims} dims",
                n,
                self.scales.len(),
                self.nibbles.len()
            ));
        }
        let mut chunk = 0u32;
        let mut chunks = Vec::with_capacity(n);
        for &step in &self.chunk_steps {
            chunk = chunk
                .checked_add(step)
                .ok_or("a 4-bit vector's chunk is past the last chunk")?;
            chunks.push(chunk);
        }
        // The nibbles are laid out as `Vectors` holds them.
        Ok(Vectors {
            dims,
            bits: 4,
            chunks,
            scales: self.scales,
            values: self.nibbles,
        })
    }
}

/// Writes format 8's rows ([`Rows`]); vectors that do not pack (never the builder's) as
/// formats 1–5 did, and an HNSW graph (read from formats 1–3) as it was.
impl Serialize for VectorIndex {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        // The variant indexes are those of `Wire`.
        let rows = |v: &Vectors| Rows::pack(v).filter(|_| !v.is_empty());
        match self {
            VectorIndex::Flat(v) => match rows(v) {
                Some(r) => s.serialize_newtype_variant("Wire", 5, "FlatRows", &r),
                None => {
                    s.serialize_newtype_variant("Wire", 0, "Flat", &v.iter().collect::<Vec<_>>())
                }
            },
            VectorIndex::Hnsw(h) => s.serialize_newtype_variant("Wire", 1, "Hnsw", h),
            VectorIndex::Coded(c) => match rows(&c.vectors) {
                Some(rows) => {
                    let coded = CodedRows {
                        rows,
                        mean: means(&c.vectors),
                        low: c.low.clone(),
                        high: c.high.clone(),
                    };
                    s.serialize_newtype_variant("Wire", 6, "CodedRows", &coded)
                }
                None => {
                    let legacy = LegacyCoded {
                        low: c.low.clone(),
                        high: c.high.clone(),
                        codes: c.row_codes(),
                        vectors: c.vectors.iter().collect(),
                    };
                    s.serialize_newtype_variant("Wire", 2, "Coded", &legacy)
                }
            },
        }
    }
}

impl VectorIndex {
    /// The section's bytes as [`Serialize`] writes them, in pieces: the deflated blocks of
    /// rows are handed over as they are (at 2.24M vectors a copy of them was 153 MB of the
    /// builder's peak).
    pub fn section_pieces(&self) -> Result<Vec<Vec<u8>>> {
        let rows = |v: &Vectors| Rows::pack(v).filter(|_| !v.is_empty());
        let mut out = Pieces::default();
        // The variant indexes are those of `Wire`.
        match self {
            VectorIndex::Flat(v) => {
                if let Some(r) = rows(v) {
                    out.put(&5u32)?;
                    r.write_pieces(&mut out)?;
                    return Ok(out.finish());
                }
            }
            VectorIndex::Coded(c) => {
                if let Some(r) = rows(&c.vectors) {
                    out.put(&6u32)?;
                    r.write_pieces(&mut out)?;
                    out.put(&(means(&c.vectors), &c.low, &c.high))?;
                    return Ok(out.finish());
                }
            }
            VectorIndex::Hnsw(_) => {}
        }
        Ok(vec![
            postcard::to_allocvec(self).map_err(|e| Error::Encode(format!("vectors: {e}")))?
        ])
    }
}

impl<'de> Deserialize<'de> for VectorIndex {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        from_wire(Wire::deserialize(d)?).map_err(D::Error::custom)
    }
}

/// Decodes a vectors section (all of `bytes`). Unlike postcard's own errors, which drop the
/// message of a failed check, a section that decodes but does not add up says why.
pub fn decode(bytes: &[u8]) -> Result<VectorIndex> {
    let wire: Wire = crate::encoding::decode_exact(bytes, "vectors")?;
    from_wire(wire).map_err(|m| Error::Corrupt(format!("vectors: {m}")))
}

fn from_wire(wire: Wire) -> std::result::Result<VectorIndex, String> {
    Ok(match wire {
        Wire::Flat(v) => VectorIndex::Flat(Vectors::from_qvecs(v)?),
        Wire::Hnsw(h) => VectorIndex::Hnsw(h),
        Wire::Coded(c) => {
            let vectors = Vectors::from_qvecs(c.vectors)?;
            VectorIndex::Coded(Coded {
                low: c.low,
                high: c.high,
                codes: blocked(&c.codes, &vectors)?,
                vectors,
            })
        }
        Wire::Flat4(p) => VectorIndex::Flat(p.unpack()?),
        Wire::Coded4(c) => {
            let vectors = c.vectors.unpack()?;
            VectorIndex::Coded(Coded {
                low: c.low,
                high: c.high,
                codes: blocked(&c.codes, &vectors)?,
                vectors,
            })
        }
        Wire::FlatRows(r) => VectorIndex::Flat(r.unpack()?),
        Wire::CodedRows(c) => {
            let vectors = c.rows.unpack()?;
            let dims = vectors.dims();
            if [c.mean.len(), c.low.len(), c.high.len()] != [dims; 3] {
                return Err(format!(
                    "coded vectors of {dims} dims with {} means and {} / {} levels",
                    c.mean.len(),
                    c.low.len(),
                    c.high.len()
                ));
            }
            VectorIndex::Coded(Coded::from_levels(vectors, &c.mean, c.low, c.high))
        }
    })
}

/// How many candidates the compact first pass hands to exact rescoring for a request of `k`.
/// Chosen on SciFact's train queries with both models (`examples/first_pass`): the smallest
/// tried (100–1,600 for k = 100) at which recall@100 reaches HNSW's (`docs/measurements/2026-11-29-compact-codes-vs-hnsw.md`).
pub fn shortlist(k: usize) -> usize {
    k.saturating_mul(SHORTLIST_FACTOR).max(SHORTLIST_MIN)
}
const SHORTLIST_FACTOR: usize = 16;
const SHORTLIST_MIN: usize = 1600;

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
    /// SIMD look-ups ([`Coded::first_pass`]). [`Coded::code`] reads one code.
    codes: Vec<u8>,
    /// Sorted by chunk id.
    pub vectors: Vectors,
}

/// Bytes of one code for `dims` dimensions.
pub fn code_bytes(dims: usize) -> usize {
    dims.div_ceil(8)
}

/// Codes a block of [`Coded`]'s layout holds: the lanes of one AVX2 register.
pub const BLOCK: usize = 32;

/// Where byte 0 of code `i` lies in [`Coded`]'s blocks of `cb`-byte codes (byte `j` is
/// `j · BLOCK` further).
fn block_offset(i: usize, cb: usize) -> usize {
    i / BLOCK * BLOCK * cb + i % BLOCK
}

/// Bytes of `n` codes of `dims` dimensions in blocks.
fn blocked_len(n: usize, dims: usize) -> usize {
    n.div_ceil(BLOCK) * BLOCK * code_bytes(dims)
}

/// Codes stored one after another (formats 4–7) in [`Coded`]'s blocks, when there is one
/// for each of `vectors`.
fn blocked(rows: &[u8], vectors: &Vectors) -> std::result::Result<Vec<u8>, String> {
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
fn means(vectors: &Vectors) -> Vec<f64> {
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

/// Each vector's code: bit `d` set where dimension `d` lies above `mean[d]` (on every core
/// natively; each code depends on its vector alone).
fn codes_for(vectors: &Vectors, mean: &[f64]) -> Vec<u8> {
    let cb = code_bytes(mean.len());
    let mut codes = vec![0u8; blocked_len(vectors.len(), mean.len())];
    if cb == 0 {
        return codes;
    }
    // `value > m`, eight dimensions a byte (the same products: an i8 times an f32 is exact
    // in f64). At 4 bits a vector has 16 values, so those are computed once.
    let code = |values: &mut Vec<f64>, (i, code): (usize, &mut [u8])| {
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
    let n = vectors.len();
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

/// The code of one 4-bit vector (`row`, two values a byte, `scale`): bit `d` where
/// `(v − 8) · scale > mean[d]` in f64 (an i8 times an f32 is exact there, so every path gives
/// the codes the build made). Natively on x86-64 with AVX2, eight dimensions at a time
/// ([`code_4bit_avx2`]: a quarter of the time, which was a quarter of a one-off hybrid call over
/// 2.24M vectors); the rest, and every other machine, through [`code_4bit_scalar`].
fn code_4bit(row: &[u8], scale: f64, mean: &[f64], code: &mut [u8]) {
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
fn code_4bit_scalar(row: &[u8], scale: f64, mean: &[f64], code: &mut [u8]) {
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
unsafe fn code_4bit_avx2(row: &[u8], scale: f64, mean: &[f64], code: &mut [u8], groups: usize) {
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

/// Code `i` of `codes` in [`Coded`]'s blocks, into `out` (`cb` bytes).
fn code_of(codes: &[u8], cb: usize, i: usize, out: &mut [u8]) {
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
        let codes = codes_for(&vectors, &mean);
        let cb = code_bytes(dims);
        let (mut above, mut below) = (vec![(0f64, 0u32); dims], vec![(0f64, 0u32); dims]);
        let mut values = vec![0f64; dims];
        let mut code = vec![0u8; cb];
        for i in 0..vectors.len() {
            code_of(&codes, cb, i, &mut code);
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
            vectors,
        }
    }

    /// `Coded` as [`Coded::build`] makes it from the same `vectors`, given what it computed
    /// of them: the per-dimension `mean` and levels (format 8 stores those and not the codes,
    /// which this computes: on en-large-cpp-docs, 5.8 MB of the bundle for tens of
    /// milliseconds a load).
    pub fn from_levels(vectors: Vectors, mean: &[f64], low: Vec<f32>, high: Vec<f32>) -> Coded {
        Coded {
            codes: codes_for(&vectors, mean),
            low,
            high,
            vectors,
        }
    }

    fn dims(&self) -> usize {
        self.low.len()
    }

    /// The code of `vectors[i]`, its bytes in order.
    pub fn code(&self, i: usize) -> Vec<u8> {
        let mut out = vec![0u8; code_bytes(self.vectors.dims())];
        code_of(&self.codes, out.len(), i, &mut out);
        out
    }

    /// Every code, one after another (the layout formats 4–7 stored).
    pub fn row_codes(&self) -> Vec<u8> {
        (0..self.vectors.len()).flat_map(|i| self.code(i)).collect()
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
    fn first_pass(
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
    fn tables(&self, q: &[f32]) -> Option<Vec<[f32; 256]>> {
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

    /// Code `i`'s score: its bytes' look-ups added in byte order from −0, as [`Coded::scan`]
    /// adds them.
    fn score(&self, table: &[[f32; 256]], i: usize) -> f32 {
        let cb = table.len();
        let at = block_offset(i, cb);
        table
            .iter()
            .enumerate()
            .fold(-0.0, |s, (j, t)| s + t[self.codes[at + j * BLOCK] as usize])
    }

    /// Every allowed code's score, in order, and the best `keep` of them.
    fn scan(
        &self,
        table: &[[f32; 256]],
        keep: usize,
        allow: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<(u32, f32)> {
        let cb = table.len();
        let n = self.vectors.len();
        let mut best: Vec<(u32, f32)> = Vec::with_capacity(keep.saturating_mul(2).min(n));
        let mut floor: Option<f32> = None;
        let mut consider = |i: usize, s: f32| {
            if floor.is_some_and(|f| s.total_cmp(&f).is_le())
                || allow.is_some_and(|allow| !allow(self.vectors.chunks[i]))
            {
                return;
            }
            best.push((i as u32, s));
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
            for (k, s) in s.into_iter().enumerate().take(n - b * BLOCK) {
                consider(b * BLOCK + k, s);
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
    /// used) where the tables have no spread or the sums could pass u16. With a filter, the
    /// codes are walked in order of their sums (a counting sort) and the filter is asked only
    /// until `keep` are allowed and then down to the bound below that one's sum.
    fn first_pass_bounded(
        &self,
        table: &[[f32; 256]],
        keep: usize,
        allow: Option<&dyn Fn(u32) -> bool>,
    ) -> Option<Vec<(u32, f32)>> {
        let cb = table.len();
        let n = self.vectors.len();
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
        let sums = quantized_sums(&self.codes, &quantized, n);
        let mut counts = vec![0u32; 2 * cb * 255 + 1];
        for &q in &sums {
            counts[q as usize] += 1;
        }
        let mut best: Vec<(u32, f32)> = match allow {
            None => {
                let mut seen = 0usize;
                let kth = (0..counts.len())
                    .rev()
                    .find(|&q| {
                        seen += counts[q] as usize;
                        seen >= keep
                    })
                    .unwrap_or(0);
                let floor = kth.saturating_sub(slack) as u16;
                sums.iter()
                    .enumerate()
                    .filter(|&(_, &q)| q >= floor)
                    .map(|(i, _)| (i as u32, self.score(table, i)))
                    .collect()
            }
            // With a filter the bound is the `keep`-th highest sum among allowed codes: the
            // codes in order of their sums (a counting sort), the filter asked going down
            // until `keep` are allowed and then down to the bound below that sum.
            Some(allow) => {
                let mut start = vec![0u32; counts.len()];
                let mut above = 0u32;
                for q in (0..counts.len()).rev() {
                    start[q] = above;
                    above += counts[q];
                }
                let mut order = vec![0u32; n];
                for (i, &q) in sums.iter().enumerate() {
                    order[start[q as usize] as usize] = i as u32;
                    start[q as usize] += 1;
                }
                let (mut found, mut floor) = (0usize, 0u16);
                let mut best = Vec::new();
                for &i in &order {
                    let q = sums[i as usize];
                    if q < floor {
                        break;
                    }
                    if allow(self.vectors.chunks[i as usize]) {
                        best.push((i, self.score(table, i as usize)));
                        found += 1;
                        if found == keep {
                            floor = (q as usize).saturating_sub(slack) as u16;
                        }
                    }
                }
                best
            }
        };
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
        let mut hits: Vec<(u32, f32)> = self
            .first_pass(q, shortlist(k), allow)
            .into_iter()
            .map(|(i, _)| {
                let i = i as usize;
                (self.vectors.chunks[i], self.vectors.dot_f32(i, q))
            })
            .collect();
        hits.sort_by(best_first);
        hits.truncate(k);
        hits
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

    fn chunks_of(&self, mut pass: Vec<(u32, f32)>) -> Vec<u32> {
        pass.sort_by(best_first);
        pass.into_iter()
            .map(|(i, _)| self.vectors.chunks[i as usize])
            .collect()
    }
}

/// Each of the first `n` codes' sum of its quantized nibble parts (`parts[j]` for the low
/// nibble of byte `j`, `parts[cb + j]` for its high one), a block at a time: on every core
/// natively, 32 codes a step with AVX2; 16 a step with wasm's SIMD; else through one table of
/// the two parts' sums a byte. Every path gives the same sums.
fn quantized_sums(codes: &[u8], parts: &[[u8; 16]], n: usize) -> Vec<u16> {
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
unsafe fn block_sums_avx2(codes: &[u8], parts: &[[u8; 16]], out: &mut [u16]) {
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
fn block_sums_simd128(codes: &[u8], parts: &[[u8; 16]], out: &mut [u16]) {
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

/// Keeps the best `keep` of `best` (in no particular order).
fn keep_best(best: &mut Vec<(u32, f32)>, keep: usize) {
    if best.len() > keep {
        best.select_nth_unstable_by(keep - 1, best_first);
        best.truncate(keep);
    }
}

/// (id, score) pairs best first: the higher score, then the lower id (a position in the first
/// pass, a chunk in the answers), so equal scores keep a deterministic order.
pub(crate) fn best_first(a: &(u32, f32), b: &(u32, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VectorIndex::Flat(v) => write!(f, "VectorIndex::Flat({} vectors)", v.len()),
            VectorIndex::Hnsw(h) => write!(f, "VectorIndex::Hnsw({} vectors)", h.iter().count()),
            VectorIndex::Coded(c) => write!(f, "VectorIndex::Coded({} vectors)", c.vectors.len()),
        }
    }
}

impl VectorIndex {
    /// `vectors` must be sorted by chunk id: exact below `compact_threshold` vectors, coded
    /// from it on.
    pub fn build(vectors: Vectors, compact_threshold: usize) -> VectorIndex {
        if vectors.len() < compact_threshold {
            VectorIndex::Flat(vectors)
        } else {
            VectorIndex::Coded(Coded::build(vectors))
        }
    }

    /// An HNSW graph over `vectors`, as formats 1–3 stored them: only for tests of reading
    /// such bundles and for `examples/first_pass`, which compares the two first passes.
    pub fn build_hnsw(vectors: Vec<QVec>) -> Result<VectorIndex> {
        // instant-distance inserts points of a layer in parallel, which makes the graph depend
        // on thread timing. On a one-thread pool its parallel loops run in index order, so the
        // graph (and the bundle) is byte-identical from run to run.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .map_err(|e| Error::Encode(format!("cannot start the HNSW build thread: {e}")))?;
        let hnsw = pool.install(|| {
            instant_distance::Builder::default()
                .seed(HNSW_SEED)
                .ef_construction(100)
                .ef_search(128)
                .build_hnsw(vectors)
                .0
        });
        Ok(VectorIndex::Hnsw(hnsw))
    }

    pub fn len(&self) -> usize {
        match self {
            VectorIndex::Flat(v) => v.len(),
            VectorIndex::Hnsw(h) => h.iter().count(),
            VectorIndex::Coded(c) => c.vectors.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All vectors, in storage order.
    pub fn vectors(&self) -> Box<dyn Iterator<Item = QVec> + '_> {
        match self {
            VectorIndex::Flat(v) | VectorIndex::Coded(Coded { vectors: v, .. }) => {
                Box::new(v.iter())
            }
            VectorIndex::Hnsw(h) => Box::new(h.iter().map(|(_, p)| p.clone())),
        }
    }

    /// Cosine of the unit query `q` with the vector at storage position `i` (graph order for
    /// HNSW, chunk order otherwise).
    pub fn dot_f32(&self, i: u32, q: &[f32]) -> f32 {
        match self {
            VectorIndex::Flat(v) | VectorIndex::Coded(Coded { vectors: v, .. }) => {
                v.dot_f32(i as usize, q)
            }
            VectorIndex::Hnsw(h) => h[instant_distance::PointId::from(i)].dot_f32(q),
        }
    }

    /// For each of `n_chunks` chunks, the storage position of its vector (`u32::MAX`: none).
    /// Built once per engine, so scoring a given chunk is one index away.
    pub fn positions(&self, n_chunks: usize) -> Vec<u32> {
        let mut pos = vec![u32::MAX; n_chunks];
        let mut place = |i: usize, chunk: u32| {
            if let Some(slot) = pos.get_mut(chunk as usize) {
                *slot = i as u32;
            }
        };
        match self {
            VectorIndex::Flat(v) | VectorIndex::Coded(Coded { vectors: v, .. }) => v
                .chunks()
                .iter()
                .enumerate()
                .for_each(|(i, &c)| place(i, c)),
            VectorIndex::Hnsw(h) => h
                .iter()
                .enumerate()
                .for_each(|(i, (_, p))| place(i, p.chunk)),
        }
        pos
    }

    /// The `k` chunks nearest to the unit query `q`, as (chunk, cosine), best first.
    /// Graph and first-pass results are re-scored against the f32 query, so every path
    /// reports the same scale.
    pub fn nearest(&self, q: &[f32], k: usize) -> Vec<(u32, f32)> {
        let mut hits: Vec<(u32, f32)> = match self {
            VectorIndex::Flat(v) => (0..v.len())
                .map(|i| (v.chunks[i], v.dot_f32(i, q)))
                .collect(),
            VectorIndex::Coded(c) => return c.nearest_where(q, k, None),
            VectorIndex::Hnsw(h) => {
                let query = QVec::quantize(u32::MAX, q);
                let mut search = Search::default();
                h.search(&query, &mut search)
                    .map(|item| (item.point.chunk, item.point.dot_f32(q)))
                    .collect()
            }
        };
        hits.sort_by(best_first);
        hits.truncate(k);
        hits
    }

    /// Cosine of the query with each chunk in `chunks` (which need not be near it).
    /// Returns `None` for a chunk without a vector.
    pub fn similarity(&self, q: &[f32], chunks: &[u32]) -> Vec<Option<f32>> {
        match self {
            VectorIndex::Flat(v) | VectorIndex::Coded(Coded { vectors: v, .. }) => chunks
                .iter()
                .map(|c| v.chunks.binary_search(c).ok().map(|i| v.dot_f32(i, q)))
                .collect(),
            VectorIndex::Hnsw(h) => {
                // The graph stores points in its own order; one pass over them is cheaper than
                // keeping a chunk → point table around for a few hundred look-ups per query.
                let mut wanted: Vec<(u32, usize)> = chunks.iter().copied().zip(0..).collect();
                wanted.sort_unstable();
                let mut out = vec![None; chunks.len()];
                for (_, p) in h.iter() {
                    if let Ok(i) = wanted.binary_search_by_key(&p.chunk, |w| w.0) {
                        out[wanted[i].1] = Some(p.dot_f32(q));
                    }
                }
                out
            }
        }
    }

    /// Structural checks on decoded vectors (dims, chunk ids).
    pub fn validate(&self, n_chunks: usize, dims: usize) -> Result<()> {
        let mut seen = vec![false; n_chunks];
        let mut check = |chunk: u32, len: usize, scale: f32| {
            if len != dims || !scale.is_finite() {
                return Err(Error::Corrupt(format!(
                    "vector of chunk {chunk} has {len} dims, expected {dims}"
                )));
            }
            match seen.get_mut(chunk as usize) {
                Some(s) if !*s => *s = true,
                _ => {
                    return Err(Error::Corrupt(format!(
                        "vector names chunk {chunk} twice or past the end"
                    )))
                }
            }
            Ok(())
        };
        match self {
            VectorIndex::Flat(v) | VectorIndex::Coded(Coded { vectors: v, .. }) => {
                for (&chunk, &scale) in v.chunks.iter().zip(&v.scales) {
                    check(chunk, v.dims, scale)?;
                }
                if !v.sorted_by_chunk() {
                    return Err(Error::Corrupt("vectors are not sorted by chunk".into()));
                }
            }
            VectorIndex::Hnsw(h) => {
                for (_, p) in h.iter() {
                    check(p.chunk, p.data.len(), p.scale)?;
                }
            }
        }
        if let VectorIndex::Coded(c) = self {
            let levels_ok = |l: &[f32]| l.len() == dims && l.iter().all(|x| x.is_finite());
            if !levels_ok(&c.low) || !levels_ok(&c.high) {
                return Err(Error::Corrupt(format!(
                    "the codes' levels have {} and {} dims, expected {dims} (finite)",
                    c.low.len(),
                    c.high.len()
                )));
            }
            if c.codes.len() as u64 != blocked_len(c.vectors.len(), dims) as u64 {
                return Err(Error::Corrupt(format!(
                    "{} code bytes for {} vectors of {dims} dims",
                    c.codes.len(),
                    c.vectors.len()
                )));
            }
        }
        Ok(())
    }
}

/// Graph links are private to instant-distance, and an out-of-range link would panic inside
/// its search. This mirror has the same serde layout as `Hnsw<QVec>`, so the section's bytes
/// can be decoded a second time and every link checked before the real graph is trusted.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct HnswMirror {
    ef_search: usize,
    points: Vec<QVec>,
    zero: Vec<ZeroNodeMirror>,
    layers: Vec<Vec<UpperNodeMirror>>,
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct ZeroNodeMirror(#[serde(with = "BigArray")] [u32; 64]);

#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct UpperNodeMirror([u32; 32]);

const INVALID: u32 = u32::MAX;

/// Validates the links of an HNSW vectors section from its raw (checksum-verified) bytes.
pub fn validate_graph_bytes(bytes: &[u8]) -> Result<()> {
    let bad = |m: &str| Err(Error::Corrupt(format!("vector graph: {m}")));
    // postcard writes the enum variant index first, as a varint: 0 = Flat, 1 = Hnsw.
    let Some((&1, graph)) = bytes.split_first() else {
        return Ok(());
    };
    let (h, _): (HnswMirror, _) = postcard::take_from_bytes(graph)
        .map_err(|e| Error::Corrupt(format!("vector graph: {e}")))?;
    let n = h.points.len();
    if h.zero.len() != n {
        return bad("zero layer and points differ in size");
    }
    if h.ef_search == 0 || h.ef_search > 10_000 {
        return bad("ef_search out of range");
    }
    let link_ok = |id: u32, limit: usize| id == INVALID || (id as usize) < limit;
    if !h
        .zero
        .iter()
        .all(|node| node.0.iter().all(|&id| link_ok(id, n)))
    {
        return bad("a zero-layer link points past the last point");
    }
    // A search enters the top layer at point 0 and carries the points it finds down a layer
    // at a time, so each layer must hold at least the points of the one above it.
    if h.layers.windows(2).any(|w| w[1].len() > w[0].len()) {
        return bad("an upper layer is larger than the one below it");
    }
    for layer in &h.layers {
        if layer.is_empty() || layer.len() > n {
            return bad("an upper layer has an impossible size");
        }
        if !layer
            .iter()
            .all(|node| node.0.iter().all(|&id| link_ok(id, layer.len())))
        {
            return bad("an upper-layer link points past its layer");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
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
        let vectors: Vec<QVec> = unit_vectors(distinct, dims)
            .into_iter()
            .flat_map(|v| std::iter::repeat_n(v, times))
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
        let coded = repeated(8_800, 16, 8);
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
            size(&VectorIndex::Flat(store(four))) * 2
                < size(&VectorIndex::Flat(store(int8))) + 300 * 8
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
    fn packed_4bit_vectors_that_do_not_add_up_are_refused() {
        let four: Vec<QVec> = unit_vectors(3, 8).iter().map(QVec::to_4bit).collect();
        // Formats 6 and 7 wrote 4-bit vectors so (variant 3, `Flat4`).
        let good = Packed4::pack(&four).unwrap();
        let decode = |p: Packed4| {
            let mut bytes = vec![3u8];
            bytes.extend(postcard::to_allocvec(&p).unwrap());
            postcard::from_bytes::<VectorIndex>(&bytes).map(|_| ())
        };
        assert!(decode(Packed4::pack(&four).unwrap()).is_ok());
        let mut short = Packed4::pack(&four).unwrap();
        short.nibbles.pop();
        assert!(decode(short).is_err());
        let mut past = good;
        past.chunk_steps[2] = u32::MAX;
        assert!(decode(past).is_err());
        // Unsorted or mixed vectors are not packed (they are written as int8, and refused by
        // validation if unsorted).
        let mut unsorted = four.clone();
        unsorted.swap(0, 1);
        assert!(Packed4::pack(&unsorted).is_none());
        let mut mixed = four;
        mixed[1] = unit_vectors(3, 8)[1].clone();
        assert!(Packed4::pack(&mixed).is_none());
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

    /// A graph's section bytes: variant 1 (HNSW), then the mirror's layout.
    fn graph_bytes(points: usize, layers: &[usize]) -> Vec<u8> {
        // Upper layers: a chain 0 → 1 → … → n − 1, so a search walks to the far end.
        let linked = |i: usize, n: usize| {
            let mut links = [INVALID; 32];
            links[0] = ((i + 1) % n) as u32;
            links
        };
        let mirror = HnswMirror {
            ef_search: 128,
            points: (0..points)
                .map(|i| QVec::quantize(i as u32, &[1.0, 0.0, (i as f32) / 10.0]))
                .collect(),
            zero: (0..points)
                .map(|i| {
                    let mut links = [INVALID; 64];
                    links[0] = ((i + 1) % points) as u32;
                    ZeroNodeMirror(links)
                })
                .collect(),
            layers: layers
                .iter()
                .map(|&n| (0..n).map(|i| UpperNodeMirror(linked(i, n))).collect())
                .collect(),
        };
        let mut bytes = vec![1u8];
        bytes.extend(postcard::to_allocvec(&mirror).unwrap());
        bytes
    }

    /// Regression (hostile bundles): upper layers that grow going up passed validation and
    /// made instant-distance index out of bounds during a search.
    #[test]
    fn upper_layers_that_grow_going_up_are_corrupt() {
        assert!(validate_graph_bytes(&graph_bytes(8, &[4, 2])).is_ok());
        let bad = graph_bytes(8, &[2, 4]);
        match validate_graph_bytes(&bad) {
            Err(Error::Corrupt(m)) => assert!(m.contains("larger than the one below"), "{m}"),
            other => panic!("{other:?}"),
        }
        // What the check prevents: the real graph, decoded from those bytes, panics.
        let (index, _): (VectorIndex, _) = postcard::take_from_bytes(&bad).unwrap();
        let q = [0.958, 0.0, 0.287]; // nearest to the last point of the top layer
        let searched =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| index.nearest(&q, 3)));
        assert!(searched.is_err(), "the unchecked graph panics");
    }
}
