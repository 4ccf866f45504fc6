//! The stream consumer on AWS Lambda (`dynapage lambda-sync`). Lambda's event source mapping
//! does what `dynapage sync` does by itself: it leases the stream's shards, reads them in order
//! (children after parents), runs one invocation per shard at a time, checkpoints and retries.
//! What is left is one batch: turn its records into changes and apply them with the same
//! [`apply`](super::apply) as `sync`, then tell Lambda which records to deliver again.
//!
//! The answer is a partial batch response (`ReportBatchItemFailures`): Lambda checkpoints
//! before the first record named and retries from it. So a batch whose index write fails names
//! its first record (all of it is retried: applying a change twice is harmless, the index keeps
//! the newest version), and a record that is not a comment is applied up to, and named (Lambda
//! retries it until its retry limit, bisecting the batch, then sends it to the on-failure
//! destination: `deploy/template.yaml`).

use aws_lambda_events::event::dynamodb::EventRecord;
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};

use crate::index::PageIndex;
use crate::store::dynamo::{change_from_lambda_record, lambda_sequence_number};
use crate::telemetry::metric;

/// A batch Lambda must retry whole: a failing record has no sequence number to name it by.
#[derive(Debug, thiserror::Error)]
#[error("record {record} of the batch failed and has no sequence number to report: {reason}")]
pub struct UnnamedFailure {
    /// The failing record's index in the batch, from 0.
    pub record: usize,
    /// Why it failed.
    pub reason: String,
}

/// Applies one batch of stream records delivered by Lambda, in order, and answers which records
/// Lambda must deliver again (none when everything was applied).
pub async fn apply_lambda_batch<I: PageIndex>(
    index: &I,
    records: &[EventRecord],
) -> Result<DynamoDbEventResponse, UnnamedFailure> {
    let mut events = Vec::with_capacity(records.len());
    let mut poison = None;
    for (i, record) in records.iter().enumerate() {
        match change_from_lambda_record(record) {
            Ok(Some(event)) => events.push(event),
            // A vote item's record: its comment's `MODIFY` carries the change.
            Ok(None) if matches!(record.event_name.as_str(), "INSERT" | "MODIFY" | "REMOVE") => {}
            Ok(None) => tracing::warn!(
                record = i,
                event_name = record.event_name.as_str(),
                "stream record of an unknown kind skipped"
            ),
            Err(error) => {
                metric::SYNC_ERRORS
                    .counter(&[("stage", "decode")])
                    .increment(1);
                tracing::error!(record = i, %error, "stream record is not a comment");
                poison = Some((i, error.to_string()));
                break;
            }
        }
    }
    let (applied, failed) = match super::apply(index, &events).await {
        Ok(()) => (events.len(), poison),
        Err(error) => {
            metric::SYNC_ERRORS
                .counter(&[("stage", "apply")])
                .increment(1);
            tracing::warn!(records = records.len(), %error, "batch not applied; Lambda retries it");
            (0, Some((0, error.to_string())))
        }
    };
    tracing::info!(
        records = records.len(),
        applied,
        failed_from = failed.as_ref().map(|(i, _)| *i),
        "lambda batch"
    );
    let mut response = DynamoDbEventResponse::default();
    if let Some((record, reason)) = failed {
        let Some(sequence) = records.get(record).and_then(lambda_sequence_number) else {
            return Err(UnnamedFailure { record, reason });
        };
        let mut failure = DynamoDbBatchItemFailure::default();
        failure.item_identifier = Some(sequence.to_owned());
        response.batch_item_failures.push(failure);
    }
    Ok(response)
}
