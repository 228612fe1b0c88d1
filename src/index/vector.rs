//! Chunk vectors, quantized to int8 with one scale per vector (4× smaller than f32; cosine
//! error ~1e-3, far below ranking noise), and from format 6 written in a 4-bit form of that
//! for models where it keeps quality ([`QVec::to_4bit`], [`crate::embed::four_bit_vectors`]).
//! Below a size threshold they are scanned exactly; from it on, a first pass scans compact
//! codes (one bit per dimension: whether the vector is above the collection's mean there, 48
//! bytes for 384 dims) against the query's own f32 values, and only its shortlist is rescored
//! exactly on the stored vectors ([`Coded`]).
//! Bundles of formats 1–3 may hold an `instant-distance` HNSW graph instead; it is still
//! searched, but no longer built (the scan measured better: see ARCHITECTURE.md).

use instant_distance::{Hnsw, Point, Search};
use serde::{Deserialize, Serialize};
use serde_big_array::BigArray;

use crate::error::{Error, Result};

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
    /// over three 16-level readings: see ARCHITECTURE.md.
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

impl Point for QVec {
    fn distance(&self, other: &Self) -> f32 {
        1.0 - self.dot_i8(other)
    }
}

/// The vectors section. Written through [`Wire`]: vectors that are all in the 4-bit form
/// ([`QVec::to_4bit`], format 6) are packed two values a byte.
pub enum VectorIndex {
    /// Sorted by chunk id; scanned exactly.
    Flat(Vec<QVec>),
    /// Points in graph order; each names its chunk. Read from formats 1–3, no longer built.
    Hnsw(Hnsw<QVec>),
    /// Compact first-pass codes and the int8 vectors they shortlist for (format 4).
    Coded(Coded),
}

/// The vectors section's bytes (postcard; variants in this order). `Flat`, `Hnsw` and `Coded`
/// hold int8 vectors as formats 1–5 wrote them; format 6 writes 4-bit vectors as `Flat4` and
/// `Coded4`. Borrowed for writing ([`WireRef`]), owned for reading.
#[derive(Deserialize)]
enum Wire {
    Flat(Vec<QVec>),
    Hnsw(Hnsw<QVec>),
    Coded(Coded),
    Flat4(Packed4),
    Coded4(Coded4),
}

