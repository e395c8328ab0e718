//! A pipeline's definition as users write it (YAML, or the same JSON): its triggers,
//! functions and links, parsed with unknown fields refused by name, and checked for what
//! can be checked without the catalog (names, references, cycles, event names). The
//! catalog keeps the definition as the JSON [`Pipeline::to_document`] writes.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::PipelineError;

/// Default `retries` of a link: three more attempts after the first.
pub const DEFAULT_RETRIES: u32 = 3;
/// Default first backoff between attempts; each next one doubles, up to
/// [`MAX_BACKOFF_MS`].
pub const DEFAULT_BACKOFF_MS: u64 = 200;
/// Longest backoff between two attempts.
pub const MAX_BACKOFF_MS: u64 = 30_000;
/// Most `retries` a link may ask for: a failing event must reach the dead-letter topic.
pub const MAX_RETRIES: u32 = 100;
/// Default `timeout_ms` of a function.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// Default events in flight per partition of an `unordered` link.
pub const DEFAULT_MAX_IN_FLIGHT: u32 = 16;
/// Default partitions of the topics a pipeline makes (trigger and reply topics).
pub const DEFAULT_PARTITIONS: u32 = 3;
/// Default dead-letter topic.
pub const DEFAULT_DEAD_LETTER_TOPIC: &str = "dead-letter";
/// Default events of a bucket trigger.
pub const DEFAULT_BUCKET_EVENTS: &str = "s3:ObjectCreated:*";

/// A pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    /// Its name: lowercase letters, digits and `-`, up to 63.
    pub name: String,
    /// Where events come from.
    #[serde(default)]
    pub triggers: Vec<Trigger>,
    /// What handles them.
    #[serde(default)]
    pub functions: Vec<Function>,
    /// Which events go to which function.
    #[serde(default)]
    pub links: Vec<Link>,
    /// Where events that failed every attempt go (default `dead-letter`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead_letter_topic: Option<String>,
    /// Partitions of the topics the pipeline makes (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<u32>,
}

/// Which kind of source a trigger is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TriggerKind {
    /// A bucket's object events.
    Bucket,
    /// Any topic's records.
    Topic,
    /// A cron schedule.
    Schedule,
}

/// A source of events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trigger {
    /// Its name (links name it in `from`).
    pub name: String,
    /// Its kind.
    pub kind: TriggerKind,
    /// `bucket`: the bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<String>,
    /// `bucket`: S3 event names (default `s3:ObjectCreated:*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<String>>,
    /// `bucket`: keys must start with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// `bucket`: keys must end with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suffix: Option<String>,
    /// `topic`: the topic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// `schedule`: a cron expression (five fields, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
}

/// An HTTP function: a service Eddy sends events to (`url`) or runs itself (`command`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Function {
    /// Its name (links name it in `to` and `from`).
    pub name: String,
    /// Where it listens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The command Eddy runs for each instance (with `PORT` set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// How long one attempt may take (default 30000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Send events in CloudEvents batches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batching: Option<Batching>,
    /// `command`: how many instances run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances: Option<Instances>,
    /// `command`: environment of each instance.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// `command`: the readiness path (default `/health`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_path: Option<String>,
}

/// A function's batching.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Batching {
    /// Most events in one batch.
    pub max_size: u32,
    /// Longest wait for a batch to fill, in ms.
    #[serde(default)]
    pub timeout_ms: u64,
}

/// How many instances of a `command` function run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instances {
    /// At least (default 1).
    #[serde(default = "one")]
    pub min: u32,
    /// At most (default `min`).
    #[serde(default)]
    pub max: Option<u32>,
    /// How long one instance fewer must have sufficed before one is stopped, in ms
    /// (default 30000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down_ms: Option<u64>,
}

fn one() -> u32 {
    1
}

/// Whether a link keeps a partition's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventsOrder {
    /// One event of a partition at a time, in order.
    Ordered,
    /// Up to `max_in_flight` events of a partition at a time.
    #[default]
    Unordered,
}

