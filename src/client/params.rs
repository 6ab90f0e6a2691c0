//! Strategy parameters: how one is declared (for the schema, diagnostics, `simbench list` and
//! the docs) and the values a strategy is built with.
//!
//! Apart from the registry so that the strategies, which read their values, and the registry,
//! which lists the strategies, do not depend on each other.

/// One tunable parameter of a strategy, declared once here: the scenario schema, the
/// diagnostics, `simbench list` and the docs read it.
#[derive(Debug)]
pub struct ParamInfo {
    /// Key in `[algorithms.<name>]`.
    pub name: &'static str,
    /// Unit of the value (`s`, `ratio`, `count`, …).
    pub unit: &'static str,
    /// The reference's value (or the strategy author's, for new strategies).
    pub default: f64,
    /// Smallest allowed value.
    pub min: f64,
    /// Largest allowed value.
    pub max: f64,
    /// Whether the value must be a whole number.
    pub integer: bool,
    /// What it controls, in one sentence.
    pub meaning: &'static str,
}

/// Parameter values for one strategy, one per declared parameter, in declaration order.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    values: Vec<(&'static str, f64)>,
}

impl Params {
    /// The defaults `declared` by `strategy`, with `overrides` (name → value) applied.
    ///
    /// # Panics
    /// Panics on a name not declared or a value out of its range: the scenario compiler checks
    /// both first.
    pub fn new<'a>(
        strategy: &str,
        declared: &'static [ParamInfo],
        overrides: impl IntoIterator<Item = (&'a str, f64)>,
    ) -> Params {
        let mut values: Vec<(&'static str, f64)> =
            declared.iter().map(|p| (p.name, p.default)).collect();
        for (name, value) in overrides {
            let param = declared
                .iter()
                .find(|p| p.name == name)
                .unwrap_or_else(|| panic!("`{strategy}` has no parameter `{name}`"));
            assert!(
                (param.min..=param.max).contains(&value),
                "`{strategy}.{name}` = {value} is out of range"
            );
            let slot = values
                .iter_mut()
                .find(|(n, _)| *n == name)
                .expect("declared");
            slot.1 = value;
        }
        Params { values }
    }

    /// The value of parameter `name`.
    ///
    /// # Panics
    /// Panics if the strategy does not declare `name` (a bug in the strategy's constructor).
    pub fn get(&self, name: &str) -> f64 {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no parameter `{name}`"))
    }

    /// `(name, value)` in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        self.values.iter().copied()
    }
}
