//! Protobuf request bodies, as kubectl's generator commands send them: each decodes to the
//! object its JSON twin (the JSON Go writes for the same Go value) is stored as, and a body
//! the simulator cannot read gets kube-apiserver's Status, never a panic.

use std::collections::BTreeMap;

use axum::http::Request;
use cronshard_sim::{Config, SimState};
use k8s_pb::api::batch::v1 as batch;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;
use serde_json::{Value, json};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const CRONJOBS: &str = "/apis/batch/v1/namespaces/default/cronjobs";

/// Sends a request with a body of the given content type; returns code and body as JSON.
async fn send(state: &SimState, method: &str, path: &str, content_type: &str, body: Vec<u8>) -> (u16, Value) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(axum::body::Body::from(body))
        .expect("request");
    let response = tower::ServiceExt::oneshot(cronshard_sim::app(state.clone()), request).await.expect("infallible");
    let code = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body()).await.expect("body").to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// The envelope kubectl writes: `k8s\0`, then a `runtime.Unknown` holding the object.
fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta { api_version: Some(api_version.into()), kind: Some(kind.into()) }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    [b"k8s\0".as_slice(), &unknown.encode_to_vec()].concat()
}

/// A length-delimited field, to build wire bytes k8s-pb has no struct for.
fn field(tag: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    prost::encoding::encode_key(tag, prost::encoding::WireType::LengthDelimited, &mut out);
    prost::encoding::encode_varint(payload.len() as u64, &mut out);
    out.extend_from_slice(payload);
    out
}

/// A CronJob as a Go client holds it: pointers set to zero (kept), plain fields at zero (left
/// out), a label with an empty value, a probe's int-or-string port and resource quantities.
fn cronjob_pb(name: &str) -> batch::CronJob {
    let container = core::Container {
        name: Some("hello".into()),
        image: Some("busybox".into()),
        command: vec!["sh".into(), "-c".into(), "date".into()],
        image_pull_policy: Some(String::new()),
        stdin: Some(false),
        resources: Some(core::ResourceRequirements {
            limits: BTreeMap::from([(
                "cpu".into(),
                k8s_pb::apimachinery::pkg::api::resource::Quantity { string: Some("250m".into()) },
            )]),
            ..Default::default()
        }),
        liveness_probe: Some(core::Probe {
            handler: Some(core::ProbeHandler {
                tcp_socket: Some(core::TcpSocketAction {
                    port: Some(k8s_pb::apimachinery::pkg::util::intstr::IntOrString {
                        r#type: Some(1),
                        int_val: Some(0),
                        str_val: Some("http".into()),
                    }),
                    host: Some(String::new()),
                }),
                ..Default::default()
            }),
            period_seconds: Some(10),
            ..Default::default()
        }),
        ..Default::default()
    };
    let template = core::PodTemplateSpec {
        metadata: Some(meta::ObjectMeta::default()),
        spec: Some(core::PodSpec {
            containers: vec![container],
            restart_policy: Some("OnFailure".into()),
            host_network: Some(false),
            termination_grace_period_seconds: Some(0),
            ..Default::default()
        }),
    };
    batch::CronJob {
        metadata: Some(meta::ObjectMeta {
            name: Some(name.into()),
            labels: BTreeMap::from([("team".into(), "a".into()), ("flag".into(), String::new())]),
            creation_timestamp: Some(meta::Time::default()),
            ..Default::default()
        }),
        spec: Some(batch::CronJobSpec {
            schedule: Some("*/5 * * * *".into()),
            concurrency_policy: Some(String::new()),
            starting_deadline_seconds: Some(0),
            successful_jobs_history_limit: Some(0),
            suspend: Some(false),
            job_template: Some(batch::JobTemplateSpec {
                metadata: Some(meta::ObjectMeta { name: Some(name.into()), ..Default::default() }),
                spec: Some(batch::JobSpec { backoff_limit: Some(0), template: Some(template), ..Default::default() }),
            }),
            ..Default::default()
        }),
        status: Some(batch::CronJobStatus::default()),
    }
}

