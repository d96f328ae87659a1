//! The Nexmark benchmark's event generator as a source: [`NexmarkSource`] emits the records of
//! one table (`bid`, `auction` or `person`) of the generated auction-site event stream, either as
//! fast as possible or paced at a rate in events per second.
//!
//! Source: Tucker, Tufte, Papadimos, Maier, "NEXMark – A Benchmark for Queries over Data Streams"
//! (2002), and its reference generator as maintained in Apache Beam (`sdks/java/testing/nexmark`)
//! and the `nexmark/nexmark` Flink benchmark; see [`model`] for what is kept from it.

mod generator;
pub mod model;
mod price;
mod rng;
mod source;

use std::fmt;
use std::str::FromStr;

pub use model::{EventClock, NexmarkGenerator};
pub use source::{NexmarkSource, wait_until};

use crate::ConnectorError;

/// Event time of event 0: 2015-07-15T00:00:00Z (µs since the epoch), a fixed past instant so
/// every run of a seed yields the same event times (the reference generator's deterministic
/// mode).
pub const BASE_TIME: eddy_engine::Timestamp = eddy_engine::Timestamp(1_436_918_400_000_000);

/// Event-time rate when no `rate` is given: the reference configuration's default
/// `firstEventRate` of 10,000 events/s (one event every 100 µs of event time).
pub const DEFAULT_EVENT_RATE: f64 = 10_000.0;

/// One of the three Nexmark tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum NexmarkTable {
    /// Bids: 46 events in 50.
    #[default]
    Bid,
    /// New auctions: 3 events in 50.
    Auction,
    /// New people: 1 event in 50.
    Person,
}

impl NexmarkTable {
    /// The table's name as the pipeline file spells it: `bid`, `auction`, `person`.
    pub fn name(self) -> &'static str {
        match self {
            NexmarkTable::Bid => "bid",
            NexmarkTable::Auction => "auction",
            NexmarkTable::Person => "person",
        }
    }

    /// How many columns the table's records have ([`schema`]): bid 7, auction 10, person 8.
    pub fn columns(self) -> usize {
        match self {
            NexmarkTable::Bid => 7,
            NexmarkTable::Auction => 10,
            NexmarkTable::Person => 8,
        }
    }
}

impl fmt::Display for NexmarkTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for NexmarkTable {
    type Err = ConnectorError;

    /// Parses `bid`, `auction` or `person` (case-insensitive).
    fn from_str(s: &str) -> Result<NexmarkTable, ConnectorError> {
        match s.to_ascii_lowercase().as_str() {
            "bid" => Ok(NexmarkTable::Bid),
            "auction" => Ok(NexmarkTable::Auction),
            "person" => Ok(NexmarkTable::Person),
            _ => Err(ConnectorError::Config(format!(
                "nexmark table {s:?} is unknown; expected one of \"bid\", \"auction\", \"person\""
            ))),
        }
    }
}

/// The schema (Spark DDL) of a table's records, in the column order of PIPELINE.md and of the
/// records [`NexmarkSource`] emits. Timestamps are µs; prices in cents.
pub fn schema(table: NexmarkTable) -> &'static str {
    match table {
        NexmarkTable::Bid => {
            "auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, date_time TIMESTAMP, extra STRING"
        }
        NexmarkTable::Auction => {
            "id BIGINT, item_name STRING, description STRING, initial_bid BIGINT, reserve BIGINT, \
             date_time TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra STRING"
        }
        NexmarkTable::Person => {
            "id BIGINT, name STRING, email_address STRING, credit_card STRING, city STRING, state STRING, \
             date_time TIMESTAMP, extra STRING"
        }
    }
}

#[cfg(test)]
mod digest_tests;
#[cfg(test)]
mod tests;
