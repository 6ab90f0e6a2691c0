//! The JSON Schema of scenario files and everything that joins it to the TOML source: generating
//! the schema from [`crate::scenario`], converting the parsed TOML tree to a JSON instance,
//! validating it, and mapping each violation back to a byte span with a message and a help line.
//!
//! The schema is the single statement of types, required keys and single-field ranges; the same
//! document is committed as `schema/scenario.schema.json` for editors. Cross-field rules live in
//! [`crate::compile`]. This module never builds a [`crate::world::World`] and never prints.

use std::num::IntErrorKind;
use std::sync::LazyLock;

use crate::compose::doc::{self, Node, Value as TomlValue};
use crate::diagnostics::{Finding, Seg, Source, finding, key_path};
use crate::scenario::Scenario;
use crate::text::plural;
use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use serde_json::{Map, Value, json};

/// The JSON Schema (draft 2020-12) of a scenario file, generated from the scenario types.
pub fn scenario_schema() -> Value {
    let mut schema = generated();
    layered(&mut schema);
    schema
}

/// The schema as schemars writes it from the types, tidied for TOML.
fn generated() -> Value {
    let schema = SchemaSettings::draft2020_12()
        .with_transform(RecursiveTransform(tidy))
        .into_generator()
        .into_root_schema_for::<Scenario>();
    serde_json::to_value(schema).expect("a generated schema is JSON")
}

/// A file that `extends` a base is a layer over it: any key the base sets may be left out. So
/// the keys a merge can fill (`name`, `summary` and `endpoints`; an endpoint's keys beside its
/// `id`, since endpoints merge by id; the keys of any table, since tables merge key by key) are
/// required only of a file without `extends`, in the schema's `else` branch. Arrays other than
/// `endpoints` are replaced whole, so their items keep their requirements. Editors then accept
/// a layer, and the loader, which validates the merged document without its `extends`, still
/// requires everything.
fn layered(schema: &mut Value) -> Relaxed {
    let mut seen = Relaxed::new();
    if let Some(strict) = relax(schema, "", &[], &mut seen) {
        if let Some(root) = schema.as_object_mut() {
            root.insert("if".into(), json!({ "required": ["extends"] }));
            root.insert("else".into(), strict);
        }
    }
    seen
}

/// The tables [`relax`] has visited, by the pointer of their definition: what moved out of
/// each (a definition used twice, as `tokens.input` and `tokens.output` use one, is relaxed
/// once) and how often the walk reached it.
type Relaxed = std::collections::BTreeMap<String, (Option<Value>, usize)>;

/// Moves the requirements of the table at `pointer` (but `keep`) and of the tables merged into
/// it into the returned tree, the shape of the `else` branch; `None` if nothing moved.
fn relax(schema: &mut Value, pointer: &str, keep: &[&str], seen: &mut Relaxed) -> Option<Value> {
    let target = definition(schema, pointer)?;
    if let Some((strict, visits)) = seen.get_mut(&target) {
        *visits += 1;
        return strict.clone();
    }
    seen.insert(target.clone(), (None, 1));
    let node = schema.pointer_mut(&target)?.as_object_mut()?;
    let mut strict = Map::new();
    if let Some(Value::Array(required)) = node.get_mut("required") {
        let (kept, moved): (Vec<Value>, Vec<Value>) = required
            .drain(..)
            .partition(|r| r.as_str().is_some_and(|r| keep.contains(&r)));
        *required = kept;
        if required.is_empty() {
            node.remove("required");
        }
        if !moved.is_empty() {
            strict.insert("required".into(), Value::Array(moved));
        }
    }
    let names: Vec<String> = node
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let mut properties = Map::new();
    for name in names {
        let at = format!(
            "{target}/properties/{}",
            name.replace('~', "~0").replace('/', "~1")
        );
        let inner = match (target.as_str(), name.as_str()) {
            ("", "endpoints") => relax(schema, &format!("{at}/items"), &["id"], seen)
                .map(|items| json!({ "items": items })),
            _ => relax(schema, &at, &[], seen),
        };
        if let Some(inner) = inner {
            properties.insert(name, inner);
        }
    }
    if !properties.is_empty() {
        strict.insert("properties".into(), Value::Object(properties));
    }
    let strict = (!strict.is_empty()).then_some(Value::Object(strict));
    if let Some(entry) = seen.get_mut(&target) {
        entry.0.clone_from(&strict);
    }
    strict
}

/// The pointer of the table schema at `pointer`, its `$ref`s followed; `None` if it is not a
/// table (an array, a scalar, a choice of shapes).
fn definition(schema: &Value, pointer: &str) -> Option<String> {
    let mut at = pointer.to_owned();
    for _ in 0..16 {
        let node = schema.pointer(&at)?;
        match node.get("$ref").and_then(Value::as_str) {
            Some(r) => at = r.strip_prefix('#')?.to_owned(),
            None => return node.get("properties").is_some().then_some(at),
        }
    }
    None
}

/// The schema as `simbench schema` prints it and `schema/scenario.schema.json` stores it.
pub fn scenario_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&scenario_schema()).unwrap_or_default();
    text.push('\n');
    text
}

/// The generated schema as committed in `schema/scenario.schema.json`, which the validator and
/// the diagnostics read: parsing it costs a tenth of generating it, at every start of the
/// program. `tests::the_embedded_schema_is_the_generated_one` (and the integration test of the
/// file) keep the two the same.
static SCHEMA: LazyLock<Value> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../schema/scenario.schema.json"))
        .expect("schema/scenario.schema.json is JSON")
});

/// The scenario validator, generated from the committed schema when simbench is built: at run
/// time nothing is compiled (compiling the schema and checking it against the draft's
/// meta-schema was most of the time it took to load a world).
#[jsonschema::validator(path = "schema/scenario.schema.json", draft = Draft202012)]
struct ScenarioValidator;

