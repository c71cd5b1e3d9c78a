//! One arm's measured window on a real server: faults on time, the scenario's later CronJobs
//! created at theirs, the processes sampled every second.

use std::path::Path;
use std::time::Duration;

use cronshard_e2e::scenario::{CronJobSeed, Scenario};
use cronshard_e2e::testbed::Testbed;
use cronshard_types::Timestamp;

use crate::cluster;
use crate::control_plane::ControlPlane;
use crate::controllers::{Controllers, FaultClock};
use crate::hours::Boundaries;
use crate::loading::load;

/// The measured window of one arm: the boundaries, and when it ends.
pub(crate) struct Window<'a> {
    pub(crate) scenario: &'a Scenario,
    pub(crate) boundaries: &'a Boundaries,
    pub(crate) end: Timestamp,
    pub(crate) profile_s: Option<u64>,
    pub(crate) dir: &'a Path,
    pub(crate) count: usize,
    pub(crate) cluster: Option<cluster::Run>,
}

/// kube-apiserver's profile, if one was taken.
pub(crate) type Profiling = tokio::task::JoinHandle<Result<std::path::PathBuf, String>>;

impl Window<'_> {
    /// Plays the window on the scenario's clock (its lead before the first boundary is t = 0,
    /// as on the simulator): faults on time, the later CronJobs created at their time (their
    /// seeds then carry the real creation time), the processes sampled every second.
    pub(crate) async fn play<'c>(
        &self,
        client: &kube::Client,
        testbed: &Testbed,
        mut controllers: Option<Controllers<'c>>,
        seeds: &mut Vec<CronJobSeed>,
    ) -> Result<(Option<Controllers<'c>>, ControlPlane, Option<Profiling>), String> {
        let first = self.boundaries.first().as_second();
        let clock_zero = first as f64 - self.scenario.lead_s;
        let mut faults = FaultClock::new(&self.scenario.faults);
        let mut control_plane = ControlPlane::new(testbed);
        let (mut profiling, mut later) = (None, Later::new(seeds));
        while Timestamp::now() < self.end {
            if let Some(seconds) = self.profile_s
                && profiling.is_none()
                && Timestamp::now().as_second() + 1 >= first
            {
                profiling = Some(tokio::spawn(crate::profile::cpu_profile(client.clone(), seconds, self.dir.into())));
            }
            let t = Timestamp::now().as_millisecond() as f64 / 1000.0 - clock_zero;
            later.on_time(t, client, seeds, self.cluster.map(|c| c.container()));
            if let Some(c) = &mut controllers {
                for fault in faults.due(&self.scenario.faults, t, self.count) {
                    c.apply(fault, t).await?;
                }
                c.on_time(t).await?;
                c.sample()?;
            }
            control_plane.sample();
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        later.finish(seeds, self.boundaries).await?;
        Ok((controllers, control_plane, profiling))
    }
}

/// The scenario's later CronJobs: created through the API once the scenario's clock reaches
/// their time, beside whatever the controllers are doing then.
struct Later {
    at_s: Option<f64>,
    loading: Option<(Timestamp, tokio::task::JoinHandle<Result<Timestamp, String>>)>,
}

impl Later {
    fn new(seeds: &[CronJobSeed]) -> Later {
        let at_s = seeds.iter().map(|s| s.appears_s).filter(|t| *t > 0.0).reduce(f64::min);
        Later { at_s, loading: None }
    }

    /// Starts creating them once `t` reaches their time.
    fn on_time(&mut self, t: f64, client: &kube::Client, seeds: &[CronJobSeed], container: Option<serde_json::Value>) {
        let Some(at_s) = self.at_s else { return };
        if self.loading.is_some() || t < at_s {
            return;
        }
        let later: Vec<CronJobSeed> = seeds.iter().filter(|s| s.appears_s > 0.0).cloned().collect();
        let client = client.clone();
        let task = tokio::spawn(async move {
            load(&client, &later, container).await?;
            Ok(Timestamp::now())
        });
        self.loading = Some((Timestamp::now(), task));
    }

    /// Gives the later seeds their creation time; those never created (their time was after
    /// the window) are dropped. A load that ended after the boundary its CronJobs were meant
    /// for would change that boundary's herd: an error.
    async fn finish(self, seeds: &mut Vec<CronJobSeed>, boundaries: &Boundaries) -> Result<(), String> {
        let Some((started, task)) = self.loading else {
            if self.at_s.is_some() {
                tracing::warn!("the later CronJobs' time is after the window: none created");
            }
            seeds.retain(|s| s.appears_s <= 0.0);
            return Ok(());
        };
        let ended = task.await.map_err(|e| e.to_string())??;
        for seed in seeds.iter_mut().filter(|s| s.appears_s > 0.0) {
            seed.created = started;
        }
        if let Some(next) = boundaries.at.iter().find(|b| **b > started)
            && ended >= *next
        {
            return Err(format!(
                "the later CronJobs were created from {started} until {ended}, past the boundary at {next}: give --hour-s more time"
            ));
        }
        tracing::info!(%started, %ended, "later CronJobs created");
        Ok(())
    }
}
