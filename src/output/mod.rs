//! The end of the flow: what people and programs read.
pub mod console;
pub mod export;
pub mod files;
pub mod html;
pub mod plot;
pub mod study;
