//! The `Condition` block of a policy statement: parsing it, checking it against the request
//! context, and writing it back out.
//!
//! The grammar and semantics follow AWS IAM: a block maps operator names (`StringLike`,
//! `IpAddress`, ...) to objects that map condition keys to one value or a list of values.
//! Every operator must hold, every key under an operator must hold, and a key holds when any
//! of its listed values matches. The `IfExists` suffix and the `ForAnyValue:` /
//! `ForAllValues:` set prefixes change how missing and multi-valued context keys are treated.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use serde_json::{Map, Value};

use crate::error::PolicyError;
use crate::wildcard;

/// Facts about a request that condition keys refer to.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The client's address; condition key `aws:SourceIp`. `None` means unknown, in which case
    /// the key counts as missing.
    pub source_ip: Option<IpAddr>,
    /// Whether the request came over TLS; condition key `aws:SecureTransport`, which is always
    /// present.
    pub secure_transport: bool,
    /// Other condition keys (lower-cased key name -> values), e.g. "s3:prefix", "aws:username",
    /// "s3:delimiter", "s3:max-keys", "aws:userid".
    ///
    /// A key with an empty list counts as missing, except that `ForAllValues:` holds for it.
    pub values: BTreeMap<String, Vec<String>>,
}

/// A condition operator, without its `IfExists` suffix or set prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operator {
    /// Exact, case-sensitive string equality.
    StringEquals,
    /// Negation of [`Operator::StringEquals`].
    StringNotEquals,
    /// String equality ignoring ASCII case.
    StringEqualsIgnoreCase,
    /// Negation of [`Operator::StringEqualsIgnoreCase`].
    StringNotEqualsIgnoreCase,
    /// Case-sensitive glob match; the policy value is the pattern (`*` and `?`).
    StringLike,
    /// Negation of [`Operator::StringLike`].
    StringNotLike,
    /// The context value is an IP address inside one of the listed addresses or CIDR blocks.
    IpAddress,
    /// Negation of [`Operator::IpAddress`].
    NotIpAddress,
    /// Boolean equality; policy values are `true` or `false`.
    Bool,
    /// Tests presence: `true` holds when the key is missing, `false` when it is present.
    Null,
    /// Numeric equality.
    NumericEquals,
    /// Negation of [`Operator::NumericEquals`].
    NumericNotEquals,
    /// Context value < policy value.
    NumericLessThan,
    /// Context value <= policy value.
    NumericLessThanEquals,
    /// Context value > policy value.
    NumericGreaterThan,
    /// Context value >= policy value.
    NumericGreaterThanEquals,
}

impl Operator {
    /// Every operator, so names can be looked up without a second hand-written table.
    const ALL: [Operator; 16] = [
        Operator::StringEquals,
        Operator::StringNotEquals,
        Operator::StringEqualsIgnoreCase,
        Operator::StringNotEqualsIgnoreCase,
        Operator::StringLike,
        Operator::StringNotLike,
        Operator::IpAddress,
        Operator::NotIpAddress,
        Operator::Bool,
        Operator::Null,
        Operator::NumericEquals,
        Operator::NumericNotEquals,
        Operator::NumericLessThan,
        Operator::NumericLessThanEquals,
        Operator::NumericGreaterThan,
        Operator::NumericGreaterThanEquals,
    ];

