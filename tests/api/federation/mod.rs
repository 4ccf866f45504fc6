//! dynapage as an Apollo Federation v2 subgraph (`serve --federation`, docs/federation.md): its
//! SDL, `_entities` as a gateway calls it, and real gateways (`@apollo/gateway`, Hive Gateway)
//! composing it with a products subgraph.

mod entities;
mod gateways;
mod schema;
mod stack;
mod through;
