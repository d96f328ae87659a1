//! The fraud rules as a [`StatefulProcessor`], shared by the example and its tests.
//!
//! Per card, in the order its payments arrive:
//!
//! - a payment over [`LARGE`] whose event time is `t` raises an **alert** when, counting it, at
//!   least [`ALERTS_AT`] payments over [`LARGE`] of the card have event times in `(t - WITHIN, t]`;
//!   the row is `(card, "alert", t, that count)`;
//! - [`CLEAR_AFTER`] after the card's last payment (its event time + 10 minutes) its state is
//!   **cleared** by a timer, and a row `(card, "cleared", last + 10 minutes, payments since the
//!   card's state was last cleared)` is written. A payment that arrives at or after that instant
//!   before the timer has fired clears the state first, with the same row (in micro-batch mode
//!   the batch's payments are handled before its timers, as Spark does), so the output does not
//!   depend on when the clock or the watermark is read.
//!
//! The clearing timer follows processing time or event time, as the processor is built
//! ([`Fraud::new`]): processing time clears a card that goes quiet even when no other card pays
//! (the clock moves without input); event time clears it only as other cards' payments move
//! the watermark, but never early when payments arrive late.

use eddy::{Duration, KeyContext, Record, Schema, StatefulProcessor, TimeDomain, Timestamp, Value};

/// A payment over this amount is large.
pub const LARGE: f64 = 500.0;
/// This many large payments within [`WITHIN`] raise an alert.
pub const ALERTS_AT: usize = 3;
/// The span of event time the large payments of an alert fall in (half-open `(t - WITHIN, t]`).
pub const WITHIN: Duration = Duration(60_000_000);
/// How long after a card's last payment its state is cleared.
pub const CLEAR_AFTER: Duration = Duration(600_000_000);

/// The output columns, in order.
pub const OUTPUT: &str = "card STRING, event STRING, at TIMESTAMP, payments BIGINT";

/// The fraud rules, reading the input columns `card`, `amount` (any number) and `ts`
/// (TIMESTAMP, the payment's event time) by name.
#[derive(Debug)]
pub struct Fraud {
    clear_on: TimeDomain,
    columns: Option<[usize; 3]>,
}

impl Fraud {
    /// Rules whose clearing timer follows `clear_on`.
    pub fn new(clear_on: TimeDomain) -> Fraud {
        Fraud { clear_on, columns: None }
    }

    /// Writes the key's "cleared" row and clears its state and timer.
    fn clear(ctx: &mut KeyContext<'_>, last: Timestamp) {
        let card = ctx.key().values().next().cloned().unwrap_or(Value::Null);
        let payments = ctx.get("payments").cloned().unwrap_or(Value::Long(0));
        ctx.emit(vec![card, Value::Str("cleared".into()), Value::Timestamp(clear_at(last)), payments]);
        ctx.clear_all();
    }
}

/// When the state of a card whose last payment was at `last` is cleared.
fn clear_at(last: Timestamp) -> Timestamp {
    Timestamp(last.0.saturating_add(CLEAR_AFTER.0))
}

impl StatefulProcessor for Fraud {
    fn init(&mut self, input: &Schema) {
        self.columns = match (input.resolve("card"), input.resolve("amount"), input.resolve("ts")) {
            (Some(c), Some(a), Some(t)) => Some([c, a, t]),
            _ => None,
        };
    }

    fn handle_input(&mut self, records: &[&Record], ctx: &mut KeyContext<'_>) {
        let Some([card, amount, ts]) = self.columns else { return };
        for r in records {
            let Some(t) = r.get(ts).as_timestamp() else { continue };
            if let Some(last) = ctx.get("last").and_then(Value::as_timestamp)
                && clear_at(last) <= t
            {
                Fraud::clear(ctx, last);
            }
            let payments = ctx.get("payments").and_then(Value::as_i64).unwrap_or(0) + 1;
            ctx.set("payments", Value::Long(payments), None);
            // the large payments' times within WITHIN of this one
            let mut large: Vec<Timestamp> = match ctx.get("large") {
                Some(Value::List(l)) => l.iter().filter_map(Value::as_timestamp).collect(),
                _ => Vec::new(),
            };
            large.retain(|&l| l.0 > t.0 - WITHIN.0);
            if r.get(amount).as_f64().is_some_and(|a| a > LARGE) {
                large.push(t);
                let n = large.iter().filter(|&&l| l <= t).count();
                if n >= ALERTS_AT {
                    let row = vec![
                        r.get(card).clone(),
                        Value::Str("alert".into()),
                        Value::Timestamp(t),
                        Value::Long(n as i64),
                    ];
                    ctx.emit(row);
                }
            }
            ctx.set("large", Value::List(large.into_iter().map(Value::Timestamp).collect()), None);
            // one timer per card, CLEAR_AFTER after its last payment
            let last = ctx.get("last").and_then(Value::as_timestamp).map_or(t, |l| l.max(t));
            for old in ctx.timers(self.clear_on) {
                ctx.delete_timer(self.clear_on, old);
            }
            ctx.set("last", Value::Timestamp(last), None);
            ctx.register_timer(self.clear_on, clear_at(last));
        }
    }

    fn handle_timer(&mut self, _domain: TimeDomain, _at: Timestamp, ctx: &mut KeyContext<'_>) {
        if let Some(last) = ctx.get("last").and_then(Value::as_timestamp) {
            Fraud::clear(ctx, last);
        }
    }
}
