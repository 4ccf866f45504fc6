//! One box (`serve --data-dir`, `src/store/sqlite`): the durable embedded store across
//! restarts and kills, and the files it keeps.

mod crash;
mod durable_store;
mod files;
