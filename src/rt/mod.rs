//! The runtime underneath client and simulator.
pub mod clock;
pub mod driver;
pub mod netcount;
pub mod timer;
