//! The search daemon: a one-off `docloupe search` that needs an embedding model spends most
//! of its time loading it (multilingual E5: about 1 s of a 1.1–1.4 s call; the query itself
//! takes tens of milliseconds), and an agent's `/search` runs the command again for every
//! question. So a hybrid or semantic `docloupe search` first asks a daemon of this user's
//! (`docloupe daemon`, on a Unix socket in `$DOCLOUPE_CACHE/run`, readable by the user alone)
//! that keeps the engines it loaded; where none answers, it searches itself and then starts
//! one for the next call. The daemon answers exactly what the command would (the same
//! engine, options and request; the answer is the contract's response, rendered by the
//! command), reloads a bundle that changed on disk, keeps at most [`MAX_ENGINES`] engines,
//! and exits after [`IDLE`] without a request. `DOCLOUPE_DAEMON=off` turns it off.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use docloupe::{Engine, ErrorResponse, SearchRequest, SearchResponse};

/// How long the daemon waits for a request before it exits (`DOCLOUPE_DAEMON_IDLE`, in
/// seconds, to change it).
pub const IDLE: Duration = Duration::from_secs(600);

fn idle() -> Duration {
    std::env::var("DOCLOUPE_DAEMON_IDLE")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(IDLE, Duration::from_secs)
}
/// Engines (a bundle with its models and options each) kept at once.
pub const MAX_ENGINES: usize = 2;
/// Longest request or answer line.
const MAX_LINE: usize = 8 << 20;

/// What the engine is made of: the command's choices that change an answer. Two calls with
/// the same configuration get the same engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// The bundle file or split folder, absolute.
    pub bundle: PathBuf,
    /// What the bundle was on disk when the engine was loaded: size, modification time and
    /// inode of the file (of `core.bin`, for a folder).
    pub stamp: Stamp,
    pub models: PathBuf,
    /// The cross-encoder, where the command has one (`--reranker`, `$DOCLOUPE_RERANKER_DIR`):
    /// the daemon reads no setting of its own environment.
    pub reranker: Option<PathBuf>,
    pub no_reranker: bool,
    pub rerank_budget_ms: u64,
    pub error_on_total_failure: bool,
    pub portable_kernels: bool,
    /// What embeds the questions (`--query-model`, `$DOCLOUPE_QUERY_MODEL`).
    pub query_model: docloupe::embed::QueryModel,
}

/// A file's identity and version on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    size: u64,
    modified_ns: u128,
    inode: u64,
}

impl Stamp {
    /// The stamp of the bundle at `path` (its `core.bin` when it is a split folder).
    pub fn of(path: &Path) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        let file = if path.is_dir() {
            path.join("core.bin")
        } else {
            path.to_path_buf()
        };
        let meta = std::fs::metadata(file).ok()?;
        Some(Stamp {
            size: meta.len(),
            modified_ns: meta
                .modified()
                .ok()?
                .duration_since(SystemTime::UNIX_EPOCH)
                .ok()?
                .as_nanos(),
            inode: meta.ino(),
        })
    }
}

#[derive(Serialize, Deserialize)]
struct Ask {
    config: Config,
    request: SearchRequest,
    /// [`SearchRequest::by_document`], which the contract's JSON does not carry.
    by_document: bool,
}

#[derive(Serialize, Deserialize)]
enum Answer {
    Ok(Box<SearchResponse>),
    Err(ErrorResponse),
    /// The daemon could not load the engine: the command searches itself.
    Unavailable(String),
}

/// Whether the daemon may be used (`DOCLOUPE_DAEMON=off` says no).
pub fn enabled() -> bool {
    std::env::var("DOCLOUPE_DAEMON").map_or(true, |v| v != "off")
}

/// The daemon's socket: `$DOCLOUPE_CACHE/run/search.sock` (`None` when that path is too long
/// for a Unix socket).
fn socket_path() -> Option<PathBuf> {
    let path = docloupe::embed::cache_root()
        .join("run")
        .join("search.sock");
    (path.as_os_str().len() < 100).then_some(path)
}

/// The daemon's answer to `request` under `config`, or `None` when no daemon answers (or it
/// cannot load that engine).
pub fn ask(
    config: &Config,
    request: &SearchRequest,
) -> Option<Result<SearchResponse, ErrorResponse>> {
    let mut stream = UnixStream::connect(socket_path()?).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .ok()?;
    let mut line = serde_json::to_vec(&Ask {
        config: config.clone(),
        request: request.clone(),
        by_document: request.by_document,
    })
    .ok()?;
    line.push(b'\n');
    stream.write_all(&line).ok()?;
    let mut answer = String::new();
    BufReader::new(stream.take_bounded())
        .read_line(&mut answer)
        .ok()?;
    match serde_json::from_str(&answer).ok()? {
        Answer::Ok(r) => Some(Ok(*r)),
        Answer::Err(e) => Some(Err(e)),
        Answer::Unavailable(_) => None,
    }
}

/// Reads at most [`MAX_LINE`] bytes of a stream.
trait TakeBounded {
    fn take_bounded(self) -> std::io::Take<Self>
    where
        Self: Sized;
}

impl<R: std::io::Read> TakeBounded for R {
    fn take_bounded(self) -> std::io::Take<Self> {
        self.take(MAX_LINE as u64)
    }
}

