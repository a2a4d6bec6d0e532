//! # kruise-api
//!
//! The OpenKruise v1.9 API in Rust: every custom resource of the `apps.kruise.io` and
//! `policy.kruise.io` groups, wire-compatible with OpenKruise (same groups, versions, kinds,
//! JSON field names, defaults and printer columns), plus
//!
//! - [`keys`]: the well-known label/annotation/condition names,
//! - [`crds`]: the CustomResourceDefinitions generated from these types (`config/crd/`),
//! - [`conversion`]: lossless v1alpha1 ⇄ v1beta1 conversion for every kind served in both,
//! - [`defaults`]: the values OpenKruise's mutating webhooks fill in, as plain functions,
//! - [`validation`]: Kubernetes' field errors and validation rules (names, labels, selectors,
//!   quantities, pod templates) that OpenKruise's validating webhooks apply, as plain functions.
//!
//! Field types follow one rule so that objects round-trip unchanged: a Go field that is a
//! pointer or `omitempty` is an `Option` here (absent stays absent, an explicit zero stays
//! explicit); a Go field without `omitempty` is required.

// kube-derive's repeated `printcolumn(...)` arguments look like duplicated attributes to clippy.
#![allow(clippy::duplicated_attributes)]

pub mod apps;
pub mod conversion;
pub mod crds;
pub mod defaults;
pub mod keys;
pub mod pod;
pub mod policy;
pub mod rspolicy;
pub mod schema;
pub mod time;
pub mod validation;
