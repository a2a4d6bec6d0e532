//! The node's container runtime over CRI v1 (gRPC on the runtime's unix socket), as
//! OpenKruise's kruise-daemon reaches it (`pkg/daemon/criruntime`, `pkg/daemon/kuberuntime`).
//!
//! Only what the daemon's controllers use: the containers of a pod with the kubelet's labels and
//! annotations decoded, `ExecSync`, `ContainerStatus` and `StopContainer`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use k8s_cri::v1::{
    ContainerFilter, ContainerState, ContainerStatusRequest, ExecSyncRequest,
    ListContainersRequest, StopContainerRequest, VersionRequest,
};
use tonic::transport::{Channel, Endpoint, Uri};

/// Container label: the pod UID (kubelet `types.KubernetesPodUIDLabel`).
pub const POD_UID_LABEL: &str = "io.kubernetes.pod.uid";
/// Container label: the pod name.
pub const POD_NAME_LABEL: &str = "io.kubernetes.pod.name";
/// Container label: the pod namespace.
pub const POD_NAMESPACE_LABEL: &str = "io.kubernetes.pod.namespace";
/// Container label: the container's name in the pod spec.
pub const CONTAINER_NAME_LABEL: &str = "io.kubernetes.container.name";
/// Container annotation: the kubelet's hash of the container spec, hexadecimal.
pub const CONTAINER_HASH_ANNOTATION: &str = "io.kubernetes.container.hash";
/// Container annotation: how many times the kubelet restarted this container, decimal.
pub const CONTAINER_RESTART_COUNT_ANNOTATION: &str = "io.kubernetes.container.restartCount";
/// Container annotation: the pod's `terminationGracePeriodSeconds`.
pub const POD_TERMINATION_GRACE_PERIOD_ANNOTATION: &str =
    "io.kubernetes.pod.terminationGracePeriod";
/// Container annotation: the pod's `deletionGracePeriodSeconds`.
pub const POD_DELETION_GRACE_PERIOD_ANNOTATION: &str = "io.kubernetes.pod.deletionGracePeriod";
/// Container annotation: the container's `lifecycle.preStop` handler, JSON.
pub const CONTAINER_PRE_STOP_ANNOTATION: &str = "io.kubernetes.container.preStopHandler";

/// Largest CRI response accepted (the runtime caps exec output at 16 MiB).
const MAX_MESSAGE: usize = 32 * 1024 * 1024;

/// Why a CRI call failed.
#[derive(Debug, thiserror::Error)]
pub enum CriError {
    /// The socket could not be reached.
    #[error("connecting to the container runtime at {path}: {source}")]
    Connect {
        /// Socket path.
        path: String,
        /// The transport error.
        source: tonic::transport::Error,
    },
    /// The runtime answered a call with an error status.
    #[error("CRI {call}: {status}")]
    Call {
        /// The RPC name.
        call: &'static str,
        /// The gRPC status.
        status: Box<tonic::Status>,
    },
    /// A command executed in a container exited non-zero.
    #[error("command {cmd:?} in container {container} exited with {exit_code}: {stderr}")]
    ExitCode {
        /// The command.
        cmd: Vec<String>,
        /// Container ID.
        container: String,
        /// Its exit code.
        exit_code: i32,
        /// Its standard error, lossily decoded.
        stderr: String,
    },
}

fn call(call: &'static str) -> impl FnOnce(tonic::Status) -> CriError {
    move |status| CriError::Call {
        call,
        status: Box::new(status),
    }
}

/// One runtime container of a pod, with what the kubelet recorded on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeContainer {
    /// Runtime ID (without the `<runtime>://` prefix).
    pub id: String,
    /// Container name in the pod spec (label [`CONTAINER_NAME_LABEL`]).
    pub name: String,
    /// The kubelet's spec hash (annotation [`CONTAINER_HASH_ANNOTATION`]); 0 when absent or
    /// malformed, as OpenKruise's `getUint64ValueFromLabel` leaves it.
    pub hash: u64,
    /// The kubelet's restart count (annotation [`CONTAINER_RESTART_COUNT_ANNOTATION`]).
    pub restart_count: i32,
    /// Whether the runtime reports it running.
    pub running: bool,
    /// Whether the runtime reports it exited (the kubelet's `ContainerStateExited`; a created
    /// or unknown container is neither running nor exited).
    pub exited: bool,
    /// Creation time, ns since the epoch (newest first is how the kubelet picks "the" container
    /// of a name).
    pub created_at: i64,
}

