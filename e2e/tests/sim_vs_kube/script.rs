//! The script of the fidelity test: every request, in order, grouped by what it exercises.

use http::Method;
use serde_json::{Value, json};

use super::protobuf;

/// One request of the script: a name, a method, a path and JSON body (`{ns}` in either is the
/// test's namespace) or a body of raw bytes, and its content type.
pub(crate) struct Step {
    pub(crate) name: &'static str,
    pub(crate) method: Method,
    pub(crate) path: String,
    pub(crate) body: Option<Value>,
    pub(crate) raw: Option<Vec<u8>>,
    pub(crate) content_type: &'static str,
    /// Keep the answer's resourceVersion as `{rv}` (each server's own) for later steps.
    pub(crate) remember: bool,
    /// Not a request: each server's storage history is compacted up to now.
    pub(crate) compact: bool,
    /// Compare the answer's managedFields too (their times masked); other steps drop them.
    pub(crate) managed: bool,
}

pub(crate) fn step(name: &'static str, method: Method, path: &str, body: Option<Value>) -> Step {
    Step {
        name,
        method,
        path: path.to_owned(),
        body,
        raw: None,
        content_type: "application/json",
        remember: false,
        compact: false,
        managed: false,
    }
}

/// A watch of `path` (with its query) that the server ends after a second: what it sent by
/// then is the answer.
fn watch(name: &'static str, path: &str) -> Step {
    step(name, Method::GET, &format!("{path}&watch=true&timeoutSeconds=1"), None)
}

fn cronjob(name: &str, schedule: &str, extra: Value) -> Value {
    let mut cj = json!({"apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": name, "labels": {"team": "a"}},
        "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}});
    if let (Some(spec), Some(extra)) = (cj["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    cj
}

fn lease(holder: &str) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "cronshard-bucket-7", "labels": {"cronshard.io/role": "bucket"}},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "leaseTransitions": 0,
            "acquireTime": "2026-01-01T00:00:00.000000Z", "renewTime": "2026-01-01T00:00:00.000000Z"}})
}

const CRONJOBS: &str = "/apis/batch/v1/namespaces/{ns}/cronjobs";
const NIGHTLY: &str = "/apis/batch/v1/namespaces/{ns}/cronjobs/nightly";

/// The whole sequence, in order: each step may depend on the ones before it.
pub(crate) fn script() -> Vec<Step> {
    let mut steps: Vec<Step> = [
        creates_and_reads(),
        protobuf_bodies(),
        writes(),
        watches(),
        deletes_and_history(),
        namespaces(),
        leases_and_events(),
        one_event_store(),
        expired_continue(),
        managed_fields(),
    ]
    .into_iter()
    .flatten()
    .collect();
    for step in &mut steps {
        if step.method == Method::PATCH && step.content_type == "application/json" {
            step.content_type = "application/merge-patch+json";
        }
    }
    steps
}

