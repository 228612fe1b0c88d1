//! Raw DEFLATE as bundles use it (format 7's text blocks; format 8's `docs` and `lexical`
//! sections and vector blocks): deflated by `miniz_oxide`, pure Rust, the same bytes on every
//! target; inflated by `docloupe_inflate` (the same crate's inflater), which the lexical wasm
//! build reaches through its host.
//!
//! Whatever is deflated records the length it inflates to, at most [`MAX_RATIO`] times its
//! own: the writer stores (DEFLATE level 0) anything that would compress better than that, so
//! a few bytes of a crafted bundle cannot ask for gigabytes, and inflating stops at the
//! recorded length.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The most bytes a deflated run may inflate to per byte it holds. Text deflates about 4:1,
/// metadata and postings about 2:1, 4-bit vectors about 1.3:1.
pub const MAX_RATIO: usize = 64;

/// `raw` deflated at level 9, or stored when that would inflate past [`MAX_RATIO`].
pub(crate) fn deflate(raw: &[u8]) -> Vec<u8> {
    let deflated = miniz_oxide::deflate::compress_to_vec(raw, 9);
    if raw.len() > deflated.len().saturating_mul(MAX_RATIO) {
        return miniz_oxide::deflate::compress_to_vec(raw, 0);
    }
    deflated
}

/// [`deflate`] of `pieces` joined, without joining them: the same bytes. (`miniz_oxide`, like
/// miniz, decides nothing until its lookahead is full or the input ends, so where the input
/// is cut does not show in the output; `deflate_in_pieces_is_deflate` checks it.) A builder
/// at 100K documents saves a copy of a section's raw bytes, 150 MB of chunk metadata.
pub(crate) fn deflate_pieces(pieces: &[&[u8]]) -> Vec<u8> {
    let raw: usize = pieces.iter().map(|p| p.len()).sum();
    let deflated = compress_pieces(pieces, 9);
    if raw > deflated.len().saturating_mul(MAX_RATIO) {
        return compress_pieces(pieces, 0);
    }
    deflated
}

/// `miniz_oxide::deflate::compress_to_vec`, its input in pieces.
fn compress_pieces(pieces: &[&[u8]], level: u8) -> Vec<u8> {
    use miniz_oxide::deflate::core::{
        compress_to_output, create_comp_flags_from_zip_params, CompressorOxide, TDEFLFlush,
        TDEFLStatus,
    };
    let mut compressor =
        CompressorOxide::new(create_comp_flags_from_zip_params(level.into(), 0, 0));
    let mut out = Vec::new();
    let mut feed = |mut input: &[u8], flush: TDEFLFlush| loop {
        let (status, used) = compress_to_output(&mut compressor, input, flush, |bytes| {
            out.extend_from_slice(bytes);
            true
        });
        input = &input[used..];
        // Writing to a `Vec` cannot fail; `Done` once the stream is finished.
        debug_assert!(matches!(status, TDEFLStatus::Okay | TDEFLStatus::Done));
        if input.is_empty() || !matches!(status, TDEFLStatus::Okay) {
            break;
        }
    };
    for piece in pieces {
        feed(piece, TDEFLFlush::None);
    }
    feed(&[], TDEFLFlush::Finish);
    out
}

/// Whether `len` bytes may come out of `deflated` (see [`MAX_RATIO`]).
pub(crate) fn within_ratio(len: u64, deflated: &[u8]) -> bool {
    len <= (deflated.len() as u64).saturating_mul(MAX_RATIO as u64)
}

/// The `len` bytes `deflated` inflates to, or `None` when it is not a raw DEFLATE stream of
/// exactly that many bytes, all of it read, or `len` passes the ratio. (No message: turning an
/// error into text costs the lexical wasm build kilobytes; callers say what failed.)
pub(crate) fn inflate(deflated: &[u8], len: usize) -> Option<Vec<u8>> {
    if !within_ratio(len as u64, deflated) {
        return None;
    }
    // Into a buffer of exactly `len`: a stream that wants more, or ends short, is refused.
    let mut raw = vec![0u8; len];
    inflate_into(deflated, &mut raw).then_some(raw)
}

/// `docloupe_inflate`, linked in.
#[cfg(not(feature = "host-inflate"))]
fn inflate_into(deflated: &[u8], raw: &mut [u8]) -> bool {
    docloupe_inflate::inflate_exact(deflated, raw)
}

