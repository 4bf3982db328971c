//! The newest part of the ledger, as this process wrote it, kept in memory: a listing that
//! starts inside it (the in-process indexer's, woken by every confirmation, asks for what
//! followed its cursor a moment ago) is answered without a query. The process holding
//! `SINGLE_WRITER_LOCK` is the ledger's only writer, so every row with a sequence above
//! `covers_after` is one it wrote and holds here; older listings read Postgres.

use std::collections::VecDeque;

use anchor_lang::prelude::Pubkey;

use chain_client::SignatureInfo;

/// How many of the newest ledger rows are kept: about half a kilobyte each (a signature and a
/// dozen keys), so 2 MB. A follower further behind than this reads Postgres, as it does after
/// a restart.
pub(super) const KEPT: usize = 4_096;

pub(super) struct RecentLedger {
    /// Every ledger row with a greater sequence is in `rows`.
    covers_after: i64,
    /// Sequence order, oldest first.
    rows: VecDeque<Row>,
    kept: usize,
}

struct Row {
    seq: i64,
    info: SignatureInfo,
    /// The message's account keys (what the by-account index holds for it).
    keys: Vec<Pubkey>,
}

impl RecentLedger {
    /// Nothing held yet; the ledger ends at `last_seq` (0 when empty).
    pub(super) fn after(last_seq: i64) -> RecentLedger {
        RecentLedger::keeping(KEPT, last_seq)
    }

    pub(super) fn keeping(kept: usize, last_seq: i64) -> RecentLedger {
        RecentLedger { covers_after: last_seq, rows: VecDeque::with_capacity(kept), kept }
    }

    /// A row just committed; rows come in sequence order.
    pub(super) fn push(&mut self, seq: i64, info: SignatureInfo, keys: Vec<Pubkey>) {
        debug_assert!(self.rows.back().map_or(self.covers_after, |row| row.seq) < seq, "ledger rows are kept in sequence order");
        if self.rows.len() == self.kept
            && let Some(oldest) = self.rows.pop_front()
        {
            self.covers_after = oldest.seq;
        }
        self.rows.push_back(Row { seq, info, keys });
    }

    /// Rows up to `seq` were committed without this memory learning their sequences (a write
    /// whose answer was lost): from here on only what follows `seq` is answered from memory.
    pub(super) fn forget_through(&mut self, seq: i64) {
        self.rows.clear();
        self.covers_after = self.covers_after.max(seq);
    }

    /// The sequence of a held signature (searched from the newest: a cursor is usually the
    /// end of the last listing).
    pub(super) fn seq_of(&self, signature: &str) -> Option<i64> {
        self.rows.iter().rev().find(|row| row.info.signature == signature).map(|row| row.seq)
    }

    /// The transactions after `cursor_seq` that name `address`, oldest first, or `None` when
    /// rows after it are no longer (or were never) held.
    pub(super) fn naming_after(&self, address: &Pubkey, cursor_seq: i64) -> Option<Vec<SignatureInfo>> {
        if cursor_seq < self.covers_after {
            return None;
        }
        let first = self.rows.partition_point(|row| row.seq <= cursor_seq);
        Some(self.rows.range(first..).filter(|row| row.keys.contains(address)).map(|row| row.info.clone()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(seq: i64) -> SignatureInfo {
        SignatureInfo { signature: format!("sig{seq}"), slot: seq as u64, failed: false, block_time: Some(seq) }
    }

    fn signatures(listed: Option<Vec<SignatureInfo>>) -> Option<Vec<String>> {
        listed.map(|infos| infos.into_iter().map(|info| info.signature).collect())
    }

    #[test]
    fn answers_only_what_it_holds_every_row_after() {
        let (program, other) = (Pubkey::new_unique(), Pubkey::new_unique());
        let mut recent = RecentLedger::keeping(3, 10);
        assert_eq!(signatures(recent.naming_after(&program, 10)), Some(vec![]), "nothing after the ledger's end");
        assert_eq!(recent.naming_after(&program, 9), None, "row 10 is Postgres's");
        // Sequences may skip (a failed write draws and loses some).
        recent.push(11, info(11), vec![program]);
        recent.push(14, info(14), vec![other]);
        recent.push(15, info(15), vec![other, program]);
        assert_eq!(signatures(recent.naming_after(&program, 10)), Some(vec!["sig11".into(), "sig15".into()]));
        assert_eq!(signatures(recent.naming_after(&program, 11)), Some(vec!["sig15".into()]));
        assert_eq!(signatures(recent.naming_after(&program, 12)), Some(vec!["sig15".into()]), "a cursor between held rows");
        assert_eq!(signatures(recent.naming_after(&other, 15)), Some(vec![]));
        assert_eq!(recent.seq_of("sig14"), Some(14));
        assert_eq!(recent.seq_of("sig10"), None);

        // The oldest goes when a fourth comes: the cursor it was is still answered (what
        // follows 11 is all held), the one before it no longer.
        recent.push(16, info(16), vec![program]);
        assert_eq!(signatures(recent.naming_after(&program, 11)), Some(vec!["sig15".into(), "sig16".into()]));
        assert_eq!(recent.naming_after(&program, 10), None);
        assert_eq!(recent.seq_of("sig11"), None);

        // Rows written through 20 that it never saw: only what follows 20 is answered.
        recent.forget_through(20);
        assert_eq!(recent.naming_after(&program, 16), None);
        assert_eq!(signatures(recent.naming_after(&program, 20)), Some(vec![]));
        recent.push(21, info(21), vec![program]);
        assert_eq!(signatures(recent.naming_after(&program, 20)), Some(vec!["sig21".into()]));
    }
}