/// Events of a trigger or of a function's replies, handed to a function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// A trigger's or a function's name.
    pub from: String,
    /// A function's name.
    pub to: String,
    /// Attempts after the first (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    /// First backoff in ms (default 200), doubling each attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_ms: Option<u64>,
    /// Order within a partition (default `unordered`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events_order: Option<EventsOrder>,
    /// `unordered`: events in flight per partition (default 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<u32>,
    /// Only replies carrying these extension attributes (from a function only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

impl Link {
    /// Its name, the cursor's: `from-to`.
    pub fn name(&self) -> String {
        format!("{}-{}", self.from, self.to)
    }

    /// Attempts after the first.
    pub fn retries(&self) -> u32 {
        self.retries.unwrap_or(DEFAULT_RETRIES)
    }

    /// Events in flight per partition.
    pub fn in_flight(&self) -> usize {
        match self.events_order.unwrap_or_default() {
            EventsOrder::Ordered => 1,
            EventsOrder::Unordered => self.max_in_flight.unwrap_or(DEFAULT_MAX_IN_FLIGHT) as usize,
        }
    }

    /// The wait before attempt `n` (from 1): the backoff doubled `n - 1` times, capped.
    pub fn backoff(&self, n: u32) -> std::time::Duration {
        let first = self.backoff_ms.unwrap_or(DEFAULT_BACKOFF_MS);
        let ms = first.saturating_mul(1u64 << n.saturating_sub(1).min(20));
        std::time::Duration::from_millis(ms.min(MAX_BACKOFF_MS))
    }
}

impl Function {
    /// One attempt's time limit.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS))
    }
}

impl Pipeline {
    /// Parses a definition (YAML, which JSON is a part of) and checks it.
    pub fn parse(text: &str) -> Result<Self, PipelineError> {
        let p: Pipeline =
            serde_norway::from_str(text).map_err(|e| PipelineError::Invalid(e.to_string()))?;
        p.check()?;
        Ok(p)
    }

    /// Reads a definition the catalog holds (written by [`Pipeline::to_document`]).
    pub fn from_document(document: &str) -> Result<Self, PipelineError> {
        serde_json::from_str(document)
            .map_err(|e| PipelineError::Corrupt(format!("stored definition: {e}")))
    }

