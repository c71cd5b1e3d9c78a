//! The audit log: one record per request, readable as JSON Lines by tests and benchmarks.

use std::io::Write;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// One request, as the audit log records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    /// Position in the log, from 0.
    pub seq: u64,
    /// Server time (with the clock offset) when the response was sent, RFC 3339 with ms.
    pub time: String,
    pub user: String,
    pub user_agent: String,
    pub verb: String,
    /// `cronjobs`, `jobs`, `cronjobs/status`...
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub code: u16,
    /// resourceVersion of the object written or read, when there is one.
    pub resource_version: Option<String>,
    /// The object's `cronshard.io/bucket` label, when it has one.
    pub bucket: Option<String>,
    /// Leases: `spec.holderIdentity` of the Lease written or read (empty when released).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
}

#[derive(Debug, Default)]
pub struct Audit {
    records: Mutex<Vec<AuditRecord>>,
    sink: Mutex<Option<std::io::LineWriter<std::fs::File>>>,
}

impl Audit {
    /// Also appends every record to a file, as JSON Lines, one write per record so readers
    /// of a running simulator see every finished request.
    pub fn write_to(&self, file: std::fs::File) {
        *self.sink.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::io::LineWriter::new(file));
    }

    pub fn record(&self, mut record: AuditRecord) {
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        record.seq = records.len() as u64;
        if let Some(sink) = self.sink.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            let line = serde_json::to_string(&record).unwrap_or_default();
            // The in-memory log is authoritative; a full disk must not fail requests.
            let _ = writeln!(sink, "{line}");
        }
        records.push(record);
    }

    pub fn flush(&self) {
        if let Some(sink) = self.sink.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            let _ = sink.flush();
        }
    }

    /// Records from `since` on.
    pub fn since(&self, since: usize) -> Vec<AuditRecord> {
        let records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        records.get(since..).map(<[AuditRecord]>::to_vec).unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.records.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
