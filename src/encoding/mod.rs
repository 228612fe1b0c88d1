//! How bundle pieces are written as bytes, below both the index and the bundle: postcard for
//! every structure ([`to_bytes`], [`decode_exact`]) and raw DEFLATE for the sections and
//! blocks that are stored compressed ([`deflate`](mod@deflate)).

mod deflate;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

pub(crate) use deflate::*;

/// Postcard-encodes `value`; `what` names it in the error.
pub(crate) fn to_bytes<T: Serialize + ?Sized>(value: &T, what: &str) -> Result<Vec<u8>> {
    postcard::to_allocvec(value).map_err(|e| Error::Encode(format!("{what}: {e}")))
}

/// Postcard-decodes all of `bytes` (trailing bytes are corruption too). `T` may borrow from
/// them.
pub(crate) fn decode_exact<'de, T: Deserialize<'de>>(bytes: &'de [u8], what: &str) -> Result<T> {
    let (value, rest) =
        postcard::take_from_bytes(bytes).map_err(|e| Error::Corrupt(format!("{what}: {e}")))?;
    if !rest.is_empty() {
        return Err(Error::Corrupt(format!(
            "{what}: {} trailing bytes",
            rest.len()
        )));
    }
    Ok(value)
}

/// A section's bytes built in pieces, written one after another: postcard values into a
/// run of small bytes, and large byte strings moved in as pieces of their own (postcard
/// writes a byte string as its length, then the bytes).
#[derive(Debug, Default)]
pub struct Pieces {
    pieces: Vec<Vec<u8>>,
    small: Vec<u8>,
}

impl Pieces {
    /// Appends `value` as postcard writes it.
    pub(crate) fn put<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.small = postcard::to_extend(value, std::mem::take(&mut self.small))
            .map_err(|e| Error::Encode(e.to_string()))?;
        Ok(())
    }

    /// Appends `bytes` as postcard writes a byte string, without copying them.
    pub(crate) fn put_bytes(&mut self, bytes: Vec<u8>) -> Result<()> {
        self.put(&bytes.len())?;
        self.pieces.push(std::mem::take(&mut self.small));
        self.pieces.push(bytes);
        Ok(())
    }

    pub(crate) fn finish(mut self) -> Vec<Vec<u8>> {
        self.pieces.push(self.small);
        self.pieces.retain(|p| !p.is_empty());
        self.pieces
    }
}
