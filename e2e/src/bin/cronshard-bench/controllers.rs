//! An arm's controller processes by replica slot, and the faults applied to them on time:
//! kills and restarts, partitions, rolling restarts, on the simulator or a real control plane.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cronshard_e2e::scenario::Fault;
use cronshard_e2e::testbed::Testbed;
use tokio::process::Child;

use crate::launch::{start_controller, start_replica};
use crate::procs::{Admin, Proc, signal, sigterm};

/// Where an arm's controllers run, and so how a fault reaches them.
pub(crate) enum Server<'a> {
    /// `cronshard-sim`: the controllers follow its clock, and a partition makes their requests
    /// hang there (`/sim/partition`).
    Sim { url: String, admin: &'a Admin },
    /// A real control plane: nothing between the process and kube-apiserver can hang its
    /// requests, so a partition is a pause of the whole process (SIGSTOP, SIGCONT after
    /// `for_s`), as a frozen VM or a stop-the-world stall does it: the harder case, since the
    /// process resumes with its requests and timers as they were.
    Kube { testbed: &'a Testbed },
}

impl Server<'_> {
    async fn launch(
        &self,
        bin_dir: &Path,
        dir: &Path,
        arm: &str,
        i: usize,
        generation: usize,
    ) -> Result<Child, String> {
        match self {
            Server::Sim { url, .. } => start_controller(bin_dir, dir, arm, i, generation, url).await,
            Server::Kube { testbed } => start_replica(bin_dir, dir, testbed, arm, i, generation).await,
        }
    }

    /// Partitions replica slot `replica`, whose process is `pid` now.
    async fn partition(&self, replica: usize, pid: Option<u32>) -> Result<(), String> {
        match self {
            Server::Sim { admin, .. } => {
                let body = serde_json::json!({"user": format!("bench-{replica}"), "mode": "hang"}).to_string();
                admin.call("POST", "/sim/partition", body.into_bytes()).await.map(drop)
            }
            Server::Kube { .. } => signal(pid, "STOP"),
        }
    }

    /// Ends the partition of slot `replica`; `pid` is the process that was partitioned (a
    /// rolling restart may have given the slot a successor meanwhile).
    async fn heal(&self, replica: usize, pid: Option<u32>) -> Result<(), String> {
        match self {
            Server::Sim { admin, .. } => {
                let body = serde_json::json!({"user": format!("bench-{replica}")}).to_string();
                admin.call("POST", "/sim/heal", body.into_bytes()).await.map(drop)
            }
            Server::Kube { .. } => signal(pid, "CONT"),
        }
    }

    /// The simulator's history faults (a real server compacts on its own timer, and its
    /// watches cannot be dropped from outside).
    async fn admin_call(&self, path: &str) -> Result<(), String> {
        match self {
            Server::Sim { admin, .. } => admin.call("POST", path, Vec::new()).await.map(drop),
            Server::Kube { .. } => Err(format!("{path}: the simulator's fault, not available on a real control plane")),
        }
    }
}

/// When each fault fires: once (kill, partition, rolling restart) or every `every_s`
/// (compaction, dropped watches).
pub(crate) struct FaultClock {
    fired: Vec<bool>,
    next: Vec<f64>,
}

impl FaultClock {
    pub(crate) fn new(faults: &[Fault]) -> Self {
        let next = faults
            .iter()
            .map(|f| match f {
                Fault::Compact { at_s, .. } | Fault::DropWatches { at_s, .. } => *at_s,
                _ => f64::INFINITY,
            })
            .collect();
        FaultClock { fired: vec![false; faults.len()], next }
    }

    /// The faults due at `t` (those aimed at a replica the arm lacks never are).
    pub(crate) fn due<'f>(&mut self, faults: &'f [Fault], t: f64, replicas: usize) -> Vec<&'f Fault> {
        let mut due = Vec::new();
        for (k, fault) in faults.iter().enumerate() {
            let once = match fault {
                Fault::Kill { at_s, replica, .. } | Fault::Partition { at_s, replica, .. } => {
                    (*replica < replicas).then_some(*at_s)
                }
                Fault::RollingRestart { at_s, .. } => Some(*at_s),
                Fault::Compact { every_s, .. } | Fault::DropWatches { every_s, .. } => {
                    if t >= self.next[k] {
                        self.next[k] += every_s.max(1.0);
                        due.push(fault);
                    }
                    None
                }
            };
            if let Some(at_s) = once
                && !self.fired[k]
                && t >= at_s
            {
                self.fired[k] = true;
                due.push(fault);
            }
        }
        due
    }
}

/// An arm's controller processes, by replica slot, and what is scheduled to happen to them.
pub(crate) struct Controllers<'a> {
    bin_dir: &'a Path,
    dir: PathBuf,
    arm: &'a str,
    server: Server<'a>,
    procs: Vec<Option<Proc>>,
    /// Per slot: CPU seconds and peak RSS of the processes that already left it.
    totals: Vec<(f64, f64)>,
    /// (when, replica): restart after a kill.
    restarts: Vec<(f64, usize)>,
    /// (when, replica, the partitioned process): end a partition.
    heals: Vec<(f64, usize, Option<u32>)>,
    /// (when, replica, start the successor or stop the predecessor): a rolling restart.
    rollout: Vec<(f64, usize, bool)>,
    successors: Vec<Option<Proc>>,
    /// Predecessors told to stop, waited for at the end.
    leaving: Vec<Proc>,
}

