//! `cronshard plan`: replicas, per-replica QPS and memory for the CronJobs of a cluster.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use cronshard_types::schedule::Kind;
use cronshard_types::{CronJobSchedule, Error, Timestamp, Zone};
use serde_json::{Value, json};

/// Exit code for unreadable input or an invalid argument (clap uses 2 for usage errors too).
const EXIT_INVALID: u8 = 2;
/// The plan is for the 99th-percentile run: in a herd of H created at `rate` per second it
/// waits 0.99 · H / rate.
const P99: f64 = 0.99;
/// The formula the plan states, in the text and the JSON.
const FORMULA: &str = "needed_create_rate = 0.99 * H / T";
/// API writes per run: the Job create (the only one on the critical path), the CronJob status
/// update, about one Event, and later the Job's delete in history cleanup.
const WRITES_PER_RUN: u64 = 4;
/// One replica leaves every CronJob unscheduled while it restarts.
const MIN_REPLICAS: u64 = 2;
/// Recommended `--qps` values are multiples of this.
const QPS_STEP: u64 = 50;
const MIB: u64 = 1024 * 1024;
/// Resident memory per CronJob a replica holds (with its Jobs), from the `scale` benchmark
/// (docs/benchmarks.md; 100,000 CronJobs of the incident's mix): one replica peaked at
/// 931 MB, each of four (about 25,000 CronJobs) at 250 MB; e2e/results/scale/report.json has
/// 930.58 and at most 249.72 (VmHWM / 1024, so MiB): (930.58 − 249.72) MiB / 75,000 ≈ 9.3 KiB.
const MEMORY_PER_CRONJOB_BYTES: u64 = 9_519;
/// A replica's resident memory before any CronJob, from the same two points:
/// 930.6 MiB − 100,000 × 9.3 KiB ≈ 23 MiB.
const MEMORY_BASE_BYTES: u64 = 23 * MIB;
/// How many invalid CronJobs and herds the text lists.
const SHOWN: usize = 10;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Output {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    /// Output of `kubectl get cronjobs -A -o json` (or one CronJob, or a JSON array); `-` reads stdin.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    file: PathBuf,
    /// Start of the window (RFC 3339, floored to the minute); default: the next full UTC hour.
    #[arg(long)]
    from: Option<Timestamp>,
    /// Length of the window in hours (1 to 168).
    #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u32).range(1..=168))]
    hours: u32,
    /// How late the 99th-percentile run of the largest herd may be created.
    #[arg(long, default_value = "1s", value_parser = cronshard::cli::parse_duration)]
    skew_target: Duration,
    /// Each replica's client token bucket, as `cronshard run --qps` (0 = unlimited).
    #[arg(long, default_value_t = 1000.0)]
    qps: f64,
    /// Writes per second the API server admits, shared by all replicas (0 = unlimited).
    #[arg(long, default_value_t = 1000.0)]
    admitted_writes_per_s: f64,
    /// Memory limit of one replica, a Kubernetes quantity (512Mi, 1Gi, 800M).
    #[arg(long, default_value = "512Mi", value_parser = parse_quantity)]
    memory_per_replica: u64,
    /// Also draw the runs per minute as an SVG to this file.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value = "text")]
    output: Output,
}

pub(crate) fn run(args: PlanArgs) -> ExitCode {
    // The only clock read: everything below takes the window's start as a value.
    let from = args.from.unwrap_or_else(|| next_full_hour(Timestamp::now()));
    match execute(&args, from) {
        Ok(text) => {
            // A closed pipe (`| head`) is not an error worth a message.
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            ExitCode::from(EXIT_INVALID)
        }
    }
}

fn execute(args: &PlanArgs, from: Timestamp) -> Result<String, String> {
    let settings = Settings::from_args(args)?;
    let window = Window::new(from, args.hours)?;
    let items = read_items(&args.file)?;
    let plan = compute(&items, window, settings);
    let svg_path = match &args.svg {
        Some(path) => {
            std::fs::write(path, svg(&plan)).map_err(|e| format!("--svg {}: {e}", path.display()))?;
            Some(path.display().to_string())
        }
        None => None,
    };
    match args.output {
        Output::Text => {
            let mut text = render_text(&plan);
            if let Some(path) = svg_path {
                let _ = writeln!(text, "SVG: {path}");
            }
            Ok(text)
        }
        Output::Json => {
            let mut value = to_json(&plan);
            if let (Some(path), Some(map)) = (svg_path, value.as_object_mut()) {
                map.insert("svg".to_owned(), Value::String(path));
            }
            serde_json::to_string_pretty(&value).map(|s| s + "\n").map_err(|e| e.to_string())
        }
    }
}

/// The default window start: the next full UTC hour after `now`.
fn next_full_hour(now: Timestamp) -> Timestamp {
    Timestamp::from_second((now.as_second().div_euclid(3600) + 1) * 3600).unwrap_or(now)
}

/// The flags the plan depends on, checked.
#[derive(Clone, Copy, Debug)]
struct Settings {
    skew_target_s: f64,
    /// Per replica; 0 = unlimited.
    qps: f64,
    /// Shared by all replicas; 0 = unlimited.
    admitted_writes_per_s: f64,
    memory_per_replica: u64,
}

impl Settings {
    fn from_args(args: &PlanArgs) -> Result<Self, String> {
        let skew_target_s = args.skew_target.as_secs_f64();
        if skew_target_s <= 0.0 {
            return Err("--skew-target must be above zero".to_owned());
        }
        if !args.qps.is_finite() || args.qps < 0.0 {
            return Err(format!("--qps {}: must be 0 (unlimited) or a positive number", args.qps));
        }
        if !args.admitted_writes_per_s.is_finite() || args.admitted_writes_per_s < 0.0 {
            return Err(format!(
                "--admitted-writes-per-s {}: must be 0 (unlimited) or a positive number",
                args.admitted_writes_per_s
            ));
        }
        if args.memory_per_replica <= MEMORY_BASE_BYTES {
            return Err(format!(
                "--memory-per-replica {} MiB: must be above the {} MiB a replica uses before it holds any CronJob",
                fmt_num(mib(args.memory_per_replica)),
                MEMORY_BASE_BYTES / MIB
            ));
        }
        Ok(Settings {
            skew_target_s,
            qps: args.qps,
            admitted_writes_per_s: args.admitted_writes_per_s,
            memory_per_replica: args.memory_per_replica,
        })
    }
}

