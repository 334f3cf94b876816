//! The `fogline` command line: one binary for the server and its tools.

mod cmd;

use clap::{Parser, Subcommand};

/// fogline: an edge data-streaming engine.
#[derive(Parser)]
#[command(name = "fogline", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Each subcommand lives in its own module under `cmd/`.
#[derive(Subcommand)]
enum Command {
    /// Run a server, a publisher and subscribers in one process: see records flow.
    Demo(cmd::demo::DemoArgs),
    /// Run a node: the broker, the native and MQTT listeners, the admin API and dashboard.
    Serve(cmd::serve::ServeArgs),
    /// Publish records.
    Pub(cmd::publish::PubArgs),
    /// Receive records (live, or replayed from a stream).
    Sub(cmd::subscribe::SubArgs),
    /// Run a command only while somebody is interested in what it publishes
    /// (notify_interest): `fogline announce -t TOPIC -p PROFILE -- CMD ARGS`.
    Announce(cmd::announce::AnnounceArgs),
    /// Query a node's store by data profile, time and topic (or --delete what it selects).
    Query(cmd::query::QueryArgs),
    /// Manage the streams of a running node (ls, info, add, edit, purge, rm).
    #[command(subcommand)]
    Stream(cmd::stream::StreamCommand),
    /// Inspect and delete the durable consumers of a running node (ls, info, rm).
    #[command(subcommand)]
    Consumer(cmd::consumer::ConsumerCommand),
    /// Manage the SQL rules of a running node (create, ls, show, status, start, stop, rm).
    #[command(subcommand)]
    Rule(cmd::rule::RuleCommand),
    /// Manage the pattern sets of the matcher operators (add, ls, rm).
    #[command(subcommand)]
    Pattern(cmd::rule::PatternCommand),
    /// Manage the functions on demand of a running node (store, ls, show, start, stop, rm,
    /// instances).
    #[command(subcommand)]
    Function(cmd::function::FunctionCommand),
    /// Inspect the bridges of a running node (ls, status).
    #[command(subcommand)]
    Bridge(cmd::bridge::BridgeCommand),
    /// Run an ad-hoc SQL query on a running node and print its results live.
    Sql(cmd::sql::SqlArgs),
    /// Show or check configuration.
    #[command(subcommand)]
    Config(cmd::config::ConfigCommand),
    /// Check or repair a data directory offline.
    #[command(subcommand)]
    Log(cmd::log::LogCommand),
    /// Add, change or delete a user of a Mosquitto password file (as mosquitto_passwd).
    Passwd(cmd::passwd::PasswdArgs),
    /// Geometric monitoring: the thesis' Table 3.2 and Fig. 3.5 reproductions, data.
    #[command(subcommand)]
    Gm(cmd::gm::GmCommand),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // The server reports what it does; tools stay quiet unless asked (FOGLINE_LOG).
    // rskafka logs each failed attempt; the Kafka bridge reports its own failures, once.
    let default_level = if matches!(cli.command, Command::Serve(_)) {
        "info,rskafka=error"
    } else {
        "warn,rskafka=error"
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FOGLINE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level)),
        )
        .with_writer(std::io::stderr)
        // Colours for a terminal only: a log file or a pipe gets plain text.
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none(),
        )
        .init();
    if !matches!(cli.command, Command::Serve(_) | Command::Demo(_)) {
        quiet_on_closed_pipe();
    }
    match cli.command {
        Command::Demo(args) => cmd::demo::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Pub(args) => cmd::publish::run(args),
        Command::Sub(args) => cmd::subscribe::run(args),
        Command::Announce(args) => cmd::announce::run(args),
        Command::Query(args) => cmd::query::run(args),
        Command::Stream(c) => cmd::stream::run(c),
        Command::Consumer(c) => cmd::consumer::run(c),
        Command::Rule(c) => cmd::rule::run(c),
        Command::Pattern(c) => cmd::rule::run_pattern(c),
        Command::Function(c) => cmd::function::run(c),
        Command::Bridge(c) => cmd::bridge::run(c),
        Command::Sql(a) => cmd::sql::run(a),
        Command::Config(c) => cmd::config::run(c),
        Command::Log(c) => cmd::log::run(c),
        Command::Passwd(a) => cmd::passwd::run(a),
        Command::Gm(c) => cmd::gm::run(c),
    }
}

/// A tool whose output is piped into a reader that stops early (`fogline sub | head`) ends
/// quietly, as Unix tools do, instead of panicking on the failed write: the default action
/// of SIGPIPE is restored (Rust ignores it). Sockets are unaffected: their writes do not
/// raise it (MSG_NOSIGNAL). The server keeps ignoring it.
fn quiet_on_closed_pipe() {
    // SAFETY: restoring a signal's default action; no handler is installed.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(test)]
mod tests {
    /// Clap's own checks of every subcommand (clashing names, bad defaults), which it
    /// otherwise makes only when that subcommand is run.
    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
