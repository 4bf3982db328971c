//! Accounts. Every amount is an integer in millionths: micro-USDC for money, micro-shares for
//! shares (a winning share pays 1 USDC = 1,000,000 micro-USDC). Timestamps are Unix seconds.

pub mod config;
pub mod market;
pub mod position;
pub mod user;

pub use config::*;
pub use market::*;
pub use position::*;
pub use user::*;