/// The minutes planned for, `[start, end)` in unix seconds.
#[derive(Clone, Copy, Debug)]
struct Window {
    start: Timestamp,
    start_s: i64,
    end_s: i64,
    hours: u32,
    /// One second before the start: fire times strictly after it are the ones at or after the start.
    after: Timestamp,
}

impl Window {
    fn new(from: Timestamp, hours: u32) -> Result<Self, String> {
        let start_s = from.as_second().div_euclid(60) * 60;
        let end_s = start_s + i64::from(hours) * 3600;
        let outside = || format!("--from {from} plus {hours} h is outside the years this command handles");
        let start = Timestamp::from_second(start_s).map_err(|_| outside())?;
        let after = Timestamp::from_second(start_s - 1).map_err(|_| outside())?;
        if Timestamp::from_second(end_s).is_err() {
            return Err(outside());
        }
        Ok(Window { start, start_s, end_s, hours, after })
    }

    fn minutes(&self) -> usize {
        usize::try_from((self.end_s - self.start_s) / 60).unwrap_or(0)
    }

    /// The index of the minute holding `unix`, if it is inside the window.
    fn minute_of(&self, unix: i64) -> Option<usize> {
        if !(self.start_s..self.end_s).contains(&unix) {
            return None;
        }
        usize::try_from((unix - self.start_s) / 60).ok()
    }
}

/// A CronJob that will not run, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Invalid {
    name: String,
    reason: String,
}

/// What the items add up to over the window. `valid`, `suspended` and `invalid` partition
/// `total`: a suspended CronJob is not counted as valid.
#[derive(Clone, Debug)]
struct Load {
    total: u64,
    valid: u64,
    suspended: u64,
    invalid: Vec<Invalid>,
    per_minute: Vec<u64>,
}

/// One minute of the window by the runs due in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Herd {
    /// The minute's first unix second.
    minute: i64,
    runs: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct MinuteStats {
    mean: f64,
    p50: u64,
    p99: u64,
    max: u64,
}

#[derive(Clone, Debug, PartialEq)]
struct Capacity {
    skew_target_s: f64,
    /// The largest herd, H.
    herd: u64,
    needed_create_rate: f64,
    /// The create rate the replicas are sized for: the needed one, or the server's admitted
    /// rate when that is lower.
    client_rate: f64,
    server_limited: bool,
    replicas_for_qps: u64,
    replicas_for_memory: u64,
    replicas: u64,
    qps_per_replica: u64,
    /// Creates per second the recommendation gives: replicas × QPS, capped by the server.
    planned_rate: f64,
    /// Expected peak RSS of one replica at the recommended count, in bytes.
    memory_per_replica: u64,
    achievable_p99_skew_s: f64,
    limited_by: &'static str,
}

#[derive(Clone, Debug)]
struct Plan {
    window: Window,
    settings: Settings,
    load: Load,
    runs: u64,
    stats: MinuteStats,
    herds: Vec<Herd>,
    capacity: Capacity,
}

impl Plan {
    fn runs_per_day(&self) -> f64 {
        self.runs as f64 * 24.0 / f64::from(self.window.hours)
    }

    fn writes_per_day(&self) -> f64 {
        self.runs_per_day() * WRITES_PER_RUN as f64
    }
}

/// The whole plan, from the parsed items and the window: pure, no clock, no I/O.
fn compute(items: &[Value], window: Window, settings: Settings) -> Plan {
    let load = count_runs(items, &window);
    let runs = load.per_minute.iter().sum::<u64>();
    let stats = minute_stats(&load.per_minute);
    let herds = herds(&load.per_minute, window.start_s, SHOWN);
    let capacity = capacity(stats.max, load.total, &settings);
    Plan { window, settings, load, runs, stats, herds, capacity }
}

/// The fields of one item the plan reads.
#[derive(Clone, Copy, Debug)]
struct Spec<'a> {
    schedule: &'a str,
    time_zone: Option<&'a str>,
    suspend: bool,
}

/// A schedule and zone as written: CronJobs that share them share the parse and the runs.
type Key<'a> = (&'a str, Option<&'a str>);

/// Every run of every valid, unsuspended CronJob in the window, counted per minute.
fn count_runs(items: &[Value], window: &Window) -> Load {
    let mut load =
        Load { total: 0, valid: 0, suspended: 0, invalid: Vec::new(), per_minute: vec![0; window.minutes()] };
    let mut parsed: HashMap<Key<'_>, Result<CronJobSchedule, Error>> = HashMap::new();
    // Five-field schedules do not depend on the object: count their CronJobs, walk each once.
    let mut shared: HashMap<Key<'_>, u64> = HashMap::new();
    for (index, item) in items.iter().enumerate() {
        load.total += 1;
        let name = item_name(item, index);
        let spec = match read_spec(item) {
            Ok(spec) => spec,
            Err(reason) => {
                load.invalid.push(Invalid { name, reason });
                continue;
            }
        };
        let key = (spec.schedule, spec.time_zone);
        let result: &Result<CronJobSchedule, Error> =
            parsed.entry(key).or_insert_with(|| parse(spec.schedule, spec.time_zone, window));
        // The controller's order: an unknown zone is reported even when suspended; a bad
        // schedule only when the CronJob would run.
        let cronjob = match result {
            Err(e @ Error::UnknownTimeZone { .. }) => {
                load.invalid.push(Invalid { name, reason: format!("UnknownTimeZone: {e}") });
                continue;
            }
            _ if spec.suspend => {
                load.suspended += 1;
                continue;
            }
            Err(e @ Error::NoFireTime { .. }) => {
                load.invalid.push(Invalid { name, reason: format!("InvalidSchedule: {e}") });
                continue;
            }
            Err(e) => {
                load.invalid.push(Invalid { name, reason: format!("UnparseableSchedule: {e}") });
                continue;
            }
            Ok(cronjob) => cronjob,
        };
        load.valid += 1;
        match cronjob.schedule().kind() {
            Kind::Every { seconds } => add_every(&mut load.per_minute, window, *seconds, anchor(item)),
            Kind::Spec(_) => *shared.entry(key).or_insert(0) += 1,
        }
    }
    for (key, count) in &shared {
        let Some(Ok(cronjob)) = parsed.get(key) else { continue };
        // Exactly `cronshard schedule next`: successive fire times after a start.
        for t in cronjob.schedule().iter_after(window.after) {
            let Some(minute) = window.minute_of(t.as_second()) else { break };
            if let Some(slot) = load.per_minute.get_mut(minute) {
                *slot += *count;
            }
        }
    }
    load
}

