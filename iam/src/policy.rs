//! Policy documents: the AWS IAM JSON grammar (statements with Effect, Principal, Action,
//! Resource and Condition), its validation, and the evaluation of a request against it.
//!
//! Parsing is strict on purpose. A policy that silently means something other than what its
//! author wrote is a security hole, so unknown keys, misspelt effects, repeated JSON keys and
//! unsupported principal kinds are rejected with a message naming the statement and the problem,
//! rather than being ignored.

use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::condition::{Conditions, Context, describe};
pub use crate::error::PolicyError;
use crate::wildcard;

/// The largest document accepted, in bytes: AWS's limit for a bucket policy (20 KB).
pub const MAX_POLICY_BYTES: usize = 20 * 1024;

/// The most statements one document may hold.
pub const MAX_STATEMENTS: usize = 1000;

/// The policy language versions AWS defines; the first is the default.
const VERSIONS: [&str; 2] = ["2012-10-17", "2008-10-17"];

const STATEMENT_KEYS: &str =
    "Sid, Effect, Principal, NotPrincipal, Action, NotAction, Resource, NotResource, Condition";

/// Which kind of document: identity policies are attached to users and may not name a Principal;
/// bucket (resource) policies must name one in every statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicyKind {
    /// Attached to a user; the user is the implicit principal.
    Identity,
    /// Attached to a resource such as a bucket; each statement says whom it covers.
    Resource,
}

/// A parsed, validated policy document.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// The policy language version ("2012-10-17" or "2008-10-17").
    pub version: String,
    /// The optional `Id` element.
    pub id: Option<String>,
    /// The statements, in document order (order does not affect the decision).
    pub statements: Vec<Statement>,
}

/// One statement of a policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// The optional statement id, unique within its document.
    pub sid: Option<String>,
    /// Whether the statement allows or denies.
    pub effect: Effect,
    /// Whom the statement covers; `None` in identity policies.
    pub principal: Option<Principals>,
    /// Whom the statement covers by exclusion; at most one of this and `principal` is set.
    pub not_principal: Option<Principals>,
    /// `Action` or `NotAction`.
    pub action: Matchers,
    /// `Resource` or `NotResource`.
    pub resource: Matchers,
    /// The `Condition` block; empty when absent.
    pub condition: Conditions,
}

/// What a statement does when it applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Grants the request, unless some statement denies it.
    Allow,
    /// Refuses the request, whatever else allows it.
    Deny,
}

impl Effect {
    /// The effect as written in policies.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Allow => "Allow",
            Effect::Deny => "Deny",
        }
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A list of patterns, positive (Action/Resource) or negated (NotAction/NotResource).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matchers {
    /// Matches a value that matches any of the patterns.
    Any(Vec<String>),
    /// Matches a value that matches none of the patterns.
    Not(Vec<String>),
}

impl Matchers {
    /// Whether `value` is covered, comparing case-insensitively (actions) or not (resources).
    pub fn matches(&self, value: &str, ignore_case: bool) -> bool {
        let hit = |patterns: &[String]| {
            patterns.iter().any(|p| {
                if ignore_case {
                    wildcard::matches_ignore_ascii_case(p, value)
                } else {
                    wildcard::matches(p, value)
                }
            })
        };
        match self {
            Matchers::Any(patterns) => hit(patterns),
            Matchers::Not(patterns) => !hit(patterns),
        }
    }

    /// The patterns, whichever way they are used.
    pub fn patterns(&self) -> &[String] {
        match self {
            Matchers::Any(patterns) | Matchers::Not(patterns) => patterns,
        }
    }
}

/// `"*"`, `{"AWS": "*"}`, `{"AWS": [..]}`; each entry is a user name, or an ARN
/// `arn:aws:iam::<account>:user/<name>` (the name is what matters; account ignored), or `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principals {
    /// Anyone, including anonymous requests.
    Everyone,
    /// The users with these names.
    Users(Vec<String>),
}

impl Principals {
    /// Whether the principal (a user name, or `None` for anonymous) is covered.
    pub fn matches(&self, principal: Option<&str>) -> bool {
        match self {
            Principals::Everyone => true,
            Principals::Users(users) => principal.is_some_and(|p| users.iter().any(|u| u == p)),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Principals::Everyone => Value::String("*".into()),
            Principals::Users(users) => {
                let mut object = Map::new();
                object.insert("AWS".into(), strings_to_json(users));
                Value::Object(object)
            }
        }
    }
}

/// The outcome of evaluating a request against a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Some statement allows the request and none denies it.
    Allow,
    /// Some statement denies the request.
    Deny,
    /// No statement applies; the caller decides (normally: refuse).
    NoMatch,
}

impl Decision {
    /// Combines decisions of several policies: Deny wins over Allow wins over NoMatch.
    pub fn and(self, other: Decision) -> Decision {
        match (self, other) {
            (Decision::Deny, _) | (_, Decision::Deny) => Decision::Deny,
            (Decision::Allow, _) | (_, Decision::Allow) => Decision::Allow,
            (Decision::NoMatch, Decision::NoMatch) => Decision::NoMatch,
        }
    }
}

/// A request to authorize.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The action, e.g. "s3:GetObject" or "KafkaRead".
    pub action: &'a str,
    /// The resource, e.g. "arn:aws:s3:::bucket/key" or "vast:kafka:topic:default:orders".
    pub resource: &'a str,
    /// The user name; `None` for an anonymous request.
    pub principal: Option<&'a str>,
    /// Values for condition keys.
    pub context: &'a Context,
}

