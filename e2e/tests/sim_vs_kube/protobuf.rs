//! Protobuf bodies for the differential test, encoded by hand from the tag numbers of
//! Kubernetes' `generated.proto`, independently of the simulator's decoder.

/// A protobuf field's value.
enum Pb {
    Str(&'static str),
    Int(u64),
    Msg(Vec<(u32, Pb)>),
    Bytes(Vec<u8>),
}

fn varint(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn encode(fields: &[(u32, Pb)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (tag, value) in fields {
        let (wire_type, payload) = match value {
            Pb::Int(v) => {
                varint(u64::from(*tag) << 3, &mut out);
                varint(*v, &mut out);
                continue;
            }
            Pb::Str(text) => (2, text.as_bytes().to_vec()),
            Pb::Msg(inner) => (2, encode(inner)),
            Pb::Bytes(bytes) => (2, bytes.clone()),
        };
        varint((u64::from(*tag) << 3) | wire_type, &mut out);
        varint(payload.len() as u64, &mut out);
        out.extend(payload);
    }
    out
}

/// `k8s\0` and a `runtime.Unknown` (typeMeta 1: apiVersion 1, kind 2; raw 2; contentEncoding 3;
/// contentType 4), as kubectl sends an object.
fn protobuf_body(api_version: &'static str, kind: &'static str, object: Vec<(u32, Pb)>) -> Vec<u8> {
    let unknown = [
        (1, Pb::Msg(vec![(1, Pb::Str(api_version)), (2, Pb::Str(kind))])),
        (2, Pb::Bytes(encode(&object))),
        (3, Pb::Str("")),
        (4, Pb::Str("")),
    ];
    [b"k8s\0".as_slice(), &encode(&unknown)].concat()
}

/// What `kubectl create cronjob from-protobuf --image=busybox --schedule='*/5 * * * *'` sends:
/// Go writes every plain field, zero or not (concurrencyPolicy ""), and the pointers it set.
pub(super) fn cronjob_protobuf() -> Vec<u8> {
    let container = Pb::Msg(vec![(1, Pb::Str("from-protobuf")), (2, Pb::Str("busybox"))]);
    let pod_spec = Pb::Msg(vec![(2, container), (3, Pb::Str("OnFailure"))]);
    let template = Pb::Msg(vec![(1, Pb::Msg(vec![])), (2, pod_spec)]);
    let job_template =
        Pb::Msg(vec![(1, Pb::Msg(vec![(1, Pb::Str("from-protobuf"))])), (2, Pb::Msg(vec![(6, template)]))]);
    let spec = Pb::Msg(vec![(1, Pb::Str("*/5 * * * *")), (2, Pb::Int(0)), (3, Pb::Str("")), (5, job_template)]);
    protobuf_body(
        "batch/v1",
        "CronJob",
        vec![(1, Pb::Msg(vec![(1, Pb::Str("from-protobuf"))])), (2, spec), (3, Pb::Msg(vec![]))],
    )
}
