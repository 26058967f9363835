//! What the example trainers (`examples/char_lm`, `examples/cnn`) share, included by each with
//! `#[path = "../common/mod.rs"] mod common;`: parameters (initialised by std:optim's
//! `init_normal`, read from and written to `.npy` files), the AdamW state and update (std:optim's
//! `adamw`, one call per parameter), the progress bar and the per-step CSV log.

// Each example uses most, not all, of it.
#![allow(dead_code)]

pub mod optim;
pub mod params;
pub mod progress;