    /// The operator's name as written in policies (case-sensitive, as in AWS).
    pub fn name(self) -> &'static str {
        match self {
            Operator::StringEquals => "StringEquals",
            Operator::StringNotEquals => "StringNotEquals",
            Operator::StringEqualsIgnoreCase => "StringEqualsIgnoreCase",
            Operator::StringNotEqualsIgnoreCase => "StringNotEqualsIgnoreCase",
            Operator::StringLike => "StringLike",
            Operator::StringNotLike => "StringNotLike",
            Operator::IpAddress => "IpAddress",
            Operator::NotIpAddress => "NotIpAddress",
            Operator::Bool => "Bool",
            Operator::Null => "Null",
            Operator::NumericEquals => "NumericEquals",
            Operator::NumericNotEquals => "NumericNotEquals",
            Operator::NumericLessThan => "NumericLessThan",
            Operator::NumericLessThanEquals => "NumericLessThanEquals",
            Operator::NumericGreaterThan => "NumericGreaterThan",
            Operator::NumericGreaterThanEquals => "NumericGreaterThanEquals",
        }
    }

    /// The operator with this exact name, if there is one.
    pub fn from_name(name: &str) -> Option<Operator> {
        Operator::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Whether the operator holds when the context value does *not* match the policy values.
    ///
    /// Negated operators hold for a missing key, and for a multi-valued key only when no
    /// context value matches.
    pub fn is_negated(self) -> bool {
        matches!(
            self,
            Operator::StringNotEquals
                | Operator::StringNotEqualsIgnoreCase
                | Operator::StringNotLike
                | Operator::NotIpAddress
                | Operator::NumericNotEquals
        )
    }

    /// Whether this is one of the `String*` operators, the only ones that take a set prefix.
    pub fn is_string(self) -> bool {
        matches!(
            self,
            Operator::StringEquals
                | Operator::StringNotEquals
                | Operator::StringEqualsIgnoreCase
                | Operator::StringNotEqualsIgnoreCase
                | Operator::StringLike
                | Operator::StringNotLike
        )
    }

    /// Whether one context value matches one policy value, ignoring negation (a negated
    /// operator compares like its positive form and the caller inverts the result).
    fn value_matches(self, policy: &str, context: &str) -> bool {
        match self {
            Operator::StringEquals | Operator::StringNotEquals => policy == context,
            Operator::StringEqualsIgnoreCase | Operator::StringNotEqualsIgnoreCase => {
                policy.eq_ignore_ascii_case(context)
            }
            Operator::StringLike | Operator::StringNotLike => wildcard::matches(policy, context),
            Operator::IpAddress | Operator::NotIpAddress => {
                match (Cidr::parse(policy), context.parse::<IpAddr>()) {
                    (Some(block), Ok(ip)) => block.contains(ip),
                    _ => false,
                }
            }
            Operator::Bool => policy.eq_ignore_ascii_case(context),
            // Presence is decided before any value comparison; see `Condition::holds`.
            Operator::Null => false,
            Operator::NumericEquals
            | Operator::NumericNotEquals
            | Operator::NumericLessThan
            | Operator::NumericLessThanEquals
            | Operator::NumericGreaterThan
            | Operator::NumericGreaterThanEquals => {
                let (Some(p), Some(c)) = (parse_number(policy), parse_number(context)) else {
                    return false;
                };
                match self {
                    Operator::NumericLessThan => c < p,
                    Operator::NumericLessThanEquals => c <= p,
                    Operator::NumericGreaterThan => c > p,
                    Operator::NumericGreaterThanEquals => c >= p,
                    _ => c == p,
                }
            }
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How an operator treats a context key with several values (AWS's set operators).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SetQualifier {
    /// `ForAnyValue:`: holds when at least one context value satisfies the operator; false for
    /// a missing or empty key.
    ForAnyValue,
    /// `ForAllValues:`: holds when every context value satisfies the operator; true for a
    /// missing or empty key.
    ForAllValues,
}

impl SetQualifier {
    /// The prefix as written in policies, including the colon.
    pub fn prefix(self) -> &'static str {
        match self {
            SetQualifier::ForAnyValue => "ForAnyValue:",
            SetQualifier::ForAllValues => "ForAllValues:",
        }
    }
}

/// One condition key under one operator, e.g. `"StringLike": {"s3:prefix": ["home/*"]}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// The comparison.
    pub operator: Operator,
    /// `ForAnyValue:` / `ForAllValues:`, if given.
    pub qualifier: Option<SetQualifier>,
    /// Whether the operator had the `IfExists` suffix: a missing key then satisfies it.
    pub if_exists: bool,
    /// The condition key, lower-cased (keys are case-insensitive).
    pub key: String,
    /// The policy values; the condition holds if any one matches. Numbers and booleans are kept
    /// in their JSON text form.
    pub values: Vec<String>,
}

impl Condition {
    /// The operator as written in a policy, with any set prefix and `IfExists` suffix.
    pub fn operator_name(&self) -> String {
        let prefix = self.qualifier.map_or("", SetQualifier::prefix);
        let suffix = if self.if_exists { "IfExists" } else { "" };
        format!("{prefix}{}{suffix}", self.operator.name())
    }

    /// Whether this condition holds for the request context.
    pub fn holds(&self, context: &Context) -> bool {
        let found = lookup(context, &self.key);
        let present: &[Cow<'_, str>] = found.as_deref().unwrap_or(&[]);

        if self.operator == Operator::Null {
            // `"Null": {"k": "true"}` asks "is k missing?"; listing both values is odd but is
            // an OR like everywhere else, so it always holds.
            let missing = present.is_empty();
            return self.values.iter().any(|v| (v == "true") == missing);
        }

        let negated = self.operator.is_negated();
        if present.is_empty() {
            if self.if_exists {
                return true;
            }
            return match self.qualifier {
                Some(SetQualifier::ForAllValues) => true,
                Some(SetQualifier::ForAnyValue) => false,
                None => negated,
            };
        }

        // A context value satisfies the operator when it matches some policy value, or for a
        // negated operator when it matches none of them.
        let satisfies = |context_value: &Cow<'_, str>| {
            let matched = self
                .values
                .iter()
                .any(|policy_value| self.operator.value_matches(policy_value, context_value));
            matched != negated
        };
        match self.qualifier {
            Some(SetQualifier::ForAnyValue) => present.iter().any(satisfies),
            Some(SetQualifier::ForAllValues) => present.iter().all(satisfies),
            // Without a prefix AWS reads a negated operator as "no context value matches", and
            // a positive one as "some context value matches".
            None if negated => present.iter().all(satisfies),
            None => present.iter().any(satisfies),
        }
    }
}

/// A statement's whole `Condition` block; it holds when every condition in it holds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Conditions {
    /// One entry per operator and key, sorted by operator name and then key so that equal
    /// blocks compare equal however their JSON was ordered.
    pub entries: Vec<Condition>,
}

