//! What the service co-signs for a wallet: exactly the expected `create_market` for one market,
//! paid by that wallet. The authority's signature lets the program move a market's
//! subsidy out of the treasury, so anything else — another instruction, another market,
//! other parameters, another fee payer, a durable nonce, an address-table lookup — is refused.
//! Pure checks over a decoded transaction; the route decodes, looks up the expected instruction
//! and the blockhash, and signs.

use anchor_lang::prelude::Pubkey;
use anchor_lang::solana_program::instruction::Instruction;
use solana_message::VersionedMessage;
use solana_transaction::versioned::VersionedTransaction;

/// Compute Budget: the only program allowed beside `create_market` (the payer's own fee).
pub const COMPUTE_BUDGET: Pubkey = anchor_lang::pubkey!("ComputeBudget111111111111111111111111111111");

/// The largest transaction a cluster accepts (bytes on the wire).
pub const MAX_TRANSACTION: usize = 1232;

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("only a legacy transaction can be co-signed")]
    NotLegacy,
    #[error("the transaction is malformed: {0}")]
    Malformed(String),
    #[error("the fee payer must be the caller's wallet")]
    WrongFeePayer,
    #[error("the transaction must carry exactly the expected create_market instruction, and only compute-budget instructions beside it")]
    UnexpectedInstructions,
    #[error("the create_market instruction differs from the expected one (program, accounts or data)")]
    WrongCreateMarket,
    #[error("the transaction must be signed by the fee payer and the authority only")]
    WrongSigners,
    #[error("the fee payer's signature is missing or invalid")]
    PayerSignature,
}

/// Checks `tx` against the one instruction the service is willing to authorise.
pub fn check(tx: &VersionedTransaction, expected: &Instruction, payer: &Pubkey, authority: &Pubkey) -> Result<(), Refusal> {
    let VersionedMessage::Legacy(message) = &tx.message else { return Err(Refusal::NotLegacy) };
    tx.sanitize().map_err(|e| Refusal::Malformed(e.to_string()))?;
    if tx.signatures.len() != message.header.num_required_signatures as usize {
        return Err(Refusal::Malformed("signature count does not match the header".into()));
    }
    let keys = &message.account_keys;
    if keys.first() != Some(payer) {
        return Err(Refusal::WrongFeePayer);
    }
    // Exactly two signers: the payer and the authority (the authority never pays).
    let signers = &keys[..message.header.num_required_signatures as usize];
    if signers.len() != 2 || signers[1] != *authority {
        return Err(Refusal::WrongSigners);
    }
    let mut create_markets = 0;
    for ix in &message.instructions {
        let program = keys.get(ix.program_id_index as usize).ok_or_else(|| Refusal::Malformed("program index out of range".into()))?;
        if *program == COMPUTE_BUDGET {
            if !ix.accounts.is_empty() {
                return Err(Refusal::UnexpectedInstructions);
            }
            continue;
        }
        if *program != expected.program_id {
            return Err(Refusal::UnexpectedInstructions);
        }
        create_markets += 1;
        if ix.data != expected.data || ix.accounts.len() != expected.accounts.len() {
            return Err(Refusal::WrongCreateMarket);
        }
        for (index, meta) in ix.accounts.iter().zip(&expected.accounts) {
            let index = *index as usize;
            let key = keys.get(index).ok_or_else(|| Refusal::Malformed("account index out of range".into()))?;
            if *key != meta.pubkey || message.is_signer(index) != meta.is_signer || message.is_maybe_writable(index, None) != meta.is_writable {
                return Err(Refusal::WrongCreateMarket);
            }
        }
    }
    if create_markets != 1 {
        return Err(Refusal::UnexpectedInstructions);
    }
    // The payer signs first; its signature must already be there and valid.
    let verified = tx.verify_with_results();
    if !verified.first().copied().unwrap_or(false) {
        return Err(Refusal::PayerSignature);
    }
    Ok(())
}
