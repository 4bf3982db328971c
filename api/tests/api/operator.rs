//! `funding-admin` (the operator command) run as a process against an embedded chain started
//! without a config, over its JSON-RPC: keys made, the config initialized by the program's
//! upgrade authority, the treasury funded, the config shown, and markets resolved and voided by
//! hand with the oracle key — and the refusals an operator can meet on the way.

use std::path::{Path, PathBuf};

use anchor_lang::solana_program::program_pack::Pack;
use api::chain::money::{associated_token_account, create_associated_token_account};
use api::operator;
use axum::Json;
use axum::extract::State;
use axum::routing::post;
use chain_client::RpcChain;
use funding_market::client;
use funding_market::instructions::create_market::CreateMarketParams;
use funding_market::state::{Market, MarketStatus, Outcome};
use localnet::{EmbeddedChain, GenesisParams};
use serde_json::Value;
use solana_keypair::Keypair;
use solana_signer::Signer;
use sqlx::PgPool;
use uuid::Uuid;

use crate::helpers::*;

/// The chain's JSON-RPC on a port of its own, as a node serves it.
async fn node(chain: EmbeddedChain) -> String {
    async fn rpc(State(chain): State<EmbeddedChain>, Json(request): Json<Value>) -> Json<Value> {
        Json(chain.json_rpc(&request).await)
    }
    serve(axum::Router::new().route("/", post(rpc)).with_state(chain)).await.base
}

