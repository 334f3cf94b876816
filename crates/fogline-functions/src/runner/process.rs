//! Process functions: one child per instance, records on its stdin, results from its stdout.
//!
//! - Framing: one record per line, `payload\n`. A payload containing `\n`, or longer than
//!   `max_line_bytes`, is refused (a failure) rather than escaped, so the child sees exactly
//!   the bytes that were published. Each stdout line (without its `\n`) is one result; a
//!   longer line than `max_line_bytes` is skipped and counted as a failure.
//! - In flight: records wait for stdin in a channel of `queue` records. When it is full the
//!   instance stops reading its subscription, and the broker's slow-consumer policy for the
//!   subscription queue decides (block the publishers, drop the oldest with a count, or cut
//!   the subscription off, which fails the instance).
//! - stderr: logged line by line (each cut to [`STDERR_LINE`] bytes), at most
//!   [`STDERR_LINES`] lines per child; the rest are counted in one closing message.
//! - A child that exits on its own is restarted after 1 s, 2 s, 4 s ... up to 30 s; one that
//!   lived [`STABLE_AFTER_SECS`] resets the backoff. After `max_restarts` restarts in a row
//!   the instance is failed. Records waiting in the channel go to the next child; the one
//!   being written when the child died counts as a failure.
//! - Each child leads a process group of its own. Stop sends SIGKILL to the group (the
//!   child and whatever it started) and reaps the child; after a child exits on its own,
//!   what it left running in its group is killed too, so nothing piles up over restarts.
//!   `kill_on_drop` covers a dropped task (the child only).

use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use fogline_broker::link::LinkSubscription;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::lines::{LineReader, Next};
use super::{Ctx, InstanceState, Publisher};
use crate::error::FunctionError;
use crate::spec::{ProcessSpec, STABLE_AFTER_SECS};
use std::sync::atomic::Ordering::Relaxed;

/// Longest stderr line logged.
const STDERR_LINE: usize = 1024;
/// stderr lines logged per child.
const STDERR_LINES: u32 = 100;
/// Longest wait between restarts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How often a feeder waiting for room looks whether its subscription was cut off.
const CUT_OFF_CHECK: Duration = Duration::from_millis(250);
/// How long an exited child's stdout may still be read for results it wrote.
const DRAIN: Duration = Duration::from_secs(2);

/// Spawns the function's command with piped stdio.
pub(crate) fn spawn(name: &str, spec: &ProcessSpec) -> Result<Child, FunctionError> {
    Command::new(&spec.command)
        .args(&spec.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // Its own group, so stop reaches what it starts, and a terminal's Ctrl-C meant
        // for the node does not reach it.
        .process_group(0)
        .spawn()
        .map_err(|source| FunctionError::Spawn {
            name: name.to_string(),
            command: spec.command.clone(),
            source,
        })
}

/// How one child's life ended.
enum End {
    Stop,
    /// The feeder ended: the subscription was cut off (why, when known).
    SourceClosed(Option<String>),
    Exited(std::io::Result<ExitStatus>),
}

/// Runs the instance until it is stopped or fails.
pub(crate) async fn run(
    mut ctx: Ctx,
    spec: ProcessSpec,
    sub: LinkSubscription,
    first: Child,
) -> InstanceState {
    let (tx, mut rx) = mpsc::channel(spec.queue);
    let mut feeder = tokio::spawn(feed(ctx.out.clone(), spec.max_line_bytes, sub, tx));
    let mut child = first;
    let mut backoff = Duration::from_secs(1);
    let mut in_a_row = 0;
    let state = loop {
        let born = Instant::now();
        let end = serve(&mut ctx, &spec, &mut child, &mut rx, &mut feeder).await;
        let status = match end {
            End::Stop => break InstanceState::Stopped,
            End::SourceClosed(why) => break failed(why),
            End::Exited(status) => status,
        };
        let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
        if born.elapsed() >= Duration::from_secs(STABLE_AFTER_SECS) {
            backoff = Duration::from_secs(1);
            in_a_row = 0;
        }
        if in_a_row >= spec.max_restarts {
            let reason =
                format!("the child exited ({status}) after {in_a_row} restart(s) in a row");
            break InstanceState::Failed { reason };
        }
        let function = &ctx.out.function;
        tracing::warn!(%function, %status, ?backoff, "function: child exited; restarting");
        tokio::select! {
            _ = ctx.stopped() => break InstanceState::Stopped,
            _ = tokio::time::sleep(backoff) => {}
        }
        in_a_row += 1;
        backoff = (backoff * 2).min(MAX_BACKOFF);
        child = match spawn(&ctx.out.function, &spec) {
            Ok(c) => c,
            Err(e) => {
                break InstanceState::Failed {
                    reason: e.to_string(),
                }
            }
        };
        ctx.out.status.counters().restarts.fetch_add(1, Relaxed);
    };
    feeder.abort();
    state
}

fn failed(why: Option<String>) -> InstanceState {
    InstanceState::Failed {
        reason: why.unwrap_or_else(|| "the source subscription ended".to_string()),
    }
}

/// Feeds one child until it exits, the instance is stopped or the source ends.
async fn serve(
    ctx: &mut Ctx,
    spec: &ProcessSpec,
    child: &mut Child,
    rx: &mut mpsc::Receiver<Bytes>,
    feeder: &mut JoinHandle<Option<String>>,
) -> End {
    let pid = child.id();
    ctx.out.status.set_pid(pid);
    let mut stdin = child.stdin.take();
    let stdout = child.stdout.take().map(|out| {
        let reader = LineReader::new(BufReader::new(out), spec.max_line_bytes);
        tokio::spawn(read_results(ctx.out.clone(), reader))
    });
    if let Some(err) = child.stderr.take() {
        let reader = LineReader::new(BufReader::new(err), STDERR_LINE);
        tokio::spawn(log_stderr(ctx.out.function.clone(), reader));
    }
    let end = loop {
        let record = tokio::select! {
            _ = ctx.stopped() => break End::Stop,
            status = child.wait() => break End::Exited(status),
            r = rx.recv() => r,
        };
        let Some(record) = record else {
            break End::SourceClosed(feeder.await.ok().flatten());
        };
        // A child that does not read holds this write; the feeder ending (its
        // subscription cut off as slow) must still end the instance.
        let wrote = tokio::select! {
            _ = ctx.stopped() => break End::Stop,
            why = &mut *feeder => break End::SourceClosed(why.ok().flatten()),
            r = write_line(stdin.as_mut(), &record) => r,
        };
        if let Err(e) = wrote {
            ctx.out
                .status
                .fail_record(&ctx.out.function, format!("stdin: {e}"));
            // The child closed stdin or died: wait for its exit rather than fail more
            // records on a dead pipe.
            drop(stdin.take());
            break tokio::select! {
                _ = ctx.stopped() => End::Stop,
                status = child.wait() => End::Exited(status),
            };
        }
    };
    drop(stdin);
    if let Some(pid) = pid {
        kill_group(pid);
    }
    if !matches!(end, End::Exited(_)) {
        // The group kill reached the child; wait reaps it, so no zombie is left.
        let _ = child.wait().await;
    }
    ctx.out.status.set_pid(None);
    if let Some(task) = stdout {
        finish_reader(task, matches!(end, End::Exited(_))).await;
    }
    end
}

/// Sends SIGKILL to the process group `pid` leads. After the leader exited on its own
/// the group may be empty (`ESRCH`, ignored); a group id is not reused while the group has
/// members, and the leader's pid only after a wrap-around of the pid space.
fn kill_group(pid: u32) {
    let Ok(group) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: kill(2) takes plain integers and touches no memory of this process.
    let rc = unsafe { libc::kill(-group, libc::SIGKILL) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ESRCH) {
            tracing::warn!(pid, error = %e, "function: killing the child's process group");
        }
    }
}

