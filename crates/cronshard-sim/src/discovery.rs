//! Discovery documents (`/version`, `/api`, `/apis`, resource lists) and the minimal OpenAPI
//! answers kubectl needs before it writes.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::resource::Resource;

/// Discovery and OpenAPI paths; `None` for any other path.
pub(crate) fn answer(path: &str) -> Option<Response> {
    let path = path.trim_end_matches('/');
    let body = match path {
        "/version" => json!({
            "major": "1", "minor": "37", "gitVersion": "v1.37.0-cronshard-sim", "gitCommit": "",
            "gitTreeState": "clean", "buildDate": "2026-11-30T00:00:00Z", "goVersion": "n/a",
            "compiler": "rustc", "platform": "linux/amd64"
        }),
        "/api" => json!({
            "kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]
        }),
        "/apis" => json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups()}),
        "/openapi/v3" => openapi_v3_root(),
        // kubectl insists on fetching the v2 document before it validates; an empty protobuf
        // document decodes as "no schemas", and v3 (below) tells it the server validates.
        "/openapi/v2" => {
            return Some(
                ([(header::CONTENT_TYPE, "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")], "")
                    .into_response(),
            );
        }
        _ => {
            if let Some(gv) = path.strip_prefix("/openapi/v3/") {
                openapi_v3_group(gv)?
            } else if path == "/api/v1" {
                resource_list("v1")
            } else if let Some(rest) = path.strip_prefix("/apis/") {
                match rest.split_once('/') {
                    Some((group, "v1")) if groups().iter().any(|g| g["name"] == group) => {
                        resource_list(&format!("{group}/v1"))
                    }
                    None => groups().into_iter().find(|g| g["name"] == rest)?,
                    _ => return None,
                }
            } else {
                return None;
            }
        }
    };
    Some(([(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response())
}

fn groups() -> Vec<Value> {
    let mut names: Vec<&str> = Resource::ALL.iter().map(|r| r.group()).filter(|g| !g.is_empty()).collect();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            let version = json!({"groupVersion": format!("{name}/v1"), "version": "v1"});
            json!({"kind": "APIGroup", "apiVersion": "v1", "name": name, "versions": [version.clone()], "preferredVersion": version})
        })
        .collect()
}

fn resource_list(group_version: &str) -> Value {
    let mut resources = Vec::new();
    for r in Resource::ALL.into_iter().filter(|r| r.api_version() == group_version) {
        let verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
        let mut entry = json!({
            "name": r.plural(), "singularName": r.singular(), "namespaced": r.namespaced(), "kind": r.kind(),
            "verbs": if r == Resource::Namespaces { json!(["create", "delete", "get", "list", "patch", "update", "watch"]) } else { json!(verbs) },
        });
        if !r.short_names().is_empty() {
            entry["shortNames"] = json!(r.short_names());
        }
        if r.group() == "batch" {
            entry["categories"] = json!(["all"]);
        }
        resources.push(entry);
        if r.has_status() {
            resources.push(json!({
                "name": format!("{}/status", r.plural()), "singularName": "", "namespaced": r.namespaced(),
                "kind": r.kind(), "verbs": ["get", "patch", "update"],
            }));
        }
    }
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})
}

fn openapi_path(group_version: &str) -> String {
    if group_version == "v1" { "api/v1".to_owned() } else { format!("apis/{group_version}") }
}

fn openapi_v3_root() -> Value {
    let mut paths = serde_json::Map::new();
    let mut gvs: Vec<&str> = Resource::ALL.iter().map(|r| r.api_version()).collect();
    gvs.dedup();
    for gv in gvs {
        let p = openapi_path(gv);
        paths.insert(p.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash=cronshard-sim")}));
    }
    json!({"paths": paths})
}

/// A group-version document that declares, on every PATCH, the `fieldValidation` parameter:
/// kubectl then leaves validation to the server (which does it, with `fieldValidation`).
fn openapi_v3_group(path: &str) -> Option<Value> {
    let resources: Vec<Resource> =
        Resource::ALL.into_iter().filter(|r| openapi_path(r.api_version()) == path).collect();
    if resources.is_empty() {
        return None;
    }
    let mut paths = serde_json::Map::new();
    for r in resources {
        let (group, version) = match r.api_version().split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", "v1"),
        };
        let op = json!({
            "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": r.kind()},
            "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
            "responses": {}
        });
        let base = if r.namespaced() {
            format!("/{path}/namespaces/{{namespace}}/{}/{{name}}", r.plural())
        } else {
            format!("/{path}/{}/{{name}}", r.plural())
        };
        paths.insert(base.clone(), json!({"patch": op.clone()}));
        if r.has_status() {
            paths.insert(format!("{base}/status"), json!({"patch": op}));
        }
    }
    Some(json!({"openapi": "3.0.0", "info": {"title": "cronshard-sim", "version": "v1"}, "paths": paths}))
}
