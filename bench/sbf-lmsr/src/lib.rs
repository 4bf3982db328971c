//! The LMSR math as a bare SBF program, to count its compute units on a real SBF VM.
//!
//! Instruction data: `op: u8` then `b, q_yes, q_no, x: u64` little-endian. Ops: 0 parses the
//! input and returns (the baseline), 1 buys YES for `x` micro-USDC, 2 sells `x` micro-shares
//! of YES, 3 prices YES. Returns 0 on success, so every result is used.
#![no_std]

use lmsr::{Lmsr, Side};
use solana_compiler_builtins as _;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}

fn u64_at(data: &[u8], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&data[at..at + 8]);
    u64::from_le_bytes(bytes)
}

/// # Safety
/// Called by the runtime with its serialized input: for an instruction with no accounts,
/// a u64 account count (0), a u64 data length, then the data.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn entrypoint(input: *mut u8) -> u64 {
    let data = unsafe {
        let len = core::ptr::read_unaligned(input.add(8) as *const u64) as usize;
        core::slice::from_raw_parts(input.add(16), len)
    };
    if data.len() < 33 {
        return 1;
    }
    let op = data[0];
    let (b, q_yes, q_no, x) = (u64_at(data, 1), u64_at(data, 9), u64_at(data, 17), u64_at(data, 25));
    if op == 0 {
        return (b == 0) as u64 * 7;
    }
    let Ok(market) = Lmsr::new(core::hint::black_box(b), q_yes, q_no) else { return 2 };
    let ok = match op {
        1 => market.buy(Side::Yes, x).is_ok_and(|f| f.amount_out > 0),
        2 => market.sell(Side::Yes, x).is_ok(),
        3 => market.price(Side::Yes).0 > 0,
        _ => false,
    };
    if ok { 0 } else { 3 }
}

// solana-compiler-builtins has the unsigned 128-bit division only; the signed ones are what
// compiler-builtins does everywhere: the unsigned division of the magnitudes, then the sign.
#[unsafe(no_mangle)]
pub extern "C" fn __divti3(a: i128, b: i128) -> i128 {
    let q = (a.unsigned_abs() / b.unsigned_abs()) as i128;
    if (a < 0) != (b < 0) { q.wrapping_neg() } else { q }
}

#[unsafe(no_mangle)]
pub extern "C" fn __modti3(a: i128, b: i128) -> i128 {
    let r = (a.unsigned_abs() % b.unsigned_abs()) as i128;
    if a < 0 { r.wrapping_neg() } else { r }
}
