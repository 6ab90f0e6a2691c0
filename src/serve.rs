//! `simbench serve`: the world's provider over HTTP, so a real client can be pointed at it.
//!
//! The provider is the simulation's own ([`emulator`] wraps [`crate::provider::Provider`]),
//! driven by a real clock scaled by `time_scale` instead of the event heap: simulated time is
//! real time since the first request times the scale, and every duration the world draws is slept
//! divided by it. The wire format is OpenAI's chat completions ([`openai`]). This module and
//! `src/cli/serve.rs` are the only code that opens a socket or reads a real clock; they are
//! built with the `serve` feature (on by default).
//!
//! Safety: it binds where told (the CLI defaults to loopback), reads at most
//! [`Config::max_body_bytes`] of a body and 16 KiB of headers (10 s to send each), serves at
//! most [`Config::max_connections`] connections at once (others wait in the backlog), waits
//! and warns when the process runs out of file handles rather than retrying at once, and on
//! SIGINT or SIGTERM stops accepting, lets answers in progress end for up to
//! [`Config::drain_s`], cuts the rest, and writes every request to the log before it returns.
//! A log that cannot be written is warned of at once and fails the command when it stops.

pub mod emulator;
pub mod openai;

use std::convert::Infallible;
use std::future::Future;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Frame, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use crate::provider::{FailureKind, Refusal, Rejection};
use crate::request_log::{self, Entry, EntryOutcome, ErrorKind};
use crate::tokens::LimitHeader;
use crate::world::World;
use emulator::{Admission, Emulator, Verdict};
use openai::{ApiError, ChatRequest, Envelope};

/// How the server runs.
pub struct Config {
    /// Simulated seconds per real second.
    pub time_scale: f64,
    /// The key clients must send as `Authorization: Bearer KEY`, if any.
    pub api_key: Option<String>,
    /// Connections served at once.
    pub max_connections: usize,
    /// Largest request body read \[bytes\].
    pub max_body_bytes: usize,
    /// Real seconds answers in progress may take to end after a stop signal.
    pub drain_s: f64,
    /// The dice's seed.
    pub seed: u64,
    /// Where each request's entry goes (the request-log format), if anywhere.
    pub log: Option<Box<dyn Write + Send>>,
    /// The stop signals the process was started with ignored (`nohup`'s SIGHUP, a background
    /// job's SIGINT), which stay ignored. SIGTERM always stops the server.
    pub ignored: Ignored,
}

/// Stop signals left ignored.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ignored {
    /// SIGINT.
    pub interrupt: bool,
    /// SIGHUP.
    pub hangup: bool,
}

impl Ignored {
    /// How to stop the server, in a few words: Ctrl-C reaches it only when SIGINT is caught (a
    /// script's background job starts with SIGINT ignored, and it stays so).
    pub fn how_to_stop(&self) -> String {
        if self.interrupt {
            format!("SIGTERM: kill {}", std::process::id())
        } else {
            "Ctrl-C".to_owned()
        }
    }
}

/// Largest header block read \[bytes\].
const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Real seconds a client has to send its headers, and then its body.
const HEADER_TIMEOUT_S: u64 = 10;
/// The longest `--drain-s` \[s\]: a day.
pub const MAX_DRAIN_S: f64 = 86_400.0;
/// Text chunks a streamed answer is cut into at most.
const MAX_CHUNKS: u32 = 50;

type Body = BoxBody<Bytes, io::Error>;

/// The clock: simulated seconds since the first request. A simulated run's time 0 is when its
/// load starts, so the served world's time 0 is when its client starts, whenever that is after
/// the server came up: the fixed windows, the cycle and the incidents then meet the client at
/// the same phase as in a simulation.
struct Clock {
    origin: OnceLock<Instant>,
    scale: f64,
}

impl Clock {
    fn new(scale: f64) -> Clock {
        Clock {
            origin: OnceLock::new(),
            scale,
        }
    }

    /// The real instant of simulated time 0: the first reading of the clock (each request's
    /// handler reads it first), taken from the real clock at this edge only (clippy.toml
    /// forbids it elsewhere).
    #[allow(clippy::disallowed_methods)]
    fn origin(&self) -> Instant {
        *self.origin.get_or_init(Instant::now)
    }

    fn now(&self) -> f64 {
        self.origin().elapsed().as_secs_f64() * self.scale
    }

    /// The real instant of simulated time `t`; past what a clock can hold (a world whose
    /// latencies are ages, slowed down), as far ahead as the timer goes.
    fn at(&self, t: f64) -> tokio::time::Instant {
        Duration::try_from_secs_f64((t / self.scale).max(0.0))
            .ok()
            .and_then(|d| self.origin().checked_add(d))
            .map_or_else(far_future, tokio::time::Instant::from_std)
    }

    /// A simulated duration in real seconds.
    fn real_s(&self, sim_s: f64) -> f64 {
        sim_s / self.scale
    }
}

/// About thirty years ahead: how tokio's own timers say "never".
fn far_future() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(86_400 * 365 * 30)
}

/// What every request handler shares.
struct Shared {
    world: &'static World,
    emulator: Mutex<Emulator<'static>>,
    clock: Clock,
    api_key: Option<String>,
    max_body_bytes: usize,
    log: Option<Mutex<Log>>,
    ids: AtomicU64,
    /// The requests being served, each in its own task (see [`detached`]).
    requests: Mutex<JoinSet<()>>,
}

/// The request log and the first error writing it.
struct Log {
    out: Box<dyn Write + Send>,
    error: Option<io::Error>,
}