/// Adapts schemars' output to TOML, which has no null: `Option<T>` becomes plain `T` (so errors
/// inside an optional table are reported, not collapsed into "anyOf failed"), and unsigned
/// integers get the upper bound of their Rust type, so overflow is a schema error too.
fn tidy(schema: &mut schemars::Schema) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(branches)) = obj.get("anyOf") {
        let is_null = |b: &Value| b.get("type") == Some(&json!("null"));
        let kept: Vec<Value> = branches.iter().filter(|b| !is_null(b)).cloned().collect();
        if branches.len() == 2 && kept.len() == 1 {
            obj.remove("anyOf");
            if let Some(Value::Object(inner)) = kept.into_iter().next() {
                for (k, v) in inner {
                    obj.entry(k).or_insert(v);
                }
            }
        }
    }
    if let Some(Value::Array(types)) = obj.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            obj.insert("type".into(), only);
        }
    }
    if let Some(Value::String(d)) = obj.get_mut("description") {
        // Doc comments wrap at 100 columns; the schema keeps paragraphs, not line breaks.
        *d = d
            .split("\n\n")
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join("\n\n");
    }
    if obj.get("default") == Some(&Value::Null) {
        obj.remove("default");
    }
    let max = match obj.get("format").and_then(Value::as_str) {
        Some("uint32") => Some(json!(u32::MAX)),
        Some("uint64") => Some(json!(i64::MAX)),
        _ => None,
    };
    if let Some(max) = max {
        obj.entry("maximum").or_insert(max);
    }
}

// ---------------------------------------------------------------------------------------------
// Problems before they have a position.

/// A problem found in the scenario, addressed by key path; [`resolve`] turns it into a
/// [`Finding`] with a span.
#[derive(Clone, Debug)]
pub(crate) struct Problem {
    pub path: Vec<Seg>,
    pub target: Target,
    pub message: String,
    pub label: String,
    pub help: Option<String>,
}

/// Which part of the source a problem underlines.
#[derive(Clone, Debug)]
pub(crate) enum Target {
    /// The value at the path (or the nearest enclosing table if the key is absent).
    Value,
    /// The key at the end of the path.
    Key,
}

/// Gives a problem its source, span, line and column: the text that wrote the value (or key)
/// at its path.
pub(crate) fn resolve(root: &Node, sources: &[Source], problem: Problem) -> Finding {
    let located = doc::locate(root, &problem.path);
    let at = match problem.target {
        Target::Key => located.key.unwrap_or(located.value),
        Target::Value => located.value,
    };
    let fallback = Source::new(String::new(), String::new());
    let source = sources
        .get(at.source)
        .or(sources.first())
        .unwrap_or(&fallback);
    finding(
        source,
        at.span,
        &problem.path,
        problem.message,
        problem.label,
        problem.help,
    )
}

// ---------------------------------------------------------------------------------------------
// Looking things up in the schema.

/// What the schema says about one key.
pub(crate) struct FieldInfo<'s> {
    /// The key's schema with `$ref`s followed.
    pub schema: &'s Value,
    /// The key's description (from the property, or from the referenced type).
    pub description: Option<&'s str>,
}

fn deref(mut node: &Value) -> &Value {
    for _ in 0..16 {
        let Some(r) = node.get("$ref").and_then(Value::as_str) else {
            break;
        };
        match r.strip_prefix('#').and_then(|p| SCHEMA.pointer(p)) {
            Some(target) => node = target,
            None => break,
        }
    }
    node
}

/// The schema of the value at `path`, if the schema describes it.
pub(crate) fn field(path: &[Seg]) -> Option<FieldInfo<'static>> {
    let mut raw: &'static Value = &SCHEMA;
    for seg in path {
        let node = deref(raw);
        raw = match seg {
            Seg::Key(k) => match node.get("properties").and_then(|p| p.get(k)) {
                Some(p) => p,
                None => node.get("additionalProperties").filter(|a| a.is_object())?,
            },
            Seg::Index(_) => node.get("items")?,
        };
    }
    let schema = deref(raw);
    let description = raw
        .get("description")
        .or_else(|| schema.get("description"))
        .and_then(Value::as_str);
    Some(FieldInfo {
        schema,
        description,
    })
}

/// Where the schema wants an integer, as the paths [`field`] follows: `[]` is any array element,
/// `*` any key of a map. A float is rejected there with its own message; asking [`field`] at
/// every float would parse the embedded schema at every start of the program (a quarter of
/// loading a world). `tests::integer_paths_are_the_schemas` keeps the list the schema's.
const INTEGER_PATHS: &[&str] = &[
    "breaker.dead_after",
    "breaker.degrade_after",
    "calls_per_step",
    "concurrency",
    "endpoints.[].capacity",
    "endpoints.[].client_cap",
    "endpoints.[].rate_limit.per_window",
    "jobs",
    "load.max_in_flight",
    "retry.max_attempts",
    "seed",
    "steps_per_job",
    "tokens.max_tokens",
    "validity.knee_concurrency",
];

/// Whether the schema wants an integer at `path` (what [`field`] would say, without the schema).
fn wants_integer(path: &[Seg]) -> bool {
    INTEGER_PATHS.iter().any(|pattern| {
        let parts = pattern.split('.');
        parts.clone().count() == path.len()
            && parts.zip(path).all(|(part, seg)| match seg {
                Seg::Key(k) => part == "*" || part == k,
                Seg::Index(_) => part == "[]",
            })
    })
}

