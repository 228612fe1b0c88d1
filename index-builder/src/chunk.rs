//! Chunking: sections → chunks that fit the embedding model's window.
//!
//! A section becomes one chunk when it fits. A longer one is split at block (paragraph, list,
//! code block, table) boundaries; a single block that is too long is split at line, then word
//! boundaries. Consecutive chunks of one section overlap by the previous chunk's last block
//! when that block is short, so a sentence at a boundary is findable from both sides.

use docloupe::bundle::embedding_input;
use docloupe::bundle::{ChunkLocation, PageSpan};

use crate::ingest::{Block, Section};

/// Blocks up to this many tokens are repeated at the start of the next chunk.
pub const OVERLAP_TOKENS: usize = 48;

/// The chunker's version, recorded in a bundle's `builder`. `--incremental` takes over the
/// chunks of an unchanged file from the previous bundle only when this matches: **bump it with
/// any change to how documents are converted or cut into chunks** (this file, `plan_chunks`,
/// the converters), or incremental builds would keep the old cuts.
pub const CHUNKER_VERSION: u32 = 1;
/// Never plan chunks smaller than this, even under a very long breadcrumb.
const MIN_BUDGET: usize = 64;

/// Counts tokens the way the embedding model will.
pub trait TokenCounter {
    fn count(&self, text: &str) -> usize;
}

/// Without a model (`--no-embeddings`) chunks are sized by an estimate of WordPiece tokens.
pub struct EstimateCounter;

impl TokenCounter for EstimateCounter {
    fn count(&self, text: &str) -> usize {
        // WordPiece splits punctuation and rare words; ~1.3 tokens per word on docs.
        let words = text.split_whitespace().count();
        let punct = text.chars().filter(|c| c.is_ascii_punctuation()).count();
        words + words / 3 + punct / 2 + 2
    }
}

/// A chunk before it gets an index and an embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedChunk {
    /// Its breadcrumb, anchor, lines and the pages its blocks come from (paged formats).
    pub location: ChunkLocation,
    pub text: String,
}

/// Splits one section into chunks. `section_path` starts with the page title;
/// `max_tokens` is the model's window (special tokens included).
pub fn chunk_section(
    section: &Section,
    section_path: &[String],
    max_tokens: usize,
    counter: &dyn TokenCounter,
) -> Vec<PlannedChunk> {
    let prefix = counter.count(&embedding_input(section_path, ""));
    let budget = max_tokens.saturating_sub(prefix).max(MIN_BUDGET);

    let mut pieces: Vec<(Block, usize)> = Vec::new();
    for block in &section.blocks {
        let n = counter.count(&block.text);
        if n <= budget {
            pieces.push((block.clone(), n));
        } else {
            pieces.extend(split_block(block, budget, counter));
        }
    }

    let mut chunks = Vec::new();
    let mut current: Vec<(Block, usize)> = Vec::new();
    let mut used = 0;
    for (piece, n) in pieces {
        if !current.is_empty() && used + n > budget {
            let carry = current
                .last()
                .filter(|(_, m)| *m <= OVERLAP_TOKENS && *m + n <= budget)
                .cloned();
            chunks.push(make_chunk(section, section_path, &current));
            current.clear();
            used = 0;
            if let Some((b, m)) = carry {
                current.push((b, m));
                used = m;
            }
        }
        used += n;
        current.push((piece, n));
    }
    if !current.is_empty() {
        chunks.push(make_chunk(section, section_path, &current));
    }
    chunks
}

