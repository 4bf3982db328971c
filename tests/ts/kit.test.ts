// The same node through `@solana/kit` (web3.js 2+): its RPC and RPC-subscriptions clients
// validate every answer's shape, and its airdrop helper confirms through
// `signatureNotifications` on the PubSub socket.

import {
  address,
  airdropFactory,
  createSolanaRpc,
  createSolanaRpcSubscriptions,
  generateKeyPairSigner,
  lamports,
} from "@solana/kit";
import { expect } from "chai";

const http = process.env.ANCHOR_PROVIDER_URL ?? "http://127.0.0.1:8899";
// Where web3.js and kit's users look for PubSub: the RPC port + 1, same path.
const ws = (() => {
  const u = new URL(http);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  u.port = String(Number(u.port) + 1);
  return u.toString();
})();
const PROGRAM = address("98ey5bZy5fsSRR6XLhB8Yy3kUPpviZSDL9pq9oL14g7J");

describe("the node through @solana/kit", () => {
  const rpc = createSolanaRpc(http);
  const rpcSubscriptions = createSolanaRpcSubscriptions(ws);

  it("answers node facts in kit's shapes", async () => {
    const version = await rpc.getVersion().send();
    expect(version["solana-core"]).to.be.a("string");
    const epoch = await rpc.getEpochInfo().send();
    const height = await rpc.getBlockHeight().send();
    expect(epoch.blockHeight <= height).to.equal(true);
    const { value: latest } = await rpc.getLatestBlockhash().send();
    expect(latest.lastValidBlockHeight > height).to.equal(true);
    expect(await rpc.getMinimumBalanceForRentExemption(165n).send()).to.equal(2_039_280n);
    expect((await rpc.getGenesisHash().send()).length).to.be.greaterThan(30);
  });

  it("airdrops and confirms through signatureNotifications", async () => {
    const signer = await generateKeyPairSigner();
    const airdrop = airdropFactory({ rpc, rpcSubscriptions });
    await airdrop({ commitment: "confirmed", recipientAddress: signer.address, lamports: lamports(2_000_000_000n) });
    const { value } = await rpc.getBalance(signer.address, { commitment: "confirmed" }).send();
    expect(value).to.equal(2_000_000_000n);
  });

  it("scans the program's accounts and notifies slots", async () => {
    const accounts = await rpc.getProgramAccounts(PROGRAM, { encoding: "base64" }).send();
    expect(accounts.length).to.be.greaterThan(0);
    const abort = new AbortController();
    const slots = await rpcSubscriptions.slotNotifications().subscribe({ abortSignal: abort.signal });
    const signer = await generateKeyPairSigner();
    const airdrop = airdropFactory({ rpc, rpcSubscriptions });
    const landed = airdrop({ commitment: "confirmed", recipientAddress: signer.address, lamports: lamports(1_000_000_000n) });
    for await (const slot of slots) {
      expect(slot.slot >= slot.parent).to.equal(true);
      break;
    }
    await landed;
    abort.abort();
  });

  it("slots and blocks advance on the slot clock with nothing sent (slot >= block height), and a blockhash expires 150 blocks on", async () => {
    const abort = new AbortController();
    const slots = await rpcSubscriptions.slotNotifications().subscribe({ abortSignal: abort.signal });
    const seen: bigint[] = [];
    for await (const slot of slots) {
      seen.push(slot.slot);
      if (seen.length === 3) break;
    }
    abort.abort();
    expect(seen[0] < seen[1] && seen[1] < seen[2]).to.equal(true);
    const { value: latest } = await rpc.getLatestBlockhash().send();
    expect((await rpc.isBlockhashValid(latest.blockhash).send()).value).to.equal(true);
    for (;;) {
      const height = await rpc.getBlockHeight().send();
      const slot = await rpc.getSlot().send();
      expect(slot >= height, `slot ${slot} at block height ${height}`).to.equal(true);
      if (height > latest.lastValidBlockHeight) break;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    expect((await rpc.isBlockhashValid(latest.blockhash).send()).value).to.equal(false);
  });
});
