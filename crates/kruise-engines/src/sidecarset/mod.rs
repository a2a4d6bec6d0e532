//! SidecarSet decisions of OpenKruise's `pkg/control/sidecarcontrol`.

pub mod hash;
