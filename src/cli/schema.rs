//! `simbench schema [scenario|report|sweep|request-log|grid]`: print a generated JSON Schema.

use super::console;

/// Which document's schema to print.
#[derive(Clone, Copy, Debug, Default, clap::ValueEnum)]
pub enum SchemaKind {
    /// Scenario files (`schema/scenario.schema.json`).
    #[default]
    Scenario,
    /// The JSON report of `simbench run --json` (`schema/report.schema.json`).
    Report,
    /// The JSON of `simbench sweep --json` (`schema/sweep.schema.json`).
    Sweep,
    /// One line of a request log (`schema/request-log.schema.json`).
    RequestLog,
    /// The JSON of `simbench sweep --grid --json` and `simbench merge --json`
    /// (`schema/grid.schema.json`).
    Grid,
}

/// `simbench schema [scenario|report|sweep|request-log|grid]`.
#[derive(Debug, clap::Args)]
pub struct SchemaArgs {
    /// The document whose schema is printed.
    #[arg(value_enum, default_value_t = SchemaKind::Scenario)]
    pub which: SchemaKind,
}

/// Prints the schema `args` names.
pub fn print_schema(args: &SchemaArgs) -> u8 {
    let text = match args.which {
        SchemaKind::Scenario => crate::schema::scenario_schema_text(),
        SchemaKind::Report => crate::report::json::schema_text(),
        SchemaKind::Sweep => crate::report::sweep::schema_text(),
        SchemaKind::RequestLog => crate::request_log::schema_text(),
        SchemaKind::Grid => crate::report::grid::schema_text(),
    };
    console::exit_code(super::EXIT_OK, console::print(&text))
}
