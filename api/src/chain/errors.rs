//! What a failed transaction means: the chain layer hands over Solana's own `TransactionError`
//! (`ChainError::transaction_error`, decoded once from a preflight refusal or a landed
//! transaction's status), and the program's custom codes are named here and nowhere else.
//! Custodial trades, co-signed creations and wallet-signed confirmations all go through
//! [`refusal`].

use funding_market::error::FundingMarketError;
use solana_instruction_error::InstructionError;
use solana_transaction_error::TransactionError;

/// Why a transaction was refused, as far as the one who asked for it is concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    InsufficientBalance,
    InsufficientShares,
    /// The market is not open (not yet, no longer, or not on this schedule).
    MarketClosed,
    Slippage,
    /// Below the minimum, or buys no shares.
    TooSmall,
    /// Outside what the market can take (the math's domain).
    TooLarge,
    /// A deposit below the minimum sweep.
    BelowMinimumDeposit,
    /// An account the transaction creates exists already.
    AlreadyExists,
}

/// The program's error, if the transaction failed in one of its instructions with one of its
/// codes.
pub fn program_error(err: &TransactionError) -> Option<FundingMarketError> {
    let TransactionError::InstructionError(_, InstructionError::Custom(code)) = err else { return None };
    PROGRAM_ERRORS.iter().copied().find(|e| u32::from(*e) == *code)
}

/// The program's errors a caller can cause, by what they mean to the caller.
fn refusal_of(e: FundingMarketError) -> Option<Refusal> {
    use FundingMarketError as E;
    Some(match e {
        E::InsufficientBalance => Refusal::InsufficientBalance,
        E::InsufficientShares => Refusal::InsufficientShares,
        E::MarketClosed | E::MarketNotOpen | E::InvalidSchedule | E::AlreadyFinalized => Refusal::MarketClosed,
        E::SlippageExceeded => Refusal::Slippage,
        E::TradeTooSmall | E::NoShares | E::ZeroAmount => Refusal::TooSmall,
        E::PriceOutOfDomain | E::AmountOutOfRange | E::QuantityOutOfRange => Refusal::TooLarge,
        E::BelowMinimumDeposit => Refusal::BelowMinimumDeposit,
        _ => return None,
    })
}

/// What a failed transaction means to its caller; `None` for faults of ours (a wrong signer,
/// a broken invariant, a transport failure).
pub fn refusal(err: &TransactionError) -> Option<Refusal> {
    match err {
        // The system program's `AccountAlreadyInUse` (code 0) from an `init`.
        TransactionError::InstructionError(_, InstructionError::Custom(0)) => Some(Refusal::AlreadyExists),
        _ => refusal_of(program_error(err)?),
    }
}

/// Every program error, for decoding a code into its variant.
const PROGRAM_ERRORS: [FundingMarketError; 26] = {
    use FundingMarketError as E;
    [
        E::FeeTooHigh,
        E::ZeroMinimum,
        E::NotWalletOrOperator,
        E::NotAuthority,
        E::NotOracle,
        E::InvalidSchedule,
        E::MarketNotOpen,
        E::MarketClosed,
        E::TradeTooSmall,
        E::ZeroAmount,
        E::SlippageExceeded,
        E::InsufficientBalance,
        E::InsufficientShares,
        E::BelowMinimumDeposit,
        E::TooEarly,
        E::AlreadyFinalized,
        E::NotFinalized,
        E::PositionsOpen,
        E::Insolvent,
        E::NoShares,
        E::LiquidityOutOfRange,
        E::QuantityOutOfRange,
        E::PriceOutOfDomain,
        E::AmountOutOfRange,
        E::PriorOutOfRange,
        E::Overflow,
    ]
};

#[cfg(test)]
mod tests {
    use super::*;
    use chain_client::ChainError;
    use serde_json::json;

    /// A `TransactionError` from its JSON-RPC form, as a node sends it.
    fn decode(err: serde_json::Value) -> TransactionError {
        serde_json::from_value(err).unwrap()
    }

    #[test]
    fn program_codes_decode_from_the_rpc_form() {
        let code = u32::from(FundingMarketError::SlippageExceeded);
        let failed = ChainError::TransactionFailed { signature: "s".into(), err: decode(json!({"InstructionError": [0, {"Custom": code}]})) };
        let err = failed.transaction_error().unwrap();
        assert!(matches!(program_error(err), Some(FundingMarketError::SlippageExceeded)));
        assert_eq!(refusal(err), Some(Refusal::Slippage));
        let preflight =
            ChainError::Rpc { code: -32002, message: "x".into(), err: Some(decode(json!({"InstructionError": [1, {"Custom": 0}]}))), preflight: None };
        assert_eq!(refusal(preflight.transaction_error().unwrap()), Some(Refusal::AlreadyExists));
        let unrelated = decode(json!("BlockhashNotFound"));
        assert!(program_error(&unrelated).is_none() && refusal(&unrelated).is_none());
        let not_ours = decode(json!({"InstructionError": [0, {"Custom": u32::from(FundingMarketError::NotOracle)}]}));
        assert_eq!(refusal(&not_ours), None, "a wrong signer is a fault of ours");
    }

    #[test]
    fn every_program_error_is_listed() {
        // The codes are consecutive from 6000 in declaration order: the list is the enum.
        for (i, e) in PROGRAM_ERRORS.iter().enumerate() {
            assert_eq!(u32::from(*e), 6000 + i as u32);
        }
    }
}