impl Policy {
    /// Parses and validates a policy document of the given kind.
    pub fn parse(json: &str, kind: PolicyKind) -> Result<Policy, PolicyError> {
        if json.len() > MAX_POLICY_BYTES {
            return Err(PolicyError::TooLarge {
                size: json.len(),
                limit: MAX_POLICY_BYTES,
            });
        }
        let StrictValue(document) =
            serde_json::from_str(json).map_err(|e| PolicyError::Json(e.to_string()))?;
        let Value::Object(document) = document else {
            return Err(PolicyError::Document(format!(
                "a policy must be a JSON object, not {}",
                describe(&document)
            )));
        };

        if let Some(key) = document
            .keys()
            .find(|k| !matches!(k.as_str(), "Version" | "Id" | "Statement"))
        {
            return Err(PolicyError::Document(format!(
                "unknown top-level key {key:?} (expected Version, Id, Statement)"
            )));
        }

        let version = match document.get("Version") {
            None => VERSIONS[0].to_string(),
            Some(Value::String(v)) if VERSIONS.contains(&v.as_str()) => v.clone(),
            Some(other) => {
                return Err(PolicyError::Document(format!(
                    "Version must be \"2012-10-17\" or \"2008-10-17\", not {}",
                    show(other)
                )));
            }
        };
        let id = match document.get("Id") {
            None => None,
            Some(Value::String(id)) => Some(id.clone()),
            Some(other) => {
                return Err(PolicyError::Document(format!(
                    "Id must be a string, not {}",
                    describe(other)
                )));
            }
        };

        let raw_statements = match document.get("Statement") {
            None => {
                return Err(PolicyError::Document(
                    "Statement is required: a statement object or an array of them".into(),
                ));
            }
            Some(single @ Value::Object(_)) => std::slice::from_ref(single),
            Some(Value::Array(list)) if list.is_empty() => {
                return Err(PolicyError::Document(
                    "Statement must not be an empty array".into(),
                ));
            }
            Some(Value::Array(list)) => list.as_slice(),
            Some(other) => {
                return Err(PolicyError::Document(format!(
                    "Statement must be an object or an array of objects, not {}",
                    describe(other)
                )));
            }
        };
        if raw_statements.len() > MAX_STATEMENTS {
            return Err(PolicyError::TooManyStatements {
                count: raw_statements.len(),
                limit: MAX_STATEMENTS,
            });
        }

        let mut statements = Vec::with_capacity(raw_statements.len());
        let mut sids: HashMap<&str, usize> = HashMap::new();
        for (i, raw) in raw_statements.iter().enumerate() {
            let index = i + 1;
            let statement = parse_statement(raw, kind)
                .map_err(|message| PolicyError::Statement { index, message })?;
            if let Some(Value::String(sid)) = raw.get("Sid")
                && let Some(first) = sids.insert(sid.as_str(), index)
            {
                return Err(PolicyError::Statement {
                    index,
                    message: format!(
                        "Sid {sid:?} is already used by statement {first}; Sids must be unique"
                    ),
                });
            }
            statements.push(statement);
        }
        Ok(Policy {
            version,
            id,
            statements,
        })
    }

    /// Decides a request: Deny if any applying statement denies, else Allow if any allows,
    /// else NoMatch.
    pub fn evaluate(&self, req: &Request<'_>) -> Decision {
        let mut decision = Decision::NoMatch;
        for statement in self.statements.iter().filter(|s| s.applies(req)) {
            match statement.effect {
                // Nothing can override a Deny, so there is no point looking further.
                Effect::Deny => return Decision::Deny,
                Effect::Allow => decision = Decision::Allow,
            }
        }
        decision
    }

    /// The document as JSON (canonical form, round-trips through parse).
    pub fn to_json(&self) -> Value {
        let mut document = Map::new();
        document.insert("Version".into(), Value::String(self.version.clone()));
        if let Some(id) = &self.id {
            document.insert("Id".into(), Value::String(id.clone()));
        }
        document.insert(
            "Statement".into(),
            Value::Array(self.statements.iter().map(Statement::to_json).collect()),
        );
        Value::Object(document)
    }
}

impl Statement {
    /// Whether the statement covers the request: action, resource, principal and conditions
    /// all match.
    pub fn applies(&self, req: &Request<'_>) -> bool {
        self.action.matches(req.action, true)
            && self.resource.matches(req.resource, false)
            && self.principal_matches(req.principal)
            && self.condition.holds(req.context)
    }

    fn principal_matches(&self, principal: Option<&str>) -> bool {
        match (&self.principal, &self.not_principal) {
            (Some(p), _) => p.matches(principal),
            (None, Some(not)) => !not.matches(principal),
            // Identity policies: the principal is whoever the policy is attached to.
            (None, None) => true,
        }
    }

    /// The statement as JSON, in the form policy parsing accepts.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        if let Some(sid) = &self.sid {
            object.insert("Sid".into(), Value::String(sid.clone()));
        }
        object.insert("Effect".into(), Value::String(self.effect.as_str().into()));
        if let Some(p) = &self.principal {
            object.insert("Principal".into(), p.to_json());
        }
        if let Some(p) = &self.not_principal {
            object.insert("NotPrincipal".into(), p.to_json());
        }
        let (name, patterns) = match &self.action {
            Matchers::Any(p) => ("Action", p),
            Matchers::Not(p) => ("NotAction", p),
        };
        object.insert(name.into(), strings_to_json(patterns));
        let (name, patterns) = match &self.resource {
            Matchers::Any(p) => ("Resource", p),
            Matchers::Not(p) => ("NotResource", p),
        };
        object.insert(name.into(), strings_to_json(patterns));
        if !self.condition.is_empty() {
            object.insert("Condition".into(), self.condition.to_json());
        }
        Value::Object(object)
    }
}

/// Parses one statement; the error is the message without the "Statement N: " prefix.
fn parse_statement(raw: &Value, kind: PolicyKind) -> Result<Statement, String> {
    let Value::Object(fields) = raw else {
        return Err(format!(
            "a statement must be an object, not {}",
            describe(raw)
        ));
    };
    if let Some(key) = fields
        .keys()
        .find(|k| !STATEMENT_KEYS.split(", ").any(|s| s == *k))
    {
        return Err(format!("unknown key {key:?} (expected {STATEMENT_KEYS})"));
    }

    let sid = match fields.get("Sid") {
        None => None,
        Some(Value::String(sid)) => Some(sid.clone()),
        Some(other) => return Err(format!("Sid must be a string, not {}", describe(other))),
    };

    let effect = match fields.get("Effect") {
        Some(Value::String(e)) if e == "Allow" => Effect::Allow,
        Some(Value::String(e)) if e == "Deny" => Effect::Deny,
        Some(other) => return Err(format!("Effect must be Allow or Deny, not {}", show(other))),
        None => return Err("Effect is required (Allow or Deny)".into()),
    };

    let principal = fields.get("Principal");
    let not_principal = fields.get("NotPrincipal");
    match kind {
        PolicyKind::Identity => {
            if let Some(name) = principal
                .map(|_| "Principal")
                .or(not_principal.map(|_| "NotPrincipal"))
            {
                return Err(format!(
                    "{name} is not allowed in an identity policy; it applies to the user it is attached to"
                ));
            }
        }
        PolicyKind::Resource => match (principal, not_principal) {
            (Some(_), Some(_)) => {
                return Err("give either Principal or NotPrincipal, not both".into());
            }
            (None, None) => {
                return Err(
                    "a bucket policy statement must name a Principal or NotPrincipal".into(),
                );
            }
            _ => {}
        },
    }
    let principal = principal
        .map(|p| parse_principals("Principal", p))
        .transpose()?;
    let not_principal = not_principal
        .map(|p| parse_principals("NotPrincipal", p))
        .transpose()?;

    let action = parse_matchers(fields, "Action", "NotAction")?;
    let resource = parse_matchers(fields, "Resource", "NotResource")?;

    let condition = match fields.get("Condition") {
        None => Conditions::default(),
        Some(block) => Conditions::parse(block).map_err(|e| match e {
            PolicyError::Condition(message) => message,
            other => other.to_string(),
        })?,
    };

    Ok(Statement {
        sid,
        effect,
        principal,
        not_principal,
        action,
        resource,
        condition,
    })
}

