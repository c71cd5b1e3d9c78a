//! `--shard i/N`: one shard of the CronJobs, by cronshard's bucket function of uids (which
//! kube-apiserver can evaluate itself, when it offers shard selectors).

use std::num::NonZeroU32;
use std::str::FromStr;

/// One shard of the CronJobs, `i/N`: those whose bucket among N is i (cronshard's `uid`
/// bucket function), so that several shadow processes share a huge cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shard {
    pub(crate) index: u32,
    pub(crate) count: NonZeroU32,
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?} is not a shard: give i/N with 0 <= i < N, such as 0/4");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: NonZeroU32 = n.trim().parse().map_err(|_| bad())?;
        if index >= count.get() {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    pub(crate) fn holds(&self, uid: &str) -> bool {
        cronshard_types::bucket_of_uid(uid, self.count) == self.index
    }

    /// What kube-apiserver needs to list and watch this shard only.
    pub(crate) fn selector(&self) -> String {
        cronshard_types::shard_selector(self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_is_i_of_n_and_anything_else_is_refused() {
        let s: Shard = "1/4".parse().expect("valid");
        assert_eq!((s.index, s.count.get()), (1, 4));
        assert_eq!(s.to_string(), "1/4");
        for bad in ["4/4", "1", "a/4", "1/0", "-1/4", "1/4/2", ""] {
            let e = bad.parse::<Shard>().expect_err(bad);
            assert!(e.contains("i/N"), "{e}");
        }
        let n = NonZeroU32::new(4).expect("4");
        let uid = "bd03d006-03d2-42a5-af54-1179e96c02c8";
        let held = (0..4).filter(|i| Shard { index: *i, count: n }.holds(uid)).count();
        assert_eq!(held, 1, "every CronJob is in exactly one shard");
        let shard = Shard { index: cronshard_types::bucket_of_uid(uid, n), count: n };
        assert!(shard.holds(uid));
        // The hash of this uid is 0x1dd8…, in the first quarter.
        assert_eq!(shard.selector(), "shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000')");
    }
}
