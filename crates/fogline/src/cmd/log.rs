//! `fogline log verify`: check (and repair) a data directory offline.

use std::path::PathBuf;

use clap::Subcommand;

/// Offline log tools (do not run against a directory a server has open).
#[derive(Subcommand, Debug)]
pub enum LogCommand {
    /// Check every record of every segment under DIR (a data directory or one stream's
    /// directory), and that no segment file is missing; exits 1 on problems.
    Verify {
        /// The directory.
        dir: PathBuf,
        /// Mark damaged records lost (keeping every intact one), cut torn tails, rebuild
        /// indexes, and mark the offsets of a missing segment file lost.
        #[arg(long)]
        repair: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a log subcommand; exits 1 when damage remains (found and not repaired).
pub fn run(cmd: LogCommand) -> anyhow::Result<()> {
    match cmd {
        LogCommand::Verify { dir, repair, json } => {
            let report = fogline_log::verify(&dir, repair)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("{report}");
            }
            if !report.is_ok_now() {
                std::process::exit(1);
            }
        }
    }
    Ok(())
}
