//! The registry's routes: a request's method and path segments to its handler.

use http::Method;
use serde_json::json;

use crate::auth::Caller;
use crate::config::Setting;
use crate::error::{RegistryError, RegistryResult};
use crate::store::Store;
use crate::{Request, Response, compatibility, config, register, schemas, subjects};

/// The query parameters of a request.
struct Query(Vec<(String, String)>);

impl Query {
    fn of(req: &Request) -> Self {
        Query(
            form_urlencoded::parse(req.query.as_deref().unwrap_or("").as_bytes())
                .into_owned()
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn flag(&self, name: &str) -> bool {
        self.get(name)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    }
}

/// A path's segments, percent-decoded (a subject may hold `/` as `%2F`).
fn segments(path: &str) -> Vec<String> {
    path.trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect()
}

/// The body of a settings PUT: `{"compatibility": ..}` or `{"mode": ..}`.
fn setting_value(setting: Setting, body: &[u8]) -> RegistryResult<String> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| RegistryError::BadRequest(format!("Unrecognized request body: {e}")))?;
    let field = match setting {
        Setting::Compatibility => "compatibility",
        Setting::Mode => "mode",
    };
    value
        .get(field)
        .or_else(|| {
            value
                .get("compatibilityLevel")
                .filter(|_| setting == Setting::Compatibility)
        })
        .and_then(|v| v.as_str())
        .map(str::to_owned)
        .ok_or_else(|| RegistryError::BadRequest(format!("the body needs a \"{field}\" field")))
}

/// Answers `req` for `caller`.
pub async fn route(store: &Store, caller: &Caller<'_>, req: &Request) -> RegistryResult<Response> {
    let q = Query::of(req);
    let segs = segments(&req.path);
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let deleted = q.flag("deleted");
    let m = &req.method;
    let value = match (m, segs.as_slice()) {
        (&Method::GET, []) => json!({}),
        (&Method::GET, ["subjects"]) => {
            subjects::list(store, caller, q.get("subjectPrefix").unwrap_or(""), deleted).await?
        }
        (&Method::GET, ["subjects", s, "versions"]) => {
            subjects::version_numbers(store, caller, s, deleted).await?
        }
        (&Method::POST, ["subjects", s, "versions"]) => {
            register::register(store, caller, s, &req.body).await?
        }
        (&Method::GET, ["subjects", s, "versions", v]) => {
            subjects::version(store, caller, s, v, deleted, false, q.get("format")).await?
        }
        (&Method::GET, ["subjects", s, "versions", v, "schema"]) => {
            subjects::version(store, caller, s, v, deleted, true, q.get("format")).await?
        }
        (&Method::GET, ["subjects", s, "versions", v, "referencedby"]) => {
            subjects::referenced_by(store, caller, s, v).await?
        }
        (&Method::DELETE, ["subjects", s, "versions", v]) => {
            subjects::delete_version(store, caller, s, v, q.flag("permanent")).await?
        }
        (&Method::POST, ["subjects", s]) => {
            subjects::lookup(store, caller, s, &req.body, deleted).await?
        }
        (&Method::DELETE, ["subjects", s]) => {
            subjects::delete_subject(store, caller, s, q.flag("permanent")).await?
        }
        (&Method::GET, ["schemas"]) => {
            schemas::list(
                store,
                caller,
                q.get("subjectPrefix").unwrap_or(""),
                deleted,
                q.flag("latestOnly"),
            )
            .await?
        }
        (&Method::GET, ["schemas", "types"]) => schemas::types(),
        (&Method::GET, ["schemas", "ids", id]) => {
            schemas::by_id(store, caller, id, q.get("format")).await?
        }
        (&Method::GET, ["schemas", "ids", id, "schema"]) => {
            schemas::raw_by_id(store, caller, id).await?
        }
        (&Method::GET, ["schemas", "ids", id, "subjects"]) => {
            schemas::subjects_of(store, caller, id, deleted).await?
        }
        (&Method::GET, ["schemas", "ids", id, "versions"]) => {
            schemas::versions_of(store, caller, id, deleted).await?
        }
        (&Method::GET, [kind @ ("config" | "mode"), rest @ ..]) if rest.len() <= 1 => {
            let setting = setting_of(kind);
            config::get(
                store,
                caller,
                setting,
                rest.first().copied(),
                q.flag("defaultToGlobal"),
            )
            .await?
        }
        (&Method::PUT, [kind @ ("config" | "mode"), rest @ ..]) if rest.len() <= 1 => {
            let setting = setting_of(kind);
            let v = setting_value(setting, &req.body)?;
            config::put(
                store,
                caller,
                setting,
                rest.first().copied(),
                Some(&v),
                q.flag("force"),
            )
            .await?
        }
        (&Method::DELETE, [kind @ ("config" | "mode"), rest @ ..]) if rest.len() <= 1 => {
            config::put(
                store,
                caller,
                setting_of(kind),
                rest.first().copied(),
                None,
                false,
            )
            .await?
        }
        (&Method::POST, ["compatibility", "subjects", s, "versions"]) => {
            compatibility::check(store, caller, s, None, &req.body, q.flag("verbose")).await?
        }
        (&Method::POST, ["compatibility", "subjects", s, "versions", v]) => {
            compatibility::check(store, caller, s, Some(v), &req.body, q.flag("verbose")).await?
        }
        (&Method::GET, ["contexts"]) => json!(["."]),
        _ => {
            return Err(RegistryError::NoRoute(format!(
                "HTTP {} {} Not Found",
                req.method, req.path
            )));
        }
    };
    Ok(Response::ok(value))
}

fn setting_of(kind: &str) -> Setting {
    if kind == "config" {
        Setting::Compatibility
    } else {
        Setting::Mode
    }
}
