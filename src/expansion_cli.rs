//! `eddy expansion`: a topic's blob expansion through the admin API of a running server
//! (`/admin/v1/topics/{topic}/expansion`), authenticated with a bearer token from the
//! REST catalog's token endpoint, as any client of that API is.

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::Value;

/// Where the server is and who asks.
#[derive(Args, Debug, Clone)]
pub struct Server {
    /// The server's HTTP endpoint.
    #[arg(long, env = "EDDY_HTTP_URL", default_value = "http://127.0.0.1:8181")]
    pub(crate) url: String,
    /// Access key (a user of the server).
    #[arg(long, env = "EDDY_ACCESS_KEY", default_value = "eddyadmin")]
    access_key: String,
    /// Secret key.
    #[arg(
        long,
        env = "EDDY_SECRET_KEY",
        default_value = "eddyadmin",
        hide_env_values = true
    )]
    secret_key: String,
}

/// What to do.
#[derive(Subcommand, Debug)]
pub enum Action {
    /// Attach an expansion: the body of `PUT /admin/v1/topics/{topic}/expansion` (JSON,
    /// from a file or `-` for stdin).
    Put {
        /// The topic.
        topic: String,
        /// The JSON body.
        #[arg(long, short)]
        file: String,
    },
    /// Print a topic's expansion.
    Get {
        /// The topic.
        topic: String,
        /// `value` or `key`.
        #[arg(long, default_value = "value")]
        source_column: String,
    },
    /// Drop a topic's expansion (its target table stays).
    Drop {
        /// The topic.
        topic: String,
        /// `value` or `key`.
        #[arg(long, default_value = "value")]
        source_column: String,
    },
    /// Add columns (Iceberg struct fields, a JSON array from a file or `-`) or drop them
    /// (by name).
    Columns {
        /// The topic.
        topic: String,
        /// `value` or `key`.
        #[arg(long, default_value = "value")]
        source_column: String,
        /// Fields to add: a JSON array of Iceberg struct fields.
        #[arg(long)]
        add: Option<String>,
        /// Names of top-level fields to drop.
        #[arg(long, num_args = 1..)]
        drop: Vec<String>,
    },
    /// Propose a schema from a sample of the topic's records; with `--target`, print a
    /// whole `put` body.
    Infer {
        /// The topic.
        topic: String,
        /// `value` or `key`.
        #[arg(long, default_value = "value")]
        source_column: String,
        /// Records to read per partition (the latest).
        #[arg(long, default_value_t = 1000)]
        sample: usize,
        /// `namespace.table`: print a `put` body into it.
        #[arg(long)]
        target: Option<String>,
        /// With `--target`: the body asks for the records already in the topic to be
        /// expanded too (without the flag, asked on the terminal when there is one).
        #[arg(long)]
        backfill: bool,
    },
    /// Expand, once, the records committed before the expansion was attached, and show
    /// the progress until done.
    Backfill {
        /// The topic.
        topic: String,
        /// `value` or `key`.
        #[arg(long, default_value = "value")]
        source_column: String,
        /// Ask for it and return without waiting.
        #[arg(long)]
        no_wait: bool,
    },
}

pub(crate) fn read_json(path: &str) -> anyhow::Result<Value> {
    let text = if path == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading stdin")?
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?
    };
    serde_json::from_str(&text).with_context(|| format!("{path} is not JSON"))
}

