//! Relay connections (`src/pagination`): walks, offsets and numbered pages, every order and
//! rating filter, the engine against its oracle, hostile cursors, and one index call a page.

mod concurrent_walks;
mod cursor_fuzz;
mod engine_oracle;
mod index_view;
mod orders;
mod page_numbers;
mod ratings;
mod walks;
