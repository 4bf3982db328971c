//! One module per instruction: its accounts (with their constraints) and its handler.
//! The glob re-exports bring the account structs to `#[program]`; each module's `handler` is
//! called by its full path, so their shared name is never ambiguous in use.
#![allow(ambiguous_glob_reexports)]

pub mod close_market;
pub mod create_market;
pub mod create_user;
pub mod finalize;
pub mod initialize;
pub mod settle_position;
pub mod settle_positions;
pub mod sweep_deposit;
pub mod trade;
pub mod withdraw;

pub use close_market::*;
pub use create_market::*;
pub use create_user::*;
pub use finalize::*;
pub use initialize::*;
pub use settle_position::*;
pub use settle_positions::*;
pub use sweep_deposit::*;
pub use trade::*;
pub use withdraw::*;
