//! The embedded chain's JSON-RPC as the Solana RPC client crate (`solana-rpc-client`) uses it:
//! every method a wallet, web3.js or the Anchor client calls, over HTTP, each answer parsed by
//! the client's own response types — so what the client cannot read fails here.

use std::time::Duration;

use anchor_lang::prelude::Pubkey;
use anchor_lang::solana_program::program_pack::Pack;
use anchor_lang::solana_program::system_instruction;
use axum::Json;
use axum::extract::State;
use axum::routing::post;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use funding_market::client;
use funding_market::instructions::CreateMarketParams;
use funding_market::state::Market;
use localnet::EmbeddedChain;
use localnet::GenesisParams;
use serde_json::{Value, json};
use solana_account_decoder_client_types::UiAccountEncoding;
use solana_commitment_config::CommitmentConfig;
use solana_keypair::Keypair;
use solana_rpc_client::nonblocking::rpc_client::RpcClient;
use solana_rpc_client_api::config::{RpcAccountInfoConfig, RpcProgramAccountsConfig, RpcSimulateTransactionConfig, RpcTransactionConfig};
use solana_rpc_client_api::filter::{Memcmp, RpcFilterType};
use solana_rpc_client_api::request::TokenAccountsFilter;
use solana_signer::Signer;
use solana_transaction::Transaction;
use solana_transaction::versioned::VersionedTransaction;
use solana_transaction_status_client_types::{EncodedTransaction, UiLoadedAddresses, UiReturnDataEncoding, UiTransactionEncoding, UiTransactionReturnData};
use sqlx::PgPool;
use uuid::Uuid;

