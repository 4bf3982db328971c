// The program driven through JSON-RPC with the Anchor TypeScript client's defaults: `.rpc()`
// (which confirms over the PubSub WebSocket), `.simulate()`, `account.*.all()` — every
// instruction, the program's refusals with their Anchor error codes, the events decoded
// from the inner instructions `emit_cpi!` leaves, and a buy's logs line by line as the runtime
// writes them for the program's SBF binary.
//
// Runs under `anchor test` (a fresh solana-test-validator: the suite makes a mint and
// initializes the config with the deployer's wallet) and under scripts/anchor-ts.sh against the
// embedded chain (config made at genesis; the script hands over its role keys in
// FM_KEYS_DIR, and the suite checks a second initialize is refused).

import * as anchor from "@anchor-lang/core";
import { BN } from "@anchor-lang/core";
import { TOKEN_PROGRAM_ID, createAssociatedTokenAccount, createMint, getAccount, mintTo } from "@solana/spl-token";
import { Connection, Keypair, LAMPORTS_PER_SOL, ParsedAccountData, PublicKey, SystemProgram, TokenBalance } from "@solana/web3.js";
import { expect } from "chai";
import * as fs from "fs";
import * as path from "path";
import * as crypto from "crypto";
import idl from "../../idl/funding_market.json";
import type { FundingMarket } from "../../idl/funding_market";

const url = process.env.ANCHOR_PROVIDER_URL ?? "http://127.0.0.1:8899";
const connection = new Connection(url, "confirmed");
const payer = process.env.ANCHOR_WALLET ? readKeypair(process.env.ANCHOR_WALLET) : Keypair.generate();
const provider = new anchor.AnchorProvider(connection, new anchor.Wallet(payer), { commitment: "confirmed" });
anchor.setProvider(provider);
const program = new anchor.Program<FundingMarket>(idl as unknown as FundingMarket, provider);
const id = program.programId;

function readKeypair(file: string): Keypair {
  return Keypair.fromSecretKey(Uint8Array.from(JSON.parse(fs.readFileSync(file, "utf8"))));
}
const pda = (...seeds: (Buffer | Uint8Array)[]) => PublicKey.findProgramAddressSync(seeds, id)[0];
const configPda = pda(Buffer.from("config"));
const treasuryPda = pda(Buffer.from("treasury"));
const userPda = (w: PublicKey) => pda(Buffer.from("user"), w.toBuffer());
const depositPda = (w: PublicKey) => pda(Buffer.from("deposit"), w.toBuffer());
const vaultPda = (w: PublicKey) => pda(Buffer.from("vault"), w.toBuffer());
const marketPda = (marketId: Buffer) => pda(Buffer.from("market"), marketId);
const marketVaultPda = (m: PublicKey) => pda(Buffer.from("market_vault"), m.toBuffer());
const positionPda = (m: PublicKey, w: PublicKey) => pda(Buffer.from("position"), m.toBuffer(), w.toBuffer());

async function airdrop(to: PublicKey, sol = 10) {
  const signature = await connection.requestAirdrop(to, sol * LAMPORTS_PER_SOL);
  const latest = await connection.getLatestBlockhash();
  await connection.confirmTransaction({ signature, ...latest }, "confirmed");
}

/// The Anchor error a failed call carries (code and name), whichever way the client reports it.
async function refusal(call: Promise<unknown>): Promise<{ code: number; name: string }> {
  try {
    await call;
  } catch (e: any) {
    const parsed = anchor.AnchorError.parse(e.logs ?? e.simulationResponse?.logs ?? []);
    if (parsed) return { code: parsed.error.errorCode.number, name: parsed.error.errorCode.code };
    const text = String(e.message ?? e);
    const hex = /custom program error: (0x[0-9a-f]+)/i.exec(text);
    if (hex) {
      const code = parseInt(hex[1], 16);
      return { code, name: idl.errors.find((x) => x.code === code)?.name ?? "?" };
    }
    if (e.error?.errorCode) return { code: e.error.errorCode.number, name: e.error.errorCode.code };
    // The client's ProgramError (a custom error code the IDL names).
    if (typeof e.code === "number") return { code: e.code, name: idl.errors.find((x) => x.code === e.code)?.name ?? "?" };
    throw e;
  }
  throw new Error("the call was not refused");
}

