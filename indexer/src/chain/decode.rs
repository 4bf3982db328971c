//! A `getTransaction` answer (`EncodedConfirmedTransactionWithStatusMeta`, encoding `json`)
//! reduced to a `ConfirmedTransaction`: the one decoding of a transaction, whether it came from
//! a cluster or from the embedded chain's ledger.

use solana_transaction_status_client_types::option_serializer::OptionSerializer;
use solana_transaction_status_client_types::{
    EncodedConfirmedTransactionWithStatusMeta, EncodedTransaction, UiCompiledInstruction, UiInstruction, UiMessage,
};

use super::{ChainError, ConfirmedTransaction, InnerInstruction, Instruction};

fn format_error(signature: &str, what: impl std::fmt::Display) -> ChainError {
    ChainError::Format(format!("transaction {signature}: {what}"))
}

impl ConfirmedTransaction {
    /// Resolves program indexes against the static keys followed by the addresses loaded from
    /// lookup tables (writable, then read-only), as the runtime orders them.
    pub fn from_encoded(signature: &str, encoded: EncodedConfirmedTransactionWithStatusMeta) -> Result<ConfirmedTransaction, ChainError> {
        let EncodedConfirmedTransactionWithStatusMeta { slot, block_time, transaction, .. } = encoded;
        let meta = transaction.meta.ok_or_else(|| format_error(signature, "no meta"))?;
        let EncodedTransaction::Json(ui) = transaction.transaction else {
            return Err(format_error(signature, "not in the json encoding"));
        };
        let UiMessage::Raw(message) = ui.message else {
            return Err(format_error(signature, "a parsed message (asked for raw json)"));
        };
        let signers = message.account_keys.iter().take(message.header.num_required_signatures as usize).cloned().collect();
        let loaded = match meta.loaded_addresses {
            OptionSerializer::Some(loaded) => loaded,
            _ => Default::default(),
        };
        let keys: Vec<String> = message.account_keys.into_iter().chain(loaded.writable).chain(loaded.readonly).collect();
        let instruction = |compiled: UiCompiledInstruction| -> Result<Instruction, ChainError> {
            let index = compiled.program_id_index as usize;
            let program_id = keys.get(index).cloned().ok_or_else(|| format_error(signature, format!("program index {index} out of range")))?;
            let data = bs58::decode(&compiled.data).into_vec().map_err(|e| format_error(signature, format!("instruction data: {e}")))?;
            Ok(Instruction { program_id, data })
        };
        let instructions = message.instructions.into_iter().map(instruction).collect::<Result<_, _>>()?;
        let mut inner_instructions = Vec::new();
        if let OptionSerializer::Some(groups) = meta.inner_instructions {
            for group in groups {
                for ui in group.instructions {
                    let UiInstruction::Compiled(compiled) = ui else {
                        return Err(format_error(signature, "a parsed inner instruction (asked for raw json)"));
                    };
                    inner_instructions.push(InnerInstruction { outer_index: group.index as usize, instruction: instruction(compiled)? });
                }
            }
        }
        Ok(ConfirmedTransaction {
            signature: signature.to_owned(),
            slot,
            block_time,
            err: meta.err.map(Into::into),
            signers,
            instructions,
            inner_instructions,
        })
    }
}