impl Conditions {
    /// Parses a `Condition` block, checking operator names and value shapes.
    pub fn parse(block: &Value) -> Result<Conditions, PolicyError> {
        let Value::Object(operators) = block else {
            return Err(error(format!(
                "Condition must be an object mapping operators to keys, not {}",
                describe(block)
            )));
        };
        let mut entries = Vec::new();
        for (name, keys) in operators {
            let (operator, qualifier, if_exists) = parse_operator_name(name)?;
            let Value::Object(keys) = keys else {
                return Err(error(format!(
                    "Condition {name} must be an object mapping condition keys to values, not {}",
                    describe(keys)
                )));
            };
            if keys.is_empty() {
                return Err(error(format!("Condition {name} names no condition keys")));
            }
            let first_new = entries.len();
            for (key, values) in keys {
                if key.is_empty() {
                    return Err(error(format!(
                        "Condition {name} has an empty condition key"
                    )));
                }
                let key = key.to_ascii_lowercase();
                // Keys are case-insensitive, so two spellings of one key would silently turn
                // into a single entry on the way back to JSON; refuse instead of guessing.
                if entries[first_new..]
                    .iter()
                    .any(|c: &Condition| c.key == key)
                {
                    return Err(error(format!(
                        "Condition {name} names the key {key:?} more than once (keys are case-insensitive)"
                    )));
                }
                let values = parse_values(name, &key, values)?;
                check_values(operator, name, &key, &values)?;
                entries.push(Condition {
                    operator,
                    qualifier,
                    if_exists,
                    key,
                    values,
                });
            }
        }
        entries.sort_by(|a, b| {
            a.operator_name()
                .cmp(&b.operator_name())
                .then_with(|| a.key.cmp(&b.key))
        });
        Ok(Conditions { entries })
    }

    /// Whether the block has no conditions (and so always holds).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether every condition holds for the request context.
    pub fn holds(&self, context: &Context) -> bool {
        self.entries.iter().all(|c| c.holds(context))
    }

    /// The block as JSON, in the form [`Conditions::parse`] reads back to an equal value.
    pub fn to_json(&self) -> Value {
        let mut operators = Map::new();
        for condition in &self.entries {
            let values = match condition.values.as_slice() {
                [one] => Value::String(one.clone()),
                many => Value::Array(many.iter().cloned().map(Value::String).collect()),
            };
            let keys = operators
                .entry(condition.operator_name())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(keys) = keys {
                keys.insert(condition.key.clone(), values);
            }
        }
        Value::Object(operators)
    }
}

/// An address block for `IpAddress` / `NotIpAddress`: an address and how many leading bits of
/// it must match. A bare address is a block of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    fn parse(text: &str) -> Option<Cidr> {
        let (addr, prefix) = match text.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (text, None),
        };
        let addr: IpAddr = addr.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            // `u8::from_str` accepts a leading `+`, which no CIDR notation does.
            Some(p) if !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()) => {
                p.parse::<u8>().ok().filter(|&p| p <= max)?
            }
            Some(_) => return None,
        };
        Some(Cidr { addr, prefix })
    }

    fn contains(self, ip: IpAddr) -> bool {
        // Dual-stack listeners report IPv4 clients as `::ffff:a.b.c.d`; policies name them in
        // IPv4 form, so compare them as IPv4.
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(block), IpAddr::V4(ip)) => same_prefix(
                u32::from(block).into(),
                u32::from(ip).into(),
                self.prefix,
                32,
            ),
            (IpAddr::V6(block), IpAddr::V6(ip)) => {
                same_prefix(u128::from(block), u128::from(ip), self.prefix, 128)
            }
            _ => false,
        }
    }
}

/// Whether the top `prefix` bits of two `width`-bit numbers agree.
fn same_prefix(a: u128, b: u128, prefix: u8, width: u32) -> bool {
    let prefix = u32::from(prefix).min(width);
    // Shifting by the full width would overflow; a zero prefix simply matches everything.
    let Some(shift) = width.checked_sub(prefix).filter(|&s| s < width) else {
        return true;
    };
    (a >> shift) == (b >> shift)
}

/// Parses a number for the `Numeric*` operators; infinities and NaN (which Rust's parser
/// accepts as words) are not numbers a policy can mean.
fn parse_number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|n| n.is_finite())
}

/// The values of a condition key in the request, or `None` when the key is missing.
fn lookup<'c>(context: &'c Context, key: &str) -> Option<Vec<Cow<'c, str>>> {
    match key {
        "aws:sourceip" => context.source_ip.map(|ip| vec![Cow::Owned(ip.to_string())]),
        "aws:securetransport" => Some(vec![Cow::Borrowed(if context.secure_transport {
            "true"
        } else {
            "false"
        })]),
        _ => context
            .values
            .get(key)
            .map(|values| values.iter().map(|v| Cow::Borrowed(v.as_str())).collect()),
    }
}

/// Splits an operator name into the operator, its set prefix and its `IfExists` suffix.
fn parse_operator_name(name: &str) -> Result<(Operator, Option<SetQualifier>, bool), PolicyError> {
    let (qualifier, rest) = if let Some(rest) = name.strip_prefix("ForAnyValue:") {
        (Some(SetQualifier::ForAnyValue), rest)
    } else if let Some(rest) = name.strip_prefix("ForAllValues:") {
        (Some(SetQualifier::ForAllValues), rest)
    } else {
        (None, name)
    };
    let (base, if_exists) = match rest.strip_suffix("IfExists") {
        Some(base) => (base, true),
        None => (rest, false),
    };
    let Some(operator) = Operator::from_name(base) else {
        return Err(error(format!(
            "Condition operator {name:?} is not supported; supported operators are {}, \
             each optionally ending in IfExists (except Null), and the String ones optionally \
             prefixed with ForAnyValue: or ForAllValues:",
            Operator::ALL.map(Operator::name).join(", ")
        )));
    };
    if operator == Operator::Null && if_exists {
        return Err(error(
            "Condition operator \"NullIfExists\" is not supported: Null already tests whether the key exists"
                .to_string(),
        ));
    }
    if let Some(qualifier) = qualifier
        && !operator.is_string()
    {
        return Err(error(format!(
            "Condition operator {name:?} is not supported: the {} prefix applies only to the String operators",
            qualifier.prefix()
        )));
    }
    Ok((operator, qualifier, if_exists))
}

