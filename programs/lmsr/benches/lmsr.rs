//! Price, buy quote and sell quote: the crate's exact integer math beside a naive f64 version
//! of the same closed forms in the same run. `cargo bench -p lmsr`.
//! (The f64 versions exist only here, as a yardstick: nothing that moves money uses them.)

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use lmsr::{Lmsr, MICRO, Side};

/// A tier-2 market (b = 100 USDC) some way into trading.
fn market() -> Lmsr {
    Lmsr::new(100 * MICRO, 180 * MICRO, 95 * MICRO).unwrap()
}

mod naive {
    pub fn price_yes(b: f64, qy: f64, qn: f64) -> f64 {
        1.0 / (1.0 + ((qn - qy) / b).exp())
    }
    pub fn buy(b: f64, qy: f64, qn: f64, c: f64) -> f64 {
        let p = price_yes(b, qy, qn);
        b * (((c / b).exp() - 1.0 + p) / p).ln()
    }
    pub fn sell(b: f64, qy: f64, qn: f64, shares: f64) -> f64 {
        let p = price_yes(b, qy, qn);
        -b * (1.0 - p + p * (-shares / b).exp()).ln()
    }
}

fn bench(c: &mut Criterion) {
    let s = market();
    let (b, qy, qn) = (100.0, 180.0, 95.0);

    let mut g = c.benchmark_group("price");
    g.bench_function("exact", |x| x.iter(|| black_box(black_box(s).price(Side::Yes))));
    g.bench_function("f64", |x| x.iter(|| naive::price_yes(black_box(b), black_box(qy), black_box(qn))));
    g.finish();

    let mut g = c.benchmark_group("buy_quote");
    g.bench_function("exact", |x| x.iter(|| black_box(s).buy(Side::Yes, black_box(25 * MICRO))));
    g.bench_function("f64", |x| x.iter(|| naive::buy(black_box(b), black_box(qy), black_box(qn), black_box(25.0))));
    g.finish();

    let mut g = c.benchmark_group("sell_quote");
    g.bench_function("exact", |x| x.iter(|| black_box(s).sell(Side::Yes, black_box(40 * MICRO))));
    g.bench_function("f64", |x| x.iter(|| naive::sell(black_box(b), black_box(qy), black_box(qn), black_box(40.0))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
