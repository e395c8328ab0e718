//! The admin API's function pipelines (`/admin/v1/pipelines`): what `eddy pipeline`
//! calls. Who may do what is decided by identity policies on the resource
//! `eddy:pipeline:<name>` with the actions `eddy:GetPipeline` (get, list),
//! `eddy:PutPipeline` (apply), `eddy:DeployPipeline` and `eddy:DeletePipeline`; the
//! administrator may do everything, anyone else what a policy allows (no statement:
//! refused, as in S3). A list shows the pipelines the user may get. Deploying also needs
//! what the pipeline will do on the deployer's behalf ([`may_run`]).
//!
//! | route | what |
//! |---|---|
//! | `GET /v1/pipelines` | every pipeline's summary |
//! | `GET /v1/pipelines/{name}` | one pipeline: status, revisions, definitions, cursors |
//! | `PUT /v1/pipelines/{name}` | store a definition (body: YAML or JSON naming the same pipeline) as a new revision |
//! | `POST /v1/pipelines/{name}/deploy` | run a revision (`?revision=N`, default the newest), after its checks |
//! | `DELETE /v1/pipelines/{name}` | stop and remove it (`Deleting` until the runtime has stopped it) |
//! | `GET /v1/pipelines/{name}/traces` | recent traces (`?limit=N`), or one trace's spans in tree order (`?trace=ID`) |

use std::sync::Arc;

use http::{Method, StatusCode};
use pipelines::{Pipeline, PipelineError, Pipelines, Runtime};
use serde_json::{Value, json as j};

use tables::rest::{Request, Response, json};
use tables::{TableError, TableResult};

/// The pipelines of a server and the runtime that runs them.
pub struct PipelineApi {
    /// The records.
    pub pipelines: Pipelines,
    /// Woken after each change, so it acts at once.
    pub runtime: Arc<Runtime>,
}

/// The one map from the pipelines domain's errors to the admin API's.
fn pipeline_error(e: PipelineError) -> TableError {
    match e {
        PipelineError::Invalid(_) | PipelineError::NotDeployable(_) => {
            TableError::BadRequest(e.to_string())
        }
        PipelineError::NotFound(_) => TableError::NotFound(e.to_string()),
        PipelineError::Conflict(_) => TableError::Conflict(e.to_string()),
        PipelineError::Corrupt(m) => TableError::Catalog(catalog::CatalogError::Corrupt(m)),
        PipelineError::Catalog(e) => TableError::Catalog(e),
    }
}

/// Whether `user` may do `action` on the pipeline `name`.
fn may(dir: &iam::Directory, user: &str, action: &str, name: &str) -> bool {
    if dir.is_admin(user) {
        return true;
    }
    let resource = format!("eddy:pipeline:{name}");
    let context = iam::Context::default();
    let req = iam::Request {
        action,
        resource: &resource,
        principal: Some(user),
        context: &context,
    };
    matches!(
        dir.identity_decision(Some(user), &req),
        iam::Decision::Allow
    )
}

fn must(dir: &iam::Directory, user: &str, action: &str, name: &str) -> TableResult<()> {
    if may(dir, user, action, name) {
        Ok(())
    } else {
        Err(TableError::Forbidden(format!(
            "{user} may not {action} on pipeline {name} (no policy allows it)"
        )))
    }
}

/// A deployed pipeline reads its triggers and writes events on its deployer's behalf, so
/// deploying needs what doing the same by hand would: `KafkaRead` on each topic
/// trigger's topic, `KafkaWrite` on the dead-letter topic, and
/// `s3:PutBucketNotification` on each bucket trigger's bucket (allowed by a policy, or
/// the bucket's owner's, as the S3 gateway decides).
async fn may_run(
    p: &pipelines::Pipelines,
    dir: &iam::Directory,
    user: &str,
    definition: &Pipeline,
) -> TableResult<()> {
    use pipelines::spec::TriggerKind;
    if dir.is_admin(user) {
        return Ok(());
    }
    for t in &definition.triggers {
        match (t.kind, &t.topic, &t.bucket) {
            (TriggerKind::Topic, Some(topic), _) => {
                tables::rest::must_topic(dir, "default", user, "KafkaRead", topic)?
            }
            (TriggerKind::Bucket, _, Some(bucket)) => {
                let resource = format!("arn:aws:s3:::{bucket}");
                let context = iam::Context::default();
                let req = iam::Request {
                    action: "s3:PutBucketNotification",
                    resource: &resource,
                    principal: Some(user),
                    context: &context,
                };
                let allowed = match dir.s3_decision(Some(user), Some(bucket), &req) {
                    iam::Decision::Deny => false,
                    iam::Decision::Allow => true,
                    iam::Decision::NoMatch => p
                        .catalog()
                        .s3()
                        .bucket(bucket)
                        .await?
                        .is_none_or(|b| b.owner == user),
                };
                if !allowed {
                    return Err(TableError::Forbidden(format!(
                        "{user} may not s3:PutBucketNotification on bucket {bucket}, which trigger {} needs",
                        t.name
                    )));
                }
            }
            _ => {}
        }
    }
    tables::rest::must_topic(
        dir,
        "default",
        user,
        "KafkaWrite",
        definition.dead_letter_topic(),
    )
}