impl RuntimeContainer {
    fn from_cri(
        id: String,
        state: i32,
        created_at: i64,
        labels: &HashMap<String, String>,
        annotations: &HashMap<String, String>,
    ) -> Self {
        Self {
            id,
            name: labels
                .get(CONTAINER_NAME_LABEL)
                .cloned()
                .unwrap_or_default(),
            hash: annotations
                .get(CONTAINER_HASH_ANNOTATION)
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .unwrap_or(0),
            restart_count: annotations
                .get(CONTAINER_RESTART_COUNT_ANNOTATION)
                .and_then(|c| c.parse().ok())
                .unwrap_or(0),
            running: state == ContainerState::ContainerRunning as i32,
            exited: state == ContainerState::ContainerExited as i32,
            created_at,
        }
    }
}

/// The state of a runtime container as its `ContainerStatus` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerRunState {
    /// Runtime ID (without the `<runtime>://` prefix).
    pub id: String,
    /// Whether the state is `CONTAINER_RUNNING`.
    pub running: bool,
    /// When it started, ns since the epoch (0 when it never started).
    pub started_at: i64,
}

/// What the kubelet recorded on a container for stopping it: the grace period and the preStop
/// handler (OpenKruise `restoreSpecsFromContainerLabels`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StopSpec {
    /// Pod and container of the runtime container (labels).
    pub pod_namespace: String,
    /// Pod name.
    pub pod_name: String,
    /// Pod UID.
    pub pod_uid: String,
    /// Container name.
    pub container_name: String,
    /// `deletionGracePeriodSeconds`, else `terminationGracePeriodSeconds`, when recorded.
    pub grace_period_seconds: Option<i64>,
    /// The `lifecycle.preStop` handler, when the container has one.
    pub pre_stop: Option<k8s_openapi::api::core::v1::LifecycleHandler>,
}

/// The output of a command executed in a container.
#[derive(Debug, Clone, Default)]
pub struct ExecOutput {
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error.
    pub stderr: Vec<u8>,
}

/// A connected CRI runtime service.
#[derive(Clone, Debug)]
pub struct Cri {
    client: RuntimeServiceClient<Channel>,
    runtime_name: String,
    socket: PathBuf,
}