    /// The definition as the catalog keeps it.
    pub fn to_document(&self) -> String {
        // Strings, numbers and maps of them always serialize.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The trigger named `name`.
    pub fn trigger(&self, name: &str) -> Option<&Trigger> {
        self.triggers.iter().find(|t| t.name == name)
    }

    /// The function named `name`.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// The dead-letter topic.
    pub fn dead_letter_topic(&self) -> &str {
        self.dead_letter_topic
            .as_deref()
            .unwrap_or(DEFAULT_DEAD_LETTER_TOPIC)
    }

    /// Partitions of the topics it makes.
    pub fn partitions(&self) -> u32 {
        self.partitions.unwrap_or(DEFAULT_PARTITIONS)
    }

    /// The topic holding a trigger's events (a topic trigger's own topic) or a function's
    /// replies.
    pub fn topic_of(&self, node: &str) -> String {
        match self.trigger(node) {
            Some(Trigger {
                kind: TriggerKind::Topic,
                topic: Some(t),
                ..
            }) => t.clone(),
            _ => format!("pipeline.{}.{}", self.name, node),
        }
    }

    /// The topic keeping its events' spans (JSON, keyed by trace id).
    pub fn traces_topic(&self) -> String {
        format!("pipeline.{}.traces", self.name)
    }

    /// The topic keeping what its `command` functions print.
    pub fn logs_topic(&self) -> String {
        format!("pipeline.{}.logs", self.name)
    }

    /// Whether a function's replies go anywhere (a link leaves it).
    pub fn has_links_from(&self, node: &str) -> bool {
        self.links.iter().any(|l| l.from == node)
    }

    /// The structural checks: names, kinds and their fields, references, cycles.
    pub fn check(&self) -> Result<(), PipelineError> {
        let bad = |m: String| Err(PipelineError::Invalid(m));
        check_name("pipeline", &self.name)?;
        let mut names = BTreeSet::new();
        for t in &self.triggers {
            check_name("trigger", &t.name)?;
            if !names.insert(t.name.as_str()) {
                return bad(format!("two triggers or functions are named {}", t.name));
            }
            check_trigger(t)?;
        }
        for f in &self.functions {
            check_name("function", &f.name)?;
            if !names.insert(f.name.as_str()) {
                return bad(format!("two triggers or functions are named {}", f.name));
            }
            check_function(f)?;
        }
        let mut links = BTreeSet::new();
        for l in &self.links {
            let what = format!("link {} -> {}", l.from, l.to);
            if self.trigger(&l.from).is_none() && self.function(&l.from).is_none() {
                return bad(format!(
                    "{what}: no trigger or function is named {}",
                    l.from
                ));
            }
            if self.function(&l.to).is_none() {
                return bad(format!("{what}: no function is named {}", l.to));
            }
            if !links.insert(l.name()) {
                return bad(format!("{what} is given twice"));
            }
            if !l.labels.is_empty() && self.trigger(&l.from).is_some() {
                return bad(format!(
                    "{what}: labels select a function's replies; {} is a trigger",
                    l.from
                ));
            }
            if l.retries.is_some_and(|r| r > MAX_RETRIES) {
                return bad(format!("{what}: retries is at most {MAX_RETRIES}"));
            }
            if l.max_in_flight == Some(0) || l.max_in_flight.is_some_and(|m| m > 1024) {
                return bad(format!("{what}: max_in_flight is from 1 to 1024"));
            }
            for k in l.labels.keys() {
                check_extension_name(&what, k)?;
            }
        }
        if let Some(cycle) = self.cycle() {
            return bad(format!("links form a cycle: {}", cycle.join(" -> ")));
        }
        if let Some(t) = &self.dead_letter_topic {
            notify::config::topic_of(t).map_err(|_| {
                PipelineError::Invalid(format!("dead_letter_topic {t:?} is not a topic name"))
            })?;
        }
        if self.partitions.is_some_and(|p| p == 0 || p > 1000) {
            return bad("partitions is from 1 to 1000".into());
        }
        Ok(())
    }

    /// A cycle of function-to-function links, as the names along it (first repeated).
    fn cycle(&self) -> Option<Vec<String>> {
        fn visit<'a>(
            p: &'a Pipeline,
            node: &'a str,
            path: &mut Vec<&'a str>,
            done: &mut BTreeSet<&'a str>,
        ) -> Option<Vec<String>> {
            if let Some(at) = path.iter().position(|n| *n == node) {
                let mut c: Vec<String> = path[at..].iter().map(|s| s.to_string()).collect();
                c.push(node.to_string());
                return Some(c);
            }
            if !done.insert(node) {
                return None;
            }
            path.push(node);
            for l in p.links.iter().filter(|l| l.from == node) {
                if let Some(c) = visit(p, &l.to, path, done) {
                    return Some(c);
                }
            }
            path.pop();
            None
        }
        let mut done = BTreeSet::new();
        for f in &self.functions {
            let mut path = Vec::new();
            let mut seen = BTreeSet::new();
            if let Some(c) = visit(self, &f.name, &mut path, &mut seen) {
                return Some(c);
            }
            done.extend(seen);
        }
        None
    }

    /// What `deploy` needs beyond the structural checks: something to run.
    pub fn check_deployable(&self) -> Result<(), PipelineError> {
        let refuse = |m: &str| Err(PipelineError::NotDeployable(m.to_string()));
        if self.triggers.is_empty() {
            return refuse("it has no trigger");
        }
        if self.links.is_empty() {
            return refuse("it has no link");
        }
        if !self.links.iter().any(|l| self.trigger(&l.from).is_some()) {
            return refuse("no link leaves a trigger, so no event would ever reach a function");
        }
        Ok(())
    }
}

/// Pipeline, trigger and function names: they become topic names and cursor names.
fn check_name(what: &str, name: &str) -> Result<(), PipelineError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && name.as_bytes()[0].is_ascii_alphanumeric();
    if ok {
        Ok(())
    } else {
        Err(PipelineError::Invalid(format!(
            "{what} name {name:?}: use 1 to 63 lowercase letters, digits, '-' or '_', starting with a letter or digit"
        )))
    }
}