/// Runs `funding-admin args`: (succeeded, stdout, stderr).
async fn admin(args: &[&str]) -> (bool, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_funding-admin")).args(args).env_remove("FM_RPC_URL").output().await.unwrap();
    (out.status.success(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

fn write_keypair(dir: &Path, name: &str, key: &Keypair) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(&key.to_bytes().to_vec()).unwrap()).unwrap();
    path
}

async fn keygen(dir: &Path, name: &str) -> (PathBuf, String) {
    let path = dir.join(name);
    let (ok, out, err) = admin(&["keygen", "--outfile", path.to_str().unwrap()]).await;
    assert!(ok, "{err}");
    let pubkey = out.lines().find_map(|l| l.strip_prefix("pubkey: ")).unwrap().to_owned();
    (path, pubkey)
}

async fn market_on_chain(rpc: &RpcChain, id: Uuid) -> Market {
    let account = rpc.account(&client::market_pda(id.as_bytes()).to_string()).await.unwrap().unwrap();
    client::decode(&account.data).unwrap()
}

#[sqlx::test(migrator = "api::store::MIGRATOR")]
async fn an_operator_brings_a_fresh_deployment_into_service(db: PgPool) {
    let chain = EmbeddedChain::open(db.clone(), &GenesisParams { initialize_config: false, ..GenesisParams::default() }).await.unwrap();
    assert!(chain.account(&client::config_pda().to_string()).await.unwrap().is_none(), "started without a config");
    let url = node(chain.clone()).await;
    let rpc = RpcChain::new(&url, std::time::Duration::from_secs(10));
    let dir = &std::env::temp_dir().join(format!("funding-admin-{}", Uuid::new_v4()));
    std::fs::create_dir_all(dir).unwrap();

    // Keys: the service's three roles made by the command; the deployer is the chain's.
    let (authority_file, authority) = keygen(dir, "authority.json").await;
    let (operator_file, operator_key) = keygen(dir, "operator.json").await;
    let (oracle_file, oracle) = keygen(dir, "oracle.json").await;
    let (again, _, refused) = admin(&["keygen", "--outfile", authority_file.to_str().unwrap()]).await;
    assert!(!again && refused.contains("exists"), "a key file is never overwritten silently: {refused}");
    assert_eq!(admin(&["pubkey", oracle_file.to_str().unwrap()]).await.1.trim(), oracle);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&oracle_file).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let deployer = write_keypair(dir, "deployer.json", &chain.keys().authority);
    chain.airdrop(&chain.keys().authority.pubkey(), 10_000_000_000).await.unwrap();
    let mint = chain.mint().to_string();

    let (ok, _, err) = admin(&["show-config", "--url", &url]).await;
    assert!(!ok && err.contains("does not exist yet"), "{err}");

    // Only the upgrade authority may initialize.
    let (stranger_file, stranger) = keygen(dir, "stranger.json").await;
    chain.airdrop(&stranger.parse().unwrap(), 10_000_000_000).await.unwrap();
    let init = |upgrade_authority: PathBuf| {
        let (url, authority, operator_key, oracle, mint) = (url.clone(), authority.clone(), operator_key.clone(), oracle.clone(), mint.clone());
        async move {
            admin(&[
                "init",
                "--url",
                &url,
                "--upgrade-authority",
                upgrade_authority.to_str().unwrap(),
                "--authority",
                &authority,
                "--operator",
                &operator_key,
                "--oracle",
                &oracle,
                "--usdc-mint",
                &mint,
                "--fee-bps",
                "150",
                "--min-deposit",
                "2.5",
                "--min-trade",
                "1",
            ])
            .await
        }
    };
    let (ok, _, err) = init(stranger_file.clone()).await;
    assert!(!ok && err.contains("funding-admin:"), "{err}");
    assert!(chain.account(&client::config_pda().to_string()).await.unwrap().is_none());
    let (ok, out, err) = init(deployer.clone()).await;
    assert!(ok, "{err}");
    assert!(out.starts_with("config initialized: "), "{out}");
    let (ok, _, err) = init(deployer.clone()).await;
    assert!(!ok && err.contains("already exists"), "{err}");

    let shown: Value = serde_json::from_str(&admin(&["show-config", "--url", &url, "--json"]).await.1).unwrap();
    assert_eq!(shown["authority"], authority.as_str());
    assert_eq!(shown["operator"], operator_key.as_str());
    assert_eq!(shown["oracle"], oracle.as_str());
    assert_eq!(shown["usdc_mint"], mint.as_str());
    assert_eq!(shown["treasury"], client::treasury_pda().to_string());
    assert_eq!((shown["fee_bps"].as_u64(), shown["min_deposit"].as_str(), shown["min_trade"].as_str()), (Some(150), Some("2.500000"), Some("1.000000")));
    assert_eq!(shown["treasury_balance"], "0.000000");

    // Fund the treasury from a holder of USDC (its associated account).
    let funder = Keypair::new();
    let funder_file = write_keypair(dir, "funder.json", &funder);
    chain.airdrop(&funder.pubkey(), 1_000_000_000).await.unwrap();
    operator::send(&rpc, &funder, &[], &[create_associated_token_account(&funder.pubkey(), &funder.pubkey(), &chain.mint())]).await.unwrap();
    chain.mint_usdc(&associated_token_account(&funder.pubkey(), &chain.mint()), 1_000_000_000).await.unwrap();
    let (ok, _, err) = admin(&["fund-treasury", "--url", &url, "--from", funder_file.to_str().unwrap(), "--amount", "250.5"]).await;
    assert!(ok, "{err}");
    let (ok, _, err) = admin(&["fund-treasury", "--url", &url, "--from", funder_file.to_str().unwrap(), "--amount", "2000"]).await;
    assert!(!ok, "more than the account holds: {err}");
    let (ok, _, err) = admin(&["fund-treasury", "--url", &url, "--from", funder_file.to_str().unwrap(), "--amount", "1.0000001"]).await;
    assert!(!ok && err.contains("--amount"), "{err}");
    let shown: Value = serde_json::from_str(&admin(&["show-config", "--url", &url, "--json"]).await.1).unwrap();
    assert_eq!(shown["treasury_balance"], "250.500000");
    let treasury = chain.account(&client::treasury_pda().to_string()).await.unwrap().unwrap();
    assert_eq!(spl_token_interface::state::Account::unpack(&treasury.data).unwrap().amount, 250_500_000);

    // Two markets past their settlement time, created as the service would (authority signs).
    let authority_key = operator::read_keypair(&authority_file).unwrap();
    chain.airdrop(&authority_key.pubkey(), 1_000_000_000).await.unwrap();
    let now = chrono::Utc::now().timestamp();
    let (to_resolve, to_void) = (Uuid::new_v4(), Uuid::new_v4());
    for id in [to_resolve, to_void] {
        let params = CreateMarketParams {
            market_id: *id.as_bytes(),
            series: [0; 32],
            open_ts: now - 7200,
            close_ts: now - 3600,
            settlement_ts: now - 60,
            b: 10_000_000,
            prior_ppm: 500_000,
        };
        operator::send(&rpc, &authority_key, &[], &[client::create_market(authority_key.pubkey(), authority_key.pubkey(), chain.mint(), params)])
            .await
            .unwrap();
    }

    // By hand, with the oracle key: refused with another key, a bad rate, or twice.
    chain.airdrop(&oracle.parse().unwrap(), 1_000_000_000).await.unwrap();
    let id = to_resolve.to_string();
    let (ok, _, err) = admin(&["resolve", "--url", &url, "--oracle", operator_file.to_str().unwrap(), "--market", &id, "--rate", "0.0001"]).await;
    assert!(!ok && err.contains("the config's oracle is"), "{err}");
    let (ok, _, err) = admin(&["resolve", "--url", &url, "--oracle", oracle_file.to_str().unwrap(), "--market", &id, "--rate", "a lot"]).await;
    assert!(!ok && err.contains("not a funding rate"), "{err}");
    let (ok, out, err) = admin(&["resolve", "--url", &url, "--oracle", oracle_file.to_str().unwrap(), "--market", &id, "--rate", "-0.000025"]).await;
    assert!(ok, "{err}");
    assert!(out.contains("resolved at -0.00002500 (NO)"), "{out}");
    let market = market_on_chain(&rpc, to_resolve).await;
    assert_eq!((market.status, market.outcome, market.actual_rate), (MarketStatus::Resolved, Outcome::No, -25_000_000));
    let (ok, _, err) = admin(&["void", "--url", &url, "--oracle", oracle_file.to_str().unwrap(), "--market", &id]).await;
    assert!(!ok && err.contains("already Resolved"), "{err}");

    let (ok, out, err) = admin(&["void", "--url", &url, "--oracle", oracle_file.to_str().unwrap(), "--market", &to_void.to_string()]).await;
    assert!(ok && out.contains("voided"), "{out} {err}");
    assert_eq!(market_on_chain(&rpc, to_void).await.status, MarketStatus::Voided);
    let (ok, _, err) = admin(&["void", "--url", &url, "--oracle", oracle_file.to_str().unwrap(), "--market", &Uuid::new_v4().to_string()]).await;
    assert!(!ok && err.contains("has no account"), "{err}");
    let (ok, _, err) = admin(&["show-config", "--url", "localhost:8899"]).await;
    assert!(!ok && err.contains("not an http(s) URL"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}