/// Reads `Action`/`NotAction` or `Resource`/`NotResource`: exactly one must be present.
fn parse_matchers(fields: &Map<String, Value>, yes: &str, not: &str) -> Result<Matchers, String> {
    match (fields.get(yes), fields.get(not)) {
        (Some(_), Some(_)) => Err(format!("give either {yes} or {not}, not both")),
        (None, None) => Err(format!("{yes} or {not} is required")),
        (Some(v), None) => parse_strings(yes, v).map(Matchers::Any),
        (None, Some(v)) => parse_strings(not, v).map(Matchers::Not),
    }
}

/// Reads a string or a non-empty array of non-empty strings.
fn parse_strings(name: &str, value: &Value) -> Result<Vec<String>, String> {
    let one = |v: &Value| match v {
        Value::String(s) if s.is_empty() => Err(format!("{name} must not contain an empty string")),
        Value::String(s) => Ok(s.clone()),
        other => Err(format!(
            "{name} must be a string or an array of strings, but contains {}",
            describe(other)
        )),
    };
    match value {
        Value::Array(items) if items.is_empty() => {
            Err(format!("{name} must not be an empty array"))
        }
        Value::Array(items) => items.iter().map(one).collect(),
        Value::String(_) => one(value).map(|s| vec![s]),
        other => Err(format!(
            "{name} must be a string or an array of strings, not {}",
            describe(other)
        )),
    }
}

/// Reads a `Principal` or `NotPrincipal` element.
fn parse_principals(name: &str, value: &Value) -> Result<Principals, String> {
    let shape = || {
        format!(
            "{name} must be \"*\" or an object like {{\"AWS\": [\"alice\", \"arn:aws:iam::123456789012:user/bob\"]}}"
        )
    };
    let entries = match value {
        Value::String(s) if s == "*" => return Ok(Principals::Everyone),
        Value::Object(object) => {
            if let Some(key) = object.keys().find(|k| *k != "AWS") {
                return Err(match key.as_str() {
                    "Service" | "Federated" | "CanonicalUser" => format!(
                        "{name} type {key:?} is not supported; only \"AWS\" principals (users) are"
                    ),
                    _ => format!("{name} has unknown type {key:?}; only \"AWS\" is supported"),
                });
            }
            match object.get("AWS") {
                Some(aws) => aws,
                None => return Err(shape()),
            }
        }
        _ => return Err(format!("{}, not {}", shape(), show(value))),
    };

    let list = match entries {
        Value::String(_) => std::slice::from_ref(entries),
        Value::Array(items) if items.is_empty() => {
            return Err(format!("{name} AWS must not be an empty array"));
        }
        Value::Array(items) => items.as_slice(),
        other => {
            return Err(format!(
                "{name} AWS must be a string or an array of strings, not {}",
                describe(other)
            ));
        }
    };
    let mut users = Vec::with_capacity(list.len());
    let mut everyone = false;
    for entry in list {
        let Value::String(entry) = entry else {
            return Err(format!(
                "{name} AWS must contain only strings, not {}",
                describe(entry)
            ));
        };
        match parse_user(entry) {
            Ok(None) => everyone = true,
            Ok(Some(user)) => users.push(user),
            Err(problem) => return Err(format!("{name} {entry:?}: {problem}")),
        }
    }
    // "*" among names makes the names redundant; keeping them would make the canonical form
    // depend on how the author spelt "everyone".
    Ok(if everyone {
        Principals::Everyone
    } else {
        Principals::Users(users)
    })
}

/// Reads one principal entry: `None` for `*`, else the user name.
fn parse_user(entry: &str) -> Result<Option<String>, String> {
    if entry == "*" {
        return Ok(None);
    }
    if entry.is_empty() {
        return Err("a principal must not be empty".into());
    }
    let Some(arn) = entry.strip_prefix("arn:") else {
        if entry.contains(['*', '?']) {
            return Err("wildcards are not allowed in user names; use \"*\" for everyone".into());
        }
        return Ok(Some(entry.to_string()));
    };
    let expected = "expected arn:aws:iam::<account>:user/<name>";
    let Some(rest) = arn.strip_prefix("aws:iam::") else {
        return Err(format!("not an IAM ARN; {expected}"));
    };
    let Some((account, resource)) = rest.split_once(':') else {
        return Err(format!("malformed ARN; {expected}"));
    };
    if account.is_empty() {
        return Err(format!("the ARN has no account; {expected}"));
    }
    if resource == "root" {
        return Err("account principals are not supported; name users".into());
    }
    let Some(path_and_name) = resource.strip_prefix("user/") else {
        return Err(format!("only user ARNs are supported; {expected}"));
    };
    // IAM user ARNs may carry a path (`user/division/alice`); the name is the last part.
    let name = path_and_name.rsplit('/').next().unwrap_or_default();
    if name.is_empty() {
        return Err(format!("the ARN names no user; {expected}"));
    }
    if name.contains(['*', '?']) {
        return Err("wildcards are not allowed in user names; use \"*\" for everyone".into());
    }
    Ok(Some(name.to_string()))
}

fn strings_to_json(strings: &[String]) -> Value {
    match strings {
        [one] => Value::String(one.clone()),
        many => Value::Array(many.iter().cloned().map(Value::String).collect()),
    }
}

/// A JSON value for error messages: strings quoted, anything else by its type so that a huge
/// object does not flood the message.
fn show(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        other => describe(other).to_string(),
    }
}

