//! Rehearsing an on-sale before it happens, as `boxoffice` subcommands:
//!
//! - [`plan`]: the on-sale sized on paper (load at the peak, nodes, bandwidth, time to
//!   sell out) from the crowd and measured per-node figures;
//! - [`experiment`]: read-then-write, the conditional UPDATE, optimistic versioning and
//!   sub-counters against boxoffice's own hold + commit, on a PostgreSQL;
//! - [`rehearse`]: a realistic crowd (honest buyers and adversaries) driven through the
//!   public API of a running deployment, with live progress and a report (HTML with
//!   charts, and JSON); `--find-rate` looks for the admission rate to set.
//!
//! Nothing here runs inside `serve`: the server's request path does not link it.

pub mod cli;
pub mod experiment;
pub mod fairness;
pub mod plan;
pub mod rehearse;