/// The keys the schema allows in the table at `path`, sorted.
pub(crate) fn known_keys(path: &[Seg]) -> Vec<&'static str> {
    field(path)
        .and_then(|i| i.schema.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// The first sentence of a description: up to the first full stop that ends one, not one of
/// an abbreviation (`e.g.`) or inside brackets or code.
pub(crate) fn first_sentence(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let ends = flat.match_indices(". ").map(|(i, _)| i).find(|&i| {
        let before = &flat[..i];
        let abbreviation = ["e.g", "i.e", "etc", "vs", "cf"]
            .iter()
            .any(|a| before.ends_with(a));
        let open = before.matches(['(', '[']).count() > before.matches([')', ']']).count();
        let code = before.matches('`').count() % 2 == 1;
        !(abbreviation || open || code)
    });
    match ends {
        Some(end) => flat[..=end].to_owned(),
        None => flat,
    }
}

/// How a help line names the key: its own name, or the full path for an array element.
fn subject(path: &[Seg]) -> String {
    match path.last() {
        Some(Seg::Index(_)) => key_path(path),
        _ => last_key(path),
    }
}

fn last_key(path: &[Seg]) -> String {
    match path.iter().rev().find_map(|s| match s {
        Seg::Key(k) => Some(k.clone()),
        Seg::Index(_) => None,
    }) {
        Some(k) => k,
        None => "value".to_owned(),
    }
}

/// The allowed range of a numeric field as a formula, e.g. `1 <= jobs <= 10000000`.
pub(crate) fn range_text(path: &[Seg]) -> Option<String> {
    let info = field(path)?;
    let s = info.schema;
    let name = last_key(path);
    let lower = s
        .get("exclusiveMinimum")
        .map(|v| (v, "<"))
        .or_else(|| s.get("minimum").map(|v| (v, "<=")));
    let upper = s
        .get("exclusiveMaximum")
        .map(|v| (v, "<"))
        .or_else(|| s.get("maximum").map(|v| (v, "<=")));
    match (lower, upper) {
        (Some((lo, lop)), Some((hi, hip))) => Some(format!("{lo} {lop} {name} {hip} {hi}")),
        (Some((lo, "<")), None) => Some(format!("{name} > {lo}")),
        (Some((lo, _)), None) => Some(format!("{name} >= {lo}")),
        (None, Some((hi, "<"))) => Some(format!("{name} < {hi}")),
        (None, Some((hi, _))) => Some(format!("{name} <= {hi}")),
        (None, None) => None,
    }
}

/// Top-level keys the reference names differently, with what to write instead: a spelling
/// suggestion would point the wrong way.
const REFERENCE_RENAMES: &[(&str, &str)] = &[(
    "pool",
    "the reference's `[pool]` table (degrade_after, dead_after, cooldown_s) is `[breaker]` \
     here; named pools of endpoints are `[[pools]]`",
)];

/// The closest candidate to `word`, if one is close enough to be a likely typo.
pub(crate) fn did_you_mean<'c>(
    word: &str,
    candidates: impl IntoIterator<Item = &'c str>,
) -> Option<&'c str> {
    candidates
        .into_iter()
        // Jaro-Winkler misses a swap in a short word ("dya" for "day"): one edit counts too.
        .map(|c| {
            let one_edit = if strsim::osa_distance(word, c) == 1 {
                0.85
            } else {
                0.0
            };
            (strsim::jaro_winkler(word, c).max(one_edit), c)
        })
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

fn backticked<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    items
        .into_iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn expected_type(schema: &Value) -> String {
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => "an integer".into(),
        Some("number") => "a number".into(),
        Some("string") => "a string".into(),
        Some("boolean") => "true or false".into(),
        Some("object") => "a table".into(),
        Some("array") => "an array".into(),
        _ => "another type".into(),
    }
}

/// A boolean or number as the text it was written as (near enough to quote back).
fn unquoted_text(value: &Value) -> Option<String> {
    match value {
        Value::Bool(_) | Value::Number(_) => Some(value.to_string()),
        _ => None,
    }
}

fn found_type(kind: Option<&str>) -> &'static str {
    match kind {
        Some("string") => "a string",
        Some("integer") => "an integer",
        Some("float") => "a float",
        Some("boolean") => "a boolean",
        Some("datetime") => "a date-time",
        Some("array") => "an array",
        Some("table") => "a table",
        _ => "something else",
    }
}

fn in_table(path: &[Seg]) -> String {
    if path.is_empty() {
        "at the top level".to_owned()
    } else {
        format!("in `{}`", key_path(path))
    }
}

// ---------------------------------------------------------------------------------------------
// TOML tree -> JSON instance.

/// The JSON instance of a parsed file, and the paths whose values could not be represented.
pub(crate) struct Instance {
    pub json: Value,
    /// Paths already reported (non-finite float, integer overflow, float for an integer key);
    /// schema errors at these paths are consequences and are dropped.
    pub reported: Vec<Vec<Seg>>,
    /// Whether the file `extends` a base: a missing key is then missing from the whole chain.
    pub layered: bool,
}

/// Converts the document to JSON, reporting what JSON or the schema's integer keys cannot hold.
pub(crate) fn to_json(root: &Node, problems: &mut Vec<Problem>) -> Instance {
    let mut ctx = Convert {
        problems,
        reported: Vec::new(),
        path: Vec::new(),
    };
    let mut json = ctx.value(&root.value);
    // The chain is followed and merged: the document is whole, and is checked as a file without
    // `extends`, of which the schema requires every key a base could have supplied.
    let layered = match &mut json {
        Value::Object(top) => top.remove("extends").is_some(),
        _ => false,
    };
    Instance {
        json,
        reported: ctx.reported,
        layered,
    }
}

