//! The Iceberg REST catalog, served under `/iceberg` on the HTTP port: config,
//! OAuth2 tokens, namespaces (`kafka_topics`, those of expansions' target tables, and
//! users' own, `users`), list and load tables; and the request, response and error
//! shapes the admin API (crate `admin`) shares. Topic tables are read-only and target
//! tables are written by their expansions, so every write to them but dropping an unused
//! target table answers 403 with a clear message; users' namespaces take every write the
//! spec has (`crate::warehouse`). Loading a topic table seals its untabled tail first
//! (for a target table, that of every topic that expands into it), so a query that
//! starts after a produce ack sees it.

pub mod auth;
mod metadata;
mod model;
mod sigv4;
mod users;

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, StatusCode};

use crate::seal::{NAMESPACE, Tabler};
use crate::warehouse::Warehouse;
use crate::{TableError, TableResult};
pub use auth::Tokens;
use model::*;

/// A request, with the `/iceberg` prefix already stripped from its path.
pub struct Request {
    /// Method.
    pub method: Method,
    /// Path below the catalog URI, such as `/v1/config`.
    pub path: String,
    /// The whole path as it came over the wire, percent-encoded (SigV4 signs it).
    pub raw_path: String,
    /// Every header (SigV4 signs some).
    pub headers: http::HeaderMap,
    /// Raw query string.
    pub query: Option<String>,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// The `Host` header, to tell clients where the S3 endpoint is.
    pub host: Option<String>,
    /// Body (bounded by the caller).
    pub body: Bytes,
    /// The client's address, when known (the audit trail's "from where").
    pub source: Option<String>,
}

/// A JSON response.
pub struct Response {
    /// Status.
    pub status: StatusCode,
    /// JSON body (empty for 204).
    pub body: Vec<u8>,
}

/// How clients reach the S3 endpoint that serves the table files.
#[derive(Debug, Clone)]
pub struct S3Access {
    /// Fixed endpoint URL; when `None`, `<scheme>://<host of the request>:<port>`.
    pub endpoint: Option<String>,
    /// Port of the S3 listener.
    pub port: u16,
    /// `http`, or `https` when the S3 listener serves TLS.
    pub scheme: &'static str,
    /// Region clients sign with.
    pub region: String,
}

/// The REST catalog.
pub struct RestCatalog {
    tabler: Arc<Tabler>,
    tokens: Arc<Tokens>,
    s3: S3Access,
    /// The broker view whose topics these are (policy resources name it).
    view: String,
    /// Users' own namespaces, tables and views.
    warehouse: Arc<Warehouse>,
}

/// Every route this catalog serves, as `GET /v1/config` lists them.
const ENDPOINTS: &[&str] = &[
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "POST /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/views/rename",
];

/// The bucket users' namespaces are placed in when they name no location.
pub const USER_TABLES_BUCKET: &str = "warehouse";

impl RestCatalog {
    /// A catalog over `tabler`'s tables.
    pub fn new(tabler: Arc<Tabler>, tokens: Arc<Tokens>, s3: S3Access) -> Self {
        let warehouse = Arc::new(Warehouse::new(
            tabler.clone(),
            tokens.directory_arc(),
            USER_TABLES_BUCKET.to_owned(),
        ));
        Self {
            tabler,
            tokens,
            s3,
            view: "default".to_owned(),
            warehouse,
        }
    }

    /// The same catalog for another broker view's tables (the tabler over that view's
    /// topics and bucket), sharing these tokens.
    pub fn for_view(&self, view: &str, tabler: Arc<Tabler>) -> Self {
        let warehouse = Arc::new(Warehouse::new(
            tabler.clone(),
            self.tokens.directory_arc(),
            self.warehouse.bucket().to_owned(),
        ));
        Self {
            tabler,
            tokens: self.tokens.clone(),
            s3: self.s3.clone(),
            view: view.to_owned(),
            warehouse,
        }
    }

    /// Users' namespaces, tables and views.
    pub fn warehouse(&self) -> &Arc<Warehouse> {
        &self.warehouse
    }

    /// The bearer tokens it grants (the admin API checks them too).
    pub fn tokens(&self) -> &Arc<Tokens> {
        &self.tokens
    }

    /// Whether `user` may do a Kafka action on a topic, as the broker decides it: a
    /// topic's table is its records, so the policies that guard the topic guard the
    /// table.
    pub fn may(&self, user: &str, action: &str, topic: &str) -> bool {
        may_topic(self.tokens.directory(), &self.view, user, action, topic)
    }

