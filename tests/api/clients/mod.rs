//! The API as client teams and people meet it: the schema through graphql-js, relay-compiler,
//! Apollo Client, urql, graphql-http and the code generators, and GraphiQL in a real browser.

mod browser;
mod codegen;
mod live_clients;
mod playground;
mod tools;
