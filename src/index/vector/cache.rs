//! A decoded [`Coded`] index as it lies in memory, for a native host to keep between
//! processes: `docloupe search` over 2.24M vectors spent most of a one-off hybrid call
//! inflating, transposing and coding them (`docs/measurements/2026-11-29-hybrid-100k.md`, "The decoded vectors, kept").
//!
//! ```text
//! magic b"DOCLVCAC", version u32 LE ([`VERSION`]), header length u32 LE, sha256(header),
//! header   postcard [`Header`]: which vectors (the bundle's checksum of its vectors
//!          section), how many, how many codes, their dims and bits, and the CRC-32 of
//!          every [`SEGMENT`]-byte piece of each part below
//! parts    low, high (f32 LE × dims), chunks (u32 LE × n), scales (f32 LE × n),
//!          codes (Coded's blocks, one a code), values (n rows), and where codes are
//!          shared (fewer codes than vectors) the groups: starts (u32 LE × codes + 1),
//!          members (u32 LE × n)
//! ```
//!
//! A reader checks the header's checksum and that every length follows from `n` and `dims`
//! and adds up to the file's, before it sizes anything, then every piece's checksum (on
//! every core). The host checks the result against its bundle as decoded vectors are
//! ([`VectorIndex::validate`]).
//!
//! The pieces' checksums are CRC-32 (`crc32fast`), not the bundle's sha256: they catch a
//! damaged file, and a checksum kept in the file itself proves nothing more against one
//! written on purpose, whichever the function. Over 556 MB (2.24M vectors) sha256 took 0.4
//! CPU-s, half of what reading the file back cost in all.

use std::io::{Read, Write};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{code_bytes, Coded, Shared, VectorIndex, Vectors, BLOCK, MAX_DIMS};
use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"DOCLVCAC";

/// The layout of the file and of [`Coded`]'s blocks it copies; another version is not read
/// (the host decodes the bundle's vectors and writes the file again).
pub const VERSION: u32 = 2;

/// Bytes a checksum covers: pieces of a part are checked on every core at once.
const SEGMENT: usize = 16 << 20;

/// Longest header read (the checksums of 64 GiB of parts take 20 KiB).
const MAX_HEADER: usize = 1 << 20;

#[derive(Serialize, Deserialize)]
struct Header {
    /// The sha256 the bundle's header records for its vectors section.
    key: [u8; 32],
    n: u64,
    /// `n` unless vectors share their codes.
    codes: u64,
    dims: u32,
    bits: u8,
    sums: Vec<u32>,
}

/// Writes `index` for the bundle whose vectors section has checksum `key`; `false` (nothing
/// written) when it is not a [`Coded`] index, the only kind a large bundle holds.
pub fn write(index: &VectorIndex, key: &[u8; 32], out: &mut impl Write) -> Result<bool> {
    let VectorIndex::Coded(c) = index else {
        return Ok(false);
    };
    let v = &c.vectors;
    let le = |x: &[f32]| x.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let chunks: Vec<u8> = v.chunks.iter().flat_map(|x| x.to_le_bytes()).collect();
    let (low, high, scales) = (le(&c.low), le(&c.high), le(&v.scales));
    let u32s = |x: &[u32]| x.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let (starts, members) = c
        .shared
        .as_ref()
        .map_or_else(Default::default, |s| (u32s(&s.starts), u32s(&s.members)));
    let parts: [&[u8]; 8] = [
        &low, &high, &chunks, &scales, &c.codes, &v.values, &starts, &members,
    ];
    let header = Header {
        key: *key,
        n: v.len() as u64,
        codes: c.n_codes() as u64,
        dims: v.dims as u32,
        bits: v.bits,
        sums: sums(&parts),
    };
    let header = postcard::to_allocvec(&header)
        .map_err(|e| Error::Encode(format!("vector cache header: {e}")))?;
    let io = |e: std::io::Error| Error::Encode(format!("vector cache: {e}"));
    out.write_all(MAGIC).map_err(io)?;
    out.write_all(&VERSION.to_le_bytes()).map_err(io)?;
    out.write_all(&(header.len() as u32).to_le_bytes())
        .map_err(io)?;
    out.write_all(&Sha256::digest(&header)).map_err(io)?;
    out.write_all(&header).map_err(io)?;
    for part in parts {
        out.write_all(part).map_err(io)?;
    }
    Ok(true)
}