/// `s` as one segment of an admin API path (a topic, user or policy name).
pub(crate) fn path_segment(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// Runs one command's requests on a runtime of the calling thread.
pub(crate) fn block_on(
    f: impl std::future::Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(f)
}

/// Runs one action and prints its result.
pub fn run(server: &Server, action: Action) -> anyhow::Result<()> {
    block_on(run_async(server, action))
}

async fn run_async(server: &Server, action: Action) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let base = server.url.trim_end_matches('/');
    let token = token(&http, server).await?;
    let url = |topic: &str, tail: &str| {
        format!(
            "{base}/admin/v1/topics/{}/expansion{tail}",
            path_segment(topic)
        )
    };
    let (request, print) = match action {
        Action::Put { topic, file } => (http.put(url(&topic, "")).json(&read_json(&file)?), true),
        Action::Get {
            topic,
            source_column,
        } => (
            http.get(url(&topic, ""))
                .query(&[("source_column", source_column)]),
            true,
        ),
        Action::Drop {
            topic,
            source_column,
        } => (
            http.delete(url(&topic, ""))
                .query(&[("source_column", source_column)]),
            false,
        ),
        Action::Columns {
            topic,
            source_column,
            add,
            drop,
        } => {
            if add.is_none() && drop.is_empty() {
                bail!("nothing to change: give --add FILE or --drop NAME...");
            }
            let add = match add {
                Some(f) => read_json(&f)?,
                None => Value::Array(Vec::new()),
            };
            let body =
                serde_json::json!({"source_column": source_column, "add": add, "drop": drop});
            (http.post(url(&topic, "/columns")).json(&body), true)
        }
        Action::Infer {
            topic,
            source_column,
            sample,
            target,
            backfill,
        } => {
            let r = send(
                http.get(url(&topic, "/infer")).query(&[
                    ("source_column", source_column.clone()),
                    ("sample", sample.to_string()),
                ]),
                &token,
            )
            .await?;
            for d in r["disagreements"].as_array().into_iter().flatten() {
                eprintln!(
                    "warning: field {} has values of different kinds in the sample ({}): proposed as {}",
                    d["field"].as_str().unwrap_or("?"),
                    d["seen"],
                    d["proposed"].as_str().unwrap_or("string"),
                );
            }
            let out = match target {
                Some(t) => serde_json::json!({
                    "target": t,
                    "source_column": source_column,
                    "format": "json",
                    "schema": r["schema"],
                    "backfill": backfill || ask_backfill(&topic, r["sampled"].as_u64())?,
                }),
                None => r,
            };
            println!("{}", serde_json::to_string_pretty(&out)?);
            return Ok(());
        }
        Action::Backfill {
            topic,
            source_column,
            no_wait,
        } => {
            let query = [("source_column", source_column.clone())];
            let view = send(http.post(url(&topic, "/backfill")).query(&query), &token).await?;
            if !no_wait {
                progress(&http, &token, url(&topic, ""), &query, view).await?;
            }
            return Ok(());
        }
    };
    let r = send(request, &token).await?;
    if print {
        println!("{}", serde_json::to_string_pretty(&r)?);
    }
    Ok(())
}

/// Whether the `put` body should ask for a backfill: asked on the terminal (stderr and
/// stdin), so `infer --target ... > body.json` still asks; no when there is none.
fn ask_backfill(topic: &str, sampled: Option<u64>) -> anyhow::Result<bool> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() || sampled == Some(0) {
        return Ok(false);
    }
    eprint!("Also expand the records already in {topic} (backfill)? [y/N] ");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes" | "Yes"))
}

/// Records a backfill still has to read: per partition, from its cursor up to `since`.
fn backfill_left(view: &Value) -> Option<u64> {
    let since = view["since"].as_array()?;
    let done = view["backfilled"].as_array()?;
    Some(
        since
            .iter()
            .zip(done)
            .map(|(s, d)| {
                s.as_u64()
                    .unwrap_or(0)
                    .saturating_sub(d.as_u64().unwrap_or(0))
            })
            .sum(),
    )
}

/// Shows a backfill's progress (records left to read, polled from the expansion) until
/// it is done.
async fn progress(
    http: &reqwest::Client,
    token: &str,
    url: String,
    query: &[(&str, String)],
    mut view: Value,
) -> anyhow::Result<()> {
    let Some(total) = backfill_left(&view) else {
        bail!("the server reported no backfill for this expansion");
    };
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template("backfill {bar:40} {pos}/{len} records ({eta})")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    loop {
        let left = backfill_left(&view).unwrap_or(0);
        bar.set_position(total.saturating_sub(left));
        if left == 0 {
            bar.finish();
            eprintln!("backfill done: every earlier record is expanded");
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        view = send(http.get(&url).query(query), token).await?;
    }
}

/// Sends a request; its JSON body, or the server's error message as the error.
pub(crate) async fn send(request: reqwest::RequestBuilder, token: &str) -> anyhow::Result<Value> {
    let r = request
        .bearer_auth(token)
        .send()
        .await
        .context("the server did not answer")?;
    let status = r.status();
    let text = r.text().await.unwrap_or_default();
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if !status.is_success() {
        let message = body["error"]["message"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or(text);
        bail!("{status}: {message}");
    }
    Ok(body)
}

pub(crate) async fn token(http: &reqwest::Client, server: &Server) -> anyhow::Result<String> {
    let r = http
        .post(format!(
            "{}/iceberg/v1/oauth/tokens",
            server.url.trim_end_matches('/')
        ))
        .form(&[
            ("grant_type", "client_credentials"),
            ("client_id", server.access_key.as_str()),
            ("client_secret", server.secret_key.as_str()),
        ])
        .send()
        .await
        .with_context(|| format!("cannot reach {}", server.url))?;
    let status = r.status();
    let body: Value = r.json().await.unwrap_or(Value::Null);
    match body["access_token"].as_str() {
        Some(t) if status.is_success() => Ok(t.to_owned()),
        _ => bail!(
            "the server refused the credentials ({status}): {}",
            body["error_description"]
                .as_str()
                .unwrap_or("no reason given")
        ),
    }
}