    fn must(&self, user: &str, action: &str, topic: &str) -> TableResult<()> {
        must_topic(self.tokens.directory(), &self.view, user, action, topic)
    }

    /// Answers one request.
    pub async fn handle(&self, req: Request) -> Response {
        let mut who = None;
        let result = if req.path == "/v1/oauth/tokens" {
            let r = self.token(&req);
            if r.status == StatusCode::UNAUTHORIZED {
                let client = form_urlencoded::parse(&req.body)
                    .find(|(k, _)| k == "client_id")
                    .map(|(_, v)| v.into_owned());
                self.audit(&req, client.as_deref(), &r);
            }
            return r;
        } else if req
            .authorization
            .as_deref()
            .is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256 "))
        {
            let dir = self.tokens.directory();
            match sigv4::verify(&req, |k| dir.s3_secret(k), std::time::SystemTime::now()) {
                Ok(user) => {
                    let r = self.route(&req, &user).await;
                    who = Some(user);
                    r
                }
                Err(e) => Err(e),
            }
        } else {
            match self.tokens.check(req.authorization.as_deref()) {
                Ok(user) => {
                    let r = self.route(&req, &user).await;
                    who = Some(user);
                    r
                }
                Err(e) => Err(e),
            }
        };
        let r = match result {
            Ok(r) => r,
            Err(e) => {
                if matches!(e, TableError::CommitFailed(_)) {
                    self.tabler.metrics().user_commit_conflicts.inc();
                }
                error_response(&e)
            }
        };
        self.audit(&req, who.as_deref(), &r);
        r
    }

    /// Records a refusal (401, 403) or an administrative change that succeeded: a
    /// namespace or view created, changed or dropped, a table created, registered,
    /// renamed or dropped (not a commit to a table: that is data, written by engines
    /// all the time).
    fn audit(&self, req: &Request, user: Option<&str>, r: &Response) {
        let last = req.path.rsplit('/').next().unwrap_or_default();
        let administrative = req.method == Method::DELETE
            || (req.method == Method::POST
                && matches!(
                    last,
                    "namespaces" | "properties" | "rename" | "tables" | "views" | "register"
                ));
        audit(
            self.tokens.directory(),
            "iceberg",
            req,
            user,
            r,
            administrative,
        );
    }

