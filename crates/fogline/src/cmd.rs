//! One module per subcommand.
pub mod bench;
pub mod config;
pub mod demo;
pub mod detect;
pub mod log;
pub mod matching;
pub mod publish;
pub mod serve;
pub mod stream;
pub mod subscribe;

/// A tokio runtime for a command; `threads` workers, or one per core.
pub fn runtime(threads: Option<usize>) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    b.enable_all();
    if let Some(n) = threads {
        b.worker_threads(n.max(1));
    }
    Ok(b.build()?)
}
