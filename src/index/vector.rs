//! Chunk vectors, quantized to int8 with one scale per vector (4× smaller than f32; cosine
//! error ~1e-3, far below ranking noise), searched exactly below a size threshold and through
//! an `instant-distance` HNSW graph above it.

use instant_distance::{Hnsw, Point, Search};
use serde::{Deserialize, Serialize};
use serde_big_array::BigArray;

use crate::error::{Error, Result};

/// Seed of the HNSW level generator: fixed, so the graph is reproducible.
const HNSW_SEED: u64 = 0x00d0_c10b_e5ee_d001;

/// An int8 vector: `value[i] ≈ data[i] as f32 * scale`. Carries its chunk id so a graph
/// search result names its chunk without a side table.
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

impl Point for QVec {
    fn distance(&self, other: &Self) -> f32 {
        1.0 - self.dot_i8(other)
    }
}

/// The vectors section.
#[derive(Serialize, Deserialize)]
pub enum VectorIndex {
    /// Sorted by chunk id; scanned exactly.
    Flat(Vec<QVec>),
    /// Points in graph order; each names its chunk.
    Hnsw(Hnsw<QVec>),
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VectorIndex::Flat(v) => write!(f, "VectorIndex::Flat({} vectors)", v.len()),
            VectorIndex::Hnsw(h) => write!(f, "VectorIndex::Hnsw({} vectors)", h.iter().count()),
        }
    }
}

impl VectorIndex {
    /// `vectors` must be sorted by chunk id.
    pub fn build(vectors: Vec<QVec>, hnsw_threshold: usize) -> Result<VectorIndex> {
        if vectors.len() < hnsw_threshold {
            return Ok(VectorIndex::Flat(vectors));
        }
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
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All vectors, in storage order.
    pub fn vectors(&self) -> Box<dyn Iterator<Item = &QVec> + '_> {
        match self {
            VectorIndex::Flat(v) => Box::new(v.iter()),
            VectorIndex::Hnsw(h) => Box::new(h.iter().map(|(_, p)| p)),
        }
    }

    /// The vector at storage position `i` (graph order for HNSW, chunk order for flat).
    pub fn point(&self, i: u32) -> &QVec {
        match self {
            VectorIndex::Flat(v) => &v[i as usize],
            VectorIndex::Hnsw(h) => &h[instant_distance::PointId::from(i)],
        }
    }

    /// For each of `n_chunks` chunks, the storage position of its vector (`u32::MAX`: none).
    /// Built once per engine, so scoring a given chunk is one index away.
    pub fn positions(&self, n_chunks: usize) -> Vec<u32> {
        let mut pos = vec![u32::MAX; n_chunks];
        for (i, p) in self.vectors().enumerate() {
            if let Some(slot) = pos.get_mut(p.chunk as usize) {
                *slot = i as u32;
            }
        }
        pos
    }

    /// The `k` chunks nearest to the unit query `q`, as (chunk, cosine), best first.
    /// Graph results are re-scored against the f32 query, so both paths report the same scale.
    pub fn nearest(&self, q: &[f32], k: usize) -> Vec<(u32, f32)> {
        let mut hits: Vec<(u32, f32)> = match self {
            VectorIndex::Flat(v) => v.iter().map(|p| (p.chunk, p.dot_f32(q))).collect(),
            VectorIndex::Hnsw(h) => {
                let query = QVec::quantize(u32::MAX, q);
                let mut search = Search::default();
                h.search(&query, &mut search)
                    .map(|item| (item.point.chunk, item.point.dot_f32(q)))
                    .collect()
            }
        };
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(k);
        hits
    }

    /// Cosine of the query with each chunk in `chunks` (which need not be near it).
    /// Returns `None` for a chunk without a vector.
    pub fn similarity(&self, q: &[f32], chunks: &[u32]) -> Vec<Option<f32>> {
        match self {
            VectorIndex::Flat(v) => chunks
                .iter()
                .map(|c| {
                    v.binary_search_by_key(c, |p| p.chunk)
                        .ok()
                        .map(|i| v[i].dot_f32(q))
                })
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
        for p in self.vectors() {
            if p.data.len() != dims || !p.scale.is_finite() {
                return Err(Error::Corrupt(format!(
                    "vector of chunk {} has {} dims, expected {dims}",
                    p.chunk,
                    p.data.len()
                )));
            }
            match seen.get_mut(p.chunk as usize) {
                Some(s) if !*s => *s = true,
                _ => {
                    return Err(Error::Corrupt(format!(
                        "vector names chunk {} twice or past the end",
                        p.chunk
                    )))
                }
            }
        }
        if let VectorIndex::Flat(v) = self {
            if !v.windows(2).all(|w| w[0].chunk < w[1].chunk) {
                return Err(Error::Corrupt(
                    "flat vectors are not sorted by chunk".into(),
                ));
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
