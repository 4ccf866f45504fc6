//! The files operators deploy from, held to the binary: `docker-compose.yml`, the
//! `Dockerfile`, and the IAM policy the documentation gives.

mod compose;
mod iam;
