//! `fogline config`: show and check configuration files.

use std::path::PathBuf;

use clap::Subcommand;
use fogline_node::{default_file, Config};

/// Configuration tools.
#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Print the documented default configuration.
    Default,
    /// Check a configuration file and print it as the server reads it.
    Check {
        /// The file.
        file: PathBuf,
    },
}

/// Runs a config subcommand.
pub fn run(cmd: ConfigCommand) -> anyhow::Result<()> {
    match cmd {
        ConfigCommand::Default => print!("{}", default_file()),
        ConfigCommand::Check { file } => {
            let cfg = Config::load(&file)?;
            println!("{}", toml::to_string_pretty(&cfg)?);
        }
    }
    Ok(())
}
