//! `[objective]`: the rules the schema cannot express (a constraint has one bound; every metric
//! it names applies to the world) and its compiled form ([`crate::objective`]).

use serde_json::Value;

use super::key;
use crate::diagnostics::Seg;
use crate::metrics::{Direction, Metric};
use crate::objective::{Bound, Constraint, Objective, Source};
use crate::scenario::objective as spec;
use crate::schema::{Problem, Target};
use crate::threshold::{self, Assertion, Op, Vain};
use crate::world::World;

/// The optimised metrics have a direction; each constraint gives exactly one of `max` and `min`.
pub(super) fn check(json: &Value, out: &mut Vec<Problem>) {
    check_directions(json, out);
    check_thresholds(json, out);
    check_repeated_ties(json, out);
    check_contradictions(json, out);
    check_vain_limits(json, out);
    let Some(constraints) = json
        .pointer("/objective/constraints")
        .and_then(Value::as_array)
    else {
        return;
    };
    for (i, constraint) in constraints.iter().enumerate() {
        let Some(table) = constraint.as_object() else {
            continue; // The schema reports it.
        };
        let path = vec![key("objective"), key("constraints"), Seg::Index(i)];
        let (max, min) = (table.contains_key("max"), table.contains_key("min"));
        let (message, label) = match (max, min) {
            (true, true) => ("a constraint gives both `max` and `min`", "two bounds"),
            (false, false) => ("a constraint needs `max` or `min`", "no bound"),
            _ => continue,
        };
        out.push(Problem {
            path,
            target: Target::Value,
            message: message.into(),
            label: label.into(),
            help: Some(
                "write one bound per constraint, e.g. `{ metric = \"refusal_rate\", max = 0.05 }`; \
                 for a range, write two constraints on the same metric"
                    .into(),
            ),
        });
    }
}

/// A tie-break listed twice is a slip: the second entry could never decide anything.
fn check_repeated_ties(json: &Value, out: &mut Vec<Problem>) {
    let Some(ties) = json
        .pointer("/objective/tie_break")
        .and_then(Value::as_array)
    else {
        return;
    };
    for (i, name) in ties.iter().enumerate() {
        let Some(name) = name.as_str() else {
            continue; // The schema reports it.
        };
        let Some(first) = ties[..i].iter().position(|n| n.as_str() == Some(name)) else {
            continue;
        };
        out.push(Problem {
            path: vec![key("objective"), key("tie_break"), Seg::Index(i)],
            target: Target::Value,
            message: format!("`{name}` is listed twice in `tie_break` (at [{first}] and [{i}])"),
            label: "repeated".into(),
            help: Some(
                "each tie-break decides once, in order: remove the repeat, or name another \
                 metric"
                    .into(),
            ),
        });
    }
}

/// Constraints on one metric whose lower bound exceeds its upper bound: no strategy could meet
/// them, so every verdict would be "none meets the constraints" for a reason in the file.
fn check_contradictions(json: &Value, out: &mut Vec<Problem>) {
    let Some(constraints) = json
        .pointer("/objective/constraints")
        .and_then(Value::as_array)
    else {
        return;
    };
    // Each constraint with exactly one bound: (index, metric, is max, limit).
    let bounds: Vec<(usize, &str, bool, f64)> = constraints
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let table = c.as_object()?;
            let metric = table.get("metric")?.as_str()?;
            match (table.get("max"), table.get("min")) {
                (Some(max), None) => Some((i, metric, true, max.as_f64()?)),
                (None, Some(min)) => Some((i, metric, false, min.as_f64()?)),
                _ => None, // `check` reports it.
            }
        })
        .collect();
    for (n, &(i, metric, is_max, limit)) in bounds.iter().enumerate() {
        // The earlier constraint on the same metric, the other way, that this one contradicts.
        let clash = bounds[..n].iter().find(|&&(_, m, other_max, other)| {
            m == metric && other_max != is_max && if is_max { limit < other } else { limit > other }
        });
        let Some(&(j, _, _, other)) = clash else {
            continue;
        };
        let (low, high) = if is_max {
            (other, limit)
        } else {
            (limit, other)
        };
        let bound = if is_max { "max" } else { "min" };
        out.push(Problem {
            path: vec![
                key("objective"),
                key("constraints"),
                Seg::Index(i),
                key(bound),
            ],
            target: Target::Value,
            message: format!(
                "`constraints[{j}]` and `constraints[{i}]` on `{metric}` contradict each other: \
                 its mean cannot be at least {low} and at most {high}"
            ),
            label: "contradicts an earlier constraint".into(),
            help: Some(format!(
                "no strategy could meet both, so none would ever be picked: fix one bound so \
                 that `min` ≤ `max` (`constraints[{j}]` says {} = {other})",
                if is_max { "min" } else { "max" }
            )),
        });
    }
}