/// Reads what [`write`] wrote from `input` (`len` bytes in all) for the vectors whose section
/// checksum is `key`. Any difference is [`Error::Corrupt`] or [`Error::ChecksumMismatch`]
/// naming the vector cache; a failed read is [`Error::Unreadable`] of `path`.
pub fn read(
    input: &mut impl Read,
    len: u64,
    key: &[u8; 32],
    path: &std::path::Path,
) -> Result<VectorIndex> {
    let corrupt = |m: &str| Error::Corrupt(format!("vector cache {}: {m}", path.display()));
    let mut read_exact = |buf: &mut [u8]| {
        input.read_exact(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => corrupt("shorter than it says"),
            _ => Error::unreadable(path, e),
        })
    };
    let mut prefix = [0u8; 8 + 4 + 4 + 32];
    read_exact(&mut prefix)?;
    let word = |at: usize| u32::from_le_bytes(prefix[at..at + 4].try_into().expect("4 bytes"));
    if &prefix[..8] != MAGIC {
        return Err(corrupt("not a vector cache"));
    }
    if word(8) != VERSION {
        return Err(corrupt("another version"));
    }
    let header_len = word(12) as usize;
    if header_len > MAX_HEADER || (prefix.len() + header_len) as u64 > len {
        return Err(corrupt("a header longer than the file"));
    }
    let mut header = vec![0u8; header_len];
    read_exact(&mut header)?;
    if Sha256::digest(&header).as_slice() != &prefix[16..48] {
        return Err(Error::ChecksumMismatch {
            part: format!("vector cache {} header", path.display()),
        });
    }
    let header: Header = crate::encoding::decode_exact(&header, "vector cache header")?;
    if &header.key != key {
        return Err(corrupt("holds the vectors of another bundle"));
    }
    if !(header.bits == 4 || header.bits == 8) || header.dims == 0 || header.dims > MAX_DIMS {
        return Err(corrupt("not vectors this engine reads"));
    }
    let (n, dims, n_codes) = (header.n, header.dims as u64, header.codes);
    // Codes are shared (fewer than vectors) or not; never more.
    if n_codes > n || (n_codes == 0) != (n == 0) {
        return Err(corrupt("more codes than vectors"));
    }
    let shared = n_codes < n;
    let row = if header.bits == 4 {
        dims.div_ceil(2)
    } else {
        dims
    };
    // Every length from `n` and `dims`, and all of them the file's: nothing is sized by a
    // claim the file's length does not back.
    let lens = (|| {
        let codes = n_codes
            .div_ceil(BLOCK as u64)
            .checked_mul((BLOCK * code_bytes(dims as usize)) as u64)?;
        let (starts, members) = match shared {
            true => (n_codes.checked_add(1)?.checked_mul(4)?, n.checked_mul(4)?),
            false => (0, 0),
        };
        Some([
            4 * dims,
            4 * dims,
            n.checked_mul(4)?,
            n.checked_mul(4)?,
            codes,
            n.checked_mul(row)?,
            starts,
            members,
        ])
    })()
    .ok_or_else(|| corrupt("too many vectors"))?;
    let body = lens.iter().try_fold(0u64, |a, &b| a.checked_add(b));
    if body.and_then(|b| b.checked_add((prefix.len() + header_len) as u64)) != Some(len) {
        return Err(corrupt("its parts do not add up to its length"));
    }
    let lens = lens.map(|l| usize::try_from(l).map_err(|_| corrupt("too large to hold")));
    let lens: Vec<usize> = lens.into_iter().collect::<Result<_>>()?;
    let segments: usize = lens.iter().map(|l| l.div_ceil(SEGMENT)).sum();
    if header.sums.len() != segments {
        return Err(corrupt("a checksum for each piece is missing"));
    }
    let mut parts: Vec<Vec<u8>> = Vec::with_capacity(lens.len());
    for &l in &lens {
        let mut part = vec![0u8; l];
        read_exact(&mut part)?;
        parts.push(part);
    }
    let slices: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    if sums(&slices) != header.sums {
        return Err(Error::ChecksumMismatch {
            part: format!("vector cache {}", path.display()),
        });
    }
    let [low, high, chunks, scales, codes, values, starts, members]: [Vec<u8>; 8] =
        parts.try_into().expect("eight parts");
    let f32s = |b: Vec<u8>| -> Vec<f32> {
        b.chunks_exact(4)
            .map(|x| f32::from_le_bytes(x.try_into().expect("4 bytes")))
            .collect()
    };
    let u32s = |b: Vec<u8>| -> Vec<u32> {
        b.chunks_exact(4)
            .map(|x| u32::from_le_bytes(x.try_into().expect("4 bytes")))
            .collect()
    };
    // The groups are checked here, where a damaged file is named (the host checks the rest
    // against its bundle).
    let shared = shared.then(|| Shared {
        starts: u32s(starts),
        members: u32s(members),
    });
    if let Some(s) = &shared {
        s.check(n as usize).map_err(|m| corrupt(&m))?;
    }
    Ok(VectorIndex::Coded(Coded {
        low: f32s(low),
        high: f32s(high),
        codes,
        shared,
        vectors: Vectors {
            dims: dims as usize,
            bits: header.bits,
            chunks: u32s(chunks),
            scales: f32s(scales),
            values,
        },
    }))
}

