//! Which bucket a CronJob belongs to: a range of the FNV-1a 64 hash of its uid (the function
//! kube-apiserver's shard selectors evaluate), or, for deployments that recorded it, the
//! original hash of `namespace/name` modulo the bucket count.

use std::hash::Hasher;
use std::num::NonZeroU32;

/// The field kube-apiserver hashes for a bucket's shard selector.
pub const SHARD_KEY: &str = "object.metadata.uid";

/// How a deployment maps CronJobs to buckets, recorded with the bucket count: every replica
/// and every label must use the same one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BucketFunction {
    /// Bucket k of B holds the uids whose FNV-1a 64 hash is in `[k·2⁶⁴/B, (k+1)·2⁶⁴/B)`:
    /// what `shardRange(object.metadata.uid, …)` selects (KEP-5866), so the API server can
    /// filter a bucket's lists and watches itself.
    Uid,
    /// FNV-1a 64 of `namespace/name` modulo B: what deployments recorded before the server
    /// could filter. The server cannot evaluate it; buckets need the label.
    Name,
}

impl BucketFunction {
    /// The name in flags, chart values and the record's annotation.
    pub fn as_str(self) -> &'static str {
        match self {
            BucketFunction::Uid => "uid",
            BucketFunction::Name => "name",
        }
    }

    /// The bucket of the CronJob `namespace/name` with `uid` among `buckets`.
    pub fn bucket(self, namespace: &str, name: &str, uid: &str, buckets: NonZeroU32) -> u32 {
        match self {
            BucketFunction::Uid => bucket_of_uid(uid, buckets),
            BucketFunction::Name => bucket_of_name(namespace, name, buckets),
        }
    }
}

impl std::str::FromStr for BucketFunction {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "uid" => Ok(BucketFunction::Uid),
            "name" => Ok(BucketFunction::Name),
            other => Err(format!("unknown bucket function {other:?} (expected uid or name)")),
        }
    }
}

impl std::fmt::Display for BucketFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// FNV-1a 64 over raw bytes. Never `std::hash::Hash` (whose output for `str` is not
/// specified, and appends a marker) or a seeded hasher: every replica, every release and the
/// API server must compute the same value; the golden tests below fail if it ever changes.
pub fn fnv1a64(parts: &[&[u8]]) -> u64 {
    let mut hasher = fnv::FnvHasher::default();
    for part in parts {
        hasher.write(part);
    }
    hasher.finish()
}

/// The bucket of the CronJob with `uid` among `buckets`: the k whose [`shard_range`] holds
/// the uid's hash.
pub fn bucket_of_uid(uid: &str, buckets: NonZeroU32) -> u32 {
    bucket_of_hash(fnv1a64(&[uid.as_bytes()]), buckets)
}

/// The k with `start(k) ≤ hash < start(k+1)`, where `start(k) = ⌊k·2⁶⁴/B⌋`: the largest k with
/// `k·2⁶⁴ < (hash+1)·B`.
fn bucket_of_hash(hash: u64, buckets: NonZeroU32) -> u32 {
    let b = u128::from(buckets.get());
    (((u128::from(hash) + 1) * b - 1) >> 64) as u32
}

/// Bucket `bucket`'s hash range `[start, end)`, as `u128` so the last end can be 2⁶⁴.
pub fn shard_range(bucket: u32, buckets: NonZeroU32) -> (u128, u128) {
    let start = |k: u32| (u128::from(k) << 64) / u128::from(buckets.get());
    (start(bucket), start(bucket + 1))
}

/// The `shardSelector` that makes kube-apiserver list and watch only bucket `bucket`'s
/// objects: bounds as the 16-digit (17 for 2⁶⁴) lowercase hex literals the server requires.
pub fn shard_selector(bucket: u32, buckets: NonZeroU32) -> String {
    let (start, end) = shard_range(bucket, buckets);
    format!("shardRange({SHARD_KEY}, '0x{start:016x}', '0x{end:016x}')")
}

