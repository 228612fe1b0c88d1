//! Spreadsheets (XLSX/XLSM, XLS, ODS, read by calamine): a section per sheet, headed by the
//! sheet's name, and a block per non-empty row. The first non-empty row is taken as the
//! column names, and every later row reads `Name: value; Other: value`, so a row found by a
//! search says what its numbers are. A line is a row number of the sheet (1-based, as the
//! spreadsheet shows it).

use std::collections::BTreeMap;
use std::io::Cursor;

use calamine::{open_workbook_auto_from_rs, Data, Reader, Sheets};

use super::parsed;
use crate::ingest::{collapse, Block, Item, ParsedDoc};

/// Non-empty cells read per workbook at most, and text (bytes) made from them: a workbook
/// past either is refused, not indexed in part.
const MAX_CELLS: usize = 4_000_000;
const MAX_TEXT_BYTES: usize = 16 * 1024 * 1024;

/// A sheet's non-empty cells as text: row → column → value (0-based, as calamine counts).
type Cells = BTreeMap<u32, BTreeMap<u32, String>>;

/// What one part of a zipped workbook (XLSX, ODS) may unpack to, and all its parts together.
const MAX_PART_BYTES: u64 = 64 << 20;
const MAX_PARTS_BYTES: u64 = 256 << 20;

pub fn convert(bytes: &[u8], file_stem: &str) -> Result<ParsedDoc, String> {
    if bytes.starts_with(b"PK\x03\x04") {
        check_zip_parts(bytes)?;
    }
    let mut book = open_workbook_auto_from_rs(Cursor::new(bytes))
        .map_err(|e| format!("broken or encrypted spreadsheet: {e}"))?;
    let mut items = Vec::new();
    let mut budget = Budget::default();
    for name in book.sheet_names() {
        let cells = sheet_cells(&mut book, &name, &mut budget)?;
        let mut header: Option<&BTreeMap<u32, String>> = None;
        let mut rows = Vec::new();
        for (&row, cells) in &cells {
            let line = row + 1;
            let text = match header {
                Some(names) if names.len() >= 2 => cells
                    .iter()
                    .map(|(c, v)| match names.get(c) {
                        Some(n) => format!("{n}: {v}"),
                        None => v.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
                _ => cells.values().cloned().collect::<Vec<_>>().join(" | "),
            };
            if header.is_none() {
                header = Some(cells);
            }
            rows.push(Item::Block(Block {
                text,
                line_start: line,
                line_end: line,
                page: None,
            }));
        }
        if !rows.is_empty() {
            items.push(Item::Heading {
                level: 1,
                title: collapse(&name),
                id: None,
                page: None,
            });
            items.extend(rows);
        }
    }
    if items.is_empty() {
        return Err("no text in this workbook (every sheet is empty)".into());
    }
    Ok(parsed(file_stem.to_owned(), items))
}

/// Measures what every part of a zipped workbook unpacks to, with a bound, before calamine
/// unpacks it without one (an ODS whose `content.xml` inflates to gigabytes was reported as
/// "Cannot detect file format" after calamine had spent the memory). Over [`MAX_PART_BYTES`]
/// for one part or [`MAX_PARTS_BYTES`] in all, the file is refused as what it is.
fn check_zip_parts(bytes: &[u8]) -> Result<(), String> {
    use std::io::Read;
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| format!("broken spreadsheet: not a readable zip container ({e})"))?;
    let mut total = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    for i in 0..zip.len() {
        let Ok(mut part) = zip.by_index(i) else {
            continue;
        };
        let name = part.name().to_owned();
        let mut n = 0u64;
        loop {
            match part.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k as u64,
            }
            if n > MAX_PART_BYTES || total + n > MAX_PARTS_BYTES {
                return Err(format!(
                    "its part {name:?} unpacks to more than {} MiB, over the limit (a decompression bomb?)",
                    if n > MAX_PART_BYTES { MAX_PART_BYTES } else { MAX_PARTS_BYTES } >> 20
                ));
            }
        }
        total += n;
    }
    Ok(())
}