impl Shared {
    fn emulator(&self) -> std::sync::MutexGuard<'_, Emulator<'static>> {
        self.emulator.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes an entry; the first failure is warned of at once (requests go on being served)
    /// and kept for the end, which then fails.
    fn write_log(&self, entry: &Entry) {
        if let Some(log) = &self.log {
            let mut line = serde_json::to_string(entry).expect("an entry serialises");
            line.push('\n');
            let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
            if log.error.is_some() {
                return;
            }
            if let Err(e) = log
                .out
                .write_all(line.as_bytes())
                .and_then(|()| log.out.flush())
            {
                eprintln!(
                    "warning: cannot write the request log: {e}; requests go on being served, unlogged"
                );
                log.error = Some(e);
            }
        }
    }
}

/// A bound socket, not yet serving: the caller can still refuse to start (and touch no file)
/// when the address is taken.
pub struct Bound(std::net::TcpListener);

impl Bound {
    /// The address it listens on (the port chosen when 0 was asked).
    ///
    /// # Errors
    /// When the system cannot say.
    pub fn addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

/// Binds `addr`.
///
/// # Errors
/// The system's, e.g. the address is in use.
pub fn bind(addr: SocketAddr) -> io::Result<Bound> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    Ok(Bound(listener))
}

/// How serving ended.
pub struct Served {
    /// The request log's first write error: entries from then on were lost.
    pub log_error: Option<io::Error>,
}

/// Serves `world` on `bound` until SIGINT, SIGTERM or SIGHUP.
///
/// # Errors
/// The runtime's.
/// `ready` is called once the stop signals are caught, before the first connection is
/// taken: a client told the address then (the first line of standard output) may stop the
/// server at once and still get its drain, not the signal's default of ending the process.
pub fn serve(
    world: World,
    bound: Bound,
    config: Config,
    ready: impl FnOnce(),
) -> io::Result<Served> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run(world, bound, config, ready))
}

async fn run(
    world: World,
    bound: Bound,
    config: Config,
    ready: impl FnOnce(),
) -> io::Result<Served> {
    let listener = TcpListener::from_std(bound.0)?;
    // The server lives as long as the process; its world with it.
    let world: &'static World = Box::leak(Box::new(world));
    let shared = Arc::new(Shared {
        world,
        emulator: Mutex::new(Emulator::new(world, config.seed)),
        clock: Clock::new(config.time_scale),
        api_key: config.api_key,
        max_body_bytes: config.max_body_bytes,
        log: config.log.map(|out| Mutex::new(Log { out, error: None })),
        ids: AtomicU64::new(0),
        requests: Mutex::new(JoinSet::new()),
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let ignored = config.ignored;
    let first_stop = StopSignals::new(ignored)?;
    tokio::spawn(async move {
        first_stop.recv().await;
        let _ = stop_tx.send(true);
    });
    ready();
    let permits = Arc::new(Semaphore::new(config.max_connections.max(1)));
    let mut connections = JoinSet::new();
    let mut stop = stop_rx.clone();
    let mut warned_exhaustion = false;
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            _ = stop.changed() => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file handles or memory: the same call fails again at once until
                    // a connection closes, so wait instead of spinning. A connection that
                    // failed before it was accepted (reset, aborted) is just skipped.
                    if is_exhaustion(&e) {
                        if !warned_exhaustion {
                            eprintln!(
                                "warning: cannot accept a connection: {e}; waiting for connections to close (raise `ulimit -n` or lower --max-connections)"
                            );
                            warned_exhaustion = true;
                        }
                        tokio::select! {
                            () = tokio::time::sleep(Duration::from_millis(100)) => {}
                            _ = stop.changed() => break,
                        }
                    }
                    continue;
                }
            },
            _ = stop.changed() => break,
        };
        while connections.try_join_next().is_some() {}
        let shared = shared.clone();
        let mut stop = stop_rx.clone();
        connections.spawn(async move {
            let _permit = permit;
            let service = service_fn(move |req| detached(shared.clone(), req));
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(HEADER_TIMEOUT_S))
                .max_buf_size(MAX_HEADER_BYTES);
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stop.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    drop(listener);
    drain(&mut connections, config.drain_s, ignored).await;
    // Cut what did not end: their guards log them.
    connections.shutdown().await;
    let mut requests =
        std::mem::take(&mut *shared.requests.lock().unwrap_or_else(|p| p.into_inner()));
    requests.shutdown().await;
    let mut log_error = None;
    if let Some(log) = &shared.log {
        let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
        log_error = log.error.take().or_else(|| log.out.flush().err());
    }
    Ok(Served { log_error })
}

/// Lets the connections end their answers for up to `drain_s` real seconds, or until a second
/// stop signal. Idle connections close at once; if answers are still going a moment later,
/// standard error says so, as the wait may be long.
async fn drain(connections: &mut JoinSet<()>, drain_s: f64, ignored: Ignored) {
    let started = tokio::time::Instant::now();
    let drain = Duration::try_from_secs_f64(drain_s.clamp(0.0, MAX_DRAIN_S)).unwrap_or_default();
    let first = drain.min(Duration::from_millis(100));
    let all_done = async |connections: &mut JoinSet<()>| {
        while connections.join_next().await.is_some() {}
    };
    if tokio::time::timeout(first, all_done(connections))
        .await
        .is_ok()
        || first == drain
    {
        return;
    }
    let n = connections.len();
    eprintln!(
        "simbench: stopping: waiting up to {:.1} s for {n} connection{} still open (an answer \
         going, or a request still being sent); stop again ({}) to cut {} now",
        drain.saturating_sub(started.elapsed()).as_secs_f64(),
        if n == 1 { "" } else { "s" },
        ignored.how_to_stop(),
        if n == 1 { "it" } else { "them" },
    );
    tokio::select! {
        _ = tokio::time::timeout_at(started + drain, all_done(connections)) => {}
        () = async {
            match StopSignals::new(ignored) {
                Ok(signals) => signals.recv().await,
                Err(_) => std::future::pending().await,
            }
        } => eprintln!("simbench: stopping now; answers in progress are cut"),
    }
}

/// Whether accepting failed for want of file handles or memory (it fails again until some
/// are given back), not because of the connection.
fn is_exhaustion(e: &io::Error) -> bool {
    // EMFILE, ENFILE, ENOBUFS, ENOMEM on Linux and the BSDs.
    matches!(e.raw_os_error(), Some(23 | 24 | 105 | 12 | 55))
        || e.kind() == io::ErrorKind::OutOfMemory
}

/// SIGINT, SIGTERM and SIGHUP (those not left ignored), caught from the moment this is made.
/// A closed terminal (SIGHUP) stops the server as SIGTERM does: with a drain and a complete
/// log, not by the signal's default of ending the process at once.
struct StopSignals {
    /// SIGINT, SIGTERM, SIGHUP; `None` for one left ignored.
    #[cfg(unix)]
    streams: [Option<tokio::signal::unix::Signal>; 3],
}

