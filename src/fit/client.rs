//! `--client WORLD.toml`: the client's side of the fitted world taken from the team's own
//! world file, since no request log holds it — the load it runs, its retry policy and
//! breaker, its named strategy variants, objective and gates, its pools and prices. The
//! provider's side still comes from the logs; where the logs also say something about a
//! client key (the jobs they ran, the attempts they made), the comment shows both.

/// Top-level keys that describe the client's load.
pub const TOP_KEYS: [&str; 6] = [
    "seed",
    "jobs",
    "concurrency",
    "horizon_s",
    "steps_per_job",
    "calls_per_step",
];

/// Whole tables that belong to the client, in the order they are written.
pub const TABLES: [&str; 9] = [
    "load",
    "retry",
    "breaker",
    "recovery",
    "validity",
    "objective",
    "thresholds",
    "unsuited",
    "algorithms",
];

/// Keys of `[tokens]` that the client chooses.
pub const TOKEN_KEYS: [&str; 3] = ["max_tokens", "request_timeout_s", "context"];

/// Per-endpoint keys that belong to the client (its pools, its contract and the quota it was
/// sold, its own cap).
pub const ENDPOINT_KEYS: [&str; 4] = ["pool", "price", "client_cap", "quota_units"];

/// The client's world, resolved.
#[derive(Clone, Debug)]
pub struct Client {
    /// The file, for comments.
    pub name: String,
    /// Its resolved document.
    pub doc: toml::Table,
    /// Whether its provider side is the prior for what the logs cannot identify (the
    /// capacity cycle, storm timing); `false` with `fit --logs-only`.
    pub prior: bool,
}

impl Client {
    /// The client's value at a reported key path (`jobs`, `tokens.max_tokens`,
    /// `endpoints.<id>.pool`), when that key is the client's and the file sets it.
    pub fn value(&self, path: &str) -> Option<&toml::Value> {
        if TOP_KEYS.contains(&path) {
            return self.doc.get(path);
        }
        if let Some(key) = path.strip_prefix("tokens.") {
            return TOKEN_KEYS
                .contains(&key)
                .then(|| self.doc.get("tokens")?.get(key))
                .flatten();
        }
        let rest = path.strip_prefix("endpoints.")?;
        let (id, key) = rest.rsplit_once('.')?;
        if !ENDPOINT_KEYS.contains(&key) {
            return None;
        }
        self.endpoint(id)?.get(key)
    }

    /// Whether a reported key path is the client's (then the client's file decides it, and a
    /// key it leaves out takes the format's default, as it does for the client).
    pub fn owns(&self, path: &str) -> bool {
        TOP_KEYS.contains(&path)
            // A world without `[tokens]` chose no request sizes: the logs' are the only ones.
            || path
                .strip_prefix("tokens.")
                .is_some_and(|k| TOKEN_KEYS.contains(&k) && self.doc.contains_key("tokens"))
            || path.rsplit_once('.').is_some_and(|(head, key)| {
                head.starts_with("endpoints.") && ENDPOINT_KEYS.contains(&key)
            })
            || TABLES
                .iter()
                .any(|t| path == *t || path.starts_with(&format!("{t}.")))
    }

    /// Whether the client runs a closed loop (`[load] model = "closed"`, the default): only
    /// then does its world have workers (`concurrency`).
    pub fn closed_loop(&self) -> bool {
        self.doc
            .get("load")
            .and_then(|l| l.get("model"))
            .and_then(toml::Value::as_str)
            .is_none_or(|m| m == "closed")
    }

    /// The provider's cycle as the client's world has it (the format's default when it has no
    /// `[cycle]`), and whether the file sets it.
    pub fn cycle(&self) -> (crate::scenario::Cycle, bool) {
        match self.doc.get("cycle").cloned().map(toml::Value::try_into) {
            Some(Ok(cycle)) => (cycle, true),
            _ => (crate::scenario::Cycle::default(), false),
        }
    }

    /// Endpoint `id`'s failures as the client's world has them (the format's defaults for
    /// keys it leaves out), when it has that endpoint.
    pub fn failures(&self, id: &str) -> Option<crate::scenario::Failures> {
        match self.endpoint(id)?.get("failures") {
            None => Some(crate::scenario::Failures::default()),
            Some(v) => v.clone().try_into().ok(),
        }
    }

    /// The client's endpoint `id`, if its file has one.
    pub fn endpoint(&self, id: &str) -> Option<&toml::Table> {
        self.doc
            .get("endpoints")?
            .as_array()?
            .iter()
            .filter_map(toml::Value::as_table)
            .find(|e| e.get("id").and_then(toml::Value::as_str) == Some(id))
    }

    /// The ids of the client's endpoints, in its order.
    pub fn endpoint_ids(&self) -> Vec<&str> {
        self.doc
            .get("endpoints")
            .and_then(toml::Value::as_array)
            .map(|all| all.iter().filter_map(|e| e.get("id")?.as_str()).collect())
            .unwrap_or_default()
    }

    /// The client's endpoint `id` whole, as an `[[endpoints]]` block of TOML text.
    pub fn endpoint_text(&self, id: &str) -> Option<String> {
        let endpoint = self.endpoint(id)?.clone();
        let mut wrapper = toml::Table::new();
        wrapper.insert(
            "endpoints".into(),
            toml::Value::Array(vec![toml::Value::Table(endpoint)]),
        );
        toml::to_string(&wrapper).ok()
    }

    /// Table `name` as TOML text (`[retry]` and its sub-tables), if the file has it.
    pub fn table_text(&self, name: &str) -> Option<String> {
        let value = self.doc.get(name)?;
        let mut wrapper = toml::Table::new();
        wrapper.insert(name.to_owned(), value.clone());
        toml::to_string(&wrapper).ok()
    }

    /// The `[[pools]]` the endpoints in `ids` use, as TOML text.
    pub fn pools_text(&self, ids: &[&str]) -> Option<String> {
        let used: Vec<&str> = ids
            .iter()
            .filter_map(|id| self.endpoint(id)?.get("pool")?.as_str())
            .collect();
        let pools: Vec<toml::Value> = self
            .doc
            .get("pools")?
            .as_array()?
            .iter()
            .filter(|p| {
                p.get("name")
                    .and_then(toml::Value::as_str)
                    .is_some_and(|n| used.contains(&n))
            })
            .cloned()
            .collect();
        if pools.is_empty() {
            return None;
        }
        let mut wrapper = toml::Table::new();
        wrapper.insert("pools".into(), toml::Value::Array(pools));
        toml::to_string(&wrapper).ok()
    }

    /// The position of endpoint `id` in the client's world (endpoints it lacks go last).
    pub fn order_of(&self, id: &str) -> usize {
        self.doc
            .get("endpoints")
            .and_then(toml::Value::as_array)
            .and_then(|all| {
                all.iter()
                    .position(|e| e.get("id").and_then(toml::Value::as_str) == Some(id))
            })
            .unwrap_or(usize::MAX)
    }

    /// The client's endpoint ids the logs never mention.
    pub fn missing(&self, seen: &[String]) -> Vec<String> {
        let Some(all) = self.doc.get("endpoints").and_then(toml::Value::as_array) else {
            return Vec::new();
        };
        all.iter()
            .filter_map(|e| e.get("id")?.as_str())
            .filter(|id| !seen.iter().any(|s| s == id))
            .map(str::to_owned)
            .collect()
    }
}
