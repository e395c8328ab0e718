//! `eddy tables`: check and repair topic tables through the admin API of a running server
//! (`/admin/v1/topics/{topic}/table`). A repair rebuilds a table that lost files from the
//! log, which stays the source of truth; the server does the work, so its tabler never
//! races it.

use anyhow::bail;
use clap::Subcommand;
use serde_json::Value;

use crate::expansion_cli::{Server, block_on, path_segment, send, token};

/// `eddy tables` actions.
#[derive(Subcommand, Debug)]
pub enum TablesAction {
    /// Check that every file of each topic's table is there (exit status 1 if one is not).
    Check {
        /// The topics.
        #[arg(required = true)]
        topics: Vec<String>,
        /// Print the server's reports as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Rebuild each topic's table from the log if it lost files, then bring it up to date.
    Repair {
        /// The topics.
        #[arg(required = true)]
        topics: Vec<String>,
        /// Print the server's reports as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs one action and prints what it found.
pub fn run(server: &Server, action: TablesAction) -> anyhow::Result<()> {
    block_on(run_async(server, action))
}

async fn run_async(server: &Server, action: TablesAction) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let base = server.url.trim_end_matches('/').to_owned();
    let token = token(&http, server).await?;
    let url = |topic: &str, tail: &str| {
        format!("{base}/admin/v1/topics/{}/table{tail}", path_segment(topic))
    };
    let mut broken = Vec::new();
    match action {
        TablesAction::Check { topics, json } => {
            for topic in topics {
                let check = send(http.get(url(&topic, "")), &token).await?;
                if !check["missing"].as_array().is_none_or(Vec::is_empty) {
                    broken.push(topic.clone());
                }
                print(&check, json, || describe_check(&topic, &check))?;
            }
        }
        TablesAction::Repair { topics, json } => {
            for topic in topics {
                eprintln!("repairing the table of {topic}...");
                let repair = send(http.post(url(&topic, "/repair")), &token).await?;
                print(&repair, json, || {
                    let mut s = describe_check(&topic, &repair["check"]);
                    if repair["rebuilt"].as_bool() == Some(true) {
                        s.push_str(&format!(
                            "\n{topic}: rebuilt from the log (generation {}, offsets {})",
                            repair["generation"], repair["tabled"]
                        ));
                    } else {
                        s.push_str(&format!("\n{topic}: nothing to rebuild; up to date"));
                    }
                    s
                })?;
            }
        }
    }
    if !broken.is_empty() {
        bail!(
            "files missing in the table of {}: `eddy tables repair` rebuilds it from the log",
            broken.join(", ")
        );
    }
    Ok(())
}

fn print(report: &Value, json: bool, text: impl FnOnce() -> String) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        println!("{}", text());
    }
    Ok(())
}

fn describe_check(topic: &str, check: &Value) -> String {
    if check["exists"].as_bool() != Some(true) {
        return format!("{topic}: no table yet (none before the first snapshot)");
    }
    let missing: Vec<&str> = check["missing"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let checked = &check["files_checked"];
    if missing.is_empty() {
        format!("{topic}: intact ({checked} files checked)")
    } else {
        let mut s = format!("{topic}: {} of {checked} files missing:", missing.len());
        for m in missing {
            s.push_str("\n  ");
            s.push_str(m);
        }
        s
    }
}