/// The program's events in a landed transaction, decoded from its inner instructions with the
/// IDL (`emit_cpi!`: the event-instruction tag, then the event).
async function events(signature: string): Promise<{ name: string; data: any }[]> {
  const tx = await connection.getTransaction(signature, { commitment: "confirmed", maxSupportedTransactionVersion: 0 });
  const keys = tx!.transaction.message.staticAccountKeys;
  const out: { name: string; data: any }[] = [];
  for (const group of tx!.meta!.innerInstructions ?? []) {
    for (const ix of group.instructions) {
      if (!keys[ix.programIdIndex].equals(id)) continue;
      const data = anchor.utils.bytes.bs58.decode(ix.data);
      const event = program.coder.events.decode(Buffer.from(data.subarray(8)).toString("base64"));
      if (event) out.push(event);
    }
  }
  return out;
}

const USDC = 1_000_000;

describe("funding_market over RPC with the Anchor client", () => {
  let mint: PublicKey;
  let mintAuthority: Keypair;
  let authority: Keypair;
  let operator: Keypair;
  let oracle: Keypair;
  const trader = Keypair.generate();
  // The trader's own client: it pays and signs its trades, as a wallet app does.
  const traderProgram = new anchor.Program<FundingMarket>(idl as unknown as FundingMarket, new anchor.AnchorProvider(connection, new anchor.Wallet(trader), { commitment: "confirmed" }));
  const openId = crypto.randomBytes(16);
  const pastId = crypto.randomBytes(16);
  const voidId = crypto.randomBytes(16);

  before(async () => {
    await airdrop(payer.publicKey, 100);
    const existing = await connection.getAccountInfo(configPda);
    if (existing) {
      // The embedded chain: its config and roles were made at genesis.
      const dir = process.env.FM_KEYS_DIR!;
      expect(dir, "FM_KEYS_DIR names the chain's role keys").to.be.a("string");
      [mintAuthority, authority, operator, oracle] = ["mint_authority", "authority", "operator", "oracle"].map((r) => readKeypair(path.join(dir, `${r}.json`)));
      mint = (await program.account.config.fetch(configPda)).usdcMint;
    } else {
      // A fresh validator: a mint of our own and the config, initialized by the deployer.
      mintAuthority = payer;
      [authority, operator, oracle] = [Keypair.generate(), Keypair.generate(), Keypair.generate()];
      mint = await createMint(connection, payer, payer.publicKey, null, 6);
      const params = { authority: authority.publicKey, operator: operator.publicKey, oracle: oracle.publicKey, feeBps: 100, minDeposit: new BN(USDC), minTrade: new BN(USDC) };
      await program.methods.initialize(params).accountsPartial({ payer: payer.publicKey, upgradeAuthority: payer.publicKey, usdcMint: mint }).rpc();
      await mintTo(connection, payer, mint, treasuryPda, payer, 1_000_000 * USDC);
    }
    for (const k of [authority, operator, oracle, trader]) await airdrop(k.publicKey);
  });

  it("getVersion: web3.js reads the node's version and its numeric feature set", async () => {
    const version = await connection.getVersion();
    expect(version["solana-core"]).to.equal("4.0.0");
    expect(version["feature-set"]).to.be.a("number");
  });

  it("initialize: the config exists once, and a second initialize is refused", async () => {
    const config = await program.account.config.fetch(configPda);
    expect(config.usdcMint.toBase58()).to.equal(mint.toBase58());
    expect(config.oracle.toBase58()).to.equal(oracle.publicKey.toBase58());
    expect(config.feeBps).to.be.within(0, 10_000);
    const params = { authority: authority.publicKey, operator: operator.publicKey, oracle: oracle.publicKey, feeBps: 100, minDeposit: new BN(USDC), minTrade: new BN(USDC) };
    let refused = false;
    try {
      await program.methods.initialize(params).accountsPartial({ payer: payer.publicKey, upgradeAuthority: payer.publicKey, usdcMint: mint }).rpc();
    } catch {
      refused = true;
    }
    expect(refused).to.equal(true);
  });

  it("create_user and sweep_deposit: a deposit reaches the vault, with their events", async () => {
    const signature = await program.methods
      .createUser()
      .accountsPartial({ wallet: trader.publicKey, payer: trader.publicKey, usdcMint: mint, user: userPda(trader.publicKey), deposit: depositPda(trader.publicKey), vault: vaultPda(trader.publicKey) })
      .signers([trader])
      .rpc();
    expect((await events(signature)).map((e) => e.name)).to.deep.equal(["userCreated"]);
    await mintTo(connection, payer, mint, depositPda(trader.publicKey), mintAuthority, 500 * USDC);
    const swept = await program.methods
      .sweepDeposit()
      .accountsPartial({ user: userPda(trader.publicKey), deposit: depositPda(trader.publicKey), vault: vaultPda(trader.publicKey) })
      .rpc();
    const [event] = await events(swept);
    expect(event.name).to.equal("depositSwept");
    expect(event.data.amount.toNumber()).to.equal(500 * USDC);
    expect(Number((await getAccount(connection, vaultPda(trader.publicKey))).amount)).to.equal(500 * USDC);
    // web3.js's getParsedTransaction: the keys with their roles, the token transfer parsed, and
    // the vault's USDC before and after the sweep.
    const parsedTx = (await connection.getParsedTransaction(swept, { commitment: "confirmed", maxSupportedTransactionVersion: 0 }))!;
    const keys = parsedTx.transaction.message.accountKeys;
    expect([keys[0].signer, keys[0].writable]).to.deep.equal([true, true]);
    const vaultIndex = keys.findIndex((k) => k.pubkey.equals(vaultPda(trader.publicKey)));
    // (An empty account's amount in whole tokens is null, as a node's ledger gives it back.)
    const heldAt = (balances: TokenBalance[] | null | undefined) => {
      const amount = balances?.find((b) => b.accountIndex === vaultIndex)?.uiTokenAmount;
      return [amount?.amount, amount?.uiAmount];
    };
    expect([heldAt(parsedTx.meta!.preTokenBalances), heldAt(parsedTx.meta!.postTokenBalances)]).to.deep.equal([
      ["0", null],
      [String(500 * USDC), 500],
    ]);
    const inner = (parsedTx.meta!.innerInstructions ?? []).flatMap((group) => group.instructions);
    expect(inner.some((ix) => "parsed" in ix && ix.program === "spl-token" && ix.parsed.type === "transfer")).to.equal(true);
  });

  async function createMarket(marketId: Buffer, openTs: number, closeTs: number, settlementTs: number) {
    const market = marketPda(marketId);
    const params = { marketId: [...marketId], series: [...Buffer.alloc(32, 1)], openTs: new BN(openTs), closeTs: new BN(closeTs), settlementTs: new BN(settlementTs), b: new BN(100 * USDC), priorPpm: 500_000 };
    return program.methods
      .createMarket(params)
      .accountsPartial({ authority: authority.publicKey, payer: authority.publicKey, market, vault: marketVaultPda(market), treasury: treasuryPda, usdcMint: mint })
      .signers([authority])
      .rpc();
  }

  const trade = (marketId: Buffer, signer: Keypair) => {
    const market = marketPda(marketId);
    return {
      market,
      marketVault: marketVaultPda(market),
      user: userPda(trader.publicKey),
      userVault: vaultPda(trader.publicKey),
      position: positionPda(market, trader.publicKey),
      signer: signer.publicKey,
    };
  };

  it("create_market, then buy and sell through .simulate() and .rpc()", async () => {
    const now = Math.floor(Date.now() / 1000);
    const created = await createMarket(openId, now - 60, now + 3600, now + 7200);
    expect((await events(created)).map((e) => e.name)).to.include("marketCreated");
    const yes = { yes: {} };
    // .simulate() decodes the events it finds logged as `Program data:` (the trade's `emit!`),
    // from the runtime's logs of the program's SBF binary, checked here line by line.
    const simulated = await traderProgram.methods.buyShares(yes, new BN(10 * USDC), new BN(0)).accountsPartial(trade(openId, trader)).simulate();
    const simulatedTrade = simulated.events.find((e) => e.name === "tradeExecuted")!;
    expect(simulatedTrade.data.isBuy).to.equal(true);
    expect(simulatedTrade.data.amount.toNumber()).to.equal(10 * USDC);
    expect(simulatedTrade.data.wallet.toBase58()).to.equal(trader.publicKey.toBase58());
    const [self, token, system] = [id.toBase58(), TOKEN_PROGRAM_ID.toBase58(), SystemProgram.programId.toBase58()];
    const units = simulated.raw.map((line) => line.match(/^Program \w+ consumed (\d+) of (\d+) compute units$/)).filter((m) => m !== null);
    expect(simulated.raw.map((line) => line.replace(/consumed \d+ of \d+/, "consumed N of M").replace(/^Program data: [A-Za-z0-9+/=]+$/, "Program data: …"))).to.deep.equal([
      `Program ${self} invoke [1]`,
      "Program log: Instruction: BuyShares",
      `Program ${system} invoke [2]`,
      `Program ${system} success`,
      `Program ${token} invoke [2]`,
      `Program ${token} consumed N of M compute units`,
      `Program ${token} success`,
      "Program data: …",
      `Program ${self} invoke [2]`,
      `Program ${self} consumed N of M compute units`,
      `Program ${self} success`,
      `Program ${self} consumed N of M compute units`,
      `Program ${self} success`,
    ]);
    const whole = Number(units[units.length - 1]![1]);
    expect(whole).to.be.greaterThan(10_000).and.lessThan(200_000);
    const bought = await traderProgram.methods.buyShares(yes, new BN(10 * USDC), new BN(0)).accountsPartial(trade(openId, trader)).rpc();
    const executed = (await events(bought)).find((e) => e.name === "tradeExecuted")!;
    expect(executed.data.isBuy).to.equal(true);
    expect(executed.data.amount.toNumber()).to.equal(10 * USDC);
    expect(executed.data.wallet.toBase58()).to.equal(trader.publicKey.toBase58());
    expect(executed.data.yesPrice.toNumber() + executed.data.noPrice.toNumber()).to.equal(1_000_000);
    const position = await program.account.position.fetch(positionPda(marketPda(openId), trader.publicKey));
    expect(position.yesShares.toNumber()).to.be.greaterThan(10 * USDC);
    const half = position.yesShares.divn(2);
    await traderProgram.methods.sellShares(yes, half, new BN(0)).accountsPartial(trade(openId, trader)).rpc();
    const after = await program.account.position.fetch(positionPda(marketPda(openId), trader.publicKey));
    expect(after.yesShares.toString()).to.equal(position.yesShares.sub(half).toString());
  });

  it("account.*.all(): markets and positions, with memcmp filters", async () => {
    const markets = await program.account.market.all();
    expect(markets.map((m) => m.publicKey.toBase58())).to.include(marketPda(openId).toBase58());
    const mine = await program.account.position.all([{ memcmp: { offset: 8 + 32, bytes: trader.publicKey.toBase58() } }]);
    expect(mine.length).to.equal(1);
    expect(mine[0].account.market.toBase58()).to.equal(marketPda(openId).toBase58());
  });

  it("refusals carry the program's error codes", async () => {
    const tooSmall = traderProgram.methods.buyShares({ yes: {} }, new BN(1), new BN(0)).accountsPartial(trade(openId, trader)).rpc();
    expect(await refusal(tooSmall)).to.deep.equal({ code: 6008, name: "TradeTooSmall" });
    const slippage = traderProgram.methods.buyShares({ no: {} }, new BN(2 * USDC), new BN(1_000 * USDC)).accountsPartial(trade(openId, trader)).rpc();
    expect(await refusal(slippage)).to.deep.equal({ code: 6010, name: "SlippageExceeded" });
    const early = program.methods.resolveMarket(new BN(1)).accountsPartial({ oracle: oracle.publicKey, market: marketPda(openId), marketVault: marketVaultPda(marketPda(openId)), treasury: treasuryPda }).signers([oracle]).rpc();
    expect(await refusal(early)).to.deep.equal({ code: 6014, name: "TooEarly" });
    const stranger = Keypair.generate();
    await airdrop(stranger.publicKey, 1);
    const notOracle = program.methods.voidMarket().accountsPartial({ oracle: stranger.publicKey, market: marketPda(openId), marketVault: marketVaultPda(marketPda(openId)), treasury: treasuryPda }).signers([stranger]).rpc();
    expect((await refusal(notOracle)).name).to.equal("NotOracle");
  });

  it("resolve_market, settle_position, close_market and withdraw", async () => {
    const now = Math.floor(Date.now() / 1000);
    await createMarket(pastId, now - 7200, now - 3600, now - 60);
    // Trading has closed: the program says so.
    const closed = traderProgram.methods.buyShares({ yes: {} }, new BN(5 * USDC), new BN(0)).accountsPartial(trade(pastId, trader)).rpc();
    expect((await refusal(closed)).name).to.equal("MarketClosed");
    const market = marketPda(pastId);
    const finalize = { oracle: oracle.publicKey, market, marketVault: marketVaultPda(market), treasury: treasuryPda };
    const resolved = await program.methods.resolveMarket(new BN(250_000_000)).accountsPartial(finalize).signers([oracle]).rpc();
    const finalized = (await events(resolved)).find((e) => e.name === "marketFinalized")!;
    expect(finalized.data.actualRate.toNumber()).to.equal(250_000_000);
    expect((await program.account.market.fetch(market)).status).to.deep.equal({ resolved: {} });
    const closing = program.methods.closeMarket().accountsPartial({ authority: authority.publicKey, market, marketVault: marketVaultPda(market), treasury: treasuryPda }).signers([authority]).rpc();
    await closing;
    expect(await connection.getAccountInfo(market)).to.equal(null);

    // The open market, with the trader's position: voided after its settlement, refunded.
    const voidNow = Math.floor(Date.now() / 1000);
    await createMarket(voidId, voidNow - 120, voidNow - 61, voidNow + 300);
    const voided = await program.methods.voidMarket().accountsPartial({ oracle: oracle.publicKey, market: marketPda(openId), marketVault: marketVaultPda(marketPda(openId)), treasury: treasuryPda }).signers([oracle]).rpc();
    expect((await events(voided)).map((e) => e.name)).to.include("marketFinalized");
    const before = Number((await getAccount(connection, vaultPda(trader.publicKey))).amount);
    const settled = await program.methods
      .settlePosition()
      .accountsPartial({ market: marketPda(openId), marketVault: marketVaultPda(marketPda(openId)), position: positionPda(marketPda(openId), trader.publicKey), user: userPda(trader.publicKey), userVault: vaultPda(trader.publicKey), rentReceiver: trader.publicKey })
      .rpc();
    const payout = (await events(settled)).find((e) => e.name === "positionSettled")!;
    expect(Number((await getAccount(connection, vaultPda(trader.publicKey))).amount)).to.equal(before + payout.data.payout.toNumber());

    const destination = await createAssociatedTokenAccount(connection, payer, mint, trader.publicKey);
    const withdrawn = await traderProgram.methods
      .withdraw(new BN(25 * USDC))
      .accountsPartial({ user: userPda(trader.publicKey), vault: vaultPda(trader.publicKey), destination, signer: trader.publicKey })
      .rpc();
    expect((await events(withdrawn)).map((e) => e.name)).to.deep.equal(["withdrawn"]);
    expect(Number((await getAccount(connection, destination)).amount)).to.equal(25 * USDC);
    const overdraw = traderProgram.methods.withdraw(new BN(1_000_000 * USDC)).accountsPartial({ user: userPda(trader.publicKey), vault: vaultPda(trader.publicKey), destination, signer: trader.publicKey }).rpc();
    expect((await refusal(overdraw)).name).to.equal("InsufficientBalance");
    void SystemProgram;
  });

  it("jsonParsed: a wallet's USDC and the mint, as wallets list them", async () => {
    const parsed = (data: unknown) => (data as ParsedAccountData).parsed;
    const owned = await connection.getParsedTokenAccountsByOwner(trader.publicKey, { mint });
    expect(owned.value.length).to.equal(1);
    expect(owned.value[0].account.data.program).to.equal("spl-token");
    const info = owned.value[0].account.data.parsed.info;
    expect([info.mint, info.owner, info.state]).to.deep.equal([mint.toBase58(), trader.publicKey.toBase58(), "initialized"]);
    expect([info.tokenAmount.amount, info.tokenAmount.decimals, info.tokenAmount.uiAmountString]).to.deep.equal([String(25 * USDC), 6, "25"]);
    const theMint = (await connection.getParsedAccountInfo(mint)).value!;
    expect([parsed(theMint.data).type, parsed(theMint.data).info.decimals]).to.deep.equal(["mint", 6]);
    const both = await connection.getMultipleParsedAccounts([mint, owned.value[0].pubkey]);
    expect(both.value.map((a) => parsed(a!.data).type)).to.deep.equal(["mint", "account"]);
    const scanned = await connection.getParsedProgramAccounts(TOKEN_PROGRAM_ID, {
      filters: [{ dataSize: 165 }, { memcmp: { offset: 32, bytes: trader.publicKey.toBase58() } }],
    });
    expect(scanned.map((a) => parsed(a.account.data).info.tokenAmount.amount)).to.deep.equal([String(25 * USDC)]);
  });
});