impl StopSignals {
    fn new(ignored: Ignored) -> io::Result<StopSignals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let caught = |kind, ignored: bool| (!ignored).then(|| signal(kind)).transpose();
            Ok(StopSignals {
                streams: [
                    caught(SignalKind::interrupt(), ignored.interrupt)?,
                    caught(SignalKind::terminate(), false)?,
                    caught(SignalKind::hangup(), ignored.hangup)?,
                ],
            })
        }
        #[cfg(not(unix))]
        {
            let _ = ignored;
            Ok(StopSignals {})
        }
    }

    /// Waits for the first of them.
    async fn recv(self) {
        #[cfg(unix)]
        {
            async fn one(stream: Option<tokio::signal::unix::Signal>) {
                match stream {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending().await,
                }
            }
            let [int, term, hup] = self.streams;
            tokio::select! {
                () = one(int) => {}
                () = one(term) => {}
                () = one(hup) => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// An error that makes hyper drop the connection without an answer (an outage's refused
/// connection, a reset).
fn hang_up() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionReset,
        "simulated connection failure",
    )
}

fn full(text: impl Into<Bytes>) -> Body {
    Full::new(text.into())
        .map_err(|never: Infallible| match never {})
        .boxed()
}

fn json_response(status: u16, body: String) -> Response<Body> {
    let mut response = Response::new(full(body));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    // 529 has no standard reason phrase; the vendors that send it write this one.
    if status == 529 {
        response
            .extensions_mut()
            .insert(hyper::ext::ReasonPhrase::from_static(b"Site is overloaded"));
    }
    response
}

fn error_response(error: &ApiError) -> Response<Body> {
    json_response(error.status, error.body())
}

/// The token of an `Authorization: Bearer TOKEN` header. The scheme is case-insensitive
/// (RFC 9110 §11.1), so `bearer` and `BEARER` are the same scheme.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim_start_matches(' '))
}

/// What [`handle`] made of a request: an answer to send now (a stream's body goes on by
/// itself), or an admitted chat completion whose answer is due after its latency.
enum Answer {
    Now(Response<Body>),
    Whole(InFlight, String, ChatRequest),
}

impl From<Response<Body>> for Answer {
    fn from(response: Response<Body>) -> Answer {
        Answer::Now(response)
    }
}

/// Serves a request in a task of its own, so that hyper dropping the connection cannot cancel
/// it half-way. A client that half-closes right after its request makes hyper end the
/// connection as soon as it reads the end of input, which raced the handler: half the time the
/// request had been admitted (then logged `client_timeout`), half the time it vanished, neither
/// charged nor logged. Now a request fully received is always admitted or refused, charged and
/// logged; only the wait for its answer is cut short when the client is gone, at that moment.
/// The task is spawned when hyper hands over the request, not when it first polls the
/// returned future: on a half-close hyper may read the end of input and drop that future
/// before polling it once.
fn detached(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> impl Future<Output = Result<Response<Body>, io::Error>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let task = {
        let shared = shared.clone();
        async move {
            let mut tx = tx;
            let answer = match handle(shared, req).await {
                Ok(Answer::Now(response)) => Ok(response),
                Ok(Answer::Whole(guard, id, request)) => {
                    let answer = whole(guard, id, request);
                    tokio::pin!(answer);
                    tokio::select! {
                        answer = &mut answer => answer,
                        // Gone: dropping the answer ends the request now, as `client_timeout`.
                        () = tx.closed() => return,
                    }
                }
                Err(e) => Err(e),
            };
            let _ = tx.send(answer);
        }
    };
    {
        let mut tasks = shared.requests.lock().unwrap_or_else(|p| p.into_inner());
        while tasks.try_join_next().is_some() {}
        tasks.spawn(task);
    }
    async move { rx.await.unwrap_or_else(|_| Err(hang_up())) }
}

/// Routes a request and reads it; an admitted chat completion comes back still to be served.
async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Result<Answer, io::Error> {
    // Every route needs the key, as the API's do: without it nothing is told, not even the
    // endpoints' names.
    if let Some(key) = &shared.api_key {
        let sent = req
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if sent.and_then(bearer_token) != Some(key.as_str()) {
            return Ok(error_response(&ApiError {
                status: 401,
                message: "Incorrect API key provided.".into(),
                kind: "invalid_request_error",
                param: None,
                code: Some("invalid_api_key"),
            })
            .into());
        }
    }
    let path = req.uri().path().to_owned();
    let endpoint = match route(&shared, req.method(), &path) {
        Route::Models => return Ok(models(&shared).into()),
        Route::Model(e) => return Ok(model(&shared, e).into()),
        Route::NotFound(error) => return Ok(error_response(&error).into()),
        Route::WrongMethod(allow) => return Ok(wrong_method(allow).into()),
        Route::Chat(endpoint) => endpoint,
    };
    // Header values are bytes; an id is UTF-8 text, as in the world file (`é:x` arrives as
    // its UTF-8 bytes from curl and the SDKs).
    let header_endpoint = match req.headers().get("x-simbench-endpoint") {
        None => None,
        Some(v) => match std::str::from_utf8(v.as_bytes()) {
            Ok(id) => Some(id.to_owned()),
            Err(_) => {
                return Ok(error_response(&ApiError {
                    status: 400,
                    message: "The x-simbench-endpoint header is not UTF-8 text; send the id's \
                              UTF-8 bytes, or name the endpoint in the path (`/ID/v1/…`, \
                              percent-encoded)."
                        .into(),
                    kind: "invalid_request_error",
                    param: None,
                    code: Some("invalid_header"),
                })
                .into());
            }
        },
    };
    let unit = match WorkUnit::from_headers(req.headers()) {
        Ok(unit) => unit,
        Err(error) => return Ok(error_response(&error).into()),
    };
    let declared = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    // A declared length past the bound is answered before a byte of the body is read: waiting
    // for it held the answer up to the body's 10 s (and a client that waits for `100
    // Continue` sends nothing). The body is still read and thrown away, for at most those
    // 10 s, before the connection closes: closing on a client still sending makes its system
    // reset the connection, and it may never see the answer.
    if declared.is_some_and(|n| n > shared.max_body_bytes as u64) {
        tokio::spawn(discard(req.into_body()));
        return Ok(closing(error_response(&too_large_body(shared.max_body_bytes))).into());
    }
    let body = Limited::new(req.into_body(), shared.max_body_bytes).collect();
    let body = match tokio::time::timeout(Duration::from_secs(HEADER_TIMEOUT_S), body).await {
        Err(_) => {
            return Ok(closing(error_response(&ApiError {
                status: 408,
                message: format!("The request body did not arrive within {HEADER_TIMEOUT_S} s."),
                kind: "invalid_request_error",
                param: None,
                code: Some("request_timeout"),
            }))
            .into());
        }
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e))
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            return Ok(closing(error_response(&too_large_body(shared.max_body_bytes))).into());
        }
        Ok(Err(_)) => return Err(hang_up()),
    };
    let request = match openai::parse(&body) {
        Ok(r) => r,
        Err(e) => return Ok(error_response(&e).into()),
    };
    let endpoint = match pick_endpoint(
        &shared,
        endpoint,
        header_endpoint.as_deref(),
        &request.model,
    ) {
        Ok(e) => e,
        Err(error) => return Ok(error_response(&error).into()),
    };
    chat(shared, endpoint, request, unit)
}

