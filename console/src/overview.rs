//! The overview page's live graphs: every 10 s the node's own metrics (the text
//! `/metrics` serves, so a graph shows exactly what Prometheus would scrape) are read and
//! the counters the graphs need summed into a sample, with each pipeline link's counters;
//! the last hour of samples stays in a ring in memory. The page gets rates per second
//! between samples, and for latency the mean of the requests in each interval. No
//! Prometheus is needed.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// How often a sample is taken.
pub const INTERVAL: Duration = Duration::from_secs(10);
/// Samples kept: an hour's.
const KEPT: usize = 360;

/// One graphed quantity: the sum of a metric's series (those with a label's value, when
/// given).
struct Counted {
    key: &'static str,
    metric: &'static str,
    label: Option<(&'static str, &'static str)>,
}

/// The counters sampled.
const COUNTED: &[Counted] = &[
    Counted {
        key: "s3_requests",
        metric: "eddy_http_requests_total",
        label: Some(("listener", "s3")),
    },
    Counted {
        key: "http_requests",
        metric: "eddy_http_requests_total",
        label: Some(("listener", "http")),
    },
    Counted {
        key: "kafka_requests",
        metric: "eddy_kafka_requests_total",
        label: None,
    },
    Counted {
        key: "kafka_seconds_sum",
        metric: "eddy_kafka_request_seconds_sum",
        label: None,
    },
    Counted {
        key: "kafka_seconds_count",
        metric: "eddy_kafka_request_seconds_count",
        label: None,
    },
    Counted {
        key: "kafka_bytes_in",
        metric: "eddy_kafka_produced_bytes_total",
        label: None,
    },
    Counted {
        key: "kafka_bytes_out",
        metric: "eddy_kafka_fetched_bytes_total",
        label: None,
    },
    Counted {
        key: "catalog_commits",
        metric: "eddy_catalog_transactions_total",
        label: None,
    },
];

/// Each pipeline link's counters: delivered, failed attempts, dead-lettered (counters),
/// and waiting (a gauge).
const LINK_METRICS: [&str; 4] = [
    "eddy_pipeline_delivered_total",
    "eddy_pipeline_failed_attempts_total",
    "eddy_pipeline_dead_lettered_total",
    "eddy_pipeline_waiting",
];

/// A link's values of [`LINK_METRICS`], by (pipeline, link).
type Links = BTreeMap<(String, String), [f64; 4]>;

struct Sample {
    /// ms since the epoch.
    at: u64,
    values: Vec<f64>,
    links: Links,
}

/// The ring of samples.
#[derive(Default)]
pub struct Overview {
    ring: Mutex<VecDeque<Sample>>,
}

impl Overview {
    /// Samples the metrics text `render` gives every [`INTERVAL`] until `stop` flips.
    pub async fn run(
        &self,
        render: impl Fn() -> String,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let mut tick = tokio::time::interval(INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => self.take(&render()),
                _ = stop.changed() => return,
            }
        }
    }

    /// Adds a sample of the metrics text `text`.
    pub fn take(&self, text: &str) {
        let at = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let values = COUNTED.iter().map(|c| sum(text, c)).collect();
        let links = links(text);
        let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        if ring.len() >= KEPT {
            ring.pop_front();
        }
        ring.push_back(Sample { at, values, links });
    }

    /// A pipeline's links over the last interval: events delivered, failed attempts and
    /// dead letters per second, and the events waiting now.
    pub fn link_rates(&self, pipeline: &str) -> serde_json::Value {
        let ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = serde_json::Map::new();
        let (Some(b), Some(a)) = (ring.back(), ring.iter().rev().nth(1)) else {
            return serde_json::json!({ "links": out });
        };
        let secs = (b.at.saturating_sub(a.at)) as f64 / 1000.0;
        for ((p, link), now) in b.links.range((pipeline.to_owned(), String::new())..) {
            if p != pipeline {
                break;
            }
            let before = a
                .links
                .get(&(p.clone(), link.clone()))
                .copied()
                .unwrap_or_default();
            let rate = |i: usize| {
                if secs > 0.0 && now[i] >= before[i] {
                    (now[i] - before[i]) / secs
                } else {
                    0.0
                }
            };
            out.insert(
                link.clone(),
                serde_json::json!({
                    "delivered_per_s": rate(0),
                    "failed_per_s": rate(1),
                    "dead_lettered_per_s": rate(2),
                    "waiting": now[3],
                }),
            );
        }
        serde_json::json!({ "interval_ms": INTERVAL.as_millis() as u64, "links": out })
    }

    /// The graphs: per interval, its end (ms) and the rates per second of each counter,
    /// and the Kafka requests' mean latency (ms).
    pub fn series(&self) -> serde_json::Value {
        let ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        let idx = |k: &str| COUNTED.iter().position(|c| c.key == k).unwrap_or(0);
        let (sum_i, count_i) = (idx("kafka_seconds_sum"), idx("kafka_seconds_count"));
        let mut points = Vec::new();
        for (a, b) in ring.iter().zip(ring.iter().skip(1)) {
            let secs = (b.at.saturating_sub(a.at)) as f64 / 1000.0;
            if secs <= 0.0 {
                continue;
            }
            let mut p = serde_json::Map::new();
            p.insert("t".into(), b.at.into());
            for (i, c) in COUNTED.iter().enumerate() {
                if i == sum_i || i == count_i {
                    continue;
                }
                // A restarted counter (lower than before) counts from zero.
                let d = if b.values[i] >= a.values[i] {
                    b.values[i] - a.values[i]
                } else {
                    b.values[i]
                };
                p.insert(c.key.into(), (d / secs).into());
            }
            let n = b.values[count_i] - a.values[count_i];
            let latency = if n > 0.0 {
                (b.values[sum_i] - a.values[sum_i]) / n * 1000.0
            } else {
                0.0
            };
            p.insert("kafka_latency_ms".into(), latency.into());
            points.push(serde_json::Value::Object(p));
        }
        serde_json::json!({ "interval_ms": INTERVAL.as_millis() as u64, "points": points })
    }
}