/// A constraint or threshold whose limit lies where its metric never goes: one never met would
/// rule out every strategy (or fail every gate), one always met rules nothing out; the commonest
/// cause is a share written as a percentage (`max = 5` for 5 %).
fn check_vain_limits(json: &Value, out: &mut Vec<Problem>) {
    let constraints = json
        .pointer("/objective/constraints")
        .and_then(Value::as_array);
    for (i, constraint) in constraints.into_iter().flatten().enumerate() {
        let Some(table) = constraint.as_object() else {
            continue;
        };
        let Some(metric) = table
            .get("metric")
            .and_then(Value::as_str)
            .and_then(Metric::from_name)
        else {
            continue; // The schema reports it.
        };
        for (bound, op) in [("max", Op::AtMost), ("min", Op::AtLeast)] {
            let Some(limit) = table.get(bound).and_then(Value::as_f64) else {
                continue;
            };
            let Some(vain) = threshold::vain(metric, op, limit) else {
                continue;
            };
            let path = vec![
                key("objective"),
                key("constraints"),
                Seg::Index(i),
                key(bound),
            ];
            let why = match vain {
                Vain::Never => "no strategy could meet it, so the verdict would never pick one",
                Vain::Always => "it would rule no strategy out",
            };
            out.push(vain_problem(path, metric, op, limit, vain, why));
        }
    }
    let asserts = json.pointer("/thresholds/assert").and_then(Value::as_array);
    for (i, item) in asserts.into_iter().flatten().enumerate() {
        let Some(Ok(Assertion::Metric {
            metric, op, value, ..
        })) = item.as_str().map(Assertion::parse)
        else {
            continue; // `check_thresholds` reports what does not parse.
        };
        let Some(vain) = threshold::vain(metric, op, value) else {
            continue;
        };
        let why = match vain {
            Vain::Never => "this gate would fail on every run",
            Vain::Always => "this gate could never fail",
        };
        let path = vec![key("thresholds"), key("assert"), Seg::Index(i)];
        out.push(vain_problem(path, metric, op, value, vain, why));
    }
}

/// The problem of one [`check_vain_limits`] finding.
fn vain_problem(
    path: Vec<Seg>,
    metric: Metric,
    op: Op,
    limit: f64,
    vain: Vain,
    why: &str,
) -> Problem {
    let hint = threshold::percent_hint(metric, limit)
        .map(|h| format!("; {h}"))
        .unwrap_or_default();
    Problem {
        path,
        target: Target::Value,
        message: threshold::describe_vain(metric, op, limit, vain),
        label: match vain {
            Vain::Never => "never met",
            Vain::Always => "always met",
        }
        .into(),
        help: Some(format!(
            "{why}: write a limit within the metric's range (`simbench list` describes each \
             metric){hint}"
        )),
    }
}

/// Each `[thresholds]` assertion parses and names an algorithm the world can run.
fn check_thresholds(json: &Value, out: &mut Vec<Problem>) {
    let Some(list) = json.pointer("/thresholds/assert").and_then(Value::as_array) else {
        return;
    };
    let variants = json.get("algorithms").and_then(Value::as_object);
    for (i, item) in list.iter().enumerate() {
        let Some(text) = item.as_str() else {
            continue; // The schema reports it.
        };
        let path = vec![key("thresholds"), key("assert"), Seg::Index(i)];
        let problem = match Assertion::parse(text) {
            Err(reason) => Some((reason, "not an assertion")),
            Ok(a) => {
                let name = a.algorithm();
                let known = crate::client::registry::names().any(|n| n == name)
                    || variants.is_some_and(|v| v.contains_key(name));
                (!known).then(|| (format!("unknown algorithm `{name}`"), "unknown algorithm"))
            }
        };
        if let Some((message, label)) = problem {
            out.push(Problem {
                path,
                target: Target::Value,
                message,
                label: label.into(),
                help: Some(
                    "an assertion is `ALGORITHM.METRIC OP NUMBER` on the mean over seeds, e.g. \
                     \"aimd.refusal_rate < 0.02\", or `verdict == ALGORITHM`; algorithms are \
                     the registry's (`simbench list`) and the world's named variants"
                        .into(),
                ),
            });
        }
    }
}