/// Answers a pipelines request (`segs`: the path's segments below `/admin`).
pub async fn route(
    api: &PipelineApi,
    dir: &iam::Directory,
    user: &str,
    req: &Request,
    segs: &[&str],
) -> TableResult<Response> {
    let m = &req.method;
    let p = &api.pipelines;
    match segs {
        ["v1", "pipelines"] if m == Method::GET => {
            let mut out = Vec::new();
            for r in p.list().await.map_err(pipeline_error)? {
                if may(dir, user, "eddy:GetPipeline", &r.name) {
                    out.push(summary(&r));
                }
            }
            json(StatusCode::OK, &j!({ "pipelines": out }))
        }
        ["v1", "pipelines", name] if m == Method::GET => {
            must(dir, user, "eddy:GetPipeline", name)?;
            let r = p.get(name).await.map_err(pipeline_error)?;
            let cursors = p.cursors(name).await.map_err(pipeline_error)?;
            json(StatusCode::OK, &detail(&r, cursors))
        }
        ["v1", "pipelines", name, "traces"] if m == Method::GET => {
            must(dir, user, "eddy:GetPipeline", name)?;
            let limit = query_number(req, "limit")?.unwrap_or(20).clamp(1, 1000) as usize;
            let spans = p.spans(name, SPANS_READ).await.map_err(pipeline_error)?;
            match query_value(req, "trace") {
                Some(id) => {
                    let tree = pipelines::traces::tree(&spans, &id);
                    if tree.is_empty() {
                        return Err(TableError::NotFound(format!(
                            "no recent trace {id} in pipeline {name}"
                        )));
                    }
                    let spans: Vec<Value> = tree
                        .into_iter()
                        .map(|(depth, s)| {
                            let mut v = serde_json::to_value(&s).unwrap_or(Value::Null);
                            v["depth"] = j!(depth);
                            v
                        })
                        .collect();
                    json(StatusCode::OK, &j!({ "trace_id": id, "spans": spans }))
                }
                None => {
                    let mut traces = pipelines::traces::summarize(&spans);
                    traces.truncate(limit);
                    json(StatusCode::OK, &j!({ "traces": traces }))
                }
            }
        }
        ["v1", "pipelines", name] if m == Method::PUT => {
            must(dir, user, "eddy:PutPipeline", name)?;
            let text = std::str::from_utf8(&req.body)
                .map_err(|_| TableError::BadRequest("the definition is not UTF-8".into()))?;
            let parsed = Pipeline::parse(text).map_err(pipeline_error)?;
            if parsed.name != *name {
                return Err(TableError::BadRequest(format!(
                    "the definition names pipeline {}, not {name}",
                    parsed.name
                )));
            }
            let applied = p.apply(text).await.map_err(pipeline_error)?;
            api.runtime.wake();
            let status = if applied.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            json(
                status,
                &j!({
                    "name": name,
                    "revision": applied.revision,
                    "created": applied.created,
                    "unchanged": applied.unchanged,
                }),
            )
        }
        ["v1", "pipelines", name, "deploy"] if m == Method::POST => {
            must(dir, user, "eddy:DeployPipeline", name)?;
            let revision = query_number(req, "revision")?;
            let (number, definition) =
                p.deployable(name, revision).await.map_err(pipeline_error)?;
            may_run(p, dir, user, &definition).await?;
            let r = p.deploy(name, Some(number)).await.map_err(pipeline_error)?;
            api.runtime.wake();
            json(StatusCode::OK, &summary(&r))
        }
        ["v1", "pipelines", name] if m == Method::DELETE => {
            must(dir, user, "eddy:DeletePipeline", name)?;
            let r = p.delete(name).await.map_err(pipeline_error)?;
            api.runtime.wake();
            json(StatusCode::ACCEPTED, &summary(&r))
        }
        _ => Err(TableError::NotFound(format!(
            "no admin route for {m} /admin{}",
            req.path
        ))),
    }
}

/// Spans read for a traces request (the newest, across the traces topic's partitions).
const SPANS_READ: usize = 5000;

/// A query parameter.
fn query_value(req: &Request, name: &str) -> Option<String> {
    let q = req.query.as_ref()?;
    form_urlencoded::parse(q.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// A numeric query parameter (`?revision=N`, `?limit=N`).
fn query_number(req: &Request, name: &str) -> TableResult<Option<u64>> {
    query_value(req, name)
        .map(|v| {
            v.parse()
                .map_err(|_| TableError::BadRequest(format!("{name} {v:?} is not a number")))
        })
        .transpose()
}

fn time(ms: i64) -> String {
    notify::record::event_time(ms)
}

fn summary(r: &catalog::PipelineRecord) -> Value {
    j!({
        "name": r.name,
        "status": r.status.name(),
        "reason": r.reason,
        "deployed_revision": r.deployed,
        "latest_revision": r.latest(),
        "status_time": time(r.status_ms),
    })
}

fn detail(r: &catalog::PipelineRecord, cursors: Vec<(String, u32, u64)>) -> Value {
    let definition = |n: Option<u64>| {
        n.and_then(|n| r.revision(n))
            .and_then(|rev| serde_json::from_str::<Value>(&rev.document).ok())
    };
    let mut v = summary(r);
    v["revisions"] = r
        .revisions
        .iter()
        .map(|rev| j!({ "number": rev.number, "created": time(rev.created_ms) }))
        .collect();
    v["definition"] = definition(Some(r.latest())).unwrap_or(Value::Null);
    v["deployed_definition"] = definition(r.deployed).unwrap_or(Value::Null);
    v["cursors"] = cursors
        .into_iter()
        .map(|(cursor, partition, next)| j!({ "cursor": cursor, "partition": partition, "next": next }))
        .collect();
    v
}
