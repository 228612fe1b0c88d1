//! Chunk vectors, quantized to int8 with one scale per vector (4× smaller than f32; cosine
//! error ~1e-3, far below ranking noise), and from format 6 written in a 4-bit form of that
//! for models where it keeps quality ([`QVec::to_4bit`], [`crate::embed::four_bit_vectors`]).
//! Below a size threshold they are scanned exactly; from it on, a first pass scans compact
//! codes (one bit per dimension: whether the vector is above the collection's mean there, 48
//! bytes for 384 dims) against the query's own f32 values, and only its shortlist is rescored
//! exactly on the stored vectors ([`Coded`]). In memory the vectors are held flat, 4 bits a
//! value where they fit ([`Vectors`]).
//! (Formats 1–3 could hold an HNSW graph instead; the scan measured better,
//! `docs/measurements/2026-11-29-compact-codes-vs-hnsw.md`, and those formats are no longer read.)

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[cfg(not(target_arch = "wasm32"))]
pub mod cache;
mod first_pass;
mod kernels;
mod quantize;
mod store;
#[cfg(test)]
mod tests;
mod wire;

pub use first_pass::*;
use kernels::*;
pub use quantize::*;
pub use store::*;
pub use wire::*;

/// The vectors section. Written through [`Wire`]: vectors that are all in the 4-bit form
/// ([`QVec::to_4bit`], format 6) are packed two values a byte.
pub enum VectorIndex {
    /// Sorted by chunk id; scanned exactly.
    Flat(Vectors),
    /// Compact first-pass codes and the int8 vectors they shortlist for (format 4).
    Coded(Coded),
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
            VectorIndex::Coded(c) => write!(
                f,
                "VectorIndex::Coded({} vectors, {} codes)",
                c.vectors.len(),
                c.n_codes()
            ),
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

    pub fn len(&self) -> usize {
        match self {
            VectorIndex::Flat(v) => v.len(),
            VectorIndex::Coded(c) => c.vectors.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All vectors, in storage order.
    pub fn vectors(&self) -> impl Iterator<Item = QVec> + '_ {
        self.store().iter()
    }

    /// The stored vectors, sorted by chunk.
    pub fn store(&self) -> &Vectors {
        match self {
            VectorIndex::Flat(v) | VectorIndex::Coded(Coded { vectors: v, .. }) => v,
        }
    }

    /// Cosine of the unit query `q` with the vector at storage position `i` (chunk order).
    pub fn dot_f32(&self, i: u32, q: &[f32]) -> f32 {
        self.store().dot_f32(i as usize, q)
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
        self.store()
            .chunks()
            .iter()
            .enumerate()
            .for_each(|(i, &c)| place(i, c));
        pos
    }

    /// The `k` chunks nearest to the unit query `q`, as (chunk, cosine), best first.
    /// First-pass results are re-scored against the f32 query, so both paths report the same
    /// scale.
    pub fn nearest(&self, q: &[f32], k: usize) -> Vec<(u32, f32)> {
        let mut hits: Vec<(u32, f32)> = match self {
            VectorIndex::Flat(v) => (0..v.len())
                .map(|i| (v.chunks[i], v.dot_f32(i, q)))
                .collect(),
            VectorIndex::Coded(c) => return c.nearest_where(q, k, None),
        };
        hits.sort_by(best_first);
        hits.truncate(k);
        hits
    }

    /// Cosine of the query with each chunk in `chunks` (which need not be near it).
    /// Returns `None` for a chunk without a vector.
    pub fn similarity(&self, q: &[f32], chunks: &[u32]) -> Vec<Option<f32>> {
        let v = self.store();
        chunks
            .iter()
            .map(|c| v.chunks.binary_search(c).ok().map(|i| v.dot_f32(i, q)))
            .collect()
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
        let v = self.store();
        for (&chunk, &scale) in v.chunks.iter().zip(&v.scales) {
            check(chunk, v.dims, scale)?;
        }
        if !v.sorted_by_chunk() {
            return Err(Error::Corrupt("vectors are not sorted by chunk".into()));
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
            if let Some(s) = &c.shared {
                s.check(c.vectors.len()).map_err(Error::Corrupt)?;
            }
            if c.codes.len() as u64 != blocked_len(c.n_codes(), dims) as u64 {
                return Err(Error::Corrupt(format!(
                    "{} code bytes for {} codes of {dims} dims",
                    c.codes.len(),
                    c.n_codes()
                )));
            }
        }
        Ok(())
    }
}