/// A `serde_json::Value` that refuses repeated keys in an object.
///
/// `serde_json` keeps the last of repeated keys, while other JSON readers keep the first. A
/// policy like `{"Effect": "Deny", "Effect": "Allow"}` would then mean different things to
/// different tools, so such documents are rejected outright.
struct StrictValue(Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        StrictValue::deserialize(deserializer).map(|v| v.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "key {key:?} appears twice in one object"
                )));
            }
            let StrictValue(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resource_policy(json: Value) -> Policy {
        Policy::parse(&json.to_string(), PolicyKind::Resource).unwrap()
    }

    fn identity_policy(json: Value) -> Policy {
        Policy::parse(&json.to_string(), PolicyKind::Identity).unwrap()
    }

    fn err(json: &str, kind: PolicyKind) -> String {
        Policy::parse(json, kind).unwrap_err().to_string()
    }

    fn identity_err(json: Value) -> String {
        err(&json.to_string(), PolicyKind::Identity)
    }

    fn resource_err(json: Value) -> String {
        err(&json.to_string(), PolicyKind::Resource)
    }

    /// An identity statement with the given extra fields over a minimal valid one.
    fn identity_statement(extra: Value) -> Value {
        let mut statement = json!({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"});
        if let (Value::Object(s), Value::Object(extra)) = (&mut statement, extra) {
            s.extend(extra);
        }
        json!({ "Statement": statement })
    }

    fn decide(policy: &Policy, action: &str, resource: &str, principal: Option<&str>) -> Decision {
        decide_in(policy, action, resource, principal, &Context::default())
    }

    fn decide_in(
        policy: &Policy,
        action: &str,
        resource: &str,
        principal: Option<&str>,
        context: &Context,
    ) -> Decision {
        policy.evaluate(&Request {
            action,
            resource,
            principal,
            context,
        })
    }

    // ---- document-level parsing ----

    #[test]
    fn minimal_identity_policy() {
        let p = identity_policy(identity_statement(json!({})));
        assert_eq!(p.version, "2012-10-17");
        assert_eq!(p.id, None);
        assert_eq!(
            p.statements,
            vec![Statement {
                sid: None,
                effect: Effect::Allow,
                principal: None,
                not_principal: None,
                action: Matchers::Any(vec!["s3:GetObject".into()]),
                resource: Matchers::Any(vec!["*".into()]),
                condition: Conditions::default(),
            }]
        );
    }

    #[test]
    fn version_and_id() {
        let p = identity_policy(json!({
            "Version": "2008-10-17",
            "Id": "my-policy",
            "Statement": [{"Effect": "Deny", "Action": "*", "Resource": "*"}]
        }));
        assert_eq!(p.version, "2008-10-17");
        assert_eq!(p.id.as_deref(), Some("my-policy"));
        assert_eq!(p.statements[0].effect, Effect::Deny);
    }

    #[test]
    fn rejects_invalid_json() {
        let message = err("{\"Statement\": ", PolicyKind::Identity);
        assert!(
            message.starts_with("policy is not valid JSON: "),
            "{message}"
        );
        let message = err("", PolicyKind::Identity);
        assert!(
            message.starts_with("policy is not valid JSON: "),
            "{message}"
        );
        let message = err("{} trailing", PolicyKind::Identity);
        assert!(
            message.starts_with("policy is not valid JSON: "),
            "{message}"
        );
    }

    #[test]
    fn rejects_repeated_keys() {
        let text = r#"{"Statement": {"Effect": "Deny", "Effect": "Allow", "Action": "*", "Resource": "*"}}"#;
        let message = err(text, PolicyKind::Identity);
        assert!(
            message.starts_with(
                "policy is not valid JSON: key \"Effect\" appears twice in one object"
            ),
            "{message}"
        );
    }

    #[test]
    fn rejects_non_object_document() {
        assert_eq!(
            err("[]", PolicyKind::Identity),
            "a policy must be a JSON object, not an array"
        );
        assert_eq!(
            err("\"policy\"", PolicyKind::Identity),
            "a policy must be a JSON object, not a string"
        );
        assert_eq!(
            err("null", PolicyKind::Identity),
            "a policy must be a JSON object, not null"
        );
    }

    #[test]
    fn rejects_unknown_top_level_key() {
        assert_eq!(
            identity_err(json!({"Statements": []})),
            "unknown top-level key \"Statements\" (expected Version, Id, Statement)"
        );
        assert_eq!(
            identity_err(json!({"version": "2012-10-17", "Statement": []})),
            "unknown top-level key \"version\" (expected Version, Id, Statement)"
        );
    }

    #[test]
    fn rejects_bad_version() {
        let mut doc = identity_statement(json!({}));
        doc["Version"] = json!("2020-01-01");
        assert_eq!(
            identity_err(doc.clone()),
            "Version must be \"2012-10-17\" or \"2008-10-17\", not \"2020-01-01\""
        );
        doc["Version"] = json!(2012);
        assert_eq!(
            identity_err(doc),
            "Version must be \"2012-10-17\" or \"2008-10-17\", not a number"
        );
    }

    #[test]
    fn rejects_bad_id() {
        let mut doc = identity_statement(json!({}));
        doc["Id"] = json!(["x"]);
        assert_eq!(identity_err(doc), "Id must be a string, not an array");
    }

    #[test]
    fn rejects_missing_or_malformed_statement() {
        assert_eq!(
            identity_err(json!({"Version": "2012-10-17"})),
            "Statement is required: a statement object or an array of them"
        );
        assert_eq!(
            identity_err(json!({"Statement": []})),
            "Statement must not be an empty array"
        );
        assert_eq!(
            identity_err(json!({"Statement": "Allow"})),
            "Statement must be an object or an array of objects, not a string"
        );
        assert_eq!(
            identity_err(
                json!({"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}, 7]})
            ),
            "Statement 2: a statement must be an object, not a number"
        );
    }

    #[test]
    fn rejects_oversized_document() {
        let padding = " ".repeat(MAX_POLICY_BYTES);
        let text = format!("{}{padding}", identity_statement(json!({})));
        assert_eq!(
            err(&text, PolicyKind::Identity),
            format!("policy is {} bytes; the limit is 20480 bytes", text.len())
        );
        // Exactly at the limit is fine.
        let base = identity_statement(json!({})).to_string();
        let text = format!("{base}{}", " ".repeat(MAX_POLICY_BYTES - base.len()));
        assert_eq!(text.len(), MAX_POLICY_BYTES);
        Policy::parse(&text, PolicyKind::Identity).unwrap();
    }

    #[test]
    fn rejects_too_many_statements() {
        // Real statements hit the byte limit first (each needs ~46 bytes), so the count is
        // checked before statements are validated; empty objects keep this one small.
        let text = format!(
            "{{\"Statement\": [{}]}}",
            vec!["{}"; MAX_STATEMENTS + 1].join(",")
        );
        assert!(text.len() <= MAX_POLICY_BYTES);
        assert_eq!(
            err(&text, PolicyKind::Identity),
            "policy has 1001 statements; the limit is 1000"
        );
        // At the limit the count is fine and the (empty) statements are what is wrong.
        let text = format!(
            "{{\"Statement\": [{}]}}",
            vec!["{}"; MAX_STATEMENTS].join(",")
        );
        assert_eq!(
            err(&text, PolicyKind::Identity),
            "Statement 1: Effect is required (Allow or Deny)"
        );
    }

    #[test]
    fn deeply_nested_json_is_an_error_not_a_crash() {
        let text = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        let message = err(&text, PolicyKind::Identity);
        assert!(message.starts_with("policy is not valid JSON"), "{message}");
        let text = format!(
            "{{\"Statement\": {}{}}}",
            "[".repeat(1000),
            "]".repeat(1000)
        );
        let message = err(&text, PolicyKind::Identity);
        assert!(message.starts_with("policy is not valid JSON"), "{message}");
    }

    // ---- statement parsing ----

    #[test]
    fn rejects_unknown_statement_key() {
        assert_eq!(
            identity_err(identity_statement(json!({"Actions": "s3:*"}))),
            "Statement 1: unknown key \"Actions\" (expected Sid, Effect, Principal, NotPrincipal, Action, NotAction, Resource, NotResource, Condition)"
        );
    }

    #[test]
    fn effect_must_be_exactly_allow_or_deny() {
        let doc = json!({"Statement": [
            {"Effect": "Allow", "Action": "*", "Resource": "*"},
            {"Effect": "allow", "Action": "*", "Resource": "*"}
        ]});
        assert_eq!(
            identity_err(doc),
            "Statement 2: Effect must be Allow or Deny, not \"allow\""
        );
        assert_eq!(
            identity_err(identity_statement(json!({"Effect": true}))),
            "Statement 1: Effect must be Allow or Deny, not a boolean"
        );
        assert_eq!(
            identity_err(json!({"Statement": {"Action": "*", "Resource": "*"}})),
            "Statement 1: Effect is required (Allow or Deny)"
        );
    }

    #[test]
    fn sid_must_be_a_unique_string() {
        assert_eq!(
            identity_err(identity_statement(json!({"Sid": 1}))),
            "Statement 1: Sid must be a string, not a number"
        );
        let doc = json!({"Statement": [
            {"Sid": "A", "Effect": "Allow", "Action": "*", "Resource": "*"},
            {"Sid": "B", "Effect": "Allow", "Action": "*", "Resource": "*"},
            {"Sid": "A", "Effect": "Deny", "Action": "*", "Resource": "*"}
        ]});
        assert_eq!(
            identity_err(doc),
            "Statement 3: Sid \"A\" is already used by statement 1; Sids must be unique"
        );
        // Statements without a Sid never clash.
        identity_policy(json!({"Statement": [
            {"Effect": "Allow", "Action": "*", "Resource": "*"},
            {"Effect": "Allow", "Action": "*", "Resource": "*"}
        ]}));
    }

    #[test]
    fn action_and_not_action() {
        assert_eq!(
            identity_err(json!({"Statement": {"Effect": "Allow", "Resource": "*"}})),
            "Statement 1: Action or NotAction is required"
        );
        assert_eq!(
            identity_err(identity_statement(json!({"NotAction": "s3:*"}))),
            "Statement 1: give either Action or NotAction, not both"
        );
        assert_eq!(
            identity_err(identity_statement(json!({"Action": []}))),
            "Statement 1: Action must not be an empty array"
        );
        assert_eq!(
            identity_err(identity_statement(json!({"Action": ""}))),
            "Statement 1: Action must not contain an empty string"
        );
        assert_eq!(
            identity_err(identity_statement(json!({"Action": ["s3:GetObject", ""]}))),
            "Statement 1: Action must not contain an empty string"
        );
        assert_eq!(
            identity_err(identity_statement(json!({"Action": ["s3:GetObject", 3]}))),
            "Statement 1: Action must be a string or an array of strings, but contains a number"
        );
        assert_eq!(
            identity_err(identity_statement(json!({"Action": {"s3": "*"}}))),
            "Statement 1: Action must be a string or an array of strings, not an object"
        );
        let p = identity_policy(
            json!({"Statement": {"Effect": "Allow", "NotAction": ["s3:Delete*", "KafkaDelete"], "Resource": "*"}}),
        );
        assert_eq!(
            p.statements[0].action,
            Matchers::Not(vec!["s3:Delete*".into(), "KafkaDelete".into()])
        );
    }

    #[test]
    fn resource_and_not_resource() {
        assert_eq!(
            identity_err(json!({"Statement": {"Effect": "Allow", "Action": "*"}})),
            "Statement 1: Resource or NotResource is required"
        );
        assert_eq!(
            identity_err(identity_statement(json!({"NotResource": "*"}))),
            "Statement 1: give either Resource or NotResource, not both"
        );
        assert_eq!(
            identity_err(identity_statement(json!({"Resource": [""]}))),
            "Statement 1: Resource must not contain an empty string"
        );
        assert_eq!(
            identity_err(identity_statement(json!({"Resource": null}))),
            "Statement 1: Resource must be a string or an array of strings, not null"
        );
        let p = identity_policy(
            json!({"Statement": {"Effect": "Deny", "Action": "*", "NotResource": "arn:aws:s3:::safe/*"}}),
        );
        assert_eq!(
            p.statements[0].resource,
            Matchers::Not(vec!["arn:aws:s3:::safe/*".into()])
        );
    }

    #[test]
    fn identity_policies_may_not_name_principals() {
        assert_eq!(
            identity_err(identity_statement(json!({"Principal": "*"}))),
            "Statement 1: Principal is not allowed in an identity policy; it applies to the user it is attached to"
        );
        assert_eq!(
            identity_err(identity_statement(json!({"NotPrincipal": {"AWS": "bob"}}))),
            "Statement 1: NotPrincipal is not allowed in an identity policy; it applies to the user it is attached to"
        );
    }

    #[test]
    fn resource_policies_must_name_exactly_one_principal_element() {
        assert_eq!(
            resource_err(identity_statement(json!({}))),
            "Statement 1: a bucket policy statement must name a Principal or NotPrincipal"
        );
        assert_eq!(
            resource_err(identity_statement(
                json!({"Principal": "*", "NotPrincipal": "*"})
            )),
            "Statement 1: give either Principal or NotPrincipal, not both"
        );
    }

    #[test]
    fn principal_forms() {
        let principal = |p: Value| {
            resource_policy(identity_statement(json!({ "Principal": p }))).statements[0]
                .principal
                .clone()
                .unwrap()
        };
        assert_eq!(principal(json!("*")), Principals::Everyone);
        assert_eq!(principal(json!({"AWS": "*"})), Principals::Everyone);
        assert_eq!(
            principal(json!({"AWS": ["alice", "*"]})),
            Principals::Everyone
        );
        assert_eq!(
            principal(json!({"AWS": "alice"})),
            Principals::Users(vec!["alice".into()])
        );
        assert_eq!(
            principal(json!({"AWS": [
                "alice",
                "arn:aws:iam::123456789012:user/bob",
                "arn:aws:iam::*:user/carol",
                "arn:aws:iam::123456789012:user/division/dave"
            ]})),
            Principals::Users(vec![
                "alice".into(),
                "bob".into(),
                "carol".into(),
                "dave".into()
            ])
        );
    }

    #[test]
    fn rejects_bad_principals() {
        let check = |p: Value, expected: &str| {
            assert_eq!(
                resource_err(identity_statement(json!({ "Principal": p }))),
                format!("Statement 1: {expected}")
            );
        };
        check(
            json!({"Service": "s3.amazonaws.com"}),
            "Principal type \"Service\" is not supported; only \"AWS\" principals (users) are",
        );
        check(
            json!({"Federated": "cognito-identity.amazonaws.com"}),
            "Principal type \"Federated\" is not supported; only \"AWS\" principals (users) are",
        );
        check(
            json!({"AWS": "alice", "CanonicalUser": "79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be"}),
            "Principal type \"CanonicalUser\" is not supported; only \"AWS\" principals (users) are",
        );
        check(
            json!({"Group": "x"}),
            "Principal has unknown type \"Group\"; only \"AWS\" is supported",
        );
        check(
            json!({}),
            "Principal must be \"*\" or an object like {\"AWS\": [\"alice\", \"arn:aws:iam::123456789012:user/bob\"]}",
        );
        check(
            json!("alice"),
            "Principal must be \"*\" or an object like {\"AWS\": [\"alice\", \"arn:aws:iam::123456789012:user/bob\"]}, not \"alice\"",
        );
        check(
            json!(["*"]),
            "Principal must be \"*\" or an object like {\"AWS\": [\"alice\", \"arn:aws:iam::123456789012:user/bob\"]}, not an array",
        );
        check(
            json!({"AWS": []}),
            "Principal AWS must not be an empty array",
        );
        check(
            json!({"AWS": 12}),
            "Principal AWS must be a string or an array of strings, not a number",
        );
        check(
            json!({"AWS": ["alice", null]}),
            "Principal AWS must contain only strings, not null",
        );
        check(
            json!({"AWS": "arn:aws:iam::123456789012:root"}),
            "Principal \"arn:aws:iam::123456789012:root\": account principals are not supported; name users",
        );
        check(
            json!({"AWS": "arn:aws:iam::123456789012:role/admin"}),
            "Principal \"arn:aws:iam::123456789012:role/admin\": only user ARNs are supported; expected arn:aws:iam::<account>:user/<name>",
        );
        check(
            json!({"AWS": "arn:aws:s3:::bucket"}),
            "Principal \"arn:aws:s3:::bucket\": not an IAM ARN; expected arn:aws:iam::<account>:user/<name>",
        );
        check(
            json!({"AWS": "arn:aws:iam::"}),
            "Principal \"arn:aws:iam::\": malformed ARN; expected arn:aws:iam::<account>:user/<name>",
        );
        check(
            json!({"AWS": "arn:aws:iam:::user/alice"}),
            "Principal \"arn:aws:iam:::user/alice\": the ARN has no account; expected arn:aws:iam::<account>:user/<name>",
        );
        check(
            json!({"AWS": "arn:aws:iam::1:user/"}),
            "Principal \"arn:aws:iam::1:user/\": the ARN names no user; expected arn:aws:iam::<account>:user/<name>",
        );
        check(
            json!({"AWS": ""}),
            "Principal \"\": a principal must not be empty",
        );
        check(
            json!({"AWS": "al*"}),
            "Principal \"al*\": wildcards are not allowed in user names; use \"*\" for everyone",
        );
        check(
            json!({"AWS": "arn:aws:iam::1:user/a?"}),
            "Principal \"arn:aws:iam::1:user/a?\": wildcards are not allowed in user names; use \"*\" for everyone",
        );
        let message = resource_err(identity_statement(
            json!({"NotPrincipal": {"Service": "x"}}),
        ));
        assert_eq!(
            message,
            "Statement 1: NotPrincipal type \"Service\" is not supported; only \"AWS\" principals (users) are"
        );
    }

    #[test]
    fn condition_errors_name_the_statement() {
        let doc = json!({"Statement": [
            {"Effect": "Allow", "Action": "*", "Resource": "*"},
            {"Effect": "Allow", "Action": "*", "Resource": "*", "Condition": {"IpAddress": {"aws:SourceIp": "300.0.0.1"}}}
        ]});
        assert_eq!(
            identity_err(doc),
            "Statement 2: Condition IpAddress key \"aws:sourceip\": value \"300.0.0.1\" is not an IP address or CIDR block (like 203.0.113.0/24 or 2001:db8::/32)"
        );
        let message = identity_err(identity_statement(
            json!({"Condition": {"StringEqual": {"a": "b"}}}),
        ));
        assert!(
            message.starts_with("Statement 1: Condition operator \"StringEqual\" is not supported"),
            "{message}"
        );
        assert_eq!(
            identity_err(identity_statement(json!({"Condition": "x"}))),
            "Statement 1: Condition must be an object mapping operators to keys, not a string"
        );
    }

    #[test]
    fn kafka_action_names_parse() {
        let p = identity_policy(identity_statement(
            json!({"Action": ["KafkaRead", "Kafka*", "kafkawrite"]}),
        ));
        assert_eq!(p.statements[0].action.patterns().len(), 3);
    }

    // ---- evaluation ----

    #[test]
    fn decision_and_truth_table() {
        use Decision::*;
        let table = [
            (Allow, Allow, Allow),
            (Allow, Deny, Deny),
            (Allow, NoMatch, Allow),
            (Deny, Allow, Deny),
            (Deny, Deny, Deny),
            (Deny, NoMatch, Deny),
            (NoMatch, Allow, Allow),
            (NoMatch, Deny, Deny),
            (NoMatch, NoMatch, NoMatch),
        ];
        for (a, b, expected) in table {
            assert_eq!(a.and(b), expected, "{a:?} and {b:?}");
        }
    }

    #[test]
    fn public_read_bucket_policy() {
        // The AWS documentation's "grant read-only permission to an anonymous user" example.
        let p = resource_policy(json!({
            "Version": "2012-10-17",
            "Statement": [{
                "Sid": "PublicRead",
                "Effect": "Allow",
                "Principal": "*",
                "Action": ["s3:GetObject", "s3:GetObjectVersion"],
                "Resource": ["arn:aws:s3:::bucket/public/*"]
            }]
        }));
        let key = "arn:aws:s3:::bucket/public/index.html";
        assert_eq!(decide(&p, "s3:GetObject", key, None), Decision::Allow);
        assert_eq!(
            decide(&p, "s3:GetObject", key, Some("alice")),
            Decision::Allow
        );
        assert_eq!(decide(&p, "s3:getobject", key, None), Decision::Allow);
        assert_eq!(decide(&p, "s3:PutObject", key, None), Decision::NoMatch);
        assert_eq!(
            decide(&p, "s3:GetObject", "arn:aws:s3:::bucket/private/x", None),
            Decision::NoMatch
        );
        // Resources are case-sensitive.
        assert_eq!(
            decide(&p, "s3:GetObject", "arn:aws:s3:::bucket/PUBLIC/x", None),
            Decision::NoMatch
        );
        assert_eq!(
            decide(&p, "s3:GetObject", "arn:aws:s3:::other/public/x", None),
            Decision::NoMatch
        );
    }

    #[test]
    fn deny_delete_object_beats_allow() {
        let p = resource_policy(json!({
            "Statement": [
                {"Sid": "AllowAll", "Effect": "Allow", "Principal": {"AWS": ["alice", "bob"]},
                 "Action": "s3:*", "Resource": ["arn:aws:s3:::bucket", "arn:aws:s3:::bucket/*"]},
                {"Sid": "NoDeletes", "Effect": "Deny", "Principal": "*",
                 "Action": "s3:DeleteObject", "Resource": "arn:aws:s3:::bucket/*"}
            ]
        }));
        let key = "arn:aws:s3:::bucket/a.txt";
        assert_eq!(
            decide(&p, "s3:PutObject", key, Some("alice")),
            Decision::Allow
        );
        assert_eq!(
            decide(&p, "s3:DeleteObject", key, Some("alice")),
            Decision::Deny
        );
        assert_eq!(
            decide(&p, "s3:DeleteObject", key, Some("mallory")),
            Decision::Deny
        );
        assert_eq!(
            decide(&p, "s3:PutObject", key, Some("mallory")),
            Decision::NoMatch
        );
        assert_eq!(decide(&p, "s3:PutObject", key, None), Decision::NoMatch);
        assert_eq!(
            decide(&p, "s3:ListBucket", "arn:aws:s3:::bucket", Some("bob")),
            Decision::Allow
        );
    }

    #[test]
    fn ip_restriction_with_not_ip_address() {
        // The AWS documentation's "deny unless from these networks" example.
        let p = resource_policy(json!({
            "Version": "2012-10-17",
            "Id": "S3PolicyId1",
            "Statement": [
                {"Sid": "Allow", "Effect": "Allow", "Principal": "*", "Action": "s3:*",
                 "Resource": ["arn:aws:s3:::bucket", "arn:aws:s3:::bucket/*"]},
                {"Sid": "IPDeny", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
                 "Resource": ["arn:aws:s3:::bucket", "arn:aws:s3:::bucket/*"],
                 "Condition": {"NotIpAddress": {"aws:SourceIp": ["192.0.2.0/24", "2001:db8::/32"]}}}
            ]
        }));
        let from = |ip: &str| Context {
            source_ip: Some(ip.parse().unwrap()),
            ..Context::default()
        };
        let key = "arn:aws:s3:::bucket/x";
        assert_eq!(
            decide_in(&p, "s3:GetObject", key, None, &from("192.0.2.10")),
            Decision::Allow
        );
        assert_eq!(
            decide_in(&p, "s3:GetObject", key, None, &from("2001:db8::5")),
            Decision::Allow
        );
        assert_eq!(
            decide_in(&p, "s3:GetObject", key, None, &from("198.51.100.1")),
            Decision::Deny
        );
        // Unknown source address: NotIpAddress on a missing key holds, so the deny applies.
        assert_eq!(
            decide_in(&p, "s3:GetObject", key, None, &Context::default()),
            Decision::Deny
        );
    }

    #[test]
    fn deny_insecure_transport() {
        let p = resource_policy(json!({
            "Statement": [
                {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::bucket/*"},
                {"Sid": "RequireTLS", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
                 "Resource": ["arn:aws:s3:::bucket", "arn:aws:s3:::bucket/*"],
                 "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
            ]
        }));
        let tls = Context {
            secure_transport: true,
            ..Context::default()
        };
        let key = "arn:aws:s3:::bucket/k";
        assert_eq!(
            decide_in(&p, "s3:GetObject", key, None, &tls),
            Decision::Allow
        );
        assert_eq!(
            decide_in(&p, "s3:GetObject", key, None, &Context::default()),
            Decision::Deny
        );
    }

    #[test]
    fn list_bucket_restricted_by_prefix() {
        // The AWS documentation's per-user home-directory example, with the user named.
        let p = identity_policy(json!({
            "Version": "2012-10-17",
            "Statement": [
                {"Sid": "ListHome", "Effect": "Allow", "Action": "s3:ListBucket",
                 "Resource": "arn:aws:s3:::bucket",
                 "Condition": {"StringLike": {"s3:prefix": ["", "home/", "home/alice/*"]}}},
                {"Sid": "UseHome", "Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"],
                 "Resource": "arn:aws:s3:::bucket/home/alice/*"}
            ]
        }));
        let with_prefix = |prefix: &str| {
            let mut context = Context::default();
            context
                .values
                .insert("s3:prefix".into(), vec![prefix.into()]);
            context
        };
        let list = |context: &Context| {
            decide_in(
                &p,
                "s3:ListBucket",
                "arn:aws:s3:::bucket",
                Some("alice"),
                context,
            )
        };
        assert_eq!(list(&with_prefix("home/alice/photos/")), Decision::Allow);
        assert_eq!(list(&with_prefix("home/")), Decision::Allow);
        assert_eq!(list(&with_prefix("")), Decision::Allow);
        assert_eq!(list(&with_prefix("home/bob/")), Decision::NoMatch);
        assert_eq!(list(&Context::default()), Decision::NoMatch);
        assert_eq!(
            decide(
                &p,
                "s3:PutObject",
                "arn:aws:s3:::bucket/home/alice/a",
                Some("alice")
            ),
            Decision::Allow
        );
        assert_eq!(
            decide(
                &p,
                "s3:PutObject",
                "arn:aws:s3:::bucket/home/bob/a",
                Some("alice")
            ),
            Decision::NoMatch
        );
    }

    #[test]
    fn kafka_policy() {
        let p = identity_policy(json!({
            "Version": "2012-10-17",
            "Statement": [
                {"Sid": "ReadWriteTopics", "Effect": "Allow", "Action": ["KafkaRead", "KafkaWrite"],
                 "Resource": "vast:kafka:topic:*"},
                {"Sid": "NoAdmin", "Effect": "Deny", "Action": ["KafkaCreate", "KafkaDelete"],
                 "Resource": "*"}
            ]
        }));
        let topic = "vast:kafka:topic:default:orders";
        let expected = [
            ("KafkaRead", Decision::Allow),
            ("KafkaWrite", Decision::Allow),
            ("kafkaread", Decision::Allow),
            ("KafkaCreate", Decision::Deny),
            ("KafkaDelete", Decision::Deny),
            ("KafkaDescribe", Decision::NoMatch),
            ("KafkaAlter", Decision::NoMatch),
            ("s3:GetObject", Decision::NoMatch),
        ];
        for (action, decision) in expected {
            assert_eq!(
                decide(&p, action, topic, Some("alice")),
                decision,
                "{action}"
            );
        }
        // Reads on something that is not a topic are not granted; deletes anywhere are denied.
        assert_eq!(
            decide(
                &p,
                "KafkaRead",
                "vast:kafka:group:default:g1",
                Some("alice")
            ),
            Decision::NoMatch
        );
        assert_eq!(
            decide(
                &p,
                "KafkaDelete",
                "vast:kafka:group:default:g1",
                Some("alice")
            ),
            Decision::Deny
        );
    }

    #[test]
    fn kafka_wildcard_action() {
        let p = identity_policy(
            json!({"Statement": {"Effect": "Allow", "Action": "Kafka*", "Resource": "*"}}),
        );
        assert_eq!(
            decide(&p, "KafkaAlter", "vast:kafka:topic:a:b", None),
            Decision::Allow
        );
        assert_eq!(decide(&p, "s3:GetObject", "x", None), Decision::NoMatch);
    }

    #[test]
    fn not_action_and_not_resource() {
        let p = identity_policy(json!({"Statement": [
            {"Effect": "Allow", "NotAction": "s3:Delete*", "Resource": "*"},
            {"Effect": "Deny", "Action": "*", "NotResource": ["arn:aws:s3:::mine", "arn:aws:s3:::mine/*"]}
        ]}));
        assert_eq!(
            decide(&p, "s3:GetObject", "arn:aws:s3:::mine/a", None),
            Decision::Allow
        );
        assert_eq!(
            decide(&p, "s3:DeleteObject", "arn:aws:s3:::mine/a", None),
            Decision::NoMatch
        );
        assert_eq!(
            decide(&p, "s3:GetObject", "arn:aws:s3:::theirs/a", None),
            Decision::Deny
        );
    }

    #[test]
    fn principal_matching() {
        let p = resource_policy(json!({"Statement": [
            {"Effect": "Allow", "Principal": {"AWS": ["alice", "arn:aws:iam::123456789012:user/bob"]},
             "Action": "s3:GetObject", "Resource": "*"}
        ]}));
        assert_eq!(
            decide(&p, "s3:GetObject", "k", Some("alice")),
            Decision::Allow
        );
        assert_eq!(
            decide(&p, "s3:GetObject", "k", Some("bob")),
            Decision::Allow
        );
        // User names match exactly.
        assert_eq!(
            decide(&p, "s3:GetObject", "k", Some("Alice")),
            Decision::NoMatch
        );
        assert_eq!(
            decide(&p, "s3:GetObject", "k", Some("carol")),
            Decision::NoMatch
        );
        assert_eq!(decide(&p, "s3:GetObject", "k", None), Decision::NoMatch);
    }

    #[test]
    fn not_principal_inverts() {
        let p = resource_policy(json!({"Statement": [
            {"Effect": "Deny", "NotPrincipal": {"AWS": "admin"}, "Action": "s3:DeleteBucket", "Resource": "*"},
            {"Effect": "Allow", "Principal": "*", "Action": "s3:DeleteBucket", "Resource": "*"}
        ]}));
        assert_eq!(
            decide(&p, "s3:DeleteBucket", "b", Some("admin")),
            Decision::Allow
        );
        assert_eq!(
            decide(&p, "s3:DeleteBucket", "b", Some("alice")),
            Decision::Deny
        );
        assert_eq!(decide(&p, "s3:DeleteBucket", "b", None), Decision::Deny);
        let everyone_but_nobody = resource_policy(json!({"Statement":
            {"Effect": "Allow", "NotPrincipal": "*", "Action": "*", "Resource": "*"}}));
        assert_eq!(
            decide(&everyone_but_nobody, "s3:GetObject", "k", Some("alice")),
            Decision::NoMatch
        );
    }

    #[test]
    fn conditions_gate_statements() {
        let p = identity_policy(json!({"Statement": {
            "Effect": "Allow", "Action": "s3:ListBucket", "Resource": "*",
            "Condition": {
                "StringEquals": {"aws:username": "alice"},
                "NumericLessThanEquals": {"s3:max-keys": "100"}
            }
        }}));
        let mut context = Context::default();
        context
            .values
            .insert("aws:username".into(), vec!["alice".into()]);
        context
            .values
            .insert("s3:max-keys".into(), vec!["50".into()]);
        assert_eq!(
            decide_in(&p, "s3:ListBucket", "b", None, &context),
            Decision::Allow
        );
        context
            .values
            .insert("s3:max-keys".into(), vec!["1000".into()]);
        assert_eq!(
            decide_in(&p, "s3:ListBucket", "b", None, &context),
            Decision::NoMatch
        );
    }

    #[test]
    fn combining_identity_and_bucket_policies() {
        let identity = identity_policy(json!({"Statement":
            {"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::bucket/*"}}));
        let bucket = resource_policy(json!({"Statement":
            {"Effect": "Deny", "Principal": {"AWS": "alice"}, "Action": "s3:PutObject", "Resource": "arn:aws:s3:::bucket/*"}}));
        let key = "arn:aws:s3:::bucket/k";
        let both = |action: &str, who: &str| {
            decide(&identity, action, key, Some(who)).and(decide(&bucket, action, key, Some(who)))
        };
        assert_eq!(both("s3:GetObject", "alice"), Decision::Allow);
        assert_eq!(both("s3:PutObject", "alice"), Decision::Deny);
        assert_eq!(both("s3:PutObject", "bob"), Decision::Allow);
    }

    // ---- round trip ----

    #[test]
    fn to_json_round_trips() {
        let identity = json!({
            "Version": "2008-10-17",
            "Id": "everything",
            "Statement": [
                {"Sid": "One", "Effect": "Allow", "Action": ["s3:Get*", "s3:List*"], "Resource": "*",
                 "Condition": {
                     "StringLike": {"S3:Prefix": ["home/*", "shared/*"]},
                     "ForAllValues:StringEquals": {"aws:TagKeys": ["env", "team"]},
                     "IpAddressIfExists": {"aws:SourceIp": "10.0.0.0/8"},
                     "NumericLessThan": {"s3:max-keys": 1000},
                     "Bool": {"aws:SecureTransport": true},
                     "Null": {"s3:delimiter": "false"}
                 }},
                {"Effect": "Deny", "NotAction": "KafkaDelete", "NotResource": ["vast:kafka:topic:*", "x"]},
                {"Sid": "Empty", "Effect": "Allow", "Action": "KafkaRead", "Resource": "vast:kafka:topic:*", "Condition": {}}
            ]
        });
        let p = identity_policy(identity);
        let again = Policy::parse(&p.to_json().to_string(), PolicyKind::Identity).unwrap();
        assert_eq!(p, again);
        assert_eq!(again.to_json(), p.to_json());

        let bucket = json!({
            "Statement": [
                {"Effect": "Allow", "Principal": {"AWS": ["alice", "arn:aws:iam::123456789012:user/bob"]},
                 "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"},
                {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::b"},
                {"Effect": "Deny", "NotPrincipal": {"AWS": "admin"}, "Action": "s3:Delete*", "Resource": "arn:aws:s3:::b/*"}
            ]
        });
        let p = resource_policy(bucket);
        let json = p.to_json();
        assert_eq!(json["Version"], "2012-10-17");
        assert_eq!(
            json["Statement"][0]["Principal"],
            json!({"AWS": ["alice", "bob"]})
        );
        assert_eq!(json["Statement"][1]["Principal"], json!("*"));
        let again = Policy::parse(&json.to_string(), PolicyKind::Resource).unwrap();
        assert_eq!(p, again);
    }

    #[test]
    fn garbage_inputs_never_panic() {
        let inputs = [
            "{}",
            "{\"Statement\": {}}",
            "{\"Statement\": [{}]}",
            "{\"Statement\": [null]}",
            "{\"Statement\": {\"Effect\": \"Allow\", \"Action\": [[]], \"Resource\": \"*\"}}",
            "{\"Statement\": {\"Effect\": \"Allow\", \"Action\": \"*\", \"Resource\": \"*\", \"Condition\": {\"StringLike\": {\"k\": [[]]}}}}",
            "{\"Statement\": {\"Effect\": \"Allow\", \"Action\": \"*\", \"Resource\": \"*\", \"Principal\": {\"AWS\": {}}}}",
            "1e999",
            "\"\\ud800\"",
            "{\"Statement\": {\"Effect\": \"Allow\", \"Action\": \"*\", \"Resource\": \"*\", \"Condition\": {\"NumericEquals\": {\"k\": 1e400}}}}",
        ];
        for input in inputs {
            for kind in [PolicyKind::Identity, PolicyKind::Resource] {
                assert!(Policy::parse(input, kind).is_err(), "{input}");
            }
        }
    }
}
