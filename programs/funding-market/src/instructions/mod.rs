pub mod initialize;

pub use initialize::*;
