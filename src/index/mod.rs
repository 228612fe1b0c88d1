//! Index structures, shared by the builder (which fills them) and the engine (which reads
//! them): BM25 postings ([`lexical`]), quantized vectors with their first-pass codes
//! ([`vector`]), and the spelling data both sides file and read words by ([`spelling`]).

pub mod lexical;
pub mod spelling;
pub mod vector;
