//! `funding-admin`: the operator's command for a deployed program (docs/operations.md, "Running on devnet").
//! Every subcommand that talks to a cluster takes `--url` (or `FM_RPC_URL`); keys are
//! solana-keygen JSON files. The work is in `api::operator`.

use std::path::PathBuf;
use std::process::ExitCode;

use api::domain::money::parse_micros;
use api::domain::rate::FundingRate;
use api::operator::{self, ConfigParams, Ending, OperatorError};
use chain_client::RpcChain;
use clap::{Args, Parser, Subcommand};
use solana_signer::Signer;
use uuid::Uuid;

#[derive(Parser)]
#[command(name = "funding-admin", version, about = "Operate the funding-market program on a Solana cluster")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct Cluster {
    /// The cluster's JSON-RPC endpoint (e.g. https://api.devnet.solana.com).
    #[arg(long, env = "FM_RPC_URL")]
    url: String,
}

#[derive(Subcommand)]
enum Command {
    /// Writes a new keypair file (solana-keygen's format) and prints its public key.
    Keygen {
        /// Where to write it.
        #[arg(long)]
        outfile: PathBuf,
        /// Replace an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Prints the public key of a keypair file.
    Pubkey { keypair: PathBuf },
    /// Creates the program's config and treasury (once, by the program's upgrade authority).
    Init {
        #[command(flatten)]
        cluster: Cluster,
        /// The program's upgrade authority (the key `anchor deploy` used).
        #[arg(long)]
        upgrade_authority: PathBuf,
        /// Pays the fees and the rent (default: the upgrade authority).
        #[arg(long)]
        payer: Option<PathBuf>,
        /// Co-signs market creation: the service's FM_AUTHORITY_KEYPAIR (its public key).
        #[arg(long)]
        authority: String,
        /// Acts for users in custodial trades and withdrawals: FM_OPERATOR_KEYPAIR's public key.
        #[arg(long)]
        operator: String,
        /// Resolves and voids markets: FM_ORACLE_KEYPAIR's public key.
        #[arg(long)]
        oracle: String,
        /// The USDC mint (devnet's: 4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU).
        #[arg(long)]
        usdc_mint: String,
        /// Trading fee in basis points (100 = 1 %).
        #[arg(long, default_value_t = 100)]
        fee_bps: u16,
        /// Smallest deposit swept into a vault, USDC.
        #[arg(long, default_value = "1.00")]
        min_deposit: String,
        /// Smallest trade, USDC.
        #[arg(long, default_value = "1.00")]
        min_trade: String,
    },
    /// Moves USDC into the treasury, which funds each new market's subsidy.
    FundTreasury {
        #[command(flatten)]
        cluster: Cluster,
        /// The owner of the USDC (signs the transfer).
        #[arg(long)]
        from: PathBuf,
        /// The token account to take it from (default: the owner's associated account).
        #[arg(long)]
        source: Option<String>,
        /// Pays the fee (default: the owner).
        #[arg(long)]
        payer: Option<PathBuf>,
        /// USDC, up to six decimals.
        #[arg(long)]
        amount: String,
    },
    /// Shows the program's config and the treasury's balance.
    ShowConfig {
        #[command(flatten)]
        cluster: Cluster,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Resolves an open market by hand at a funding rate (YES wins iff it is positive).
    Resolve {
        #[command(flatten)]
        by_hand: ByHand,
        /// The settled funding rate, a decimal (e.g. 0.0001 or -0.000025).
        #[arg(long, allow_hyphen_values = true)]
        rate: String,
    },
    /// Voids an open market by hand: every position is refunded at cost.
    Void {
        #[command(flatten)]
        by_hand: ByHand,
    },
}

/// Which market to end by hand, on which cluster, with which key.
#[derive(Args)]
struct ByHand {
    #[command(flatten)]
    cluster: Cluster,
    /// The config's oracle keypair.
    #[arg(long)]
    oracle: PathBuf,
    /// The market's id (the API's market id).
    #[arg(long)]
    market: Uuid,
}

/// Ends the market `by_hand` names as `ending` says; what the command prints.
async fn end_by_hand(by_hand: ByHand, ending: Ending) -> Result<String, OperatorError> {
    let ByHand { cluster, oracle, market } = by_hand;
    let oracle = operator::read_keypair(&oracle)?;
    let signature = operator::end_market(&rpc(&cluster)?, &oracle, market, ending).await?;
    Ok(format!("market {market} {}: {signature}", operator::describe(ending)))
}

fn rpc(cluster: &Cluster) -> Result<RpcChain, OperatorError> {
    if !(cluster.url.starts_with("http://") || cluster.url.starts_with("https://")) {
        return Err(OperatorError::Input(format!("--url {:?} is not an http(s) URL", cluster.url)));
    }
    Ok(RpcChain::new(&cluster.url, std::time::Duration::from_secs(30)))
}

fn usdc(what: &str, value: &str) -> Result<u64, OperatorError> {
    parse_micros(value).map_err(|e| OperatorError::Input(format!("{what} {e}")))
}

async fn run(command: Command) -> Result<String, OperatorError> {
    Ok(match command {
        Command::Keygen { outfile, force } => {
            let pubkey = operator::generate_keypair(&outfile, force)?;
            format!("wrote {}\npubkey: {pubkey}", outfile.display())
        }
        Command::Pubkey { keypair } => operator::read_keypair(&keypair)?.pubkey().to_string(),
        Command::Init { cluster, upgrade_authority, payer, authority, operator: operator_key, oracle, usdc_mint, fee_bps, min_deposit, min_trade } => {
            let upgrade_authority = operator::read_keypair(&upgrade_authority)?;
            let payer = payer.map(|p| operator::read_keypair(&p)).transpose()?;
            let params = ConfigParams {
                authority: operator::parse_pubkey("--authority", &authority)?,
                operator: operator::parse_pubkey("--operator", &operator_key)?,
                oracle: operator::parse_pubkey("--oracle", &oracle)?,
                usdc_mint: operator::parse_pubkey("--usdc-mint", &usdc_mint)?,
                fee_bps,
                min_deposit: usdc("--min-deposit", &min_deposit)?,
                min_trade: usdc("--min-trade", &min_trade)?,
            };
            let rpc = rpc(&cluster)?;
            let signature = operator::initialize(&rpc, payer.as_ref().unwrap_or(&upgrade_authority), &upgrade_authority, &params).await?;
            format!("config initialized: {signature}")
        }
        Command::FundTreasury { cluster, from, source, payer, amount } => {
            let owner = operator::read_keypair(&from)?;
            let payer = payer.map(|p| operator::read_keypair(&p)).transpose()?;
            let source = source.map(|s| operator::parse_pubkey("--source", &s)).transpose()?;
            let amount = usdc("--amount", &amount)?;
            let rpc = rpc(&cluster)?;
            let signature = operator::fund_treasury(&rpc, payer.as_ref().unwrap_or(&owner), &owner, source, amount).await?;
            format!("treasury funded: {signature}")
        }
        Command::ShowConfig { cluster, json } => {
            let view = operator::show_config(&rpc(&cluster)?).await?;
            if json {
                serde_json::to_string_pretty(&view).expect("the view serializes")
            } else {
                let v = view;
                format!(
                    "program:    {}\nconfig:     {}\nauthority:  {}\noperator:   {}\noracle:     {}\nusdc mint:  {}\ntreasury:   {} ({} USDC)\nfee:        {} bps\nmin deposit: {} USDC\nmin trade:  {} USDC",
                    v.program_id,
                    v.config,
                    v.authority,
                    v.operator,
                    v.oracle,
                    v.usdc_mint,
                    v.treasury,
                    v.treasury_balance,
                    v.fee_bps,
                    v.min_deposit,
                    v.min_trade
                )
            }
        }
        Command::Resolve { by_hand, rate } => {
            let rate = FundingRate::parse(&rate).map_err(|e| OperatorError::Input(e.to_string()))?;
            end_by_hand(by_hand, Ending::Resolve(rate)).await?
        }
        Command::Void { by_hand } => end_by_hand(by_hand, Ending::Void).await?,
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command).await {
        Ok(out) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("funding-admin: {e}");
            ExitCode::FAILURE
        }
    }
}
