//! What the binary's commands that talk to a cluster share: the kubeconfig and context they
//! read, the `--metrics-addr` listener they bind, and `--testing-clock-from`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use cronshard_worker::Clock;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// How a command reaches the cluster: kubectl's `--kubeconfig` and `--context`.
#[derive(Clone, Debug, Default, clap::Args)]
pub(crate) struct Connection {
    /// Kubeconfig file; default: $KUBECONFIG, else ~/.kube/config, else the in-cluster config.
    #[arg(long)]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use; default: its current-context.
    #[arg(long)]
    pub(crate) context: Option<String>,
}

impl Connection {
    /// `--kubeconfig`, else $KUBECONFIG / ~/.kube/config, else the in-cluster config (kube's
    /// order: in a pod with no kubeconfig, `KUBERNETES_SERVICE_HOST`/`_PORT` and the service
    /// account's token and CA). A `--context` needs a kubeconfig.
    pub(crate) async fn config(&self) -> anyhow::Result<kube::Config> {
        let options = KubeConfigOptions { context: self.context.clone(), ..KubeConfigOptions::default() };
        match (&self.kubeconfig, &self.context) {
            (Some(path), _) => {
                let flag = || format!("--kubeconfig {}", path.display());
                let kubeconfig = Kubeconfig::read_from(path).with_context(flag)?;
                Ok(kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.with_context(flag)?)
            }
            (None, Some(context)) => Ok(kube::Config::from_kubeconfig(&options)
                .await
                .with_context(|| format!("--context {context}: from $KUBECONFIG or ~/.kube/config"))?),
            (None, None) => Ok(kube::Config::infer().await.context("no kubeconfig and no in-cluster config")?),
        }
    }
}

/// Binds `--metrics-addr` and prints the URL it got on stdout (port 0 picks a free port, so
/// whoever started the process reads where to scrape).
pub(crate) async fn bind_metrics(addr: SocketAddr) -> anyhow::Result<(tokio::net::TcpListener, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("--metrics-addr {addr}"))?;
    let bound = listener.local_addr()?;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "http://{bound}");
    let _ = out.flush();
    Ok((listener, bound))
}

/// `--testing-clock-from URL`: `clock` follows the simulator's offset, polled every 200 ms.
/// Only a build with the `testing-clock` feature (tests, demos, benchmarks) can; any other
/// refuses the flag rather than run on the wrong clock.
pub(crate) fn follow_testing_clock(clock: &Clock, url: &str) -> anyhow::Result<()> {
    #[cfg(feature = "testing-clock")]
    {
        tracing::warn!(%url, "following a simulator's clock: for tests and demos only");
        tokio::spawn(clock.clone().follow(url.to_owned()));
        Ok(())
    }
    #[cfg(not(feature = "testing-clock"))]
    {
        let _ = (clock, url);
        anyhow::bail!(
            "--testing-clock-from: this build cannot follow a simulator's clock (build with --features testing-clock)"
        )
    }
}