/// The bucket of the CronJob `namespace/name` among `buckets` under [`BucketFunction::Name`]:
/// FNV-1a 64 over `namespace + "/" + name`, modulo `buckets`.
pub fn bucket_of_name(namespace: &str, name: &str, buckets: NonZeroU32) -> u32 {
    (fnv1a64(&[namespace.as_bytes(), b"/", name.as_bytes()]) % u64::from(buckets.get())) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(n: u32) -> NonZeroU32 {
        NonZeroU32::new(n).expect("non-zero")
    }

    #[test]
    fn fnv1a_reference_vectors() {
        // From the FNV reference test suite (draft-eastlake-fnv): "" and "a" and "foobar".
        assert_eq!(fnv1a64(&[b""]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(&[b"a"]), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(&[b"foo", b"bar"]), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn golden_name_buckets() {
        // Computed independently (Python, FNV-1a 64 by hand); never change these values.
        assert_eq!(bucket_of_name("default", "hello", b(64)), 1);
        assert_eq!(bucket_of_name("kube-system", "backup", b(64)), 17);
        assert_eq!(bucket_of_name("team-a", "nightly-report", b(16)), 13);
        assert_eq!(bucket_of_name("default", "x", b(1)), 0);
        assert_eq!(bucket_of_name("prod", "billing-sync-every-minute", b(1024)), 921);
        assert_eq!(bucket_of_name("", "", b(7)), 6);
        assert_eq!(bucket_of_name("ns", "ünïcödé", b(64)), 52);
    }

    #[test]
    fn golden_uid_buckets() {
        // Computed independently (Python: FNV-1a 64 of the uid, then the k whose range
        // [⌊k·2⁶⁴/B⌋, ⌊(k+1)·2⁶⁴/B⌋) holds it, by search); the first uids are CronJobs that
        // kube-apiserver v1.37 placed in the lower half with shardRange. Never change these.
        let uids = [
            ("bd03d006-03d2-42a5-af54-1179e96c02c8", 0x1dd8_b52f_66cb_888d_u64),
            ("d4a611e8-87ef-47d5-8844-6ba755cbd6ea", 0x4c02_60d7_9ff7_6b5e),
            ("b18016f8-6016-4d21-922f-4374c270bb43", 0x2754_5412_7a31_2683),
        ];
        for (uid, hash) in uids {
            assert_eq!(fnv1a64(&[uid.as_bytes()]), hash, "{uid}");
        }
        assert_eq!(bucket_of_uid("bd03d006-03d2-42a5-af54-1179e96c02c8", b(64)), 7);
        assert_eq!(bucket_of_uid("d4a611e8-87ef-47d5-8844-6ba755cbd6ea", b(64)), 19);
        assert_eq!(bucket_of_uid("b18016f8-6016-4d21-922f-4374c270bb43", b(3)), 0);
        assert_eq!(bucket_of_uid("f9113a27-a217-466b-b346-a992c3fc1809", b(1000)), 160);
        assert_eq!(bucket_of_uid("uid-hello", b(64)), 6);
        assert_eq!(bucket_of_uid("uid-hello", b(7)), 0);
        assert_eq!(bucket_of_uid("", b(1)), 0);
    }

    #[test]
    fn golden_selectors() {
        assert_eq!(
            shard_selector(0, b(2)),
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
        );
        assert_eq!(
            shard_selector(3, b(4)),
            "shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"
        );
        assert_eq!(
            shard_selector(1, b(3)),
            "shardRange(object.metadata.uid, '0x5555555555555555', '0xaaaaaaaaaaaaaaaa')"
        );
    }

    #[test]
    fn the_ranges_tile_the_hash_space_and_agree_with_the_bucket() {
        for n in [1, 2, 3, 7, 64, 1000, 4096] {
            let mut next = 0u128;
            for k in 0..n {
                let (start, end) = shard_range(k, b(n));
                assert_eq!(start, next, "bucket {k} of {n}");
                assert!(end > start);
                for h in [start, end - 1, start + (end - start) / 2] {
                    assert_eq!(bucket_of_hash(h as u64, b(n)), k, "hash {h:#x}, {n} buckets");
                }
                next = end;
            }
            assert_eq!(next, 1u128 << 64);
        }
    }

    #[test]
    fn spreads_evenly() {
        for function in [BucketFunction::Uid, BucketFunction::Name] {
            let mut counts = [0u32; 64];
            for i in 0..64_000 {
                let name = format!("job-{i}");
                let uid = format!("{i:08x}-0000-4000-8000-{i:012x}");
                counts[function.bucket("team", &name, &uid, b(64)) as usize] += 1;
            }
            let (min, max) = (counts.iter().min().copied(), counts.iter().max().copied());
            assert!(min > Some(850) && max < Some(1150), "{function}: {counts:?}");
        }
    }
}
