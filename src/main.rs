//! `eddy`: an S3 object store with an integrated Kafka-compatible event broker.

mod audit;
mod background;
mod cluster;
mod config;
mod console_parts;
mod expansion_cli;
mod expect_continue;
mod heal;
mod http;
mod hyper_serve;
mod iam_cli;
mod kafka_serving;
mod listen;
mod metrics;
mod node_catalog;
mod pipeline_cli;
mod preflight;
mod s3;
mod scrub;
mod serve;
mod tables_cli;
mod usage;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    name = "eddy",
    version,
    about = "S3 object store with an integrated Kafka-compatible event broker"
)]
struct Cli {
    /// Log filter (tracing's EnvFilter syntax), e.g. `info` or `eddy=debug,catalog=debug`.
    #[arg(long, env = "EDDY_LOG", default_value = "info", global = true)]
    log: String,
    /// Log lines as `text` (colored only when stderr is a terminal) or `json` (one
    /// object per line, with the current span's fields, e.g. a request's id, and every
    /// enclosing span's, e.g. the connection's client).
    #[arg(long, env = "EDDY_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

// Parsed once at start-up: the size of the serve flags does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Run the S3, Kafka and HTTP endpoints over the erasure-coded storage.
    Serve(config::ServeArgs),
    /// Verify every block and rebuild missing or corrupt shards (server stopped).
    Heal {
        #[command(flatten)]
        storage: config::StorageArgs,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Manage a topic's blob expansion on a running server (its admin API).
    Expansion {
        #[command(flatten)]
        server: expansion_cli::Server,
        #[command(subcommand)]
        action: expansion_cli::Action,
    },
    /// Manage users (S3 keys, Kafka passwords) on a running server, as the administrator.
    User {
        #[command(flatten)]
        server: expansion_cli::Server,
        #[command(subcommand)]
        action: iam_cli::UserAction,
    },
    /// Manage identity policies on a running server, as the administrator.
    Policy {
        #[command(flatten)]
        server: expansion_cli::Server,
        #[command(subcommand)]
        action: iam_cli::PolicyAction,
    },
    /// Check topic tables, and rebuild one that lost files from the log, on a running
    /// server.
    Tables {
        #[command(flatten)]
        server: expansion_cli::Server,
        #[command(subcommand)]
        action: tables_cli::TablesAction,
    },
    /// Function pipelines on a running server: apply a definition, deploy it, see its
    /// status, list, delete.
    Pipeline {
        #[command(flatten)]
        server: expansion_cli::Server,
        #[command(subcommand)]
        action: pipeline_cli::PipelineAction,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // s3s logs every refused request (bad signature, missing key...) at error level;
    // the gateway logs its own internal failures, so s3s stays quiet unless asked for.
    let spec = if cli.log.contains("s3s") {
        cli.log.clone()
    } else {
        format!("{},s3s=off", cli.log)
    };
    let filter = EnvFilter::try_new(&spec).unwrap_or_else(|_| EnvFilter::new("info,s3s=off"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match cli.log_format {
        // Escape codes only for a terminal: a file or a collector gets plain text.
        LogFormat::Text => logs
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => logs
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(true)
            .init(),
    }
    let result = match cli.command {
        Command::Serve(args) => args.resolve().and_then(|config| {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?
                .block_on(serve::run(config))
        }),
        Command::Heal { storage, json } => storage.resolve().and_then(|c| heal::run(&c, json)),
        Command::Expansion { server, action } => expansion_cli::run(&server, action),
        Command::User { server, action } => iam_cli::user(&server, action),
        Command::Policy { server, action } => iam_cli::policy(&server, action),
        Command::Tables { server, action } => tables_cli::run(&server, action),
        Command::Pipeline { server, action } => pipeline_cli::run(&server, action),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eddy: {}", report(&e));
            std::process::ExitCode::FAILURE
        }
    }
}

/// The error and its causes, `what: why: why`, each cause once. Errors of this crate
/// leave their cause out of their message and the chain supplies it; some of the other
/// crates' print their source in their own message too (`"{path}: {source}"`), so a
/// cause whose text the line already ends with is not printed again.
fn report(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.is_empty() {
            line = text;
        } else if !line.ends_with(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::report;
    use anyhow::Context;

    #[test]
    fn each_cause_is_printed_once() {
        let io = std::io::Error::from_raw_os_error(20);
        // The storage error prints its source in its message and returns it as source().
        let storage = storage::StorageError::io("create drive", "/srv/f/drive-0", io);
        let e = Err::<(), _>(catalog::CatalogError::from(storage))
            .context("opening the catalog")
            .unwrap_err();
        assert_eq!(
            report(&e),
            "opening the catalog: create drive /srv/f/drive-0: Not a directory (os error 20)"
        );
        // A message without its cause gets it from the chain.
        let e = Err::<(), _>(std::io::Error::from_raw_os_error(2))
            .context("reading config file eddy.toml")
            .unwrap_err();
        assert_eq!(
            report(&e),
            "reading config file eddy.toml: No such file or directory (os error 2)"
        );
    }
}