/// Parses like the controller, and also rejects a schedule that never fires (the
/// controller's `InvalidSchedule` Warning).
fn parse(schedule: &str, time_zone: Option<&str>, window: &Window) -> Result<CronJobSchedule, Error> {
    let cronjob = CronJobSchedule::new(schedule, time_zone)?;
    if cronjob.schedule().next_after(window.after).is_none() {
        return Err(Error::NoFireTime { after: window.start });
    }
    Ok(cronjob)
}

fn read_spec(item: &Value) -> Result<Spec<'_>, String> {
    if let Some(kind) = item.get("kind").and_then(Value::as_str)
        && kind != "CronJob"
    {
        return Err(format!("kind {kind}, not CronJob"));
    }
    let spec = item.get("spec");
    let field = |name: &str| spec.and_then(|s| s.get(name));
    let schedule = field("schedule").and_then(Value::as_str).ok_or("spec.schedule is missing or not a string")?;
    let time_zone = match field("timeZone") {
        None | Some(Value::Null) => None,
        Some(Value::String(zone)) => Some(zone.as_str()),
        Some(_) => return Err("spec.timeZone is not a string".to_owned()),
    };
    let suspend = field("suspend").and_then(Value::as_bool).unwrap_or(false);
    Ok(Spec { schedule, time_zone, suspend })
}

fn meta_str<'a>(item: &'a Value, key: &str) -> Option<&'a str> {
    item.get("metadata")?.get(key)?.as_str()
}

/// `namespace/name`, as kubectl prints it with `-A`.
fn item_name(item: &Value, index: usize) -> String {
    match (meta_str(item, "namespace"), meta_str(item, "name")) {
        (Some(namespace), Some(name)) => format!("{namespace}/{name}"),
        (None, Some(name)) => name.to_owned(),
        (_, None) => format!("items[{index}]"),
    }
}

/// Where an `@every` CronJob's fire times are counted from, as the controller counts them:
/// `status.lastScheduleTime`, else `metadata.creationTimestamp`.
fn anchor(item: &Value) -> Option<i64> {
    ["/status/lastScheduleTime", "/metadata/creationTimestamp"]
        .into_iter()
        .find_map(|pointer| item.pointer(pointer)?.as_str()?.parse::<Timestamp>().ok())
        .map(Timestamp::as_second)
}

/// An `@every` schedule fires at anchor + k · interval (k ≥ 1), a phase set by the object, not
/// the clock; without an anchor the runs start at the window's start.
fn add_every(per_minute: &mut [u64], window: &Window, seconds: i64, anchor: Option<i64>) {
    let seconds = seconds.max(1);
    let anchor = anchor.unwrap_or(window.start_s - seconds);
    let behind = window.start_s - anchor;
    // The first k with anchor + k · interval at or after the start: ceil(behind / interval).
    let k = if behind <= 0 { 1 } else { behind.div_euclid(seconds) + i64::from(behind.rem_euclid(seconds) > 0) };
    let mut t = anchor + k * seconds;
    while let Some(minute) = window.minute_of(t) {
        if let Some(slot) = per_minute.get_mut(minute) {
            *slot += 1;
        }
        t += seconds;
    }
}

/// Mean and nearest-rank percentiles of runs per minute, over every minute of the window.
fn minute_stats(per_minute: &[u64]) -> MinuteStats {
    let mut sorted = per_minute.to_vec();
    sorted.sort_unstable();
    let total = sorted.iter().sum::<u64>();
    let mean = if sorted.is_empty() { 0.0 } else { total as f64 / sorted.len() as f64 };
    MinuteStats {
        mean,
        p50: nearest_rank(&sorted, 50),
        p99: nearest_rank(&sorted, 99),
        max: sorted.last().copied().unwrap_or(0),
    }
}

fn nearest_rank(sorted: &[u64], percent: usize) -> u64 {
    let rank = (sorted.len() * percent).div_ceil(100);
    sorted.get(rank.saturating_sub(1)).copied().unwrap_or(0)
}

/// The `count` minutes with the most runs, largest first, earlier first among equals.
fn herds(per_minute: &[u64], start_s: i64, count: usize) -> Vec<Herd> {
    let mut minutes: Vec<(usize, u64)> = per_minute.iter().copied().enumerate().filter(|&(_, runs)| runs > 0).collect();
    minutes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    minutes
        .into_iter()
        .take(count)
        .map(|(index, runs)| Herd { minute: start_s + 60 * i64::try_from(index).unwrap_or(0), runs })
        .collect()
}

/// Rounds up, ignoring float noise (0.99 × 100 is 99.00000000000001, which must not add a replica).
fn ceil_u64(x: f64) -> u64 {
    (x - 1e-9).ceil().max(0.0) as u64
}

