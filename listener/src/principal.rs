//! The principal of a mutual-TLS client: its verified certificate's subject, written as
//! RFC 2253 (`CN=alice,OU=eng,O=Example`, most specific first, as Kafka writes it), and
//! mapped to a name by Kafka's `ssl.principal.mapping.rules` syntax: rules tried in
//! order, `RULE:pattern/replacement/[L|U]` (the pattern must match the whole subject;
//! `$1` in the replacement is its first group; `L`/`U` lower- or upper-case the result)
//! and `DEFAULT` (the whole subject). Without rules the principal is the certificate's
//! CN, or the whole subject when it has none; a subject no rule matches is the whole
//! subject too.

use regex::Regex;
use x509_parser::prelude::*;

/// A rule list.
#[derive(Debug, Clone, Default)]
pub struct PrincipalRules(Option<Vec<Rule>>);

#[derive(Debug, Clone)]
enum Rule {
    Default,
    Pattern {
        re: Regex,
        replacement: String,
        case: Option<char>,
    },
}

/// Reads up to the next unescaped `/`: the text (with `\/` unescaped) and the rest after
/// the slash.
fn until_slash(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if s[i + 1..].starts_with('/') => {
                out.push('/');
                chars.next();
            }
            '/' => return Some((out, &s[i + 1..])),
            c => out.push(c),
        }
    }
    None
}

impl PrincipalRules {
    /// Parses a rule list (`RULE:^CN=([^,]*),.*$/$1/L,DEFAULT`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut rules = Vec::new();
        let mut rest = text.trim_start();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("DEFAULT") {
                rules.push(Rule::Default);
                rest = after;
            } else if let Some(after) = rest.strip_prefix("RULE:") {
                let (pattern, after) = until_slash(after)
                    .ok_or_else(|| format!("rule {after:?}: no / after the pattern"))?;
                let (replacement, after) = until_slash(after)
                    .ok_or_else(|| format!("rule {pattern:?}: no / after the replacement"))?;
                let (case, after) = match after.chars().next() {
                    Some(c @ ('L' | 'U')) => (Some(c), &after[1..]),
                    _ => (None, after),
                };
                let re = Regex::new(&format!("^(?:{pattern})$"))
                    .map_err(|e| format!("rule pattern {pattern:?}: {e}"))?;
                rules.push(Rule::Pattern {
                    re,
                    replacement,
                    case,
                });
                rest = after;
            } else {
                return Err(format!(
                    "principal mapping rules: expected RULE: or DEFAULT at {rest:?}"
                ));
            }
            rest = rest.trim_start();
            match rest.strip_prefix(',') {
                Some(after) => rest = after.trim_start(),
                None if rest.is_empty() => {}
                None => return Err(format!("principal mapping rules: expected , at {rest:?}")),
            }
        }
        if rules.is_empty() {
            return Err("principal mapping rules: none given".into());
        }
        Ok(Self(Some(rules)))
    }

    /// The principal of a subject (`cn`: its CN, if any).
    pub fn apply(&self, dn: &str, cn: Option<&str>) -> String {
        let Some(rules) = &self.0 else {
            return cn.unwrap_or(dn).to_owned();
        };
        for r in rules {
            match r {
                Rule::Default => return dn.to_owned(),
                Rule::Pattern {
                    re,
                    replacement,
                    case,
                } => {
                    if re.is_match(dn) {
                        let out = re.replace(dn, replacement.as_str()).into_owned();
                        return match case {
                            Some('L') => out.to_lowercase(),
                            Some('U') => out.to_uppercase(),
                            _ => out,
                        };
                    }
                }
            }
        }
        dn.to_owned()
    }

    /// The principal of a DER certificate, `None` when it does not parse.
    pub fn of_certificate(&self, der: &[u8]) -> Option<String> {
        let (_, cert) = X509Certificate::from_der(der).ok()?;
        let subject = cert.subject();
        let mut parts = Vec::new();
        let mut cn = None;
        for rdn in subject.iter_rdn() {
            let attrs: Vec<String> = rdn
                .iter()
                .map(|a| {
                    let name = x509_parser::objects::oid2abbrev(a.attr_type(), oid_registry())
                        .map(str::to_owned)
                        .unwrap_or_else(|_| a.attr_type().to_id_string());
                    let value = a.as_str().unwrap_or_default().to_owned();
                    if name == "CN" && cn.is_none() {
                        cn = Some(value.clone());
                    }
                    format!("{name}={}", escape(&value))
                })
                .collect();
            parts.push(attrs.join("+"));
        }
        parts.reverse();
        Some(self.apply(&parts.join(","), cn.as_deref()))
    }
}

/// RFC 2253 escaping of an attribute value.
fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for (i, c) in v.chars().enumerate() {
        if matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i + 1 == v.chars().count() && c == ' ')
        {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_rules_the_cn_is_the_principal() {
        let r = PrincipalRules::default();
        assert_eq!(r.apply("CN=alice,OU=eng,O=Example", Some("alice")), "alice");
        assert_eq!(r.apply("OU=eng,O=Example", None), "OU=eng,O=Example");
    }

    #[test]
    fn kafka_rules_map_the_subject() {
        let r = PrincipalRules::parse(
            r"RULE:^CN=([^,]*),OU=Eng,.*$/$1@eng/L, RULE:^CN=(.*?),OU=(.*?),O=.*$/$2\/$1/U,DEFAULT",
        )
        .unwrap();
        assert_eq!(
            r.apply("CN=Alice,OU=Eng,O=Example", Some("Alice")),
            "alice@eng"
        );
        assert_eq!(r.apply("CN=bob,OU=ops,O=Example", Some("bob")), "OPS/BOB");
        assert_eq!(r.apply("CN=carol", Some("carol")), "CN=carol");
        let no_default = PrincipalRules::parse("RULE:^CN=(x)$/$1/").unwrap();
        assert_eq!(no_default.apply("CN=y", Some("y")), "CN=y");
        for bad in [
            "",
            "RULE:^x",
            "RULE:^x/y",
            "RULE:(/y/",
            "NOPE",
            "DEFAULT DEFAULT",
        ] {
            assert!(PrincipalRules::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(escape("a,b"), r"a\,b");
    }
}
