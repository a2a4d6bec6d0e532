//! One module per workload controller, each with the same shape: watch setup (`run`),
//! `reconcile`, pure `plan` functions and status computation.

pub mod cloneset;
