//! The `text` section: every chunk's text, in chunk order.
//!
//! Format 7 writes the texts deflated (raw DEFLATE, `miniz_oxide` at level 9) in blocks of
//! consecutive chunks, each block closed once its texts reach [`BLOCK_BYTES`]. A decoded
//! bundle keeps the blocks as they are and inflates one the first time one of its texts is
//! read, so a search inflates only the blocks of the chunks it ranks and shows, and a
//! fulltext call of the CLI reads a quarter of the text's bytes and inflates a few of them.
//! On en-large-cpp-docs (120,698 chunks) the section goes from 32.8 MB to 9.3 MB.
//!
//! A crafted block cannot cost unbounded memory: each block records how many bytes it
//! inflates to, at most [`encoding::MAX_RATIO`] times its own length, and inflating stops at
//! that count. A block that does not inflate to exactly its texts is `Corrupt`, reported by
//! the read that hit it.

use std::ops::Range;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::encoding::{self, decode_exact};
use crate::error::{Error, Result};

/// A block is closed once its texts come to this many bytes (the last text may pass it).
/// Chosen on en-large-cpp-docs: 8 / 16 / 32 KiB blocks deflate its 32.6 MB of text to
/// 9.9 / 8.9 / 8.2 MB, and inflate in about 40 / 80 / 130 µs a block.
pub const BLOCK_BYTES: usize = 16 * 1024;

/// The chunks' texts. Built from plain strings ([`TextSection::new`], and formats 1 to 6), or
/// decoded from format 7's blocks, which are inflated one at a time as they are read.
#[derive(Debug)]
pub struct TextSection {
    store: Store,
}

#[derive(Debug)]
enum Store {
    Plain(Vec<String>),
    Blocks(Blocks),
}

#[derive(Debug)]
struct Blocks {
    /// The first chunk of each block, then the number of chunks.
    starts: Vec<u32>,
    blocks: Vec<Block>,
    /// Each block's texts once inflated (or why they could not be).
    inflated: Vec<OnceLock<std::result::Result<Vec<String>, ()>>>,
}

/// One block as written.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Block {
    /// How many chunks' texts it holds.
    texts: u32,
    /// The length of the postcard-encoded texts it inflates to.
    raw: u32,
    /// Raw DEFLATE of the postcard-encoded `Vec<String>` of its texts.
    deflated: encoding::Bytes,
}

/// Format 7's `text` section as written.
#[derive(Serialize)]
struct BlocksOut<'a> {
    blocks: &'a [Block],
}

#[derive(Deserialize)]
struct BlocksIn {
    blocks: Vec<Block>,
}

impl TextSection {
    pub fn new(texts: Vec<String>) -> TextSection {
        TextSection {
            store: Store::Plain(texts),
        }
    }

