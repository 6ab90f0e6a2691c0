//! The acquire strategies, one per file, each named by its registry key.

pub mod aimd;
pub mod backoff;
pub mod budget_pacer;
pub mod failover;
pub mod gradient;
pub mod header_pacer;
pub mod hedged;
pub mod immediate;
pub mod least_busy;
pub mod p2c;
pub mod quota_aware;
pub mod retry_after_aware;
pub mod router;
pub mod sdk_retry;
pub mod sticky;
pub mod tenacity_exponential;
pub mod wait;