/// CloudEvents extension attribute names: lowercase letters and digits.
fn check_extension_name(what: &str, name: &str) -> Result<(), PipelineError> {
    if !name.is_empty()
        && name.len() <= 20
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        Ok(())
    } else {
        Err(PipelineError::Invalid(format!(
            "{what}: label {name:?} is not a CloudEvents extension name (1 to 20 lowercase letters or digits)"
        )))
    }
}

fn check_trigger(t: &Trigger) -> Result<(), PipelineError> {
    let what = format!("trigger {}", t.name);
    let bad = |m: String| Err(PipelineError::Invalid(format!("{what}: {m}")));
    let given = |field: &str, set: bool| -> Result<(), PipelineError> {
        if set {
            Err(PipelineError::Invalid(format!(
                "{what}: {field} does not apply to a {:?} trigger",
                t.kind
            )))
        } else {
            Ok(())
        }
    };
    match t.kind {
        TriggerKind::Bucket => {
            let Some(b) = &t.bucket else {
                return bad("a bucket trigger needs bucket".into());
            };
            if b.is_empty() {
                return bad("bucket is empty".into());
            }
            let mut set = notify::event::EventSet::default();
            for e in t.events.iter().flatten() {
                set.add_name(e)
                    .map_err(|e| PipelineError::Invalid(format!("{what}: {e}")))?;
            }
            if t.events.as_ref().is_some_and(|e| e.is_empty()) {
                return bad("events is empty".into());
            }
            given("topic", t.topic.is_some())?;
            given("cron", t.cron.is_some())?;
        }
        TriggerKind::Topic => {
            let Some(topic) = &t.topic else {
                return bad("a topic trigger needs topic".into());
            };
            notify::config::topic_of(topic).map_err(|_| {
                PipelineError::Invalid(format!("{what}: {topic:?} is not a topic name"))
            })?;
            given("bucket", t.bucket.is_some())?;
            given("events", t.events.is_some())?;
            given("prefix", t.prefix.is_some())?;
            given("suffix", t.suffix.is_some())?;
            given("cron", t.cron.is_some())?;
        }
        TriggerKind::Schedule => {
            let Some(cron) = &t.cron else {
                return bad("a schedule trigger needs cron".into());
            };
            crate::schedule::Cron::parse(cron)
                .map_err(|e| PipelineError::Invalid(format!("{what}: {e}")))?;
            given("bucket", t.bucket.is_some())?;
            given("events", t.events.is_some())?;
            given("prefix", t.prefix.is_some())?;
            given("suffix", t.suffix.is_some())?;
            given("topic", t.topic.is_some())?;
        }
    }
    Ok(())
}