fn make_chunk(
    section: &Section,
    section_path: &[String],
    pieces: &[(Block, usize)],
) -> PlannedChunk {
    PlannedChunk {
        location: ChunkLocation {
            section_path: section_path.to_vec(),
            anchor: section.anchor.clone(),
            line_start: pieces.first().map_or(1, |p| p.0.line_start),
            line_end: pieces.last().map_or(1, |p| p.0.line_end),
            page_span: {
                let pages = || pieces.iter().filter_map(|p| p.0.page);
                pages()
                    .min()
                    .zip(pages().max())
                    .map(|(start, end)| PageSpan { start, end })
            },
        },
        text: pieces
            .iter()
            .map(|p| p.0.text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n"),
    }
}

/// Splits an oversized block at line boundaries (keeping line numbers), and lines that are
/// still too long at word boundaries.
fn split_block(block: &Block, budget: usize, counter: &dyn TokenCounter) -> Vec<(Block, usize)> {
    let lines: Vec<&str> = block.text.lines().collect();
    // The block's text lines map onto its source lines only approximately (markup is gone);
    // spread them evenly over the block's range.
    let span = (block.line_end - block.line_start + 1) as usize;
    let line_of = |i: usize| block.line_start + ((i * span) / lines.len().max(1)) as u32;

    let mut out = Vec::new();
    let mut text = String::new();
    let mut used = 0;
    let mut first = 0;
    for (i, line) in lines.iter().enumerate() {
        let n = counter.count(line);
        if n > budget {
            if !text.is_empty() {
                out.push((
                    Block {
                        text: std::mem::take(&mut text),
                        line_start: line_of(first),
                        line_end: line_of(i.max(1) - 1).max(line_of(first)),
                        page: block.page,
                    },
                    used,
                ));
                used = 0;
            }
            for words in split_words(line, budget, counter) {
                let m = counter.count(&words);
                out.push((
                    Block {
                        text: words,
                        line_start: line_of(i),
                        line_end: line_of(i),
                        page: block.page,
                    },
                    m,
                ));
            }
            first = i + 1;
            continue;
        }
        if !text.is_empty() && used + n > budget {
            out.push((
                Block {
                    text: std::mem::take(&mut text),
                    line_start: line_of(first),
                    line_end: line_of(i - 1),
                    page: block.page,
                },
                used,
            ));
            used = 0;
        }
        if text.is_empty() {
            first = i;
        } else {
            text.push('\n');
        }
        text.push_str(line);
        used += n;
    }
    if !text.is_empty() {
        out.push((
            Block {
                text,
                line_start: line_of(first),
                line_end: block.line_end,
                page: block.page,
            },
            used,
        ));
    }
    out
}

fn split_words(line: &str, budget: usize, counter: &dyn TokenCounter) -> Vec<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let total = counter.count(line).max(1);
    // Tokens per word measured on this line, so code-like text gets smaller groups.
    let per_group = ((budget * words.len()) / total).clamp(1, words.len().max(1));
    words.chunks(per_group).map(|w| w.join(" ")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(blocks: Vec<&str>) -> Section {
        Section {
            headings: vec!["H".into()],
            anchor: "h".into(),
            blocks: blocks
                .into_iter()
                .enumerate()
                .map(|(i, t)| Block {
                    text: t.into(),
                    line_start: (i * 2 + 3) as u32,
                    line_end: (i * 2 + 3) as u32,
                    page: None,
                })
                .collect(),
        }
    }

    #[test]
    fn small_section_is_one_chunk() {
        let s = section(vec!["one two", "three four"]);
        let c = chunk_section(&s, &["T".into(), "H".into()], 256, &EstimateCounter);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].text, "one two\n\nthree four");
        assert_eq!((c[0].location.line_start, c[0].location.line_end), (3, 5));
    }

    #[test]
    fn long_section_splits_within_budget_with_overlap() {
        let para = "word ".repeat(70);
        let s = section(vec![&para, &para, &para, "short tail", &para]);
        let c = chunk_section(&s, &["T".into()], 128, &EstimateCounter);
        assert!(c.len() >= 3, "{c:?}");
        for ch in &c {
            assert!(EstimateCounter.count(&ch.text) <= 128, "{}", ch.text.len());
        }
        // The short block closes one chunk and opens the next.
        let with_tail = c.iter().filter(|ch| ch.text.contains("short tail")).count();
        assert_eq!(with_tail, 2);
    }

    #[test]
    fn a_chunk_spans_the_pages_of_its_blocks() {
        let mut s = section(vec!["on page two", "still two", "now three"]);
        for (b, page) in s.blocks.iter_mut().zip([2, 2, 3]) {
            b.page = Some(page);
        }
        let c = chunk_section(&s, &["T".into()], 256, &EstimateCounter);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].location.page_span, Some(PageSpan { start: 2, end: 3 }));
        // Pieces of a block split for size keep its page.
        let mut s = section(vec![&"word ".repeat(400)]);
        s.blocks[0].page = Some(7);
        let c = chunk_section(&s, &["T".into()], 128, &EstimateCounter);
        assert!(c.len() > 1);
        assert!(c
            .iter()
            .all(|ch| ch.location.page_span == Some(PageSpan { start: 7, end: 7 })));
        assert_eq!(
            chunk_section(&section(vec!["x"]), &["T".into()], 256, &EstimateCounter)[0]
                .location
                .page_span,
            None
        );
    }

    #[test]
    fn giant_line_is_split_at_words() {
        let line = "x ".repeat(2000);
        let s = section(vec![&line]);
        let c = chunk_section(&s, &["T".into()], 256, &EstimateCounter);
        assert!(c.len() > 5);
        assert!(c.iter().all(|ch| EstimateCounter.count(&ch.text) <= 256));
    }
}