/// Creates (valid and invalid) and reads with pages and selectors.
fn creates_and_reads() -> Vec<Step> {
    let (cronjobs, one) = (CRONJOBS, NIGHTLY);
    vec![
        step("create", Method::POST, cronjobs, Some(cronjob("nightly", "0 3 * * *", json!({})))),
        step("create a second", Method::POST, cronjobs, Some(cronjob("hourly", "0 * * * *", json!({})))),
        step("create again: AlreadyExists", Method::POST, cronjobs, Some(cronjob("nightly", "0 3 * * *", json!({})))),
        step("get", Method::GET, one, None),
        step("get a missing one: NotFound", Method::GET, "/apis/batch/v1/namespaces/{ns}/cronjobs/nope", None),
        step("invalid schedule", Method::POST, cronjobs, Some(cronjob("bad-schedule", "61 * * * *", json!({})))),
        step(
            "unknown time zone",
            Method::POST,
            cronjobs,
            Some(cronjob("bad-zone", "0 3 * * *", json!({"timeZone": "Mars/Olympus"}))),
        ),
        step("TZ= in the schedule", Method::POST, cronjobs, Some(cronjob("tz-prefix", "TZ=UTC 0 3 * * *", json!({})))),
        step("a 53-character name", Method::POST, cronjobs, Some(cronjob(&"n".repeat(53), "0 3 * * *", json!({})))),
        step(
            "a Job named with 64 characters: Invalid",
            Method::POST,
            "/apis/batch/v1/namespaces/{ns}/jobs",
            Some(json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j".repeat(64)},
                "spec": {"template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}]}}}})),
        ),
        step("list with limit 1", Method::GET, &format!("{cronjobs}?limit=1"), None),
        step("the next page: continue", Method::GET, &format!("{cronjobs}?limit=1&continue={{continue}}"), None),
        step("list at resourceVersion 0", Method::GET, &format!("{cronjobs}?resourceVersion=0"), None),
        step(
            "list not older than resourceVersion 0",
            Method::GET,
            &format!("{cronjobs}?resourceVersion=0&resourceVersionMatch=NotOlderThan"),
            None,
        ),
        step(
            "resourceVersionMatch without a resourceVersion: BadRequest",
            Method::GET,
            &format!("{cronjobs}?resourceVersionMatch=NotOlderThan"),
            None,
        ),
        step("get at resourceVersion 0", Method::GET, &format!("{one}?resourceVersion=0"), None),
        step("list by label", Method::GET, &format!("{cronjobs}?labelSelector=team%3Da"), None),
        step("list by field", Method::GET, &format!("{cronjobs}?fieldSelector=metadata.name%3Dhourly"), None),
    ]
}

/// Protobuf bodies, as kubectl's generator commands send them.
fn protobuf_bodies() -> Vec<Step> {
    let media = "application/vnd.kubernetes.protobuf";
    vec![
        Step {
            content_type: media,
            raw: Some(protobuf::cronjob_protobuf()),
            ..step("create from protobuf (kubectl create cronjob)", Method::POST, CRONJOBS, None)
        },
        step("get the CronJob created from protobuf", Method::GET, &format!("{CRONJOBS}/from-protobuf"), None),
        Step {
            content_type: media,
            raw: Some(b"{\"kind\":\"CronJob\"}".to_vec()),
            ..step("a protobuf body without the protobuf prefix: BadRequest", Method::POST, CRONJOBS, None)
        },
    ]
}

/// Updates, patches, the status subresource, strict validation and deletes.
fn writes() -> Vec<Step> {
    let (cronjobs, one) = (CRONJOBS, NIGHTLY);
    vec![
        step(
            "update with a stale resourceVersion: Conflict",
            Method::PUT,
            one,
            Some({
                let mut cj = cronjob("nightly", "0 4 * * *", json!({}));
                cj["metadata"]["resourceVersion"] = json!("1");
                cj
            }),
        ),
        step(
            "merge patch",
            Method::PATCH,
            one,
            Some(json!({"metadata": {"labels": {"patched": "yes"}}, "spec": {"suspend": true}})),
        ),
        Step {
            content_type: "application/json-patch+json",
            ..step(
                "JSON patch",
                Method::PATCH,
                one,
                Some(json!([{"op": "replace", "path": "/spec/schedule", "value": "0 5 * * *"}])),
            )
        },
        Step {
            content_type: "application/merge-patch+json",
            ..step(
                "status patch ignores spec",
                Method::PATCH,
                &format!("{one}/status"),
                Some(json!({"spec": {"schedule": "0 6 * * *"},
                    "status": {"lastScheduleTime": "2026-01-01T03:00:00Z"}})),
            )
        },
        step(
            "strict field validation: unknown field",
            Method::POST,
            &format!("{cronjobs}?fieldValidation=Strict"),
            Some(cronjob("strict", "0 3 * * *", json!({"bogus": 1}))),
        ),
        step(
            "delete, background",
            Method::DELETE,
            "/apis/batch/v1/namespaces/{ns}/cronjobs/hourly",
            Some(json!({
            "kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})),
        ),
        step("delete a missing one: NotFound", Method::DELETE, "/apis/batch/v1/namespaces/{ns}/cronjobs/nope", None),
    ]
}

/// Watches as cronshard's informers and kubectl use them: a label-selector leave, the
/// initial events of a watch-list and their closing bookmark, and an invalid watch-list.
fn watches() -> Vec<Step> {
    vec![
        Step { remember: true, ..step("get, keeping its resourceVersion", Method::GET, NIGHTLY, None) },
        step(
            "take the selected label away",
            Method::PATCH,
            NIGHTLY,
            Some(json!({"metadata": {"labels": {"team": null}}})),
        ),
        watch(
            "watch by label from before: the leave is DELETED",
            &format!("{CRONJOBS}?labelSelector=team%3Da&resourceVersion={{rv}}"),
        ),
        watch(
            "watch-list: initial events, then the bookmark that ends them",
            &format!("{CRONJOBS}?sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
        ),
        watch("watch-list without resourceVersionMatch: Invalid", &format!("{CRONJOBS}?sendInitialEvents=true")),
        Step { remember: true, ..step("get, keeping its resourceVersion again", Method::GET, NIGHTLY, None) },
        step("change it", Method::PATCH, NIGHTLY, Some(json!({"metadata": {"labels": {"changed": "yes"}}}))),
        watch("watch from before the change: MODIFIED", &format!("{CRONJOBS}?resourceVersion={{rv}}")),
    ]
}

/// Deletes with each propagation policy, and a continue token that compaction expired.
fn deletes_and_history() -> Vec<Step> {
    let delete = |policy: &str| Some(json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy}));
    vec![
        step(
            "create one to delete in the foreground",
            Method::POST,
            CRONJOBS,
            Some(cronjob("fg", "0 3 * * *", json!({}))),
        ),
        step("delete, foreground", Method::DELETE, &format!("{CRONJOBS}/fg"), delete("Foreground")),
        step("create one to delete orphaning", Method::POST, CRONJOBS, Some(cronjob("orphan", "0 3 * * *", json!({})))),
        step("delete, orphan", Method::DELETE, &format!("{CRONJOBS}/orphan"), delete("Orphan")),
        step("delete with an unknown policy: Invalid", Method::DELETE, NIGHTLY, delete("Sometimes")),
    ]
}

/// A continue token that compaction expired: the real 410. Events, whose pages
/// kube-apiserver reads from etcd (it keeps no watch cache of Events), so that compacting
/// etcd reaches them.
fn expired_continue() -> Vec<Step> {
    let event = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": {"kind": "CronJob", "namespace": "{ns}", "name": "nightly", "apiVersion": "batch/v1"},
            "reason": "SawCompletedJob", "message": "Saw completed job", "type": "Normal",
            "source": {"component": "cronjob-controller"},
            "firstTimestamp": "2026-01-01T03:00:00Z", "lastTimestamp": "2026-01-01T03:00:00Z", "count": 1})
    };
    vec![
        step("two more Events, for two pages", Method::POST, CORE_EVENTS, Some(event("nightly.3"))),
        step("and the second", Method::POST, CORE_EVENTS, Some(event("nightly.4"))),
        step("list Events with limit 1: a continue token", Method::GET, &format!("{CORE_EVENTS}?limit=1"), None),
        step("a write after that page", Method::POST, CORE_EVENTS, Some(event("nightly.5"))),
        Step { compact: true, ..step("compact the storage's history to now", Method::POST, "", None) },
        step(
            "continue after compaction: Expired",
            Method::GET,
            &format!("{CORE_EVENTS}?limit=1&continue={{continue}}"),
            None,
        ),
    ]
}

/// Namespaces, as `kubectl create namespace` and `kubectl get namespace` use them.
fn namespaces() -> Vec<Step> {
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "{ns}-more"}});
    vec![
        step("create a namespace", Method::POST, "/api/v1/namespaces", Some(namespace.clone())),
        step("create it again: AlreadyExists", Method::POST, "/api/v1/namespaces", Some(namespace)),
        step("get the namespace", Method::GET, "/api/v1/namespaces/{ns}-more", None),
        step(
            "list namespaces by name",
            Method::GET,
            "/api/v1/namespaces?fieldSelector=metadata.name%3D{ns}-more",
            None,
        ),
        step(
            "a CronJob in a namespace that does not exist: NotFound",
            Method::POST,
            "/apis/batch/v1/namespaces/{ns}-none/cronjobs",
            Some(cronjob("lost", "0 3 * * *", json!({}))),
        ),
    ]
}