/// The CRC-32 of every [`SEGMENT`]-byte piece of each part, in order (on every core).
fn sums(parts: &[&[u8]]) -> Vec<u32> {
    let pieces: Vec<&[u8]> = parts.iter().flat_map(|p| p.chunks(SEGMENT)).collect();
    pieces.par_iter().map(|p| crc32fast::hash(p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 32] = [7; 32];

    /// `n` vectors of `dims` dimensions, at 4 bits when `wide` is false, else int8.
    fn coded(n: usize, dims: usize, wide: bool) -> Coded {
        let mut next = super::super::tests::xorshift(0x2545_f491_4f6c_dd1d);
        let mut v = Vectors::new(dims);
        for c in 0..n as u32 {
            let span = if wide { 256 } else { 16 };
            let data: Vec<i8> = (0..dims)
                .map(|_| (next() % span) as i16 - span as i16 / 2)
                .map(|x| x as i8)
                .collect();
            v.push(3 * c, 0.01 + (next() % 100) as f32 / 1000.0, &data)
                .unwrap();
        }
        Coded::build(v)
    }

    fn written(c: &Coded) -> Vec<u8> {
        let mut out = Vec::new();
        assert!(write(&VectorIndex::Coded(c.clone()), &KEY, &mut out).unwrap());
        out
    }

    fn read_back(bytes: &[u8], key: &[u8; 32]) -> Result<VectorIndex> {
        read(
            &mut std::io::Cursor::new(bytes),
            bytes.len() as u64,
            key,
            std::path::Path::new("kept.vec"),
        )
    }

    fn refusal(bytes: &[u8]) -> String {
        match read_back(bytes, &KEY) {
            Err(Error::Corrupt(m)) => format!("Corrupt: {m}"),
            Err(Error::ChecksumMismatch { part }) => format!("ChecksumMismatch: {part}"),
            other => panic!("not refused: {:?}", other.map(|_| ())),
        }
    }

    /// What is read back is what was written, at 4 and 8 bits, with a partial last block and
    /// an odd width, and with parts longer than one checksummed piece.
    #[test]
    fn kept_vectors_read_back_as_written() {
        for (n, dims, wide) in [
            (1, 8, false),
            (77, 384, false),
            (77, 383, true),
            (100_000, 384, false),
        ] {
            let c = coded(n, dims, wide);
            let bytes = written(&c);
            assert!(n < 100_000 || n * dims / 2 > SEGMENT, "values in one piece");
            match read_back(&bytes, &KEY).unwrap() {
                VectorIndex::Coded(back) => assert!(back == c, "{n} × {dims}"),
                _ => panic!("not coded"),
            }
        }
        // Vectors that share their codes come back sharing them.
        let mut shared = coded(500, 384, false);
        let mut v = shared.vectors.clone();
        for c in 0..1_500u32 {
            let copy = v.get(c as usize % 500);
            v.push(1_500 + c, copy.scale, &copy.data).unwrap();
        }
        shared = Coded::build(v);
        assert_eq!(shared.n_codes(), 500);
        match read_back(&written(&shared), &KEY).unwrap() {
            VectorIndex::Coded(back) => assert!(back == shared),
            _ => panic!("not coded"),
        }
        // Only coded vectors are kept.
        let flat = VectorIndex::Flat(coded(3, 8, false).vectors);
        assert!(!write(&flat, &KEY, &mut Vec::new()).unwrap());
    }

    /// Every kind of damage is refused with a typed error, before anything is sized by it.
    #[test]
    fn damaged_or_foreign_files_are_refused() {
        let bytes = written(&coded(300, 384, false));
        let header_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
        let body = 48 + header_len;

        assert!(refusal(&bytes[..bytes.len() - 1]).starts_with("Corrupt"));
        assert!(refusal(&[&bytes[..], &[0]].concat()).starts_with("Corrupt"));
        assert!(
            matches!(read_back(&bytes, &[8; 32]), Err(Error::Corrupt(m)) if m.contains("another bundle"))
        );
        let mut other = bytes.clone();
        // Version 1 kept a code for every vector.
        other[8] = 1;
        assert!(refusal(&other).contains("another version"));
        other = bytes.clone();
        other[0] = b'X';
        assert!(refusal(&other).contains("not a vector cache"));
        // A flipped bit anywhere: in the header, a level, a chunk, a code, the last value.
        for at in [
            48,
            body + 3,
            body + 2 * 4 * 384 + 5,
            body + 2 * 4 * 384 + 8 * 300 + 9,
            bytes.len() - 1,
        ] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            assert!(
                refusal(&damaged).starts_with("ChecksumMismatch"),
                "byte {at}"
            );
        }

        // A header that claims more vectors than the file holds, or more codes than vectors,
        // its checksum made right.
        let forge = |header: &Header| {
            let h = postcard::to_allocvec(header).unwrap();
            [
                &bytes[..12],
                &(h.len() as u32).to_le_bytes(),
                Sha256::digest(&h).as_slice(),
                &h,
                &bytes[body..],
            ]
            .concat()
        };
        let mut header: Header = postcard::from_bytes(&bytes[48..body]).unwrap();
        header.codes = 301;
        assert!(refusal(&forge(&header)).contains("more codes than vectors"));
        header.codes = 300;
        for n in [301, 1 << 40, u64::MAX / 2, u64::MAX] {
            header.n = n;
            let forged = forge(&header);
            assert!(refusal(&forged).starts_with("Corrupt"), "n = {n}");
        }
    }
}