    async fn route(&self, req: &Request, user: &str) -> TableResult<Response> {
        let segments = segments(&req.path);
        let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
        if let Some(answer) = self.route_metadata(req, user, &segs).await {
            return answer;
        }
        if let Some(answer) = self.route_users(req, user, &segs).await {
            return answer;
        }
        let m = &req.method;
        match segs.as_slice() {
            ["v1", "config"] if m == Method::GET => self.config(req, user),
            ["v1", "namespaces"] if m == Method::GET => {
                // `parent` lists the children one level down (levels joined by 0x1F).
                let parent = query_param(req.query.as_deref(), "parent").unwrap_or_default();
                let depth = if parent.is_empty() {
                    1
                } else {
                    parent.split('\u{1f}').count() + 1
                };
                let all = self.namespaces(Some(user)).await?;
                if !parent.is_empty() && !all.contains(&parent) {
                    return Err(TableError::NoSuchNamespace(parent.replace('\u{1f}', ".")));
                }
                let names: Vec<String> = all
                    .into_iter()
                    .filter(|n| {
                        let levels: Vec<&str> = n.split('\u{1f}').collect();
                        levels.len() == depth
                            && (parent.is_empty() || levels[..depth - 1].join("\u{1f}") == parent)
                    })
                    .collect();
                let (names, next_page_token) = page(names, req.query.as_deref())?;
                let namespaces = names
                    .iter()
                    .map(|n| n.split('\u{1f}').map(str::to_owned).collect())
                    .collect();
                json(
                    StatusCode::OK,
                    &ListNamespaces {
                        namespaces,
                        next_page_token,
                    },
                )
            }
            ["v1", "namespaces", ns] if m == Method::GET => {
                self.check_namespace(ns).await?;
                json(
                    StatusCode::OK,
                    &GetNamespace {
                        namespace: vec![(*ns).to_owned()],
                        properties: HashMap::new(),
                    },
                )
            }
            ["v1", "namespaces", ns] if m == Method::HEAD => {
                self.check_namespace(ns).await?;
                Ok(no_content())
            }
            ["v1", "namespaces", ns, "tables"] if m == Method::GET => {
                self.check_namespace(ns).await?;
                let names: Vec<String> = if *ns == NAMESPACE {
                    self.tabler
                        .catalog()
                        .kafka()
                        .topics()
                        .await?
                        .into_iter()
                        .map(|t| t.name)
                        .filter(|t| self.may(user, "KafkaDescribe", t))
                        .collect()
                } else {
                    self.tabler
                        .catalog()
                        .iceberg()
                        .other_tables()
                        .await?
                        .into_iter()
                        .filter(|(n, _, _)| n == ns)
                        .map(|(_, name, _)| name)
                        .collect()
                };
                json(
                    StatusCode::OK,
                    &ListTables::page(&[(*ns).to_owned()], names, req.query.as_deref())?,
                )
            }
            ["v1", "namespaces", ns, "tables", table] if m == Method::GET => {
                self.check_table_namespace(ns, table).await?;
                if *ns == NAMESPACE {
                    self.must(user, "KafkaRead", table)?;
                    self.load_table(req, user, table).await
                } else {
                    self.load_other_table(req, user, ns, table).await
                }
            }
            ["v1", "namespaces", ns, "tables", table] if m == Method::HEAD => {
                self.check_table_namespace(ns, table).await?;
                let exists = if *ns == NAMESPACE {
                    self.must(user, "KafkaDescribe", table)?;
                    self.tabler.catalog().kafka().topic(table).await?.is_some()
                } else {
                    self.tabler
                        .catalog()
                        .iceberg()
                        .other_table(ns, table)
                        .await?
                        .is_some()
                };
                if exists {
                    Ok(no_content())
                } else {
                    Err(TableError::NoSuchTable(format!("{ns}.{table}")))
                }
            }
            ["v1", "namespaces", ns, "tables", table]
                if m == Method::DELETE && *ns != NAMESPACE =>
            {
                crate::expansion::manage::drop_table(&self.tabler, ns, table).await?;
                Ok(no_content())
            }
            // No views outside users' namespaces.
            ["v1", "namespaces", ns, "views"] if m == Method::GET => {
                self.check_namespace(ns).await?;
                json(
                    StatusCode::OK,
                    &ListTables::page(&[(*ns).to_owned()], Vec::new(), req.query.as_deref())?,
                )
            }
            ["v1", "namespaces", ns, "views", view] if m == Method::GET || m == Method::HEAD => {
                self.check_namespace(ns).await?;
                Err(TableError::NoSuchView(format!(
                    "{}.{view}",
                    ns.replace('\u{1f}', ".")
                )))
            }
            ["v1", "namespaces", ns, "tables", table, "metrics"] if m == Method::POST => {
                // Engines report scan metrics after reading; nothing to keep.
                self.check_table_namespace(ns, table).await?;
                check_metrics_report(&req.body)?;
                Ok(no_content())
            }
            ["v1", "namespaces", ..] | ["v1", "tables", ..] | ["v1", "transactions", ..]
                if m == Method::POST || m == Method::DELETE || m == Method::PUT =>
            {
                Err(TableError::Forbidden(format!(
                    "{m} {}: tables in {NAMESPACE} are Kafka topics and read-only (produce to the topic; create and delete topics through Kafka), and the others here are written by expansions (see /admin/v1/topics/{{topic}}/expansion; a table no expansion writes can be dropped); make a namespace of your own (POST /v1/namespaces) for tables you write",
                    req.path
                )))
            }
            _ => Err(TableError::NotFound(format!(
                "no route for {m} {}",
                req.path
            ))),
        }
    }