impl Cri {
    /// Connects to the runtime at unix socket `socket` and asks its name (`Version`), which is
    /// the `<runtime>` of the `<runtime>://<id>` container IDs in pod statuses.
    ///
    /// # Errors
    /// [`CriError::Connect`] when the socket does not answer, [`CriError::Call`] when `Version`
    /// fails (e.g. the socket is not a CRI v1 runtime).
    pub async fn connect(socket: &Path) -> Result<Self, CriError> {
        let path = socket.to_owned();
        let channel = Endpoint::from_static("http://cri.invalid")
            .connect_timeout(Duration::from_secs(10))
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move {
                    let stream = tokio::net::UnixStream::connect(path).await?;
                    Ok::<_, std::io::Error>(TokioIo::new(stream))
                }
            }))
            .await
            .map_err(|source| CriError::Connect {
                path: socket.display().to_string(),
                source,
            })?;
        let mut client = RuntimeServiceClient::new(channel)
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        let version = client
            .version(VersionRequest {
                version: "v1".into(),
            })
            .await
            .map_err(call("Version"))?
            .into_inner();
        tracing::info!(
            socket = %socket.display(),
            runtime = %version.runtime_name,
            runtime_version = %version.runtime_version,
            cri = %version.runtime_api_version,
            "connected to the container runtime"
        );
        Ok(Self {
            client,
            runtime_name: version.runtime_name,
            socket: socket.to_owned(),
        })
    }

    /// The runtime's name (`containerd`, `cri-o`, ...).
    pub fn runtime_name(&self) -> &str {
        &self.runtime_name
    }

    /// The socket this client talks to.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// `<runtime>://<id>`, the form pod statuses use.
    pub fn full_id(&self, id: &str) -> String {
        format!("{}://{id}", self.runtime_name)
    }

    /// Every runtime container of the pod with UID `pod_uid` (label [`POD_UID_LABEL`]), newest
    /// first (OpenKruise `getPodContainerStatuses` sorted by creation).
    ///
    /// # Errors
    /// [`CriError::Call`] when `ListContainers` fails.
    pub async fn pod_containers(&self, pod_uid: &str) -> Result<Vec<RuntimeContainer>, CriError> {
        let filter = ContainerFilter {
            label_selector: HashMap::from([(POD_UID_LABEL.to_owned(), pod_uid.to_owned())]),
            ..ContainerFilter::default()
        };
        let mut out = self.list(filter).await?;
        out.sort_by_key(|c| std::cmp::Reverse(c.created_at));
        Ok(out)
    }

    /// The newest runtime container of the pod with UID `pod_uid` whose CRI metadata name is
    /// `name` (greatest `createdAt`), with its `ContainerStatus` state and start time
    /// (OpenKruise `podprobe` `fetchLatestPodContainer`). `None` when the pod has no such
    /// container.
    ///
    /// # Errors
    /// [`CriError::Call`] when `ListContainers` or `ContainerStatus` fails.
    pub async fn latest_container_status(
        &self,
        pod_uid: &str,
        name: &str,
    ) -> Result<Option<ContainerRunState>, CriError> {
        let filter = ContainerFilter {
            label_selector: HashMap::from([(POD_UID_LABEL.to_owned(), pod_uid.to_owned())]),
            ..ContainerFilter::default()
        };
        let containers = self
            .client
            .clone()
            .list_containers(ListContainersRequest {
                filter: Some(filter),
            })
            .await
            .map_err(call("ListContainers"))?
            .into_inner()
            .containers;
        let latest = containers
            .into_iter()
            .filter(|c| c.metadata.as_ref().is_some_and(|m| m.name == name))
            .reduce(|a, b| if b.created_at > a.created_at { b } else { a });
        let Some(latest) = latest else {
            return Ok(None);
        };
        let status = self.status(&latest.id).await?;
        Ok(Some(ContainerRunState {
            id: if status.id.is_empty() {
                latest.id
            } else {
                status.id
            },
            running: status.state == ContainerState::ContainerRunning as i32,
            started_at: status.started_at,
        }))
    }

    /// The container with runtime ID `id`, if the runtime has it.
    ///
    /// # Errors
    /// [`CriError::Call`] when `ListContainers` fails.
    pub async fn container(&self, id: &str) -> Result<Option<RuntimeContainer>, CriError> {
        let filter = ContainerFilter {
            id: id.to_owned(),
            ..ContainerFilter::default()
        };
        Ok(self.list(filter).await?.into_iter().next())
    }

    /// `ListContainers` with `filter`, decoded.
    async fn list(&self, filter: ContainerFilter) -> Result<Vec<RuntimeContainer>, CriError> {
        Ok(self
            .client
            .clone()
            .list_containers(ListContainersRequest {
                filter: Some(filter),
            })
            .await
            .map_err(call("ListContainers"))?
            .into_inner()
            .containers
            .into_iter()
            .map(|c| {
                RuntimeContainer::from_cri(c.id, c.state, c.created_at, &c.labels, &c.annotations)
            })
            .collect())
    }

    /// What the kubelet recorded on container `id` for stopping it (its labels and
    /// annotations, from `ContainerStatus`).
    ///
    /// # Errors
    /// [`CriError::Call`] when `ContainerStatus` fails (e.g. the container is gone).
    pub async fn stop_spec(&self, id: &str) -> Result<StopSpec, CriError> {
        let status = self.status(id).await?;
        Ok(stop_spec_from(&status.labels, &status.annotations))
    }

    /// CRI `ContainerStatus` of container `id` (empty when the runtime sends none).
    async fn status(&self, id: &str) -> Result<k8s_cri::v1::ContainerStatus, CriError> {
        Ok(self
            .client
            .clone()
            .container_status(ContainerStatusRequest {
                container_id: id.to_owned(),
                verbose: false,
            })
            .await
            .map_err(call("ContainerStatus"))?
            .into_inner()
            .status
            .unwrap_or_default())
    }

    /// When container `id` started, ns since the epoch (`ContainerStatus.started_at`; 0 for a
    /// container that never started).
    ///
    /// # Errors
    /// [`CriError::Call`] when `ContainerStatus` fails (e.g. the container is gone).
    pub async fn started_at(&self, id: &str) -> Result<i64, CriError> {
        Ok(self.status(id).await?.started_at)
    }

    /// Runs `cmd` in container `id` and waits at most `timeout` (CRI `ExecSync`).
    ///
    /// # Errors
    /// [`CriError::Call`] when the runtime refuses or times out, [`CriError::ExitCode`] when the
    /// command exits non-zero (as the Go CRI client reports it).
    pub async fn exec_sync(
        &self,
        id: &str,
        cmd: &[String],
        timeout: Duration,
    ) -> Result<ExecOutput, CriError> {
        let resp = self
            .client
            .clone()
            .exec_sync(ExecSyncRequest {
                container_id: id.to_owned(),
                cmd: cmd.to_vec(),
                timeout: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
            })
            .await
            .map_err(call("ExecSync"))?
            .into_inner();
        if resp.exit_code != 0 {
            return Err(CriError::ExitCode {
                cmd: cmd.to_vec(),
                container: id.to_owned(),
                exit_code: resp.exit_code,
                stderr: String::from_utf8_lossy(&resp.stderr).into_owned(),
            });
        }
        Ok(ExecOutput {
            stdout: resp.stdout,
            stderr: resp.stderr,
        })
    }

    /// Stops container `id`, giving it `grace_seconds` after SIGTERM before SIGKILL
    /// (CRI `StopContainer`); the kubelet then restarts it per the pod's restart policy.
    ///
    /// # Errors
    /// [`CriError::Call`] when `StopContainer` fails.
    pub async fn stop_container(&self, id: &str, grace_seconds: i64) -> Result<(), CriError> {
        self.client
            .clone()
            .stop_container(StopContainerRequest {
                container_id: id.to_owned(),
                timeout: grace_seconds,
            })
            .await
            .map_err(call("StopContainer"))?;
        Ok(())
    }
}