/// Leases (as the coordinator claims them) and events.k8s.io Events.
fn leases_and_events() -> Vec<Step> {
    vec![
        step("create a Lease", Method::POST, "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", Some(lease("1"))),
        step(
            "update a Lease without a resourceVersion",
            Method::PUT,
            "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/cronshard-bucket-7",
            Some(lease("1")),
        ),
        step(
            "claim a Lease with a stale resourceVersion: Conflict",
            Method::PUT,
            "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/cronshard-bucket-7",
            Some({
                let mut l = lease("2");
                l["metadata"]["resourceVersion"] = json!("1");
                l
            }),
        ),
        step(
            "an Event",
            Method::POST,
            "/apis/events.k8s.io/v1/namespaces/{ns}/events",
            Some(json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "nightly.1"}, "eventTime": "2026-01-01T03:00:00.000000Z",
                "reportingController": "cronshard", "reportingInstance": "replica-a", "action": "Create",
                "reason": "SuccessfulCreate", "note": "Created job nightly-29400180", "type": "Normal",
                "regarding": {"apiVersion": "batch/v1", "kind": "CronJob", "namespace": "{ns}", "name": "nightly"}})),
        ),
        step(
            "a repeat of the Event: its series (merge patch)",
            Method::PATCH,
            "/apis/events.k8s.io/v1/namespaces/{ns}/events/nightly.1",
            Some(json!({"series": {"count": 2, "lastObservedTime": "2026-01-01T03:01:00.000000Z"}})),
        ),
        step(
            "an Event without its reporting controller: Invalid",
            Method::POST,
            "/apis/events.k8s.io/v1/namespaces/{ns}/events",
            Some(json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "nightly.2"},
                "eventTime": "2026-01-01T03:00:00.000000Z", "reason": "SuccessfulCreate", "type": "Normal",
                "regarding": {"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly"}})),
        ),
    ]
}

