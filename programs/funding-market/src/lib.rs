//! Funding-rate prediction markets: binary YES/NO markets on whether a perpetual's funding
//! rate is positive at settlement, priced by an LMSR market maker (the `lmsr` crate, shared
//! with the API so quotes equal execution).
//!
//! This file only routes instructions; each lives in `instructions/`, accounts in `state/`.

use anchor_lang::prelude::*;

pub mod error;
pub mod instructions;
pub mod state;

use instructions::*;

declare_id!("98ey5bZy5fsSRR6XLhB8Yy3kUPpviZSDL9pq9oL14g7J");

#[program]
pub mod funding_market {
    use super::*;

    /// Creates the singleton `Config` and the treasury token account. Once.
    pub fn initialize(ctx: Context<Initialize>, params: InitializeParams) -> Result<()> {
        instructions::initialize::handler(ctx, params)
    }
}