/// The lexical wasm build (`host-inflate`) asks its host: the same `docloupe_inflate` code,
/// built as its own small module (`www/pkg/inflate/inflate.wasm`) that `www/host.js` loads
/// for whole bundles only, which keeps 5 KB brotli out of every first paint over a split one.
#[cfg(feature = "host-inflate")]
fn inflate_into(deflated: &[u8], raw: &mut [u8]) -> bool {
    match host::inflate(deflated, raw) {
        Ok(ok) => ok,
        Err(_) => {
            HOST_INFLATER_MISSING.set(true);
            false
        }
    }
}

#[cfg(feature = "host-inflate")]
thread_local! {
    /// Set when an inflation found no host inflater (see [`take_host_inflater_missing`]).
    static HOST_INFLATER_MISSING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether an inflation since the last call found no host inflater installed (and clears it):
/// what a whole bundle that fails to load in the lexical wasm build should be told instead of
/// "corrupt".
#[cfg(feature = "host-inflate")]
pub(crate) fn take_host_inflater_missing() -> bool {
    HOST_INFLATER_MISSING.replace(false)
}

#[cfg(feature = "host-inflate")]
mod host {
    use wasm_bindgen::prelude::*;

    #[wasm_bindgen]
    extern "C" {
        /// `globalThis.docloupeInflate(deflated, out)`: fills `out` and says whether the
        /// stream inflated to exactly it (throws when the host installed none).
        #[wasm_bindgen(catch, js_namespace = globalThis, js_name = docloupeInflate)]
        pub fn inflate(deflated: &[u8], out: &mut [u8]) -> Result<bool, JsValue>;
    }
}

/// Bytes that postcard reads and writes in one piece (a length, then the bytes: the layout of
/// a `Vec<u8>`, which serde otherwise reads one element at a time, 46 ms for cpp-docs' 18 MB
/// of deflated vectors).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Bytes(pub Vec<u8>);

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = Bytes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> std::result::Result<Bytes, E> {
                Ok(Bytes(v.to_vec()))
            }
            fn visit_byte_buf<E: serde::de::Error>(
                self,
                v: Vec<u8>,
            ) -> std::result::Result<Bytes, E> {
                Ok(Bytes(v))
            }
        }
        d.deserialize_byte_buf(Visit)
    }
}

/// A whole section deflated (format 8's `docs` and `lexical`): the length of the postcard
/// bytes it inflates to, then their raw DEFLATE.
#[derive(Serialize, Deserialize)]
struct Wrapped<'a> {
    len: u64,
    #[serde(borrow)]
    deflated: std::borrow::Cow<'a, [u8]>,
}

/// The section that holds `raw` deflated.
pub(crate) fn wrap(raw: &[u8], what: &str) -> Result<Vec<u8>> {
    super::to_bytes(
        &Wrapped {
            len: raw.len() as u64,
            deflated: deflate(raw).into(),
        },
        what,
    )
}

/// [`wrap`] of `pieces` joined, in pieces: the deflated bytes are not copied again.
pub(crate) fn wrap_pieces(pieces: &[&[u8]], what: &str) -> Result<Vec<Vec<u8>>> {
    let len: usize = pieces.iter().map(|p| p.len()).sum();
    let deflated = deflate_pieces(pieces);
    // `Wrapped` as postcard writes it: the two lengths, then the bytes.
    let head = super::to_bytes(&(len as u64, deflated.len()), what)?;
    Ok(vec![head, deflated])
}

