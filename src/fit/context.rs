//! Whether a job's prompts grow by its earlier answers (an agent loop's `context = "grows"`),
//! and each step's own new input once those answers are taken off.
//!
//! A world whose context grows sends at step k its own draw plus the outputs of the same call
//! at steps 0..k; a fit that took whole prompts as the draw would grow them twice. With job,
//! step and call ids and the earlier answers' output tokens, the log tells both apart: what is
//! left of a later prompt after its earlier answers looks like a first step's prompt when the
//! context grows, and the whole prompt does when it does not.

use std::collections::BTreeMap;

use super::input::{Log, NONE_ID, Request};
use super::stats;
use crate::request_log::EntryOutcome;

/// What the log says of prompt growth.
#[derive(Clone, Debug, PartialEq)]
pub struct Prompts {
    /// Every first attempt's prompt, whole.
    pub whole: Vec<f64>,
    /// First steps' prompts, then later steps' prompts less their earlier answers, where all of
    /// those are in the log.
    pub own: Vec<f64>,
    /// Median prompt of the first steps, of later steps, and of later steps less their earlier
    /// answers; `None` without later steps whose earlier answers are all logged.
    pub medians: Option<(f64, f64, f64)>,
}

impl Prompts {
    /// Whether the log shows a growing context: a later step's prompt less its earlier
    /// answers is nearer a first step's (on a log scale) than the whole prompt is.
    pub fn grows(&self) -> Option<bool> {
        let (first, later, left) = self.medians?;
        Some((left / first).ln().abs() < (later / first).ln().abs())
    }
}

/// A prompt that counts: a first attempt's, not a hedge copy's.
fn counted(r: &Request) -> bool {
    r.input.is_finite() && r.input >= 1.0 && (r.attempt == NONE_ID || r.attempt <= 1) && !r.hedge
}

/// The prompts of `log`, whole and less their earlier answers.
pub fn prompts(log: &Log) -> Prompts {
    let mut whole = Vec::new();
    let (mut first, mut later, mut left) = (Vec::new(), Vec::new(), Vec::new());
    for segment in &log.segments {
        // The answer of each (job, call, step), from its successful attempt.
        let answers: BTreeMap<(u64, u32, u32), f64> = segment
            .requests
            .iter()
            .filter(|r| {
                r.outcome == EntryOutcome::Ok
                    && r.output.is_finite()
                    && r.job != u64::MAX
                    && r.step != NONE_ID
            })
            .map(|r| ((r.job, r.call, r.step), r.output))
            .collect();
        for r in segment.requests.iter().filter(|r| counted(r)) {
            whole.push(r.input);
            if r.job == u64::MAX || r.step == NONE_ID {
                continue;
            }
            if r.step == 0 {
                first.push(r.input);
                continue;
            }
            let earlier: Option<f64> = (0..r.step)
                .map(|k| answers.get(&(r.job, r.call, k)).copied())
                .sum();
            if let Some(earlier) = earlier {
                later.push(r.input);
                left.push(r.input - earlier);
            }
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        stats::quantile(v, 0.5)
    };
    let usable = !first.is_empty() && left.len() >= 20;
    let medians = usable.then(|| {
        let mut positive: Vec<f64> = left.iter().copied().filter(|&x| x >= 1.0).collect();
        (
            median(&mut first),
            median(&mut later),
            median(&mut positive),
        )
    });
    let own = first
        .iter()
        .chain(&left)
        .copied()
        .filter(|&x| x >= 1.0)
        .collect();
    Prompts {
        whole,
        own,
        medians: medians.filter(|m| m.2.is_finite()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::input::log_of;

    /// Two jobs of four steps, each answer 100 tokens, each step's own input 1000 (+ job).
    fn log(grows: bool) -> Log {
        let mut text = String::new();
        for job in 0..8u64 {
            for step in 0..4u32 {
                let own = 1000.0 + 10.0 * job as f64 + f64::from(step);
                let input = own + if grows { 100.0 * f64::from(step) } else { 0.0 };
                let t = f64::from(step) + 10.0 * job as f64;
                text.push_str(&format!(
                    "{{\"start_s\":{t},\"end_s\":{},\"endpoint\":\"a\",\"outcome\":\"ok\",\"job\":{job},\"step\":{step},\"attempt\":1,\"call\":0,\"input_tokens\":{input},\"output_tokens\":100}}\n",
                    t + 0.5
                ));
            }
        }
        log_of(&text)
    }

    #[test]
    fn a_growing_context_is_told_from_a_fixed_one_and_its_own_inputs_recovered() {
        let grown = prompts(&log(true));
        assert_eq!(grown.grows(), Some(true));
        assert!(
            grown.own.iter().all(|&x| (1000.0..1100.0).contains(&x)),
            "{:?}",
            grown.own
        );
        assert_eq!(grown.own.len(), 32);
        let fixed = prompts(&log(false));
        assert_eq!(fixed.grows(), Some(false));
        assert_eq!(fixed.whole.len(), 32);
    }
}
