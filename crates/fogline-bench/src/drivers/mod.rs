//! One driver per system, each on the system's standard Rust client.

use std::sync::Arc;

use crate::driver::{Driver, DriverError, Durability};
use crate::system::System;

pub mod memory;

/// A driver for `system` reachable at `addr` (`127.0.0.1:port`).
///
/// # Errors
/// [`DriverError::Unsupported`] when the system's driver is not compiled into this build.
pub fn connect(
    system: System,
    addr: &str,
    durability: Durability,
) -> Result<Arc<dyn Driver>, DriverError> {
    let _ = (addr, durability);
    match system {
        System::Memory => Ok(Arc::new(memory::MemoryDriver::default())),
        _ => Err(DriverError::Unsupported {
            system: system.name(),
            what: "this build (driver not compiled in; build with the `peers` feature)",
        }),
    }
}