#[derive(Serialize)]
enum WireRef<'a> {
    Flat(&'a [QVec]),
    Hnsw(&'a Hnsw<QVec>),
    Coded(&'a Coded),
    Flat4(Packed4),
    Coded4(Coded4Ref<'a>),
}

/// 4-bit vectors, sorted by chunk, two values a byte.
#[derive(Serialize, Deserialize)]
struct Packed4 {
    dims: u32,
    /// Each vector's chunk as the step from the previous vector's (the first: from 0).
    chunk_steps: Vec<u32>,
    scales: Vec<f32>,
    /// `⌈dims / 2⌉` bytes a vector; dimension `2i` in the low nibble of byte `i`, `2i + 1` in
    /// the high one, each as `q + 8` (0..=15) for the value `q · scale`.
    nibbles: Vec<u8>,
}

#[derive(Deserialize)]
struct Coded4 {
    low: Vec<f32>,
    high: Vec<f32>,
    codes: Vec<u8>,
    vectors: Packed4,
}

#[derive(Serialize)]
struct Coded4Ref<'a> {
    low: &'a [f32],
    high: &'a [f32],
    codes: &'a [u8],
    vectors: Packed4,
}

impl Packed4 {
    /// `None` unless every vector is in the 4-bit form and all share one length.
    fn pack(vectors: &[QVec]) -> Option<Packed4> {
        let dims = vectors.first().map_or(0, |v| v.data.len());
        if !vectors.iter().all(|v| v.data.len() == dims && v.is_4bit())
            || !vectors.windows(2).all(|w| w[0].chunk < w[1].chunk)
        {
            return None;
        }
        let per = dims.div_ceil(2);
        let mut nibbles = Vec::with_capacity(vectors.len() * per);
        let mut prev = 0;
        let mut chunk_steps = Vec::with_capacity(vectors.len());
        for v in vectors {
            chunk_steps.push(v.chunk.wrapping_sub(prev));
            prev = v.chunk;
            let level = |d: i8| (d + 8) as u8;
            for pair in v.data.chunks(2) {
                let hi = pair.get(1).map_or(0, |&d| level(d));
                nibbles.push(level(pair[0]) | hi << 4);
            }
        }
        Some(Packed4 {
            dims: dims as u32,
            chunk_steps,
            scales: vectors.iter().map(|v| v.scale).collect(),
            nibbles,
        })
    }

    fn unpack(self) -> std::result::Result<Vec<QVec>, String> {
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
        let value = |nibble: u8| nibble as i8 - 8;
        let mut chunk = 0u32;
        let mut out = Vec::with_capacity(n);
        for (i, (&step, &scale)) in self.chunk_steps.iter().zip(&self.scales).enumerate() {
            chunk = chunk
                .checked_add(step)
                .ok_or("a 4-bit vector's chunk is past the last chunk")?;
            let bytes = &self.nibbles[i * per..(i + 1) * per];
            let data = (0..dims)
                .map(|d| value(bytes[d / 2] >> (4 * (d % 2)) & 0x0f))
                .collect();
            out.push(QVec { chunk, scale, data });
        }
        Ok(out)
    }
}

impl Serialize for VectorIndex {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            VectorIndex::Flat(v) => match Packed4::pack(v) {
                Some(p) if !v.is_empty() => WireRef::Flat4(p),
                _ => WireRef::Flat(v),
            },
            VectorIndex::Hnsw(h) => WireRef::Hnsw(h),
            VectorIndex::Coded(c) => match Packed4::pack(&c.vectors) {
                Some(p) if !c.vectors.is_empty() => WireRef::Coded4(Coded4Ref {
                    low: &c.low,
                    high: &c.high,
                    codes: &c.codes,
                    vectors: p,
                }),
                _ => WireRef::Coded(c),
            },
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for VectorIndex {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        Ok(match Wire::deserialize(d)? {
            Wire::Flat(v) => VectorIndex::Flat(v),
            Wire::Hnsw(h) => VectorIndex::Hnsw(h),
            Wire::Coded(c) => VectorIndex::Coded(c),
            Wire::Flat4(p) => VectorIndex::Flat(p.unpack().map_err(D::Error::custom)?),
            Wire::Coded4(c) => VectorIndex::Coded(Coded {
                low: c.low,
                high: c.high,
                codes: c.codes,
                vectors: c.vectors.unpack().map_err(D::Error::custom)?,
            }),
        })
    }
}

/// How many candidates the compact first pass hands to exact rescoring for a request of `k`.
/// Chosen on SciFact's train queries with both models (`examples/first_pass`): the smallest
/// tried (100–1,600 for k = 100) at which recall@100 reaches HNSW's; see ARCHITECTURE.md.
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coded {
    /// Per dimension, the mean of the values at or below the collection's mean.
    pub low: Vec<f32>,
    /// Per dimension, the mean of the values above it.
    pub high: Vec<f32>,
    /// `vectors.len() × code_bytes(dims)` bytes, code `i` for `vectors[i]`.
    pub codes: Vec<u8>,
    /// Sorted by chunk id.
    pub vectors: Vec<QVec>,
}

/// Bytes of one code for `dims` dimensions.
pub fn code_bytes(dims: usize) -> usize {
    dims.div_ceil(8)
}

impl Coded {
    /// `vectors` must be sorted by chunk id and share one dimension. Every sum runs over the
    /// dequantized int8 values in chunk order, in f64, so a build is reproducible and an
    /// incremental build (same int8 vectors) writes the same codes.
    pub fn build(vectors: Vec<QVec>) -> Coded {
        let dims = vectors.first().map_or(0, |v| v.data.len());
        let value = |v: &QVec, d: usize| v.data[d] as f64 * v.scale as f64;
        let mut sum = vec![0f64; dims];
        for v in &vectors {
            for (d, s) in sum.iter_mut().enumerate() {
                *s += value(v, d);
            }
        }
        let n = vectors.len().max(1) as f64;
        let mean: Vec<f64> = sum.iter().map(|s| s / n).collect();
        let cb = code_bytes(dims);
        let mut codes = vec![0u8; vectors.len() * cb];
        let (mut above, mut below) = (vec![(0f64, 0u32); dims], vec![(0f64, 0u32); dims]);
        for (v, code) in vectors.iter().zip(codes.chunks_exact_mut(cb.max(1))) {
            for (d, &m) in mean.iter().enumerate() {
                let x = value(v, d);
                let side = if x > m {
                    code[d / 8] |= 1 << (d % 8);
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

    fn dims(&self) -> usize {
        self.low.len()
    }

    /// First-pass score of every allowed code against the unit query `q`: ⟨q − c, x̂ − c⟩,
    /// where x̂ reads each bit as `high` or `low` and `c` is the midpoint of the two levels.
    /// Centring the query matters: with E5's vectors, which share a large common direction,
    /// the uncentred ⟨q, x̂⟩ found 64 % of the true top 100 in a shortlist of 400 on SciFact's
    /// train queries, the centred one 85 % (MiniLM: 98 % and 97 %). One 256-entry table per
    /// code byte turns the sum into `code_bytes` look-ups per vector. Returns (position, score).
    fn first_pass(&self, q: &[f32], allow: &dyn Fn(u32) -> bool) -> Vec<(u32, f32)> {
        let dims = self.dims();
        let cb = code_bytes(dims);
        if cb == 0 {
            return Vec::new();
        }
        // table[j][v] = Σ over the dims d of byte j of w[d] × (bit set ? ½ : −½), with
        // w = (q − c)(high − low); built from the value with its lowest bit cleared.
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
            for v in 1..256usize {
                let bit = v.trailing_zeros() as usize;
                t[v] = t[v & (v - 1)] + gains.get(bit).copied().unwrap_or(0.0);
            }
        }
        self.codes
            .chunks_exact(cb)
            .enumerate()
            .filter(|(i, _)| allow(self.vectors[*i].chunk))
            .map(|(i, code)| {
                let s: f32 = code.iter().zip(&table).map(|(&b, t)| t[b as usize]).sum();
                (i as u32, s)
            })
            .collect()
    }

    /// The `k` allowed chunks nearest to `q`: the first pass's best [`shortlist`]`(k)`,
    /// rescored exactly (cosine on the int8 vectors), best first.
    pub fn nearest_where(
        &self,
        q: &[f32],
        k: usize,
        allow: &dyn Fn(u32) -> bool,
    ) -> Vec<(u32, f32)> {
        let mut pass = self.first_pass(q, allow);
        let keep = shortlist(k);
        let by_score = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if pass.len() > keep {
            pass.select_nth_unstable_by(keep, by_score);
            pass.truncate(keep);
        }
        let mut hits: Vec<(u32, f32)> = pass
            .into_iter()
            .map(|(i, _)| {
                let v = &self.vectors[i as usize];
                (v.chunk, v.dot_f32(q))
            })
            .collect();
        hits.sort_by(by_score);
        hits.truncate(k);
        hits
    }

    /// Positions (into `vectors`) of the first pass's best `n` for `q`, best first: what
    /// `examples/first_pass` measures recall on.
    pub fn first_pass_best(&self, q: &[f32], n: usize) -> Vec<u32> {
        let mut pass = self.first_pass(q, &|_| true);
        pass.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        pass.into_iter()
            .take(n)
            .map(|(i, _)| self.vectors[i as usize].chunk)
            .collect()
    }
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
    pub fn build(vectors: Vec<QVec>, compact_threshold: usize) -> VectorIndex {
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
    pub fn vectors(&self) -> Box<dyn Iterator<Item = &QVec> + '_> {
        match self {
            VectorIndex::Flat(v) => Box::new(v.iter()),
            VectorIndex::Hnsw(h) => Box::new(h.iter().map(|(_, p)| p)),
            VectorIndex::Coded(c) => Box::new(c.vectors.iter()),
        }
    }

    /// The vector at storage position `i` (graph order for HNSW, chunk order otherwise).
    pub fn point(&self, i: u32) -> &QVec {
        match self {
            VectorIndex::Flat(v) => &v[i as usize],
            VectorIndex::Coded(c) => &c.vectors[i as usize],
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
    /// Graph and first-pass results are re-scored against the f32 query, so every path
    /// reports the same scale.
    pub fn nearest(&self, q: &[f32], k: usize) -> Vec<(u32, f32)> {
        let mut hits: Vec<(u32, f32)> = match self {
            VectorIndex::Flat(v) => v.iter().map(|p| (p.chunk, p.dot_f32(q))).collect(),
            VectorIndex::Coded(c) => return c.nearest_where(q, k, &|_| true),
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
            VectorIndex::Flat(v) | VectorIndex::Coded(Coded { vectors: v, .. }) => chunks
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
        if let VectorIndex::Flat(v) | VectorIndex::Coded(Coded { vectors: v, .. }) = self {
            if !v.windows(2).all(|w| w[0].chunk < w[1].chunk) {
                return Err(Error::Corrupt("vectors are not sorted by chunk".into()));
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
            if c.codes.len() as u64 != c.vectors.len() as u64 * code_bytes(dims) as u64 {
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
        let c = Coded::build(vectors);
        // Means 2, 0, 1, 0, 1, 1, 1, 1, 0. Dims 0..8 in byte 0 (bit d), dim 8 in bit 0 of
        // byte 1; equal to the mean is 0, and the levels are each side's mean.
        assert_eq!(c.codes, vec![0b0000_1001, 0b0, 0b0000_0110, 0b1]);
        assert_eq!(c.high, vec![3.0, 1.0, 2.0, 9.0, 1.0, 1.0, 1.0, 1.0, 5.0]);
        assert_eq!(c.low, vec![1.0, -1.0, 0.0, -9.0, 1.0, 1.0, 1.0, 1.0, -5.0]);
    }

    #[test]
    fn a_shortlist_covering_everything_is_the_exact_scan() {
        let vectors = unit_vectors(300, 40);
        let flat = VectorIndex::Flat(vectors.clone());
        let coded = VectorIndex::build(vectors, 1);
        assert!(matches!(coded, VectorIndex::Coded(_)));
        for seed in 0..5 {
            let q = query(40, seed);
            assert_eq!(coded.nearest(&q, 10), flat.nearest(&q, 10));
        }
    }

    #[test]
    fn the_first_pass_finds_most_true_neighbours_in_a_short_list() {
        let vectors = unit_vectors(20_000, 64);
        let flat = VectorIndex::Flat(vectors.clone());
        let VectorIndex::Coded(coded) = VectorIndex::build(vectors, 1) else {
            unreachable!()
        };
        let (mut found, mut total) = (0, 0);
        for seed in 0..20 {
            let q = query(64, seed);
            let truth: Vec<u32> = flat.nearest(&q, 10).into_iter().map(|h| h.0).collect();
            let got = coded.nearest_where(&q, 10, &|_| true);
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
        let VectorIndex::Coded(coded) = VectorIndex::build(vectors.clone(), 1) else {
            unreachable!()
        };
        let q = query(32, 3);
        let odd = coded.nearest_where(&q, 20, &|c| c % 2 == 1);
        assert_eq!(odd.len(), 20);
        assert!(odd.iter().all(|h| h.0 % 2 == 1));
        let exact: Vec<(u32, f32)> = VectorIndex::Flat(vectors)
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
        let coded = VectorIndex::build(unit_vectors(50, 16), 1);
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

    /// The section's variant index, as postcard writes it first.
    fn variant(index: &VectorIndex) -> u8 {
        postcard::to_allocvec(index).unwrap()[0]
    }

    #[test]
    fn vectors_in_the_4bit_form_are_written_two_a_byte_and_read_back() {
        let int8 = unit_vectors(300, 41);
        let four: Vec<QVec> = int8.iter().map(QVec::to_4bit).collect();
        for (index, expect) in [
            (VectorIndex::Flat(int8.clone()), 0),
            (VectorIndex::build(int8.clone(), 1), 2),
            (VectorIndex::Flat(four.clone()), 3),
            (VectorIndex::build(four.clone(), 1), 4),
        ] {
            assert_eq!(variant(&index), expect);
            let bytes = postcard::to_allocvec(&index).unwrap();
            let back: VectorIndex = postcard::from_bytes(&bytes).unwrap();
            assert_eq!(
                back.vectors().collect::<Vec<_>>(),
                index.vectors().collect::<Vec<_>>()
            );
            if let (VectorIndex::Coded(a), VectorIndex::Coded(b)) = (&back, &index) {
                assert_eq!(a, b);
            }
        }
        let size = |v: &VectorIndex| postcard::to_allocvec(v).unwrap().len();
        assert!(size(&VectorIndex::Flat(four)) * 2 < size(&VectorIndex::Flat(int8)) + 300 * 8);
    }

    #[test]
    fn packed_4bit_vectors_that_do_not_add_up_are_refused() {
        let four: Vec<QVec> = unit_vectors(3, 8).iter().map(QVec::to_4bit).collect();
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
        let VectorIndex::Coded(mut c) = VectorIndex::build(unit_vectors(10, 16), 1) else {
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