/// Reads a body to its end and drops it, for at most the body's time.
async fn discard(mut body: Incoming) {
    let _ = tokio::time::timeout(Duration::from_secs(HEADER_TIMEOUT_S), async move {
        while let Some(Ok(_)) = body.frame().await {}
    })
    .await;
}

/// The unit of work a request belongs to, as the client tags it, for the request log: a fit
/// of a served log finds the load (jobs at once, steps, calls) and the retry policy only from
/// these. `x-simbench-job`, `-step`, `-call` and `-attempt` are the log's fields; without
/// `x-simbench-attempt` the attempt is the `x-stainless-retry-count` that the official openai
/// Python package sends on every try (0 on the first), plus one.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct WorkUnit {
    job: Option<u64>,
    step: Option<u32>,
    attempt: Option<u32>,
    call: Option<u32>,
}

impl WorkUnit {
    /// Reads the tags; one of ours that is not a whole number in range is a 400 naming it
    /// (an SDK's own retry count that is not one is ignored, as an API would ignore it).
    fn from_headers(headers: &hyper::HeaderMap) -> Result<WorkUnit, ApiError> {
        let ours = |name: &str, least: u64, most: u64| -> Result<Option<u64>, ApiError> {
            let Some(value) = headers.get(name) else {
                return Ok(None);
            };
            let text = String::from_utf8_lossy(value.as_bytes());
            let text = text.trim();
            match text.parse::<u64>() {
                Ok(n) if (least..=most).contains(&n) => Ok(Some(n)),
                _ => Err(ApiError {
                    status: 400,
                    message: format!(
                        "The header {name} must be a whole number from {least} to {most}, \
                         not `{text}`."
                    ),
                    kind: "invalid_request_error",
                    param: Some(name.to_owned()),
                    code: Some("invalid_header"),
                }),
            }
        };
        let small = |n: Option<u64>| n.map(|n| n as u32);
        let max = u64::from(u32::MAX);
        let retries = headers
            .get("x-stainless-retry-count")
            .and_then(|v| v.to_str().ok())
            .and_then(|t| t.trim().parse::<u32>().ok())
            .and_then(|r| r.checked_add(1));
        Ok(WorkUnit {
            // u64::MAX is a fit's "no job".
            job: ours("x-simbench-job", 0, u64::MAX - 1)?,
            step: small(ours("x-simbench-step", 0, max)?),
            attempt: small(ours("x-simbench-attempt", 1, max)?).or(retries),
            call: small(ours("x-simbench-call", 0, max)?),
        })
    }
}

enum Route {
    Chat(Option<usize>),
    Models,
    Model(usize),
    NotFound(ApiError),
    /// A known path asked with the wrong method: the method it takes.
    WrongMethod(&'static str),
}

/// `POST /v1/chat/completions` (endpoint from the header, the model or the first), `POST
/// /ID/v1/chat/completions` (endpoint ID), `GET /v1/models`, `GET /v1/models/ID` (and HEAD of
/// both). An id is
/// percent-decoded (`org%2Fmodel%20v1` is `org/model v1`), as a client's URL library encodes
/// it; an unknown id is a 404 whatever the method, a known path with another method a 405.
fn route(shared: &Shared, method: &Method, path: &str) -> Route {
    let not_found = |message: String| {
        Route::NotFound(ApiError {
            status: 404,
            message,
            kind: "invalid_request_error",
            param: None,
            code: Some("not_found"),
        })
    };
    if path == "/v1/models" {
        return match *method {
            // HEAD is GET without the body (hyper leaves the body out, keeping its length).
            Method::GET | Method::HEAD => Route::Models,
            _ => Route::WrongMethod("GET, HEAD"),
        };
    }
    if let Some(raw) = path.strip_prefix("/v1/models/") {
        let id = match percent_decode(raw) {
            Ok(id) => id,
            Err(error) => return Route::NotFound(error),
        };
        return match (method, shared.emulator().endpoint(&id)) {
            (&Method::GET | &Method::HEAD, Some(e)) => Route::Model(e),
            (_, Some(_)) => Route::WrongMethod("GET, HEAD"),
            (_, None) => Route::NotFound(ApiError {
                status: 404,
                message: format!("The model `{id}` does not exist."),
                kind: "invalid_request_error",
                param: Some("model".into()),
                code: Some("model_not_found"),
            }),
        };
    }
    let Some(prefix) = path.strip_suffix("/v1/chat/completions") else {
        return not_found(format!("Unknown path {path}."));
    };
    let endpoint = match prefix.strip_prefix('/') {
        None if prefix.is_empty() => None,
        None => return not_found(format!("Unknown path {path}.")),
        Some(raw) => {
            let id = match percent_decode(raw) {
                Ok(id) => id,
                Err(error) => return Route::NotFound(error),
            };
            match shared.emulator().endpoint(&id) {
                Some(e) => Some(e),
                None => return not_found(format!("The world has no endpoint `{id}`.")),
            }
        }
    };
    match *method {
        Method::POST => Route::Chat(endpoint),
        _ => Route::WrongMethod("POST"),
    }
}

/// A path segment with its `%XX` escapes decoded (`%2F` is a `/` inside the id, not a
/// separator); a `%` not followed by two hex digits, or bytes that are not UTF-8, is a 400.
fn percent_decode(raw: &str) -> Result<String, ApiError> {
    let invalid = || ApiError {
        status: 400,
        message: format!(
            "The path segment `{raw}` is not valid percent-encoding (a `%` must be followed by two hex digits, and the bytes must be UTF-8)."
        ),
        kind: "invalid_request_error",
        param: None,
        code: Some("invalid_path"),
    };
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).ok_or_else(invalid)?;
            let text = std::str::from_utf8(hex).map_err(|_| invalid())?;
            if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(invalid());
            }
            out.push(u8::from_str_radix(text, 16).map_err(|_| invalid())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| invalid())
}