/// The JSON Go's encoding/json writes for [`cronjob_pb`]'s Go value.
fn cronjob_json(name: &str) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": name, "labels": {"team": "a", "flag": ""}, "creationTimestamp": null},
        "spec": {
            "schedule": "*/5 * * * *", "startingDeadlineSeconds": 0, "successfulJobsHistoryLimit": 0,
            "suspend": false,
            "jobTemplate": {"metadata": {"name": name, "creationTimestamp": null}, "spec": {
                "backoffLimit": 0,
                "template": {"metadata": {"creationTimestamp": null}, "spec": {
                    "restartPolicy": "OnFailure", "terminationGracePeriodSeconds": 0,
                    "containers": [{
                        "name": "hello", "image": "busybox", "command": ["sh", "-c", "date"],
                        "resources": {"limits": {"cpu": "250m"}},
                        "livenessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": 10},
                    }],
                }},
            }},
        },
        "status": {},
    })
}

/// The stored object without what differs between any two objects (identity, revision, time).
fn comparable(mut object: Value) -> Value {
    let meta = object["metadata"].as_object_mut().expect("metadata");
    for field in ["name", "uid", "resourceVersion", "creationTimestamp"] {
        meta.remove(field);
    }
    object["spec"]["jobTemplate"]["metadata"]["name"] = json!("*");
    object
}

#[tokio::test]
async fn a_protobuf_body_is_stored_as_its_json_twin() {
    let state = SimState::new(Config::default());
    let body = envelope("batch/v1", "CronJob", cronjob_pb("from-protobuf").encode_to_vec());
    let (code, created) = send(&state, "POST", CRONJOBS, PROTOBUF, body).await;
    assert_eq!(code, 201, "{created}");
    let (code, twin) =
        send(&state, "POST", CRONJOBS, "application/json", cronjob_json("from-json").to_string().into()).await;
    assert_eq!(code, 201, "{twin}");
    let stored = |name: &str| state.store().get(cronshard_sim::Resource::CronJobs, "default", name).expect("stored");
    assert_eq!(comparable(stored("from-protobuf").value()), comparable(stored("from-json").value()));
    // Zero pointers stay, zero plain fields are left out and defaulted, as Go decodes them.
    let spec = &created["spec"];
    assert_eq!((&spec["startingDeadlineSeconds"], &spec["successfulJobsHistoryLimit"]), (&json!(0), &json!(0)));
    assert_eq!(
        (&spec["concurrencyPolicy"], &spec["jobTemplate"]["spec"]["backoffLimit"]),
        (&json!("Allow"), &json!(0))
    );
    let container = &spec["jobTemplate"]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["livenessProbe"]["tcpSocket"]["port"], "http");
    assert!(container.get("stdin").is_none() && container.get("imagePullPolicy").is_none(), "{container}");
    assert_eq!(created["metadata"]["labels"], json!({"team": "a", "flag": ""}));
}

