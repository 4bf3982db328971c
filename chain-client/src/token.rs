//! What a confirmed transaction did to one SPL Token account's balance, read from its token
//! instructions (outer and inner, in execution order): the deposit reconciliation's view of a
//! transfer, the same figure a Helius webhook reports as the account's `rawTokenAmount` change.
//! Only the SPL Token program moves a classic token account's balance, and only through these
//! instructions, so the sum is exact.

use spl_token_interface::instruction::TokenInstruction;

use crate::{ConfirmedTransaction, Instruction};

/// The net change (base units) `tx` made to `token_account`'s balance; 0 for a failed
/// transaction.
pub fn balance_change(tx: &ConfirmedTransaction, token_account: &str) -> i128 {
    if tx.err.is_some() {
        return 0;
    }
    let token_program = spl_token_interface::ID.to_string();
    // Execution order: each outer instruction, then what it invoked.
    let mut change = 0;
    for (index, outer) in tx.instructions.iter().enumerate() {
        let inner = tx.inner_instructions.iter().filter(|i| i.outer_index == index).map(|i| &i.instruction);
        for ix in std::iter::once(outer).chain(inner).filter(|ix| ix.program_id == token_program) {
            change += effect(ix, token_account);
        }
    }
    change
}

/// One token instruction's effect on `account`: (source, destination, amount) by the
/// instruction's account layout.
fn effect(ix: &Instruction, account: &str) -> i128 {
    let Ok(instruction) = TokenInstruction::unpack(&ix.data) else { return 0 };
    let at = |i: usize| ix.accounts.get(i).map(String::as_str);
    let (from, to, amount) = match instruction {
        TokenInstruction::Transfer { amount } => (at(0), at(1), amount),
        TokenInstruction::TransferChecked { amount, .. } => (at(0), at(2), amount),
        TokenInstruction::MintTo { amount } | TokenInstruction::MintToChecked { amount, .. } => (None, at(1), amount),
        TokenInstruction::Burn { amount } | TokenInstruction::BurnChecked { amount, .. } => (at(0), None, amount),
        _ => return 0,
    };
    let amount = amount as i128;
    // A transfer to itself changes nothing.
    (if to == Some(account) { amount } else { 0 }) - (if from == Some(account) { amount } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::InnerInstruction;

    fn token_ix(data: Vec<u8>, accounts: &[&str]) -> Instruction {
        Instruction { program_id: spl_token_interface::ID.to_string(), accounts: accounts.iter().map(|a| a.to_string()).collect(), data }
    }

    fn tx(instructions: Vec<Instruction>, inner: Vec<InnerInstruction>) -> ConfirmedTransaction {
        ConfirmedTransaction {
            signature: "s".into(),
            slot: 1,
            transaction_index: None,
            block_time: None,
            err: None,
            signers: vec![],
            instructions,
            inner_instructions: inner,
        }
    }

    #[test]
    fn transfers_mints_and_sweeps_add_up() {
        let transfer = |from: &str, to: &str, amount: u64| token_ix(TokenInstruction::Transfer { amount }.pack(), &[from, to, "owner"]);
        let checked =
            |from: &str, to: &str, amount: u64| token_ix(TokenInstruction::TransferChecked { amount, decimals: 6 }.pack(), &[from, "mint", to, "owner"]);
        let mint = |to: &str, amount: u64| token_ix(TokenInstruction::MintTo { amount }.pack(), &["mint", to, "authority"]);
        let sweep = InnerInstruction { outer_index: 1, instruction: transfer("dep", "vault", 7) };
        let other_program =
            Instruction { program_id: "Other".into(), accounts: vec!["x".into(), "dep".into()], data: TokenInstruction::Transfer { amount: 99 }.pack() };
        let t = tx(vec![transfer("a", "dep", 5), other_program, checked("b", "dep", 2_000_000), mint("dep", 3), transfer("dep", "dep", 4)], vec![sweep]);
        assert_eq!(balance_change(&t, "dep"), 5 - 7 + 2_000_000 + 3);
        assert_eq!(balance_change(&t, "vault"), 7);
        assert_eq!(balance_change(&t, "nobody"), 0);
        let mut failed = t.clone();
        failed.err = Some(solana_transaction_error::TransactionError::AccountInUse);
        assert_eq!(balance_change(&failed, "dep"), 0);
    }
}
