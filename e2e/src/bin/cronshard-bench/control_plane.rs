//! CPU seconds and peak RSS of a real control plane's processes over an arm.

use cronshard_e2e::report::ProcessUsage;
use cronshard_e2e::testbed::Testbed;
use cronshard_e2e::usage;

/// CPU seconds and peak RSS of the control plane's processes, sampled as the run goes.
pub(crate) struct ControlPlane {
    processes: Vec<(&'static str, u32, ProcessUsage)>,
}

impl ControlPlane {
    pub(crate) fn new(testbed: &Testbed) -> Self {
        // kube-scheduler and kwok run on a whole cluster only.
        let processes = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"]
            .into_iter()
            .filter_map(|name| {
                let usage = ProcessUsage { name: name.to_owned(), cpu_s: 0.0, peak_rss_mb: 0.0 };
                testbed.pid(name).map(|pid| (name, pid, usage))
            })
            .collect();
        ControlPlane { processes }
    }

    pub(crate) fn sample(&mut self) {
        for (_, pid, u) in &mut self.processes {
            let (cpu, rss) = usage(*pid);
            if cpu > 0.0 {
                u.cpu_s = cpu;
            }
            u.peak_rss_mb = u.peak_rss_mb.max(rss);
        }
    }

    pub(crate) fn usage(&self, name: &str) -> ProcessUsage {
        self.processes.iter().find(|(n, _, _)| *n == name).map(|(_, _, u)| u.clone()).unwrap_or(ProcessUsage {
            name: name.to_owned(),
            cpu_s: 0.0,
            peak_rss_mb: 0.0,
        })
    }

    pub(crate) fn report(&self) -> Vec<ProcessUsage> {
        let round = |v: f64| (v * 100.0).round() / 100.0;
        self.processes
            .iter()
            .map(|(_, _, u)| ProcessUsage {
                name: u.name.clone(),
                cpu_s: round(u.cpu_s),
                peak_rss_mb: round(u.peak_rss_mb),
            })
            .collect()
    }
}