/// The endpoint: the path's, else the `x-simbench-endpoint` header's, else the one the model
/// names, else the first.
fn pick_endpoint(
    shared: &Shared,
    from_path: Option<usize>,
    header: Option<&str>,
    model: &str,
) -> Result<usize, ApiError> {
    if let Some(e) = from_path {
        return Ok(e);
    }
    let emulator = shared.emulator();
    if let Some(id) = header {
        return emulator.endpoint(id).ok_or_else(|| ApiError {
            status: 404,
            message: format!("The world has no endpoint `{id}` (x-simbench-endpoint)."),
            kind: "invalid_request_error",
            param: None,
            code: Some("not_found"),
        });
    }
    Ok(emulator.endpoint(model).unwrap_or(0))
}

fn model_object(id: &str) -> serde_json::Value {
    json!({ "id": id, "object": "model", "created": 0, "owned_by": "simbench" })
}

fn models(shared: &Shared) -> Response<Body> {
    let data: Vec<_> = shared
        .world
        .endpoints()
        .iter()
        .map(|e| model_object(&e.id))
        .collect();
    json_response(200, json!({ "object": "list", "data": data }).to_string())
}

fn model(shared: &Shared, e: usize) -> Response<Body> {
    json_response(
        200,
        model_object(&shared.world.endpoints()[e].id).to_string(),
    )
}

/// 405 with the method the path takes in `Allow`.
fn wrong_method(allow: &'static str) -> Response<Body> {
    let mut response = error_response(&ApiError {
        status: 405,
        message: format!("Use {allow}."),
        kind: "invalid_request_error",
        param: None,
        code: Some("method_not_allowed"),
    });
    response
        .headers_mut()
        .insert(hyper::header::ALLOW, HeaderValue::from_static(allow));
    response
}

fn too_large_body(max: usize) -> ApiError {
    ApiError {
        status: 413,
        message: format!("The request body is larger than {max} bytes."),
        kind: "invalid_request_error",
        param: None,
        code: Some("request_too_large"),
    }
}