    /// Every namespace: `kafka_topics`, those of the expansions' target tables and
    /// users' own (a multi-level one with each of its parents); with `visible_to`, only
    /// the users' namespaces that user may see (`s3tables:GetNamespace`), so a listing
    /// does not tell one user the names of another's.
    async fn namespaces(&self, visible_to: Option<&str>) -> TableResult<Vec<String>> {
        let mut out = vec![NAMESPACE.to_owned()];
        let users = self.tabler.catalog().iceberg().namespaces().await?;
        let metadata = self.metadata_namespaces(None).await?;
        // Tables outside users' namespaces are expansions' targets, in namespaces of
        // their own, or buckets' inventories (listed below, to those who may see them).
        for (ns, _, _) in self.tabler.catalog().iceberg().other_tables().await? {
            if !out.contains(&ns) && !users.iter().any(|(u, _)| *u == ns) && !metadata.contains(&ns)
            {
                out.push(ns);
            }
        }
        match visible_to {
            Some(user) => out.extend(self.metadata_namespaces(Some(user)).await?),
            None => out.extend(metadata),
        }
        for (ns, rec) in users {
            if let Some(user) = visible_to
                && crate::warehouse::access::must(
                    self.tokens.directory(),
                    user,
                    "s3tables:GetNamespace",
                    &crate::warehouse::access::namespace_resource(&ns),
                    Some(&rec.owner),
                )
                .is_err()
            {
                continue;
            }
            let levels: Vec<&str> = ns.split('\u{1f}').collect();
            for depth in 1..=levels.len() {
                let n = levels[..depth].join("\u{1f}");
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        }
        Ok(out)
    }

    /// A table in a namespace there is not is a table there is not: 404
    /// `NoSuchTableException`, which Iceberg's clients take as the cue to try
    /// `<ns>.<table>` as table `<ns>`'s metadata table (`orders.snapshots` in Spark).
    async fn check_table_namespace(&self, ns: &str, table: &str) -> TableResult<()> {
        match self.check_namespace(ns).await {
            Err(TableError::NoSuchNamespace(n)) => {
                Err(TableError::NoSuchTable(format!("{n}.{table}")))
            }
            other => other,
        }
    }

    async fn check_namespace(&self, ns: &str) -> TableResult<()> {
        if ns == NAMESPACE || self.namespaces(None).await?.iter().any(|n| n == ns) {
            Ok(())
        } else {
            Err(TableError::NoSuchNamespace(ns.replace('\u{1f}', ".")))
        }
    }

    /// Loads a table outside `kafka_topics`, after sealing every topic an expansion
    /// writes into it from (so its rows are there with their records).
    async fn load_other_table(
        &self,
        req: &Request,
        user: &str,
        ns: &str,
        table: &str,
    ) -> TableResult<Response> {
        for topic in crate::expansion::manage::sources_of(&self.tabler, ns, table).await? {
            match self.tabler.seal(&topic).await {
                Ok(_) | Err(TableError::NoSuchTable(_)) => {}
                Err(e) => return Err(e),
            }
        }
        let rec = self
            .tabler
            .catalog()
            .iceberg()
            .other_table(ns, table)
            .await?
            .ok_or_else(|| TableError::NoSuchTable(format!("{ns}.{table}")))?;
        let rec =
            crate::expansion::manage::rename_legacy_columns(&self.tabler, ns, table, rec).await?;
        let bytes = self.tabler.read_file(&rec.metadata_location).await?;
        let metadata: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
            TableError::CorruptMetadata(rec.metadata_location.clone(), e.to_string())
        })?;
        json(
            StatusCode::OK,
            &LoadTable {
                metadata_location: rec.metadata_location,
                metadata,
                config: self.file_io_config(req, user),
            },
        )
    }

    fn s3_endpoint(&self, req: &Request) -> String {
        if let Some(e) = &self.s3.endpoint {
            return e.clone();
        }
        let host = req
            .host
            .as_deref()
            .map(|h| match h.rsplit_once(':') {
                Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
                _ => h,
            })
            .filter(|h| !h.is_empty())
            .unwrap_or("127.0.0.1");
        format!("{}://{host}:{}", self.s3.scheme, self.s3.port)
    }

    /// FileIO properties: where the S3 endpoint is, and the caller's own credentials
    /// (the ones it authenticated with) to sign its reads.
    fn file_io_config(&self, req: &Request, user: &str) -> HashMap<String, String> {
        let mut c = HashMap::from([
            ("s3.endpoint".to_owned(), self.s3_endpoint(req)),
            ("s3.path-style-access".to_owned(), "true".to_owned()),
            ("s3.force-virtual-addressing".to_owned(), "false".to_owned()),
            ("s3.region".to_owned(), self.s3.region.clone()),
            ("client.region".to_owned(), self.s3.region.clone()),
            ("s3.remote-signing-enabled".to_owned(), "false".to_owned()),
        ]);
        if let Some(secret) = self.tokens.secret_of(user) {
            c.insert("s3.access-key-id".to_owned(), user.to_owned());
            c.insert("s3.secret-access-key".to_owned(), secret);
        }
        c
    }

    fn config(&self, req: &Request, user: &str) -> TableResult<Response> {
        if let Some(w) = query_param(req.query.as_deref(), "warehouse")
            && !w.is_empty()
            && w != self.tabler.bucket()
            && w != format!("s3://{}", self.tabler.bucket())
        {
            return Err(TableError::NoSuchWarehouse(w));
        }
        let mut overrides = self.file_io_config(req, user);
        overrides.insert(
            "warehouse".to_owned(),
            format!("s3://{}", self.tabler.bucket()),
        );
        json(
            StatusCode::OK,
            &CatalogConfig {
                defaults: HashMap::new(),
                overrides,
                endpoints: ENDPOINTS.to_vec(),
            },
        )
    }

    async fn load_table(&self, req: &Request, user: &str, table: &str) -> TableResult<Response> {
        let state = match self.tabler.seal(table).await {
            Ok(s) => s,
            Err(TableError::Catalog(catalog::CatalogError::UnknownTopic(_))) => {
                return Err(no_such_table(table));
            }
            Err(e) => return Err(e),
        };
        let bytes = self.tabler.read_file(&state.metadata_location).await?;
        let metadata: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
            TableError::CorruptMetadata(state.metadata_location.clone(), e.to_string())
        })?;
        json(
            StatusCode::OK,
            &LoadTable {
                metadata_location: state.metadata_location,
                metadata,
                config: self.file_io_config(req, user),
            },
        )
    }

    fn token(&self, req: &Request) -> Response {
        if req.method != Method::POST {
            return oauth_error(
                StatusCode::METHOD_NOT_ALLOWED,
                "invalid_request",
                "use POST",
            );
        }
        let form: HashMap<String, String> =
            form_urlencoded::parse(&req.body).into_owned().collect();
        if form.get("grant_type").map(String::as_str) != Some("client_credentials") {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "only grant_type=client_credentials is supported",
            );
        }
        let (id, secret) = match (form.get("client_id"), form.get("client_secret")) {
            (Some(i), Some(s)) => (i.clone(), s.clone()),
            _ => match basic_auth(req.authorization.as_deref()) {
                Some(pair) => pair,
                None => {
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_request",
                        "client_id and client_secret (the S3 access key and secret) are required",
                    );
                }
            },
        };
        match self.tokens.grant(&id, &secret) {
            Some(g) => json(
                StatusCode::OK,
                &TokenResponse {
                    access_token: g.token,
                    token_type: "bearer",
                    expires_in: g.expires_in,
                    issued_token_type: "urn:ietf:params:oauth:token-type:access_token",
                },
            )
            .unwrap_or_else(|e| error_response(&e)),
            None => oauth_error(
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "unknown access key or wrong secret",
            ),
        }
    }
}