    /// How many texts (one per chunk).
    pub fn len(&self) -> usize {
        match &self.store {
            Store::Plain(t) => t.len(),
            Store::Blocks(b) => b.starts.last().copied().unwrap_or(0) as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Chunk `i`'s text, inflating its block if this is the block's first read.
    pub fn get(&self, i: usize) -> Result<&str> {
        match &self.store {
            Store::Plain(t) => t.get(i).map(String::as_str).ok_or_else(|| no_text(i)),
            Store::Blocks(b) => {
                if i >= self.len() {
                    return Err(no_text(i));
                }
                // (Written out here rather than through `Blocks::block_of` and `not_inflating`,
                // which `TextReader` uses: this way the lexical wasm build is 127 B smaller
                // brotli-compressed, on a first answer with a 0.3 KB margin.)
                let k = b.starts.partition_point(|&s| s as usize <= i) - 1;
                let texts = b.inflated[k]
                    .get_or_init(|| inflate(&b.blocks[k]))
                    .as_ref()
                    .map_err(|()| {
                        Error::Corrupt(format!("text block {k} does not inflate to its texts"))
                    })?;
                Ok(&texts[i - b.starts[k] as usize])
            }
        }
    }

    /// The texts of chunks `range`.
    pub fn range(&self, range: Range<usize>) -> Result<Vec<&str>> {
        range.map(|i| self.get(i)).collect()
    }

    /// Every text, in chunk order (builders and the split layout's writer read them all).
    pub fn all(&self) -> Result<Vec<&str>> {
        self.range(0..self.len())
    }

    /// The section's bytes. Blocks decoded from a bundle are written as they
    /// were read (the same texts always make the same blocks).
    pub(super) fn encode(&self) -> Result<Vec<u8>> {
        let made;
        let blocks = match &self.store {
            Store::Blocks(b) => &b.blocks,
            Store::Plain(texts) => {
                made = make_blocks(texts)?;
                &made
            }
        };
        encoding::to_bytes(&BlocksOut { blocks }, "text")
    }

    /// Reads a `text` section. Its blocks are checked for shape here (counts, lengths, ratio)
    /// and inflated when read.
    pub(super) fn decode(bytes: &[u8]) -> Result<TextSection> {
        let BlocksIn { blocks } = decode_exact(bytes, "text")?;
        Self::from_blocks(blocks)
    }

    fn from_blocks(blocks: Vec<Block>) -> Result<TextSection> {
        let mut starts = Vec::with_capacity(blocks.len() + 1);
        let mut next = 0u32;
        for (k, b) in blocks.iter().enumerate() {
            let fits = encoding::within_ratio(b.raw as u64, &b.deflated);
            if b.texts == 0 || !fits {
                return Err(Error::Corrupt(format!(
                    "text block {k}: {} texts in {} bytes said to inflate to {}",
                    b.texts,
                    b.deflated.len(),
                    b.raw
                )));
            }
            starts.push(next);
            next = next
                .checked_add(b.texts)
                .ok_or_else(|| Error::Corrupt("text blocks hold over 2^32 texts".into()))?;
        }
        starts.push(next);
        let inflated = blocks.iter().map(|_| OnceLock::new()).collect();
        Ok(TextSection {
            store: Store::Blocks(Blocks {
                starts,
                blocks,
                inflated,
            }),
        })
    }
}

impl Blocks {
    /// The block chunk `i` (< the count) is in.
    fn block_of(&self, i: usize) -> usize {
        self.starts.partition_point(|&s| s as usize <= i) - 1
    }
}

fn not_inflating(k: usize) -> Error {
    Error::Corrupt(format!("text block {k} does not inflate to its texts"))
}

/// Reads a section's texts in chunk order, inflating each block once and keeping only the
/// last one it inflated ([`TextSection::get`] keeps every block it inflates, which a reader
/// of every text, such as the split layout's writer, need not: at 2.24M chunks that is over
/// 1 GB of strings).
pub struct TextReader<'a> {
    section: &'a TextSection,
    block: Option<(usize, Vec<String>)>,
}

impl<'a> TextReader<'a> {
    pub fn new(section: &'a TextSection) -> TextReader<'a> {
        TextReader {
            section,
            block: None,
        }
    }

    /// Chunk `i`'s text.
    pub fn get(&mut self, i: usize) -> Result<&str> {
        let section: &'a TextSection = self.section;
        let b = match &section.store {
            Store::Plain(_) => return section.get(i),
            Store::Blocks(b) => b,
        };
        if i >= section.len() {
            return Err(no_text(i));
        }
        let k = b.block_of(i);
        let at = i - b.starts[k] as usize;
        // A block a search has inflated already is read where it is.
        if let Some(Ok(texts)) = b.inflated[k].get() {
            return Ok(&texts[at]);
        }
        if self.block.as_ref().is_none_or(|(held, _)| *held != k) {
            let texts = inflate(&b.blocks[k]).map_err(|()| not_inflating(k))?;
            self.block = Some((k, texts));
        }
        let (_, texts) = self.block.as_ref().expect("the block was just read");
        Ok(&texts[at])
    }

    /// The texts of chunks `range`, as owned strings.
    pub fn range(&mut self, range: Range<usize>) -> Result<Vec<String>> {
        range.map(|i| self.get(i).map(str::to_owned)).collect()
    }
}

/// The same texts, however stored (a text that cannot be read equals nothing).
impl PartialEq for TextSection {
    fn eq(&self, other: &TextSection) -> bool {
        self.len() == other.len()
            && (0..self.len())
                .all(|i| matches!((self.get(i), other.get(i)), (Ok(a), Ok(b)) if a == b))
    }
}

fn no_text(i: usize) -> Error {
    Error::Corrupt(format!("no text for chunk {i}"))
}

/// Builds a text section a text at a time, deflating each block once it closes (a batch of
/// them at a time, natively on every core), so a builder holds a text only until its block is
/// deflated instead of every chunk's text until the bundle is written (at 102,168 documents,
/// 2.13M chunks, the blocks are 257 MB, about a quarter of the strings). Each block is
/// written as the section lays it out as soon as it is deflated, into one buffer that becomes
/// the section's bytes without being copied (copying it was the streaming builder's peak:
/// 1,773 MiB, 250 over its footing). The bytes are those [`TextSection::new`]'s texts are
/// written in.
#[derive(Debug, Default)]
pub struct TextBlocks {
    /// The open block's texts, and their bytes.
    run: Vec<String>,
    run_bytes: usize,
    /// Closed blocks not deflated yet.
    closed: Vec<Vec<String>>,
    /// How many blocks are written, and their bytes (each block as `BlocksOut` writes it).
    blocks: usize,
    written: Vec<u8>,
}

/// Closed blocks deflated together: about 1 MiB of text, enough to keep every core busy.
const BLOCKS_AT_ONCE: usize = 64;

impl TextBlocks {
    /// Adds the next chunk's text.
    pub fn push(&mut self, text: String) -> Result<()> {
        self.run_bytes += text.len();
        self.run.push(text);
        if self.run_bytes >= BLOCK_BYTES {
            self.closed.push(std::mem::take(&mut self.run));
            self.run_bytes = 0;
            if self.closed.len() == BLOCKS_AT_ONCE {
                self.deflate_closed()?;
            }
        }
        Ok(())
    }

