//! `docloupe stats LOG…`: usage statistics from query logs — the MCP server's (`docloupe mcp
//! --log`: one JSON line per tool call) and the edge Worker's (one JSON line per request; with
//! `LOG_QUERIES=true` it carries the request). Counts per tool, mode and status, latency
//! percentiles, the most frequent queries, queries that found nothing, the filters used, and
//! from `result_feedback` calls (a result marked relevant or not, with its rank) precision@5.
//! Lines that are not calls (the server's `event` lines, anything unparsable) are counted and
//! skipped.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde_json::{json, Value};

#[derive(clap::Args)]
pub struct StatsArgs {
    /// Query logs (JSON lines) of `docloupe mcp --log` or the edge Worker; several are merged.
    #[arg(required = true)]
    logs: Vec<PathBuf>,
    /// How many of the most frequent (and of the zero-result) queries to list.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Print the statistics as one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// One search call, whichever log it came from.
struct Call {
    tool: String,
    mode: String,
    status: String,
    ms: Option<f64>,
    results: Option<u64>,
    query: Option<String>,
    filters: Vec<&'static str>,
}

/// A result marked relevant or not.
struct Feedback {
    relevant: bool,
    rank: Option<u64>,
}

#[derive(Default)]
struct Tally {
    calls: Vec<Call>,
    feedback: Vec<Feedback>,
    skipped: usize,
}

/// The filters a request used, by the names the statistics print.
fn filters_of(params: &Value) -> Vec<&'static str> {
    let mut used = Vec::new();
    let present = |v: &Value| !(v.is_null() || v == &json!([]) || v == &json!({}) || v == "");
    let f = &params["filters"];
    for (name, values) in [
        (
            "document_types",
            [&params["document_types"], &f["documentTypes"]],
        ),
        ("date_range", [&params["date_range"], &f["dateFrom"]]),
        ("date_range", [&Value::Null, &f["dateTo"]]),
        ("source", [&params["source_filter"], &f["sourcePrefix"]]),
        ("tags", [&Value::Null, &f["tags"]]),
        ("workspace", [&Value::Null, &params["workspacePath"]]),
        ("project", [&params["project"], &params["projectId"]]),
    ] {
        if values.iter().any(|v| present(v)) && !used.contains(&name) {
            used.push(name);
        }
    }
    used
}

/// The longest a logged call can plausibly take (a day); a duration beyond it, negative or not
/// a number is no duration (a `durationMs` of 1e308 made a 300-digit mean).
const MAX_DURATION_MS: f64 = 86_400_000.0;

fn duration(v: &Value) -> Option<f64> {
    v.as_f64()
        .filter(|ms| ms.is_finite() && (0.0..=MAX_DURATION_MS).contains(ms))
}

fn read_line(line: &str, tally: &mut Tally) {
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        tally.skipped += 1;
        return;
    };
    let params = &v["params"];
    let tool = v["tool"].as_str();
    if tool == Some("result_feedback") {
        // A refused mark (a bad rank, a missing field) is no mark.
        if v["errorCode"].is_string() {
            tally.skipped += 1;
            return;
        }
        match params["relevant"].as_bool() {
            Some(relevant) => tally.feedback.push(Feedback {
                relevant,
                rank: params["rank"].as_u64(),
            }),
            None => tally.skipped += 1,
        }
        return;
    }
    // The MCP server's calls name their tool; the Worker's requests have a path.
    let (tool, ms, status) = match (tool, v["path"].as_str()) {
        (Some(t), _) => (
            t.to_owned(),
            duration(&v["durationMs"]),
            v["errorCode"].as_str().unwrap_or("ok").to_owned(),
        ),
        (None, Some(path)) if path.ends_with("/query") => (
            "http".to_owned(),
            duration(&v["latencyMs"]),
            match (v["errorCode"].as_str(), v["status"].as_u64()) {
                (Some(code), _) => code.to_owned(),
                (None, Some(200) | None) => "ok".to_owned(),
                (None, Some(status)) => format!("HTTP {status}"),
            },
        ),
        _ => {
            tally.skipped += 1;
            return;
        }
    };
    let mode = params["search_mode"]
        .as_str()
        .or(params["mode"].as_str())
        .or(v["mode"].as_str())
        .unwrap_or("hybrid")
        .to_owned();
    tally.calls.push(Call {
        tool,
        mode,
        status,
        ms,
        results: v["results"].as_u64(),
        query: params["query"]
            .as_str()
            .map(|q| {
                q.split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .to_lowercase()
            })
            .filter(|q| !q.is_empty()),
        filters: filters_of(params),
    });
}

fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    Some(sorted[i])
}

/// The most frequent entries of `counts`, ties by name.
fn top(counts: BTreeMap<String, usize>, n: usize) -> Vec<(String, usize)> {
    let mut v: Vec<(String, usize)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

fn summary(t: &Tally, n: usize) -> Value {
    let count = |key: fn(&Call) -> String| {
        let mut m: BTreeMap<String, usize> = BTreeMap::new();
        for c in &t.calls {
            *m.entry(key(c)).or_default() += 1;
        }
        m
    };
    let mut ms: Vec<f64> = t.calls.iter().filter_map(|c| c.ms).collect();
    ms.sort_by(f64::total_cmp);
    let mut queries: BTreeMap<String, usize> = BTreeMap::new();
    let mut empty: BTreeMap<String, usize> = BTreeMap::new();
    let mut filters: BTreeMap<String, usize> = BTreeMap::new();
    for c in &t.calls {
        if let Some(q) = &c.query {
            *queries.entry(q.clone()).or_default() += 1;
            if c.status == "ok" && c.results == Some(0) {
                *empty.entry(q.clone()).or_default() += 1;
            }
        }
        for f in &c.filters {
            *filters.entry((*f).to_owned()).or_default() += 1;
        }
    }
    let with_filters = t.calls.iter().filter(|c| !c.filters.is_empty()).count();
    let top5: Vec<&Feedback> = t
        .feedback
        .iter()
        .filter(|f| f.rank.is_some_and(|r| (1..=5).contains(&r)))
        .collect();
    let precision = (!top5.is_empty())
        .then(|| top5.iter().filter(|f| f.relevant).count() as f64 / top5.len() as f64);
    let pairs = |v: Vec<(String, usize)>| -> Value {
        v.into_iter()
            .map(|(q, c)| json!({"query": q, "count": c}))
            .collect()
    };
    json!({
        "searches": t.calls.len(),
        "byTool": count(|c| c.tool.clone()),
        "byMode": count(|c| c.mode.clone()),
        "byStatus": count(|c| c.status.clone()),
        "latencyMs": {
            "mean": (!ms.is_empty()).then(|| ms.iter().sum::<f64>() / ms.len() as f64),
            "p50": percentile(&ms, 0.5),
            "p95": percentile(&ms, 0.95),
        },
        "topQueries": pairs(top(queries, n)),
        "zeroResultQueries": pairs(top(empty, n)),
        "filters": {"searchesWithFilters": with_filters, "byFilter": filters},
        "feedback": {
            "marks": t.feedback.len(),
            "relevant": t.feedback.iter().filter(|f| f.relevant).count(),
            "marksInTop5": top5.len(),
            "precisionAt5": precision,
        },
        "linesSkipped": t.skipped,
    })
}

fn text(s: &Value) -> String {
    let mut out = String::new();
    let map = |v: &Value| -> String {
        v.as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    let num = |v: &Value| v.as_f64().map_or("-".to_owned(), |x| format!("{x:.1}"));
    out.push_str(&format!("searches: {}\n", s["searches"]));
    out.push_str(&format!("  by tool: {}\n", map(&s["byTool"])));
    out.push_str(&format!("  by mode: {}\n", map(&s["byMode"])));
    out.push_str(&format!("  by status: {}\n", map(&s["byStatus"])));
    let l = &s["latencyMs"];
    out.push_str(&format!(
        "latency: mean {} ms, p50 {} ms, p95 {} ms\n",
        num(&l["mean"]),
        num(&l["p50"]),
        num(&l["p95"])
    ));
    for (title, key) in [
        ("top queries", "topQueries"),
        ("queries with no results", "zeroResultQueries"),
    ] {
        out.push_str(&format!("{title}:\n"));
        for q in s[key].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "  {:>5}  {}\n",
                q["count"],
                q["query"].as_str().unwrap_or("")
            ));
        }
    }
    let f = &s["filters"];
    out.push_str(&format!(
        "filters: {} searches used any ({})\n",
        f["searchesWithFilters"],
        map(&f["byFilter"])
    ));
    let fb = &s["feedback"];
    out.push_str(&format!(
        "feedback: {} marks, {} relevant; precision@5 {} (over {} marks at ranks 1-5)\n",
        fb["marks"],
        fb["relevant"],
        fb["precisionAt5"]
            .as_f64()
            .map_or("-".to_owned(), |p| format!("{p:.3}")),
        fb["marksInTop5"]
    ));
    if s["linesSkipped"].as_u64().unwrap_or(0) > 0 {
        out.push_str(&format!(
            "({} lines were not search calls and were skipped)\n",
            s["linesSkipped"]
        ));
    }
    out
}

