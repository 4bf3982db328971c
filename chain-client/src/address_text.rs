//! The base58 text of addresses, remembered process-wide. Encoding one takes about 2 µs (base58
//! is a long division of 32 bytes), and the same few addresses are written out again and again:
//! a catch-up batch names the same markets and wallets thousands of times, and each trade the
//! embedded chain lands writes out its dozen accounts (programs, the market and its vault, the
//! trader's accounts) several times — its ledger row's keys, signers and instructions, the
//! accounts it wrote and their owners, the sender's answer.

use anchor_lang::prelude::Pubkey;
use funding_market::client::Remembered;

/// How many addresses are remembered (about 1.5 MB); past it, the memory starts over.
const REMEMBERED: usize = 16_384;

static TEXT: Remembered<Pubkey, String> = Remembered::new(REMEMBERED);

/// `address.to_string()`, encoded once while remembered.
pub fn of(address: &Pubkey) -> String {
    TEXT.get_or_make(*address, Pubkey::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_text_is_the_address_encoding() {
        let addresses: Vec<Pubkey> = (0..3).map(|_| Pubkey::new_unique()).collect();
        for _ in 0..2 {
            for address in &addresses {
                assert_eq!(of(address), address.to_string());
            }
        }
        for _ in 0..=REMEMBERED {
            of(&Pubkey::new_unique());
        }
        assert_eq!(of(&addresses[0]), addresses[0].to_string());
        assert!(TEXT.len() <= REMEMBERED, "the memory starts over when full");
    }
}