    fn deflate_closed(&mut self) -> Result<()> {
        let runs = self.closed.iter().map(Vec::as_slice).collect();
        for block in deflate_runs(runs)? {
            self.written = postcard::to_extend(&block, std::mem::take(&mut self.written))
                .map_err(|e| Error::Encode(format!("text: {e}")))?;
            self.blocks += 1;
        }
        self.closed.clear();
        Ok(())
    }

    /// The section's bytes, the last block closed: the block count, then the blocks.
    pub(crate) fn into_pieces(mut self) -> Result<Vec<Vec<u8>>> {
        if !self.run.is_empty() {
            let last = std::mem::take(&mut self.run);
            self.closed.push(last);
        }
        self.deflate_closed()?;
        let count = encoding::to_bytes(&self.blocks, "text")?;
        Ok(vec![count, self.written])
    }

    /// The section, the last block closed.
    pub fn finish(self) -> Result<TextSection> {
        TextSection::decode(&self.into_pieces()?.concat())
    }
}

/// Cuts `texts` into blocks of about [`BLOCK_BYTES`] (as [`TextBlocks`] does) and deflates them.
fn make_blocks(texts: &[String]) -> Result<Vec<Block>> {
    let mut runs = Vec::new();
    let (mut start, mut size) = (0, 0);
    for (i, t) in texts.iter().enumerate() {
        size += t.len();
        if size >= BLOCK_BYTES || i + 1 == texts.len() {
            runs.push(&texts[start..i + 1]);
            (start, size) = (i + 1, 0);
        }
    }
    deflate_runs(runs)
}

/// Deflates each run into a block, natively on every core (the blocks come back in order, so
/// the bytes are the same on any number of threads).
fn deflate_runs(runs: Vec<&[String]>) -> Result<Vec<Block>> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        use rayon::prelude::*;
        runs.into_par_iter().map(deflate).collect()
    }
    #[cfg(target_arch = "wasm32")]
    runs.into_iter().map(deflate).collect()
}

/// One block: `texts` deflated (`encoding/deflate.rs`).
fn deflate(texts: &[String]) -> Result<Block> {
    let raw = encoding::to_bytes(texts, "text block")?;
    Ok(Block {
        texts: texts.len() as u32,
        raw: u32::try_from(raw.len())
            .map_err(|_| Error::Encode("a text block over 4 GiB".into()))?,
        deflated: encoding::Bytes(encoding::deflate(&raw)),
    })
}