/// Replicas and per-replica QPS for a largest herd of `herd` runs and `cronjobs` objects.
fn capacity(herd: u64, cronjobs: u64, settings: &Settings) -> Capacity {
    let h = herd as f64;
    let needed = P99 * h / settings.skew_target_s;
    let admitted = (settings.admitted_writes_per_s > 0.0).then_some(settings.admitted_writes_per_s);
    let server_limited = admitted.is_some_and(|a| needed > a);
    // Client budget beyond what the server admits only earns 429s.
    let client_rate = match admitted {
        Some(a) if server_limited => a,
        _ => needed,
    };
    let replicas_for_qps =
        if settings.qps > 0.0 { ceil_u64(client_rate / settings.qps) } else { u64::from(client_rate > 0.0) };
    let room = settings.memory_per_replica.saturating_sub(MEMORY_BASE_BYTES).max(1);
    let replicas_for_memory = cronjobs.saturating_mul(MEMORY_PER_CRONJOB_BYTES).div_ceil(room);
    let replicas = replicas_for_qps.max(replicas_for_memory).max(MIN_REPLICAS);
    let memory_per_replica =
        MEMORY_BASE_BYTES.saturating_add(cronjobs.saturating_mul(MEMORY_PER_CRONJOB_BYTES) / replicas);
    let mut qps_per_replica = ceil_u64(client_rate / replicas as f64).div_ceil(QPS_STEP).max(1) * QPS_STEP;
    if let Some(a) = admitted {
        qps_per_replica = qps_per_replica.min((a.floor() as u64).max(1));
    }
    let total = replicas.saturating_mul(qps_per_replica) as f64;
    let planned_rate = admitted.map_or(total, |a| total.min(a));
    let achievable_p99_skew_s = if herd == 0 { 0.0 } else { P99 * h / planned_rate };
    let limited_by = if server_limited {
        "api_server"
    } else if replicas_for_qps >= replicas_for_memory && replicas_for_qps >= MIN_REPLICAS {
        "client_qps"
    } else if replicas_for_memory >= MIN_REPLICAS {
        "memory"
    } else {
        "availability"
    };
    Capacity {
        skew_target_s: settings.skew_target_s,
        herd,
        needed_create_rate: needed,
        client_rate,
        server_limited,
        replicas_for_qps,
        replicas_for_memory,
        replicas,
        qps_per_replica,
        planned_rate,
        memory_per_replica,
        achievable_p99_skew_s,
        limited_by,
    }
}

/// A Kubernetes quantity as bytes: `512Mi`, `1Gi`, `800M`, `1.5Gi`, `1e9`, `2048`.
pub(crate) fn parse_quantity(text: &str) -> Result<u64, String> {
    let invalid = |why: &str| format!("invalid quantity {text:?}: {why} (for example 512Mi, 1Gi, 800M)");
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| invalid("it does not start with a number"))?;
    let kib = 1024.0_f64;
    let multiplier = match suffix {
        "" => 1.0,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => kib,
        "Mi" => kib.powi(2),
        "Gi" => kib.powi(3),
        "Ti" => kib.powi(4),
        "Pi" => kib.powi(5),
        "Ei" => kib.powi(6),
        _ => match suffix.strip_prefix('e').or_else(|| suffix.strip_prefix('E')).and_then(|e| e.parse::<i32>().ok()) {
            Some(exponent) => 10.0_f64.powi(exponent),
            None => return Err(invalid("unknown suffix")),
        },
    };
    let bytes = (value * multiplier).ceil();
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(invalid("too large"));
    }
    if bytes < 1.0 {
        return Err(invalid("must be above zero"));
    }
    Ok(bytes as u64)
}

/// Reads the file (`-` is stdin) and returns its CronJobs as JSON values.
fn read_items(path: &Path) -> Result<Vec<Value>, String> {
    if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin().lock().read_to_end(&mut bytes).map_err(|e| format!("stdin: {e}"))?;
        return items_of("stdin", &bytes);
    }
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| format!("{name}: {e}"))?;
    items_of(&name, &bytes)
}

/// The items of a `List`, of a JSON array, or one CronJob. Items stay untyped: real clusters
/// carry fields no schema here knows.
fn items_of(name: &str, bytes: &[u8]) -> Result<Vec<Value>, String> {
    let no_items = || {
        format!(
            "{name}: no items: expected the output of `kubectl get cronjobs -A -o json` \
             (a List with items), one CronJob, or a JSON array of CronJobs"
        )
    };
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("{name}: not JSON: {e}"))?;
    match doc {
        Value::Array(items) => Ok(items),
        Value::Object(mut map) => match map.remove("items") {
            Some(Value::Array(items)) => Ok(items),
            Some(_) => Err(format!("{name}: items is not an array")),
            None if map.get("kind").and_then(Value::as_str) == Some("CronJob") => Ok(vec![Value::Object(map)]),
            None => Err(no_items()),
        },
        _ => Err(no_items()),
    }
}

fn utc(at: Timestamp) -> String {
    Zone::utc().format_rfc3339(at)
}

fn utc_second(unix: i64) -> String {
    Timestamp::from_second(unix).map_or_else(|_| unix.to_string(), utc)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}

