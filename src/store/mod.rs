//! Adapters to Cloudflare storage and the Worker environment: D1 (shared records), the session
//! Durable Object's SQLite, the env-backed services tools use, and the compiled tool registry.

pub mod d1;
pub mod rows;
pub mod services;
pub mod session_db;

use std::cell::RefCell;
use std::rc::Rc;

use crate::error::Result;
use crate::registry::Registry;
use crate::tools::Catalog;

thread_local! {
    static REGISTRIES: RefCell<Vec<(Catalog, Rc<Registry>)>> = const { RefCell::new(Vec::new()) };
}

/// The registry of a catalog, compiled once per wasm instance and shared by the Worker and every
/// object running in the instance.
pub fn registry(catalog: Catalog) -> Result<Rc<Registry>> {
    if let Some(r) = REGISTRIES.with(|r| {
        r.borrow()
            .iter()
            .find(|(c, _)| *c == catalog)
            .map(|(_, r)| r.clone())
    }) {
        return Ok(r);
    }
    let r = Rc::new(Registry::new(crate::tools::catalog(catalog))?);
    REGISTRIES.with(|all| all.borrow_mut().push((catalog, r.clone())));
    Ok(r)
}
