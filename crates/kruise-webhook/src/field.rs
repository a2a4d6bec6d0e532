//! Kubernetes-style field errors for the admission handlers: re-exported from the API layer
//! ([`kruise_api::validation::field`]), where the pure validation rules live.

pub use kruise_api::validation::field::*;
