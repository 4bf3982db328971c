//! The one way this program moves USDC: an SPL transfer signed by a PDA.

use anchor_lang::prelude::*;
use anchor_spl::token::{self, Token, Transfer};

pub fn transfer_signed<'info>(
    token_program: &Program<'info, Token>,
    from: AccountInfo<'info>,
    to: AccountInfo<'info>,
    authority: AccountInfo<'info>,
    seeds: &[&[u8]],
    amount: u64,
) -> Result<()> {
    if amount == 0 {
        return Ok(());
    }
    let signer = &[seeds];
    let accounts = Transfer { from, to, authority };
    token::transfer(CpiContext::new_with_signer(token_program.key(), accounts, signer), amount)
}
