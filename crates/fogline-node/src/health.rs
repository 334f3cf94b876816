//! The components' health: each one's state, why it failed, and its listeners. The admin API
//! reads it (`/healthz`, `/api/v1/node`, the `fogline_component_up` metric).

use fogline_admin::{ComponentState, ComponentStatus, Components, Endpoint};
use parking_lot::Mutex;

/// Every component's status, in start order.
#[derive(Debug, Default)]
pub struct Board {
    entries: Mutex<Vec<ComponentStatus>>,
    /// Every change of state, in order (what stopped before what).
    history: Mutex<Vec<(String, ComponentState)>>,
}

impl Board {
    /// A board listing `names`, all starting.
    pub fn new(names: &[&str]) -> Board {
        Board {
            entries: Mutex::new(
                names
                    .iter()
                    .map(|n| ComponentStatus {
                        name: n.to_string(),
                        state: ComponentState::Starting,
                        detail: None,
                        endpoints: Vec::new(),
                    })
                    .collect(),
            ),
            history: Mutex::new(Vec::new()),
        }
    }

    /// Sets `name`'s state (and detail, when given).
    pub fn set(&self, name: &str, state: ComponentState, detail: Option<String>) {
        if let Some(e) = self.entries.lock().iter_mut().find(|e| e.name == name) {
            e.state = state;
            if detail.is_some() {
                e.detail = detail;
            }
            self.history.lock().push((name.to_string(), state));
        }
    }

    /// Every change of state so far, in order.
    pub fn history(&self) -> Vec<(String, ComponentState)> {
        self.history.lock().clone()
    }

    /// Records `name`'s listeners.
    pub fn set_endpoints(&self, name: &str, endpoints: Vec<Endpoint>) {
        if let Some(e) = self.entries.lock().iter_mut().find(|e| e.name == name) {
            e.endpoints = endpoints;
        }
    }

    /// `name`'s state.
    pub fn state(&self, name: &str) -> Option<ComponentState> {
        self.entries
            .lock()
            .iter()
            .find(|e| e.name == name)
            .map(|e| e.state)
    }
}

impl Components for Board {
    fn components(&self) -> Vec<ComponentStatus> {
        self.entries.lock().clone()
    }
}