/// Whether `user` may do a Kafka action on a topic of `view`, as the broker decides it.
pub fn may_topic(dir: &iam::Directory, view: &str, user: &str, action: &str, topic: &str) -> bool {
    let context = iam::Context::default();
    let resource = format!("vast:kafka:topic:{view}:{topic}");
    dir.allows_kafka(
        Some(user),
        &iam::Request {
            action,
            resource: &resource,
            principal: Some(user),
            context: &context,
        },
    )
}

/// [`may_topic`], or 403 saying who may not do what.
pub fn must_topic(
    dir: &iam::Directory,
    view: &str,
    user: &str,
    action: &str,
    topic: &str,
) -> TableResult<()> {
    if may_topic(dir, view, user, action, topic) {
        Ok(())
    } else {
        Err(TableError::Forbidden(format!(
            "{user} may not {action} topic {topic} (a policy refuses it)"
        )))
    }
}

/// Records an answer of the REST catalog or the admin API (`api`, also the path prefix
/// they are served under) in the audit trail: a refusal with the error body's message,
/// or a change when the request made one (`changes`).
pub fn audit(
    dir: &iam::Directory,
    api: &'static str,
    req: &Request,
    user: Option<&str>,
    r: &Response,
    changes: bool,
) {
    use iam::audit::{AuditEvent, Outcome, http_outcome};
    let Some(outcome) = http_outcome(r.status.as_u16(), changes) else {
        return;
    };
    // The path as its segments mean it (`%2D` is `-`).
    let path = format!("/{}", segments(&req.path).join("/"));
    let mut event = AuditEvent::now(
        api,
        user,
        format!("{} /{api}{path}", req.method),
        path,
        outcome,
    )
    .from(req.source.clone());
    if outcome == Outcome::Refused {
        let why = serde_json::from_slice::<serde_json::Value>(&r.body)
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
            .unwrap_or_default();
        event = event.because(why);
    }
    dir.audit(event);
}