/// A block's texts, or `Err` when it does not inflate to exactly them.
fn inflate(block: &Block) -> std::result::Result<Vec<String>, ()> {
    let raw = encoding::inflate(&block.deflated, block.raw as usize).ok_or(())?;
    match postcard::take_from_bytes::<Vec<String>>(&raw) {
        Ok((texts, [])) if texts.len() == block.texts as usize => Ok(texts),
        _ => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| {
                format!(
                    "chunk {i}: {}",
                    "lorem ipsum dolor sit amet ".repeat(i % 40)
                )
            })
            .collect()
    }

    #[test]
    fn blocks_read_back_every_text() {
        let plain = texts(2_000);
        let bytes = TextSection::new(plain.clone()).encode().unwrap();
        let raw: usize = plain.iter().map(String::len).sum();
        assert!(bytes.len() * 4 < raw, "{} of {raw}", bytes.len());
        let read = TextSection::decode(&bytes).unwrap();
        assert_eq!(read.len(), plain.len());
        match &read.store {
            Store::Blocks(b) => assert!(b.blocks.len() > 5, "{}", b.blocks.len()),
            Store::Plain(_) => panic!("format 7 decodes to blocks"),
        }
        // Out of order: each read inflates only its own block.
        assert_eq!(read.get(1_999).unwrap(), plain[1_999]);
        assert_eq!(read.get(0).unwrap(), plain[0]);
        assert_eq!(read.all().unwrap(), plain);
        assert!(matches!(read.get(2_000), Err(Error::Corrupt(_))));
        // Read in order without keeping the blocks: the same texts, none left inflated.
        let fresh = TextSection::decode(&bytes).unwrap();
        let mut reader = TextReader::new(&fresh);
        assert_eq!(reader.range(0..2_000).unwrap(), plain);
        assert_eq!(reader.get(3).unwrap(), plain[3]);
        assert!(matches!(reader.get(2_000), Err(Error::Corrupt(_))));
        match &fresh.store {
            Store::Blocks(b) => assert!(b.inflated.iter().all(|c| c.get().is_none())),
            Store::Plain(_) => unreachable!(),
        }
        // Written again as read, byte for byte.
        assert_eq!(read.encode().unwrap(), bytes);
        assert!(TextSection::new(Vec::new()).encode().unwrap().len() < 4);
    }

    /// Built a text at a time, the section is written as from the whole list: at every size
    /// around the block boundaries, empty texts included, and past one batch of blocks.
    #[test]
    fn blocks_built_a_text_at_a_time_are_the_same_bytes() {
        let mut cases: Vec<Vec<String>> = vec![Vec::new(), vec![String::new()], texts(2_000)];
        for n in [BLOCK_BYTES - 1, BLOCK_BYTES, BLOCK_BYTES + 1] {
            cases.push(vec!["x".repeat(n)]);
            cases.push(vec!["y".repeat(n), "z".repeat(n), String::new()]);
            cases.push((0..3).map(|i| "w".repeat(n / 3 + i)).collect());
        }
        cases.push(
            (0..BLOCKS_AT_ONCE * 3 + 1)
                .map(|i| "v".repeat(BLOCK_BYTES + i))
                .collect(),
        );
        for texts in cases {
            let mut built = TextBlocks::default();
            for t in &texts {
                built.push(t.clone()).unwrap();
            }
            let bytes = built.into_pieces().unwrap().concat();
            assert_eq!(
                bytes,
                TextSection::new(texts.clone()).encode().unwrap(),
                "{} texts",
                texts.len()
            );
            let read = TextSection::decode(&bytes).unwrap();
            assert_eq!(read.all().unwrap(), texts);
        }
    }

    #[test]
    fn a_block_that_would_inflate_past_the_ratio_is_stored() {
        let zeros = vec!["0".repeat(200_000)];
        let bytes = TextSection::new(zeros.clone()).encode().unwrap();
        assert!(bytes.len() > 200_000);
        let read = TextSection::decode(&bytes).unwrap();
        assert_eq!(read.get(0).unwrap(), zeros[0]);
    }

    #[test]
    fn crafted_blocks_are_corrupt_not_a_panic_or_a_bomb() {
        let block = |texts, raw, deflated: Vec<u8>| Block {
            texts,
            raw,
            deflated: encoding::Bytes(deflated),
        };
        let good = make_blocks(&texts(3)).unwrap().remove(0);
        let write =
            |blocks: &[Block]| crate::encoding::to_bytes(&BlocksOut { blocks }, "t").unwrap();
        // Shape: no empty block, no block said to inflate past the ratio.
        for bad in [
            block(0, good.raw, good.deflated.0.clone()),
            block(3, good.deflated.len() as u32 * 65, good.deflated.0.clone()),
        ] {
            assert!(matches!(
                TextSection::decode(&write(&[bad])),
                Err(Error::Corrupt(_))
            ));
        }
        // Content: caught by the read that inflates it.
        let mut flipped = good.deflated.0.clone();
        flipped[0] ^= 0xff;
        for bad in [
            block(3, good.raw, flipped),
            block(3, good.raw - 1, good.deflated.0.clone()),
            block(2, good.raw, good.deflated.0.clone()),
            block(3, good.raw, b"not deflate at all".to_vec()),
        ] {
            let section = write(&[bad]);
            let read = TextSection::decode(&section).unwrap();
            assert!(matches!(read.get(0), Err(Error::Corrupt(_))));
            let read = TextSection::decode(&section).unwrap();
            assert!(matches!(
                TextReader::new(&read).get(0),
                Err(Error::Corrupt(_))
            ));
        }
    }
}
