//! Pure types and rules: money, rates, venues, sides and statuses, quotes, the prior, portfolio
//! math, sign-in messages and wallet signatures. Nothing here does I/O, and nothing here knows
//! sqlx, axum or redis (`tests/api/layers.rs` fails if it does): the store maps these types to
//! rows, the HTTP layer to the contract's strings.

pub mod api_key;
pub mod caller;
pub mod display_name;
pub mod exchange;
pub mod market;
pub mod market_data;
pub mod money;
pub mod oracle;
pub mod portfolio;
pub mod prior;
pub mod push;
pub mod quote;
pub mod rate;
pub mod series;
pub mod siws;
pub mod wallet;