/// Reads a key's value: one scalar or a non-empty array of scalars, each kept as text.
fn parse_values(operator: &str, key: &str, value: &Value) -> Result<Vec<String>, PolicyError> {
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    let bad = |v: &Value| {
        error(format!(
            "Condition {operator} key {key:?}: values must be strings, numbers or booleans, not {}",
            describe(v)
        ))
    };
    match value {
        Value::Array(items) if items.is_empty() => Err(error(format!(
            "Condition {operator} key {key:?}: the list of values is empty"
        ))),
        Value::Array(items) => items
            .iter()
            .map(|item| scalar(item).ok_or_else(|| bad(item)))
            .collect(),
        other => scalar(other).map(|s| vec![s]).ok_or_else(|| bad(other)),
    }
}

/// Checks values whose meaning the operator fixes, so that a typo fails when the policy is
/// stored rather than silently never matching.
fn check_values(
    operator: Operator,
    name: &str,
    key: &str,
    values: &[String],
) -> Result<(), PolicyError> {
    for value in values {
        let problem = match operator {
            Operator::IpAddress | Operator::NotIpAddress if Cidr::parse(value).is_none() => {
                "is not an IP address or CIDR block (like 203.0.113.0/24 or 2001:db8::/32)"
            }
            Operator::Bool | Operator::Null if value != "true" && value != "false" => {
                "must be \"true\" or \"false\""
            }
            Operator::NumericEquals
            | Operator::NumericNotEquals
            | Operator::NumericLessThan
            | Operator::NumericLessThanEquals
            | Operator::NumericGreaterThan
            | Operator::NumericGreaterThanEquals
                if parse_number(value).is_none() =>
            {
                "is not a number"
            }
            _ => continue,
        };
        return Err(error(format!(
            "Condition {name} key {key:?}: value {value:?} {problem}"
        )));
    }
    Ok(())
}

