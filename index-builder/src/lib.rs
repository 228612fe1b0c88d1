//! The index side of docloupe as a library: `index-builder` (src/main.rs) is its command
//! line, and the fuzz targets (fuzz/) drive ingest and the converters through it.
//!
//! Data flow: [`ingest`] finds and parses documents (markdown, text) and [`convert`] turns the
//! binary formats into the same sections, run in a limited child process by [`isolate`];
//! [`cite`] matches documents to a bibliography and [`access`] labels them with the groups
//! that may read them; [`chunk`] cuts sections to the model's
//! window; [`build`] drives it all into a bundle (embedding it with the models) and
//! [`output`] writes it atomically; [`site`] renders the same folder as HTML pages.
//!
//! Without the default `models` feature the library has everything but [`build`]: the fuzz
//! targets' build, which so leaves the models' runtime out of what libFuzzer instruments.

pub mod access;
#[cfg(feature = "models")]
pub mod build;
pub mod chunk;
pub mod cite;
pub mod convert;
pub mod ingest;
pub mod isolate;
pub mod output;
pub mod site;
#[cfg(feature = "models")]
pub mod trim;
pub mod trust;
