//! The `boxoffice` binary's library: configuration, wiring, the demo and the
//! subcommands, so tests can build the same application the binary runs.

pub mod allocator;
pub mod app;
pub mod backends;
pub mod commands;
pub mod config;
pub mod demo;
pub mod dir_lock;
pub mod fake_bank;
pub mod gate;
pub mod human_check;
pub mod kept_settings;
pub mod payments;
pub mod relay;
pub mod replays;
pub mod secrets;
pub mod serve;
pub mod telemetry;
pub mod verify;
pub mod wake_probe;

pub use app::Application;
pub use config::{Config, Overrides};