/// At most three decimals, no trailing zeros: 1089, 2.97, 0.099.
fn fmt_num(x: f64) -> String {
    let text = format!("{x:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Six decimals at most, so the JSON does not carry float noise (1088.9999999999998).
fn tidy(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn render_text(plan: &Plan) -> String {
    let (load, stats, c, s) = (&plan.load, &plan.stats, &plan.capacity, &plan.settings);
    let mut out = String::new();
    let _ = writeln!(out, "Window: {} + {} h", utc(plan.window.start), plan.window.hours);
    let _ = writeln!(
        out,
        "CronJobs: {} total, {} valid, {} suspended, {} invalid",
        load.total,
        load.valid,
        load.suspended,
        load.invalid.len()
    );
    for bad in load.invalid.iter().take(SHOWN) {
        let _ = writeln!(out, "  invalid {}: {}", bad.name, bad.reason);
    }
    if load.invalid.len() > SHOWN {
        let _ = writeln!(out, "  ... and {} more (-o json lists them all)", load.invalid.len() - SHOWN);
    }
    let _ = writeln!(out, "Runs: {} in {} h ({} per day)", plan.runs, plan.window.hours, fmt_num(plan.runs_per_day()));
    let _ = writeln!(
        out,
        "Runs per minute: mean {}, p50 {}, p99 {}, max {}",
        fmt_num(stats.mean),
        stats.p50,
        stats.p99,
        stats.max
    );
    if plan.herds.is_empty() {
        let _ = writeln!(out, "Largest herds: none (no runs in the window)");
    } else {
        let _ = writeln!(out, "Largest herds (minute UTC, runs due):");
        for herd in &plan.herds {
            let _ = writeln!(out, "  {}  {}", utc_second(herd.minute), herd.runs);
        }
    }
    let _ = writeln!(
        out,
        "API writes: {WRITES_PER_RUN} per run (Job create, CronJob status update, Event, Job delete in history \
         cleanup): {} per day, {} in the peak minute",
        fmt_num(plan.writes_per_day()),
        stats.max * WRITES_PER_RUN
    );
    let t = fmt_num(c.skew_target_s);
    let _ = writeln!(out, "Plan for a p99 skew of at most {t} s (largest herd H = {} runs, T = {t} s):", c.herd);
    let _ = writeln!(
        out,
        "  Job creates needed: {FORMULA} = {}/s (only creates are on the critical path: each replica's \
         limiter sends them first)",
        fmt_num(c.needed_create_rate)
    );
    if c.server_limited {
        let a = fmt_num(s.admitted_writes_per_s);
        let _ = writeln!(
            out,
            "  The API server admits {a} writes/s, shared by all replicas: no replica count reaches a p99 of {t} s."
        );
        let _ = writeln!(out, "  Achievable p99 skew = 0.99 * H / {a} = {} s", fmt_num(c.achievable_p99_skew_s));
    }
    if s.qps > 0.0 {
        let _ = writeln!(
            out,
            "  replicas for the client budget = ceil({} / --qps {}) = {}",
            fmt_num(c.client_rate),
            fmt_num(s.qps),
            c.replicas_for_qps
        );
    } else {
        let _ = writeln!(out, "  replicas for the client budget: {} (--qps 0: unlimited)", c.replicas_for_qps);
    }
    let _ = writeln!(
        out,
        "  replicas for memory = ceil({} CronJobs * {} KiB / ({} MiB - {} MiB)) = {}",
        load.total,
        fmt_num(MEMORY_PER_CRONJOB_BYTES as f64 / 1024.0),
        fmt_num(mib(s.memory_per_replica)),
        MEMORY_BASE_BYTES / MIB,
        c.replicas_for_memory
    );
    let _ = writeln!(
        out,
        "  replicas: {} (the largest of the two, at least {MIN_REPLICAS} for availability; limited by {})",
        c.replicas, c.limited_by
    );
    let _ = writeln!(out, "  --qps per replica: {}", c.qps_per_replica);
    let _ = writeln!(
        out,
        "  --deployment-qps: {} (the budget the replicas share, so together they stay within the server's admitted writes)",
        fmt_num(c.planned_rate.ceil())
    );
    let _ = writeln!(out, "  memory per replica: about {} MiB at peak", fmt_num(mib(c.memory_per_replica).ceil()));
    if !c.server_limited {
        let _ = writeln!(out, "  achievable p99 skew: {} s", fmt_num(c.achievable_p99_skew_s));
    }
    out
}

fn to_json(plan: &Plan) -> Value {
    let (load, stats, c) = (&plan.load, &plan.stats, &plan.capacity);
    let invalid: Vec<Value> = load.invalid.iter().map(|i| json!({"name": i.name, "reason": i.reason})).collect();
    let herds: Vec<Value> =
        plan.herds.iter().map(|h| json!({"minute": utc_second(h.minute), "runs": h.runs})).collect();
    json!({
        "cronjobs": {
            "total": load.total,
            "valid": load.valid,
            "suspended": load.suspended,
            "invalid": load.invalid.len(),
        },
        "invalid": invalid,
        "window": {"from": utc(plan.window.start), "hours": plan.window.hours},
        "runs": {"total": plan.runs, "per_day": tidy(plan.runs_per_day())},
        "per_minute": {"mean": tidy(stats.mean), "p50": stats.p50, "p99": stats.p99, "max": stats.max},
        "herds": herds,
        "writes": {
            "per_run": WRITES_PER_RUN,
            "per_day": tidy(plan.writes_per_day()),
            "peak_minute": stats.max * WRITES_PER_RUN,
        },
        "plan": {
            "formula": FORMULA,
            "largest_herd": c.herd,
            "skew_target_s": tidy(c.skew_target_s),
            "needed_create_rate": tidy(c.needed_create_rate),
            "replicas_for_qps": c.replicas_for_qps,
            "replicas_for_memory": c.replicas_for_memory,
            "replicas": c.replicas,
            "qps_per_replica": c.qps_per_replica,
            "deployment_qps": c.planned_rate.ceil(),
            "memory_per_replica_mib": mib(c.memory_per_replica).ceil(),
            "achievable_p99_skew_s": tidy(c.achievable_p99_skew_s),
            "limited_by": c.limited_by,
        },
    })
}

/// Runs due per minute as bars on a log scale, hour ticks in UTC, and the plan's create
/// capacity per minute as a line.
fn svg(plan: &Plan) -> String {
    let (width, height, left, top, plot_w, plot_h) = (1000.0, 490.0, 70.0, 80.0, 880.0, 340.0);
    let bottom = top + plot_h;
    let right = left + plot_w;
    let minutes = plan.load.per_minute.len().max(1) as f64;
    let line = plan.capacity.planned_rate * 60.0;
    // A log scale: a 1 s target puts the capacity line about 60 times above the largest herd.
    let decades = (plan.stats.max as f64).max(line).max(1.0).log10().ceil().max(1.0);
    let floor = 0.5_f64.log10();
    let y_of = |v: f64| bottom - (v.max(0.5).log10() - floor) / (decades - floor) * plot_h;
    let x_of = |minute: f64| left + minute / minutes * plot_w;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{left}\" y=\"22\" font-size=\"15\">cronshard plan: runs due per minute, {} + {} h ({} runs)</text>\n",
        utc(plan.window.start),
        plan.window.hours,
        plan.runs
    );
    let mut value: u64 = 1;
    for _ in 0..=(decades as u32) {
        let y = y_of(value as f64);
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" x2=\"{right}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{value}</text>",
            left - 6.0,
            y + 4.0
        );
        value = value.saturating_mul(10);
    }
    let _ = writeln!(s, "<text x=\"5\" y=\"{}\">runs / minute</text>", top - 8.0);
    // Hour ticks, at most about a dozen labels, aligned to UTC midnight.
    let hours = i64::from(plan.window.hours);
    let step = [1_i64, 2, 3, 6, 12, 24].into_iter().find(|h| hours / h <= 12).unwrap_or(24) * 3600;
    let mut t = plan.window.start_s.div_euclid(step) * step;
    if t < plan.window.start_s {
        t += step;
    }
    let mut first = true;
    while t <= plan.window.end_s {
        let x = x_of(((t - plan.window.start_s) / 60) as f64);
        let stamp = utc_second(t);
        let hhmm = stamp.get(11..16).unwrap_or("");
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top}\" y2=\"{}\" stroke=\"#eee\"/>\
             <text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{hhmm}</text>",
            bottom + 5.0,
            bottom + 18.0
        );
        // The date under the first tick and under every midnight.
        if first || hhmm == "00:00" {
            let _ = writeln!(
                s,
                "<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\" fill=\"#666\">{}</text>",
                bottom + 32.0,
                stamp.get(0..10).unwrap_or("")
            );
        }
        first = false;
        t += step;
    }
    let _ =
        writeln!(s, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">UTC</text>", left + plot_w / 2.0, bottom + 52.0);
    // One path of vertical strokes, one per minute with runs.
    let mut d = String::new();
    for (index, &runs) in plan.load.per_minute.iter().enumerate() {
        if runs > 0 {
            let _ = write!(d, "M{:.2} {bottom:.1}V{:.1}", x_of(index as f64 + 0.5), y_of(runs as f64));
        }
    }
    if !d.is_empty() {
        let _ = writeln!(
            s,
            "<path d=\"{d}\" stroke=\"#1f77b4\" stroke-width=\"{:.2}\" fill=\"none\"/>",
            (plot_w / minutes).max(1.0)
        );
    }
    let c = &plan.capacity;
    let y = y_of(line);
    let _ = writeln!(
        s,
        "<line x1=\"{left}\" x2=\"{right}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\
         <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#d62728\">plan: {} Job creates/min ({} replicas x {}/s, p99 skew {} s)</text>",
        right - 4.0,
        y - 5.0,
        fmt_num(line),
        c.replicas,
        c.qps_per_replica,
        fmt_num(c.achievable_p99_skew_s)
    );
    let _ = writeln!(
        s,
        "<line x1=\"{left}\" x2=\"{left}\" y1=\"{top}\" y2=\"{bottom}\" stroke=\"black\"/>\
         <line x1=\"{left}\" x2=\"{right}\" y1=\"{bottom}\" y2=\"{bottom}\" stroke=\"black\"/>"
    );
    // Legend, under the title, above the plot (the capacity line's label may be at its top).
    let _ = writeln!(
        s,
        "<rect x=\"{left}\" y=\"31\" width=\"12\" height=\"12\" fill=\"#1f77b4\"/>\
         <text x=\"{}\" y=\"41\">runs due per minute (log scale)</text>\n\
         <line x1=\"{left}\" x2=\"{}\" y1=\"53\" y2=\"53\" stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\
         <text x=\"{}\" y=\"57\">planned Job create capacity per minute</text>",
        left + 18.0,
        left + 12.0,
        left + 18.0
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().expect("timestamp")
    }

    fn window(from: &str, hours: u32) -> Window {
        Window::new(at(from), hours).expect("window")
    }

    fn cronjob(name: &str, schedule: &str) -> Value {
        json!({
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"namespace": "default", "name": name, "creationTimestamp": "2026-11-01T00:03:00Z",
                "uid": "x", "managedFields": [{"manager": "kubectl"}]},
            "spec": {"schedule": schedule, "concurrencyPolicy": "Forbid", "jobTemplate": {"spec": {}}},
            "status": {"active": []},
        })
    }

    fn settings(skew_target_s: f64, qps: f64, admitted_writes_per_s: f64, memory_per_replica: u64) -> Settings {
        Settings { skew_target_s, qps, admitted_writes_per_s, memory_per_replica }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn runs_are_counted_per_minute() {
        let items = [cronjob("five", "*/5 * * * *"), cronjob("hourly", "0 * * * *")];
        let load = count_runs(&items, &window("2026-12-01T00:00:00Z", 2));
        assert_eq!(load.per_minute.len(), 120);
        for (minute, &runs) in load.per_minute.iter().enumerate() {
            let expected = match minute {
                0 | 60 => 2,
                m if m.is_multiple_of(5) => 1,
                _ => 0,
            };
            assert_eq!(runs, expected, "minute {minute}");
        }
        assert_eq!(load.per_minute.iter().sum::<u64>(), 26);
        assert_eq!((load.total, load.valid, load.suspended, load.invalid.len()), (2, 2, 0, 0));
    }

    #[test]
    fn the_window_starts_on_a_minute_and_excludes_its_end() {
        // 00:00:30 floors to 00:00, which is in; 01:00 is the end, which is out.
        let load = count_runs(&[cronjob("hourly", "0 * * * *")], &window("2026-12-01T00:00:30Z", 1));
        assert_eq!(load.per_minute.len(), 60);
        assert_eq!(load.per_minute.first(), Some(&1));
        assert_eq!(load.per_minute.iter().sum::<u64>(), 1);
    }

    #[test]
    fn time_zones_follow_daylight_saving_time() {
        let mut ny = cronjob("ny", "0 9 * * *");
        ny["spec"]["timeZone"] = json!("America/New_York");
        let items = [ny];
        // 09:00 EST (UTC-5) in January, 09:00 EDT (UTC-4) in July.
        let winter = count_runs(&items, &window("2026-01-15T00:00:00Z", 24));
        assert_eq!(winter.per_minute.iter().position(|&n| n > 0), Some(14 * 60));
        let summer = count_runs(&items, &window("2026-07-15T00:00:00Z", 24));
        assert_eq!(summer.per_minute.iter().position(|&n| n > 0), Some(13 * 60));
        assert_eq!(summer.per_minute.iter().sum::<u64>(), 1);
    }

    #[test]
    fn invalid_cronjobs_are_counted_with_reasons() {
        let mut mars = cronjob("mars", "0 * * * *");
        mars["spec"]["timeZone"] = json!("Mars/Olympus");
        let mut no_schedule = cronjob("none", "");
        let _ = no_schedule["spec"].as_object_mut().expect("spec").remove("schedule");
        let mut job = cronjob("job", "0 * * * *");
        job["kind"] = json!("Job");
        let items = [
            cronjob("minute", "61 * * * *"),
            mars,
            no_schedule,
            cronjob("never", "0 0 30 2 *"),
            job,
            cronjob("ok", "0 * * * *"),
        ];
        let load = count_runs(&items, &window("2026-12-01T00:00:00Z", 2));
        assert_eq!((load.total, load.valid, load.suspended), (6, 1, 0));
        let reasons: Vec<(&str, &str)> = load.invalid.iter().map(|i| (i.name.as_str(), i.reason.as_str())).collect();
        assert_eq!(reasons.len(), 5, "{reasons:?}");
        assert_eq!(reasons[0].0, "default/minute");
        assert!(reasons[0].1.starts_with("UnparseableSchedule: invalid minute field \"61\""), "{reasons:?}");
        assert!(reasons[1].1.starts_with("UnknownTimeZone: unknown time zone \"Mars/Olympus\""), "{reasons:?}");
        assert_eq!(reasons[2].1, "spec.schedule is missing or not a string");
        assert!(reasons[3].1.starts_with("InvalidSchedule: schedule has no fire time"), "{reasons:?}");
        assert_eq!(reasons[4].1, "kind Job, not CronJob");
        assert_eq!(load.per_minute.iter().sum::<u64>(), 2);
    }

    #[test]
    fn suspended_cronjobs_have_no_runs() {
        let mut paused = cronjob("paused", "* * * * *");
        paused["spec"]["suspend"] = json!(true);
        // Like the controller: a suspended CronJob's bad schedule is not reported, its bad zone is.
        let mut paused_bad = cronjob("paused-bad", "61 * * * *");
        paused_bad["spec"]["suspend"] = json!(true);
        let mut paused_zone = cronjob("paused-zone", "* * * * *");
        paused_zone["spec"]["suspend"] = json!(true);
        paused_zone["spec"]["timeZone"] = json!("Nowhere/Else");
        let load = count_runs(&[paused, paused_bad, paused_zone], &window("2026-12-01T00:00:00Z", 1));
        assert_eq!((load.total, load.valid, load.suspended, load.invalid.len()), (3, 0, 2, 1));
        assert_eq!(load.invalid[0].name, "default/paused-zone");
        assert_eq!(load.per_minute.iter().sum::<u64>(), 0);
    }

    #[test]
    fn every_is_phased_from_the_object() {
        // Created at 00:03, every 7 minutes: 00:10, 00:17, ... 01:55 in the first two hours.
        let created = cronjob("every", "@every 7m");
        let load = count_runs(std::slice::from_ref(&created), &window("2026-11-01T00:00:00Z", 2));
        assert_eq!(load.per_minute[3], 0);
        assert_eq!(load.per_minute[10], 1);
        assert_eq!(load.per_minute[17], 1);
        assert_eq!(load.per_minute.iter().sum::<u64>(), 16);
        // status.lastScheduleTime wins over the creation time.
        let mut scheduled = created;
        scheduled["status"]["lastScheduleTime"] = json!("2026-11-01T00:05:00Z");
        let load = count_runs(&[scheduled], &window("2026-11-01T00:00:00Z", 1));
        assert_eq!(load.per_minute[12], 1);
        assert_eq!(load.per_minute[10], 0);
    }

    #[test]
    fn herds_are_largest_first_then_earliest() {
        let start = at("2026-12-01T00:00:00Z").as_second();
        let herds = herds(&[2, 0, 5, 5, 1, 0], start, 10);
        let expected =
            [(2, 5), (3, 5), (0, 2), (4, 1)].map(|(minute, runs)| Herd { minute: start + minute * 60, runs }).to_vec();
        assert_eq!(herds, expected);
        assert_eq!(super::herds(&[1, 3, 2], start, 2).len(), 2);
        assert_eq!(utc_second(start + 120), "2026-12-01T00:02:00Z");
    }

    #[test]
    fn minute_stats_use_nearest_rank() {
        // 100 minutes: 98 with one run, one with 50, one with 100.
        let mut per_minute = vec![1; 98];
        per_minute.extend([50, 100]);
        let stats = minute_stats(&per_minute);
        assert_eq!((stats.p50, stats.p99, stats.max), (1, 50, 100));
        assert!(close(stats.mean, 2.48));
        assert_eq!(minute_stats(&[]).max, 0);
    }

    #[test]
    fn replicas_for_the_client_budget() {
        // H = 1100, T = 1 s: 1089 creates/s; two replicas at 1000 QPS; 545 each, rounded to 550.
        let c = capacity(1100, 1200, &settings(1.0, 1000.0, 5000.0, 512 * MIB));
        assert!(close(c.needed_create_rate, 1089.0), "{c:?}");
        assert_eq!((c.replicas_for_qps, c.replicas_for_memory, c.replicas, c.qps_per_replica), (2, 1, 2, 550));
        assert!(!c.server_limited);
        assert_eq!(c.limited_by, "client_qps");
        assert!(close(c.achievable_p99_skew_s, 0.99), "{c:?}");
        // A longer target needs proportionally less.
        let c = capacity(1100, 1200, &settings(10.0, 100.0, 5000.0, 512 * MIB));
        assert!(close(c.needed_create_rate, 108.9), "{c:?}");
        assert_eq!((c.replicas_for_qps, c.replicas, c.qps_per_replica), (2, 2, 100));
    }

    #[test]
    fn the_server_can_be_the_limit() {
        // 9900 creates/s needed, 1000 writes/s admitted for everyone: no replica count helps.
        let c = capacity(10_000, 10_000, &settings(1.0, 1000.0, 1000.0, 512 * MIB));
        assert!(c.server_limited);
        assert_eq!(c.limited_by, "api_server");
        assert!(close(c.client_rate, 1000.0));
        assert_eq!((c.replicas_for_qps, c.replicas, c.qps_per_replica), (1, 2, 500));
        assert!(close(c.achievable_p99_skew_s, 9.9), "{c:?}");
        assert!(close(c.planned_rate, 1000.0));
    }

    #[test]
    fn memory_can_decide_the_replicas() {
        // 100,000 × 9,519 B over (256 − 23) MiB is 3.9: four replicas.
        let c = capacity(100, 100_000, &settings(1.0, 1000.0, 1000.0, 256 * MIB));
        assert_eq!((c.replicas_for_qps, c.replicas_for_memory, c.replicas), (1, 4, 4));
        assert_eq!(c.limited_by, "memory");
        // The measured point it comes from: about 250 MB each for four replicas.
        assert!((249.0..251.0).contains(&mib(c.memory_per_replica)), "{c:?}");
        // ceil(99 / 4) = 25, rounded up to 50.
        assert_eq!(c.qps_per_replica, 50);
        assert_eq!(capacity(100, 100_000, &settings(1.0, 1000.0, 1000.0, 512 * MIB)).replicas_for_memory, 2);
    }

    #[test]
    fn qps_is_never_above_the_admitted_rate() {
        let c = capacity(10, 10, &settings(1.0, 1000.0, 30.0, 512 * MIB));
        assert_eq!((c.replicas, c.qps_per_replica, c.limited_by), (2, 30, "availability"));
        // No runs at all: still two replicas and a real limit (0 would mean unlimited).
        let c = capacity(0, 0, &settings(1.0, 0.0, 0.0, 512 * MIB));
        assert_eq!((c.replicas, c.qps_per_replica, c.replicas_for_qps), (2, 50, 0));
        assert!(close(c.achievable_p99_skew_s, 0.0));
        // Unlimited client and server: one replica's worth of budget, never limited.
        let c = capacity(1000, 10, &settings(0.5, 0.0, 0.0, 512 * MIB));
        assert_eq!((c.replicas_for_qps, c.replicas, c.qps_per_replica), (1, 2, 1000));
        assert!(!c.server_limited);
    }

    #[test]
    fn quantities() {
        assert_eq!(parse_quantity("512Mi"), Ok(512 * MIB));
        assert_eq!(parse_quantity("1Gi"), Ok(1024 * MIB));
        assert_eq!(parse_quantity("800M"), Ok(800_000_000));
        assert_eq!(parse_quantity("1.5Gi"), Ok(1536 * MIB));
        assert_eq!(parse_quantity("2048"), Ok(2048));
        assert_eq!(parse_quantity("64Ki"), Ok(65_536));
        assert_eq!(parse_quantity("1e9"), Ok(1_000_000_000));
        assert_eq!(parse_quantity("2k"), Ok(2000));
        for bad in ["", "Mi", "-1Gi", "0", "12XB", "1.2.3Mi", "5m", "512mi"] {
            assert!(parse_quantity(bad).is_err(), "{bad:?} should not parse");
        }
        assert!(parse_quantity("12XB").expect_err("bad").contains("\"12XB\""));
    }

    #[test]
    fn reads_lists_arrays_and_single_cronjobs() {
        let one = cronjob("a", "0 * * * *");
        let list =
            json!({"apiVersion": "v1", "kind": "List", "items": [one, one], "metadata": {"resourceVersion": ""}});
        assert_eq!(items_of("f", list.to_string().as_bytes()).expect("list").len(), 2);
        assert_eq!(items_of("f", json!([one]).to_string().as_bytes()).expect("array").len(), 1);
        assert_eq!(items_of("f", one.to_string().as_bytes()).expect("one").len(), 1);
        assert!(items_of("f", br#"{"kind":"List","items":[]}"#).expect("empty").is_empty());
        let err = items_of("cronjobs.yaml", b"apiVersion: v1\nkind: List\n").expect_err("yaml");
        assert!(err.starts_with("cronjobs.yaml: not JSON"), "{err}");
        let err = items_of("pod.json", br#"{"kind":"Pod"}"#).expect_err("pod");
        assert!(err.starts_with("pod.json: no items"), "{err}");
        let err = items_of("x.json", br#"{"items":{}}"#).expect_err("items object");
        assert_eq!(err, "x.json: items is not an array");
        assert!(items_of("n.json", b"42").expect_err("number").contains("no items"));
    }

    #[test]
    fn the_default_window_starts_at_the_next_full_hour() {
        assert_eq!(next_full_hour(at("2026-12-01T10:20:30.5Z")), at("2026-12-01T11:00:00Z"));
        assert_eq!(next_full_hour(at("2026-12-01T10:00:00Z")), at("2026-12-01T11:00:00Z"));
        assert!(Window::new(at("9999-12-29T00:00:00Z"), 168).is_err());
    }

    #[test]
    fn text_json_and_svg_show_the_plan() {
        let mut broken = cronjob("broken", "61 * * * *");
        broken["metadata"]["namespace"] = json!("other");
        let items = [cronjob("five", "*/5 * * * *"), cronjob("hourly", "0 * * * *"), broken];
        let plan = compute(&items, window("2026-12-01T00:00:00Z", 2), settings(1.0, 1000.0, 1000.0, 512 * MIB));
        let text = render_text(&plan);
        assert!(text.contains("CronJobs: 3 total, 2 valid, 0 suspended, 1 invalid\n"), "{text}");
        assert!(text.contains("  invalid other/broken: UnparseableSchedule: "), "{text}");
        assert!(text.contains("Runs: 26 in 2 h (312 per day)\n"), "{text}");
        assert!(text.contains("Runs per minute: mean 0.217, p50 0, p99 2, max 2\n"), "{text}");
        assert!(text.contains("  2026-12-01T00:00:00Z  2\n  2026-12-01T01:00:00Z  2\n  2026-12-01T00:05:00Z  1\n"));
        assert!(text.contains(": 1248 per day, 8 in the peak minute\n"), "{text}");
        assert!(text.contains("needed_create_rate = 0.99 * H / T = 1.98/s"), "{text}");
        let value = to_json(&plan);
        assert_eq!(value["cronjobs"], json!({"total": 3, "valid": 2, "suspended": 0, "invalid": 1}));
        assert_eq!(value["herds"][0], json!({"minute": "2026-12-01T00:00:00Z", "runs": 2}));
        assert_eq!(value["window"], json!({"from": "2026-12-01T00:00:00Z", "hours": 2}));
        assert_eq!(value["plan"]["needed_create_rate"], json!(1.98));
        assert_eq!(value["plan"]["replicas"], json!(2));
        assert_eq!(value["writes"]["peak_minute"], json!(8));
        let picture = svg(&plan);
        assert!(picture.starts_with("<svg "), "{picture}");
        assert!(picture.ends_with("</svg>\n"));
        assert!(picture.contains(">00:00<") && picture.contains(">01:00<") && picture.contains(">02:00<"));
        assert!(picture.contains("planned Job create capacity per minute"));
    }
}
