//! Sets of field paths in `fieldsV1` form, and the comparison of two objects that
//! structured-merge-diff makes for an Update: the paths added, modified and removed.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// A set of paths as a tree: each node is a path element (`f:name`, `k:{"name":"c"}`,
/// `v:"x"`), a member when the path itself is in the set. Kept pruned: no node is empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    member: bool,
    children: BTreeMap<String, FieldSet>,
}

impl FieldSet {
    /// The set a `fieldsV1` value holds (`{}` is a member leaf, `"."` marks a member with
    /// children); anything else in it is ignored.
    pub fn from_fields_v1(value: &Value) -> FieldSet {
        let mut set = FieldSet::default();
        for (key, child) in value.as_object().into_iter().flatten() {
            if key == "." {
                set.member = true;
                continue;
            }
            let mut node = FieldSet::from_fields_v1(child);
            if child.as_object().is_some_and(Map::is_empty) {
                node.member = true;
            }
            if !node.is_empty() {
                set.children.insert(key.clone(), node);
            }
        }
        set
    }

    /// The set in `fieldsV1` form, as `from_fields_v1` reads it.
    pub fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        if self.member && !self.children.is_empty() {
            map.insert(".".into(), Value::Object(Map::new()));
        }
        for (key, child) in &self.children {
            map.insert(key.clone(), child.to_fields_v1());
        }
        Value::Object(map)
    }

    pub fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    pub fn insert(&mut self, path: &[String]) {
        match path.split_first() {
            None => self.member = true,
            Some((first, rest)) => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` is a member.
    pub fn has(&self, path: &[&str]) -> bool {
        match path.split_first() {
            None => self.member,
            Some((first, rest)) => self.children.get(*first).is_some_and(|c| c.has(rest)),
        }
    }

    pub fn union(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (key, child) in &other.children {
            self.children.entry(key.clone()).or_default().union(child);
        }
    }

    /// Drops the members of `other` (exactly those paths, not what is below them).
    pub fn difference(&mut self, other: &FieldSet) {
        if other.member {
            self.member = false;
        }
        for (key, child) in &other.children {
            if let Some(mine) = self.children.get_mut(key) {
                mine.difference(child);
                if mine.is_empty() {
                    self.children.remove(key);
                }
            }
        }
    }

    /// Drops each member of `other` and everything below it.
    pub fn recursive_difference(&mut self, other: &FieldSet) {
        if other.member {
            *self = FieldSet::default();
            return;
        }
        for (key, child) in &other.children {
            if let Some(mine) = self.children.get_mut(key) {
                mine.recursive_difference(child);
                if mine.is_empty() {
                    self.children.remove(key);
                }
            }
        }
    }
}

/// How a node of an object merges, from the type's schema: a struct or map field by field
/// (`Granular`), as one value (`Atomic`), or a list whose items are keyed by fields or are a
/// set of scalars. Lists without a list type are atomic, as in Kubernetes' types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Granular,
    Atomic,
    Keyed(&'static [&'static str]),
    Set,
}

/// The paths `rhs` added to, modified in and removed from `lhs`.
#[derive(Debug, Default)]
pub struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

impl Comparison {
    /// Forgets every path at or below a member of `fields` (the resource's reset fields).
    pub fn exclude(&mut self, fields: &FieldSet) {
        self.added.recursive_difference(fields);
        self.modified.recursive_difference(fields);
        self.removed.recursive_difference(fields);
    }

    /// What the writer changed: added or modified.
    pub fn changed(&self) -> FieldSet {
        let mut set = self.added.clone();
        set.union(&self.modified);
        set
    }
}

/// Compares two objects as structured-merge-diff's compare walker does; `shape` answers
/// for a node by its field names from the root, a list item adding `[]`.
pub fn compare(lhs: &Value, rhs: &Value, shape: &dyn Fn(&[&str]) -> Shape) -> Comparison {
    let mut walker = Walker { shape, path: Vec::new(), names: Vec::new(), out: Comparison::default() };
    walker.walk(Some(lhs), Some(rhs));
    walker.out
}

struct Walker<'a> {
    shape: &'a dyn Fn(&[&str]) -> Shape,
    path: Vec<String>,
    names: Vec<String>,
    out: Comparison,
}

fn is_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

impl Walker<'_> {
    fn shape(&self) -> Shape {
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        (self.shape)(&names)
    }

    /// One node: a leaf is added, removed or modified as a whole; a map or list is walked
    /// item by item and is itself added or removed when one side lacks it.
    fn walk(&mut self, lhs: Option<&Value>, rhs: Option<&Value>) {
        let kind = rhs.filter(|v| !v.is_null()).or(lhs).filter(|v| !v.is_null());
        let shape = self.shape();
        let both_empty = is_empty(lhs) && is_empty(rhs);
        let leaf = match kind {
            Some(Value::Object(_)) if shape != Shape::Atomic && !both_empty => {
                self.walk_map(lhs.and_then(Value::as_object), rhs.and_then(Value::as_object));
                false
            }
            Some(Value::Array(_)) if matches!(shape, Shape::Keyed(_) | Shape::Set) && !both_empty => {
                self.walk_list(shape, lhs.and_then(Value::as_array), rhs.and_then(Value::as_array));
                false
            }
            _ => true,
        };
        let set = match (lhs, rhs) {
            (None, _) => Some(&mut self.out.added),
            (_, None) => Some(&mut self.out.removed),
            (Some(l), Some(r)) if leaf && l != r => Some(&mut self.out.modified),
            _ => None,
        };
        if let Some(set) = set {
            set.insert(&self.path);
        }
    }

    fn walk_map(&mut self, lhs: Option<&Map<String, Value>>, rhs: Option<&Map<String, Value>>) {
        let mut keys: Vec<&String> = lhs.into_iter().chain(rhs).flat_map(Map::keys).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            self.path.push(format!("f:{key}"));
            self.names.push(key.clone());
            self.walk(lhs.and_then(|m| m.get(key)), rhs.and_then(|m| m.get(key)));
            self.names.pop();
            self.path.pop();
        }
    }

    fn walk_list(&mut self, shape: Shape, lhs: Option<&Vec<Value>>, rhs: Option<&Vec<Value>>) {
        let (left, right) = (items_by_element(shape, lhs), items_by_element(shape, rhs));
        let mut elements: Vec<&String> = left.keys().chain(right.keys()).collect();
        elements.sort();
        elements.dedup();
        self.names.push("[]".to_owned());
        for element in elements {
            self.path.push(element.clone());
            self.walk(left.get(element).copied(), right.get(element).copied());
            self.path.pop();
        }
        self.names.pop();
    }
}

/// A list's items by path element; of items with one element, the first counts.
fn items_by_element(shape: Shape, list: Option<&Vec<Value>>) -> BTreeMap<String, &Value> {
    let mut by_element = BTreeMap::new();
    for item in list.into_iter().flatten() {
        by_element.entry(item_element(shape, item)).or_insert(item);
    }
    by_element
}

/// A list item's path element: `k:{"name":"c"}` (its key fields in the schema's order) or
/// `v:"value"` for a set.
fn item_element(shape: Shape, item: &Value) -> String {
    match shape {
        Shape::Keyed(keys) => {
            let fields: Vec<String> = keys
                .iter()
                .filter_map(|k| item.get(*k).map(|v| format!("{}:{v}", Value::String((*k).to_owned()))))
                .collect();
            format!("k:{{{}}}", fields.join(","))
        }
        _ => format!("v:{item}"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn shape(names: &[&str]) -> Shape {
        match names.last().copied() {
            Some("containers") => Shape::Keyed(&["name"]),
            Some("finalizers") => Shape::Set,
            _ => Shape::Granular,
        }
    }

    #[test]
    fn a_new_map_is_a_member_with_its_children_and_a_struct_already_there_is_not() {
        let cmp = compare(
            &json!({"spec": {}}),
            &json!({"metadata": {"labels": {"a": "1"}}, "spec": {"schedule": "x"}}),
            &shape,
        );
        assert_eq!(
            cmp.added.to_fields_v1(),
            json!({"f:metadata": {".": {}, "f:labels": {".": {}, "f:a": {}}}, "f:spec": {"f:schedule": {}}})
        );
        assert!(cmp.modified.is_empty() && cmp.removed.is_empty());
    }

    #[test]
    fn keyed_items_and_set_members_are_their_own_paths() {
        let cmp = compare(
            &json!({"c": {"containers": null}}),
            &json!({"c": {"containers": [{"name": "a", "image": "i"}]}, "finalizers": ["x"]}),
            &shape,
        );
        assert_eq!(
            cmp.added.to_fields_v1(),
            json!({"f:c": {"f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:image": {}, "f:name": {}}}},
                "f:finalizers": {".": {}, "v:\"x\"": {}}})
        );
    }

    #[test]
    fn a_changed_leaf_is_modified_and_a_dropped_one_removed() {
        let cmp = compare(&json!({"a": 1, "b": [1, 2]}), &json!({"a": 2}), &shape);
        assert_eq!(cmp.modified.to_fields_v1(), json!({"f:a": {}}));
        assert_eq!(cmp.removed.to_fields_v1(), json!({"f:b": {}}));
    }

    #[test]
    fn fields_v1_round_trips_and_set_operations_prune() {
        let v = json!({"f:metadata": {"f:labels": {".": {}, "f:a": {}}}, "f:spec": {"f:schedule": {}}});
        let mut set = FieldSet::from_fields_v1(&v);
        assert_eq!(set.to_fields_v1(), v);
        assert!(set.has(&["f:spec", "f:schedule"]));
        set.difference(&FieldSet::from_fields_v1(&json!({"f:spec": {"f:schedule": {}}})));
        assert_eq!(set.to_fields_v1(), json!({"f:metadata": {"f:labels": {".": {}, "f:a": {}}}}));
        set.recursive_difference(&FieldSet::from_fields_v1(&json!({"f:metadata": {"f:labels": {}}})));
        assert!(set.is_empty());
    }
}
