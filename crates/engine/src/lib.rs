//! Use cases of an on-sale and the ports they call. Nothing here names a concrete
//! backend: the binary and the tests choose adapters and hand them in as `Arc<dyn _>`.

pub mod ports;