/// The chain's JSON-RPC on a port of its own; the URL.
async fn node(chain: EmbeddedChain) -> String {
    async fn rpc(State(chain): State<EmbeddedChain>, Json(request): Json<Value>) -> Json<Value> {
        Json(chain.json_rpc(&request).await)
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().route("/", post(rpc)).with_state(chain);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

fn client(url: &str) -> RpcClient {
    RpcClient::new_with_timeout_and_commitment(url.to_owned(), Duration::from_secs(30), CommitmentConfig::confirmed())
}

async fn signed(rpc: &RpcClient, ixs: &[anchor_lang::solana_program::instruction::Instruction], payer: &Keypair, signers: &[&Keypair]) -> Transaction {
    let blockhash = rpc.get_latest_blockhash().await.unwrap();
    let mut all = vec![payer];
    all.extend_from_slice(signers);
    Transaction::new_signed_with_payer(ixs, Some(&payer.pubkey()), &all, blockhash)
}

#[sqlx::test(migrations = "../migrations")]
async fn the_rpc_client_crate_reads_every_answer(db: PgPool) {
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let url = node(chain.clone()).await;
    let rpc = client(&url);

    // Node facts.
    let version = rpc.get_version().await.unwrap();
    assert_eq!(version.solana_core, "4.0.0");
    assert_eq!(version.feature_set, Some(localnet::feature_set_id()), "a number, as web3.js requires");
    let genesis = rpc.get_genesis_hash().await.unwrap();
    assert_eq!(genesis.to_string(), chain.genesis_hash(), "stable for this chain");
    assert!(rpc.get_slot().await.unwrap() > 0);
    let height = rpc.get_block_height().await.unwrap();
    let (_, last_valid) = rpc.get_latest_blockhash_with_commitment(CommitmentConfig::confirmed()).await.unwrap();
    assert!(last_valid > height && last_valid <= height + 151, "{height} {last_valid}: the height blockhashes expire in");
    let epoch = rpc.get_epoch_info().await.unwrap();
    // The bank moves on every 400 ms: a later height is at least the earlier one.
    assert!(height <= epoch.block_height && epoch.block_height <= rpc.get_block_height().await.unwrap(), "{height} {epoch:?}");
    assert!(epoch.slot_index < epoch.slots_in_epoch);
    assert_eq!(rpc.get_minimum_balance_for_rent_exemption(165).await.unwrap(), 2_039_280, "an SPL token account's rent, as on mainnet");
    assert!(rpc.get_health().await.is_ok());
    let fees = rpc.get_recent_prioritization_fees(&[client::config_pda()]).await.unwrap();
    assert!(!fees.is_empty() && fees.iter().all(|f| f.prioritization_fee == 0), "{fees:?}");

    // requestAirdrop, confirmed through getSignatureStatuses as the client does.
    let wallet = Keypair::new();
    let airdrop = rpc.request_airdrop(&wallet.pubkey(), 5_000_000_000).await.unwrap();
    assert!(rpc.confirm_transaction(&airdrop).await.unwrap());
    assert_eq!(rpc.get_balance(&wallet.pubkey()).await.unwrap(), 5_000_000_000);
    assert!(rpc.request_airdrop(&wallet.pubkey(), 2_000 * 1_000_000_000).await.is_err(), "over the per-request cap");
    let history = rpc.get_signature_statuses_with_history(&[airdrop]).await.unwrap().value;
    assert!(history[0].as_ref().is_some_and(|s| s.err.is_none()));

    // getFeeForMessage and simulateTransaction on a transaction not yet sent.
    let create_user = signed(&rpc, &[client::create_user(wallet.pubkey(), wallet.pubkey(), chain.mint())], &wallet, &[]).await;
    assert_eq!(rpc.get_fee_for_message(&create_user.message).await.unwrap(), 5_000);
    let simulated = rpc.simulate_transaction(&create_user).await.unwrap().value;
    assert!(simulated.err.is_none(), "{simulated:?}");
    assert!(simulated.units_consumed.unwrap() > 0);
    let none_loaded = UiLoadedAddresses { writable: vec![], readonly: vec![] };
    assert_eq!(simulated.loaded_addresses, Some(none_loaded), "listed as a node lists them");
    let logs = simulated.logs.unwrap();
    assert!(logs.iter().any(|l| l.contains(&format!("Program {} invoke [1]", funding_market::ID))), "{logs:?}");
    // The program runs as a native builtin: the runtime's invoke/success lines are logged, its
    // own `msg!` lines go to the process's output (docs/local-chain.md).
    assert!(logs.iter().any(|l| l == &format!("Program {} success", funding_market::ID)), "{logs:?}");
    // The accounts asked for, as the run left them: the user account it creates (not in the
    // bank), the payer less what it paid, nothing for an address the run did not make.
    let user = client::user_pda(&wallet.pubkey());
    let accounts = |encoding, addresses: Vec<String>| RpcSimulateTransactionConfig {
        accounts: Some(solana_rpc_client_api::config::RpcSimulateTransactionAccountsConfig { encoding, addresses }),
        ..Default::default()
    };
    let asked = accounts(Some(UiAccountEncoding::Base64), vec![user.to_string(), wallet.pubkey().to_string(), Pubkey::new_unique().to_string()]);
    let simulated = rpc.simulate_transaction_with_config(&create_user, asked).await.unwrap().value;
    let listed = simulated.accounts.expect("asked for");
    let created = listed[0].as_ref().expect("the user account the run created");
    assert_eq!(created.owner, funding_market::ID.to_string());
    assert!(created.data.decode().is_some_and(|data| !data.is_empty()));
    assert!(listed[1].as_ref().is_some_and(|payer| payer.lamports < 5_000_000_000), "{listed:?}");
    assert!(listed[2].is_none());
    assert!(rpc.get_account_with_commitment(&user, CommitmentConfig::confirmed()).await.unwrap().value.is_none(), "a simulation changes nothing");
    let base58 = accounts(Some(UiAccountEncoding::Base58), vec![user.to_string()]);
    let refused = rpc.simulate_transaction_with_config(&create_user, base58).await.unwrap_err().to_string();
    assert!(refused.contains("base58 encoding not supported"), "{refused}");
    let too_many = accounts(None, vec![user.to_string(); create_user.message.account_keys.len() + 1]);
    let refused = rpc.simulate_transaction_with_config(&create_user, too_many).await.unwrap_err().to_string();
    assert!(refused.contains(&format!("Too many accounts provided; max {}", create_user.message.account_keys.len())), "{refused}");
    assert_eq!(rpc.get_balance(&wallet.pubkey()).await.unwrap(), 5_000_000_000, "a simulation changes nothing");

    // A stale blockhash: replaceRecentBlockhash runs it anyway and says with what.
    let mut stale = create_user.clone();
    stale.message.recent_blockhash = solana_hash::Hash::new_from_array([7; 32]);
    let config = RpcSimulateTransactionConfig { replace_recent_blockhash: true, inner_instructions: true, ..Default::default() };
    let replaced = rpc.simulate_transaction_with_config(&stale, config).await.unwrap().value;
    assert!(replaced.err.is_none(), "{replaced:?}");
    assert!(replaced.replacement_blockhash.is_some());
    let sig_verified = RpcSimulateTransactionConfig { sig_verify: true, ..Default::default() };
    assert!(rpc.simulate_transaction_with_config(&stale, sig_verified).await.is_err(), "the signature no longer matches the message");

    // Sent and confirmed the client's way.
    let signature = rpc.send_and_confirm_transaction(&create_user).await.unwrap();

    // getTransaction: json with the logs, and base64 giving back the signed transaction.
    let json_config = RpcTransactionConfig { encoding: Some(UiTransactionEncoding::Json), commitment: None, max_supported_transaction_version: Some(0) };
    let as_json = rpc.get_transaction_with_config(&signature, json_config).await.unwrap();
    let EncodedTransaction::Json(ui) = &as_json.transaction.transaction else { panic!("json answered as {:?}", as_json.transaction.transaction) };
    assert_eq!(ui.signatures, vec![signature.to_string()]);
    let meta = as_json.transaction.meta.unwrap();
    let logs: Option<Vec<String>> = meta.log_messages.into();
    assert!(logs.unwrap().iter().any(|l| l == &format!("Program {} success", funding_market::ID)));
    // The fee charged and the compute units used, as the run reported them.
    assert_eq!(meta.fee, 5_000);
    let units: Option<u64> = meta.compute_units_consumed.into();
    assert_eq!(units, simulated.units_consumed);
    // A priority fee (a price of 1 lamport a compute unit for at most 10,000 units) is charged
    // and reported with the signature's.
    let priced = [
        solana_compute_budget_interface::ComputeBudgetInstruction::set_compute_unit_limit(10_000),
        solana_compute_budget_interface::ComputeBudgetInstruction::set_compute_unit_price(1_000_000),
        system_instruction::transfer(&wallet.pubkey(), &Pubkey::new_unique(), 1_000_000),
    ];
    let before = rpc.get_balance(&wallet.pubkey()).await.unwrap();
    let priced_signature = rpc.send_and_confirm_transaction(&signed(&rpc, &priced, &wallet, &[]).await).await.unwrap();
    assert_eq!(before - rpc.get_balance(&wallet.pubkey()).await.unwrap(), 1_000_000 + 15_000);
    let json_config = RpcTransactionConfig { encoding: Some(UiTransactionEncoding::Json), commitment: None, max_supported_transaction_version: Some(0) };
    let priced = rpc.get_transaction_with_config(&priced_signature, json_config).await.unwrap();
    let meta = priced.transaction.meta.unwrap();
    assert_eq!(meta.fee, 15_000);
    // Each key's lamports before and after, in key order (payer, recipient, then the two
    // programs): the payer less the transfer and the fee, the recipient from nothing. No token
    // program named, so no token balances.
    assert_eq!(meta.pre_balances.len(), 4, "{meta:?}");
    assert_eq!(meta.post_balances.len(), 4, "{meta:?}");
    assert_eq!(meta.pre_balances[0] - meta.post_balances[0], 1_000_000 + 15_000);
    assert_eq!((meta.pre_balances[1], meta.post_balances[1]), (0, 1_000_000));
    assert_eq!(meta.pre_balances[2..], meta.post_balances[2..]);
    let none: Option<Vec<_>> = meta.pre_token_balances.into();
    assert_eq!(none, Some(vec![]));
    let none: Option<UiTransactionReturnData> = meta.return_data.into();
    assert_eq!(none, None, "no program left return data");
    // jsonParsed, as web3.js's getParsedTransaction asks: the keys with their roles, the
    // transfer decoded.
    let parsed_config = RpcTransactionConfig { encoding: Some(UiTransactionEncoding::JsonParsed), ..json_config };
    let parsed = rpc.get_transaction_with_config(&priced_signature, parsed_config).await;
    let parsed = serde_json::to_value(parsed.unwrap().transaction.transaction).unwrap();
    let message = &parsed["message"];
    assert_eq!(
        message["accountKeys"][0],
        json!({"pubkey": wallet.pubkey().to_string(), "signer": true, "writable": true, "source": "transaction"}),
        "{parsed}"
    );
    let transfer = &message["instructions"][2];
    assert_eq!(
        (&transfer["program"], &transfer["parsed"]["type"], &transfer["parsed"]["info"]["lamports"]),
        (&json!("system"), &json!("transfer"), &json!(1_000_000)),
        "{parsed}"
    );
    let b64_config = RpcTransactionConfig { encoding: Some(UiTransactionEncoding::Base64), commitment: None, max_supported_transaction_version: Some(0) };
    let as_base64 = rpc.get_transaction_with_config(&signature, b64_config).await.unwrap();
    let EncodedTransaction::Binary(..) = &as_base64.transaction.transaction else { panic!("base64 answered as {:?}", as_base64.transaction.transaction) };
    let decoded: VersionedTransaction = as_base64.transaction.transaction.decode().unwrap();
    assert_eq!(decoded.signatures[0], signature);

    // A market (its creation emits an event through an inner instruction) for the scans.
    let keys = chain.keys();
    let now = chrono::Utc::now().timestamp();
    let market_id = *Uuid::new_v4().as_bytes();
    let params = CreateMarketParams {
        market_id,
        series: [1; 32],
        open_ts: now - 60,
        close_ts: now + 3600,
        settlement_ts: now + 7200,
        b: 10_000_000,
        prior_ppm: 500_000,
    };
    let create_market =
        signed(&rpc, &[client::create_market(keys.authority.pubkey(), keys.authority.pubkey(), chain.mint(), params)], &keys.authority, &[]).await;
    let config = RpcSimulateTransactionConfig { inner_instructions: true, ..Default::default() };
    let simulated = rpc.simulate_transaction_with_config(&create_market, config).await.unwrap().value;
    let inner = simulated.inner_instructions.expect("asked for");
    assert!(!inner.is_empty() && inner[0].instructions.len() >= 2, "the subsidy transfer and the event: {inner:?}");
    // Parsed as a node parses them (what web3.js's simulateTransaction reads): the SPL Token
    // transfer decoded, the program's own event instruction partially (id, accounts, data).
    let inner = serde_json::to_value(&inner[0].instructions).unwrap();
    let listed = inner.as_array().unwrap();
    assert!(listed.iter().any(|ix| ix["program"] == "spl-token" && ix["parsed"]["type"] == "transfer"), "{inner}");
    let program = funding_market::ID.to_string();
    assert!(listed.iter().any(|ix| ix["programId"] == program.as_str() && ix["accounts"][0].is_string() && ix["data"].is_string()), "{inner}");
    // The subsidy's USDC in the token balances: what left the treasury is what the market's
    // vault holds after the run (created by it, so not there before).
    let index_of = |key: Pubkey| create_market.message.account_keys.iter().position(|k| *k == key).unwrap();
    let vault_index = index_of(client::market_vault_pda(&client::market_pda(&market_id)));
    let treasury_index = index_of(client::treasury_pda());
    type Held = Option<Vec<solana_transaction_status_client_types::UiTransactionTokenBalance>>;
    let amount = |balances: &Held, is: &dyn Fn(&solana_transaction_status_client_types::UiTransactionTokenBalance) -> bool| {
        let found = balances.as_ref().unwrap().iter().find(|b| is(b)).cloned();
        found.map(|b| {
            assert_eq!((b.mint.as_str(), b.ui_token_amount.decimals), (chain.mint().to_string().as_str(), 6));
            b.ui_token_amount.amount.parse::<u64>().unwrap()
        })
    };
    let of_vault = |b: &solana_transaction_status_client_types::UiTransactionTokenBalance| b.account_index as usize == vault_index;
    let of_treasury = |b: &solana_transaction_status_client_types::UiTransactionTokenBalance| b.account_index as usize == treasury_index;
    assert_eq!(amount(&simulated.pre_token_balances, &of_vault), None);
    let subsidy = amount(&simulated.post_token_balances, &of_vault).expect("the vault's balance");
    assert!(subsidy > 0);
    let paid = amount(&simulated.pre_token_balances, &of_treasury).unwrap() - amount(&simulated.post_token_balances, &of_treasury).unwrap();
    assert_eq!(paid, subsidy);
    rpc.send_and_confirm_transaction(&create_market).await.unwrap();

    // getProgramAccounts: the market by its discriminator, by size, and nothing for a mismatch.
    let discriminator = <Market as anchor_lang::Discriminator>::DISCRIMINATOR.to_vec();
    let by_kind = RpcProgramAccountsConfig {
        filters: Some(vec![RpcFilterType::Memcmp(Memcmp::new_raw_bytes(0, discriminator.clone()))]),
        account_config: RpcAccountInfoConfig { encoding: Some(UiAccountEncoding::Base64), ..Default::default() },
        ..Default::default()
    };
    let markets = rpc.get_program_ui_accounts_with_config(&funding_market::ID, by_kind).await.unwrap();
    assert_eq!(markets.len(), 1);
    assert_eq!(markets[0].0, client::market_pda(&market_id));
    let data = markets[0].1.data.decode().expect("base64 data");
    let market: Market = client::decode(&data).unwrap();
    assert_eq!(market.b, 10_000_000);
    let size = data.len() as u64;
    let every = rpc.get_program_accounts(&funding_market::ID).await.unwrap();
    assert!(every.iter().any(|(k, _)| *k == client::config_pda()) && every.iter().any(|(k, _)| *k == markets[0].0), "{} accounts", every.len());
    let base64 = RpcAccountInfoConfig { encoding: Some(UiAccountEncoding::Base64), ..Default::default() };
    let by_size = RpcProgramAccountsConfig { filters: Some(vec![RpcFilterType::DataSize(size)]), account_config: base64.clone(), ..Default::default() };
    assert!(rpc.get_program_ui_accounts_with_config(&funding_market::ID, by_size.clone()).await.unwrap().iter().any(|(k, _)| *k == markets[0].0));
    // Asked for with no encoding, a node's default is base58, refused for a market's size.
    let by_size_base58 = RpcProgramAccountsConfig { account_config: RpcAccountInfoConfig::default(), ..by_size };
    let refused = rpc.get_program_ui_accounts_with_config(&funding_market::ID, by_size_base58).await.unwrap_err().to_string();
    assert!(refused.contains("-32600") && refused.contains("please use Base64 encoding"), "{refused}");
    let none = RpcProgramAccountsConfig { filters: Some(vec![RpcFilterType::Memcmp(Memcmp::new_raw_bytes(0, vec![0xFF; 8]))]), ..Default::default() };
    assert!(rpc.get_program_ui_accounts_with_config(&funding_market::ID, none).await.unwrap().is_empty());

    // Token accounts: a wallet's associated account with USDC, by owner and by balance.
    let ata = Pubkey::find_program_address(
        &[wallet.pubkey().as_ref(), spl_token_interface::ID.as_ref(), chain.mint().as_ref()],
        &"ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL".parse().unwrap(),
    )
    .0;
    let create_ata = anchor_lang::solana_program::instruction::Instruction {
        program_id: "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL".parse().unwrap(),
        accounts: vec![
            anchor_lang::solana_program::instruction::AccountMeta::new(wallet.pubkey(), true),
            anchor_lang::solana_program::instruction::AccountMeta::new(ata, false),
            anchor_lang::solana_program::instruction::AccountMeta::new_readonly(wallet.pubkey(), false),
            anchor_lang::solana_program::instruction::AccountMeta::new_readonly(chain.mint(), false),
            anchor_lang::solana_program::instruction::AccountMeta::new_readonly(anchor_lang::system_program::ID, false),
            anchor_lang::solana_program::instruction::AccountMeta::new_readonly(spl_token_interface::ID, false),
        ],
        data: vec![1],
    };
    rpc.send_and_confirm_transaction(&signed(&rpc, std::slice::from_ref(&create_ata), &wallet, &[]).await).await.unwrap();
    chain.mint_usdc(&ata, 12_345_678).await.unwrap();
    let balance = rpc.get_token_account_balance(&ata).await.unwrap();
    assert_eq!((balance.amount.as_str(), balance.decimals, balance.ui_amount_string.as_str()), ("12345678", 6, "12.345678"));
    assert!(rpc.get_token_account_balance(&wallet.pubkey()).await.is_err(), "not a token account");
    let by_mint = rpc.get_token_accounts_by_owner(&wallet.pubkey(), TokenAccountsFilter::Mint(chain.mint())).await.unwrap();
    assert_eq!(by_mint.len(), 1);
    assert_eq!(by_mint[0].pubkey, ata.to_string());
    let by_program = rpc.get_token_accounts_by_owner(&wallet.pubkey(), TokenAccountsFilter::ProgramId(spl_token_interface::ID)).await.unwrap();
    assert_eq!(by_program.len(), 1);
    // jsonParsed, as wallets ask for token accounts.
    let parsed = by_program[0].account.data.clone();
    let parsed = serde_json::to_value(parsed).unwrap();
    assert_eq!(parsed["parsed"]["info"]["tokenAmount"]["amount"], "12345678", "{parsed}");
    assert_eq!(parsed["parsed"]["info"]["owner"], wallet.pubkey().to_string());
    let token = spl_token_interface::state::Account::unpack(&chain.account(&ata.to_string()).await.unwrap().unwrap().data).unwrap();
    assert_eq!(token.amount, 12_345_678);
    // Return data as a node keeps it: SPL Token's GetAccountDataSize leaves the size of an
    // account of the mint (165 bytes, a little-endian u64).
    let size = spl_token_interface::instruction::get_account_data_size(&spl_token_interface::ID, &chain.mint()).unwrap();
    let sized = rpc.send_and_confirm_transaction(&signed(&rpc, &[size], &wallet, &[]).await).await.unwrap();
    let json_config = RpcTransactionConfig { encoding: Some(UiTransactionEncoding::Json), commitment: None, max_supported_transaction_version: Some(0) };
    let meta = rpc.get_transaction_with_config(&sized, json_config).await.unwrap().transaction.meta.unwrap();
    let returned: Option<UiTransactionReturnData> = meta.return_data.into();
    let size = (BASE64.encode(165u64.to_le_bytes()), UiReturnDataEncoding::Base64);
    assert_eq!(returned, Some(UiTransactionReturnData { program_id: spl_token_interface::ID.to_string(), data: size }));

    // Token-2022, as wallets ask for it beside SPL Token: a mint of 2 decimals, the wallet's
    // associated account holding 4.56.
    let token_2022 = spl_token_2022_interface::ID;
    let mint_2022 = Keypair::new();
    let space = spl_token_2022_interface::state::Mint::LEN;
    let rent = rpc.get_minimum_balance_for_rent_exemption(space).await.unwrap();
    let create_mint = [
        system_instruction::create_account(&wallet.pubkey(), &mint_2022.pubkey(), rent, space as u64, &token_2022),
        spl_token_2022_interface::instruction::initialize_mint2(&token_2022, &mint_2022.pubkey(), &wallet.pubkey(), None, 2).unwrap(),
    ];
    rpc.send_and_confirm_transaction(&signed(&rpc, &create_mint, &wallet, &[&mint_2022]).await).await.unwrap();
    let ata_program: Pubkey = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL".parse().unwrap();
    let ata_2022 = Pubkey::find_program_address(&[wallet.pubkey().as_ref(), token_2022.as_ref(), mint_2022.pubkey().as_ref()], &ata_program).0;
    let mut create_ata_2022 = create_ata.clone();
    create_ata_2022.accounts[1].pubkey = ata_2022;
    create_ata_2022.accounts[3].pubkey = mint_2022.pubkey();
    create_ata_2022.accounts[5].pubkey = token_2022;
    let mint_to = spl_token_2022_interface::instruction::mint_to(&token_2022, &mint_2022.pubkey(), &ata_2022, &wallet.pubkey(), &[], 456).unwrap();
    let mint_tx = signed(&rpc, &[create_ata_2022, mint_to], &wallet, &[]).await;
    // (Keys of one role are ordered by address, so where the account comes depends on the
    // mint's random address.)
    let ata_index = mint_tx.message.account_keys.iter().position(|key| key == &ata_2022).unwrap();
    let minted = rpc.send_and_confirm_transaction(&mint_tx).await.unwrap();
    // The token balances the transaction left, as a node records them: the account it created
    // holding 4.56 (none before it: the account did not exist, and a mint is no token account).
    let json_config = RpcTransactionConfig { encoding: Some(UiTransactionEncoding::Json), commitment: None, max_supported_transaction_version: Some(0) };
    let meta = rpc.get_transaction_with_config(&minted, json_config).await.unwrap().transaction.meta.unwrap();
    let pre: Option<Vec<_>> = meta.pre_token_balances.into();
    assert_eq!(pre, Some(vec![]));
    let post: Option<Vec<solana_transaction_status_client_types::UiTransactionTokenBalance>> = meta.post_token_balances.into();
    let post = serde_json::to_value(post.unwrap()).unwrap();
    assert_eq!(post.as_array().map(Vec::len), Some(1), "{post}");
    assert_eq!(post[0]["accountIndex"], ata_index, "{post}");
    assert_eq!(post[0]["mint"], mint_2022.pubkey().to_string());
    assert_eq!(post[0]["owner"], wallet.pubkey().to_string());
    assert_eq!(post[0]["programId"], token_2022.to_string());
    assert_eq!(post[0]["uiTokenAmount"]["amount"], "456");
    assert_eq!(post[0]["uiTokenAmount"]["decimals"], 2);
    assert_eq!(post[0]["uiTokenAmount"]["uiAmountString"], "4.56");
    assert_eq!(post[0]["uiTokenAmount"]["uiAmount"], 4.56);
    let balance = rpc.get_token_account_balance(&ata_2022).await.unwrap();
    assert_eq!((balance.amount.as_str(), balance.decimals, balance.ui_amount_string.as_str()), ("456", 2, "4.56"));
    let listed = rpc.get_token_accounts_by_owner(&wallet.pubkey(), TokenAccountsFilter::ProgramId(token_2022)).await.unwrap();
    assert_eq!(listed.iter().map(|a| a.pubkey.as_str()).collect::<Vec<_>>(), [ata_2022.to_string()]);
    let parsed = serde_json::to_value(&listed[0].account.data).unwrap();
    assert_eq!(parsed["program"], "spl-token-2022", "{parsed}");
    assert_eq!(parsed["parsed"]["info"]["tokenAmount"]["uiAmountString"], "4.56", "{parsed}");
    let by_mint = rpc.get_token_accounts_by_owner(&wallet.pubkey(), TokenAccountsFilter::Mint(mint_2022.pubkey())).await.unwrap();
    assert_eq!(by_mint.len(), 1);
    // What is no mint, or no account, is refused with a node's words.
    let refusal = |e: solana_rpc_client_api::client_error::Error| e.to_string();
    let not_mint = rpc.get_token_accounts_by_owner(&wallet.pubkey(), TokenAccountsFilter::Mint(wallet.pubkey())).await.unwrap_err();
    assert!(refusal(not_mint).contains("Invalid param: not a Token mint"));
    let no_mint = rpc.get_token_accounts_by_owner(&wallet.pubkey(), TokenAccountsFilter::Mint(Pubkey::new_unique())).await.unwrap_err();
    assert!(refusal(no_mint).contains("Invalid param: could not find mint"));
    let no_account = rpc.get_token_account_balance(&Pubkey::new_unique()).await.unwrap_err();
    assert!(refusal(no_account).contains("Invalid param: could not find account"));

    // A transaction that fails in simulation names the program's error.
    let transfer_too_much = system_instruction::transfer(&wallet.pubkey(), &Pubkey::new_unique(), 100_000_000_000);
    let failing = rpc.simulate_transaction(&signed(&rpc, &[transfer_too_much], &wallet, &[]).await).await.unwrap().value;
    assert!(failing.err.is_some(), "{failing:?}");
}

/// Batches: an array of requests answered by an array, in order; limits on its size.
#[sqlx::test(migrations = "../migrations")]
async fn batches_are_answered_in_order(db: PgPool) {
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams::default()).await.unwrap();
    let url = node(chain).await;
    let http = reqwest::Client::new();
    let post = |body: Value| {
        let (http, url) = (http.clone(), url.clone());
        async move { http.post(&url).json(&body).send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "getBlockHeight"},
        {"jsonrpc": "2.0", "id": "two", "method": "getVersion"},
        {"jsonrpc": "2.0", "id": 3, "method": "noSuchMethod"},
        {"jsonrpc": "2.0", "id": 4, "method": "getMinimumBalanceForRentExemption", "params": [0]},
    ]);
    let answers = post(batch).await;
    let answers = answers.as_array().expect("an array");
    assert_eq!(answers.len(), 4);
    assert!(answers[0]["result"].as_u64().is_some());
    assert_eq!((answers[1]["id"].as_str(), answers[1]["result"]["solana-core"].as_str()), (Some("two"), Some("4.0.0")));
    assert!(answers[1]["result"]["feature-set"].is_u64(), "{}", answers[1]);
    assert_eq!(answers[2]["error"]["code"], -32601);
    assert_eq!(answers[3]["result"], 890_880);
    let too_many: Vec<Value> = (0..101).map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "getSlot"})).collect();
    assert_eq!(post(Value::Array(too_many)).await["error"]["code"], -32600);
    assert_eq!(post(json!([])).await["error"]["code"], -32600);
}
