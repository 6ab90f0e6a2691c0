//! The client side: the pool of resources with its circuit breaker, the retry policy and the
//! acquire strategies. It never sees the provider: a strategy is handed the pool, not the world.

pub mod budget;
pub mod limit;
pub mod params;
pub mod pool;
pub mod registry;
pub mod retry;
pub mod strategies;
pub mod strategy;
pub mod throttle;
