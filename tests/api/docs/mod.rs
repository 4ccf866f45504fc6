//! The front doors held to the code: README.md, BENCHMARKS.md and the book in `docs/`. Every
//! request with a shown answer and every command shown with its output is run against a server
//! started as the text says (`examples`), every other `graphql` fence is valid against the
//! schema (`graphql_fences`), every link and anchor resolves (`links`), the
//! settings table is `serve`'s flags (`settings`), the metrics table is the names the code
//! emits (`metrics`), and the layout `docs/architecture.md` draws is the code's
//! (`architecture`: file and function sizes, no import circle, no import up the layers). How a
//! writer marks an example is in `docs/contributing.md`.

mod architecture;
mod examples;
mod fences;
mod graphiql;
mod graphql_fences;
mod json;
mod links;
mod markdown;
mod metrics;
mod settings;
