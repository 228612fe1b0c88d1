//! Spreadsheets (XLSX/XLSM, XLS, ODS, read by calamine): a section per sheet, headed by the
//! sheet's name, and a block per non-empty row. The first non-empty row is taken as the
//! column names, and every later row reads `Name: value; Other: value`, so a row found by a
//! search says what its numbers are. A line is a row number of the sheet (1-based, as the
//! spreadsheet shows it).

use std::io::Cursor;

use calamine::{open_workbook_auto_from_rs, Data, Reader};

use super::parsed;
use crate::ingest::{collapse, Block, Item, ParsedDoc};

pub fn convert(bytes: &[u8], file_stem: &str) -> Result<ParsedDoc, String> {
    let mut book = open_workbook_auto_from_rs(Cursor::new(bytes))
        .map_err(|e| format!("broken or encrypted spreadsheet: {e}"))?;
    let mut items = Vec::new();
    for name in book.sheet_names() {
        let range = match book.worksheet_range(&name) {
            Ok(r) => r,
            Err(e) => return Err(format!("broken spreadsheet: sheet {name:?}: {e}")),
        };
        let Some((first_row, _)) = range.start() else {
            continue;
        };
        let mut header: Option<Vec<String>> = None;
        let mut rows = Vec::new();
        for (i, row) in range.rows().enumerate() {
            let cells: Vec<String> = row.iter().map(cell).collect();
            if cells.iter().all(String::is_empty) {
                continue;
            }
            let line = first_row + i as u32 + 1;
            let text = match &header {
                Some(names) if names.iter().filter(|n| !n.is_empty()).count() >= 2 => cells
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| !v.is_empty())
                    .map(|(c, v)| match names.get(c).filter(|n| !n.is_empty()) {
                        Some(n) => format!("{n}: {v}"),
                        None => v.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
                _ => cells
                    .iter()
                    .filter(|v| !v.is_empty())
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" | "),
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