impl<'a> Controllers<'a> {
    pub(crate) async fn start(
        bin_dir: &'a Path,
        dir: PathBuf,
        arm: &'a str,
        count: usize,
        server: Server<'a>,
    ) -> Result<Self, String> {
        let mut procs = Vec::new();
        for i in 0..count {
            procs.push(Some(Proc::new(server.launch(bin_dir, &dir, arm, i, 0).await?)));
        }
        Ok(Controllers {
            bin_dir,
            dir,
            arm,
            server,
            procs,
            totals: vec![(0.0, 0.0); count],
            restarts: Vec::new(),
            heals: Vec::new(),
            rollout: Vec::new(),
            successors: (0..count).map(|_| None).collect(),
            leaving: Vec::new(),
        })
    }

    pub(crate) async fn apply(&mut self, fault: &Fault, t: f64) -> Result<(), String> {
        match fault {
            Fault::Kill { replica, restart_after_s, .. } => {
                if let Some(mut p) = self.procs[*replica].take() {
                    p.sample();
                    self.retire(*replica, &p);
                    let _ = p.child.start_kill();
                    let _ = p.child.wait().await;
                }
                self.restarts.push((t + restart_after_s, *replica));
            }
            Fault::Partition { replica, for_s, .. } => {
                let pid = self.pid(*replica);
                self.server.partition(*replica, pid).await?;
                self.heals.push((t + for_s, *replica, pid));
            }
            Fault::RollingRestart { step_s, surge_s, .. } => {
                for r in 0..self.procs.len() {
                    let start = t + step_s * r as f64;
                    self.rollout.push((start, r, true));
                    self.rollout.push((start + surge_s, r, false));
                }
            }
            Fault::Compact { .. } => self.server.admin_call("/sim/compact").await?,
            Fault::DropWatches { .. } => self.server.admin_call("/sim/drop-watches").await?,
        }
        Ok(())
    }

    /// Restarts, rollout steps and heals whose time has come.
    pub(crate) async fn on_time(&mut self, t: f64) -> Result<(), String> {
        for (at, replica) in std::mem::take(&mut self.restarts) {
            if t < at {
                self.restarts.push((at, replica));
                continue;
            }
            let child = self.server.launch(self.bin_dir, &self.dir, self.arm, replica, 0).await?;
            self.procs[replica] = Some(Proc::new(child));
        }
        for (at, replica, start) in std::mem::take(&mut self.rollout) {
            if t < at {
                self.rollout.push((at, replica, start));
            } else if start {
                let child = self.server.launch(self.bin_dir, &self.dir, self.arm, replica, 1).await?;
                self.successors[replica] = Some(Proc::new(child));
            } else {
                self.hand_over(replica);
            }
        }
        for (at, replica, pid) in std::mem::take(&mut self.heals) {
            if t < at {
                self.heals.push((at, replica, pid));
                continue;
            }
            self.server.heal(replica, pid).await?;
        }
        Ok(())
    }

    /// The successor takes the slot; the predecessor gets SIGTERM, as a Deployment does.
    fn hand_over(&mut self, replica: usize) {
        let Some(successor) = self.successors[replica].take() else { return };
        if let Some(mut old) = self.procs[replica].replace(successor) {
            old.sample();
            self.retire(replica, &old);
            sigterm(&old.child);
            self.leaving.push(old);
        }
    }

    /// A process leaves its slot: its usage so far counts for the slot.
    fn retire(&mut self, replica: usize, p: &Proc) {
        self.totals[replica].0 += p.cpu_s;
        self.totals[replica].1 = self.totals[replica].1.max(p.peak_rss_mb);
    }

    /// Samples every process; an error once one has exited with a failure of its own (a flag
    /// it refused, a build without a feature it needs): the arm would measure nothing. Those
    /// the scenario kills end by a signal, those it restarts with 0.
    pub(crate) fn sample(&mut self) -> Result<(), String> {
        for (i, p) in self.procs.iter_mut().enumerate() {
            let Some(p) = p else { continue };
            p.sample();
            if let Ok(Some(status)) = p.child.try_wait()
                && status.code().is_some_and(|code| code != 0)
            {
                return Err(format!("replica {i} exited with {status}: see its log in the arm's directory"));
            }
        }
        Ok(())
    }

    fn pid(&self, replica: usize) -> Option<u32> {
        self.procs[replica].as_ref().and_then(|p| p.child.id())
    }

    /// Partitions healed, then SIGTERM to every process and a wait for each (a paused
    /// process would not act on it); returns (CPU s, peak RSS MB) per slot.
    pub(crate) async fn stop(mut self) -> Vec<(f64, f64)> {
        for (_, replica, pid) in std::mem::take(&mut self.heals) {
            let _ = self.server.heal(replica, pid).await;
        }
        for i in 0..self.procs.len() {
            if let Some(mut p) = self.procs[i].take() {
                p.sample();
                self.retire(i, &p);
                sigterm(&p.child);
                self.leaving.push(p);
            }
        }
        for p in &mut self.leaving {
            let _ = tokio::time::timeout(Duration::from_secs(30), p.child.wait()).await;
        }
        self.totals
    }
}
