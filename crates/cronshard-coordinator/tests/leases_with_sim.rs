//! The Lease protocol against the in-process simulator, with short timings: a claim race has
//! one winner, a dead holder's buckets are taken only after its Lease expired, and a
//! partitioned holder stops acting before anyone else may take over.

mod harness;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cronshard_coordinator::lease::{LeaseInfo, bucket_name, claim, member_name};
use cronshard_coordinator::{Metrics, Ownership};
use cronshard_sim::faults::PartitionMode;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::Api;

use self::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_claimants_racing_for_one_bucket_one_wins() {
    let sim = sim_with_users(&["a", "b"]);
    let url = serve(sim.clone()).await;
    let (a, b): (Api<Lease>, Api<Lease>) =
        (Api::namespaced(client(&url, "a"), "default"), Api::namespaced(client(&url, "b"), "default"));
    // Both find no Lease and create one at once.
    let now = Timestamp::now();
    let (ra, rb) = tokio::join!(claim(&a, 0, "a", 1, 15, None, now), claim(&b, 0, "b", 1, 15, None, now));
    assert_eq!(usize::from(ra.is_ok()) + usize::from(rb.is_ok()), 1, "exactly one create wins: {ra:?} {rb:?}");
    // Released, then both claim from the same copy: one PUT wins, the other gets 409.
    let current = a.get(&bucket_name(0)).await.expect("lease");
    let info = LeaseInfo::from_lease(&current).expect("ours");
    let (ra, rb) = tokio::join!(claim(&a, 0, "a", 1, 15, Some(&info), now), claim(&b, 0, "b", 1, 15, Some(&info), now));
    let codes: Vec<u16> = [&ra, &rb]
        .iter()
        .map(|r| match r {
            Ok(_) => 200,
            Err(kube::Error::Api(s)) => s.code,
            Err(_) => 0,
        })
        .collect();
    assert!(codes == [200, 409] || codes == [409, 200], "{codes:?}");
    let winner = ra.or(rb).expect("a winner");
    assert_eq!(winner.spec.and_then(|s| s.lease_transitions), Some(info.transitions + 1), "a new epoch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_split_the_buckets_and_take_over_after_expiry() {
    let sim = sim_with_users(&["a", "b"]);
    let url = serve(sim.clone()).await;
    let log = Log::default();
    let a = replica(&url, "a", 8, &log);
    let b = replica(&url, "b", 8, &log);
    let settled = |r: &Replica| r.ownership.borrow().settled() && !r.ownership.borrow().owned.is_empty();
    wait_for("both settled", || settled(&a) && settled(&b) && a.ownership.borrow().desired.len() == 4).await;
    let (own_a, own_b) = (a.ownership.borrow().owned.clone(), b.ownership.borrow().owned.clone());
    assert!(own_a.is_disjoint(&own_b));
    assert_eq!(own_a.union(&own_b).count(), 8);
    let map = holders(&sim, 8);
    assert!(own_a.iter().all(|k| map[k] == "a") && own_b.iter().all(|k| map[k] == "b"));

    // a crashes: its Leases stay behind, nobody releases them.
    a.task.abort();
    let crashed = Instant::now();
    wait_for("b owns everything", || b.ownership.borrow().owned.len() == 8).await;
    let taken: Vec<Instant> = log
        .entries()
        .iter()
        .filter(|(at, who, did)| who == "b" && *at > crashed && matches!(did, Did::Start(k, _) if own_a.contains(k)))
        .map(|(at, _, _)| *at)
        .collect();
    assert_eq!(taken.len(), own_a.len());
    // a's last renewal was at most one renew period before the crash.
    let earliest = crashed + TIMING.lease_duration - TIMING.renew_period;
    assert!(taken.iter().all(|t| *t >= earliest), "taken over before a's Lease expired");
    assert!(holders(&sim, 8).values().all(|h| h == "b"));

    // Graceful exit releases everything and leaves the member set.
    let _ = b.stop.send(true);
    b.task.await.expect("joins").expect("runs");
    assert!(holders(&sim, 8).values().all(String::is_empty), "{:?}", holders(&sim, 8));
    assert!(sim.store().get(cronshard_sim::Resource::Leases, "default", "cronshard-member-b").is_none());
}

/// Every write takes 60 ms. 16 buckets are held by `a`, which has no member Lease (dead): the
/// replica that starts claims them once they are a lease duration old on its clock. One after
/// another, that would take about a second; together, a round trip or two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_claims_the_dead_holders_buckets_together() {
    let latency = cronshard_sim::faults::Latency { write_ms: 60, ..Default::default() };
    let sim = sim_with_latency(&["a", "b"], latency);
    let url = serve(sim.clone()).await;
    let leases: Api<Lease> = Api::namespaced(client(&url, "a"), "default");
    for bucket in 0..16 {
        claim(&leases, bucket, "a", 16, 15, None, Timestamp::now()).await.expect("a holds it");
    }
    let log = Log::default();
    let b = replica(&url, "b", 16, &log);
    wait_for("b owns everything", || b.ownership.borrow().owned.len() == 16).await;
    let taken: Vec<Instant> = log
        .entries()
        .iter()
        .filter(|(_, who, did)| who == "b" && matches!(did, Did::Start(..)))
        .map(|(at, _, _)| *at)
        .collect();
    assert_eq!(taken.len(), 16);
    assert!(holders(&sim, 16).values().all(|h| h == "b"));
    let (first, last) = (taken.iter().min().expect("one"), taken.iter().max().expect("one"));
    // The claim jitter (50 ms), a tick and a round trip or two; one by one would be 960 ms.
    let spread = last.duration_since(*first);
    assert!(spread < Duration::from_millis(500), "took {spread:?}");
    let _ = b.stop.send(true);
    let _ = b.task.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_holder_stops_before_anyone_takes_over() {
    let sim = sim_with_users(&["a", "b"]);
    let url = serve(sim.clone()).await;
    let log = Log::default();
    let a = replica(&url, "a", 4, &log);
    let b = replica(&url, "b", 4, &log);
    wait_for("both settled", || {
        let (oa, ob) = (a.ownership.borrow().clone(), b.ownership.borrow().clone());
        oa.settled() && ob.settled() && oa.owned.len() == 2 && ob.owned.len() == 2
    })
    .await;
    let own_a = a.ownership.borrow().owned.clone();
    let audit_before = sim.0.audit.since(0).len();

    sim.0.faults.update(|f| {
        f.partitions.insert("a".into(), PartitionMode::Hang);
    });
    sim.drop_watches();
    let cut = Instant::now();
    wait_for("b takes a's buckets", || b.ownership.borrow().owned.len() == 4).await;
    let entries = log.entries();
    let fenced = entries.iter().find(|(at, who, did)| who == "a" && *at > cut && *did == Did::AbortAll).map(|e| e.0);
    let first_takeover = entries
        .iter()
        .filter(|(at, who, did)| who == "b" && *at > cut && matches!(did, Did::Start(k, _) if own_a.contains(k)))
        .map(|e| e.0)
        .min();
    let (fenced, taken) = (fenced.expect("a fenced itself"), first_takeover.expect("b took over"));
    assert!(fenced < taken, "a stopped acting {:?} before b started", taken - fenced);
    assert!(fenced <= cut + TIMING.renew_deadline + TIMING.renew_period, "a fenced on time");
    // Nothing of a's reached the server while it was cut off.
    let during: Vec<_> = sim.0.audit.since(0).into_iter().skip(audit_before).filter(|r| r.user == "a").collect();
    assert!(during.iter().all(|r| r.code >= 500 || r.verb == "watch"), "{during:?}");

    // Healed, a rejoins as a new claimant and gets its share back with a new epoch.
    sim.0.faults.update(|f| {
        f.partitions.remove("a");
    });
    wait_for("a back", || a.ownership.borrow().owned.len() == 2 && b.ownership.borrow().owned.len() == 2).await;
    let epochs: HashMap<u32, i32> = log
        .entries()
        .iter()
        .filter(|(at, who, _)| who == "a" && *at > cut)
        .filter_map(|(_, _, did)| if let Did::Start(k, e) = did { Some((*k, *e)) } else { None })
        .collect();
    assert!(epochs.values().all(|e| *e >= 2), "claimed by a, then b, then a again: {epochs:?}");
    for r in [a, b] {
        let _ = r.stop.send(true);
        let _ = r.task.await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bucket_count_of_record_decides_not_who_is_older() {
    let sim = sim_with_users(&["big", "small"]);
    let url = serve(sim.clone()).await;
    let log = Log::default();
    let big = replica(&url, "big", 8, &log);
    wait_for("big owns all 8", || big.ownership.borrow().settled() && big.ownership.borrow().owned.len() == 8).await;
    let record = sim.store().get(cronshard_sim::Resource::Leases, "default", "cronshard-config").expect("recorded");
    let annotations = &record.value()["metadata"]["annotations"];
    assert_eq!(
        (&annotations["cronshard.io/bucket-count"], &annotations["cronshard.io/bucket-function"]),
        (&"8".into(), &"uid".into())
    );
    assert!(annotations.get("cronshard.io/buckets").is_none(), "where releases that know only names look: nothing");
    let small = replica(&url, "small", 4, &log);
    wait_for("small refuses", || small.ownership.borrow().refused.is_some()).await;
    // Restart big: small is now the older member, and still refuses; big runs everything.
    let _ = big.stop.send(true);
    big.task.await.expect("joins").expect("runs");
    let big = replica(&url, "big", 8, &log);
    wait_for("big owns all 8 again", || big.ownership.borrow().settled() && big.ownership.borrow().owned.len() == 8)
        .await;
    let refusal = small.ownership.borrow().refused.clone().expect("still refusing");
    assert!(refusal.contains("record is 8") && refusal.contains("--buckets 4"), "{refusal}");
    assert!(!log.entries().iter().any(|(_, who, did)| who == "small" && matches!(did, Did::Start(..))));
    for r in [big, small] {
        let _ = r.stop.send(true);
        let _ = r.task.await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_processes_with_one_identity_one_refuses_and_the_other_runs() {
    let sim = sim_with_users(&["twin"]);
    let url = serve(sim.clone()).await;
    let (log_a, log_b) = (Log::default(), Log::default());
    let a = replica(&url, "twin", 4, &log_a);
    wait_for("the first owns all 4", || a.ownership.borrow().settled() && a.ownership.borrow().owned.len() == 4).await;
    let b = replica(&url, "twin", 4, &log_b);
    let refusing = |r: &Replica| r.ownership.borrow().refused.as_ref().is_some_and(|m| m.contains("same identity"));
    wait_for("one of them refuses", || refusing(&a) || refusing(&b)).await;
    let (out, on) = if refusing(&a) { (&a, &b) } else { (&b, &a) };
    wait_for("the other owns all 4", || on.ownership.borrow().settled() && on.ownership.borrow().owned.len() == 4)
        .await;
    tokio::time::sleep(TIMING.lease_duration).await;
    assert!(refusing(out) && !refusing(on), "exactly one refuses, for good");
    assert!(out.ownership.borrow().owned.is_empty() && !out.ownership.borrow().healthy);
    for r in [a, b] {
        let _ = r.stop.send(true);
        let _ = r.task.await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_namespace_is_an_error_at_once() {
    let sim = sim_with_users(&["a"]);
    let url = serve(sim.clone()).await;
    let settings = settings("a", "does-not-exist", 4);
    let (_stop, stopped) = tokio::sync::watch::channel(false);
    let (owned, _ownership) = tokio::sync::watch::channel(Ownership::default());
    let fake = FakeBuckets { who: "a".into(), log: Log::default() };
    let run = cronshard_coordinator::run(client(&url, "a"), settings, fake, Metrics::default(), owned, stopped);
    let error = tokio::time::timeout(Duration::from_secs(5), run).await.expect("at once").expect_err("an error");
    assert!(error.to_string().contains("namespace \"does-not-exist\" does not exist"), "{error}");
    let requests = sim.0.audit.since(0).len();
    assert!(requests <= 2, "no busy loop: {requests} requests");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_outage_longer_than_the_lease_nobody_takes_a_peers_buckets() {
    let sim = sim_with_users(&["a", "b"]);
    let url = serve(sim.clone()).await;
    let log = Log::default();
    let a = replica(&url, "a", 8, &log);
    let b = replica(&url, "b", 8, &log);
    wait_for("both settled", || {
        let (oa, ob) = (a.ownership.borrow().clone(), b.ownership.borrow().clone());
        oa.settled() && ob.settled() && oa.owned.len() == 4 && ob.owned.len() == 4
    })
    .await;
    let before: BTreeMap<String, std::collections::BTreeSet<u32>> =
        [("a", &a), ("b", &b)].iter().map(|(w, r)| ((*w).to_owned(), r.ownership.borrow().owned.clone())).collect();
    // The API server fails every request of both for four lease durations.
    sim.0.faults.update(|f| {
        f.partitions.insert("a".into(), PartitionMode::Fail);
        f.partitions.insert("b".into(), PartitionMode::Fail);
    });
    sim.drop_watches();
    tokio::time::sleep(TIMING.lease_duration * 4).await;
    let healed = Instant::now();
    let healed_at = sim.0.audit.len();
    sim.0.faults.update(|f| f.partitions.clear());
    wait_for("both own their share again", || {
        let (oa, ob) = (a.ownership.borrow().clone(), b.ownership.borrow().clone());
        oa.settled() && ob.settled() && oa.owned.len() == 4 && ob.owned.len() == 4
    })
    .await;
    tokio::time::sleep(TIMING.lease_duration * 2).await;
    let foreign: Vec<_> = log
        .entries()
        .into_iter()
        .filter(|(at, who, did)| *at > healed && matches!(did, Did::Start(k, _) if !before[who].contains(k)))
        .collect();
    assert!(foreign.is_empty(), "claimed a live peer's bucket after the outage: {foreign:?}");
    // Nor tried to: a claim over a stale view of a live peer's bucket is answered 409.
    let refused_claims = sim
        .0
        .audit
        .since(healed_at)
        .iter()
        .filter(|r| r.resource == "leases" && r.name.starts_with("cronshard-bucket-") && r.code == 409)
        .count();
    assert_eq!(refused_claims, 0, "claims of live peers' buckets after the outage");
    for r in [a, b] {
        let _ = r.stop.send(true);
        let _ = r.task.await;
    }
}

/// A replica whose whole runtime stalls (its own thread blocked, as a SIGSTOP or a starved
/// process would) for three lease durations, while two peers renew and take its buckets.
struct Stalling {
    stop: tokio::sync::watch::Sender<bool>,
    stall: std::sync::mpsc::Sender<Duration>,
    thread: std::thread::JoinHandle<()>,
}

fn stalling_replica(url: &str, who: &str, buckets: u32, log: &Log) -> Stalling {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let (stall, stalls) = std::sync::mpsc::channel::<Duration>();
    let (url, who, log) = (url.to_owned(), who.to_owned(), log.clone());
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async move {
            let settings = settings(&who, "default", buckets);
            let (owned, _ownership) = tokio::sync::watch::channel(Ownership::default());
            let fake = FakeBuckets { who: who.clone(), log };
            let run =
                cronshard_coordinator::run(client(&url, &who), settings, fake, Metrics::default(), owned, stopped);
            let task = tokio::spawn(run);
            // Polled between the coordinator's steps; a stall blocks the whole runtime.
            while !task.is_finished() {
                if let Ok(pause) = stalls.try_recv() {
                    std::thread::sleep(pause);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let _ = task.await;
        });
    });
    Stalling { stop, stall, thread }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_replica_fences_first_and_takes_nothing_from_live_peers() {
    let sim = sim_with_users(&["a", "b", "p"]);
    let url = serve(sim.clone()).await;
    let log = Log::default();
    let a = replica(&url, "a", 12, &log);
    let b = replica(&url, "b", 12, &log);
    let p = stalling_replica(&url, "p", 12, &log);
    let holding = |who: &str| holders(&sim, 12).values().filter(|h| *h == who).count();
    wait_for("all three hold buckets", || holding("a") == 4 && holding("b") == 4 && holding("p") == 4).await;

    p.stall.send(TIMING.lease_duration * 3).expect("stall");
    // While p is stalled, a and b take its buckets.
    wait_for("p's buckets taken", || holding("a") + holding("b") == 12).await;
    tokio::time::sleep(TIMING.lease_duration * 3).await;
    let woke = Instant::now();
    wait_for("p back with a share", || holding("p") > 0 && holding("a") + holding("b") + holding("p") == 12).await;
    tokio::time::sleep(TIMING.lease_duration).await;

    let entries = log.entries();
    // p's first act on waking is to stop everything, before it starts anything.
    let after: Vec<&(Instant, String, Did)> =
        entries.iter().filter(|(at, who, _)| who == "p" && *at >= woke - TIMING.lease_duration * 2).collect();
    let first_abort = after.iter().position(|(_, _, did)| *did == Did::AbortAll).unwrap_or_else(|| {
        panic!(
            "p fenced: {:?}",
            entries.iter().filter(|e| e.1 == "p").map(|e| (e.0.elapsed(), e.2.clone())).collect::<Vec<_>>()
        )
    });
    let first_start = after.iter().position(|(_, _, did)| matches!(did, Did::Start(..)));
    assert!(first_start.is_none_or(|s| s > first_abort), "p fenced before claiming: {after:?}");
    // Every bucket p starts after waking was handed over: its last holder stopped it first.
    for (at, _, did) in after.iter().filter(|(_, _, did)| matches!(did, Did::Start(..))) {
        let Did::Start(k, _) = did else { continue };
        let last = entries
            .iter()
            .rev()
            .find(|(t, who, d)| t < at && who != "p" && matches!(d, Did::Start(j, _) | Did::Stop(j) if j == k));
        assert!(
            last.is_none_or(|(_, _, d)| matches!(d, Did::Stop(_))),
            "p took bucket {k} from a live holder: {last:?}"
        );
    }
    let _ = p.stop.send(true);
    p.thread.join().expect("p exits");
    for r in [a, b] {
        let _ = r.stop.send(true);
        let _ = r.task.await;
    }
}

/// Every time the coordinator writes into a Lease (claims, renewals, releases) comes from the
/// wall clock in its settings, not the system's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_times_in_the_leases_come_from_the_replicas_wall_clock() {
    let sim = sim_with_users(&["a"]);
    let url = serve(sim.clone()).await;
    let at: Timestamp = "2030-01-02T03:04:05.678901Z".parse().expect("a timestamp");
    let mut on_its_clock = settings("a", "default", 2);
    on_its_clock.wall_clock = Arc::new(move || at);
    let a = replica_with(&url, on_its_clock, &Log::default());
    wait_for("a owns both", || a.ownership.borrow().settled() && a.ownership.borrow().owned.len() == 2).await;
    let times = |name: &str| {
        let lease = sim.store().get(cronshard_sim::Resource::Leases, "default", name).expect("a Lease");
        ["acquireTime", "renewTime"]
            .map(|field| lease.value()["spec"][field].as_str().and_then(|t| t.parse::<Timestamp>().ok()))
    };
    let names = [member_name("a"), bucket_name(0), bucket_name(1)];
    for name in &names {
        assert_eq!(times(name), [Some(at); 2], "{name}");
    }
    // Released on the way out, on the same clock.
    let _ = a.stop.send(true);
    a.task.await.expect("joins").expect("runs");
    assert!(holders(&sim, 2).values().all(String::is_empty), "{:?}", holders(&sim, 2));
    for name in &names[1..] {
        assert_eq!(times(name), [Some(at); 2], "{name}");
    }
}
