//! HNSW graphs of formats 1–3: still searched, no longer built, every link checked before
//! the graph is trusted.

use instant_distance::Point;
use serde_big_array::BigArray;

use super::*;

/// Seed of the HNSW level generator: fixed, so the graph is reproducible.
pub(super) const HNSW_SEED: u64 = 0x00d0_c10b_e5ee_d001;

impl Point for QVec {
    fn distance(&self, other: &Self) -> f32 {
        1.0 - self.dot_i8(other)
    }
}

/// Graph links are private to instant-distance, and an out-of-range link would panic inside
/// its search. This mirror has the same serde layout as `Hnsw<QVec>`, so the section's bytes
/// can be decoded a second time and every link checked before the real graph is trusted.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct HnswMirror {
    pub(super) ef_search: usize,
    pub(super) points: Vec<QVec>,
    pub(super) zero: Vec<ZeroNodeMirror>,
    pub(super) layers: Vec<Vec<UpperNodeMirror>>,
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct ZeroNodeMirror(#[serde(with = "BigArray")] pub(super) [u32; 64]);

#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct UpperNodeMirror(pub(super) [u32; 32]);

pub(super) const INVALID: u32 = u32::MAX;

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