/// A short description of a JSON value's type for error messages.
pub(crate) fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn error(message: String) -> PolicyError {
    PolicyError::Condition(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(block: Value) -> Conditions {
        Conditions::parse(&block).unwrap()
    }

    fn parse_err(block: Value) -> String {
        Conditions::parse(&block).unwrap_err().to_string()
    }

    fn ctx(pairs: &[(&str, &[&str])]) -> Context {
        Context {
            values: pairs
                .iter()
                .map(|(k, vs)| (k.to_string(), vs.iter().map(|v| v.to_string()).collect()))
                .collect(),
            ..Context::default()
        }
    }

    fn ip_ctx(ip: &str) -> Context {
        Context {
            source_ip: Some(ip.parse().unwrap()),
            ..Context::default()
        }
    }

    fn holds(block: Value, context: &Context) -> bool {
        parse(block).holds(context)
    }

    // ---- parsing ----

    #[test]
    fn empty_block_always_holds() {
        let c = parse(json!({}));
        assert!(c.is_empty());
        assert!(c.holds(&Context::default()));
    }

    #[test]
    fn keys_are_lower_cased_and_values_become_text() {
        let c = parse(
            json!({"NumericLessThan": {"S3:Max-Keys": 10}, "Bool": {"aws:SecureTransport": true}}),
        );
        assert_eq!(
            c.entries,
            vec![
                Condition {
                    operator: Operator::Bool,
                    qualifier: None,
                    if_exists: false,
                    key: "aws:securetransport".into(),
                    values: vec!["true".into()],
                },
                Condition {
                    operator: Operator::NumericLessThan,
                    qualifier: None,
                    if_exists: false,
                    key: "s3:max-keys".into(),
                    values: vec!["10".into()],
                },
            ]
        );
    }

    #[test]
    fn operator_names_with_prefix_and_suffix() {
        let c = parse(json!({"ForAllValues:StringLikeIfExists": {"s3:prefix": ["a*", "b*"]}}));
        let entry = &c.entries[0];
        assert_eq!(entry.operator, Operator::StringLike);
        assert_eq!(entry.qualifier, Some(SetQualifier::ForAllValues));
        assert!(entry.if_exists);
        assert_eq!(entry.operator_name(), "ForAllValues:StringLikeIfExists");
        for op in Operator::ALL {
            assert_eq!(Operator::from_name(op.name()), Some(op));
        }
    }

    #[test]
    fn all_operators_parse_with_if_exists() {
        for op in Operator::ALL {
            let value = match op {
                Operator::IpAddress | Operator::NotIpAddress => "10.0.0.0/8",
                Operator::Bool | Operator::Null => "true",
                o if o.name().starts_with("Numeric") => "5",
                _ => "x",
            };
            parse(json!({ op.name(): {"k": value} }));
            if op != Operator::Null {
                parse(json!({ format!("{}IfExists", op.name()): {"k": value} }));
            }
        }
    }

    #[test]
    fn rejects_non_object_block() {
        assert_eq!(
            parse_err(json!(["StringEquals"])),
            "Condition must be an object mapping operators to keys, not an array"
        );
    }

    #[test]
    fn rejects_unknown_operator_by_name() {
        let message = parse_err(json!({"StringEqual": {"k": "v"}}));
        assert!(
            message.starts_with("Condition operator \"StringEqual\" is not supported;"),
            "{message}"
        );
        // Operator names are case-sensitive, as in AWS.
        let message = parse_err(json!({"stringequals": {"k": "v"}}));
        assert!(
            message.contains("\"stringequals\" is not supported"),
            "{message}"
        );
        let message = parse_err(json!({"DateEquals": {"k": "v"}}));
        assert!(
            message.contains("\"DateEquals\" is not supported"),
            "{message}"
        );
    }

    #[test]
    fn rejects_null_if_exists() {
        assert_eq!(
            parse_err(json!({"NullIfExists": {"k": "true"}})),
            "Condition operator \"NullIfExists\" is not supported: Null already tests whether the key exists"
        );
    }

    #[test]
    fn rejects_set_prefix_on_non_string_operators() {
        assert_eq!(
            parse_err(json!({"ForAnyValue:IpAddress": {"aws:sourceip": "10.0.0.0/8"}})),
            "Condition operator \"ForAnyValue:IpAddress\" is not supported: the ForAnyValue: prefix applies only to the String operators"
        );
        assert!(
            parse_err(json!({"ForAllValues:NumericEquals": {"k": 1}}))
                .contains("the ForAllValues: prefix applies only to the String operators")
        );
    }

    #[test]
    fn rejects_bad_operator_bodies() {
        assert_eq!(
            parse_err(json!({"StringEquals": "v"})),
            "Condition StringEquals must be an object mapping condition keys to values, not a string"
        );
        assert_eq!(
            parse_err(json!({"StringEquals": {}})),
            "Condition StringEquals names no condition keys"
        );
        assert_eq!(
            parse_err(json!({"StringEquals": {"": "v"}})),
            "Condition StringEquals has an empty condition key"
        );
    }

    #[test]
    fn rejects_keys_repeated_in_another_case() {
        assert_eq!(
            parse_err(json!({"StringEquals": {"s3:prefix": "a", "S3:Prefix": "b"}})),
            "Condition StringEquals names the key \"s3:prefix\" more than once (keys are case-insensitive)"
        );
        // The same key under different operators is fine: they are ANDed.
        parse(json!({"StringLike": {"s3:prefix": "a*"}, "StringNotLike": {"s3:prefix": "ab*"}}));
    }

    #[test]
    fn rejects_bad_values() {
        assert_eq!(
            parse_err(json!({"StringEquals": {"k": []}})),
            "Condition StringEquals key \"k\": the list of values is empty"
        );
        assert_eq!(
            parse_err(json!({"StringEquals": {"k": null}})),
            "Condition StringEquals key \"k\": values must be strings, numbers or booleans, not null"
        );
        assert_eq!(
            parse_err(json!({"StringEquals": {"k": ["a", {"b": 1}]}})),
            "Condition StringEquals key \"k\": values must be strings, numbers or booleans, not an object"
        );
        assert_eq!(
            parse_err(json!({"StringEquals": {"k": [["a"]]}})),
            "Condition StringEquals key \"k\": values must be strings, numbers or booleans, not an array"
        );
    }

    #[test]
    fn rejects_bad_ip_values() {
        for bad in [
            "10.0.0.0/33",
            "10.0.0",
            "10.0.0.0/",
            "10.0.0.0/+8",
            "10.0.0.0/-1",
            "::/129",
            "example.com",
            "10.0.0.0/8/8",
            "",
        ] {
            assert_eq!(
                parse_err(json!({"IpAddress": {"aws:SourceIp": bad}})),
                format!(
                    "Condition IpAddress key \"aws:sourceip\": value {bad:?} is not an IP address or CIDR block (like 203.0.113.0/24 or 2001:db8::/32)"
                ),
            );
        }
        parse(
            json!({"NotIpAddress": {"aws:SourceIp": ["10.0.0.1", "0.0.0.0/0", "::/0", "2001:db8::/32", "::1"]}}),
        );
    }

    #[test]
    fn rejects_bad_bool_null_and_numeric_values() {
        assert_eq!(
            parse_err(json!({"Bool": {"aws:SecureTransport": "yes"}})),
            "Condition Bool key \"aws:securetransport\": value \"yes\" must be \"true\" or \"false\""
        );
        assert!(
            parse_err(json!({"Bool": {"k": "True"}})).contains("must be \"true\" or \"false\"")
        );
        assert!(
            parse_err(json!({"Null": {"k": 1}}))
                .contains("value \"1\" must be \"true\" or \"false\"")
        );
        assert_eq!(
            parse_err(json!({"NumericLessThan": {"s3:max-keys": "ten"}})),
            "Condition NumericLessThan key \"s3:max-keys\": value \"ten\" is not a number"
        );
        assert!(parse_err(json!({"NumericEquals": {"k": "NaN"}})).contains("is not a number"));
        assert!(parse_err(json!({"NumericEquals": {"k": "inf"}})).contains("is not a number"));
        parse(json!({"NumericEquals": {"k": ["1.5", -3, 1e3]}}));
    }

    // ---- string operators ----

    #[test]
    fn string_equals_any_listed_value() {
        let block = json!({"StringEquals": {"aws:username": ["alice", "bob"]}});
        assert!(holds(block.clone(), &ctx(&[("aws:username", &["bob"])])));
        assert!(!holds(block.clone(), &ctx(&[("aws:username", &["Bob"])])));
        assert!(!holds(block, &Context::default()));
    }

    #[test]
    fn string_not_equals() {
        let block = json!({"StringNotEquals": {"aws:username": ["alice", "bob"]}});
        assert!(holds(block.clone(), &ctx(&[("aws:username", &["carol"])])));
        assert!(!holds(block.clone(), &ctx(&[("aws:username", &["alice"])])));
        // A missing key satisfies a negated operator.
        assert!(holds(block, &Context::default()));
    }

    #[test]
    fn string_ignore_case() {
        let block = json!({"StringEqualsIgnoreCase": {"aws:username": "Alice"}});
        assert!(holds(block.clone(), &ctx(&[("aws:username", &["aLICE"])])));
        assert!(!holds(block, &ctx(&[("aws:username", &["alicia"])])));
        let block = json!({"StringNotEqualsIgnoreCase": {"aws:username": "Alice"}});
        assert!(!holds(block.clone(), &ctx(&[("aws:username", &["ALICE"])])));
        assert!(holds(block, &ctx(&[("aws:username", &["bob"])])));
    }

    #[test]
    fn string_like_is_a_case_sensitive_glob() {
        let block = json!({"StringLike": {"s3:prefix": ["home/*", "shared/?"]}});
        assert!(holds(
            block.clone(),
            &ctx(&[("s3:prefix", &["home/alice/"])])
        ));
        assert!(holds(block.clone(), &ctx(&[("s3:prefix", &["shared/x"])])));
        assert!(!holds(
            block.clone(),
            &ctx(&[("s3:prefix", &["shared/xy"])])
        ));
        assert!(!holds(
            block.clone(),
            &ctx(&[("s3:prefix", &["HOME/alice"])])
        ));
        assert!(!holds(block, &Context::default()));
        let block = json!({"StringNotLike": {"s3:prefix": "secret/*"}});
        assert!(holds(block.clone(), &ctx(&[("s3:prefix", &["public/"])])));
        assert!(!holds(block.clone(), &ctx(&[("s3:prefix", &["secret/a"])])));
        assert!(holds(block, &Context::default()));
    }

    #[test]
    fn condition_keys_are_case_insensitive() {
        let block = json!({"StringEquals": {"AWS:UserName": "alice"}});
        assert!(holds(block, &ctx(&[("aws:username", &["alice"])])));
    }

    #[test]
    fn all_operators_and_all_keys_must_hold() {
        let block = json!({
            "StringEquals": {"aws:username": "alice", "s3:delimiter": "/"},
            "StringLike": {"s3:prefix": "home/*"}
        });
        let all = ctx(&[
            ("aws:username", &["alice"]),
            ("s3:delimiter", &["/"]),
            ("s3:prefix", &["home/a"]),
        ]);
        assert!(holds(block.clone(), &all));
        let wrong_delimiter = ctx(&[
            ("aws:username", &["alice"]),
            ("s3:delimiter", &["-"]),
            ("s3:prefix", &["home/a"]),
        ]);
        assert!(!holds(block.clone(), &wrong_delimiter));
        let wrong_prefix = ctx(&[
            ("aws:username", &["alice"]),
            ("s3:delimiter", &["/"]),
            ("s3:prefix", &["tmp/a"]),
        ]);
        assert!(!holds(block, &wrong_prefix));
    }

    // ---- missing keys ----

    #[test]
    fn if_exists_holds_for_missing_key_and_checks_present_key() {
        let block = json!({"StringEqualsIfExists": {"s3:delimiter": "/"}});
        assert!(holds(block.clone(), &Context::default()));
        assert!(holds(block.clone(), &ctx(&[("s3:delimiter", &["/"])])));
        assert!(!holds(block, &ctx(&[("s3:delimiter", &["-"])])));
        let block = json!({"NumericLessThanIfExists": {"s3:max-keys": 100}});
        assert!(holds(block.clone(), &Context::default()));
        assert!(!holds(block, &ctx(&[("s3:max-keys", &["500"])])));
    }

    #[test]
    fn null_tests_presence() {
        let absent = Context::default();
        let present = ctx(&[("s3:prefix", &["x"])]);
        let empty = ctx(&[("s3:prefix", &[])]);
        let missing_required = json!({"Null": {"s3:prefix": "true"}});
        assert!(holds(missing_required.clone(), &absent));
        assert!(holds(missing_required.clone(), &empty));
        assert!(!holds(missing_required, &present));
        let present_required = json!({"Null": {"s3:prefix": false}});
        assert!(!holds(present_required.clone(), &absent));
        assert!(holds(present_required, &present));
        // SecureTransport is always known.
        assert!(!holds(
            json!({"Null": {"aws:SecureTransport": "true"}}),
            &absent
        ));
        // SourceIp is missing when the address is unknown.
        assert!(holds(json!({"Null": {"aws:SourceIp": "true"}}), &absent));
        assert!(!holds(
            json!({"Null": {"aws:SourceIp": "true"}}),
            &ip_ctx("10.0.0.1")
        ));
    }

    #[test]
    fn missing_key_for_each_operator_kind() {
        let none = Context::default();
        assert!(!holds(json!({"StringEquals": {"k": "v"}}), &none));
        assert!(!holds(json!({"StringLike": {"k": "*"}}), &none));
        assert!(!holds(json!({"NumericEquals": {"k": 1}}), &none));
        assert!(!holds(json!({"Bool": {"k": "true"}}), &none));
        assert!(!holds(
            json!({"IpAddress": {"aws:SourceIp": "0.0.0.0/0"}}),
            &none
        ));
        assert!(holds(json!({"StringNotEquals": {"k": "v"}}), &none));
        assert!(holds(json!({"StringNotLike": {"k": "*"}}), &none));
        assert!(holds(
            json!({"StringNotEqualsIgnoreCase": {"k": "v"}}),
            &none
        ));
        assert!(holds(json!({"NumericNotEquals": {"k": 1}}), &none));
        assert!(holds(
            json!({"NotIpAddress": {"aws:SourceIp": "0.0.0.0/0"}}),
            &none
        ));
        assert!(holds(json!({"BoolIfExists": {"k": "true"}}), &none));
        assert!(holds(
            json!({"IpAddressIfExists": {"aws:SourceIp": "10.0.0.0/8"}}),
            &none
        ));
    }

    // ---- multi-valued keys and set operators ----

    #[test]
    fn multi_valued_key_without_prefix() {
        let tags = ctx(&[("aws:tagkeys", &["env", "team"])]);
        assert!(holds(
            json!({"StringEquals": {"aws:TagKeys": "team"}}),
            &tags
        ));
        assert!(!holds(
            json!({"StringEquals": {"aws:TagKeys": "owner"}}),
            &tags
        ));
        // Negated: only when no context value matches.
        assert!(!holds(
            json!({"StringNotEquals": {"aws:TagKeys": "team"}}),
            &tags
        ));
        assert!(holds(
            json!({"StringNotEquals": {"aws:TagKeys": ["owner", "cost"]}}),
            &tags
        ));
    }

    #[test]
    fn for_any_value() {
        let tags = ctx(&[("aws:tagkeys", &["env", "team"])]);
        let block = json!({"ForAnyValue:StringEquals": {"aws:TagKeys": ["team", "owner"]}});
        assert!(holds(block.clone(), &tags));
        assert!(!holds(block.clone(), &ctx(&[("aws:tagkeys", &["env"])])));
        assert!(!holds(block.clone(), &Context::default()));
        assert!(!holds(block, &ctx(&[("aws:tagkeys", &[])])));
        // At least one context value is not in the list.
        let block = json!({"ForAnyValue:StringNotEquals": {"aws:TagKeys": "env"}});
        assert!(holds(block.clone(), &tags));
        assert!(!holds(block, &ctx(&[("aws:tagkeys", &["env"])])));
        let block = json!({"ForAnyValue:StringLikeIfExists": {"aws:TagKeys": "t*"}});
        assert!(holds(block, &Context::default()));
    }

    #[test]
    fn for_all_values() {
        let block = json!({"ForAllValues:StringEquals": {"aws:TagKeys": ["env", "team"]}});
        assert!(holds(
            block.clone(),
            &ctx(&[("aws:tagkeys", &["env", "team"])])
        ));
        assert!(holds(block.clone(), &ctx(&[("aws:tagkeys", &["team"])])));
        assert!(!holds(
            block.clone(),
            &ctx(&[("aws:tagkeys", &["team", "owner"])])
        ));
        assert!(holds(block.clone(), &Context::default()));
        assert!(holds(block, &ctx(&[("aws:tagkeys", &[])])));
        let block = json!({"ForAllValues:StringNotLike": {"aws:TagKeys": "secret*"}});
        assert!(holds(
            block.clone(),
            &ctx(&[("aws:tagkeys", &["env", "team"])])
        ));
        assert!(!holds(
            block,
            &ctx(&[("aws:tagkeys", &["env", "secret-x"])])
        ));
    }

    // ---- IP addresses ----

    #[test]
    fn ip_address_cidr_matching() {
        let block = json!({"IpAddress": {"aws:SourceIp": ["192.0.2.0/24", "203.0.113.7"]}});
        assert!(holds(block.clone(), &ip_ctx("192.0.2.1")));
        assert!(holds(block.clone(), &ip_ctx("192.0.2.255")));
        assert!(!holds(block.clone(), &ip_ctx("192.0.3.0")));
        assert!(holds(block.clone(), &ip_ctx("203.0.113.7")));
        assert!(!holds(block.clone(), &ip_ctx("203.0.113.8")));
        assert!(!holds(block, &ip_ctx("2001:db8::1")));
    }

    #[test]
    fn ip_prefix_edges() {
        assert!(holds(
            json!({"IpAddress": {"aws:SourceIp": "0.0.0.0/0"}}),
            &ip_ctx("8.8.8.8")
        ));
        assert!(holds(
            json!({"IpAddress": {"aws:SourceIp": "10.1.2.3/32"}}),
            &ip_ctx("10.1.2.3")
        ));
        assert!(!holds(
            json!({"IpAddress": {"aws:SourceIp": "10.1.2.3/32"}}),
            &ip_ctx("10.1.2.4")
        ));
        // Host bits in the block are ignored, as with any CIDR.
        assert!(holds(
            json!({"IpAddress": {"aws:SourceIp": "10.1.2.3/8"}}),
            &ip_ctx("10.200.0.1")
        ));
        assert!(holds(
            json!({"IpAddress": {"aws:SourceIp": "172.16.0.0/12"}}),
            &ip_ctx("172.31.255.255")
        ));
        assert!(!holds(
            json!({"IpAddress": {"aws:SourceIp": "172.16.0.0/12"}}),
            &ip_ctx("172.32.0.0")
        ));
    }

    #[test]
    fn ipv6_cidr_matching() {
        let block = json!({"IpAddress": {"aws:SourceIp": "2001:db8::/32"}});
        assert!(holds(block.clone(), &ip_ctx("2001:db8:ffff::1")));
        assert!(!holds(block.clone(), &ip_ctx("2001:db9::1")));
        assert!(!holds(block, &ip_ctx("10.0.0.1")));
        assert!(holds(
            json!({"IpAddress": {"aws:SourceIp": "::/0"}}),
            &ip_ctx("::1")
        ));
        assert!(holds(
            json!({"IpAddress": {"aws:SourceIp": "::1/128"}}),
            &ip_ctx("::1")
        ));
        assert!(!holds(
            json!({"IpAddress": {"aws:SourceIp": "::1/128"}}),
            &ip_ctx("::2")
        ));
        assert!(holds(
            json!({"IpAddress": {"aws:SourceIp": "fe80::/10"}}),
            &ip_ctx("febf::1")
        ));
        assert!(!holds(
            json!({"IpAddress": {"aws:SourceIp": "fe80::/10"}}),
            &ip_ctx("fec0::1")
        ));
    }

    #[test]
    fn ipv4_mapped_client_matches_ipv4_block() {
        let block = json!({"IpAddress": {"aws:SourceIp": "192.0.2.0/24"}});
        assert!(holds(block, &ip_ctx("::ffff:192.0.2.9")));
    }

    #[test]
    fn not_ip_address() {
        let block = json!({"NotIpAddress": {"aws:SourceIp": ["192.0.2.0/24", "10.0.0.0/8"]}});
        assert!(holds(block.clone(), &ip_ctx("198.51.100.1")));
        assert!(!holds(block.clone(), &ip_ctx("10.9.9.9")));
        assert!(!holds(block.clone(), &ip_ctx("192.0.2.3")));
        assert!(holds(block, &Context::default()));
    }

    #[test]
    fn ip_from_values_map_is_ignored_for_source_ip() {
        // aws:SourceIp comes only from the connection, never from caller-supplied values.
        let context = ctx(&[("aws:sourceip", &["10.0.0.1"])]);
        assert!(!holds(
            json!({"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}),
            &context
        ));
        // Other keys holding addresses still work.
        let context = ctx(&[("eddy:peerip", &["10.0.0.1", "junk"])]);
        assert!(holds(
            json!({"IpAddress": {"eddy:PeerIp": "10.0.0.0/8"}}),
            &context
        ));
    }

    // ---- Bool and numbers ----

    #[test]
    fn secure_transport_bool() {
        let plain = Context::default();
        let tls = Context {
            secure_transport: true,
            ..Context::default()
        };
        let block = json!({"Bool": {"aws:SecureTransport": "false"}});
        assert!(holds(block.clone(), &plain));
        assert!(!holds(block, &tls));
        let block = json!({"Bool": {"aws:SecureTransport": true}});
        assert!(!holds(block.clone(), &plain));
        assert!(holds(block, &tls));
    }

    #[test]
    fn bool_accepts_any_case_in_context() {
        assert!(holds(
            json!({"Bool": {"eddy:flag": "true"}}),
            &ctx(&[("eddy:flag", &["TRUE"])])
        ));
        assert!(!holds(
            json!({"Bool": {"eddy:flag": "true"}}),
            &ctx(&[("eddy:flag", &["yes"])])
        ));
    }

    #[test]
    fn numeric_comparisons() {
        let keys = ctx(&[("s3:max-keys", &["100"])]);
        let check = |op: &str, v: Value| holds(json!({ op: {"s3:max-keys": v} }), &keys);
        assert!(check("NumericEquals", json!(100)));
        assert!(check("NumericEquals", json!("100.0")));
        assert!(!check("NumericEquals", json!(99)));
        assert!(check("NumericNotEquals", json!(99)));
        assert!(!check("NumericNotEquals", json!(100)));
        assert!(check("NumericLessThan", json!(101)));
        assert!(!check("NumericLessThan", json!(100)));
        assert!(check("NumericLessThanEquals", json!(100)));
        assert!(!check("NumericLessThanEquals", json!(99.5)));
        assert!(check("NumericGreaterThan", json!(99)));
        assert!(!check("NumericGreaterThan", json!(100)));
        assert!(check("NumericGreaterThanEquals", json!(100)));
        assert!(!check("NumericGreaterThanEquals", json!(101)));
    }

    #[test]
    fn non_numeric_context_value_never_matches() {
        let keys = ctx(&[("s3:max-keys", &["lots"])]);
        assert!(!holds(
            json!({"NumericLessThan": {"s3:max-keys": 1000}}),
            &keys
        ));
        assert!(!holds(
            json!({"NumericEquals": {"s3:max-keys": 1000}}),
            &keys
        ));
        assert!(holds(
            json!({"NumericNotEquals": {"s3:max-keys": 1000}}),
            &keys
        ));
    }

    // ---- round trip ----

    #[test]
    fn to_json_round_trips() {
        let block = json!({
            "StringLike": {"S3:Prefix": ["home/*", "shared/*"], "aws:UserName": "a*"},
            "ForAnyValue:StringEqualsIgnoreCase": {"aws:TagKeys": "Env"},
            "NumericLessThanEquals": {"s3:max-keys": 1000},
            "Bool": {"aws:SecureTransport": true},
            "NotIpAddressIfExists": {"aws:SourceIp": ["10.0.0.0/8", "2001:db8::/32"]},
            "Null": {"s3:delimiter": "false"}
        });
        let parsed = parse(block);
        let again = Conditions::parse(&parsed.to_json()).unwrap();
        assert_eq!(parsed, again);
        assert_eq!(
            parsed.to_json()["StringLike"],
            json!({"s3:prefix": ["home/*", "shared/*"], "aws:username": "a*"})
        );
        assert_eq!(
            parsed.to_json()["NumericLessThanEquals"],
            json!({"s3:max-keys": "1000"})
        );
    }

    #[test]
    fn entry_order_does_not_depend_on_key_case() {
        // "B" sorts before "a" but "a" before "b": canonical order must be by lower-cased key.
        let one = parse(json!({"StringEquals": {"B": "1", "a": "2"}}));
        let two = parse(json!({"StringEquals": {"b": "1", "A": "2"}}));
        assert_eq!(one, two);
        assert_eq!(Conditions::parse(&one.to_json()).unwrap(), one);
    }
}