/// Decodes the labels and annotations the kubelet puts on a runtime container into a
/// [`StopSpec`]. Malformed values are dropped with a log line, as OpenKruise's
/// `getContainerInfoFromAnnotations` does.
pub fn stop_spec_from(
    labels: &HashMap<String, String>,
    annotations: &HashMap<String, String>,
) -> StopSpec {
    let label = |k: &str| labels.get(k).cloned().unwrap_or_default();
    let int = |k: &str| {
        annotations.get(k).and_then(|v| match v.parse::<i64>() {
            Ok(n) => Some(n),
            Err(e) => {
                tracing::warn!(annotation = k, value = %v, error = %e, "malformed container annotation");
                None
            }
        })
    };
    let pre_stop = annotations
        .get(CONTAINER_PRE_STOP_ANNOTATION)
        .and_then(|v| match serde_json::from_str(v) {
            Ok(h) => Some(h),
            Err(e) => {
                tracing::warn!(annotation = CONTAINER_PRE_STOP_ANNOTATION, error = %e, "malformed container annotation");
                None
            }
        });
    StopSpec {
        pod_namespace: label(POD_NAMESPACE_LABEL),
        pod_name: label(POD_NAME_LABEL),
        pod_uid: label(POD_UID_LABEL),
        container_name: label(CONTAINER_NAME_LABEL),
        grace_period_seconds: int(POD_DELETION_GRACE_PERIOD_ANNOTATION)
            .or_else(|| int(POD_TERMINATION_GRACE_PERIOD_ANNOTATION)),
        pre_stop,
    }
}