/// Whether a float literal's digits before its exponent are all zero: a non-zero literal that
/// parses to 0 underflowed.
fn zero_digits(text: &str) -> bool {
    let mantissa = text.split(['e', 'E']).next().unwrap_or(text);
    !mantissa.contains(|c: char| ('1'..='9').contains(&c))
}

/// How TOML writes an integer of `radix`, as the parser's own display does.
fn radix_prefix(radix: u32) -> &'static str {
    match radix {
        2 => "0b",
        8 => "0o",
        16 => "0x",
        _ => "",
    }
}

struct Convert<'p> {
    problems: &'p mut Vec<Problem>,
    reported: Vec<Vec<Seg>>,
    path: Vec<Seg>,
}

impl Convert<'_> {
    fn value(&mut self, value: &TomlValue) -> Value {
        match value {
            TomlValue::String(s) => Value::String(s.clone()),
            TomlValue::Boolean(b) => Value::Bool(*b),
            TomlValue::Datetime(d) => self.datetime(&d.to_string()),
            TomlValue::Integer { text, radix } => match i64::from_str_radix(text, *radix) {
                Ok(n) => json!(n),
                Err(e)
                    if !matches!(
                        e.kind(),
                        IntErrorKind::PosOverflow | IntErrorKind::NegOverflow
                    ) =>
                {
                    self.reject(
                        format!(
                            "`{}` = {}{text} is not a valid integer",
                            self.here(),
                            radix_prefix(*radix)
                        ),
                        "invalid integer literal",
                        format!(
                            "write digits after the prefix, e.g. `0x1f`, or a decimal integer{}",
                            self.range_suffix()
                        ),
                    )
                }
                Err(_) => self.reject(
                    format!(
                        "`{}` = {}{text} does not fit in a 64-bit integer",
                        self.here(),
                        radix_prefix(*radix)
                    ),
                    "too large for a TOML integer",
                    format!(
                        "TOML integers lie between {} and {}{}",
                        i64::MIN,
                        i64::MAX,
                        self.range_suffix()
                    ),
                ),
            },
            TomlValue::Float(text) => self.float(text),
            TomlValue::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (n, item) in items.iter().enumerate() {
                    self.path.push(Seg::Index(n));
                    out.push(self.value(&item.value));
                    self.path.pop();
                }
                Value::Array(out)
            }
            TomlValue::Table(t) => {
                let mut out = Map::new();
                for entry in t.entries() {
                    self.path.push(Seg::Key(entry.key.clone()));
                    let v = self.value(&entry.node.value);
                    self.path.pop();
                    out.insert(entry.key.clone(), v);
                }
                Value::Object(out)
            }
        }
    }

    fn wants_string(&self) -> bool {
        field(&self.path).is_some_and(|f| f.schema.get("type") == Some(&json!("string")))
    }

    /// A date-time is a string to JSON, so the schema would accept one where a string belongs;
    /// there it is a forgotten pair of quotes. Elsewhere the schema reports the wrong type.
    fn datetime(&mut self, text: &str) -> Value {
        if !self.wants_string() {
            return Value::String(text.to_owned());
        }
        self.reject(
            format!("`{}` must be a string, found a date-time", self.here()),
            "expected a string",
            format!("string values must be quoted: write `\"{text}\"`"),
        )
    }

    fn float(&mut self, text: &str) -> Value {
        let parsed = text.parse::<f64>().ok().filter(|x| x.is_finite());
        let wants_integer = wants_integer(&self.path);
        match parsed {
            // `name = inf`: a word TOML reads as a number, where text belongs.
            None if self.wants_string() => self.reject(
                format!("`{}` must be a string, found {text}", self.here()),
                "expected a string",
                format!("string values must be quoted: write `\"{text}\"`"),
            ),
            None => self.reject(
                format!("`{}` = {text} is not a finite number", self.here()),
                "not a finite number",
                format!(
                    "TOML allows nan and inf, but every number in a scenario must be finite{}",
                    self.range_suffix()
                ),
            ),
            Some(x) if x == 0.0 && !zero_digits(text) => self.reject(
                format!(
                    "`{}` = {text} is too small for a 64-bit float: it would read as 0",
                    self.here()
                ),
                "below the smallest float",
                format!(
                    "numbers nearer 0 than about 5e-324 cannot be stored; write 0 if that is \
                     what you mean{}",
                    self.range_suffix()
                ),
            ),
            Some(_) if wants_integer => self.reject(
                format!(
                    "`{}` must be an integer, found a float ({text})",
                    self.here()
                ),
                "expected an integer",
                "write the number without a decimal point or exponent".to_owned(),
            ),
            Some(x) => serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number),
        }
    }

    fn here(&self) -> String {
        key_path(&self.path)
    }

    fn range_suffix(&self) -> String {
        match range_text(&self.path) {
            Some(r) => format!("; allowed range: {r}"),
            None => String::new(),
        }
    }

    fn reject(&mut self, message: String, label: &str, help: String) -> Value {
        self.problems.push(Problem {
            path: self.path.clone(),
            target: Target::Value,
            message,
            label: label.to_owned(),
            help: Some(help),
        });
        self.reported.push(self.path.clone());
        Value::Null
    }
}

// ---------------------------------------------------------------------------------------------
// Validation.

/// Validates the instance and maps every violation to a problem.
pub(crate) fn validate(root: &Node, instance: &Instance) -> Vec<Problem> {
    let mut problems = Vec::new();
    for error in ScenarioValidator::iter_errors(&instance.json) {
        let path = instance_path(&instance.json, error.instance_path().as_str());
        if instance.reported.iter().any(|r| path.starts_with(r)) {
            continue;
        }
        let found = doc::locate(root, &path).kind;
        map_error(&error, path, found, &mut problems);
    }
    if instance.layered {
        for problem in &mut problems {
            problem.label = chain_label(&problem.label);
        }
    }
    problems
}

