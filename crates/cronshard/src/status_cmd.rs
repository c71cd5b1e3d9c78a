//! `cronshard status`: prints the bucket map the Leases describe.

use anyhow::Context as _;
use std::io::Write;
use std::num::NonZeroU32;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;

use crate::cluster_cli::Connection;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Output {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    #[command(flatten)]
    connection: Connection,
    /// Namespace of the Leases (the release namespace); default: the kubeconfig's.
    #[arg(long, short = 'n', env = "POD_NAMESPACE")]
    namespace: Option<String>,
    /// The deployment's bucket count.
    #[arg(long, env = "CRONSHARD_BUCKETS", default_value_t = NonZeroU32::new(64).expect("non-zero"))]
    buckets: NonZeroU32,
    #[arg(long, short = 'o', value_enum, default_value = "text")]
    output: Output,
}

pub(crate) fn run(args: StatusArgs) -> ExitCode {
    cronshard::cli::block_on(
        async move {
            let text = report(&args).await?;
            std::io::stdout().lock().write_all(text.as_bytes()).context("stdout")
        },
        2,
    )
}

async fn report(args: &StatusArgs) -> anyhow::Result<String> {
    let config = args.connection.config().await?;
    let namespace = args.namespace.clone().unwrap_or_else(|| config.default_namespace.clone());
    let client = kube::Client::try_from(config)?;
    let api: Api<Lease> = Api::namespaced(client, &namespace);
    let report = cronshard_coordinator::status::read(&api, &namespace, args.buckets.get()).await?;
    Ok(match args.output {
        Output::Text => cronshard_coordinator::status::render(&report),
        Output::Json => serde_json::to_string_pretty(&report)? + "\n",
    })
}
