//! Parsing of Kubernetes API paths and query parameters into typed requests.

use std::collections::HashMap;

use base64::Engine;
use serde_json::json;

use crate::error::{ApiError, Cause, Result};
use crate::resource::Resource;
use crate::selector::{FieldSelector, LabelSelector};

/// A request for a resource, parsed from its path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub resource: Resource,
    /// Namespace from the URL; `None` for cluster-scoped paths (or all namespaces).
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// The target's namespace; `""` for a cluster-scoped path (or all namespaces).
pub(crate) fn namespace_of(target: &Target) -> &str {
    target.namespace.as_deref().unwrap_or("")
}

/// The target's name; `""` for a collection.
pub(crate) fn name_of(target: &Target) -> &str {
    target.name.as_deref().unwrap_or("")
}

/// Parses `/api/v1/...` and `/apis/<group>/<version>/...` resource paths. `None` when the
/// path is not a resource path (discovery and everything else).
pub fn parse_path(path: &str) -> Option<Result<Target>> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] if !rest.is_empty() => ("", *version, rest),
        ["apis", group, version, rest @ ..] if !rest.is_empty() => (*group, *version, rest),
        _ => return None,
    };
    let resource = |plural: &str| Resource::from_path(group, version, plural).ok_or(ApiError::PathNotFound);
    let target = |resource: Resource, namespace: Option<&str>, name: Option<&str>, sub: Option<&str>| {
        if resource.namespaced() != namespace.is_some() && (name.is_some() || !resource.namespaced()) {
            return Err(ApiError::PathNotFound);
        }
        if sub.is_some_and(|s| s != "status" || !resource.has_status()) {
            return Err(ApiError::PathNotFound);
        }
        Ok(Target {
            resource,
            namespace: namespace.map(str::to_owned),
            name: name.map(str::to_owned),
            subresource: sub.map(str::to_owned),
        })
    };
    let result = (|| match rest {
        // /api/v1/namespaces/{name}[/status] is the Namespace object itself.
        ["namespaces", name] if group.is_empty() => target(Resource::Namespaces, None, Some(name), None),
        ["namespaces", name, "status"] if group.is_empty() => {
            target(Resource::Namespaces, None, Some(name), Some("status"))
        }
        ["namespaces", ns, plural] => target(resource(plural)?, Some(ns), None, None),
        ["namespaces", ns, plural, name] => target(resource(plural)?, Some(ns), Some(name), None),
        ["namespaces", ns, plural, name, sub] => target(resource(plural)?, Some(ns), Some(name), Some(sub)),
        [plural] => {
            let r = resource(plural)?;
            Ok(Target { resource: r, namespace: None, name: None, subresource: None })
        }
        [plural, name] => target(resource(plural)?, None, Some(name), None),
        [plural, name, sub] => target(resource(plural)?, None, Some(name), Some(sub)),
        _ => Err(ApiError::PathNotFound),
    })();
    Some(result)
}

/// `resourceVersionMatch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Match {
    Unset,
    NotOlderThan,
    Exact,
}

/// The query parameters of list and watch.
#[derive(Clone, Debug, Default)]
pub struct ListParams {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub limit: usize,
    pub continue_token: Option<ContinueToken>,
    /// `None` = unset or empty.
    pub resource_version: Option<u64>,
    pub rv_match: Option<Match>,
    pub watch: bool,
    pub allow_bookmarks: bool,
    pub timeout_seconds: Option<u64>,
    pub send_initial_events: bool,
    /// `shardSelector` as given: read (and validated) only while the `ShardedListAndWatch`
    /// gate is on; kube-apiserver ignores it otherwise.
    pub shard: Option<String>,
}

/// A list continue token, encoded as kube-apiserver encodes it: base64 of
/// `{"v":"meta.k8s.io/v1","rv":N,"start":"<key>\u0000"}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContinueToken {
    pub rv: u64,
    /// The key to continue after.
    pub after: String,
}

impl ContinueToken {
    pub fn encode(&self) -> String {
        let json = json!({"v": "meta.k8s.io/v1", "rv": self.rv, "start": format!("{}\u{0}", self.after)});
        base64::engine::general_purpose::URL_SAFE.encode(json.to_string())
    }

