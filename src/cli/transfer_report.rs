//! Reports' lines in an export ([`super::transfer`]): after the moderation log's, one line per
//! report, in report-id order, told from other lines by their `report` field. Every field is
//! carried and checked when read back: an import writes each report as it was (its status
//! too), once per comment and reader.

use serde::{Deserialize, Serialize};

use crate::domain::{CommentId, EntryId, Report, ReportReason, ReportStatus, Sku, SortKey};

/// One report's line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReportLine {
    report: String,
    comment: String,
    sku: String,
    reporter: String,
    reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    details: Option<String>,
    status: String,
    created_at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    decided_at_ms: Option<u64>,
}

/// The report's line as JSON, without its newline.
pub(super) fn encode(report: &Report) -> String {
    let line = ReportLine {
        report: report.id.to_string(),
        comment: report.comment.to_string(),
        sku: report.sku.to_string(),
        reporter: report.reporter.clone(),
        reason: report.reason.as_str().to_owned(),
        details: report.details.clone(),
        status: report.status.as_str().to_owned(),
        created_at_ms: report.created_at_ms,
        decided_at_ms: report.decided_at_ms,
    };
    serde_json::to_string(&line).unwrap_or_else(|_| unreachable!("plain data"))
}

/// Whether `text` is a report's line (its first key is `report`).
pub(super) fn is_report_line(text: &str) -> bool {
    text.starts_with("{\"report\":")
}

/// A line read back into a report, every field checked.
pub(super) fn decode(text: &str) -> Result<Report, String> {
    let line: ReportLine = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let in_range = |ms: u64| ms <= SortKey::MAX_MILLIS;
    if !in_range(line.created_at_ms) || !line.decided_at_ms.is_none_or(in_range) {
        return Err("a time is out of range".to_owned());
    }
    let report = Report {
        id: line
            .report
            .parse::<EntryId>()
            .map_err(|e| format!("report: {e}"))?,
        comment: line
            .comment
            .parse::<CommentId>()
            .map_err(|e| format!("comment: {e}"))?,
        sku: Sku::parse(&line.sku).map_err(|e| e.to_string())?,
        reporter: line.reporter,
        reason: ReportReason::parse(&line.reason).map_err(|e| e.to_string())?,
        details: line.details,
        status: ReportStatus::parse(&line.status).map_err(|e| e.to_string())?,
        created_at_ms: line.created_at_ms,
        decided_at_ms: line.decided_at_ms,
    };
    if !report.is_well_formed() {
        return Err(
            "a report needs a reporter (1 to 255 bytes), details of at most 1,000 characters, \
             and decidedAtMs exactly when it is closed"
                .to_owned(),
        );
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_round_trips_and_a_bad_one_is_refused() {
        let report = Report {
            id: EntryId::from_bytes([2; 16]),
            comment: CommentId::from_parts(1_767_225_600_000, 7),
            sku: Sku::parse("TEE").expect("sku"),
            reporter: "auth0|bob".to_owned(),
            reason: ReportReason::Fake,
            details: Some("a competitor".to_owned()),
            status: ReportStatus::Upheld,
            created_at_ms: 1_767_225_600_500,
            decided_at_ms: Some(1_767_225_601_000),
        };
        let line = encode(&report);
        assert!(is_report_line(&line), "{line}");
        assert_eq!(decode(&line), Ok(report));
        for bad in [
            line.replace("UPHELD", "OPEN"),
            line.replace("FAKE", "RUDE"),
            line.replace("auth0|bob", ""),
            line.replace("}", ",\"extra\":1}"),
        ] {
            assert!(decode(&bad).is_err(), "{bad}");
        }
    }
}