/// A request path's segments, percent-decoded.
pub fn segments(path: &str) -> Vec<String> {
    path.trim_start_matches('/')
        .split('/')
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect()
}

fn no_such_table(table: &str) -> TableError {
    TableError::NoSuchTable(format!("{NAMESPACE}.{table}"))
}

/// Checks a `ReportMetricsRequest`: an object with a string `report-type` and
/// `table-name`. Nothing of it is kept.
pub(crate) fn check_metrics_report(body: &[u8]) -> TableResult<()> {
    let v: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| TableError::BadRequest(format!("request body: {e}")))?;
    for key in ["report-type", "table-name"] {
        if !v.get(key).is_some_and(serde_json::Value::is_string) {
            return Err(TableError::BadRequest(format!(
                "a metrics report needs a string {key}"
            )));
        }
    }
    Ok(())
}

/// One page of `names` (sorted here), as the spec has it: without a `pageToken` every
/// name, in one answer; with one (empty for the first page), those after it (the last
/// name of the page before), at most `pageSize`, and the next page's token when more are
/// left. A `pageSize` that is not a positive integer, or a parameter given twice, is a
/// 400.
pub(crate) fn page(
    mut names: Vec<String>,
    query: Option<&str>,
) -> TableResult<(Vec<String>, Option<String>)> {
    names.sort();
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .into_owned()
        .collect();
    let one = |name: &str| -> TableResult<Option<String>> {
        let mut found = pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone());
        let first = found.next();
        if found.next().is_some() {
            return Err(TableError::BadRequest(format!("{name} is given twice")));
        }
        Ok(first)
    };
    let size = match one("pageSize")? {
        None => usize::MAX,
        // Any positive integer, a huge one meaning "all".
        Some(v)
            if !v.is_empty()
                && v.bytes().all(|b| b.is_ascii_digit())
                && !v.trim_start_matches('0').is_empty() =>
        {
            v.parse::<usize>().unwrap_or(usize::MAX)
        }
        Some(v) => {
            return Err(TableError::BadRequest(format!(
                "pageSize {v:?} is not a positive integer"
            )));
        }
    };
    let Some(after) = one("pageToken")? else {
        return Ok((names, None));
    };
    if !after.is_empty() {
        names.retain(|n| *n > after);
    }
    if names.len() > size {
        names.truncate(size);
        let next = names.last().cloned();
        return Ok((names, next));
    }
    Ok((names, None))
}

/// A query parameter's value, decoded.
pub fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn basic_auth(header: Option<&str>) -> Option<(String, String)> {
    let encoded = header?.strip_prefix("Basic ")?;
    let decoded = base64_simd::STANDARD.decode_to_vec(encoded.trim()).ok()?;
    let s = String::from_utf8(decoded).ok()?;
    let (id, secret) = s.split_once(':')?;
    Some((id.to_owned(), secret.to_owned()))
}

/// A JSON response.
pub fn json<T: serde::Serialize>(status: StatusCode, body: &T) -> TableResult<Response> {
    Ok(Response {
        status,
        body: serde_json::to_vec(body).map_err(|e| TableError::Task(e.to_string()))?,
    })
}

/// An empty 204 response.
pub fn no_content() -> Response {
    Response {
        status: StatusCode::NO_CONTENT,
        body: Vec::new(),
    }
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    let body = serde_json::json!({ "error": error, "error_description": description });
    Response {
        status,
        body: body.to_string().into_bytes(),
    }
}

/// The Iceberg REST `ErrorModel` response for an error.
pub fn error_response(e: &TableError) -> Response {
    let (status, kind) = e.rest_status();
    if status.is_server_error() {
        tracing::error!(error = %e, "iceberg REST request failed");
    }
    let body = serde_json::json!({
        "error": { "message": e.to_string(), "type": kind, "code": status.as_u16() }
    });
    Response {
        status,
        body: body.to_string().into_bytes(),
    }
}
