//! The modules `build.rs` generates from `ops/*.tfn` with `tfn-build`, compiled with
//! `deny(warnings)`: the generated code must compile cleanly whatever a user calls.

#![deny(warnings)]

/// `ops/nn.tfn`: the example's network functions.
pub mod nn {
    include!(concat!(env!("OUT_DIR"), "/nn.rs"));
}

/// `ops/api.tfn`: every kind of parameter and result (its snapshot is `tfn-build`'s test).
pub mod api {
    include!(concat!(env!("OUT_DIR"), "/api.rs"));
}
