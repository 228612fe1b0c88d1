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

use instant_distance::{Hnsw, Search};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[cfg(not(target_arch = "wasm32"))]
pub mod cache;
mod first_pass;
mod hnsw;
mod kernels;
mod quantize;
mod store;
#[cfg(test)]
mod tests;
mod wire;

pub use first_pass::*;
pub use hnsw::*;
use kernels::*;
pub use quantize::*;
pub use store::*;
pub use wire::*;

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
