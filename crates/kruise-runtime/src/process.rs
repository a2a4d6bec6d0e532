//! What every kruise-rs binary (kruise-manager, kruise-daemon) sets up the same way before its
//! controllers start: the API client with client-side throttling and request metrics, and
//! klog-style logging.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;
use crate::restmetrics::CountRequestsLayer;
use crate::throttle::{ClientThrottle, ThrottleLayer};

/// Why the API client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig file could not be read or parsed.
    #[error("reading kubeconfig {path}: {source}")]
    ReadKubeconfig {
        /// The `--kubeconfig` path.
        path: String,
        /// The underlying error.
        source: kube::config::KubeconfigError,
    },
    /// The kubeconfig was read but does not describe a usable cluster.
    #[error("loading kubeconfig {path}: {source}")]
    LoadKubeconfig {
        /// The `--kubeconfig` path.
        path: String,
        /// The underlying error.
        source: kube::config::KubeconfigError,
    },
    /// No `--kubeconfig`, and neither the in-cluster service account nor `$KUBECONFIG` /
    /// `~/.kube/config` gave a configuration.
    #[error("no kubeconfig given and none could be inferred: {0}")]
    Infer(#[from] kube::config::InferConfigError),
    /// The configuration could not be turned into a client (e.g. bad TLS material).
    #[error("building API client: {0}")]
    Build(#[from] kube::Error),
}

/// The API client of a kruise-rs process: from `kubeconfig` (or inferred as client-go does),
/// every request first waits for its API resource's token of `throttle` (client-go's
/// `--rest-config-qps`/`--rest-config-burst` limiter), then is counted in `metrics`
/// (`rest_client_requests_total`). One client of [`ApiClients::load`].
///
/// # Errors
/// [`ClientError`] naming the file or the step that failed.
pub async fn api_client(
    kubeconfig: Option<&Path>,
    metrics: Arc<Metrics>,
    throttle: ClientThrottle,
) -> Result<Client, ClientError> {
    ApiClients::load(kubeconfig, metrics, throttle)
        .await?
        .client()
}

/// The API clients of a process, built from one configuration: every [`ApiClients::client`] is
/// throttled by `throttle` with token buckets of its own (one per API resource, see
/// [`crate::throttle`]) and counted in the shared `metrics`.
///
/// OpenKruise gives each controller a client of its own (`NewClientFromManager(mgr, name)`,
/// pkg/util/client), beside the manager's client that its webhooks and leader election use
/// and the informers' clients; each has its own client-go rate limiters, so two controllers
/// writing pods at once each get `--rest-config-qps` per second. kruise-manager builds its
/// clients the same way (a client per controller, one for admission, one for the cache and
/// leader election), so concurrent rollouts are throttled as under OpenKruise.
#[derive(Clone)]
pub struct ApiClients {
    config: kube::Config,
    host: String,
    metrics: Arc<Metrics>,
    throttle: ClientThrottle,
}

impl std::fmt::Debug for ApiClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiClients")
            .field("host", &self.host)
            .field("throttle", &self.throttle)
            .finish_non_exhaustive()
    }
}

impl ApiClients {
    /// Reads `kubeconfig` (or infers the configuration as client-go does: in-cluster service
    /// account, `$KUBECONFIG`, `~/.kube/config`).
    ///
    /// # Errors
    /// [`ClientError`] naming the file or the step that failed.
    pub async fn load(
        kubeconfig: Option<&Path>,
        metrics: Arc<Metrics>,
        throttle: ClientThrottle,
    ) -> Result<Self, ClientError> {
        let config = match kubeconfig {
            Some(path) => {
                let shown = path.display().to_string();
                let kc =
                    Kubeconfig::read_from(path).map_err(|source| ClientError::ReadKubeconfig {
                        path: shown.clone(),
                        source,
                    })?;
                kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                    .await
                    .map_err(|source| ClientError::LoadKubeconfig {
                        path: shown,
                        source,
                    })?
            }
            None => kube::Config::infer().await?,
        };
        Ok(Self::from_config(config, metrics, throttle))
    }

    /// The clients of an already loaded configuration.
    pub fn from_config(
        config: kube::Config,
        metrics: Arc<Metrics>,
        throttle: ClientThrottle,
    ) -> Self {
        let host = config.cluster_url.host().unwrap_or_default().to_owned();
        Self {
            config,
            host,
            metrics,
            throttle,
        }
    }

    /// The limits every client's buckets allow.
    pub fn throttle(&self) -> ClientThrottle {
        self.throttle
    }

    /// A new client with buckets of its own: every request first waits for its API resource's
    /// token, then is counted (`rest_client_requests_total`).
    ///
    /// # Errors
    /// [`ClientError::Build`] when the configuration cannot make a client (e.g. bad TLS
    /// material).
    pub fn client(&self) -> Result<Client, ClientError> {
        let builder = kube::client::ClientBuilder::try_from(self.config.clone())?;
        // Every request waits for its resource's token (outermost), then is counted.
        Ok(builder
            .with_layer(&CountRequestsLayer::new(self.metrics.clone(), &self.host))
            .with_layer(&ThrottleLayer::new(
                self.throttle,
                self.metrics.clone(),
                &self.host,
            ))
            .build())
    }
}

