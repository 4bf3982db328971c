//! Series and rounds: definitions, the scheduler that creates rounds and moves their status
//! with the clock, and the queries the read endpoints use. No HTTP types here.

pub mod queries;
pub mod scheduler;
pub mod series;
pub mod settlement;
