//! What `GET /metrics` exposes, in the Prometheus/OpenMetrics text format (`prometheus-client`,
//! the Prometheus project's own Rust client): calls by endpoint, mode and status, latency
//! histograms per endpoint and per search stage, zero-result answers, refusals (rate limit,
//! capacity), feedback marks, and each served bundle's state and generation.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use serde_json::Value;

use super::{Collection, Outcome, Via};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    endpoint: String,
    tool: String,
    mode: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointLabels {
    endpoint: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StageLabels {
    stage: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FeedbackLabels {
    relevant: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BundleLabels {
    path: String,
}

/// 1 ms to about 16 s, doubling.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

pub(crate) struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    latency: Family<EndpointLabels, Histogram, fn() -> Histogram>,
    stages: Family<StageLabels, Histogram, fn() -> Histogram>,
    zero_results: Family<EndpointLabels, Counter>,
    rate_limited: Counter,
    overloaded: Counter,
    unauthorized: Counter,
    cache_hits: Counter,
    cache_misses: Counter,
    reload_failures: Counter,
    feedback: Family<FeedbackLabels, Counter>,
    bundle_ready: Family<BundleLabels, Gauge>,
    bundle_generation: Family<BundleLabels, Gauge<u64, AtomicU64>>,
    in_flight: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("docloupe");
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "requests",
            "Searches and feedback calls answered, by endpoint (or /mcp, or stdio), tool, requested mode and HTTP status",
            calls.clone(),
        );
        let latency: Family<EndpointLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(latency_histogram);
        registry.register(
            "request_duration_seconds",
            "Time to answer a call, by endpoint",
            latency.clone(),
        );
        let stages: Family<StageLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(latency_histogram);
        registry.register(
            "stage_duration_seconds",
            "Time a search spent per stage (embed, retrieve, rerank, total), from the answer's timings",
            stages.clone(),
        );
        let zero_results = Family::<EndpointLabels, Counter>::default();
        registry.register(
            "zero_results",
            "Searches answered with no result",
            zero_results.clone(),
        );
        let rate_limited = Counter::default();
        registry.register(
            "rate_limited",
            "Calls refused with RATE_LIMIT (a user's calls per minute)",
            rate_limited.clone(),
        );
        let overloaded = Counter::default();
        registry.register(
            "overloaded",
            "Calls refused with 503 because every search thread was busy and the queue was full",
            overloaded.clone(),
        );
        let unauthorized = Counter::default();
        registry.register(
            "unauthorized",
            "Requests refused with 401 (no token or an unknown one)",
            unauthorized.clone(),
        );
        let cache_hits = Counter::default();
        registry.register(
            "cache_hits",
            "Searches answered from the popular-query cache",
            cache_hits.clone(),
        );
        let cache_misses = Counter::default();
        registry.register(
            "cache_misses",
            "Searches the cache did not hold (then run and kept)",
            cache_misses.clone(),
        );
        let reload_failures = Counter::default();
        registry.register(
            "bundle_reload_failures",
            "Reloads whose new bundle could not be loaded (the old one kept serving)",
            reload_failures.clone(),
        );
        let feedback = Family::<FeedbackLabels, Counter>::default();
        registry.register(
            "feedback",
            "result_feedback marks recorded, by relevant true/false",
            feedback.clone(),
        );
        let bundle_ready = Family::<BundleLabels, Gauge>::default();
        registry.register(
            "bundle_ready",
            "1 while a served bundle is loaded and answering, 0 while it is unavailable",
            bundle_ready.clone(),
        );
        let bundle_generation = Family::<BundleLabels, Gauge<u64, AtomicU64>>::default();
        registry.register(
            "bundle_generation",
            "How many times a served bundle has been loaded (1 at start)",
            bundle_generation.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "searches_in_flight",
            "Searches running or waiting for a search thread",
            in_flight.clone(),
        );
        Metrics {
            registry,
            calls,
            latency,
            stages,
            zero_results,
            rate_limited,
            overloaded,
            unauthorized,
            cache_hits,
            cache_misses,
            reload_failures,
            feedback,
            bundle_ready,
            bundle_generation,
            in_flight,
        }
    }
}

impl Metrics {
    /// One answered call: `args` for its mode, `outcome` for its status and stage times.
    pub(crate) fn record(&self, via: &Via, args: &Value, outcome: &Outcome, took: Duration) {
        let endpoint = via.endpoint.unwrap_or("stdio").to_owned();
        let mode = match via.tool {
            "result_feedback" => "",
            "search_documents" => args["search_mode"].as_str().unwrap_or("default"),
            _ => args["mode"].as_str().unwrap_or("default"),
        };
        // Only the modes there are: a client's own string never becomes a label.
        let mode = match mode {
            "" | "hybrid" | "fulltext" | "semantic" | "default" => mode,
            _ => "invalid",
        };
        self.calls
            .get_or_create(&CallLabels {
                endpoint: endpoint.clone(),
                tool: via.tool.to_owned(),
                mode: mode.to_owned(),
                status: outcome.status().to_string(),
            })
            .inc();
        let endpoint = EndpointLabels { endpoint };
        if !took.is_zero() {
            self.latency
                .get_or_create(&endpoint)
                .observe(took.as_secs_f64());
        }
        if let Some(t) = &outcome.timings {
            for (stage, ms) in [
                ("embed", t.embed_ms),
                ("retrieve", t.retrieve_ms),
                ("rerank", t.rerank_ms),
                ("total", t.total_ms),
            ] {
                self.stages
                    .get_or_create(&StageLabels {
                        stage: stage.into(),
                    })
                    .observe(ms / 1e3);
            }
        }
        if outcome.results == Some(0) && via.tool != "result_feedback" {
            self.zero_results.get_or_create(&endpoint).inc();
        }
        match outcome.status() {
            429 => {
                self.rate_limited.inc();
            }
            503 if outcome.structured.pointer("/details/reason")
                == Some(&Value::from("overloaded"))
                || outcome.structured.pointer("/error/details/reason")
                    == Some(&Value::from("overloaded")) =>
            {
                self.overloaded.inc();
            }
            _ => {}
        }
        if via.tool == "result_feedback" && !outcome.is_error {
            let relevant = args["relevant"].as_bool().unwrap_or(false).to_string();
            self.feedback
                .get_or_create(&FeedbackLabels { relevant })
                .inc();
        }
    }

    pub(crate) fn cache(&self, hit: bool) {
        if hit {
            self.cache_hits.inc();
        } else {
            self.cache_misses.inc();
        }
    }

    pub(crate) fn reload_failed(&self) {
        self.reload_failures.inc();
    }

    pub(crate) fn unauthorized(&self) {
        self.unauthorized.inc();
    }

    pub(crate) fn in_flight(&self, n: usize) {
        self.in_flight.set(n as i64);
    }

    /// A bundle (re)loaded, well or not.
    pub(crate) fn bundle_loaded(&self, c: &Collection) {
        // By path only: a reload may bring another project to the same path.
        let labels = BundleLabels {
            path: c.path.display().to_string(),
        };
        self.bundle_ready
            .get_or_create(&labels)
            .set(i64::from(c.engine.is_ok()));
        self.bundle_generation.get_or_create(&labels).inc();
    }

    /// The text `GET /metrics` answers.
    pub(crate) fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