/// A missing key's label for a file that `extends` a base: the key is missing from the file
/// and from every base, which merged into the document checked.
fn chain_label(label: &str) -> String {
    if let Some(rest) = label.strip_prefix("this file has no ") {
        format!("neither this file nor its bases have {rest}")
    } else if let Some(rest) = label.strip_prefix("this table has no ") {
        format!("this table has no {rest}, nor does a base")
    } else {
        label.to_owned()
    }
}

/// Splits an RFC 6901 pointer into key path steps, deciding key or index from the instance.
fn instance_path(json: &Value, pointer: &str) -> Vec<Seg> {
    let mut path = Vec::new();
    let mut node = Some(json);
    for raw in pointer.split('/').skip(1) {
        let seg = raw.replace("~1", "/").replace("~0", "~");
        let step = match (node, seg.parse::<usize>()) {
            (Some(Value::Array(items)), Ok(i)) => {
                node = items.get(i);
                Seg::Index(i)
            }
            (Some(Value::Object(map)), _) => {
                node = map.get(&seg);
                Seg::Key(seg)
            }
            _ => {
                node = None;
                Seg::Key(seg)
            }
        };
        path.push(step);
    }
    path
}

fn map_error(
    error: &jsonschema::ValidationError<'_>,
    path: Vec<Seg>,
    found: Option<&str>,
    out: &mut Vec<Problem>,
) {
    use jsonschema::error::ValidationErrorKind as K;
    let here = key_path(&path);
    let info = field(&path);
    let description = info
        .as_ref()
        .and_then(|i| i.description)
        .map(first_sentence);
    let problem = |message: String, label: String, help: Option<String>| Problem {
        path: path.clone(),
        target: Target::Value,
        message,
        label,
        help,
    };
    match error.kind() {
        K::Type { .. } => {
            let expected = info
                .as_ref()
                .map_or("another type".into(), |i| expected_type(i.schema));
            let found = found_type(found.or(json_kind(error.instance())));
            let mut help = description.map(|d| format!("`{}`: {d}", subject(&path)));
            if let Some(range) = range_text(&path) {
                help = Some(match help {
                    Some(h) => format!("{h} Allowed range: {range}."),
                    None => format!("allowed range: {range}"),
                });
            }
            // `True` or `"false"`: a boolean in another spelling, which TOML reads as text.
            let boolean = error
                .instance()
                .as_str()
                .and_then(|t| {
                    ["true", "false"]
                        .into_iter()
                        .find(|b| t.eq_ignore_ascii_case(b))
                })
                .filter(|_| expected.contains("true or false"));
            if let Some(b) = boolean {
                let write = format!("write `{b}`: TOML's booleans are lowercase, without quotes");
                help = Some(help.map_or(write.clone(), |h| format!("{write}; {h}")));
            }
            // `name = true` or `--set name=2`: text that TOML read as another type.
            if let Some(text) = unquoted_text(error.instance()).filter(|_| expected == "a string") {
                let write = format!("string values must be quoted: write `\"{text}\"`");
                help = Some(help.map_or(write.clone(), |h| format!("{write}; {h}")));
            }
            out.push(problem(
                format!("`{here}` must be {expected}, found {found}"),
                format!("expected {expected}"),
                help,
            ));
        }
        K::Minimum { .. }
        | K::Maximum { .. }
        | K::ExclusiveMinimum { .. }
        | K::ExclusiveMaximum { .. } => {
            let bound = match error.kind() {
                K::Minimum { limit } => format!("must be >= {limit}"),
                K::Maximum { limit } => format!("must be <= {limit}"),
                K::ExclusiveMinimum { limit } => format!("must be > {limit}"),
                K::ExclusiveMaximum { limit } => format!("must be < {limit}"),
                _ => String::new(),
            };
            out.push(problem(
                format!(
                    "`{here}` = {} is out of range",
                    shown_number(error.instance())
                ),
                bound,
                range_text(&path).map(|r| format!("allowed range: {r}")),
            ));
        }
        // A key outside `propertyNames`: the generated validator reports it as the enum's own
        // error at the table (not wrapped in a `propertyNames` error).
        K::Enum { .. } if names_a_key(error) => unknown_algorithm(error.instance(), &path, out),
        K::Enum { options } => {
            let choices: Vec<&str> = options
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            out.push(not_a_choice(&here, error.instance(), &choices, problem));
        }
        // An enum whose variants are documented is a `oneOf` of `const`s: the same error as a
        // plain `enum`, not the validator's "not valid under any of the schemas".
        K::OneOfNotValid { .. }
            if info
                .as_ref()
                .and_then(|i| const_choices(i.schema))
                .is_some() =>
        {
            let choices = info.as_ref().and_then(|i| const_choices(i.schema));
            out.push(not_a_choice(
                &here,
                error.instance(),
                &choices.unwrap_or_default(),
                problem,
            ));
        }
        K::AdditionalProperties { unexpected } => {
            let known: Vec<&str> = info
                .as_ref()
                .and_then(|i| i.schema.get("properties"))
                .and_then(Value::as_object)
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            for key in unexpected {
                let renamed = REFERENCE_RENAMES
                    .iter()
                    .find(|(old, _)| path.is_empty() && old == key);
                // A top-level key written below a table header belongs to that table.
                let misplaced = !path.is_empty() && field(&[Seg::Key(key.clone())]).is_some();
                let help = match (renamed, did_you_mean(key, known.iter().copied())) {
                    (Some((_, hint)), _) => (*hint).to_owned(),
                    _ if misplaced => format!(
                        "`{key}` is a top-level key: a key belongs to the table whose header is \
                         the last above it (here `{}`), so move it above the file's first \
                         `[…]` header",
                        key_path(&path)
                    ),
                    (None, Some(best)) => format!("did you mean `{best}`?"),
                    (None, None) => format!(
                        "valid keys {}: {}",
                        in_table(&path),
                        backticked(known.iter().copied())
                    ),
                };
                let mut at = path.clone();
                at.push(Seg::Key(key.clone()));
                out.push(Problem {
                    message: format!("unknown key `{key}` {}", in_table(&path)),
                    path: at,
                    target: Target::Key,
                    label: "unknown key".into(),
                    help: Some(help),
                });
            }
        }
        K::Required { property } => {
            let name = property.as_str().unwrap_or_default().to_owned();
            let mut at = path.clone();
            at.push(Seg::Key(name.clone()));
            let help = field(&at)
                .and_then(|i| i.description)
                .map(|d| format!("`{name}`: {}", first_sentence(d)));
            out.push(Problem {
                message: format!("missing required key `{}`", key_path(&at)),
                label: if path.is_empty() {
                    format!("this file has no `{name}`")
                } else {
                    format!("this table has no `{name}`")
                },
                path: at,
                target: Target::Value,
                help,
            });
        }
        K::MinItems { limit } => out.push(problem(
            format!(
                "`{here}` needs at least {}",
                plural(*limit as usize, "entry")
            ),
            match error.instance().as_array().map_or(0, Vec::len) {
                0 => "empty".into(),
                n => format!("only {}", plural(n, "entry")),
            },
            Some(if here == "endpoints" {
                "add an `[[endpoints]]` table with at least `id`, `capacity` and `latency`".into()
            } else {
                format!(
                    "give `{here}` at least {}",
                    plural(*limit as usize, "entry")
                )
            }),
        )),
        K::MaxItems { limit } => {
            let n = error.instance().as_array().map_or(0, Vec::len);
            let allowed = plural(*limit as usize, "entry");
            let help = match description {
                Some(d) => format!("`{}`: {d} At most {allowed}.", subject(&path)),
                None => format!("remove entries: at most {allowed}"),
            };
            out.push(problem(
                format!("`{here}` has {n} entries; at most {limit} are allowed"),
                format!("{n} entries"),
                Some(help),
            ));
        }
        K::MinLength { .. } => out.push(problem(
            format!("`{here}` must not be empty"),
            "empty string".into(),
            Some(description.map_or_else(
                || {
                    format!(
                        "write some text in `{}`, or leave the key out",
                        subject(&path)
                    )
                },
                |d| format!("`{}`: {d}", subject(&path)),
            )),
        )),
        // The validator's own words quote the value, which may be a table of 100,000 points.
        _ => out.push(problem(
            format!("`{here}`: {}", shortened(&error.to_string())),
            "invalid".into(),
            description,
        )),
    }
}

