//! # kruise-daemon
//!
//! The node agent of kruise-rs, OpenKruise's `kruise-daemon` (`pkg/daemon`): one process per
//! node, talking to the node's container runtime over CRI and reporting through the API
//! server. Built so far: [`containermeta`] (the `apps.kruise.io/runtime-containers-meta` pod
//! annotation and the restart of containers whose env from pod metadata changed in place).
//! Not yet: image pulling (NodeImage/ImagePullJob), ContainerRecreateRequest, pod probes.
//!
//! Layers: [`cri`] is the runtime client; [`containermeta::plan`] holds the pure decisions;
//! the controllers run on kruise-runtime's shared cache and runner like the manager's.

pub mod containermeta;
pub mod cri;
pub mod rbac;
