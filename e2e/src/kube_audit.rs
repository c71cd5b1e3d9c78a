//! kube-apiserver's audit log (`--audit-log-path`, one JSON event per line) in the shape of
//! the simulator's audit records, so that one analysis judges both servers.

use serde_json::{Value, json};

/// The audit policy the benchmark gives kube-apiserver: every request once, when its answer
/// is complete, with who sent it, what it touched and the answer's code (no bodies).
pub const POLICY: &str =
    "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [\"RequestReceived\"]\nrules:\n- level: Metadata\n";

/// One audit event as a simulator record: `verb`, `resource` (with `/subresource`),
/// `namespace`, `name`, `code`, `time` (when the answer was complete), `user`, `userAgent`.
/// `None` for events that are not a request's completion (or not JSON).
pub fn record(line: &str) -> Option<Value> {
    let event: Value = serde_json::from_str(line).ok()?;
    if event["stage"] != "ResponseComplete" {
        return None;
    }
    let object = &event["objectRef"];
    let resource = match (object["resource"].as_str(), object["subresource"].as_str()) {
        (Some(r), Some(sub)) if !sub.is_empty() => format!("{r}/{sub}"),
        (Some(r), _) => r.to_owned(),
        (None, _) => String::new(),
    };
    Some(json!({
        "verb": event["verb"],
        "resource": resource,
        "namespace": object["namespace"].as_str().unwrap_or_default(),
        "name": object["name"].as_str().unwrap_or_default(),
        "code": event["responseStatus"]["code"],
        "time": event["stageTimestamp"],
        "user": event["user"]["username"],
        "userAgent": event["userAgent"],
    }))
}

/// Every request completion in an audit log's text.
pub fn records(text: &str) -> Vec<Value> {
    text.lines().filter_map(record).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_becomes_a_record_the_analysis_reads_and_other_stages_are_skipped() {
        let create = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a","stage":"ResponseComplete","requestURI":"/apis/batch/v1/namespaces/ns-1/jobs","verb":"create","user":{"username":"testbed-admin","groups":["system:masters"]},"userAgent":"cronshard/0.1.0 (replica bench-0)","objectRef":{"resource":"jobs","namespace":"ns-1","name":"cj-29000000","apiGroup":"batch","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"2026-12-01T04:00:00.101000Z","stageTimestamp":"2026-12-01T04:00:00.123456Z"}"#;
        let r = record(create).expect("a completed request");
        assert_eq!(r["verb"], "create");
        assert_eq!(
            (r["resource"].as_str(), r["namespace"].as_str(), r["name"].as_str()),
            (Some("jobs"), Some("ns-1"), Some("cj-29000000"))
        );
        assert_eq!(r["code"], 201);
        assert_eq!(r["user"], "testbed-admin");
        let created = crate::analysis::creates(&[r]);
        assert_eq!(created.len(), 1);
        assert_eq!((created[0].cronjob.as_str(), created[0].minute), ("cj", 29_000_000));
        assert!((created[0].at - 1_796_097_600.123).abs() < 1e-3, "{}", created[0].at);

        let status = create.replace(r#""name":"cj-29000000","#, r#""name":"cj","subresource":"status","#);
        assert_eq!(record(&status).expect("status")["resource"], "jobs/status");
        let received = create.replace("ResponseComplete", "ResponseStarted");
        assert!(record(&received).is_none(), "one record per request");
        assert_eq!(records(&format!("{create}\nnot json\n{received}\n")).len(), 1);
    }
}