/// After an exit, lets the stdout reader publish what the child wrote last; after a
/// stop, ends it.
async fn finish_reader(task: JoinHandle<()>, drain: bool) {
    if drain {
        let abort = task.abort_handle();
        if tokio::time::timeout(DRAIN, task).await.is_err() {
            // A grandchild may still hold stdout open.
            abort.abort();
        }
    } else {
        task.abort();
    }
}

async fn write_line(stdin: Option<&mut ChildStdin>, record: &[u8]) -> std::io::Result<()> {
    let Some(stdin) = stdin else {
        return Err(std::io::ErrorKind::BrokenPipe.into());
    };
    stdin.write_all(record).await?;
    stdin.write_all(b"\n").await?;
    stdin.flush().await
}

/// Reads the subscription into the channel, refusing records the framing cannot carry.
/// Returns why the source ended.
async fn feed(
    out: Publisher,
    max_line: usize,
    mut sub: LinkSubscription,
    tx: mpsc::Sender<Bytes>,
) -> Option<String> {
    let ended = |sub: &LinkSubscription| {
        sub.closed()
            .map(|r| format!("the source subscription ended: {r:?}"))
    };
    loop {
        // Room first, then a record: while the queue is full the subscription is not
        // read, and the broker may cut it off, which nothing would see from `recv`.
        let permit = loop {
            tokio::select! {
                p = tx.reserve() => break p,
                _ = tokio::time::sleep(CUT_OFF_CHECK) => {
                    if sub.closed().is_some() {
                        return ended(&sub);
                    }
                }
            }
        };
        let Ok(permit) = permit else {
            return None;
        };
        let m = sub.recv().await;
        let c = out.status.counters();
        c.dropped.store(sub.dropped(), Relaxed);
        let Some(m) = m else {
            return ended(&sub);
        };
        c.records_in.fetch_add(1, Relaxed);
        if m.payload.contains(&b'\n') {
            out.status
                .fail_record(&out.function, "record contains a newline".into());
        } else if m.payload.len() > max_line {
            let why = format!("record of {} bytes > max_line_bytes", m.payload.len());
            out.status.fail_record(&out.function, why);
        } else {
            permit.send(m.payload);
        }
    }
}

/// Publishes each stdout line as a result.
async fn read_results<R>(out: Publisher, mut reader: LineReader<R>)
where
    R: tokio::io::AsyncRead + Unpin,
{
    loop {
        match reader.next().await {
            Ok(Next::Line) => out.publish(&[], reader.line()).await,
            Ok(Next::TooLong) => out
                .status
                .fail_record(&out.function, "output line > max_line_bytes".into()),
            Ok(Next::Eof) => return,
            Err(e) => {
                tracing::debug!(function = %out.function, error = %e, "function: stdout");
                return;
            }
        }
    }
}

async fn log_stderr<R>(function: String, mut reader: LineReader<R>)
where
    R: tokio::io::AsyncRead + Unpin,
{
    let (mut logged, mut skipped) = (0u32, 0u64);
    loop {
        match reader.next().await {
            Ok(Next::Line | Next::TooLong) if logged < STDERR_LINES => {
                logged += 1;
                let line = String::from_utf8_lossy(reader.line());
                tracing::warn!(%function, stderr = %line, "function stderr");
            }
            Ok(Next::Line | Next::TooLong) => skipped += 1,
            Ok(Next::Eof) | Err(_) => break,
        }
    }
    if skipped > 0 {
        tracing::warn!(%function, skipped, "function stderr: lines not logged");
    }
}