/// The answer with `Connection: close`: what is left of the request is never read.
fn closing(mut response: Response<Body>) -> Response<Body> {
    response
        .headers_mut()
        .insert(hyper::header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The rate-limit headers, their resets in real time: one limit per unit (a header name holds
/// one value), the one that binds — `refused`, the index of the limit that refused the request,
/// else the one with the least remaining (the sooner reset on a tie), as a minute's tokens bind
/// before a day's.
fn limit_headers(
    response: &mut Response<Body>,
    clock: &Clock,
    headers: &[LimitHeader],
    refused: Option<usize>,
) {
    for (i, h) in headers.iter().enumerate() {
        let binds = headers.iter().enumerate().all(|(j, o)| {
            j == i || o.unit != h.unit || {
                let tighter = (h.remaining, h.reset_s, i) <= (o.remaining, o.reset_s, j);
                match refused {
                    Some(r) if headers[r].unit == h.unit => i == r,
                    _ => tighter,
                }
            }
        });
        if !binds {
            continue;
        }
        let unit = h.unit.header_suffix();
        let map = response.headers_mut();
        let mut put = |name: String, value: String| {
            if let (Ok(n), Ok(v)) = (
                hyper::header::HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(&value),
            ) {
                map.insert(n, v);
            }
        };
        put(
            format!("x-ratelimit-limit-{unit}"),
            format!("{}", h.limit.floor() as u64),
        );
        put(
            format!("x-ratelimit-remaining-{unit}"),
            format!("{}", h.remaining.max(0.0).floor() as u64),
        );
        put(
            format!("x-ratelimit-reset-{unit}"),
            openai::duration(clock.real_s(h.reset_s)),
        );
    }
}

/// What the log says of every request: filled in as it goes.
struct Record {
    start_s: f64,
    endpoint: String,
    input_tokens: Option<f64>,
    max_tokens: Option<f64>,
    headers: Vec<LimitHeader>,
    unit: WorkUnit,
}

impl Record {
    fn entry(
        &self,
        end_s: f64,
        outcome: EntryOutcome,
        status: Option<u16>,
        error: Option<ErrorKind>,
    ) -> Entry {
        Entry {
            start_s: self.start_s,
            arrived_s: None,
            end_s: end_s.max(self.start_s),
            endpoint: self.endpoint.clone(),
            outcome,
            status,
            error,
            retry_after_s: None,
            ratelimit: self.headers.iter().map(request_log::header).collect(),
            input_tokens: self.input_tokens,
            output_tokens: None,
            max_tokens: self.max_tokens,
            ttft_s: None,
            job: self.unit.job,
            step: self.unit.step,
            attempt: self.unit.attempt,
            call: self.unit.call,
            hedge: false,
            cache_hit: None,
        }
    }
}

/// A chat completion at endpoint `e`: admitted or refused (charged and logged) at once.
fn chat(
    shared: Arc<Shared>,
    e: usize,
    mut request: ChatRequest,
    unit: WorkUnit,
) -> Result<Answer, io::Error> {
    let now = shared.clock.now();
    let (verdict, headers) =
        shared
            .emulator()
            .arrive(e, now, request.prompt_tokens, request.max_tokens);
    let tokens = shared.world.tokens();
    let record = Record {
        start_s: now,
        endpoint: shared.world.endpoints()[e].id.clone(),
        input_tokens: tokens.map(|_| f64::from(request.prompt_tokens.max(1))),
        max_tokens: tokens.map(|t| request.max_tokens.map_or(t.max_tokens, f64::from)),
        headers,
        unit,
    };
    // An answer cut at the world's cap stopped for `length` as much as at the request's own.
    if request.max_tokens.is_none() {
        request.max_tokens = record.max_tokens.map(|cap| cap as u32);
    }
    match verdict {
        Verdict::Refused {
            refusal,
            retry_after_s,
        } => Ok(refused(&shared, record, refusal, retry_after_s).into()),
        Verdict::Rejected(rejection) => rejected(&shared, record, rejection).map(Answer::from),
        Verdict::Admitted(admission) => {
            let id = format!(
                "chatcmpl-{}",
                shared.ids.fetch_add(1, Ordering::Relaxed) + 1
            );
            let guard = InFlight {
                shared: shared.clone(),
                admission,
                record,
                done: false,
                ttft: None,
                headers_at_end: false,
            };
            Ok(if request.stream {
                stream(guard, id, request).into()
            } else {
                Answer::Whole(guard, id, request)
            })
        }
    }
}

fn refused(
    shared: &Shared,
    record: Record,
    refusal: Refusal,
    retry_after_s: f64,
) -> Response<Body> {
    let (status, outcome) = match refusal {
        Refusal::Overloaded => (529, EntryOutcome::Overloaded),
        _ => (429, EntryOutcome::RateLimited),
    };
    let real_after = shared.clock.real_s(retry_after_s);
    let limit = match refusal {
        Refusal::Limit { index } => Some(index),
        _ => None,
    };
    let error = match refusal {
        Refusal::Overloaded => ApiError {
            status,
            message: "The server is overloaded. Please try again later.".into(),
            kind: "overloaded_error",
            param: None,
            code: None,
        },
        _ => ApiError {
            status,
            message: rate_limit_message(shared, &record, refusal, real_after),
            kind: limit
                .and_then(|i| record.headers.get(i))
                .map_or("requests", |h| h.unit.header_suffix()),
            param: None,
            code: Some("rate_limit_exceeded"),
        },
    };
    let mut response = error_response(&error);
    limit_headers(&mut response, &shared.clock, &record.headers, limit);
    let mut entry = record.entry(record.start_s, outcome, Some(status), None);
    if status == 429 {
        let real = real_after;
        let map = response.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&format!("{}", openai::ceil_whole(real * 1000.0))) {
            map.insert("retry-after-ms", v);
        }
        if let Ok(v) = HeaderValue::from_str(&format!("{}", openai::ceil_whole(real))) {
            map.insert("retry-after", v);
        }
        entry.retry_after_s = Some(retry_after_s);
    }
    shared.write_log(&entry);
    response
}

/// What a 429 says, as the API says it: which limit (or the concurrency cap) and when to try
/// again, in real seconds.
fn rate_limit_message(shared: &Shared, record: &Record, refusal: Refusal, after_s: f64) -> String {
    let again = format!("Please try again in {}.", openai::duration(after_s));
    let endpoint = &record.endpoint;
    match refusal {
        Refusal::Limit { index } => {
            let e = shared.emulator().endpoint(endpoint).unwrap_or(0);
            let limits = &shared.world.endpoints()[e].limits;
            match (limits.get(index), record.headers.get(index)) {
                (Some(l), Some(h)) => format!(
                    "Rate limit reached for {endpoint} on {} per {}: Limit {}, Remaining {}. {again}",
                    h.unit.header_suffix().replace('-', " "),
                    openai::duration(shared.clock.real_s(l.window_s)),
                    h.limit.floor() as u64,
                    h.remaining.max(0.0).floor() as u64,
                ),
                _ => format!("Rate limit reached for {endpoint}. {again}"),
            }
        }
        Refusal::Capacity => format!(
            "Rate limit reached for {endpoint}: too many requests in flight at once. {again}"
        ),
        Refusal::Quota | Refusal::Overloaded => {
            format!("Rate limit reached for {endpoint} on requests. {again}")
        }
    }
}

fn rejected(
    shared: &Shared,
    record: Record,
    rejection: Rejection,
) -> Result<Response<Body>, io::Error> {
    let end = record.start_s;
    match rejection {
        Rejection::Outage => {
            shared.write_log(&record.entry(
                end,
                EntryOutcome::Rejected,
                None,
                Some(ErrorKind::ConnectionRefused),
            ));
            Err(hang_up())
        }
        Rejection::Revoked => {
            shared.write_log(&record.entry(
                end,
                EntryOutcome::Rejected,
                Some(401),
                Some(ErrorKind::Unauthorized),
            ));
            let mut response = error_response(&ApiError {
                status: 401,
                message: "The API key was revoked.".into(),
                kind: "invalid_request_error",
                param: None,
                code: Some("invalid_api_key"),
            });
            limit_headers(&mut response, &shared.clock, &record.headers, None);
            Ok(response)
        }
        Rejection::TooLarge => {
            shared.write_log(&record.entry(
                end,
                EntryOutcome::Rejected,
                Some(400),
                Some(ErrorKind::TooLarge),
            ));
            let mut response = error_response(&ApiError {
                status: 400,
                message: too_large_message(&record),
                kind: "invalid_request_error",
                param: None,
                code: Some("request_too_large"),
            });
            limit_headers(&mut response, &shared.clock, &record.headers, None);
            Ok(response)
        }
    }
}

/// Why no wait admits the request: what it asks of the smallest limit it exceeds.
fn too_large_message(record: &Record) -> String {
    let input = record.input_tokens.unwrap_or(0.0);
    let max = record.max_tokens.unwrap_or(0.0);
    let exceeded = record
        .headers
        .iter()
        .map(|h| (h, h.unit.demand(input, max)))
        .filter(|(h, asked)| asked > &h.limit)
        .min_by(|a, b| a.0.limit.total_cmp(&b.0.limit));
    match exceeded {
        Some((h, asked)) => format!(
            "Request too large: it asks for {} {} ({} in the prompt, up to {} of output), more than the limit of {} a whole window allows. Lower max_tokens or shorten the prompt.",
            asked.ceil() as u64,
            h.unit.header_suffix().replace('-', " "),
            input.ceil() as u64,
            max.ceil() as u64,
            h.limit.floor() as u64,
        ),
        None => "Request too large: it asks more tokens than a limit allows in a whole window. Lower max_tokens or shorten the prompt.".into(),
    }
}

/// An admitted request: when it is dropped before it ended (the client went away, the server
/// stopped), the provider is told and the log says so.
struct InFlight {
    shared: Arc<Shared>,
    admission: Admission,
    record: Record,
    done: bool,
    /// When a streamed answer's first token was sent (after admission \[s, simulated\]).
    ttft: Option<f64>,
    /// The answer's headers are sent when it ends (a whole answer), not at admission (a
    /// stream's).
    headers_at_end: bool,
}

impl InFlight {
    /// Ends the request at `end_s` with what the client got.
    fn end(
        &mut self,
        end_s: f64,
        outcome: EntryOutcome,
        status: Option<u16>,
        error: Option<ErrorKind>,
        ttft_s: Option<f64>,
    ) {
        self.done = true;
        let written = written_at(&self.admission, self.record.start_s, end_s);
        let failed = outcome == EntryOutcome::Error;
        let start_s = self.record.start_s;
        let mut emulator = self.shared.emulator();
        emulator.finish(&self.admission, start_s, end_s, written, failed);
        if self.headers_at_end {
            // An answer sent whole carries the limits as this request leaves them.
            self.record.headers = emulator.headers(self.admission.endpoint, end_s);
        }
        drop(emulator);
        let mut entry = self.record.entry(end_s, outcome, status, error);
        if self.shared.world.tokens().is_some() {
            entry.output_tokens = Some(f64::from(if outcome == EntryOutcome::Ok {
                self.admission.output
            } else {
                written
            }));
        }
        entry.ttft_s = ttft_s;
        self.shared.write_log(&entry);
    }

    /// Simulated time the answer is due.
    fn due_s(&self) -> f64 {
        self.record.start_s + self.admission.latency_s
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if !self.done {
            let now = self.shared.clock.now();
            // A stream cut short still had its first token at its time.
            self.end(now, EntryOutcome::ClientTimeout, None, None, self.ttft);
        }
    }
}

/// Output tokens an admission started at `start_s` has written by `end_s`. A request that ran
/// to its due time wrote everything: compared with the due time itself, not through the
/// recomputed `(start + latency) - start`, which can come out an ulp short of the latency and
/// floor one token away (then returned to the limit as unused: 13 of 14 tokens charged).
fn written_at(admission: &Admission, start_s: f64, end_s: f64) -> u32 {
    if end_s >= start_s + admission.latency_s {
        admission.output
    } else {
        admission.written_by(end_s - start_s)
    }
}

/// `created`: the answer's Unix time, a wall-clock reading the API's shape asks for.
#[allow(clippy::disallowed_methods)]
fn envelope<'a>(id: &'a str, model: &'a str) -> Envelope<'a> {
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Envelope { id, created, model }
}

/// A non-streaming answer, after the latency.
async fn whole(
    mut guard: InFlight,
    id: String,
    request: ChatRequest,
) -> Result<Response<Body>, io::Error> {
    let due = guard.due_s();
    tokio::time::sleep_until(guard.shared.clock.at(due)).await;
    // The headers are sent now, so they say how the limits stand once this request settled.
    guard.headers_at_end = true;
    match guard.admission.failure {
        Some(FailureKind::Upstream) => {
            guard.end(
                due,
                EntryOutcome::Error,
                Some(503),
                Some(ErrorKind::Upstream),
                None,
            );
            let mut response = error_response(&server_error());
            limit_headers(
                &mut response,
                &guard.shared.clock,
                &guard.record.headers,
                None,
            );
            Ok(response)
        }
        Some(kind @ (FailureKind::Connection | FailureKind::Timeout)) => {
            guard.end(due, EntryOutcome::Error, None, Some(error_kind(kind)), None);
            Err(hang_up())
        }
        None => {
            guard.end(due, EntryOutcome::Ok, Some(200), None, None);
            let body = openai::completion(
                &envelope(&id, &request.model),
                &request,
                guard.admission.output,
            );
            let mut response = json_response(200, body);
            limit_headers(
                &mut response,
                &guard.shared.clock,
                &guard.record.headers,
                None,
            );
            Ok(response)
        }
    }
}

fn server_error() -> ApiError {
    ApiError {
        status: 503,
        message: "The server had an error while processing your request.".into(),
        kind: "server_error",
        param: None,
        code: None,
    }
}

fn error_kind(kind: FailureKind) -> ErrorKind {
    match kind {
        FailureKind::Upstream => ErrorKind::Upstream,
        FailureKind::Connection => ErrorKind::Connection,
        FailureKind::Timeout => ErrorKind::Timeout,
    }
}

/// A streamed answer: the status and headers at once, then the chunks as the tokens are
/// written, the last at the latency.
fn stream(guard: InFlight, id: String, request: ChatRequest) -> Response<Body> {
    // A failing answer writes nothing useful: its error comes at the latency.
    let plan = if guard.admission.failure.is_some() {
        Vec::new()
    } else {
        plan(&guard.admission)
    };
    let headers = guard.record.headers.clone();
    let shared = guard.shared.clone();
    let mut response = Response::new(Body::new(Sse {
        first: Some(openai::first_chunk(&envelope(&id, &request.model))),
        plan,
        next: 0,
        sleep: None,
        id,
        request: request.clone(),
        ttft: None,
        guard,
    }));
    limit_headers(&mut response, &shared.clock, &headers, None);
    let map = response.headers_mut();
    map.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    map.insert("cache-control", HeaderValue::from_static("no-cache"));
    response
}

/// When each text chunk is sent (after admission \[s, simulated\]) and its tokens: the first
/// token at the time to first token, then up to [`MAX_CHUNKS`] chunks as they are written.
fn plan(a: &Admission) -> Vec<(f64, u32)> {
    let chunks = a.output.clamp(1, MAX_CHUNKS);
    let decode = a.latency_s - a.ttft_s;
    let mut out = Vec::new();
    let mut sent = 0;
    // The first token comes at the time to first token, as a client measures it.
    if a.output >= 1 && a.ttft_s < a.latency_s {
        out.push((a.ttft_s, 1));
        sent = 1;
    }
    for i in 1..=chunks {
        let at = a.ttft_s + decode * f64::from(i) / f64::from(chunks);
        let written = if i == chunks {
            a.output
        } else {
            a.written_by(at)
        };
        if written > sent {
            out.push((at.min(a.latency_s), written - sent));
            sent = written;
        }
    }
    out
}

/// The body of a streamed answer: a timed sequence of server-sent events.
struct Sse {
    first: Option<String>,
    plan: Vec<(f64, u32)>,
    next: usize,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    id: String,
    request: ChatRequest,
    ttft: Option<f64>,
    guard: InFlight,
}

impl hyper::body::Body for Sse {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = &mut *self;
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(first)))));
        }
        if this.guard.done {
            return Poll::Ready(None);
        }
        let start = this.guard.record.start_s;
        // The next event: a text chunk, or the end at the latency.
        let (offset, tokens) = this
            .plan
            .get(this.next)
            .copied()
            .unwrap_or((this.guard.admission.latency_s, 0));
        let clock = &this.guard.shared.clock;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(clock.at(start + offset))));
        if sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        this.sleep = None;
        let env = envelope(&this.id, &this.request.model);
        if this.next < this.plan.len() {
            this.next += 1;
            this.ttft.get_or_insert(offset);
            this.guard.ttft = this.ttft;
            let text = openai::text_chunk(&env, tokens);
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(text)))));
        }
        let due = this.guard.due_s();
        let ttft = this.ttft;
        match this.guard.admission.failure {
            Some(FailureKind::Upstream) => {
                this.guard.end(
                    due,
                    EntryOutcome::Error,
                    Some(503),
                    Some(ErrorKind::Upstream),
                    ttft,
                );
                Poll::Ready(Some(Ok(Frame::data(Bytes::from(openai::stream_error(
                    &server_error(),
                ))))))
            }
            Some(kind @ (FailureKind::Connection | FailureKind::Timeout)) => {
                this.guard
                    .end(due, EntryOutcome::Error, None, Some(error_kind(kind)), ttft);
                Poll::Ready(Some(Err(hang_up())))
            }
            None => {
                this.guard.end(due, EntryOutcome::Ok, Some(200), None, ttft);
                let tail = openai::last_chunks(&env, &this.request, this.guard.admission.output);
                Poll::Ready(Some(Ok(Frame::data(Bytes::from(tail)))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit_of(pairs: &[(&'static str, &str)]) -> Result<WorkUnit, ApiError> {
        let mut headers = hyper::HeaderMap::new();
        for &(name, value) in pairs {
            headers.insert(name, HeaderValue::from_str(value).expect("a header value"));
        }
        WorkUnit::from_headers(&headers)
    }

    #[test]
    fn the_work_unit_comes_from_the_client_s_tags_and_its_sdk_s_retry_count() {
        assert_eq!(unit_of(&[]).expect("no tags"), WorkUnit::default());
        let tagged = unit_of(&[
            ("x-simbench-job", "17"),
            ("x-simbench-step", "2"),
            ("x-simbench-call", "0"),
            ("x-stainless-retry-count", "1"),
        ])
        .expect("valid tags");
        assert_eq!(
            tagged,
            WorkUnit {
                job: Some(17),
                step: Some(2),
                attempt: Some(2),
                call: Some(0),
            }
        );
        // Our own attempt wins over the SDK's count; the SDK's, malformed, is ignored.
        let ours = unit_of(&[
            ("x-simbench-attempt", "3"),
            ("x-stainless-retry-count", "0"),
        ]);
        assert_eq!(ours.expect("valid").attempt, Some(3));
        let odd = unit_of(&[("x-stainless-retry-count", "many")]);
        assert_eq!(odd.expect("ignored").attempt, None);
    }

    #[test]
    fn a_malformed_tag_is_a_400_naming_the_header() {
        for (name, value) in [
            ("x-simbench-job", "-1"),
            ("x-simbench-job", "seven"),
            ("x-simbench-job", "18446744073709551615"),
            ("x-simbench-step", "4294967296"),
            ("x-simbench-attempt", "0"),
            ("x-simbench-call", "1.5"),
        ] {
            let error = unit_of(&[(name, value)]).expect_err(value);
            assert_eq!(error.status, 400, "{name}: {value}");
            assert_eq!(error.param.as_deref(), Some(name));
            assert!(
                error.message.contains(&format!("`{value}`")),
                "{}",
                error.message
            );
        }
    }

    #[test]
    fn a_stream_sends_the_first_token_at_the_ttft_and_every_token_by_the_end() {
        let a = Admission {
            endpoint: 0,
            latency_s: 5.0,
            ttft_s: 1.0,
            failure: None,
            output: 200,
            size: None,
        };
        let chunks = plan(&a);
        assert_eq!(chunks[0], (1.0, 1));
        assert_eq!(chunks.iter().map(|c| c.1).sum::<u32>(), 200);
        assert!(chunks.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_eq!(chunks.last().unwrap().0, 5.0);
        assert!(chunks.len() <= MAX_CHUNKS as usize + 1);
        // Without tokens the text comes at the end.
        let whole = Admission {
            ttft_s: 5.0,
            output: 16,
            ..a
        };
        assert_eq!(plan(&whole), vec![(5.0, 16)]);
    }

    #[test]
    fn a_one_token_stream_sends_its_token_at_the_ttft() {
        let a = Admission {
            endpoint: 0,
            latency_s: 5.0,
            ttft_s: 1.0,
            failure: None,
            output: 1,
            size: None,
        };
        // The token at the time to first token; the stream ends at the latency.
        assert_eq!(plan(&a), vec![(1.0, 1)]);
    }

    #[test]
    fn a_request_that_ran_its_latency_wrote_all_its_output() {
        let a = Admission {
            endpoint: 0,
            latency_s: 0.17,
            ttft_s: 0.1,
            failure: None,
            output: 7,
            size: None,
        };
        // (1.7 + 0.17) - 1.7 is an ulp below 0.17: the recomputed elapsed time floored the
        // written tokens to 6.
        let start = 1.7;
        assert!((start + a.latency_s) - start < a.latency_s);
        assert_eq!(written_at(&a, start, start + a.latency_s), 7);
        assert_eq!(written_at(&a, start, start + a.latency_s + 1.0), 7);
        assert_eq!(written_at(&a, start, start + 0.135), 3);
        assert_eq!(written_at(&a, start, start + 0.05), 0);
    }

    #[test]
    fn ids_are_percent_decoded() {
        assert_eq!(percent_decode("org%2Fmodel%20v1").unwrap(), "org/model v1");
        assert_eq!(percent_decode("%C3%A9:x").unwrap(), "é:x");
        assert_eq!(percent_decode("plain").unwrap(), "plain");
        assert_eq!(percent_decode("").unwrap(), "");
        for bad in ["%", "%2", "%zz", "%FF", "a%2G", "%C3"] {
            assert_eq!(percent_decode(bad).expect_err(bad).status, 400, "{bad}");
        }
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for header in ["Bearer k", "bearer k", "BEARER k", " Bearer  k"] {
            assert_eq!(bearer_token(header), Some("k"), "{header}");
        }
        assert_eq!(bearer_token("Basic k"), None);
        assert_eq!(bearer_token("Bearerk"), None);
    }
}
