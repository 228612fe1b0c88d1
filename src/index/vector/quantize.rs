//! One vector quantized: int8 with one scale per vector, and its 4-bit form.

use super::*;

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
}
