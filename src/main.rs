//! `eddy`: an S3 object store with an integrated Kafka-compatible event broker.

mod background;
mod cluster;
mod config;
mod expansion_cli;
mod heal;
mod http;
mod hyper_serve;
mod iam_cli;
mod kafka_serving;
mod listen;
mod metrics;
mod node_catalog;
mod s3;
mod scrub;
mod serve;

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
    #[command(subcommand)]
    command: Command,
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
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
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
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eddy: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