/// The bytes a [`wrap`]ped section holds, or `Corrupt` naming `what`.
pub(crate) fn unwrap(section: &[u8], what: &str) -> Result<Vec<u8>> {
    let w: Wrapped = super::decode_exact(section, what)?;
    usize::try_from(w.len)
        .ok()
        .and_then(|len| inflate(&w.deflated, len))
        .ok_or_else(|| {
            Error::Corrupt(format!(
                "{what}: {} deflated bytes do not inflate to the {} recorded",
                w.deflated.len(),
                w.len
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_laid_out_as_a_vec_of_u8() {
        let v: Vec<u8> = (0..=255).chain(0..10).collect();
        let as_vec = postcard::to_allocvec(&v).unwrap();
        assert_eq!(postcard::to_allocvec(&Bytes(v.clone())).unwrap(), as_vec);
        assert_eq!(postcard::from_bytes::<Bytes>(&as_vec).unwrap(), Bytes(v));
        assert!(postcard::from_bytes::<Bytes>(&as_vec[..as_vec.len() - 1]).is_err());
    }

    #[test]
    fn a_section_round_trips_and_shrinks() {
        // Words drawn from a small vocabulary: about 4:1, as text.
        let mut state = 7u32;
        let words = [
            "cache", "grow", "limit", "the", "of", "bundle", "query", "rank",
        ];
        let raw: Vec<u8> = (0..40_000)
            .flat_map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                words[(state >> 16) as usize % words.len()]
                    .bytes()
                    .chain([b' '])
            })
            .collect();
        let section = wrap(&raw, "t").unwrap();
        assert!(section.len() * 3 < raw.len(), "{}", section.len());
        assert_eq!(unwrap(&section, "t").unwrap(), raw);
        assert_eq!(
            unwrap(&wrap(&[], "t").unwrap(), "t").unwrap(),
            Vec::<u8>::new()
        );
    }

    #[test]
    fn deflate_in_pieces_is_deflate() {
        let mut state = 11u32;
        let mut next = || {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            state >> 16
        };
        // Text-like, repetitive bytes, past miniz's 32 KiB window and its 64 KiB code buffer.
        let raw: Vec<u8> = (0..300_000)
            .map(|_| b"abcdefgh    \n0123"[next() as usize % 17])
            .collect();
        for cuts in [vec![], vec![1], vec![257, 258, 259], vec![65_536, 200_000]] {
            let mut at = 0;
            let mut pieces: Vec<&[u8]> = Vec::new();
            for cut in cuts.iter().copied().chain([raw.len()]) {
                pieces.push(&raw[at..cut]);
                at = cut;
            }
            assert_eq!(deflate_pieces(&pieces), deflate(&raw), "cut at {cuts:?}");
            let wrapped: Vec<u8> = wrap_pieces(&pieces, "t").unwrap().concat();
            assert_eq!(wrapped, wrap(&raw, "t").unwrap());
        }
        // Random pieces, and what passes the ratio (stored).
        let cuts: Vec<usize> = (0..200).map(|_| next() as usize % raw.len()).collect();
        let mut sorted = cuts.clone();
        sorted.sort_unstable();
        let mut at = 0;
        let pieces: Vec<&[u8]> = sorted
            .iter()
            .chain([&raw.len()])
            .map(|&cut| {
                let p = &raw[at..cut];
                at = cut;
                p
            })
            .collect();
        assert_eq!(deflate_pieces(&pieces), deflate(&raw));
        let zeros = vec![0u8; 1 << 20];
        let halves: [&[u8]; 2] = [&zeros[..1000], &zeros[1000..]];
        assert_eq!(deflate_pieces(&halves), deflate(&zeros));
    }

    #[test]
    fn what_would_pass_the_ratio_is_stored() {
        let zeros = vec![0u8; 1 << 20];
        let d = deflate(&zeros);
        assert!(d.len() > 1 << 20 && within_ratio(zeros.len() as u64, &d));
        assert_eq!(inflate(&d, zeros.len()).unwrap(), zeros);
    }

    #[test]
    fn crafted_sections_are_corrupt_not_a_panic_or_a_bomb() {
        let raw = b"the quick brown fox jumps over the lazy dog ".repeat(100);
        let good = deflate(&raw);
        assert_eq!(inflate(&good, raw.len()).unwrap(), raw);
        // A length off by one either way, a damaged stream, bytes that are no stream, a
        // length past the ratio, trailing bytes.
        assert!(inflate(&good, raw.len() - 1).is_none());
        assert!(inflate(&good, raw.len() + 1).is_none());
        let mut flipped = good.clone();
        flipped[0] ^= 0xff;
        assert!(inflate(&flipped, raw.len()).is_none());
        assert!(inflate(b"not deflate at all", 18).is_none());
        assert!(inflate(&good, good.len() * MAX_RATIO + 1).is_none());
        let mut longer = good.clone();
        longer.push(0);
        assert!(inflate(&longer, raw.len()).is_none());
        let bomb = crate::encoding::to_bytes(
            &Wrapped {
                len: u64::MAX,
                deflated: good.as_slice().into(),
            },
            "t",
        )
        .unwrap();
        assert!(matches!(unwrap(&bomb, "docs"), Err(Error::Corrupt(m)) if m.starts_with("docs")));
    }
}
