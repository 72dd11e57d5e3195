//! The runtime underneath client and simulator.
pub mod clock;
pub mod cpu;
pub mod driver;
pub mod fd;
pub mod file;
pub mod netcount;
pub mod sched;
pub mod timer;
pub mod tstamp;
