//! Authentication (bearer tokens from a static token file) and optional RBAC authorization.

use std::collections::HashMap;

use serde_json::Value;

/// An authenticated (or anonymous) user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub groups: Vec<String>,
}

impl User {
    pub fn anonymous() -> Self {
        User { name: "system:anonymous".into(), groups: vec!["system:unauthenticated".into()] }
    }
}

/// Parses kube-apiserver's static token file: `token,user,uid[,"group1,group2"]` per line.
pub fn parse_token_file(text: &str) -> Result<HashMap<String, User>, String> {
    let mut users = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (fields, groups) = match line.split_once(",\"") {
            Some((head, groups)) => (head, groups.trim_end_matches('"')),
            None => (line, ""),
        };
        let parts: Vec<&str> = fields.split(',').map(str::trim).collect();
        if parts.len() < 2 || parts[0].is_empty() || parts[1].is_empty() {
            return Err(format!("token file line {}: expected token,user,uid[,\"groups\"]", i + 1));
        }
        let mut group_list: Vec<String> =
            groups.split(',').map(str::trim).filter(|g| !g.is_empty()).map(str::to_owned).collect();
        group_list.push("system:authenticated".into());
        users.insert(parts[0].to_owned(), User { name: parts[1].to_owned(), groups: group_list });
    }
    Ok(users)
}

#[derive(Clone, Debug)]
struct Rule {
    api_groups: Vec<String>,
    resources: Vec<String>,
    verbs: Vec<String>,
    resource_names: Vec<String>,
}

impl Rule {
    fn allows(&self, verb: &str, group: &str, resource: &str, name: Option<&str>) -> bool {
        let has = |list: &[String], v: &str| list.iter().any(|x| x == "*" || x == v);
        // RBAC's ResourceMatches: "*", an exact match, or "*/<subresource>" for subresources.
        let subresource = resource.split_once('/').map(|(_, sub)| sub);
        let resource_ok = self
            .resources
            .iter()
            .any(|r| r == "*" || r == resource || subresource.is_some_and(|sub| r.strip_prefix("*/") == Some(sub)));
        has(&self.verbs, verb)
            && has(&self.api_groups, group)
            && resource_ok
            && (self.resource_names.is_empty() || name.is_some_and(|n| self.resource_names.iter().any(|x| x == n)))
    }
}

#[derive(Clone, Debug)]
struct Binding {
    /// `None` for ClusterRoleBindings.
    namespace: Option<String>,
    role_kind: String,
    role_name: String,
    users: Vec<String>,
    groups: Vec<String>,
}

/// RBAC from Role/ClusterRole/RoleBinding/ClusterRoleBinding manifests, answering like the
/// real authorizer: allowed if any binding of the user grants a matching rule.
#[derive(Clone, Debug, Default)]
pub struct Rbac {
    roles: HashMap<(Option<String>, String), Vec<Rule>>,
    bindings: Vec<Binding>,
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default()
}

impl Rbac {
    /// Loads every RBAC object from YAML documents (multi-document files and `List`s).
    pub fn load_yaml(&mut self, text: &str) -> Result<usize, String> {
        let mut loaded = 0;
        for document in serde_yaml_ng::Deserializer::from_str(text) {
            let value: Value = serde::Deserialize::deserialize(document).map_err(|e| e.to_string())?;
            let items = if value["kind"] == "List" {
                value["items"].as_array().cloned().unwrap_or_default()
            } else {
                vec![value]
            };
            for item in items {
                loaded += usize::from(self.add(&item)?);
            }
        }
        Ok(loaded)
    }

