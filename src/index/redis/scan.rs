//! Finding keys: `SCAN MATCH` on a single node, or on every master of a Redis Cluster (each
//! master holds only its own slots' keys, and one SCAN cursor is only valid on one node).
//!
//! Used by `products` (for `verify` without `--sku`), never on a request path.

use redis::Value;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};

use super::connection::{Connection, classify};
use super::parsing;
use crate::index::IndexError;

/// Every key matching `pattern`, from every node that holds keys.
pub(super) async fn matching_keys(
    conn: &Connection,
    pattern: &str,
) -> Result<Vec<String>, IndexError> {
    match conn {
        Connection::Single(_) => scan_node(conn, pattern, None).await,
        Connection::Cluster(..) => {
            let mut keys = Vec::new();
            for slot in cluster_master_slots(conn).await? {
                let route = Route::new(slot, SlotAddr::Master);
                let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
                keys.extend(scan_node(conn, pattern, Some(route)).await?);
            }
            Ok(keys)
        }
    }
}

/// Every key matching `pattern` on one node, by `SCAN` (never `KEYS`, which blocks Redis).
async fn scan_node(
    conn: &Connection,
    pattern: &str,
    route: Option<RoutingInfo>,
) -> Result<Vec<String>, IndexError> {
    let mut found = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let mut cmd = redis::cmd("SCAN");
        cmd.arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000);
        let (next, keys): (u64, Vec<String>) = match (conn, &route) {
            (Connection::Cluster(c, _), Some(route)) => {
                let value = c
                    .clone()
                    .route_command(cmd, route.clone())
                    .await
                    .map_err(classify)?;
                redis::from_redis_value(value).map_err(parsing)?
            }
            _ => cmd.query_async(&mut conn.clone()).await.map_err(classify)?,
        };
        found.extend(keys);
        if next == 0 {
            return Ok(found);
        }
        cursor = next;
    }
}

/// One slot owned by each Cluster master, from `CLUSTER SLOTS` (each slot range: start,
/// end, then the master as `[host, port, node id, ...]`). Routing by slot rather than by
/// the reported host copes with nodes that report an empty host ("the address you used").
async fn cluster_master_slots(conn: &Connection) -> Result<Vec<u16>, IndexError> {
    let ranges: Vec<Vec<Value>> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(&mut conn.clone())
        .await
        .map_err(classify)?;
    let mut seen = Vec::new();
    let mut slots = Vec::new();
    for range in ranges {
        let mut fields = range.into_iter();
        let (Some(start), Some(_end), Some(master)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let slot: u16 = redis::from_redis_value(start).map_err(parsing)?;
        let node: Vec<Value> = redis::from_redis_value(master).map_err(parsing)?;
        // The node id (third field) names a master whatever address it reports.
        let id = format!("{:?}", node.get(2).or(node.get(1)));
        if !seen.contains(&id) {
            seen.push(id);
            slots.push(slot);
        }
    }
    Ok(slots)
}
