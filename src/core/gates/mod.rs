//! Many gates: which allowance a request draws from.

pub mod scope;
