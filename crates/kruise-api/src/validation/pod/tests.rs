//! Table-driven tests of the pod template rules.
