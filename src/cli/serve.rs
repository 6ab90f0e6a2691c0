//! `simbench serve [FILE]`: the world's provider over HTTP ([`crate::serve`]), for a real
//! client to be pointed at. The bound address (`http://127.0.0.1:PORT`) is the first line of
//! standard output; the rest goes to standard error.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use clap::Args;

use super::console::errln;
use super::output::Inputs;
use crate::serve::{self, Config};

/// `simbench serve [FILE]`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Scenario file [default: the built-in bursty world].
    pub file: Option<PathBuf>,
    /// Port to listen on; 0 takes any free one (the first line of standard output says which).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub port: u16,
    /// Address to listen on. Loopback unless told otherwise: anything else lets other
    /// machines in.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind: IpAddr,
    /// Run the world K times faster than real time: every duration (latency, Retry-After,
    /// limit windows, the capacity cycle, incidents) is divided by K (0.001 to 1000000).
    #[arg(long, value_name = "K", default_value_t = 1.0, allow_negative_numbers = true,
          value_parser = parse_scale)]
    pub time_scale: f64,
    /// Require `Authorization: Bearer KEY` (else 401): printable ASCII, no spaces.
    #[arg(long, value_name = "KEY", value_parser = parse_api_key)]
    pub api_key: Option<String>,
    /// Write every request as a request-log line (docs/request-log.md) to PATH, times in
    /// simulated seconds since the first chat completion; each line is written when its request ends.
    /// A client that sends `x-simbench-job` (and `-step`, `-call`, `-attempt`) has them logged,
    /// the attempt otherwise from the SDK's `x-stainless-retry-count`, so that `fit` finds its load.
    #[arg(long, value_name = "PATH")]
    pub request_log: Option<PathBuf>,
    /// Connections served at once (more wait for one to close).
    #[arg(long, value_name = "N", default_value_t = 256, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub max_connections: u32,
    /// Largest request body read, in bytes (a larger one gets 413; 1024 to 67108864).
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1024..=(64 << 20)))]
    pub max_body_bytes: u32,
    /// Real seconds answers in progress may take to end after SIGINT, SIGTERM or SIGHUP (0 to
    /// 86400).
    #[arg(long, value_name = "S", default_value_t = 5.0, allow_negative_numbers = true,
          value_parser = parse_drain)]
    pub drain_s: f64,
    /// The provider's dice, 0 to 2^63 − 1 as a world's `seed` [default: the world's `seed`].
    #[arg(long, allow_negative_numbers = true, value_parser = super::run::parse_seed)]
    pub seed: Option<u64>,
    /// Override any scenario key (as `simbench run --set`).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = super::load::parse_set)]
    pub set: Vec<String>,
}

/// A key a client can send: `Bearer` and an empty or spaced key could never match one.
fn parse_api_key(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err("an empty key could never be sent: give one, or leave --api-key out".into());
    }
    if !text.chars().all(|c| c.is_ascii_graphic()) {
        return Err(format!(
            "`{}` has a space or a character a header cannot carry: use letters, digits and \
             ASCII punctuation",
            text.escape_debug()
        ));
    }
    Ok(text.to_owned())
}

fn parse_scale(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(k) if k.is_finite() && (0.001..=1e6).contains(&k) => Ok(k),
        _ => Err(format!(
            "`{text}` is not a time scale: a number from 0.001 to 1000000 (10 = ten times faster than real time)"
        )),
    }
}

fn parse_drain(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && (0.0..=serve::MAX_DRAIN_S).contains(&s) => Ok(s),
        _ => Err(format!(
            "`{text}` is not a drain time: a number of seconds from 0 to {} (a day)",
            serve::MAX_DRAIN_S
        )),
    }
}

/// The stop signals to leave ignored, as the process was started (`nohup simbench serve`).
fn ignored_signals() -> serve::Ignored {
    #[cfg(unix)]
    {
        use signal_hook::consts::signal::{SIGHUP, SIGINT};
        serve::Ignored {
            interrupt: super::signals::ignored(SIGINT),
            hangup: super::signals::ignored(SIGHUP),
        }
    }
    #[cfg(not(unix))]
    serve::Ignored::default()
}

/// Whether `path` names the file standard output already writes to.
fn is_stdout(path: &std::path::Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        use std::os::unix::fs::MetadataExt;
        let stdout = std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .and_then(|fd| std::fs::File::from(fd).metadata());
        match (stdout, std::fs::metadata(path)) {
            (Ok(out), Ok(named)) => (out.dev(), out.ino()) == (named.dev(), named.ino()),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// Runs `simbench serve`.
pub fn main(args: &ServeArgs) -> u8 {
    let inputs = Inputs::default();
    let overrides = super::load::overrides(&args.set);
    let world = match super::run::load_world(args.file.as_deref(), &overrides, &inputs) {
        Ok(world) => world,
        Err(code) => return code,
    };
    let addr = SocketAddr::new(args.bind, args.port);
    // Bound before the log is touched: a taken port leaves an earlier log as it was.
    let bound = match serve::bind(addr).and_then(|b| b.addr().map(|a| (b, a))) {
        Ok(bound) => bound,
        Err(e) => {
            errln!("error: cannot listen on {addr}: {}", super::io_reason(&e));
            if e.kind() == std::io::ErrorKind::AddrInUse {
                errln!(
                    "  hint: another program holds that port: pick another with --port, or --port 0 for any free one"
                );
            }
            return super::EXIT_ERROR;
        }
    };
    let log: Option<Box<dyn Write + Send>> = match &args.request_log {
        None => None,
        // Standard output by another name (`/dev/stdout`, or the file it was sent to) is written
        // as `-` is: a second handle with its own offset would write over the address line.
        Some(path) if path.as_os_str() == "-" || is_stdout(path) => {
            Some(Box::new(std::io::stdout()))
        }
        Some(path) => match super::output::open_streamed("--request-log", path, &inputs) {
            Ok(file) => Some(Box::new(file)),
            Err(message) => {
                errln!("error: {message}");
                return super::EXIT_ERROR;
            }
        },
    };
    let seed = args.seed.unwrap_or_else(|| world.seed());
    let ignored = ignored_signals();
    let config = Config {
        time_scale: args.time_scale,
        api_key: args.api_key.clone(),
        max_connections: args.max_connections as usize,
        max_body_bytes: args.max_body_bytes as usize,
        drain_s: args.drain_s,
        seed,
        log,
        ignored,
    };
    let name = crate::text::escape(world.name()).into_owned();
    let ids: Vec<String> = world.endpoints().iter().map(|e| e.id.clone()).collect();
    let scale = args.time_scale;
    let (bound, addr) = bound;
    let ready = || {
        let mut stdout = std::io::stdout();
        let _ = writeln!(stdout, "http://{addr}");
        let _ = stdout.flush();
        errln!(
            "simbench: serving `{name}` at http://{addr}/v1 (endpoints {}; time ×{scale}); stop with {}",
            ids.join(", "),
            ignored.how_to_stop()
        );
        if !addr.ip().is_loopback() {
            errln!(
                "warning: listening on {}, reachable from other machines",
                addr.ip()
            );
        }
    };
    match serve::serve(world, bound, config, ready) {
        Ok(serve::Served { log_error: None }) => {
            errln!("simbench: stopped");
            super::EXIT_OK
        }
        Ok(serve::Served { log_error: Some(e) }) => {
            errln!(
                "error: stopped; the request log lost entries: {}",
                super::io_reason(&e)
            );
            super::EXIT_ERROR
        }
        Err(e) => {
            errln!("error: cannot serve: {}", super::io_reason(&e));
            super::EXIT_ERROR
        }
    }
}