/// Starts `docloupe daemon` in a session of its own (it outlives this command and its
/// terminal), its output nowhere, loading `config`'s engine first. A daemon already listening
/// makes the new one exit at once.
pub fn start(config: &Config) {
    use std::os::unix::process::CommandExt;
    let (Ok(exe), Ok(warm)) = (std::env::current_exe(), serde_json::to_string(config)) else {
        return;
    };
    let mut cmd = std::process::Command::new(exe);
    // Every setting comes with each request's configuration, none from the environment.
    cmd.arg("daemon")
        .env(WARM_ENV, warm)
        .env_remove("DOCLOUPE_RERANKER_DIR")
        .env_remove("DOCLOUPE_MODEL_DIR")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: runs in the forked child before exec; setsid is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let _ = cmd.spawn();
}

/// An engine kept by the daemon, with when it was last used.
struct Kept {
    config: Config,
    engine: Engine,
    used: Instant,
}

/// The configuration a new daemon loads before its first request (JSON), from the command
/// that started it.
const WARM_ENV: &str = "DOCLOUPE_DAEMON_WARM";

/// `docloupe daemon`: serves until [`IDLE`] passes without a request. Exits at once when
/// another daemon already listens.
pub fn serve() -> Result<()> {
    let path = socket_path().context("the cache path is too long for a Unix socket")?;
    let dir = path.parent().expect("under the cache");
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let listener = match UnixListener::bind(&path) {
        Ok(l) => l,
        Err(_) if UnixStream::connect(&path).is_ok() => return Ok(()),
        Err(_) => {
            // A socket left by a daemon that died.
            let _ = std::fs::remove_file(&path);
            UnixListener::bind(&path)
                .with_context(|| format!("cannot listen on {}", path.display()))?
        }
    };
    listener.set_nonblocking(true)?;
    let inode = |p: &Path| {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(p).map(|m| m.ino()).ok()
    };
    let ours = inode(&path);
    let mut kept: Vec<Kept> = Vec::new();
    // The engine of the call that started it, loaded while the first connections wait in the
    // socket's backlog (each waits less than loading it itself would take).
    if let Some(config) = std::env::var(WARM_ENV)
        .ok()
        .and_then(|w| serde_json::from_str::<Config>(&w).ok())
    {
        let _ = engine_for(&config, &mut kept);
    }
    let mut last = Instant::now();
    let idle = idle();
    // Its process id, for whoever must stop it.
    let _ = std::fs::write(dir.join("search.pid"), std::process::id().to_string());
    while last.elapsed() < idle {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = stream.set_nonblocking(false);
                answer(stream, &mut kept);
                last = Instant::now();
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
        // The socket was removed, or another daemon's replaced it: that one serves.
        if inode(&path) != ours {
            return Ok(());
        }
    }
    if inode(&path) == ours {
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(dir.join("search.pid"));
    }
    Ok(())
}

/// Reads one request from `stream` and writes its answer.
fn answer(stream: UnixStream, kept: &mut Vec<Kept>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut line = String::new();
    let Ok(reader) = stream.try_clone() else {
        return;
    };
    if BufReader::new(reader.take_bounded())
        .read_line(&mut line)
        .is_err()
    {
        return;
    }
    let reply = match serde_json::from_str::<Ask>(&line) {
        Ok(mut ask) => match engine_for(&ask.config, kept) {
            Ok(engine) => match search(engine, &ask.config, {
                ask.request.by_document = ask.by_document;
                &ask.request
            }) {
                Ok(r) => Answer::Ok(Box::new(r)),
                Err(e) => Answer::Err(ErrorResponse::from(&e)),
            },
            Err(e) => Answer::Unavailable(format!("{e:#}")),
        },
        Err(e) => Answer::Unavailable(format!("not a request: {e}")),
    };
    let mut stream = stream;
    if let Ok(mut bytes) = serde_json::to_vec(&reply) {
        bytes.push(b'\n');
        let _ = stream.write_all(&bytes);
    }
}

fn search(
    engine: &mut Engine,
    config: &Config,
    request: &SearchRequest,
) -> docloupe::Result<SearchResponse> {
    if config.bundle.is_dir() {
        engine.search_fetching(request, |name| crate::read_piece(&config.bundle, name))
    } else {
        engine.search_guarded(request)
    }
}

/// The engine `config` names: kept, or loaded (as `docloupe search` loads it), the least
/// recently used one let go when there are [`MAX_ENGINES`]. A bundle whose stamp changed is
/// loaded again.
fn engine_for<'k>(config: &Config, kept: &'k mut Vec<Kept>) -> Result<&'k mut Engine> {
    kept.retain(|k| {
        k.config.bundle != config.bundle || Stamp::of(&k.config.bundle) == Some(k.config.stamp)
    });
    if let Some(i) = kept.iter().position(|k| &k.config == config) {
        kept[i].used = Instant::now();
        return Ok(&mut kept[i].engine);
    }
    if Stamp::of(&config.bundle) != Some(config.stamp) {
        anyhow::bail!(
            "{} changed since the command looked",
            config.bundle.display()
        );
    }
    let engine = crate::load_engine(config)?;
    if kept.len() >= MAX_ENGINES {
        let oldest = (0..kept.len())
            .min_by_key(|&i| kept[i].used)
            .expect("not empty");
        kept.remove(oldest);
    }
    kept.push(Kept {
        config: config.clone(),
        engine,
        used: Instant::now(),
    });
    Ok(&mut kept.last_mut().expect("pushed").engine)
}
