//! `cronshard get` (`kubectl cronshard get`): the CronJobs with their next run, bucket and the
//! replica that holds it, read from the API server; the table is [`crate::get_table`].

use std::collections::BTreeMap;
use std::io::Write as _;
use std::num::NonZeroU32;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};
use cronshard_coordinator::lease::ROLE_LABEL;
use cronshard_types::{BucketFunction, DstPolicy, spread::SPREAD_ANNOTATION};
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::ListParams;

use crate::cluster_cli::Connection;
use crate::get_table::{self, Clock, Placement};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Output {
    /// The columns.
    Text,
    /// The columns and NEXT AT, the next start in the CronJob's time zone.
    Wide,
}

#[derive(Debug, Args)]
pub(crate) struct GetArgs {
    #[command(flatten)]
    connection: Connection,
    /// Namespace of the CronJobs; default: the kubeconfig context's.
    #[arg(long, short = 'n', conflicts_with = "all_namespaces")]
    namespace: Option<String>,
    /// CronJobs of every namespace.
    #[arg(long, short = 'A')]
    all_namespaces: bool,
    /// Only CronJobs matching this label selector.
    #[arg(long, short = 'l')]
    selector: Option<String>,
    /// Namespace of the cronshard deployment's Leases; default: the one namespace that has
    /// cronshard Leases.
    #[arg(long)]
    leases_namespace: Option<String>,
    /// The deployment's `--dst-policy` (NEXT follows it across daylight-saving changes).
    #[arg(long, env = "CRONSHARD_DST_POLICY", default_value = "cron")]
    dst_policy: DstPolicy,
    #[arg(long, short = 'o', value_enum, default_value = "text")]
    output: Output,
}

pub(crate) fn run(args: GetArgs) -> ExitCode {
    cronshard::cli::block_on(
        async move {
            let text = table(&args).await?;
            std::io::stdout().lock().write_all(text.as_bytes()).context("stdout")
        },
        2,
    )
}

async fn table(args: &GetArgs) -> anyhow::Result<String> {
    if let Some(selector) = &args.selector {
        cronshard_types::selector::LabelSelector::parse(selector)
            .with_context(|| format!("--selector {selector:?} is not a label selector"))?;
    }
    let config = args.connection.config().await?;
    let namespace = args.namespace.clone().unwrap_or_else(|| config.default_namespace.clone());
    let client = kube::Client::try_from(config).context("building the client")?;
    let cronjobs: Api<CronJob> =
        if args.all_namespaces { Api::all(client.clone()) } else { Api::namespaced(client.clone(), &namespace) };
    let mut params = ListParams::default();
    if let Some(selector) = &args.selector {
        params = params.labels(selector);
    }
    let listed = cronjobs.list(&params).await.context("listing CronJobs")?;
    let spreads = namespace_spreads(&client, (!args.all_namespaces).then_some(namespace.as_str())).await;
    let placement = placement(&client, args.leases_namespace.as_deref()).await?;
    let clock = Clock { now: jiff::Timestamp::now(), policy: args.dst_policy, namespace_spreads: &spreads };
    let rows: Vec<_> = listed.items.iter().map(|cj| get_table::row(cj, &clock, &placement)).collect();
    if rows.is_empty() {
        let scope = if args.all_namespaces { "any namespace".to_owned() } else { format!("namespace {namespace}") };
        return Ok(format!("No CronJobs found in {scope}.\n"));
    }
    Ok(get_table::render(&rows, args.all_namespaces, matches!(args.output, Output::Wide)))
}

/// The `cronshard.io/spread` defaults of the Namespaces (of `only`, if given). A reader who
/// may not read Namespaces is told that NEXT leaves their defaults out.
async fn namespace_spreads(client: &kube::Client, only: Option<&str>) -> BTreeMap<String, String> {
    let api: Api<Namespace> = Api::all(client.clone());
    let namespaces = match only {
        Some(name) => api.get_opt(name).await.map(|n| n.into_iter().collect()),
        None => api.list(&ListParams::default()).await.map(|l| l.items),
    };
    match namespaces {
        Ok(namespaces) => namespaces
            .into_iter()
            .filter_map(|n| {
                let spread = n.metadata.annotations.as_ref()?.get(SPREAD_ANNOTATION)?.clone();
                Some((n.metadata.name?, spread))
            })
            .collect(),
        Err(e) => {
            tracing::warn!("cannot read Namespaces ({e}): NEXT leaves out their {SPREAD_ANNOTATION} defaults");
            BTreeMap::new()
        }
    }
}

/// The deployment's bucket layout and holders, from its Leases in `leases_namespace`, else in
/// the one namespace that has cronshard Leases. No deployment: no BUCKET and no REPLICA.
async fn placement(client: &kube::Client, leases_namespace: Option<&str>) -> anyhow::Result<Placement> {
    let namespace = match leases_namespace {
        Some(ns) => ns.to_owned(),
        None => {
            let all: Api<Lease> = Api::all(client.clone());
            let leases = all.list_metadata(&ListParams::default().labels(ROLE_LABEL)).await.context(
                "looking for the cronshard deployment's Leases in every namespace (name it with --leases-namespace)",
            )?;
            let found: std::collections::BTreeSet<String> =
                leases.items.into_iter().filter_map(|l| l.metadata.namespace).collect();
            match found.len() {
                0 => {
                    tracing::warn!("no cronshard Leases in any namespace: BUCKET and REPLICA are unknown");
                    return Ok(Placement::default());
                }
                1 => found.into_iter().next().unwrap_or_default(),
                _ => bail!(
                    "cronshard Leases in several namespaces ({}): name the deployment's with --leases-namespace",
                    found.into_iter().collect::<Vec<_>>().join(", ")
                ),
            }
        }
    };
    let api: Api<Lease> = Api::namespaced(client.clone(), &namespace);
    let report = cronshard_coordinator::status::read(&api, &namespace, 1)
        .await
        .with_context(|| format!("reading the cronshard Leases in namespace {namespace}"))?;
    let function = report.bucket_function.as_deref().and_then(|f| f.parse::<BucketFunction>().ok());
    let layout = function.zip(NonZeroU32::new(report.buckets)).filter(|_| report.recorded);
    let holders = report.members.iter().flat_map(|m| m.buckets.iter().map(|b| (*b, m.identity.clone()))).collect();
    Ok(Placement { layout, holders })
}