fn check_function(f: &Function) -> Result<(), PipelineError> {
    let what = format!("function {}", f.name);
    let bad = |m: &str| Err(PipelineError::Invalid(format!("{what}: {m}")));
    match (&f.url, &f.command) {
        (Some(_), Some(_)) => return bad("give url or command, not both"),
        (None, None) => return bad("give url (a service) or command (Eddy runs it)"),
        (Some(url), None) => {
            let parsed = reqwest::Url::parse(url)
                .map_err(|e| PipelineError::Invalid(format!("{what}: url {url:?}: {e}")))?;
            if parsed.scheme() != "http" {
                return bad("url must be http:// (put TLS in front of Eddy's own network)");
            }
            if f.instances.is_some() || !f.env.is_empty() || f.health_path.is_some() {
                return bad("instances, env and health_path apply to command functions");
            }
        }
        (None, Some(cmd)) => {
            if cmd.is_empty() || cmd[0].is_empty() {
                return bad("command is empty");
            }
            if let Some(i) = f.instances {
                let max = i.max.unwrap_or(i.min);
                if i.min == 0 || max < i.min || max > 64 {
                    return bad("instances: 1 <= min <= max <= 64");
                }
            }
            if f.health_path
                .as_deref()
                .is_some_and(|p| !p.starts_with('/'))
            {
                return bad("health_path must start with /");
            }
        }
    }
    if f.timeout_ms == Some(0) {
        return bad("timeout_ms must be positive");
    }
    if let Some(b) = f.batching
        && (b.max_size == 0 || b.max_size > 1000)
    {
        return bad("batching.max_size is from 1 to 1000");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const THUMBNAILS: &str = r#"
name: thumbnails
triggers:
  - name: uploads
    kind: bucket
    bucket: images
    events: ["s3:ObjectCreated:*"]
    prefix: incoming/
    suffix: .jpg
functions:
  - name: thumbnail
    url: http://127.0.0.1:8901/
    timeout_ms: 30000
    batching: {max_size: 10, timeout_ms: 200}
  - name: index
    command: ["python3", "index.py"]
    instances: {min: 1, max: 4}
    env: {LOG_LEVEL: info}
links:
  - {from: uploads, to: thumbnail, retries: 2, events_order: ordered}
  - {from: thumbnail, to: index, retries: 2, labels: {kind: image}}
"#;

    fn refusal(text: &str) -> String {
        Pipeline::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn the_documented_shape_parses_and_round_trips_through_its_document() {
        let p = Pipeline::parse(THUMBNAILS).unwrap();
        assert_eq!(p.links[0].in_flight(), 1);
        assert_eq!(p.links[1].labels["kind"], "image");
        assert_eq!(p.topic_of("uploads"), "pipeline.thumbnails.uploads");
        assert_eq!(Pipeline::from_document(&p.to_document()).unwrap(), p);
        p.check_deployable().unwrap();
    }

    #[test]
    fn unknown_fields_are_refused_by_name() {
        let e = refusal("name: p\nfunctions:\n  - {name: f, url: 'http://h/', timeot_ms: 5}\n");
        assert!(e.contains("unknown field `timeot_ms`"), "{e}");
        let e = refusal("name: p\ncolour: blue\n");
        assert!(e.contains("unknown field `colour`"), "{e}");
    }

    #[test]
    fn references_and_cycles_are_refused_clearly() {
        let e = refusal(&THUMBNAILS.replace("to: index", "to: indx"));
        assert!(
            e.contains("link thumbnail -> indx: no function is named indx"),
            "{e}"
        );
        let cyclic = format!("{THUMBNAILS}  - {{from: index, to: thumbnail}}\n");
        let e = refusal(&cyclic);
        assert!(
            e.contains("links form a cycle: thumbnail -> index -> thumbnail"),
            "{e}"
        );
        let e = refusal(&THUMBNAILS.replace("s3:ObjectCreated:*", "s3:ObjectMade"));
        assert!(e.contains("s3:ObjectMade"), "{e}");
        let e = refusal(&THUMBNAILS.replace("url: http://127.0.0.1:8901/", "url: ftp://h/"));
        assert!(e.contains("http://"), "{e}");
        let e = refusal("name: Bad Name\n");
        assert!(e.contains("pipeline name"), "{e}");
    }

    #[test]
    fn deploy_needs_a_trigger_a_link_and_a_link_from_a_trigger() {
        let p = Pipeline::parse("name: p\nfunctions: [{name: f, url: 'http://h/'}]\n").unwrap();
        assert!(
            p.check_deployable()
                .unwrap_err()
                .to_string()
                .contains("no trigger")
        );
        let p = Pipeline::parse(
            "name: p\ntriggers: [{name: t, kind: topic, topic: orders}]\nfunctions: [{name: f, url: 'http://h/'}, {name: g, url: 'http://h/'}]\nlinks: [{from: f, to: g}]\n",
        )
        .unwrap();
        assert!(
            p.check_deployable()
                .unwrap_err()
                .to_string()
                .contains("no link leaves a trigger")
        );
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let l = Link {
            from: "a".into(),
            to: "b".into(),
            retries: None,
            backoff_ms: Some(100),
            events_order: None,
            max_in_flight: None,
            labels: BTreeMap::new(),
        };
        assert_eq!(l.backoff(1).as_millis(), 100);
        assert_eq!(l.backoff(3).as_millis(), 400);
        assert_eq!(l.backoff(30).as_millis(), u128::from(MAX_BACKOFF_MS));
        assert_eq!(l.retries(), DEFAULT_RETRIES);
    }
}