/// `text`, or its first 200 characters and how many more: a message stays a line or two.
fn shortened(text: &str) -> String {
    const SHOWN: usize = 200;
    match text.char_indices().nth(SHOWN) {
        None => text.to_owned(),
        Some((cut, _)) => format!(
            "{}… ({} more characters)",
            &text[..cut],
            text[cut..].chars().count()
        ),
    }
}

/// "not a valid choice", with the choices and the nearest one to what was given.
/// A value as JSON writes it, but an exponent as a file would write it (`1e300`, not
/// serde_json's `1e+300`).
fn shown_number(value: &Value) -> String {
    value.to_string().replacen("e+", "e", 1)
}

fn not_a_choice(
    here: &str,
    given: &Value,
    choices: &[&str],
    problem: impl Fn(String, String, Option<String>) -> Problem,
) -> Problem {
    let mut help = format!("valid choices: {}", backticked(choices.iter().copied()));
    let Some(text) = given.as_str() else {
        let found = found_type(json_kind(given));
        return problem(
            format!("`{here}` must be a string, found {found}"),
            "expected a string".into(),
            Some(help),
        );
    };
    if let Some(best) = did_you_mean(text, choices.iter().copied()) {
        help = format!("did you mean `{best}`? {help}");
    }
    problem(
        format!("`{here}` = {given} is not a valid choice"),
        "not a valid choice".into(),
        Some(help),
    )
}

/// The strings of a `oneOf` whose every branch is a string `const` (a documented enum).
fn const_choices(schema: &Value) -> Option<Vec<&str>> {
    let branches = schema.get("oneOf")?.as_array()?;
    branches
        .iter()
        .map(|b| b.get("const").and_then(Value::as_str))
        .collect()
}

/// Whether `error` is about a key's name (`propertyNames`), not a value.
fn names_a_key(error: &jsonschema::ValidationError<'_>) -> bool {
    error
        .schema_path()
        .as_str()
        .split('/')
        .any(|step| step == "propertyNames")
}

/// A key of the table at `path` (the only tables with `propertyNames` are keyed by algorithm)
/// that names no registered algorithm.
fn unknown_algorithm(key: &Value, path: &[Seg], out: &mut Vec<Problem>) {
    let name = key.as_str().unwrap_or_default().to_owned();
    let names: Vec<&str> = crate::client::registry::names().collect();
    let mut help = format!("known algorithms: {}", backticked(names.iter().copied()));
    if let Some(best) = did_you_mean(&name, names.iter().copied()) {
        help = format!("did you mean `{best}`? {help}");
    }
    let mut at = path.to_vec();
    at.push(Seg::Key(name.clone()));
    out.push(Problem {
        message: format!("unknown algorithm `{name}` {}", in_table(path)),
        path: at,
        target: Target::Key,
        label: "not a registered algorithm".into(),
        help: Some(help),
    });
}

fn json_kind(value: &Value) -> Option<&'static str> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "table",
    })
}