    pub fn decode(token: &str) -> Result<Self> {
        let bad = |why: &str| ApiError::BadRequest(format!("continue key is not valid: {why}"));
        let bytes = base64::engine::general_purpose::URL_SAFE
            .decode(token)
            .or_else(|_| base64::engine::general_purpose::STANDARD.decode(token))
            .map_err(|_| bad("illegal base64 data"))?;
        let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|_| bad("invalid json"))?;
        if value["v"] != "meta.k8s.io/v1" {
            return Err(bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"));
        }
        let rv =
            value["rv"].as_u64().filter(|rv| *rv > 0).ok_or_else(|| bad("incorrect encoded start resourceVersion"))?;
        let start = value["start"].as_str().ok_or_else(|| bad("missing start"))?;
        let after = start.strip_suffix('\u{0}').unwrap_or(start);
        if after.is_empty() || after.contains("..") || after.starts_with('/') {
            return Err(bad("invalid start key"));
        }
        Ok(ContinueToken { rv, after: after.to_owned() })
    }
}

fn parse_bool(name: &str, value: &str) -> Result<bool> {
    match value {
        "true" | "1" => Ok(true),
        "false" | "0" | "" => Ok(false),
        _ => Err(ApiError::BadRequest(format!("{name}: invalid boolean value {value:?}"))),
    }
}

impl ListParams {
    /// The parameters of a list or watch of `resource` (its field selector's labels are its own).
    pub fn parse(query: &HashMap<String, String>, resource: Resource) -> Result<Self> {
        let get = |k: &str| query.get(k).map(String::as_str);
        let mut p = ListParams {
            labels: crate::selector::parse_labels(get("labelSelector").unwrap_or(""))?,
            fields: FieldSelector::parse(get("fieldSelector").unwrap_or(""), resource)?,
            ..ListParams::default()
        };
        if let Some(limit) = get("limit").filter(|l| !l.is_empty()) {
            let limit: i64 =
                limit.parse().map_err(|_| ApiError::BadRequest(format!("limit: Invalid value: {limit:?}")))?;
            p.limit = usize::try_from(limit.max(0)).unwrap_or(0);
        }
        p.watch = parse_bool("watch", get("watch").unwrap_or(""))?;
        if let Some(shard) = get("shardSelector").filter(|s| !s.is_empty()) {
            p.shard = Some(shard.to_owned());
        }
        p.allow_bookmarks = parse_bool("allowWatchBookmarks", get("allowWatchBookmarks").unwrap_or(""))?;
        p.send_initial_events = parse_bool("sendInitialEvents", get("sendInitialEvents").unwrap_or(""))?;
        if let Some(t) = get("timeoutSeconds").filter(|t| !t.is_empty()) {
            p.timeout_seconds =
                Some(t.parse().map_err(|_| ApiError::BadRequest(format!("timeoutSeconds: Invalid value: {t:?}")))?);
        }
        let rv_text = get("resourceVersion").unwrap_or("");
        if !rv_text.is_empty() {
            p.resource_version = Some(rv_text.parse().map_err(|_| {
                ApiError::BadRequest(format!("invalid resource version: {rv_text:?}: must be a non-negative integer"))
            })?);
        }
        let rv_match = get("resourceVersionMatch").unwrap_or("");
        p.rv_match = match rv_match {
            "NotOlderThan" => Some(Match::NotOlderThan),
            "Exact" => Some(Match::Exact),
            _ => None,
        };
        let continue_token = get("continue").filter(|c| !c.is_empty());
        p.check_list_options(rv_match, continue_token.is_some())?;
        if let Some(token) = continue_token {
            p.check_continue()?;
            p.continue_token = Some(ContinueToken::decode(token)?);
        }
        Ok(p)
    }

    /// What kube-apiserver forbids together with `continue` (after its option checks).
    fn check_continue(&self) -> Result<()> {
        if self.watch {
            return Err(ApiError::BadRequest("continue: Forbidden: continue is not supported for watch".into()));
        }
        if self.resource_version.is_some_and(|rv| rv != 0) {
            return Err(ApiError::BadRequest("specifying resource version is not allowed when using continue".into()));
        }
        Ok(())
    }

