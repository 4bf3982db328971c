//! A transaction's balances before and after it ran, as a validator records them for
//! `getTransaction`'s meta (`preBalances`/`postBalances`, `preTokenBalances`/`postTokenBalances`):
//! every account key's lamports, and the amount held by each SPL Token or Token-2022 account it
//! names. The bank records them while it runs the transaction (its balance recording, as a
//! validator's replay enables it); they are kept on the transaction's ledger row.

use serde::{Deserialize, Serialize};
use solana_account_decoder::parse_account_data::SplTokenAdditionalDataV2;
use solana_account_decoder::parse_token::token_amount_to_ui_amount_v3;
use solana_svm::transaction_balances::{BalanceCollector, SvmTokenInfo};
use solana_transaction_status_client_types::TransactionTokenBalance;

/// The balances of a transaction's accounts at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Balances {
    /// Each account key's lamports, in key order (0 for an account that does not exist).
    pub lamports: Vec<u64>,
    /// Its token accounts' balances, in key order: the bank reads them only when the
    /// transaction names a token program, never a key it invokes as a program, and only where
    /// the account's mint is found.
    pub tokens: Vec<TokenBalance>,
}

/// A token account's balance as its ledger row keeps it (JSON); the node's
/// `TransactionTokenBalance` adds the amount in whole tokens, which follows from these.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenBalance {
    /// The account's position among the transaction's account keys.
    pub account_index: u8,
    pub mint: String,
    /// The token account's owner (not the program that owns the account).
    pub owner: String,
    /// SPL Token or Token-2022.
    pub program_id: String,
    /// In the mint's base units: the raw amount, as a validator records it, whatever a
    /// Token-2022 mint's interest or scaling extension would display.
    pub amount: u64,
    pub decimals: u8,
}

impl Balances {
    /// The balances before and after of the one transaction the bank ran with balance
    /// recording on (empty where it recorded none).
    pub fn recorded(collector: Option<BalanceCollector>) -> (Balances, Balances) {
        let Some(collector) = collector else {
            return Default::default();
        };
        let (native_pre, native_post, token_pre, token_post) = collector.into_vecs();
        let first = |batch: Vec<Vec<u64>>, tokens: Vec<Vec<SvmTokenInfo>>| Balances {
            lamports: batch.into_iter().next().unwrap_or_default(),
            tokens: tokens.into_iter().next().unwrap_or_default().iter().map(TokenBalance::from).collect(),
        };
        (first(native_pre, token_pre), first(native_post, token_post))
    }
}

impl From<&SvmTokenInfo> for TokenBalance {
    fn from(info: &SvmTokenInfo) -> TokenBalance {
        TokenBalance {
            account_index: info.account_index,
            mint: info.mint.to_string(),
            owner: info.owner.to_string(),
            program_id: info.program_id.to_string(),
            amount: info.amount,
            decimals: info.decimals,
        }
    }
}

impl TokenBalance {
    /// As a node reports it from a run it has just made (`simulateTransaction`).
    pub fn to_node(&self) -> TransactionTokenBalance {
        TransactionTokenBalance {
            account_index: self.account_index,
            mint: self.mint.clone(),
            ui_token_amount: token_amount_to_ui_amount_v3(self.amount, &SplTokenAdditionalDataV2::with_decimals(self.decimals)),
            owner: self.owner.clone(),
            program_id: self.program_id.clone(),
        }
    }

    /// As a node reports it from its ledger (`getTransaction`): the ledger's storage keeps the
    /// amount in whole tokens only where it is not zero (`solana-storage-proto`'s conversion
    /// back from protobuf), so an empty account reads `uiAmount: null`.
    pub fn to_node_ledger(&self) -> TransactionTokenBalance {
        let mut balance = self.to_node();
        balance.ui_token_amount.ui_amount = balance.ui_token_amount.ui_amount.filter(|amount| amount.abs() > f64::EPSILON);
        balance
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holding(amount: u64) -> TokenBalance {
        TokenBalance { account_index: 1, mint: "m".into(), owner: "o".into(), program_id: "p".into(), amount, decimals: 6 }
    }

    #[test]
    fn an_empty_account_reads_no_whole_amount_from_the_ledger_only() {
        let empty = holding(0);
        assert_eq!(empty.to_node().ui_token_amount.ui_amount, Some(0.0));
        let read_back = empty.to_node_ledger().ui_token_amount;
        assert_eq!((read_back.ui_amount, read_back.amount.as_str(), read_back.ui_amount_string.as_str()), (None, "0", "0"));
        let held = holding(1).to_node_ledger().ui_token_amount;
        assert_eq!((held.ui_amount, held.ui_amount_string.as_str()), (Some(0.000001), "0.000001"));
    }
}
