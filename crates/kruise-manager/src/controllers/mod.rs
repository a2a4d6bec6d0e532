//! One module per controller, each with the same shape: watch setup (`setup`, which takes its
//! informers from the shared cache), `reconcile`, pure `plan` functions and status computation.

pub mod cloneset;
pub mod podreadiness;
