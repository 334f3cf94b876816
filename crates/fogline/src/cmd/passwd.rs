//! `fogline passwd`: add, change or delete a user of a Mosquitto password file, as
//! `mosquitto_passwd` does (same flags), through `fogline_auth::passwd`.

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use fogline_auth::passwd::{check_user_name, Change, PasswordFile, DEFAULT_ITERATIONS};

/// Add or change USER's password in FILE (a Mosquitto `password_file`), or delete USER.
///
/// The password is asked twice on a terminal; without one, it is the first line of the
/// standard input; `-b` takes it from the command line instead. The file is replaced
/// atomically; its other lines are kept as they are.
#[derive(Args, Debug)]
pub struct PasswdArgs {
    /// Create FILE, replacing any file there (as `mosquitto_passwd -c`).
    #[arg(short = 'c', conflicts_with = "delete")]
    create: bool,
    /// Delete USER from FILE.
    #[arg(short = 'D', conflicts_with_all = ["batch", "password"])]
    delete: bool,
    /// Batch mode: the password is PASSWORD, the argument after USER (other users of the
    /// machine can see it in the process list, and it stays in shell history).
    #[arg(short = 'b', requires = "password")]
    batch: bool,
    /// PBKDF2 iterations of the new hash (Mosquitto 2.0 writes 101).
    #[arg(long, default_value_t = DEFAULT_ITERATIONS)]
    iterations: u32,
    /// The password file.
    file: PathBuf,
    /// The user.
    user: String,
    /// The password, with -b.
    #[arg(requires = "batch")]
    password: Option<String>,
}

/// Runs `fogline passwd`; any failure leaves FILE as it was.
pub fn run(args: PasswdArgs) -> anyhow::Result<()> {
    check_user_name(&args.user)
        .with_context(|| format!("user name {:?} cannot be in a password file", args.user))?;
    let mut file = if args.create {
        PasswordFile::new()
    } else {
        PasswordFile::load(&args.file).map_err(|e| match e {
            fogline_auth::passwd::Error::Io { source, .. }
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                anyhow::anyhow!("{}: no such file (-c creates one)", args.file.display())
            }
            e => e.into(),
        })?
    };
    let what = if args.delete {
        if !file.remove(&args.user) {
            bail!("user {} is not in {}", args.user, args.file.display());
        }
        "deleted from"
    } else {
        let password = match args.password {
            Some(p) => p,
            None => read_password()?,
        };
        if password.is_empty() {
            bail!("empty password");
        }
        match file.set(&args.user, password.as_bytes(), args.iterations)? {
            Change::Added => "added to",
            Change::Replaced => "password changed in",
        }
    };
    file.save(&args.file)?;
    eprintln!("{}: {what} {}", args.user, args.file.display());
    Ok(())
}

/// The password: typed twice on a terminal (not echoed), or the first line of the standard
/// input (a script's pipe), without its line ending.
fn read_password() -> anyhow::Result<String> {
    if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password("Password: ")?;
        let again = rpassword::prompt_password("Reenter password: ")?;
        if first != again {
            bail!("the passwords do not match");
        }
        return Ok(first);
    }
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("reading the password from the standard input")?;
    let end = line.trim_end_matches(['\r', '\n']).len();
    line.truncate(end);
    Ok(line)
}
