//! One module per subcommand.
pub mod announce;
pub mod bridge;
pub mod config;
pub mod connect;
pub mod consumer;
pub mod demo;
pub mod function;
pub mod gm;
pub mod log;
pub mod passwd;
pub mod publish;
pub mod query;
pub mod rule;
pub mod serve;
pub mod sql;
pub mod stream;
pub mod subscribe;

/// A tokio runtime for a command; `threads` workers, or one per core the process may use.
///
/// One worker means a single-threaded runtime: on a one-core board, or a server pinned to one
/// core, every task runs on the thread that drives it, without the multi-threaded
/// scheduler's cross-thread queues and wake-ups.
pub fn runtime(threads: Option<usize>) -> anyhow::Result<tokio::runtime::Runtime> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let n = threads.unwrap_or(cores).max(1);
    let mut b = if n == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(n);
        b
    };
    b.enable_all();
    Ok(b.build()?)
}