pub fn run(args: StatsArgs) -> Result<()> {
    let mut tally = Tally::default();
    for path in &args.logs {
        let file =
            std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        // Lines are read as bytes: a line that is not UTF-8 is one line skipped, not the end.
        for line in std::io::BufReader::new(file).split(b'\n') {
            let line = line.with_context(|| format!("cannot read {}", path.display()))?;
            match std::str::from_utf8(&line) {
                Ok(line) if line.trim().is_empty() => {}
                Ok(line) => read_line(line, &mut tally),
                Err(_) => tally.skipped += 1,
            }
        }
    }
    let s = summary(&tally, args.top);
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&s)?)?;
    } else {
        // The queries come from any client of the server or the Worker: what the operator's
        // terminal is shown must not drive it.
        write!(out, "{}", crate::render::printable(&text(&s)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_logs_are_read_and_feedback_gives_precision_at_5() {
        let mut t = Tally::default();
        for line in [
            r#"{"time":"t","tool":"search_documents","params":{"query":"Cache  size","document_types":["pdf"]},"durationMs":10.0,"results":3,"errorCode":null}"#,
            r#"{"time":"t","tool":"search_docs","params":{"query":"cache size","mode":"fulltext","filters":{"dateFrom":"2024-01-01"}},"durationMs":30.0,"results":0,"errorCode":null}"#,
            r#"{"time":"t","requestId":"r","method":"GET","path":"/v1/search/docs/query","mode":"hybrid","status":400,"latencyMs":2,"errorCode":"INVALID_REQUEST"}"#,
            r#"{"time":"t","tool":"result_feedback","params":{"query":"cache size","document":"a.md","rank":1,"relevant":true}}"#,
            r#"{"time":"t","tool":"result_feedback","params":{"query":"cache size","document":"b.md","rank":7,"relevant":false}}"#,
            r#"{"time":"t","tool":"result_feedback","params":{"query":"cache size","document":"c.md","rank":2,"relevant":false}}"#,
            r#"{"event":"bundle","path":"x"}"#,
            "not json",
        ] {
            read_line(line, &mut t);
        }
        let s = summary(&t, 5);
        assert_eq!(s["searches"], 3);
        assert_eq!(s["byMode"], json!({"fulltext": 1, "hybrid": 2}));
        assert_eq!(s["byStatus"], json!({"INVALID_REQUEST": 1, "ok": 2}));
        assert_eq!(
            s["topQueries"][0],
            json!({"query": "cache size", "count": 2})
        );
        assert_eq!(s["zeroResultQueries"][0]["query"], "cache size");
        assert_eq!(
            s["filters"]["byFilter"],
            json!({"date_range": 1, "document_types": 1})
        );
        assert_eq!(s["feedback"]["marks"], 3);
        assert_eq!(s["feedback"]["precisionAt5"], 0.5);
        assert_eq!(s["linesSkipped"], 2);
        assert_eq!(s["latencyMs"]["p50"], 10.0);
        assert!(text(&s).contains("precision@5 0.500"));
    }
}