/// The CRI socket to use, as OpenKruise's `detectRuntime` finds it under the host's `/var/run`
/// (mounted at `var_run`, `/hostvarrun` in its DaemonSet): `socket_file` when given (relative
/// to `var_run`), else the first of `containerd.sock`, `containerd/containerd.sock`,
/// `crio.sock`, `crio/crio.sock`, `cri-dockerd.sock`, `cri-dockerd/cri-dockerd.sock` that exists.
///
/// # Errors
/// A message naming the paths tried.
pub fn detect_socket(var_run: &Path, socket_file: Option<&str>) -> Result<PathBuf, String> {
    if let Some(file) = socket_file.filter(|f| !f.is_empty()) {
        let p = var_run.join(file);
        return if p.exists() {
            Ok(p)
        } else {
            Err(format!(
                "CRI socket {} (--socket-file {file:?} under --var-run-path) does not exist",
                p.display()
            ))
        };
    }
    const CANDIDATES: [&str; 6] = [
        "containerd.sock",
        "containerd/containerd.sock",
        "crio.sock",
        "crio/crio.sock",
        "cri-dockerd.sock",
        "cri-dockerd/cri-dockerd.sock",
    ];
    CANDIDATES
        .iter()
        .map(|c| var_run.join(c))
        .find(|p| p.exists())
        .ok_or_else(|| {
            format!(
                "no container runtime socket under {} (tried {}); set --socket-file",
                var_run.display(),
                CANDIDATES.join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(kv: &[(&str, &str)]) -> HashMap<String, String> {
        kv.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn kubelet_annotations_are_decoded() {
        let c = RuntimeContainer::from_cri(
            "abc".into(),
            ContainerState::ContainerRunning as i32,
            7,
            &map(&[(CONTAINER_NAME_LABEL, "main")]),
            &map(&[
                (CONTAINER_HASH_ANNOTATION, "19fd7a3c"),
                (CONTAINER_RESTART_COUNT_ANNOTATION, "2"),
            ]),
        );
        assert_eq!(c.name, "main");
        assert_eq!(c.hash, 0x19fd_7a3c);
        assert_eq!(c.restart_count, 2);
        assert!(c.running);
        // Missing or malformed values count as 0, as in OpenKruise.
        let c = RuntimeContainer::from_cri(
            "x".into(),
            ContainerState::ContainerExited as i32,
            0,
            &HashMap::new(),
            &map(&[(CONTAINER_HASH_ANNOTATION, "zz")]),
        );
        assert_eq!((c.hash, c.restart_count, c.running), (0, 0, false));
    }

    #[test]
    fn stop_spec_prefers_the_deletion_grace_period_and_reads_the_pre_stop_handler() {
        let labels = map(&[
            (POD_NAMESPACE_LABEL, "ns"),
            (POD_NAME_LABEL, "p"),
            (POD_UID_LABEL, "u"),
            (CONTAINER_NAME_LABEL, "c"),
        ]);
        let s = stop_spec_from(
            &labels,
            &map(&[
                (POD_TERMINATION_GRACE_PERIOD_ANNOTATION, "30"),
                (
                    CONTAINER_PRE_STOP_ANNOTATION,
                    r#"{"exec":{"command":["sh","-c","sleep 1"]}}"#,
                ),
            ]),
        );
        assert_eq!(s.grace_period_seconds, Some(30));
        assert_eq!(s.container_name, "c");
        let cmd = s.pre_stop.unwrap().exec.unwrap().command.unwrap();
        assert_eq!(cmd, ["sh", "-c", "sleep 1"]);
        let s = stop_spec_from(
            &labels,
            &map(&[
                (POD_TERMINATION_GRACE_PERIOD_ANNOTATION, "30"),
                (POD_DELETION_GRACE_PERIOD_ANNOTATION, "5"),
                (CONTAINER_PRE_STOP_ANNOTATION, "not json"),
            ]),
        );
        assert_eq!(s.grace_period_seconds, Some(5));
        assert!(s.pre_stop.is_none());
    }

    #[test]
    fn socket_detection_follows_openkruise_order() {
        let dir = std::env::temp_dir().join(format!("krs-cri-detect-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("containerd")).unwrap();
        assert!(
            detect_socket(&dir, None)
                .unwrap_err()
                .contains("set --socket-file")
        );
        std::fs::write(dir.join("crio.sock"), "").unwrap();
        assert_eq!(detect_socket(&dir, None).unwrap(), dir.join("crio.sock"));
        std::fs::write(dir.join("containerd/containerd.sock"), "").unwrap();
        assert_eq!(
            detect_socket(&dir, None).unwrap(),
            dir.join("containerd/containerd.sock")
        );
        assert_eq!(
            detect_socket(&dir, Some("crio.sock")).unwrap(),
            dir.join("crio.sock")
        );
        assert!(detect_socket(&dir, Some("nope.sock")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
