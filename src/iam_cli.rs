//! `eddy user` and `eddy policy`: users and identity policies through the admin API of a
//! running server (`/admin/v1/users`, `/admin/v1/policies`), as the administrator. The
//! server keeps them in its catalog; a Kafka password becomes SCRAM credentials there
//! and is never stored.

use anyhow::bail;
use clap::Subcommand;
use serde_json::{Value, json};

use crate::expansion_cli::{Server, block_on, path_segment, read_json, send, token};

/// `eddy user` actions.
#[derive(Subcommand, Debug)]
pub enum UserAction {
    /// List the users.
    List,
    /// Make a user, or change one's S3 secret or Kafka password.
    Put {
        /// The name: the S3 access key and the Kafka user name.
        name: String,
        /// The user's S3 secret key (at least 8 characters); `--secret-key` is the
        /// administrator's own.
        #[arg(long, env = "EDDY_USER_S3_SECRET", hide_env_values = true)]
        s3_secret: Option<String>,
        /// The Kafka (SASL) password.
        #[arg(long, env = "EDDY_USER_KAFKA_PASSWORD", hide_env_values = true)]
        kafka_password: Option<String>,
    },
    /// Remove a user.
    Delete {
        /// The name.
        name: String,
    },
}

/// `eddy policy` actions.
#[derive(Subcommand, Debug)]
pub enum PolicyAction {
    /// List the policies with their documents and attachments.
    List,
    /// Print one policy.
    Get {
        /// The name.
        name: String,
    },
    /// Make or replace a policy from an IAM JSON document (a file, or `-` for stdin).
    Put {
        /// The name.
        name: String,
        /// The document.
        #[arg(long, short)]
        file: String,
        /// Attach it to these principals (user names, `ANONYMOUS`, `*`), replacing its
        /// attachments; without it they are kept.
        #[arg(long, num_args = 1..)]
        attach: Option<Vec<String>>,
    },
    /// Remove a policy.
    Delete {
        /// The name.
        name: String,
    },
    /// Attach a policy to a principal (a user name, `ANONYMOUS` or `*` for everyone).
    Attach {
        /// The policy.
        name: String,
        /// The principal.
        principal: String,
    },
    /// Detach a policy from a principal.
    Detach {
        /// The policy.
        name: String,
        /// The principal.
        principal: String,
    },
}

fn print(v: &Value) -> anyhow::Result<()> {
    if !v.is_null() {
        println!("{}", serde_json::to_string_pretty(v)?);
    }
    Ok(())
}

/// Runs one `eddy user` action.
pub fn user(server: &Server, action: UserAction) -> anyhow::Result<()> {
    block_on(async move {
        let http = reqwest::Client::new();
        let token = token(&http, server).await?;
        let base = format!("{}/admin/v1/users", server.url.trim_end_matches('/'));
        let r = match action {
            UserAction::List => send(http.get(&base), &token).await?,
            UserAction::Put {
                name,
                s3_secret,
                kafka_password,
            } => {
                if s3_secret.is_none() && kafka_password.is_none() {
                    bail!("nothing to set: give --s3-secret and/or --kafka-password");
                }
                let body = json!({"secret_key": s3_secret, "kafka_password": kafka_password});
                send(
                    http.put(format!("{base}/{}", path_segment(&name)))
                        .json(&body),
                    &token,
                )
                .await?
            }
            UserAction::Delete { name } => {
                send(
                    http.delete(format!("{base}/{}", path_segment(&name))),
                    &token,
                )
                .await?
            }
        };
        print(&r)
    })
}

/// Runs one `eddy policy` action.
pub fn policy(server: &Server, action: PolicyAction) -> anyhow::Result<()> {
    block_on(async move {
        let http = reqwest::Client::new();
        let token = token(&http, server).await?;
        let base = format!("{}/admin/v1/policies", server.url.trim_end_matches('/'));
        let one = |name: &str| format!("{base}/{}", path_segment(name));
        let r = match action {
            PolicyAction::List => send(http.get(&base), &token).await?,
            PolicyAction::Get { name } => send(http.get(one(&name)), &token).await?,
            PolicyAction::Put { name, file, attach } => {
                let body = json!({"document": read_json(&file)?, "attached": attach});
                send(http.put(one(&name)).json(&body), &token).await?
            }
            PolicyAction::Delete { name } => send(http.delete(one(&name)), &token).await?,
            PolicyAction::Attach { name, principal } => {
                let url = format!("{}/attachments/{}", one(&name), path_segment(&principal));
                send(http.put(url), &token).await?
            }
            PolicyAction::Detach { name, principal } => {
                let url = format!("{}/attachments/{}", one(&name), path_segment(&principal));
                send(http.delete(url), &token).await?
            }
        };
        print(&r)
    })
}
