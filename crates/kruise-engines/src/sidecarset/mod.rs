//! SidecarSet decisions as OpenKruise v1.9.0 makes them.

pub mod calculator;
pub mod resources;
