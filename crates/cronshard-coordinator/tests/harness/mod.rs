//! What the simulator tests share: short timings, fake bucket work that logs what it was
//! asked, an in-process simulator and replicas running against it.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cronshard_coordinator::lease::bucket_name;
use cronshard_coordinator::{Buckets, Metrics, Ownership, Settings, Timing};
use cronshard_sim::{Config, SimState};
use futures::FutureExt;
use futures::future::BoxFuture;

pub(crate) const TIMING: Timing = Timing {
    renew_period: Duration::from_millis(200),
    renew_deadline: Duration::from_millis(1000),
    lease_duration: Duration::from_millis(1500),
    join_grace: Duration::from_millis(300),
    claim_jitter: Duration::from_millis(50),
};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Did {
    Start(u32, i32),
    Stop(u32),
    AbortAll,
}

/// Records what the coordinator asked of its workers, with when.
#[derive(Clone, Debug, Default)]
pub(crate) struct Log(Arc<Mutex<Vec<(Instant, String, Did)>>>);

impl Log {
    fn push(&self, who: &str, did: Did) {
        self.0.lock().expect("log").push((Instant::now(), who.to_owned(), did));
    }
    pub(crate) fn entries(&self) -> Vec<(Instant, String, Did)> {
        self.0.lock().expect("log").clone()
    }
}

#[derive(Debug)]
pub(crate) struct FakeBuckets {
    pub(crate) who: String,
    pub(crate) log: Log,
}

impl Buckets for FakeBuckets {
    fn start(&mut self, bucket: u32, epoch: i32) {
        self.log.push(&self.who, Did::Start(bucket, epoch));
    }
    fn stop(&mut self, bucket: u32) -> BoxFuture<'static, ()> {
        self.log.push(&self.who, Did::Stop(bucket));
        async {}.boxed()
    }
    fn abort_all(&mut self) {
        self.log.push(&self.who, Did::AbortAll);
    }
}

pub(crate) async fn serve(state: SimState) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(axum::serve(listener, cronshard_sim::app(state)).into_future());
    format!("http://{addr}")
}

/// A client authenticated as `user` (the sim's partitions are per user).
pub(crate) fn client(url: &str, user: &str) -> kube::Client {
    let mut config = kube::Config::new(url.parse().expect("url"));
    config.auth_info.token = Some(format!("token-{user}").into());
    kube::Client::try_from(config).expect("client")
}

pub(crate) fn sim_with_users(users: &[&str]) -> SimState {
    sim_with_latency(users, cronshard_sim::faults::Latency::default())
}

pub(crate) fn sim_with_latency(users: &[&str], latency: cronshard_sim::faults::Latency) -> SimState {
    let mut config = Config { runner: None, latency, ..Config::default() };
    for user in users {
        config.tokens.insert(
            format!("token-{user}"),
            cronshard_sim::auth::User { name: (*user).to_owned(), groups: vec!["system:authenticated".into()] },
        );
    }
    SimState::new(config)
}

/// `who`'s settings in `namespace`, on the system's wall clock.
pub(crate) fn settings(who: &str, namespace: &str, buckets: u32) -> Settings {
    Settings::new(who, namespace, NonZeroU32::new(buckets).expect("buckets"), TIMING)
}

pub(crate) struct Replica {
    pub(crate) stop: tokio::sync::watch::Sender<bool>,
    pub(crate) ownership: tokio::sync::watch::Receiver<Ownership>,
    pub(crate) task: tokio::task::JoinHandle<cronshard_coordinator::Result<()>>,
}

pub(crate) fn replica(url: &str, who: &str, buckets: u32, log: &Log) -> Replica {
    replica_with(url, settings(who, "default", buckets), log)
}

pub(crate) fn replica_with(url: &str, settings: Settings, log: &Log) -> Replica {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let (owned, ownership) = tokio::sync::watch::channel(Ownership::default());
    let who = settings.identity.clone();
    let fake = FakeBuckets { who: who.clone(), log: log.clone() };
    let task =
        tokio::spawn(cronshard_coordinator::run(client(url, &who), settings, fake, Metrics::default(), owned, stopped));
    Replica { stop, ownership, task }
}

pub(crate) async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

pub(crate) fn holders(sim: &SimState, buckets: u32) -> BTreeMap<u32, String> {
    (0..buckets)
        .filter_map(|b| {
            let lease = sim.store().get(cronshard_sim::Resource::Leases, "default", &bucket_name(b))?;
            Some((b, lease.value()["spec"]["holderIdentity"].as_str().unwrap_or_default().to_owned()))
        })
        .collect()
}