/// The pipeline links' values of [`LINK_METRICS`] in the exposition `text`.
fn links(text: &str) -> Links {
    let mut out = Links::new();
    for line in text.lines() {
        let Some(i) = LINK_METRICS
            .iter()
            .position(|m| line.strip_prefix(m).is_some_and(|r| r.starts_with('{')))
        else {
            continue;
        };
        let rest = &line[LINK_METRICS[i].len() + 1..];
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let labels = parse_labels(labels);
        let (Some(p), Some(l)) = (labels.get("pipeline"), labels.get("link")) else {
            continue;
        };
        if let Some(v) = value
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        {
            out.entry((p.clone(), l.clone())).or_default()[i] = v;
        }
    }
    out
}

/// `name="value",...` as a map (values unescaped).
fn parse_labels(s: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut chars = s.chars().peekable();
    loop {
        let name: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if name.is_empty() || chars.next() != Some('"') {
            return out;
        }
        let mut value = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some('n') => value.push('\n'),
                    Some(other) => value.push(other),
                    None => break,
                },
                '"' => break,
                c => value.push(c),
            }
        }
        out.insert(name.trim_start_matches(',').trim().to_owned(), value);
        if chars.peek() == Some(&',') {
            chars.next();
        }
    }
}

/// The sum of the values of `c.metric`'s series in the exposition `text`.
fn sum(text: &str, c: &Counted) -> f64 {
    let mut total = 0.0;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(c.metric) else {
            continue;
        };
        let (labels, value) = match rest.strip_prefix('{') {
            Some(r) => match r.split_once("} ") {
                Some((l, v)) => (l, v),
                None => continue,
            },
            None => match rest.strip_prefix(' ') {
                Some(v) => ("", v),
                None => continue,
            },
        };
        if let Some((name, want)) = c.label {
            let pair = format!("{name}=\"{want}\"");
            if !labels.split(',').any(|l| l == pair) {
                continue;
            }
        }
        if let Some(v) = value
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        {
            total += v;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_summed_by_label_and_rated_per_second() {
        let text = "# HELP x\n\
            eddy_http_requests_total{listener=\"s3\",status=\"200\"} 10\n\
            eddy_http_requests_total{listener=\"s3\",status=\"404\"} 2\n\
            eddy_http_requests_total{listener=\"http\",status=\"200\"} 5\n\
            eddy_http_requests_total_created{listener=\"s3\"} 99\n\
            eddy_kafka_requests_total{api=\"Produce\"} 7\n";
        let s3 = &COUNTED[0];
        assert_eq!(sum(text, s3), 12.0);
        assert_eq!(sum(text, &COUNTED[1]), 5.0);
        assert_eq!(sum(text, &COUNTED[2]), 7.0);
        let o = Overview::default();
        o.take(text);
        {
            let mut ring = o.ring.lock().unwrap();
            ring[0].at -= 2000;
        }
        o.take(&text.replace("} 10", "} 30"));
        let points = o.series()["points"].clone();
        assert_eq!(points.as_array().map(Vec::len), Some(1));
        let rate = points[0]["s3_requests"].as_f64().unwrap();
        assert!((rate - 10.0).abs() < 0.5, "{rate}");
    }

    #[test]
    fn each_pipeline_link_is_rated_on_its_own() {
        let text = |n: u32| {
            format!(
                "eddy_pipeline_delivered_total{{pipeline=\"p\",link=\"a-b\"}} {n}\n\
                 eddy_pipeline_delivered_total{{pipeline=\"p2\",link=\"a-b\"}} 1000\n\
                 eddy_pipeline_waiting{{pipeline=\"p\",link=\"a-b\"}} 7\n"
            )
        };
        let o = Overview::default();
        o.take(&text(10));
        o.ring.lock().unwrap()[0].at -= 2000;
        o.take(&text(30));
        let r = o.link_rates("p");
        let link = &r["links"]["a-b"];
        assert!(
            (link["delivered_per_s"].as_f64().unwrap() - 10.0).abs() < 0.5,
            "{r}"
        );
        assert_eq!(link["waiting"].as_f64(), Some(7.0));
        assert_eq!(r["links"].as_object().map(|m| m.len()), Some(1));
        assert_eq!(
            parse_labels(r#"pipeline="x\"y",link="a-b""#)
                .get("pipeline")
                .map(String::as_str),
            Some("x\"y")
        );
    }
}