    /// kube-apiserver's `ValidateListOptions` (with the WatchList feature on): every problem
    /// of `resourceVersionMatch` and `sendInitialEvents` as one 422 on `ListOptions`.
    fn check_list_options(&self, rv_match: &str, has_continue: bool) -> Result<()> {
        let forbidden = |field: &str, detail: &str| Cause {
            field: field.to_owned(),
            reason: "FieldValueForbidden",
            message: format!("Forbidden: {detail}"),
        };
        let not_supported = |supported: &str| Cause {
            field: "resourceVersionMatch".to_owned(),
            reason: "FieldValueNotSupported",
            message: format!("Unsupported value: {}: supported values: {supported}", serde_json::json!(rv_match)),
        };
        let mut causes = Vec::new();
        if self.watch {
            if self.send_initial_events && self.rv_match != Some(Match::NotOlderThan) {
                let detail = "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan";
                causes.push(forbidden("resourceVersionMatch", detail));
            }
            if !rv_match.is_empty() {
                if !self.send_initial_events {
                    let detail = "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided";
                    causes.push(forbidden("resourceVersionMatch", detail));
                }
                if self.rv_match != Some(Match::NotOlderThan) {
                    causes.push(not_supported("\"NotOlderThan\""));
                }
                if has_continue {
                    causes.push(forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden when continue is provided",
                    ));
                }
            }
        } else {
            if !rv_match.is_empty() {
                if self.resource_version.is_none() {
                    let detail = "resourceVersionMatch is forbidden unless resourceVersion is provided";
                    causes.push(forbidden("resourceVersionMatch", detail));
                }
                if has_continue {
                    causes.push(forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden when continue is provided",
                    ));
                }
                if self.rv_match.is_none() {
                    causes.push(not_supported("\"Exact\", \"NotOlderThan\", \"\""));
                }
                if self.rv_match == Some(Match::Exact) && self.resource_version == Some(0) {
                    let detail = "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"";
                    causes.push(forbidden("resourceVersionMatch", detail));
                }
            }
            if self.send_initial_events {
                causes.push(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
            }
        }
        if causes.is_empty() {
            return Ok(());
        }
        Err(ApiError::Invalid { kind: "ListOptions", group: "meta.k8s.io", name: String::new(), causes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn paths() {
        let t = parse_path("/apis/batch/v1/namespaces/default/cronjobs/nightly/status")
            .expect("resource path")
            .expect("valid");
        assert_eq!(t.resource, Resource::CronJobs);
        assert_eq!(
            (t.namespace.as_deref(), t.name.as_deref(), t.subresource.as_deref()),
            (Some("default"), Some("nightly"), Some("status"))
        );
        let ns = parse_path("/api/v1/namespaces/team-a").expect("path").expect("valid");
        assert_eq!((ns.resource, ns.name.as_deref()), (Resource::Namespaces, Some("team-a")));
        assert!(parse_path("/apis/batch/v1/cronjobs").expect("path").is_ok());
        assert!(parse_path("/apis/batch/v2/cronjobs").expect("path").is_err());
        assert!(parse_path("/apis/batch/v1/namespaces/default/leases/x").expect("path").is_err());
        assert!(parse_path("/apis/coordination.k8s.io/v1/namespaces/default/leases/x/status").expect("path").is_err());
        assert!(parse_path("/version").is_none());
    }

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let token = ContinueToken { rv: 42, after: "default/nightly".into() };
        assert_eq!(ContinueToken::decode(&token.encode()).expect("round trip"), token);
        for bad in ["%%%", "bm90IGpzb24", "e30"] {
            assert_eq!(ContinueToken::decode(bad).expect_err(bad).code().as_u16(), 400);
        }
    }

    #[test]
    fn list_parameter_combinations() {
        assert!(ListParams::parse(&query(&[("resourceVersionMatch", "Exact")]), Resource::CronJobs).is_err());
        assert!(
            ListParams::parse(
                &query(&[("resourceVersion", "0"), ("resourceVersionMatch", "Exact")]),
                Resource::CronJobs
            )
            .is_err()
        );
        assert!(ListParams::parse(&query(&[("resourceVersion", "abc")]), Resource::CronJobs).is_err());
        assert!(ListParams::parse(&query(&[("limit", "x")]), Resource::CronJobs).is_err());
        assert!(
            ListParams::parse(&query(&[("watch", "1"), ("sendInitialEvents", "true")]), Resource::CronJobs).is_err()
        );
        let p = ListParams::parse(
            &query(&[
                ("watch", "true"),
                ("sendInitialEvents", "true"),
                ("allowWatchBookmarks", "true"),
                ("resourceVersionMatch", "NotOlderThan"),
                ("resourceVersion", ""),
            ]),
            Resource::CronJobs,
        );
        assert!(p.is_ok(), "a streaming list may leave resourceVersion empty");
        assert!(
            ListParams::parse(
                &query(&[("watch", "true"), ("resourceVersion", "5"), ("resourceVersionMatch", "NotOlderThan")]),
                Resource::CronJobs
            )
            .is_err()
        );
    }
}