/// What a workbook may still produce.
#[derive(Default)]
struct Budget {
    cells: usize,
    bytes: usize,
}

impl Budget {
    fn take(&mut self, text: &str) -> Result<(), String> {
        self.cells += 1;
        self.bytes += text.len();
        if self.cells > MAX_CELLS || self.bytes > MAX_TEXT_BYTES {
            return Err(format!(
                "spreadsheet holds more than {MAX_CELLS} cells or {} MiB of text, over the limit",
                MAX_TEXT_BYTES >> 20
            ));
        }
        Ok(())
    }
}

/// The non-empty cells of one sheet. XLSX is read cell by cell, never as a grid, so a sheet
/// whose cells sit at A1 and XFD1048576 costs two cells (calamine's `worksheet_range` would
/// allocate every cell between them: ≈550 GB for a 1.5 KB file). calamine gives the other
/// formats (XLS, XLSB, ODS) only as that grid; the converter process's memory limit
/// (`crate::isolate`) bounds what a hostile one can take.
fn sheet_cells(
    book: &mut Sheets<Cursor<&[u8]>>,
    name: &str,
    budget: &mut Budget,
) -> Result<Cells, String> {
    let broken = |e: &dyn std::fmt::Display| format!("broken spreadsheet: sheet {name:?}: {e}");
    let mut cells = Cells::new();
    if let Sheets::Xlsx(xlsx) = book {
        let mut reader = xlsx.worksheet_cells_reader(name).map_err(|e| broken(&e))?;
        while let Some(c) = reader.next_cell().map_err(|e| broken(&e))? {
            let (row, col) = c.get_position();
            let text = cell(&Data::from(c.get_value().clone()));
            if !text.is_empty() {
                budget.take(&text)?;
                cells.entry(row).or_default().insert(col, text);
            }
        }
        return Ok(cells);
    }
    let range = book.worksheet_range(name).map_err(|e| broken(&e))?;
    for (row, col, value) in range.used_cells() {
        let text = cell(value);
        if !text.is_empty() {
            budget.take(&text)?;
            let (r, c) = range
                .start()
                .map_or((0, 0), |(r0, c0)| (r0 + row as u32, c0 + col as u32));
            cells.entry(r).or_default().insert(c, text);
        }
    }
    Ok(cells)
}

/// A cell as text: dates as ISO dates (with the time when there is one), numbers as the
/// shortest decimal, errors as their code.
fn cell(d: &Data) -> String {
    match d {
        // calamine converts the serial number: 1900- or 1904-based workbooks, and Excel's
        // phantom 1900-02-29.
        Data::DateTime(t) if t.is_datetime() => match t.as_datetime() {
            Some(dt) if dt.time() == chrono::NaiveTime::MIN => dt.format("%Y-%m-%d").to_string(),
            Some(dt) => dt.format("%Y-%m-%d %H:%M").to_string(),
            None => t.as_f64().to_string(),
        },
        Data::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", *f as i64),
        other => collapse(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use calamine::{ExcelDateTime, ExcelDateTimeType};

    fn date(serial: f64, is_1904: bool) -> String {
        cell(&Data::DateTime(ExcelDateTime::new(
            serial,
            ExcelDateTimeType::DateTime,
            is_1904,
        )))
    }

    #[test]
    fn excel_serial_dates_read_as_iso() {
        assert_eq!(date(45_366.0, false), "2024-03-15");
        assert_eq!(date(45_366.5, false), "2024-03-15 12:00");
        // Serial 1 is the day Excel shows as 1900-01-01 (it counts a 1900-02-29).
        assert_eq!(date(1.0, false), "1900-01-01");
        // Workbooks from old Mac Excel count from 1904.
        assert_eq!(date(43_904.0, true), "2024-03-15");
    }
}
