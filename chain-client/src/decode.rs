//! A confirmed transaction resolved into a `ConfirmedTransaction`: programs looked up by index
//! in the static keys followed by the addresses loaded from lookup tables (writable, then
//! read-only), as the runtime orders them. One resolution for both chains: a cluster's
//! `getTransaction` answer (`from_encoded`) and the embedded chain's ledger, which hands over its
//! compiled instructions as they are, without the answer's base-58 detour (base 58 is quadratic:
//! encoding and decoding again 120 bytes takes 28 µs, 250 bytes 126 µs, in release — per event,
//! more than the ledger read).

use solana_message::compiled_instruction::CompiledInstruction;
use solana_transaction_error::TransactionError;
use solana_transaction_status_client_types::option_serializer::OptionSerializer;
use solana_transaction_status_client_types::{EncodedConfirmedTransactionWithStatusMeta, EncodedTransaction, InnerInstructions, UiInstruction, UiMessage};

use crate::{ChainError, ConfirmedTransaction, InnerInstruction, Instruction};

fn format_error(signature: &str, what: impl std::fmt::Display) -> ChainError {
    ChainError::Format(format!("transaction {signature}: {what}"))
}

/// A confirmed transaction before its program indexes are resolved.
pub struct Compiled<'a> {
    pub signature: &'a str,
    pub slot: u64,
    pub transaction_index: Option<u32>,
    pub block_time: Option<i64>,
    pub err: Option<TransactionError>,
    /// The static keys, then the addresses loaded from lookup tables.
    pub keys: Vec<String>,
    /// How many of the static keys signed (they come first).
    pub signers: usize,
    pub instructions: Vec<CompiledInstruction>,
    pub inner: Vec<InnerInstructions>,
}

impl Compiled<'_> {
    pub fn resolve(self) -> Result<ConfirmedTransaction, ChainError> {
        let Compiled { signature, slot, transaction_index, block_time, err, keys, signers, instructions, inner } = self;
        let instruction = |compiled: CompiledInstruction| -> Result<Instruction, ChainError> {
            let index = compiled.program_id_index as usize;
            let key = |index: usize| keys.get(index).cloned().ok_or_else(|| format_error(signature, format!("account index {index} out of range")));
            let program_id = key(index)?;
            let accounts = compiled.accounts.iter().map(|&a| key(a as usize)).collect::<Result<_, _>>()?;
            Ok(Instruction { program_id, accounts, data: compiled.data })
        };
        let mut inner_instructions = Vec::new();
        for group in inner {
            for inner in group.instructions {
                inner_instructions.push(InnerInstruction { outer_index: group.index as usize, instruction: instruction(inner.instruction)? });
            }
        }
        Ok(ConfirmedTransaction {
            signature: signature.to_owned(),
            slot,
            transaction_index,
            block_time,
            err,
            signers: keys.iter().take(signers).cloned().collect(),
            instructions: instructions.into_iter().map(instruction).collect::<Result<_, _>>()?,
            inner_instructions,
        })
    }
}

impl ConfirmedTransaction {
    /// A `getTransaction` answer (encoding `json`), its instruction data decoded from base 58.
    pub fn from_encoded(signature: &str, encoded: EncodedConfirmedTransactionWithStatusMeta) -> Result<ConfirmedTransaction, ChainError> {
        let EncodedConfirmedTransactionWithStatusMeta { slot, block_time, transaction, transaction_index } = encoded;
        let meta = transaction.meta.ok_or_else(|| format_error(signature, "no meta"))?;
        let EncodedTransaction::Json(ui) = transaction.transaction else {
            return Err(format_error(signature, "not in the json encoding"));
        };
        let UiMessage::Raw(message) = ui.message else {
            return Err(format_error(signature, "a parsed message (asked for raw json)"));
        };
        let compiled = |program_id_index: u8, accounts: Vec<u8>, data: &str| -> Result<CompiledInstruction, ChainError> {
            let data = bs58::decode(data).into_vec().map_err(|e| format_error(signature, format!("instruction data: {e}")))?;
            Ok(CompiledInstruction { program_id_index, accounts, data })
        };
        let mut inner = Vec::new();
        if let OptionSerializer::Some(groups) = meta.inner_instructions {
            for group in groups {
                let mut instructions = Vec::with_capacity(group.instructions.len());
                for ui in group.instructions {
                    let UiInstruction::Compiled(ix) = ui else {
                        return Err(format_error(signature, "a parsed inner instruction (asked for raw json)"));
                    };
                    let instruction = compiled(ix.program_id_index, ix.accounts, &ix.data)?;
                    instructions.push(solana_transaction_status_client_types::InnerInstruction { instruction, stack_height: ix.stack_height });
                }
                inner.push(InnerInstructions { index: group.index, instructions });
            }
        }
        let loaded = match meta.loaded_addresses {
            OptionSerializer::Some(loaded) => loaded,
            _ => Default::default(),
        };
        Compiled {
            signature,
            slot,
            transaction_index,
            block_time,
            err: meta.err.map(Into::into),
            signers: message.header.num_required_signatures as usize,
            instructions: message.instructions.into_iter().map(|ix| compiled(ix.program_id_index, ix.accounts, &ix.data)).collect::<Result<_, _>>()?,
            keys: message.account_keys.into_iter().chain(loaded.writable).chain(loaded.readonly).collect(),
            inner,
        }
        .resolve()
    }
}
