//! Every node of a deployment: one for a single node, every master of a Redis Cluster (each
//! master holds only its own slots' keys, one `SCAN` cursor is only valid on one node, and each
//! node keeps its own ACL users). [`matching_keys`] finds keys on all of them; the start-up
//! check dry-runs its commands on each (`acl`).
//!
//! `SCAN` is for `verify` and `reindex`, never on a request path. The pattern is the caller's:
//! this module knows no key names.

use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, RedisResult, Value};

use super::connection::Connection;
use super::error::{CallError, classify, parsing};

/// Every key matching `pattern`, from every node that holds keys.
pub(super) async fn matching_keys(
    conn: &Connection,
    pattern: &str,
) -> Result<Vec<String>, CallError> {
    let mut keys = Vec::new();
    for route in every_node(conn).await? {
        keys.extend(scan_node(conn, pattern, route.as_ref()).await?);
    }
    Ok(keys)
}

/// A route to each master of a Cluster, or `[None]` (the only node) for a single node.
pub(super) async fn every_node(conn: &Connection) -> Result<Vec<Option<RoutingInfo>>, CallError> {
    match conn {
        Connection::Single(_) => Ok(vec![None]),
        Connection::Cluster(..) => Ok(cluster_master_slots(conn)
            .await?
            .into_iter()
            .map(|slot| {
                let route = Route::new(slot, SlotAddr::Master);
                Some(RoutingInfo::SingleNode(
                    SingleNodeRoutingInfo::SpecificNode(route),
                ))
            })
            .collect()),
    }
}

/// Sends `cmd` to the node `route` names (on a Cluster), or to the only node.
pub(super) async fn on_node(
    conn: &Connection,
    cmd: Cmd,
    route: Option<&RoutingInfo>,
) -> RedisResult<Value> {
    match (conn, route) {
        (Connection::Cluster(c, _), Some(route)) => {
            c.clone().route_command(cmd, route.clone()).await
        }
        _ => cmd.query_async(&mut conn.clone()).await,
    }
}

/// Every key matching `pattern` on one node, by `SCAN` (never `KEYS`, which blocks Redis).
async fn scan_node(
    conn: &Connection,
    pattern: &str,
    route: Option<&RoutingInfo>,
) -> Result<Vec<String>, CallError> {
    let mut found = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let mut cmd = redis::cmd("SCAN");
        cmd.arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000);
        let value = on_node(conn, cmd, route).await.map_err(classify)?;
        let (next, keys): (u64, Vec<String>) = redis::from_redis_value(value).map_err(parsing)?;
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
async fn cluster_master_slots(conn: &Connection) -> Result<Vec<u16>, CallError> {
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
