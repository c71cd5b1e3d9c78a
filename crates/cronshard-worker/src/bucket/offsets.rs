//! The spread each CronJob asks for (`cronshard.io/spread`, else its Namespace's default),
//! checked against its schedule once per schedule, time zone and spread, not once per sync.

use std::collections::HashMap;

use cronshard_types::spread::{self, SPREAD_ANNOTATION};
use cronshard_types::{CronJobSchedule, DstPolicy, Timestamp};
use k8s_openapi::api::batch::v1::CronJob;

/// Above this many distinct (schedule, zone, spread) the memo starts over.
const REMEMBERED: usize = 10_000;

/// Spreads checked so far: (schedule, time zone, annotation) -> the spread in seconds or why it
/// is ignored.
#[derive(Debug, Default)]
pub(super) struct Spreads {
    checked: HashMap<(String, Option<String>, String), Result<u64, cronshard_types::Error>>,
}

impl Spreads {
    /// The offset in seconds of `cj`'s runs (`None`: no spread, or `"0"`), or why its spread is
    /// ignored. The CronJob's own annotation wins over `namespace_default` (so `"0"` turns a
    /// default off). A schedule that does not parse has no spread: its sync reports the schedule.
    pub(super) fn offset(
        &mut self,
        cj: &CronJob,
        namespace_default: Option<&str>,
        now: Timestamp,
        policy: DstPolicy,
    ) -> Result<Option<u64>, cronshard_types::Error> {
        let annotations = cj.metadata.annotations.as_ref();
        let own = annotations.and_then(|a| a.get(SPREAD_ANNOTATION)).map(String::as_str);
        let Some(text) = own.or(namespace_default) else { return Ok(None) };
        let schedule = cj.spec.schedule.clone();
        let zone = cj.spec.time_zone.clone();
        if self.checked.len() >= REMEMBERED {
            self.checked.clear();
        }
        let key = (schedule, zone, text.to_owned());
        let spread_s =
            self.checked.entry(key).or_insert_with_key(|(schedule, zone, text)| {
                match CronJobSchedule::new(schedule, zone.as_deref()) {
                    Ok(parsed) => spread::seconds_for(&parsed.with_dst_policy(policy), text, now),
                    Err(_) => spread::parse(text).map(|_| 0),
                }
            });
        let spread_s = spread_s.clone()?;
        if spread_s == 0 {
            return Ok(None);
        }
        let namespace = cj.metadata.namespace.as_deref().unwrap_or_default();
        let name = cj.metadata.name.as_deref().unwrap_or_default();
        Ok(Some(spread::offset(namespace, name, spread_s)))
    }
}
