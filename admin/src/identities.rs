//! The admin API's users and policies (`/admin/v1/users`, `/admin/v1/policies`), for the
//! administrator only (any other user gets 403): what `eddy user` and `eddy policy` call.
//! Changes go through the directory, so they are stored in the catalog and take effect
//! at once on every front end.
//!
//! | route | what |
//! |---|---|
//! | `GET /v1/users` | every user: name, S3 access, SCRAM mechanisms and iterations, whether the config file made it |
//! | `PUT /v1/users/{name}` | make or change a user (body: `{"secret_key"?, "kafka_password"?}`) |
//! | `DELETE /v1/users/{name}` | remove a user (and detach it from every policy) |
//! | `GET /v1/policies` | every policy with its document and attachments |
//! | `GET /v1/policies/{name}` | one policy |
//! | `PUT /v1/policies/{name}` | make or replace one (body: `{"document": {...}, "attached"?: [...]}`) |
//! | `DELETE /v1/policies/{name}` | remove one |
//! | `PUT`/`DELETE /v1/policies/{name}/attachments/{principal}` | attach or detach (a user, `ANONYMOUS` or `*`) |

use http::{Method, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json as j};

use tables::rest::{Request, Response, json, no_content};
use tables::{TableError, TableResult};

use crate::body_json as body;

/// Body of `PUT /v1/users/{name}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PutUser {
    secret_key: Option<String>,
    kafka_password: Option<String>,
}

/// Body of `PUT /v1/policies/{name}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PutPolicy {
    document: Value,
    attached: Option<Vec<String>>,
}

fn iam_error(e: iam::IamError) -> TableError {
    match e {
        iam::IamError::Catalog(e) => TableError::Catalog(e),
        iam::IamError::NoSuchUser(_) | iam::IamError::NoSuchPolicy(_) => {
            TableError::NotFound(e.to_string())
        }
        iam::IamError::MalformedPolicy(_) | iam::IamError::Invalid(_) => {
            TableError::BadRequest(e.to_string())
        }
        iam::IamError::FromConfig(_) => TableError::Conflict(e.to_string()),
    }
}

fn user_json(u: &catalog::UserRecord) -> Value {
    j!({
        "name": u.name,
        "s3": u.s3_secret.is_some(),
        "scram": u.scram.iter().map(|c| j!({
            "mechanism": match c.mechanism {
                catalog::ScramMechanism::Sha256 => "SCRAM-SHA-256",
                catalog::ScramMechanism::Sha512 => "SCRAM-SHA-512",
            },
            "iterations": c.iterations,
        })).collect::<Vec<_>>(),
        "from_config": u.from_config,
        "admin": false,
    })
}

/// A named policy as the API shows it (404 when there is none).
fn named_policy(dir: &iam::Directory, name: &str) -> TableResult<Response> {
    match dir.policy(name) {
        Some(p) => json(StatusCode::OK, &policy_json(&p)),
        None => Err(TableError::NotFound(format!("no policy named {name:?}"))),
    }
}

fn policy_json(p: &iam::NamedPolicy) -> Value {
    let document: Value = serde_json::from_str(&p.record.document)
        .unwrap_or(Value::String(p.record.document.clone()));
    j!({"name": p.record.name, "document": document, "attached": p.record.attached})
}

/// Answers an admin request about users and policies (`segs`: the path's segments
/// below `/admin`).
pub async fn route(
    dir: &iam::Directory,
    user: &str,
    req: &Request,
    segs: &[&str],
) -> TableResult<Response> {
    if !dir.is_admin(user) {
        return Err(TableError::Forbidden(format!(
            "{user} is not the administrator; users and policies are managed by {}",
            dir.admin()
        )));
    }
    let m = &req.method;
    match segs {
        ["v1", "users"] if m == Method::GET => {
            let users: Vec<Value> = dir
                .users()
                .iter()
                .map(|u| {
                    let mut v = user_json(u);
                    v["admin"] = Value::Bool(dir.is_admin(&u.name));
                    v
                })
                .collect();
            json(StatusCode::OK, &j!({"users": users}))
        }
        ["v1", "users", name] if m == Method::PUT => {
            let b = body::<PutUser>(req)?;
            let u = dir.put_user(name, b.secret_key, b.kafka_password.as_deref());
            json(StatusCode::OK, &user_json(&u.await.map_err(iam_error)?))
        }
        ["v1", "users", name] if m == Method::DELETE => dir
            .delete_user(name)
            .await
            .map(|()| no_content())
            .map_err(iam_error),
        ["v1", "policies"] if m == Method::GET => {
            let all: Vec<Value> = dir.policies().iter().map(|p| policy_json(p)).collect();
            json(StatusCode::OK, &j!({"policies": all}))
        }
        ["v1", "policies", name] if m == Method::GET => named_policy(dir, name),
        ["v1", "policies", name] if m == Method::PUT => {
            let b = body::<PutPolicy>(req)?;
            let text = match b.document {
                Value::String(s) => s,
                other => other.to_string(),
            };
            let put = dir.put_policy(name, &text, b.attached);
            put.await.map_err(iam_error)?;
            named_policy(dir, name)
        }
        ["v1", "policies", name] if m == Method::DELETE => dir
            .delete_policy(name)
            .await
            .map(|()| no_content())
            .map_err(iam_error),
        ["v1", "policies", name, "attachments", principal]
            if m == Method::PUT || m == Method::DELETE =>
        {
            dir.attach(name, principal, m == Method::PUT)
                .await
                .map(|()| no_content())
                .map_err(iam_error)
        }
        _ => Err(TableError::NotFound(format!(
            "no admin route {} {}",
            req.method, req.path
        ))),
    }
}