// ---------------------------------------------------------------------------------------------
// The reference tables of docs/scenario-format.md.

/// Markdown tables of every key (type, default, allowed values, meaning), generated from the
/// schema. `docs/scenario-format.md` embeds this text and a test keeps the two in sync.
pub fn reference_tables() -> String {
    let mut out = String::new();
    table_section(&mut out, "Top level", &[], &SCHEMA);
    out
}

/// One Markdown table per registered strategy that has parameters (name, unit, default,
/// range, meaning), generated from the registry. `docs/scenario-format.md` embeds this text
/// under `[algorithms]` and a test keeps the two in sync.
pub fn algorithm_tables() -> String {
    let mut out = String::new();
    for info in crate::client::registry::ALGORITHMS {
        if info.params.is_empty() {
            continue;
        }
        out.push_str(&format!("#### `[algorithms.{}]`\n\n", info.name));
        out.push_str("| key | unit | default | allowed | meaning |\n|---|---|---|---|---|\n");
        for p in info.params {
            let whole = if p.integer { ", whole" } else { "" };
            out.push_str(&format!(
                "| `{}` | {} | `{}` | `{} <= {} <= {}`{whole} | {} |\n",
                p.name,
                p.unit,
                p.default,
                p.min,
                p.name,
                p.max,
                p.meaning.replace('|', "\\|")
            ));
        }
        out.push('\n');
    }
    let bare: Vec<String> = crate::client::registry::ALGORITHMS
        .iter()
        .filter(|a| a.params.is_empty())
        .map(|a| format!("`{}`", a.name))
        .collect();
    if !bare.is_empty() {
        out.push_str(&format!("Without parameters: {}.\n", bare.join(", ")));
    }
    out
}