/// The objective and its tie-breaks must say which way is better: a neutral metric does not.
fn check_directions(json: &Value, out: &mut Vec<Problem>) {
    let mut named: Vec<(Vec<Seg>, &str)> = Vec::new();
    if let Some(name) = json.pointer("/objective/metric").and_then(Value::as_str) {
        named.push((vec![key("objective"), key("metric")], name));
    }
    let ties = json
        .pointer("/objective/tie_break")
        .and_then(Value::as_array);
    for (i, name) in ties.into_iter().flatten().enumerate() {
        if let Some(name) = name.as_str() {
            named.push((
                vec![key("objective"), key("tie_break"), Seg::Index(i)],
                name,
            ));
        }
    }
    for (path, name) in named {
        let Some(metric) = Metric::from_name(name) else {
            continue; // The schema reports an unknown name.
        };
        if metric.info().direction != Direction::Neutral {
            continue;
        }
        out.push(Problem {
            path,
            target: Target::Value,
            message: format!("`{name}` is neutral: it has no better direction to optimise"),
            label: "neutral metric".into(),
            help: Some(format!(
                "neutral metrics are context only; optimise one with a direction (e.g. \
                 `jobs_done`, `throughput_rps`, `cost`), or limit `{name}` with a constraint \
                 (`constraints = [{{ metric = \"{name}\", max = … }}]`)"
            )),
        });
    }
}

/// Every metric the objective names must apply to the world: a verdict on `cost` in a world
/// without a price would rest on nothing.
pub(super) fn check_applies(world: &World, out: &mut Vec<Problem>) {
    let mut named: Vec<(Vec<Seg>, Metric)> = Vec::new();
    let constraints = world.objective.iter().flat_map(|o| o.constraints.iter());
    let tie_break = world.objective.iter().flat_map(|o| o.tie_break.iter());
    if let Some(objective) = &world.objective {
        named.push((vec![key("objective"), key("metric")], objective.metric));
    }
    for (i, c) in constraints.enumerate() {
        let path = vec![
            key("objective"),
            key("constraints"),
            Seg::Index(i),
            key("metric"),
        ];
        named.push((path, c.metric));
    }
    for (i, metric) in tie_break.enumerate() {
        named.push((
            vec![key("objective"), key("tie_break"), Seg::Index(i)],
            *metric,
        ));
    }
    let objective_metrics = named.len();
    // A gate on a metric the world does not measure could never be checked: refused as the
    // objective's metrics are (the CLI's `--assert` goes through [`inapplicable`] too).
    for (i, assertion) in world.thresholds.iter().enumerate() {
        if let Assertion::Metric { metric, .. } = assertion {
            named.push((
                vec![key("thresholds"), key("assert"), Seg::Index(i)],
                *metric,
            ));
        }
    }
    for (n, (path, metric)) in named.into_iter().enumerate() {
        let Some(message) = inapplicable(world, metric) else {
            continue;
        };
        let reader = if n < objective_metrics {
            "an objective"
        } else {
            "a threshold"
        };
        out.push(Problem {
            path,
            target: Target::Value,
            message,
            label: "not measured in this world".into(),
            help: Some(format!(
                "{reader} reads only what the world measures: add what the metric needs, \
                 or pick another metric (`simbench list` says what each needs)"
            )),
        });
    }
}

/// "`cost` does not apply to this world (no endpoint has a price)" when the world does not
/// measure `metric`.
pub fn inapplicable(world: &World, metric: Metric) -> Option<String> {
    let info = metric.info();
    let feature = info.needs.filter(|f| !world.has(*f))?;
    Some(format!(
        "`{}` does not apply to this world ({})",
        info.name,
        feature.absence()
    ))
}

/// `[objective]` with its names resolved (the schema admits only catalogue names);
/// `metric_written` when the file or an override wrote `metric`.
pub(super) fn build(o: &spec::Objective, metric_written: bool) -> Objective {
    let metric = |name: &str| Metric::from_name(name).expect("checked: a catalogue name");
    Objective {
        metric: metric(&o.metric),
        constraints: o
            .constraints
            .iter()
            .map(|c| Constraint {
                metric: metric(&c.metric),
                bound: match (c.max, c.min) {
                    (Some(max), _) => Bound::AtMost(max),
                    (None, Some(min)) => Bound::AtLeast(min),
                    (None, None) => unreachable!("checked: a constraint has a bound"),
                },
            })
            .collect(),
        tie_break: o.tie_break.iter().map(|n| metric(n)).collect(),
        confidence: o.confidence,
        source: Source::World,
        metric_written,
    }
}
