//! Label selectors with every operator of apimachinery's `labels.Parse`: parsed and matched
//! the way the API server does, so a bad `--selector` is refused before any request and the
//! simulator answers 400 exactly where kube-apiserver does.

use std::collections::BTreeMap;

/// Why a label selector does not parse (the API server's wording).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(pub String);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    Exists,
    NotExists,
    Equals(String),
    NotEquals(String),
    In(Vec<String>),
    NotIn(Vec<String>),
}

/// A parsed label selector; empty matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<(String, Op)>,
}

impl LabelSelector {
    /// Parses a selector as `labels.Parse` does; the error is the API server's message.
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        let bad = |why: String| SelectorError(format!("unable to parse requirement: {why}"));
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                if text.trim().is_empty() {
                    continue;
                }
                return Err(bad("found '', expected: identifier".to_owned()));
            }
            let (key, op) = if let Some(key) = part.strip_prefix('!') {
                (key.trim().to_owned(), Op::NotExists)
            } else if let Some((key, value)) = part.split_once("!=") {
                (key.trim().to_owned(), Op::NotEquals(value.trim().to_owned()))
            } else if let Some((key, value)) = part.split_once("==") {
                (key.trim().to_owned(), Op::Equals(value.trim().to_owned()))
            } else if let Some((key, value)) = part.split_once('=') {
                (key.trim().to_owned(), Op::Equals(value.trim().to_owned()))
            } else if let Some((key, rest)) = split_set_op(part, " notin ") {
                (key, Op::NotIn(parse_set(&rest).ok_or_else(|| bad(format!("invalid set {rest:?}")))?))
            } else if let Some((key, rest)) = split_set_op(part, " in ") {
                (key, Op::In(parse_set(&rest).ok_or_else(|| bad(format!("invalid set {rest:?}")))?))
            } else if part.contains(char::is_whitespace) {
                let found = part.split_whitespace().nth(1).unwrap_or_default();
                return Err(bad(format!("found '{found}', expected: in, notin, =, ==, !=, gt, lt")));
            } else {
                (part.to_owned(), Op::Exists)
            };
            validate_key(&key).map_err(|why| bad(format!("key: Invalid value: {key:?}: {why}")))?;
            let values: Vec<&String> = match &op {
                Op::Equals(v) | Op::NotEquals(v) => vec![v],
                Op::In(vs) | Op::NotIn(vs) => vs.iter().collect(),
                Op::Exists | Op::NotExists => vec![],
            };
            for value in values {
                validate_value(value)
                    .map_err(|why| bad(format!("values[0][{key}]: Invalid value: {value:?}: {why}")))?;
            }
            requirements.push((key, op));
        }
        Ok(LabelSelector { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The label keys the selector tests.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.requirements.iter().map(|(key, _)| key.as_str())
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|(key, op)| {
            let value = labels.get(key);
            match op {
                Op::Exists => value.is_some(),
                Op::NotExists => value.is_none(),
                Op::Equals(v) => value == Some(v),
                Op::NotEquals(v) => value != Some(v),
                Op::In(vs) => value.is_some_and(|x| vs.contains(x)),
                Op::NotIn(vs) => value.is_none_or(|x| !vs.contains(x)),
            }
        })
    }
}

/// Splits on commas that are not inside `( )`.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn split_set_op(part: &str, op: &str) -> Option<(String, String)> {
    let normalized = part.replace('(', " (");
    let (key, rest) = normalized.split_once(op)?;
    Some((key.trim().to_owned(), rest.trim().to_owned()))
}

fn parse_set(text: &str) -> Option<Vec<String>> {
    let inner = text.strip_prefix('(')?.strip_suffix(')')?;
    Some(inner.split(',').map(|v| v.trim().to_owned()).collect())
}

fn validate_name_part(name: &str) -> std::result::Result<(), String> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let ends = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if name.is_empty() || name.len() > 63 {
        return Err("name part must be no more than 63 characters and not empty".to_owned());
    }
    if !name.chars().all(ok_char) || !ends(name.chars().next()) || !ends(name.chars().last()) {
        return Err("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character".to_owned());
    }
    Ok(())
}

fn validate_key(key: &str) -> std::result::Result<(), String> {
    match key.split_once('/') {
        Some((prefix, name)) => {
            if prefix.is_empty()
                || prefix.len() > 253
                || !prefix.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
            {
                return Err("prefix part must be a lowercase RFC 1123 subdomain".to_owned());
            }
            validate_name_part(name)
        }
        None => validate_name_part(key),
    }
}

fn validate_value(value: &str) -> std::result::Result<(), String> {
    if value.is_empty() { Ok(()) } else { validate_name_part(value) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn every_operator() {
        let l = labels(&[("cronshard.io/bucket", "7"), ("app", "web")]);
        let yes = [
            "cronshard.io/bucket=7",
            "cronshard.io/bucket==7",
            "app!=db",
            "app in (web,db)",
            "app notin (db)",
            "cronshard.io/bucket",
            "!missing",
            "app=web,cronshard.io/bucket in (1, 7)",
            "",
        ];
        for s in yes {
            assert!(LabelSelector::parse(s).expect(s).matches(&l), "{s}");
        }
        let no = ["cronshard.io/bucket=8", "app!=web", "app in (db)", "app notin (web)", "missing", "!app"];
        for s in no {
            assert!(!LabelSelector::parse(s).expect(s).matches(&l), "{s}");
        }
    }

    #[test]
    fn bad_selectors_are_refused() {
        for s in ["a b", "app in web", "-bad=1", "a=b c", "x/=1", "k=-v", ",", "!!!=,,"] {
            assert!(LabelSelector::parse(s).is_err(), "{s}");
        }
    }
}