fn table_section(out: &mut String, title: &str, path: &[Seg], node: &Value) {
    let node = deref(node);
    let Some(props) = node.get("properties").and_then(Value::as_object) else {
        return;
    };
    // A file without `extends` must also write what the `else` branch requires here (see
    // [`layered`]): the table documents a whole file.
    let mut required = strings(node.get("required"));
    let strict = path.iter().try_fold(&SCHEMA["else"], |n, seg| match seg {
        Seg::Key(k) => n.get("properties")?.get(k),
        Seg::Index(_) => n.get("items"),
    });
    required.extend(strings(strict.and_then(|n| n.get("required"))));
    out.push_str(&format!("### {title}\n\n"));
    if let Some(d) = node.get("description").and_then(Value::as_str) {
        if !path.is_empty() {
            out.push_str(&format!("{}\n\n", d.replace('\n', " ")));
        }
    }
    out.push_str("| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n");
    let mut children = Vec::new();
    for (name, raw) in props {
        let mut at = path.to_vec();
        at.push(Seg::Key(name.clone()));
        let target = deref(raw);
        let description = raw
            .get("description")
            .or_else(|| target.get("description"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = type_cell(target);
        let default = match raw.get("default") {
            _ if required.contains(&name.as_str()) => "**required**".to_owned(),
            // A list of plain values reads well inline; tables are described below.
            Some(Value::Array(items)) if items.iter().all(|i| !i.is_object()) => {
                format!("`{}`", Value::Array(items.clone()))
            }
            Some(Value::Object(_)) | Some(Value::Array(_)) => "see below".to_owned(),
            Some(v) => format!("`{v}`"),
            None => "absent".to_owned(),
        };
        out.push_str(&format!(
            "| `{name}` | {kind} | {default} | {} | {} |\n",
            allowed_cell(&at, target),
            description.replace('|', "\\|").replace('\n', " ")
        ));
        let heading: Vec<Seg> = at
            .iter()
            .filter(|s| matches!(s, Seg::Key(_)))
            .cloned()
            .collect();
        if target.get("properties").is_some() {
            children.push((format!("[{}]", key_path(&heading)), at, target));
        } else if let Some(items) = target
            .get("items")
            .filter(|i| deref(i).get("properties").is_some())
        {
            let mut item = at;
            item.push(Seg::Index(0));
            children.push((format!("[[{}]]", key_path(&heading)), item, items));
        }
    }
    out.push('\n');
    for (title, at, child) in children {
        table_section(out, &title, &at, child);
    }
}

/// The strings of a JSON array (a `required` list), or none.
fn strings(list: Option<&Value>) -> Vec<&str> {
    list.and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A key's fixed values: an `enum`, or a `oneOf` of `const`s (an enum whose variants have doc
/// comments).
fn choices(schema: &Value) -> Option<Vec<Value>> {
    if let Some(list) = schema.get("enum").and_then(Value::as_array) {
        return Some(list.clone());
    }
    let variants = schema.get("oneOf")?.as_array()?;
    variants.iter().map(|v| v.get("const").cloned()).collect()
}

fn type_cell(schema: &Value) -> String {
    if choices(schema).is_some() {
        return "string".into();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") if schema.get("properties").is_some() => "table".into(),
        Some("object") => match schema.pointer("/additionalProperties/type") {
            Some(Value::String(t)) if t == "object" => "table of tables".into(),
            _ => "table of strings".into(),
        },
        Some("array") => {
            let items = schema.get("items");
            let kind = items.and_then(|i| i.get("type")).and_then(Value::as_str);
            match (kind, items.is_some_and(|i| choices(deref(i)).is_some())) {
                (Some("string"), _) | (_, true) => "array of strings".into(),
                (Some("number" | "integer"), _) => "array of numbers".into(),
                (Some("array"), _) => "array of arrays".into(),
                _ => "array of tables".into(),
            }
        }
        Some("number") => "number".into(),
        Some(other) => other.into(),
        None => "any".into(),
    }
}

fn allowed_cell(path: &[Seg], schema: &Value) -> String {
    let choices = choices(schema).or_else(|| choices(deref(schema.get("items")?)));
    if let Some(choices) = choices {
        let names: Vec<String> = choices.iter().map(|c| format!("`{c}`")).collect();
        return names.join(", ");
    }
    if let Some(range) = range_text(path) {
        return format!("`{range}`");
    }
    if schema.get("propertyNames").is_some() {
        return "keys: algorithm names".into();
    }
    if path == [Seg::Key("algorithms".into())] {
        return "keys: algorithm or variant names; see [algorithms]".into();
    }
    if schema.get("minLength").is_some() || schema.get("minItems").is_some() {
        return "not empty".into();
    }
    if schema.get("type").and_then(Value::as_str) == Some("number") {
        return "any finite number".into();
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_sentence_is_not_cut_at_an_abbreviation_or_inside_brackets() {
        assert_eq!(
            first_sentence("One limit, e.g. `{ unit = \"requests\" }`. More."),
            "One limit, e.g. `{ unit = \"requests\" }`."
        );
        assert_eq!(
            first_sentence("Assertions (e.g. `a.b > 1`; see the docs. Really). Then."),
            "Assertions (e.g. `a.b > 1`; see the docs. Really)."
        );
        assert_eq!(first_sentence("No stop at all"), "No stop at all");
    }

    /// A definition relaxed for layers must be used only where a merge fills it: reached by the
    /// walk as often as it is referenced at all.
    #[test]
    fn layers_relax_only_definitions_that_merges_fill() {
        let mut schema = generated();
        let text = schema.to_string();
        let seen = layered(&mut schema);
        let committed = schema.clone();
        assert!(
            layered(&mut schema).values().all(|(s, _)| s.is_none()),
            "relaxed twice"
        );
        let mut relaxed = 0;
        for (target, (strict, visits)) in &seen {
            if strict.is_some() && target.starts_with("/$defs/") {
                relaxed += 1;
                let reference = format!("\"$ref\":\"#{target}\"");
                assert_eq!(text.matches(&reference).count(), *visits, "{target}");
            }
        }
        assert!(relaxed >= 4, "{seen:?}");
        assert_eq!(committed["$defs"]["Endpoint"]["required"], json!(["id"]));
        assert_eq!(
            committed["$defs"]["Incident"]["required"],
            json!(["kind", "start_s"])
        );
    }

    #[test]
    fn the_embedded_schema_is_the_generated_one() {
        assert!(
            *SCHEMA == scenario_schema(),
            "schema/scenario.schema.json is stale; regenerate it with \
             `cargo run --release -- schema > schema/scenario.schema.json`"
        );
    }

    #[test]
    fn the_schema_is_a_valid_draft_2020_12_schema() {
        let checked = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&SCHEMA);
        assert!(checked.is_ok(), "{:?}", checked.err());
        let meta = jsonschema::meta::validate(&SCHEMA);
        assert!(meta.is_ok(), "{:?}", meta.err());
    }

    #[test]
    fn schema_compiles_and_has_no_null_branches() {
        let text = scenario_schema_text();
        assert!(!text.contains("\"null\""), "{text}");
        assert!(!ScenarioValidator::is_valid(&json!({"name": "x"})));
    }

    /// Every path [`field`] reaches (following `properties`, maps and arrays as it does) whose
    /// type is integer, as [`INTEGER_PATHS`] writes it.
    fn integer_paths(raw: &'static Value, path: &mut Vec<String>, out: &mut Vec<String>) {
        assert!(
            path.len() < 16,
            "the schema nests past 16 levels at {path:?}"
        );
        let node = deref(raw);
        if node.get("type") == Some(&json!("integer")) {
            out.push(path.join("."));
        }
        let props = node.get("properties").and_then(Value::as_object);
        let children = props
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v))
            .chain(
                node.get("additionalProperties")
                    .filter(|a| a.is_object())
                    .map(|a| ("*", a)),
            )
            .chain(node.get("items").map(|i| ("[]", i)));
        for (name, child) in children {
            path.push(name.to_owned());
            integer_paths(child, path, out);
            path.pop();
        }
    }

    #[test]
    fn integer_paths_are_the_schemas() {
        let mut found = Vec::new();
        integer_paths(&SCHEMA, &mut Vec::new(), &mut found);
        found.sort();
        assert_eq!(
            found, INTEGER_PATHS,
            "INTEGER_PATHS in src/schema.rs must list the schema's integer fields"
        );
        for pattern in INTEGER_PATHS {
            let path: Vec<Seg> = pattern
                .split('.')
                .map(|p| match p {
                    "[]" => Seg::Index(0),
                    k => Seg::Key(k.into()),
                })
                .collect();
            assert!(wants_integer(&path), "{pattern}");
            let mut other = path.clone();
            other.push(Seg::Key("x".into()));
            assert!(
                !wants_integer(&other) && !wants_integer(&path[1..]),
                "{pattern}"
            );
        }
    }

    #[test]
    fn field_lookup_follows_refs() {
        let path = [
            Seg::Key("endpoints".into()),
            Seg::Index(0),
            Seg::Key("latency".into()),
            Seg::Key("median_s".into()),
        ];
        assert_eq!(
            range_text(&path).as_deref(),
            Some("0 < median_s <= 1000000.0")
        );
        let jobs = [Seg::Key("jobs".into())];
        assert_eq!(range_text(&jobs).as_deref(), Some("1 <= jobs <= 10000000"));
    }

    #[test]
    fn near_misses_are_suggested() {
        assert_eq!(
            did_you_mean("median", ["median_s", "sigma"]),
            Some("median_s")
        );
        assert_eq!(did_you_mean("zzz", ["median_s", "sigma"]), None);
    }
}
