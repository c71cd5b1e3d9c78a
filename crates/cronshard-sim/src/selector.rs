//! Label selectors (parsed by `cronshard_types::selector`, answered 400 when bad) and the
//! field selectors the server supports.

pub use cronshard_types::selector::LabelSelector;

use crate::error::{ApiError, Result};
use crate::store::Object;

/// Parses a label selector; a bad one is 400 Bad Request.
pub fn parse_labels(text: &str) -> Result<LabelSelector> {
    LabelSelector::parse(text).map_err(|e| ApiError::BadRequest(e.0))
}

/// `metadata.name` and `metadata.namespace`, with `=`, `==` and `!=`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<(bool, String, bool, String)>,
}

impl FieldSelector {
    pub fn parse(text: &str) -> Result<Self> {
        let mut requirements = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, negate, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, false, v)
            } else {
                return Err(ApiError::BadRequest(format!("invalid field selector: {part:?}: expected an operator")));
            };
            let is_name = match field.trim() {
                "metadata.name" => true,
                "metadata.namespace" => false,
                other => return Err(ApiError::BadRequest(format!("field label not supported: {other}"))),
            };
            requirements.push((is_name, field.trim().to_owned(), negate, value.trim().to_owned()));
        }
        Ok(FieldSelector { requirements })
    }

    pub fn matches(&self, object: &Object) -> bool {
        self.requirements.iter().all(|(is_name, _, negate, value)| {
            let actual = if *is_name { &object.name } else { &object.namespace };
            (actual == value) != *negate
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_selectors_are_400() {
        for s in ["a b", "app in web", "-bad=1", "a=b c", "x/=1", "k=-v", ","] {
            let err = parse_labels(s).expect_err(s);
            assert_eq!(err.code().as_u16(), 400, "{s}: {err}");
        }
        assert!(FieldSelector::parse("spec.schedule=x").is_err());
        assert!(FieldSelector::parse("metadata.name").is_err());
    }
}