/// Log output format (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The crates whose logs `-v` raises.
const KRUISE_CRATES: [&str; 6] = [
    "kruise_manager",
    "kruise_daemon",
    "kruise_runtime",
    "kruise_engines",
    "kruise_webhook",
    "kruise_api",
];

/// klog verbosity (`-v`) → tracing filter: 0–1 info, 2–4 debug for kruise-rs' own crates,
/// 5+ trace for ours and debug for the rest (minus the HTTP/TLS stacks).
pub fn log_filter(verbosity: u8) -> String {
    match verbosity {
        0 | 1 => "info".to_string(),
        2..=4 => format!(
            "info,{}",
            KRUISE_CRATES.map(|c| format!("{c}=debug")).join(",")
        ),
        _ => format!(
            "debug,{},hyper=info,hyper_util=info,h2=info,tower=info,rustls=info",
            KRUISE_CRATES.map(|c| format!("{c}=trace")).join(",")
        ),
    }
}

/// Logs to stderr in `format` at `verbosity` ([`log_filter`]); `RUST_LOG` overrides the filter.
/// Call once, first thing in `main`.
pub fn init_logging(format: LogFormat, verbosity: u8) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(log_filter(verbosity)));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}

/// How often [`spawn_heap_release`] returns the allocator's free memory to the system.
pub const HEAP_RELEASE_INTERVAL: Duration = Duration::from_secs(10);

/// What one [`release_free_heap`] did: the process's resident set before and after, in bytes,
/// and how long the allocator took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapRelease {
    /// Resident set size before, bytes (`/proc/self/statm`).
    pub rss_before: u64,
    /// Resident set size after, bytes.
    pub rss_after: u64,
    /// Time spent in the allocator.
    pub took: Duration,
}

/// The process's resident set size in bytes (`/proc/self/statm`), `None` where unavailable.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// Returns the heap's free memory to the operating system: glibc's `malloc_trim(0)`, which
/// gives back every whole free page inside its arenas, not only the free space at their tops
/// (which `free` already returns). Without it, memory freed after a burst — the decoded copies of
/// the initial list (kube-runtime's store keeps a clone of each), a rollout's patches — stays in
/// the arenas' free lists, counted in the RSS: at 10,000 cached pods 8–9 MiB of the manager's
/// ~95 MiB (measured by calling it in a settled manager). Go's runtime does the same for the Go
/// manager (its background scavenger). Where the allocator is not glibc's, nothing is released
/// and `None` is returned.
pub fn release_free_heap() -> Option<HeapRelease> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let rss_before = resident_bytes()?;
        let start = Instant::now();
        // SAFETY: malloc_trim only walks and trims glibc's own arenas under their locks.
        unsafe { libc::malloc_trim(0) };
        let took = start.elapsed();
        let rss_after = resident_bytes()?;
        Some(HeapRelease {
            rss_before,
            rss_after,
            took,
        })
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

/// Runs [`release_free_heap`] every [`HEAP_RELEASE_INTERVAL`] on a blocking thread until `stop`;
/// each release is logged at debug level with the RSS it gave back and its duration.
pub fn spawn_heap_release(stop: CancellationToken) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = tokio::time::sleep(HEAP_RELEASE_INTERVAL) => {}
                () = stop.cancelled() => return,
            }
            match tokio::task::spawn_blocking(release_free_heap).await {
                Ok(Some(r)) => tracing::debug!(
                    rss_before_kib = r.rss_before / 1024,
                    rss_after_kib = r.rss_after / 1024,
                    took_us = u64::try_from(r.took.as_micros()).unwrap_or(u64::MAX),
                    "released free heap memory"
                ),
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "heap release task failed");
                    return;
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Memory freed in the middle of the heap (a live allocation above it keeps `free` from
    /// trimming the top) stays resident until [`release_free_heap`] gives it back.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn released_heap_leaves_the_resident_set() {
        const N: usize = 200_000;
        // Each chunk below the mmap threshold, so it comes from an arena; written, so resident.
        let mut chunks: Vec<Box<[u8; 256]>> = (0..N).map(|i| Box::new([i as u8; 256])).collect();
        let pin = Box::new([1u8; 256]);
        let kept = chunks.split_off(N - 1);
        drop(chunks);
        let before = resident_bytes().expect("statm");
        let r = release_free_heap().expect("glibc");
        assert!(r.rss_before <= before + (1 << 20));
        // ~50 MiB were freed; at least half of it must leave the resident set.
        assert!(
            r.rss_before.saturating_sub(r.rss_after) > 25 << 20,
            "released {} bytes",
            r.rss_before.saturating_sub(r.rss_after)
        );
        assert_eq!(kept[0][0], (N - 1) as u8);
        assert_eq!(pin[0], 1);
    }

    #[test]
    fn verbosity_maps_to_filters() {
        assert_eq!(log_filter(0), "info");
        assert!(log_filter(3).contains("kruise_manager=debug"));
        assert!(log_filter(3).contains("kruise_daemon=debug"));
        assert!(log_filter(6).contains("kruise_manager=trace"));
    }
}
