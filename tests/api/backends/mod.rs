//! The real backends beyond their contracts (`src/store/dynamo`, `src/index/redis`,
//! `src/redis`): what only DynamoDB Local or a real `redis-server` does, Cluster, TLS and ACL
//! users, outages and faults, and the version ceiling every copy holds.

mod degradation;
mod dynamodb_api;
mod dynamodb_store;
mod dynamodb_votes;
mod faults;
mod redis_acl;
mod redis_cluster;
mod redis_index;
mod redis_tls;
mod version_ceiling;
