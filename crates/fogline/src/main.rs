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
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
    }
}