    fn add(&mut self, object: &Value) -> Result<bool, String> {
        let name = object["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        let namespace = object["metadata"]["namespace"].as_str().map(str::to_owned);
        match object["kind"].as_str().unwrap_or_default() {
            kind @ ("Role" | "ClusterRole") => {
                let rules = object["rules"]
                    .as_array()
                    .map(|rules| {
                        rules
                            .iter()
                            .map(|r| Rule {
                                api_groups: strings(&r["apiGroups"]),
                                resources: strings(&r["resources"]),
                                verbs: strings(&r["verbs"]),
                                resource_names: strings(&r["resourceNames"]),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let scope = if kind == "Role" { namespace } else { None };
                self.roles.insert((scope, name), rules);
                Ok(true)
            }
            kind @ ("RoleBinding" | "ClusterRoleBinding") => {
                let mut users = Vec::new();
                let mut groups = Vec::new();
                for subject in object["subjects"].as_array().into_iter().flatten() {
                    let subject_name = subject["name"].as_str().unwrap_or_default();
                    match subject["kind"].as_str().unwrap_or_default() {
                        "User" => users.push(subject_name.to_owned()),
                        "Group" => groups.push(subject_name.to_owned()),
                        "ServiceAccount" => {
                            let ns = subject["namespace"].as_str().or(namespace.as_deref()).unwrap_or("default");
                            users.push(format!("system:serviceaccount:{ns}:{subject_name}"));
                        }
                        other => return Err(format!("{kind} {name}: unknown subject kind {other:?}")),
                    }
                }
                self.bindings.push(Binding {
                    namespace: if kind == "RoleBinding" { namespace } else { None },
                    role_kind: object["roleRef"]["kind"].as_str().unwrap_or_default().to_owned(),
                    role_name: object["roleRef"]["name"].as_str().unwrap_or_default().to_owned(),
                    users,
                    groups,
                });
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Whether `user` may `verb` the resource (`cronjobs` or `cronjobs/status`) of `group`.
    pub fn allows(
        &self,
        user: &User,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> bool {
        self.bindings.iter().any(|b| {
            let subject = b.users.contains(&user.name) || b.groups.iter().any(|g| user.groups.contains(g));
            let in_scope = match &b.namespace {
                None => true,
                Some(ns) => namespace == Some(ns.as_str()),
            };
            if !subject || !in_scope {
                return false;
            }
            let role_scope = if b.role_kind == "Role" { b.namespace.clone() } else { None };
            self.roles
                .get(&(role_scope, b.role_name.clone()))
                .is_some_and(|rules| rules.iter().any(|r| r.allows(verb, group, resource, name)))
        })
    }
}

/// The authorizer's 403 message.
pub fn forbidden_message(
    user: &str,
    verb: &str,
    group: &str,
    plural: &str,
    sub: Option<&str>,
    namespace: Option<&str>,
    name: Option<&str>,
) -> String {
    let qualified = if group.is_empty() { plural.to_owned() } else { format!("{plural}.{group}") };
    let object = match name {
        Some(n) => format!("{qualified} {n:?}"),
        None => qualified,
    };
    let resource = match sub {
        Some(s) => format!("{plural}/{s}"),
        None => plural.to_owned(),
    };
    let scope = match namespace {
        Some(ns) => format!("in the namespace {ns:?}"),
        None => "at the cluster scope".to_owned(),
    };
    format!("{object} is forbidden: User {user:?} cannot {verb} resource {resource:?} in API group {group:?} {scope}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cronshard}
rules:
- apiGroups: [batch]
  resources: [cronjobs]
  verbs: [get, list, watch]
- apiGroups: [batch]
  resources: [cronjobs/status]
  verbs: [update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: cronshard}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cronshard}
subjects:
- {kind: ServiceAccount, name: cronshard, namespace: cronshard}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: leases, namespace: cronshard}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: leases, namespace: cronshard}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: leases}
subjects:
- {kind: ServiceAccount, name: cronshard}
"#;

    #[test]
    fn rules_bindings_and_scopes() {
        let mut rbac = Rbac::default();
        assert_eq!(rbac.load_yaml(RBAC).expect("yaml"), 4);
        let sa = User { name: "system:serviceaccount:cronshard:cronshard".into(), groups: vec![] };
        assert!(rbac.allows(&sa, "list", "batch", "cronjobs", None, None));
        assert!(rbac.allows(&sa, "update", "batch", "cronjobs/status", Some("team"), Some("x")));
        assert!(!rbac.allows(&sa, "update", "batch", "cronjobs", Some("team"), Some("x")));
        assert!(rbac.allows(&sa, "create", "coordination.k8s.io", "leases", Some("cronshard"), None));
        assert!(!rbac.allows(&sa, "create", "coordination.k8s.io", "leases", Some("default"), None));
        assert!(!rbac.allows(&User::anonymous(), "list", "batch", "cronjobs", None, None));
        assert_eq!(
            forbidden_message("u", "get", "batch", "cronjobs", None, Some("ns"), Some("x")),
            "cronjobs.batch \"x\" is forbidden: User \"u\" cannot get resource \"cronjobs\" in API group \"batch\" in the namespace \"ns\""
        );
    }

    #[test]
    fn token_file() {
        let users = parse_token_file("abc,alice,1\nxyz,bob,2,\"ops,dev\"\n").expect("valid");
        assert_eq!(users["abc"].name, "alice");
        assert!(users["xyz"].groups.contains(&"ops".to_owned()));
        assert!(parse_token_file("onlytoken\n").is_err());
    }
}