#[tokio::test]
async fn every_served_kind_takes_protobuf() {
    let state = SimState::new(Config::default());
    let namespace = core::Namespace {
        metadata: Some(meta::ObjectMeta { name: Some("team-a".into()), ..Default::default() }),
        ..Default::default()
    };
    let body = envelope("v1", "Namespace", namespace.encode_to_vec());
    let (code, created) = send(&state, "POST", "/api/v1/namespaces", PROTOBUF, body).await;
    assert_eq!((code, &created["status"]["phase"]), (201, &json!("Active")), "{created}");

    let lease = k8s_pb::api::coordination::v1::Lease {
        metadata: Some(meta::ObjectMeta { name: Some("l".into()), ..Default::default() }),
        spec: Some(k8s_pb::api::coordination::v1::LeaseSpec {
            holder_identity: Some("a".into()),
            renew_time: Some(meta::MicroTime { seconds: Some(1_767_225_600), nanos: Some(123_456_789) }),
            ..Default::default()
        }),
    };
    let path = "/apis/coordination.k8s.io/v1/namespaces/team-a/leases";
    let (code, created) =
        send(&state, "POST", path, PROTOBUF, envelope("coordination.k8s.io/v1", "Lease", lease.encode_to_vec())).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["renewTime"], "2026-01-01T00:00:00.123456Z", "MicroTime to the microsecond");

    let event = k8s_pb::api::events::v1::Event {
        metadata: Some(meta::ObjectMeta { name: Some("e".into()), ..Default::default() }),
        event_time: Some(meta::MicroTime { seconds: Some(1_767_225_600), nanos: Some(0) }),
        reporting_controller: Some("cronshard".into()),
        reporting_instance: Some("a".into()),
        action: Some("Sync".into()),
        reason: Some("SuccessfulCreate".into()),
        note: Some("Created job".into()),
        r#type: Some("Normal".into()),
        regarding: Some(core::ObjectReference {
            kind: Some("CronJob".into()),
            namespace: Some("team-a".into()),
            name: Some("x".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let path = "/apis/events.k8s.io/v1/namespaces/team-a/events";
    let (code, created) =
        send(&state, "POST", path, PROTOBUF, envelope("events.k8s.io/v1", "Event", event.encode_to_vec())).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!((&created["note"], &created["regarding"]["kind"]), (&json!("Created job"), &json!("CronJob")));

    // An update (PUT) takes protobuf too; the envelope may leave out apiVersion and kind.
    let mut job_pb = cronjob_pb("x");
    if let Some(spec) = job_pb.spec.as_mut() {
        spec.suspend = Some(true);
    }
    send(&state, "POST", CRONJOBS, PROTOBUF, envelope("batch/v1", "CronJob", cronjob_pb("x").encode_to_vec())).await;
    let bare =
        [b"k8s\0".as_slice(), &Unknown { raw: Some(job_pb.encode_to_vec()), ..Default::default() }.encode_to_vec()]
            .concat();
    let (code, updated) = send(&state, "PUT", &format!("{CRONJOBS}/x"), PROTOBUF, bare).await;
    assert_eq!((code, &updated["spec"]["suspend"]), (200, &json!(true)), "{updated}");
}

#[tokio::test]
async fn bodies_the_simulator_cannot_read_get_a_status() {
    let state = SimState::new(Config::default());
    let status = |code: u16, body: &Value| (code, body["kind"].clone(), body["reason"].clone());

    let (code, body) = send(&state, "POST", CRONJOBS, PROTOBUF, b"{\"kind\":\"CronJob\"}".to_vec()).await;
    assert_eq!(status(code, &body), (400, json!("Status"), json!("BadRequest")));
    assert_eq!(
        body["message"],
        "the object provided is unrecognized (must be of type CronJob): provided data does not appear to be a \
         protobuf message, expected prefix [107 56 115 0] ({\"kind\":\"CronJob\"})"
    );
    let (code, body) = send(&state, "POST", CRONJOBS, PROTOBUF, b"k8s\0".to_vec()).await;
    assert_eq!(status(code, &body), (400, json!("Status"), json!("BadRequest")), "{body}");

    // Bytes that are not a CronJob inside a good envelope.
    let (code, body) =
        send(&state, "POST", CRONJOBS, PROTOBUF, envelope("batch/v1", "CronJob", vec![0x0a, 0x05, 1])).await;
    assert_eq!(status(code, &body), (400, json!("Status"), json!("BadRequest")), "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("CronJob in version \"v1\" cannot be handled as a CronJob")),
        "{body}"
    );

    // A Job sent to the CronJob endpoint.
    let (code, body) = send(&state, "POST", CRONJOBS, PROTOBUF, envelope("batch/v1", "Job", Vec::new())).await;
    assert_eq!(status(code, &body), (400, json!("Status"), json!("BadRequest")), "{body}");

    // A field newer than the simulator's protobuf schema (PodSpec field 43) refuses the body
    // instead of being dropped without a word.
    let mut raw = cronjob_pb("newer").encode_to_vec();
    let pod_spec_field_43 = [0xda, 0x02, 0x00];
    // CronJob.spec (2), CronJobSpec.jobTemplate (5), JobTemplateSpec.spec (2), JobSpec.template
    // (6), PodTemplateSpec.spec (2): a second occurrence merges into the first, as in protobuf.
    raw.extend(field(2, &field(5, &field(2, &field(6, &field(2, &pod_spec_field_43))))));
    let (code, body) = send(&state, "POST", CRONJOBS, PROTOBUF, envelope("batch/v1", "CronJob", raw)).await;
    assert_eq!(status(code, &body), (415, json!("Status"), json!("UnsupportedMediaType")), "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("field 43 of spec.jobTemplate.spec.template.spec is not in the protobuf schema"),
        "{message}"
    );
    assert!(state.store().get(cronshard_sim::Resource::CronJobs, "default", "newer").is_none());

    let (code, body) = send(&state, "POST", CRONJOBS, "application/yaml", b"kind: CronJob".to_vec()).await;
    assert_eq!(status(code, &body), (415, json!("Status"), json!("UnsupportedMediaType")), "{body}");
}