const CORE_EVENTS: &str = "/api/v1/namespaces/{ns}/events";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/{ns}/events";

/// Core v1 and events.k8s.io/v1 Events are one store: each API reads, lists and selects what
/// the other wrote, converted.
fn one_event_store() -> Vec<Step> {
    let legacy = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "nightly-1.1"},
        "involvedObject": {"kind": "Job", "namespace": "{ns}", "name": "nightly-1", "apiVersion": "batch/v1"},
        "reason": "Completed", "message": "Job completed", "type": "Normal",
        "source": {"component": "job-controller", "host": "node-1"},
        "firstTimestamp": "2026-01-01T03:00:00Z", "lastTimestamp": "2026-01-01T03:05:00Z", "count": 4});
    let mut elsewhere = legacy.clone();
    elsewhere["metadata"]["name"] = json!("nightly-1.2");
    elsewhere["involvedObject"]["namespace"] = json!("kube-system");
    vec![
        step("the events.k8s.io Event through core v1", Method::GET, &format!("{CORE_EVENTS}/nightly.1"), None),
        step("a core v1 Event", Method::POST, CORE_EVENTS, Some(legacy)),
        step("the core v1 Event through events.k8s.io", Method::GET, &format!("{EVENTS}/nightly-1.1"), None),
        step("a core v1 Event about another namespace's object: Invalid", Method::POST, CORE_EVENTS, Some(elsewhere)),
        step("list Events through core v1", Method::GET, CORE_EVENTS, None),
        step("list Events through events.k8s.io", Method::GET, EVENTS, None),
        step(
            "core v1 Events by involvedObject (kubectl describe)",
            Method::GET,
            &format!("{CORE_EVENTS}?fieldSelector=involvedObject.kind%3DCronJob%2CinvolvedObject.name%3Dnightly"),
            None,
        ),
        step("core v1 Events by source", Method::GET, &format!("{CORE_EVENTS}?fieldSelector=source%3Dcronshard"), None),
        step(
            "events.k8s.io Events by regarding and reason",
            Method::GET,
            &format!("{EVENTS}?fieldSelector=regarding.name%3Dnightly-1%2Creason%3DCompleted"),
            None,
        ),
        step(
            "events.k8s.io Events by reportingController",
            Method::GET,
            &format!("{EVENTS}?fieldSelector=reportingController%3Dcronshard%2Cregarding.kind%3DCronJob"),
            None,
        ),
        step(
            "events.k8s.io Events by a core field: BadRequest",
            Method::GET,
            &format!("{EVENTS}?fieldSelector=involvedObject.name%3Dnightly"),
            None,
        ),
        step(
            "delete the events.k8s.io Event through core v1",
            Method::DELETE,
            &format!("{CORE_EVENTS}/nightly.1"),
            None,
        ),
        step("it is gone from events.k8s.io: NotFound", Method::GET, &format!("{EVENTS}/nightly.1"), None),
    ]
}

