//! What every kruise-rs binary (kruise-manager, kruise-daemon) sets up the same way before its
//! controllers start: the API client with client-side throttling and request metrics, and
//! klog-style logging.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

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
/// (`rest_client_requests_total`).
///
/// # Errors
/// [`ClientError`] naming the file or the step that failed.
pub async fn api_client(
    kubeconfig: Option<&Path>,
    metrics: Arc<Metrics>,
    throttle: ClientThrottle,
) -> Result<Client, ClientError> {
    let config = match kubeconfig {
        Some(path) => {
            let shown = path.display().to_string();
            let kc = Kubeconfig::read_from(path).map_err(|source| ClientError::ReadKubeconfig {
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
    let host = config.cluster_url.host().unwrap_or_default().to_owned();
    let builder = kube::client::ClientBuilder::try_from(config)?;
    // Every request waits for its resource's token (outermost), then is counted.
    Ok(builder
        .with_layer(&CountRequestsLayer::new(metrics.clone(), &host))
        .with_layer(&ThrottleLayer::new(throttle, metrics, &host))
        .build())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_maps_to_filters() {
        assert_eq!(log_filter(0), "info");
        assert!(log_filter(3).contains("kruise_manager=debug"));
        assert!(log_filter(3).contains("kruise_daemon=debug"));
        assert!(log_filter(6).contains("kruise_manager=trace"));
    }
}
