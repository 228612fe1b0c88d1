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
        Data::DateTime(t) if t.is_datetime() => excel_date(t.as_f64()),
        Data::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", *f as i64),
        other => collapse(&other.to_string()),
    }
}

/// An Excel serial date (days since 1899-12-30) as `YYYY-MM-DD` or `YYYY-MM-DD HH:MM`.
fn excel_date(serial: f64) -> String {
    if !serial.is_finite() || !(0.0..3_000_000.0).contains(&serial) {
        return format!("{serial}");
    }
    let days = serial.floor() as i64 - 25_569; // to days since 1970-01-01
                                               // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let minutes = ((serial.fract() * 1440.0).round() as i64).min(1439);
    if minutes == 0 {
        format!("{y:04}-{m:02}-{d:02}")
    } else {
        format!(
            "{y:04}-{m:02}-{d:02} {:02}:{:02}",
            minutes / 60,
            minutes % 60
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excel_serial_dates_read_as_iso() {
        assert_eq!(excel_date(45_366.0), "2024-03-15");
        assert_eq!(excel_date(1.0), "1899-12-31");
        assert_eq!(excel_date(45_366.5), "2024-03-15 12:00");
    }
}
