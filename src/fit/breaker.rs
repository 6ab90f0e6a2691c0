//! The client's circuit breaker, which no log identifies.
//!
//! A breaker stops calling an endpoint after `degrade_after` failures in a row, for
//! `cooldown_s`. A log shows only what the client sent: a pause after failures may be a
//! breaker, a Retry-After slept or a backoff, and calls through a run of failures may be a
//! client without a breaker or one whose breaker falls back to a degraded endpoint when every
//! other is down (simbench's own does). So the fitted world states the default it assumes,
//! where the reader sees it, instead of leaving it implicit; `--client` replaces it with the
//! team's own.

use super::doc::Doc;
use crate::scenario::Breaker;

/// `[breaker]`: the defaults, marked as assumed.
pub fn write(doc: &mut Doc) {
    let default = Breaker::default();
    doc.table("[breaker]", "breaker", &[]);
    doc.assumed(
        "degrade_after",
        default.degrade_after.to_string(),
        "a log cannot tell the client's breaker from its retry waits; the defaults (the \
         official SDKs have none: set both thresholds to 1000000 for one of them)",
    );
    doc.assumed("dead_after", default.dead_after.to_string(), "the default");
    doc.assumed(
        "cooldown_s",
        format!("{:?}", default.cooldown_s),
        "the default",
    );
}
