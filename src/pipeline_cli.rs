//! `eddy pipeline`: function pipelines through the admin API of a running server
//! (`/admin/v1/pipelines`): store a definition as a new revision, deploy it, see its
//! status, list, delete.

use anyhow::{Context, bail};
use clap::{Subcommand, ValueEnum};
use serde_json::Value;

use crate::expansion_cli::{Server, block_on, path_segment, send, token};

/// Output formats of `eddy pipeline get`.
#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum Output {
    /// A summary for people.
    Text,
    /// The server's answer as YAML.
    Yaml,
    /// The server's answer as JSON.
    Json,
}

/// `eddy pipeline` actions.
#[derive(Subcommand, Debug)]
pub enum PipelineAction {
    /// Store a definition (YAML or JSON) as the pipeline's newest revision; a new
    /// pipeline is a Draft, and the running revision stays until the next deploy.
    Apply {
        /// The definition file (`-` reads standard input).
        #[arg(short = 'f', long = "file")]
        file: String,
    },
    /// Check a revision and run it (default: the newest).
    Deploy {
        /// The pipeline.
        name: String,
        /// The revision.
        #[arg(long)]
        revision: Option<u64>,
        /// Return at once instead of waiting until it is Ready (or in Error).
        #[arg(long)]
        no_wait: bool,
    },
    /// Show a pipeline: status and reason, deployed and newest revision, cursors.
    Get {
        /// The pipeline.
        name: String,
        /// Output format.
        #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
        output: Output,
    },
    /// List the pipelines.
    List,
    /// Recent traces of a pipeline's events (status, duration), or one trace's spans as a
    /// tree.
    Traces {
        /// The pipeline.
        name: String,
        /// A trace id: show its spans.
        trace: Option<String>,
        /// How many recent traces.
        #[arg(long, default_value_t = 20)]
        limit: u32,
        /// Print the server's answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop a pipeline and remove it (its topics stay).
    Delete {
        /// The pipeline.
        name: String,
    },
}

/// Runs one action and prints what it did.
pub fn run(server: &Server, action: PipelineAction) -> anyhow::Result<()> {
    block_on(run_async(server, action))
}

async fn run_async(server: &Server, action: PipelineAction) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let base = format!("{}/admin/v1/pipelines", server.url.trim_end_matches('/'));
    let token = token(&http, server).await?;
    let one = |name: &str| format!("{base}/{}", path_segment(name));
    match action {
        PipelineAction::Apply { file } => {
            let text = if file == "-" {
                std::io::read_to_string(std::io::stdin()).context("reading standard input")?
            } else {
                std::fs::read_to_string(&file).with_context(|| format!("reading {file}"))?
            };
            let name = definition_name(&text)?;
            let r = send(http.put(one(&name)).body(text), &token).await?;
            let rev = &r["revision"];
            if r["unchanged"].as_bool() == Some(true) {
                println!("pipeline {name} unchanged (revision {rev})");
            } else if r["created"].as_bool() == Some(true) {
                println!("pipeline {name} created (revision {rev}, Draft)");
            } else {
                println!("pipeline {name} revision {rev} stored");
            }
        }
        PipelineAction::Deploy {
            name,
            revision,
            no_wait,
        } => {
            let mut req = http.post(format!("{}/deploy", one(&name)));
            if let Some(r) = revision {
                req = req.query(&[("revision", r)]);
            }
            let r = send(req, &token).await?;
            let rev = r["deployed_revision"].clone();
            if no_wait {
                println!("pipeline {name} revision {rev} deploying");
                return Ok(());
            }
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
            loop {
                let g = send(http.get(one(&name)), &token).await?;
                match g["status"].as_str() {
                    Some("Ready") => {
                        println!("pipeline {name} revision {rev} Ready");
                        return Ok(());
                    }
                    Some("Error") => bail!(
                        "pipeline {name} revision {rev} is in Error: {}",
                        g["reason"].as_str().unwrap_or("")
                    ),
                    _ if std::time::Instant::now() > deadline => {
                        bail!("pipeline {name} is still {} after 120 s", g["status"])
                    }
                    _ => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
                }
            }
        }
        PipelineAction::Get { name, output } => {
            let g = send(http.get(one(&name)), &token).await?;
            match output {
                Output::Json => println!("{}", serde_json::to_string_pretty(&g)?),
                Output::Yaml => print!("{}", serde_norway::to_string(&g)?),
                Output::Text => describe(&g),
            }
        }
        PipelineAction::List => {
            let l = send(http.get(&base), &token).await?;
            println!(
                "{:<24} {:<11} {:>8} {:>6}  REASON",
                "NAME", "STATUS", "DEPLOYED", "LATEST"
            );
            for p in l["pipelines"].as_array().into_iter().flatten() {
                println!(
                    "{:<24} {:<11} {:>8} {:>6}  {}",
                    p["name"].as_str().unwrap_or(""),
                    p["status"].as_str().unwrap_or(""),
                    p["deployed_revision"]
                        .as_u64()
                        .map_or("-".into(), |n| n.to_string()),
                    p["latest_revision"],
                    first_line(p["reason"].as_str().unwrap_or("")),
                );
            }
        }
        PipelineAction::Traces {
            name,
            trace,
            limit,
            json,
        } => {
            let mut req = http.get(format!("{}/traces", one(&name)));
            req = match &trace {
                Some(t) => req.query(&[("trace", t.as_str())]),
                None => req.query(&[("limit", limit)]),
            };
            let r = send(req, &token).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else if trace.is_some() {
                for s in r["spans"].as_array().into_iter().flatten() {
                    let depth = s["depth"].as_u64().unwrap_or(0) as usize;
                    let code = s["code"]
                        .as_str()
                        .map_or(String::new(), |c| format!(" ({c})"));
                    let attempt = match s["attempt"].as_u64() {
                        Some(n) if n > 0 => format!(" attempt {n}"),
                        _ => String::new(),
                    };
                    println!(
                        "{}{}{attempt}: {}{code}, {:.1} ms",
                        "  ".repeat(depth),
                        s["name"].as_str().unwrap_or(""),
                        s["status"].as_str().unwrap_or(""),
                        s["duration_ms"].as_f64().unwrap_or(0.0)
                    );
                }
            } else {
                println!(
                    "{:<32}  {:<6} {:>10} {:>5}  EVENT",
                    "TRACE", "STATUS", "MS", "SPANS"
                );
                for t in r["traces"].as_array().into_iter().flatten() {
                    println!(
                        "{:<32}  {:<6} {:>10.1} {:>5}  {}",
                        t["trace_id"].as_str().unwrap_or(""),
                        t["status"].as_str().unwrap_or(""),
                        t["duration_ms"].as_f64().unwrap_or(0.0),
                        t["spans"],
                        t["event_id"].as_str().unwrap_or("")
                    );
                }
            }
        }
        PipelineAction::Delete { name } => {
            send(http.delete(one(&name)), &token).await?;
            // The runtime stops it, then removes the record.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            loop {
                let r = http.get(one(&name)).bearer_auth(&token).send().await?;
                if r.status() == reqwest::StatusCode::NOT_FOUND {
                    println!("pipeline {name} deleted");
                    return Ok(());
                }
                if std::time::Instant::now() > deadline {
                    bail!("pipeline {name} is still Deleting after 60 s");
                }
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
        }
    }
    Ok(())
}

/// The pipeline a definition names (the server checks the rest).
fn definition_name(text: &str) -> anyhow::Result<String> {
    let v: Value = serde_norway::from_str(text).context("the definition is not YAML or JSON")?;
    match v["name"].as_str() {
        Some(n) => Ok(n.to_owned()),
        None => bail!("the definition has no name"),
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn describe(g: &Value) {
    let s = |k: &str| g[k].as_str().unwrap_or("").to_owned();
    println!("name:     {}", s("name"));
    println!("status:   {} (since {})", s("status"), s("status_time"));
    if !s("reason").is_empty() {
        println!("reason:\n  {}", s("reason").replace('\n', "\n  "));
    }
    println!(
        "revision: {} deployed, {} latest",
        g["deployed_revision"]
            .as_u64()
            .map_or("none".into(), |n| n.to_string()),
        g["latest_revision"]
    );
    let cursors = g["cursors"].as_array().cloned().unwrap_or_default();
    if !cursors.is_empty() {
        println!("cursors:");
        for c in cursors {
            println!(
                "  {} partition {}: next {}",
                c["cursor"].as_str().unwrap_or(""),
                c["partition"],
                c["next"]
            );
        }
    }
}
