//! Which bucket a CronJob belongs to: a pinned hash of `namespace/name`, modulo the bucket count.

use std::hash::Hasher;
use std::num::NonZeroU32;

/// The bucket of the CronJob `namespace/name` among `buckets` buckets.
///
/// FNV-1a 64 over the bytes of `namespace + "/" + name`, reduced modulo `buckets`. Every
/// replica and every release must compute the same value, so this never goes through
/// `std::hash::Hash` (whose output for `str` is not specified) or a seeded hasher; the
/// golden tests below fail if the function ever changes.
pub fn bucket(namespace: &str, name: &str, buckets: NonZeroU32) -> u32 {
    let mut hasher = fnv::FnvHasher::default();
    // `Hasher::write` feeds the raw bytes, unlike `Hash for str`, which appends a marker.
    hasher.write(namespace.as_bytes());
    hasher.write(b"/");
    hasher.write(name.as_bytes());
    (hasher.finish() % u64::from(buckets.get())) as u32
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
        let fnv = |bytes: &[u8]| {
            let mut h = fnv::FnvHasher::default();
            h.write(bytes);
            h.finish()
        };
        assert_eq!(fnv(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn golden_buckets() {
        // Computed independently (Python, FNV-1a 64 by hand); never change these values.
        assert_eq!(bucket("default", "hello", b(64)), 1);
        assert_eq!(bucket("kube-system", "backup", b(64)), 17);
        assert_eq!(bucket("team-a", "nightly-report", b(16)), 13);
        assert_eq!(bucket("default", "x", b(1)), 0);
        assert_eq!(bucket("prod", "billing-sync-every-minute", b(1024)), 921);
        assert_eq!(bucket("", "", b(7)), 6);
        assert_eq!(bucket("ns", "ünïcödé", b(64)), 52);
    }

    #[test]
    fn spreads_evenly() {
        let mut counts = [0u32; 64];
        for i in 0..64_000 {
            counts[bucket("team", &format!("job-{i}"), b(64)) as usize] += 1;
        }
        let (min, max) = (counts.iter().min().copied(), counts.iter().max().copied());
        assert!(min > Some(850) && max < Some(1150), "{counts:?}");
    }
}
