//! The resource kinds the simulator serves, their storage form and their defaults (their
//! validation is `validation.rs`).

use std::fmt;

use serde_json::{Value, json};

use crate::event;

/// A served resource type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    CronJobs,
    Jobs,
    Leases,
    Events,
    CoreEvents,
    Namespaces,
}

impl Resource {
    pub const ALL: [Resource; 6] = [
        Resource::CronJobs,
        Resource::Jobs,
        Resource::Leases,
        Resource::Events,
        Resource::CoreEvents,
        Resource::Namespaces,
    ];

    pub fn group(self) -> &'static str {
        match self {
            Resource::CronJobs | Resource::Jobs => "batch",
            Resource::Leases => "coordination.k8s.io",
            Resource::Events => "events.k8s.io",
            Resource::CoreEvents | Resource::Namespaces => "",
        }
    }

    pub fn version(self) -> &'static str {
        "v1"
    }

    pub fn api_version(self) -> &'static str {
        match self {
            Resource::CronJobs | Resource::Jobs => "batch/v1",
            Resource::Leases => "coordination.k8s.io/v1",
            Resource::Events => "events.k8s.io/v1",
            Resource::CoreEvents | Resource::Namespaces => "v1",
        }
    }

    pub fn plural(self) -> &'static str {
        match self {
            Resource::CronJobs => "cronjobs",
            Resource::Jobs => "jobs",
            Resource::Leases => "leases",
            Resource::Events | Resource::CoreEvents => "events",
            Resource::Namespaces => "namespaces",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Resource::CronJobs => "CronJob",
            Resource::Jobs => "Job",
            Resource::Leases => "Lease",
            Resource::Events | Resource::CoreEvents => "Event",
            Resource::Namespaces => "Namespace",
        }
    }

    pub fn singular(self) -> &'static str {
        match self {
            Resource::CronJobs => "cronjob",
            Resource::Jobs => "job",
            Resource::Leases => "lease",
            Resource::Events | Resource::CoreEvents => "event",
            Resource::Namespaces => "namespace",
        }
    }

    pub fn short_names(self) -> &'static [&'static str] {
        match self {
            Resource::CronJobs => &["cj"],
            Resource::CoreEvents => &["ev"],
            Resource::Events => &["ev"],
            Resource::Namespaces => &["ns"],
            Resource::Jobs | Resource::Leases => &[],
        }
    }

    pub fn namespaced(self) -> bool {
        self != Resource::Namespaces
    }

    /// A PUT to a missing object creates it (leases and events, as kube-apiserver's strategies say).
    pub fn allow_create_on_update(self) -> bool {
        matches!(self, Resource::Leases | Resource::Events | Resource::CoreEvents)
    }

    /// The table this resource is kept in: kube-apiserver keeps one Event store and serves it
    /// through both core v1 and events.k8s.io/v1.
    pub fn storage(self) -> Resource {
        if self == Resource::Events { Resource::CoreEvents } else { self }
    }

    /// The resources with a table of their own.
    pub fn stored() -> impl Iterator<Item = Resource> {
        Resource::ALL.into_iter().filter(|r| r.storage() == *r)
    }

    /// An object of this resource in its table's form.
    pub fn to_storage(self, object: Value) -> Value {
        match self {
            Resource::Events => event::to_core(object),
            Resource::CoreEvents => event::core_shape(object),
            _ => object,
        }
    }

    /// An object of this resource's table as this resource serves it.
    pub fn from_storage(self, object: Value) -> Value {
        if self == Resource::Events { event::from_core(object) } else { object }
    }

    /// Has a `/status` subresource.
    pub fn has_status(self) -> bool {
        matches!(self, Resource::CronJobs | Resource::Jobs | Resource::Namespaces)
    }

    /// The resource served at `/api/v1/<plural>` (group "") or `/apis/<group>/<version>/<plural>`.
    pub fn from_path(group: &str, version: &str, plural: &str) -> Option<Resource> {
        if version != "v1" {
            return None;
        }
        Resource::ALL.into_iter().find(|r| r.group() == group && r.plural() == plural)
    }

    /// Fills in the defaults kube-apiserver sets (the ones cronshard reads).
    pub fn apply_defaults(self, object: &mut Value) {
        let spec = || json!({});
        match self {
            Resource::CronJobs => {
                let spec = object.as_object_mut().map(|o| o.entry("spec").or_insert_with(spec));
                if let Some(spec) = spec.and_then(Value::as_object_mut) {
                    spec.entry("concurrencyPolicy").or_insert(json!("Allow"));
                    spec.entry("suspend").or_insert(json!(false));
                    spec.entry("successfulJobsHistoryLimit").or_insert(json!(3));
                    spec.entry("failedJobsHistoryLimit").or_insert(json!(1));
                }
                // A new object's status starts empty, not absent (the create dropped any given).
                if let Some(o) = object.as_object_mut() {
                    o.entry("status").or_insert(json!({}));
                }
            }
            Resource::Jobs => {
                let spec = object.as_object_mut().map(|o| o.entry("spec").or_insert_with(spec));
                if let Some(spec) = spec.and_then(Value::as_object_mut) {
                    if !spec.contains_key("completions") && !spec.contains_key("parallelism") {
                        spec.insert("completions".into(), json!(1));
                        spec.insert("parallelism".into(), json!(1));
                    }
                    spec.entry("parallelism").or_insert(json!(1));
                    spec.entry("backoffLimit").or_insert(json!(6));
                    spec.entry("completionMode").or_insert(json!("NonIndexed"));
                    spec.entry("suspend").or_insert(json!(false));
                    spec.entry("manualSelector").or_insert(json!(false));
                    spec.entry("podReplacementPolicy").or_insert(json!("TerminatingOrFailed"));
                }
            }
            Resource::Namespaces => {
                // As SetDefaults_Namespace: a label that always says the name.
                let name = object["metadata"]["name"].clone();
                if name.as_str().is_some_and(|n| !n.is_empty()) {
                    if !object["metadata"]["labels"].is_object() {
                        object["metadata"]["labels"] = json!({});
                    }
                    object["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
                }
            }
            // Events get their shape from the conversion to and from the stored form.
            Resource::Leases | Resource::Events | Resource::CoreEvents => {}
        }
    }

    /// What kube-apiserver's strategies set on every create, whatever the body said (after
    /// the defaults, so no manager owns it): a Job's generated selector; a new Namespace is
    /// `Active`, has the `kubernetes` finalizer and is labelled with its name.
    pub fn prepare_for_create(self, object: &mut Value) {
        if self == Resource::Jobs {
            let uid = object["metadata"]["uid"].clone();
            let generated = object.pointer("/spec/manualSelector") != Some(&json!(true));
            if let Some(spec) = object["spec"].as_object_mut()
                && generated
                && !spec.contains_key("selector")
            {
                spec.insert("selector".into(), json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}));
            }
        }
        if self != Resource::Namespaces {
            return;
        }
        object["status"] = json!({"phase": "Active"});
        // As the namespace strategy's Canonicalize: a label that always says the name.
        let name = object["metadata"]["name"].clone();
        if !object["metadata"]["labels"].is_object() {
            object["metadata"]["labels"] = json!({});
        }
        object["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
        if !object["spec"].is_object() {
            object["spec"] = json!({});
        }
        let finalizers = object["spec"].as_object_mut().map(|s| s.entry("finalizers").or_insert_with(|| json!([])));
        if let Some(list) = finalizers.and_then(Value::as_array_mut)
            && !list.iter().any(|f| f == "kubernetes")
        {
            list.push(json!("kubernetes"));
        }
    }
}

impl fmt::Display for Resource {
    /// `cronjobs.batch`, or just `namespaces` for the core group: how errors name a resource.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group().is_empty() {
            f.write_str(self.plural())
        } else {
            write!(f, "{}.{}", self.plural(), self.group())
        }
    }
}
