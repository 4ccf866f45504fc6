//! Settings: clap argument groups with an environment variable behind every flag (STYLE 3).
//! Defaults match `docker-compose.yml`; a bad value fails at start-up naming the flag.
//!
//! One file per group: backends and Redis (`backend`), who may write (`auth`), the server, its
//! page sizes and cursor keys (`server`), the response cache and CDN purges (`caching`), rate
//! limits (`rate_limit`), persisted documents (`persisted`), and what one client may
//! hold over WebSockets (`websocket`), when comments become public (`moderation`), and how
//! purchases are verified (`purchase`).

mod auth;
mod backend;
mod caching;
mod moderation;
mod persisted;
mod purchase;
mod rate_limit;
mod server;
mod websocket;

pub use self::auth::{AuthArgs, AuthMode};
pub use self::backend::{BackendArgs, IndexKind, StoreKind};
pub use self::caching::{CacheArgs, PurgeArgs};
pub use self::moderation::{ModerationArgs, ModerationMode};
pub use self::persisted::PersistedArgs;
pub use self::purchase::PurchaseArgs;
pub use self::rate_limit::RateLimitArgs;
pub use self::server::{CursorArgs, PagingArgs, ServerArgs};
pub use self::websocket::WebSocketArgs;
