//! Thresholds a CI job asserts on a report: `aimd.refusal_rate < 0.02` (the mean over seeds of
//! a metric of an algorithm) or `verdict == aimd` (the verdict's pick). Written in the world's
//! `[thresholds]` or given with `--assert`; judged by [`crate::report::gates`].

use crate::metrics::{CATALOGUE, Metric};

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Less,
    /// `<=`
    AtMost,
    /// `>`
    Greater,
    /// `>=`
    AtLeast,
    /// `==`
    Equal,
    /// `!=`
    NotEqual,
}

impl Op {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Less => "<",
            Op::AtMost => "<=",
            Op::Greater => ">",
            Op::AtLeast => ">=",
            Op::Equal => "==",
            Op::NotEqual => "!=",
        }
    }

    /// Whether `a OP b`.
    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Less => a < b,
            Op::AtMost => a <= b,
            Op::Greater => a > b,
            Op::AtLeast => a >= b,
            Op::Equal => a == b,
            Op::NotEqual => a != b,
        }
    }
}

/// A limit that says nothing about a run, because the metric cannot take the values that would
/// decide it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vain {
    /// No value the metric can take meets it.
    Never,
    /// Every value meets it, and the limit lies outside the metric's range (a limit at its
    /// edge, such as `refusal_rate <= 1`, reads as "no limit" on purpose and is let be).
    Always,
}

/// Whether `metric OP limit` is [`Vain`] over the metric's range.
pub fn vain(metric: Metric, op: Op, limit: f64) -> Option<Vain> {
    let (lo, hi) = metric.info().range;
    let (below, above) = (limit < lo, limit > hi);
    let never = match op {
        Op::Less => limit <= lo,
        Op::AtMost => below,
        Op::Greater => limit >= hi,
        Op::AtLeast => above,
        Op::Equal => below || above,
        Op::NotEqual => false,
    };
    if never {
        Some(Vain::Never)
    } else {
        // Outside the range, every comparison that is not never met is always met.
        (below || above).then_some(Vain::Always)
    }
}

/// "`refusal_rate` is a share from 0 to 1, so `<= 5` always holds", for a limit [`vain`] finds.
pub fn describe_vain(metric: Metric, op: Op, limit: f64, vain: Vain) -> String {
    let info = metric.info();
    format!(
        "`{}` is {}, so `{} {limit}` {}",
        info.name,
        info.describe_range(),
        op.symbol(),
        match vain {
            Vain::Never => "never holds",
            Vain::Always => "always holds",
        }
    )
}

/// A hint for a share written as a percentage: "5 % is 0.05".
pub fn percent_hint(metric: Metric, limit: f64) -> Option<String> {
    (metric.info().range == (0.0, 1.0) && limit > 1.0 && limit <= 100.0)
        .then(|| format!("a share is a fraction: {limit} % is {}", limit / 100.0))
}

/// One assertion.
#[derive(Clone, Debug, PartialEq)]
pub enum Assertion {
    /// The mean over seeds of `metric` for `algorithm`, against `value`.
    Metric {
        /// Algorithm (or variant) name.
        algorithm: String,
        /// The metric.
        metric: Metric,
        /// How it compares.
        op: Op,
        /// The limit.
        value: f64,
    },
    /// The verdict's pick (`==`) is, or (`!=`) is not, `algorithm`.
    Verdict {
        /// `==` or `!=`.
        equal: bool,
        /// Algorithm name.
        algorithm: String,
    },
}

impl Assertion {
    /// Parses `aimd.refusal_rate < 0.02` or `verdict == aimd`.
    pub fn parse(text: &str) -> Result<Assertion, String> {
        let (at, op) = find_op(text).ok_or(
            "expected ALGORITHM.METRIC OP NUMBER (e.g. `aimd.refusal_rate < 0.02`) or \
             `verdict == ALGORITHM`; OP is one of <, <=, >, >=, ==, !=",
        )?;
        let left = text[..at].trim();
        let right = text[at + op.symbol().len()..].trim();
        if left == "verdict" {
            let equal = match op {
                Op::Equal => true,
                Op::NotEqual => false,
                _ => return Err("the verdict compares with == or != only".into()),
            };
            if right.is_empty() {
                return Err("no algorithm after the comparison".into());
            }
            return Ok(Assertion::Verdict {
                equal,
                algorithm: right.to_owned(),
            });
        }
        let (algorithm, name) = left
            .rsplit_once('.')
            .ok_or_else(|| format!("`{left}` is not ALGORITHM.METRIC"))?;
        let metric = Metric::from_name(name.trim()).ok_or_else(|| {
            format!(
                "unknown metric `{}`{}; `simbench list` shows the catalogue",
                name.trim(),
                suggest(name.trim())
            )
        })?;
        if metric == Metric::WallS {
            return Err(
                "`wall_s` is this machine's time, not the world's: a gate on it would pass or \
                 fail by machine and load, not by seeds; time runs with a benchmark instead"
                    .into(),
            );
        }
        let value = right
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("`{right}` is not a finite number"))?;
        if algorithm.trim().is_empty() {
            return Err("no algorithm before the metric".into());
        }
        Ok(Assertion::Metric {
            algorithm: algorithm.trim().to_owned(),
            metric,
            op,
            value,
        })
    }

    /// The algorithm it names.
    pub fn algorithm(&self) -> &str {
        match self {
            Assertion::Metric { algorithm, .. } | Assertion::Verdict { algorithm, .. } => algorithm,
        }
    }
}

