//! The vectors section on the wire: the forms formats 8 and 9 write (postcard variants of
//! [`Wire`]), their deflated row blocks, and decoding with every length checked.

use crate::encoding::{Bytes, Pieces};

use super::*;

/// The vectors section's bytes as read (postcard; variants in this order). Formats 8 and 9
/// write the vectors as `FlatRows` / `CodedRows`: deflated in blocks of rows ([`Rows`]), and
/// for `Coded` only the per-dimension mean and levels, the codes being computed from them and
/// the vectors when read ([`Coded::from_levels`]). Vectors that do not pack as rows (none,
/// from an empty collection) are written int8 one by one as `Flat` / `Coded`. Variants 1, 3
/// and 4 held the HNSW graph and the 4-bit forms of formats 1 to 7, whose bundles are refused
/// before their vectors are read: one here is corrupt.
#[derive(Deserialize)]
pub(super) enum Wire {
    Flat(Vec<QVec>),
    Retired1,
    Coded(LegacyCoded),
    Retired3,
    Retired4,
    FlatRows(Rows),
    CodedRows(CodedRows),
}

/// The postcard variant indexes of the vectors section's first byte, as `index-builder
/// inspect` names them: (variant, index kind, bits a value; 0: the rows say).
pub const WIRE_KINDS: [(u8, &str, u8); 4] = [
    (0, "exact", 8),
    (2, "coded", 8),
    (5, "exact", 0),
    (6, "coded", 0),
];

/// The index kind and bits a value of a vectors section (`None`: not one this engine
/// writes or reads). The rows record their bits first.
pub fn wire_kind(section: &[u8]) -> Option<(&'static str, u8)> {
    let (&variant, rest) = section.split_first()?;
    let &(_, kind, bits) = WIRE_KINDS.iter().find(|k| k.0 == variant)?;
    Some((kind, if bits == 0 { *rest.first()? } else { bits }))
}

/// Vectors as format 8 writes them. Each vector is a row: its chunk's step from the previous
/// vector's (u32 LE), its scale (f32 LE), then its values (when `bits` is 4 two a byte,
/// dimension `2i` in the low nibble of byte `i` as `q + 8`; one a byte when 8). Rows are cut into blocks of [`ROWS_PER_BLOCK`]; a block is
/// written column by column (byte 0 of every row, then byte 1, ...), so each dimension's
/// values lie together, and deflated. On en-large-cpp-docs (120,698 vectors of 384 dims at 4
/// bits) the section is 18.4 MB for 24.1 MB of rows; the nibbles alone deflated as they lie
/// came to 18.8 MB (`docs/measurements/2026-11-28-bundle-size-formats-5-to-8.md`).
#[derive(Serialize, Deserialize)]
pub(super) struct Rows {
    pub(super) bits: u8,
    pub(super) dims: u32,
    pub(super) blocks: Vec<RowBlock>,
}

#[derive(Serialize, Deserialize)]
pub(super) struct RowBlock {
    pub(super) rows: u32,
    /// Raw DEFLATE of `rows × width` bytes, column by column (`encoding/deflate.rs`).
    pub(super) deflated: Bytes,
}

/// `Coded` as format 8 writes it: everything but the codes, which are a function of the
/// vectors and `mean` (see [`Coded::build`]).
#[derive(Serialize, Deserialize)]
pub(super) struct CodedRows {
    pub(super) rows: Rows,
    pub(super) mean: Vec<f64>,
    pub(super) low: Vec<f32>,
    pub(super) high: Vec<f32>,
}

/// Rows a block of format 8's vectors holds. Chosen on en-large-cpp-docs: blocks of
/// 16,384 / 32,768 / 65,536 / all rows deflate to 18.42 / 18.29 / 18.23 / 18.18 MB; a
/// block bounds what a reader holds twice while it unpacks.
pub const ROWS_PER_BLOCK: usize = 65_536;

/// The most dimensions a vector may have (a crafted section cannot ask for huge rows).
pub(super) const MAX_DIMS: u32 = 1 << 14;

impl Rows {
    /// `None` unless the vectors are sorted by chunk (and of at most [`MAX_DIMS`]). Each block
    /// is laid out, transposed and deflated in one step, natively on every core, so only the
    /// blocks in hand are held twice (laying out every block first took a copy of all the
    /// vectors: 0.47 GB at 2.24M).
    pub(super) fn pack(vectors: &Vectors) -> Option<Rows> {
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
    pub(super) fn write_pieces(self, out: &mut Pieces) -> Result<()> {
        out.put(&(self.bits, self.dims, self.blocks.len()))?;
        for block in self.blocks {
            out.put(&block.rows)?;
            out.put_bytes(block.deflated.0)?;
        }
        Ok(())
    }

    /// The vectors, read straight into one flat [`Vectors`] (its buffers sized once, each
    /// block filling its own part; on every core natively).
    pub(super) fn unpack(self) -> std::result::Result<Vectors, String> {
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
pub(super) type BlockPart<'a> = (&'a RowBlock, &'a mut [u32], &'a mut [f32], &'a mut [u8]);

/// `src` read as `rows × cols` bytes row by row, written column by column (the inverse is
/// `transpose(out, cols, rows)`).
pub(super) fn transpose(src: &[u8], rows: usize, cols: usize) -> Vec<u8> {
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
pub(super) fn transpose_into(src: &[u8], rows: usize, cols: usize, out: &mut [u8]) {
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
pub(super) const TILE_COLUMNS: usize = 2_048;

/// The 8 × 8 bytes `x` (byte `j` of `x[i]` is element (i, j)) transposed: swaps of 4 × 4,
/// then 2 × 2, then 1 × 1 blocks.
pub(super) fn transpose8(mut x: [u64; 8]) -> [u64; 8] {
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
pub(super) fn row_width(bits: u8, dims: usize) -> usize {
    8 + if bits == 4 { dims.div_ceil(2) } else { dims }
}

/// [`Coded`] int8 vectors one by one, as formats 4 and 5 wrote it (and 8 and 9 for none).
#[derive(Serialize, Deserialize)]
pub(super) struct LegacyCoded {
    pub(super) low: Vec<f32>,
    pub(super) high: Vec<f32>,
    pub(super) codes: Vec<u8>,
    pub(super) vectors: Vec<QVec>,
}

/// Writes the rows ([`Rows`]); vectors that do not pack (none at all) int8 one by one.
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

pub(super) fn from_wire(wire: Wire) -> std::result::Result<VectorIndex, String> {
    Ok(match wire {
        Wire::Flat(v) => VectorIndex::Flat(Vectors::from_qvecs(v)?),
        Wire::Coded(c) => {
            let vectors = Vectors::from_qvecs(c.vectors)?;
            VectorIndex::Coded(Coded::from_codes(vectors, c.low, c.high, &c.codes)?)
        }
        Wire::Retired1 | Wire::Retired3 | Wire::Retired4 => {
            return Err("a form of formats 1 to 7 (an HNSW graph or 4-bit vectors)".into())
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
