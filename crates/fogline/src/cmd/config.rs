//! `fogline config`: show and check configuration files.

use std::path::PathBuf;

use clap::Subcommand;
use fogline_server::{Config, DEFAULT_CONFIG};

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
        ConfigCommand::Default => print!("{DEFAULT_CONFIG}"),
        ConfigCommand::Check { file } => {
            let cfg = Config::load(&file)?;
            println!("{}", toml::to_string_pretty(&cfg)?);
        }
    }
    Ok(())
}