/// managedFields, which tell cronshard when a schedule changed: a create, a schedule edit, a
/// status write and a label change, each by its own field manager. The pod template carries
/// kube-apiserver's defaults itself (the simulator does not apply them), so the fields each
/// manager owns can be compared whole.
fn managed_fields() -> Vec<Step> {
    const EDITED: &str = "/apis/batch/v1/namespaces/{ns}/cronjobs/edited";
    let managed = |name, method, path: &str, body| Step { managed: true, ..step(name, method, path, body) };
    let mut cj = cronjob("edited", "0 3 * * *", json!({"timeZone": "America/New_York"}));
    cj["metadata"]["annotations"] = json!({"note": "x"});
    cj["spec"]["jobTemplate"]["spec"]["template"]["spec"] = json!({
        "restartPolicy": "Never", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
        "securityContext": {}, "terminationGracePeriodSeconds": 30,
        "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "5"], "imagePullPolicy": "Always",
            "resources": {}, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "env": [{"name": "A", "value": "1"}], "ports": [{"containerPort": 80, "protocol": "TCP"}]}]});
    let edit = |schedule: &str| Some(json!({"spec": {"schedule": schedule}}));
    vec![
        managed(
            "managedFields: create (kubectl-create)",
            Method::POST,
            &format!("{CRONJOBS}?fieldManager=kubectl-create"),
            Some(cj),
        ),
        managed(
            "managedFields: edit the schedule (kubectl-edit)",
            Method::PATCH,
            &format!("{EDITED}?fieldManager=kubectl-edit"),
            edit("0 4 * * *"),
        ),
        managed(
            "managedFields: write the status (cronshard)",
            Method::PATCH,
            &format!("{EDITED}/status?fieldManager=cronshard"),
            Some(json!({"status": {"lastScheduleTime": "2026-01-01T03:00:00Z"}})),
        ),
        managed(
            "managedFields: relabel (kubectl-label): one goes, one comes",
            Method::PATCH,
            &format!("{EDITED}?fieldManager=kubectl-label"),
            Some(json!({"metadata": {"labels": {"team": null, "b": "2"}}})),
        ),
        managed(
            "managedFields: the creator takes the time zone back",
            Method::PATCH,
            &format!("{EDITED}?fieldManager=kubectl-create"),
            Some(json!({"spec": {"timeZone": "Europe/Paris"}})),
        ),
        managed(
            "managedFields: an edit that changes nothing",
            Method::PATCH,
            &format!("{EDITED}?fieldManager=other"),
            edit("0 4 * * *"),
        ),
        managed("managedFields: get", Method::GET, EDITED, None),
    ]
}