/// The first operator in `text`, longest match first.
fn find_op(text: &str) -> Option<(usize, Op)> {
    let at = text.find(['<', '>', '=', '!'])?;
    let rest = &text[at..];
    let op = [
        ("<=", Op::AtMost),
        (">=", Op::AtLeast),
        ("==", Op::Equal),
        ("!=", Op::NotEqual),
        ("<", Op::Less),
        (">", Op::Greater),
    ]
    .into_iter()
    .find(|(s, _)| rest.starts_with(s))?;
    Some((at, op.1))
}

/// ` (did you mean `refusal_rate`?)` for a catalogue name close enough to be a typo of `name`
/// (the same measure as a scenario key's), else empty: `nope` is no typo of `cost`.
pub fn suggest(name: &str) -> String {
    crate::schema::did_you_mean(name, CATALOGUE.iter().map(|m| m.name))
        .map_or(String::new(), |n| format!(" (did you mean `{n}`?)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_outside_the_range_is_vain_and_one_at_its_edge_is_not() {
        let share = Metric::RefusalRate;
        assert_eq!(vain(share, Op::AtMost, 5.0), Some(Vain::Always));
        assert_eq!(vain(share, Op::AtMost, -0.1), Some(Vain::Never));
        assert_eq!(vain(share, Op::Less, 0.0), Some(Vain::Never));
        assert_eq!(vain(share, Op::AtMost, 0.0), None);
        assert_eq!(vain(share, Op::AtMost, 1.0), None, "no limit, on purpose");
        assert_eq!(vain(share, Op::Greater, 1.0), Some(Vain::Never));
        assert_eq!(vain(share, Op::AtLeast, 1.0), None);
        assert_eq!(vain(share, Op::Equal, 2.0), Some(Vain::Never));
        assert_eq!(vain(share, Op::NotEqual, 2.0), Some(Vain::Always));
        assert_eq!(vain(share, Op::NotEqual, 0.5), None);
        let inflation = Metric::AttemptInflation;
        assert_eq!(vain(inflation, Op::Less, 1.0), Some(Vain::Never));
        assert_eq!(vain(inflation, Op::AtLeast, 0.5), Some(Vain::Always));
        assert_eq!(vain(inflation, Op::AtMost, 1e12), None, "unbounded above");
        assert_eq!(vain(Metric::GoodputLostJobs, Op::Less, -1e9), None);
        assert_eq!(
            describe_vain(share, Op::AtMost, 5.0, Vain::Always),
            "`refusal_rate` is a share from 0 to 1, so `<= 5` always holds"
        );
        assert_eq!(
            percent_hint(share, 5.0).as_deref(),
            Some("a share is a fraction: 5 % is 0.05")
        );
        assert_eq!(percent_hint(Metric::Utilization, 5.0), None);
    }

    #[test]
    fn assertions_parse_metric_limits_and_verdicts() {
        assert_eq!(
            Assertion::parse("aimd.refusal_rate < 0.02"),
            Ok(Assertion::Metric {
                algorithm: "aimd".into(),
                metric: Metric::RefusalRate,
                op: Op::Less,
                value: 0.02
            })
        );
        assert_eq!(
            Assertion::parse("verdict==router"),
            Ok(Assertion::Verdict {
                equal: true,
                algorithm: "router".into()
            })
        );
        assert!(matches!(
            Assertion::parse("backoff_slow.jobs_done >= 2900"),
            Ok(Assertion::Metric {
                op: Op::AtLeast,
                ..
            })
        ));
        let typo = Assertion::parse("aimd.refusal_rat < 1").unwrap_err();
        assert!(typo.contains("did you mean `refusal_rate`"), "{typo}");
        let far = Assertion::parse("wait.nope > 1").unwrap_err();
        assert!(!far.contains("did you mean"), "{far}");
        assert!(Assertion::parse("verdict < aimd").is_err());
        assert!(Assertion::parse("aimd.jobs_done > lots").is_err());
        assert!(Assertion::parse("aimd jobs").is_err());
    }
}
