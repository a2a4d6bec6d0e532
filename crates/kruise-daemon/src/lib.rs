//! # kruise-daemon
//!
//! The node agent of kruise-rs, OpenKruise's `kruise-daemon` (`pkg/daemon`): one process per
//! node, talking to the node's container runtime over CRI and reporting through the API
//! server. Built so far: [`containermeta`] (the `apps.kruise.io/runtime-containers-meta` pod
//! annotation and the restart of containers whose env from pod metadata changed in place) and
//! [`containerrecreate`] (ContainerRecreateRequests: the requested containers stopped as the
//! kubelet stops them, so it recreates them) and [`podprobe`] (the custom probes of the node's
//! NodePodProbe, their results written to its status). Not yet: image pulling
//! (NodeImage/ImagePullJob).
//!
//! Layers: [`cri`] is the runtime client, [`kuberuntime`] stops a container as the kubelet does;
//! `plan` modules hold the pure decisions; the controllers run on kruise-runtime's shared cache
//! and runner like the manager's.

pub mod containermeta;
pub mod containerrecreate;
pub mod cri;
pub mod kuberuntime;
pub mod podprobe;
pub mod rbac;
