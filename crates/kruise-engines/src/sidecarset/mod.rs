//! SidecarSet: OpenKruise v1.9.0's injection, upgrade and revision decisions as pure functions
//! (`pkg/control/sidecarcontrol`, `pkg/webhook/pod/mutating/sidecarset*.go`,
//! `pkg/controller/sidecarset`, `pkg/util/calculator`).

pub mod calculator;
pub mod control;
pub mod hash;
pub mod inject;
pub mod resources;
pub mod revision;
pub mod upgrade;
