//! The query log's entries: parameters cut to a bounded size, and UTC timestamps.

use super::*;

/// Strings past this many characters are cut in the log, lists and objects past this many
/// entries too, and nesting past `LOG_DEPTH`: a client's parameters cannot grow the log
/// without bound.
pub(super) const LOG_CHARS: usize = 600;
pub(super) const LOG_ITEMS: usize = 20;
pub(super) const LOG_DEPTH: usize = 4;

/// `v` cut to what the log keeps (`…` marks a cut).
pub(super) fn bounded(v: &Value, depth: usize) -> Value {
    match v {
        Value::String(s) if s.chars().count() > LOG_CHARS => {
            Value::String(s.chars().take(LOG_CHARS).chain(['…']).collect())
        }
        Value::Array(_) | Value::Object(_) if depth >= LOG_DEPTH => Value::String("…".into()),
        Value::Array(a) => Value::Array(
            a.iter()
                .take(LOG_ITEMS)
                .map(|x| bounded(x, depth + 1))
                .chain((a.len() > LOG_ITEMS).then(|| Value::String("…".into())))
                .collect(),
        ),
        Value::Object(o) => {
            let mut out: serde_json::Map<String, Value> = o
                .iter()
                .take(LOG_ITEMS)
                .map(|(k, x)| (k.chars().take(64).collect(), bounded(x, depth + 1)))
                .collect();
            if o.len() > LOG_ITEMS {
                out.insert("…".into(), Value::from(o.len() - LOG_ITEMS));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// UTC, seconds precision, without a date crate.
pub(crate) fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
