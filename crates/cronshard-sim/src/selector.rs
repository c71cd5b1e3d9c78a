//! Label selectors (parsed by `cronshard_types::selector`, answered 400 when bad) and the
//! field selectors the server supports.

pub use cronshard_types::selector::LabelSelector;

use crate::error::{ApiError, Result};
use crate::event;
use crate::resource::Resource;
use crate::store::Object;

/// Parses a label selector; a bad one is 400 Bad Request.
pub fn parse_labels(text: &str) -> Result<LabelSelector> {
    LabelSelector::parse(text).map_err(|e| ApiError::BadRequest(e.0))
}

/// What a field selector requirement reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Name,
    Namespace,
    /// One of an Event's selectable fields (its index in [`crate::event::SELECTABLE`]).
    Event(usize),
}

/// Field selectors with `=`, `==` and `!=`: `metadata.name` and `metadata.namespace` for
/// every resource, and an Event's fields as each Event API names them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<(Field, bool, String)>,
}

impl FieldSelector {
    pub fn parse(text: &str, resource: Resource) -> Result<Self> {
        let mut requirements = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (label, negate, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, false, v)
            } else {
                return Err(ApiError::BadRequest(format!("invalid field selector: {part:?}: expected an operator")));
            };
            let field = match (label.trim(), resource) {
                ("metadata.name", _) => Some(Field::Name),
                ("metadata.namespace", _) => Some(Field::Namespace),
                (other, Resource::CoreEvents | Resource::Events) => {
                    event::field_label(resource == Resource::CoreEvents, other).map(Field::Event)
                }
                _ => None,
            };
            let field =
                field.ok_or_else(|| ApiError::BadRequest(format!("field label not supported: {}", label.trim())))?;
            requirements.push((field, negate, value.trim().to_owned()));
        }
        Ok(FieldSelector { requirements })
    }

    pub fn matches(&self, object: &Object) -> bool {
        self.requirements.iter().all(|(field, negate, value)| {
            let actual = match field {
                Field::Name => object.name.as_str(),
                Field::Namespace => object.namespace.as_str(),
                Field::Event(i) => object.fields.get(*i).map_or("", String::as_str),
            };
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
        assert!(FieldSelector::parse("spec.schedule=x", Resource::CronJobs).is_err());
        assert!(FieldSelector::parse("metadata.name", Resource::CronJobs).is_err());
        assert!(FieldSelector::parse("involvedObject.name=x", Resource::CronJobs).is_err());
        assert!(FieldSelector::parse("involvedObject.name=x,source=y", Resource::CoreEvents).is_ok());
        assert!(FieldSelector::parse("regarding.name=x,reportingController=y", Resource::Events).is_ok());
        assert!(FieldSelector::parse("involvedObject.name=x", Resource::Events).is_err());
    }
}
