//! The cache's count of its memory held to a counting allocator: the bytes `Store::bytes`
//! charges for many small entries and for large ones with their encodings are within 25 % of
//! what they really allocate (what the allocator was asked for and kept, rounded to its
//! 16-byte granules).
//!
//! The allocator counts the whole process, so the measuring test runs alone in a child
//! process of this test binary (the parent only starts it and reads its verdict).

use std::alloc::System;

use axum::http::HeaderName;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

use super::Store;
use crate::domain::Sku;
use crate::http::compression::Coding;
use crate::http::response_cache::entry::{Entry, etag};
use crate::http::response_cache::tags::Tags;
use crate::http::transport::MediaType;
use crate::index::ProductVersion;
use crate::pagination::PageStats;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Set in the child that measures.
const MEASURE: &str = "DYNAPAGE_MEASURE_CACHE_ALLOCATIONS";

/// Runs `name` (a test of this module) alone in a child process; `true` in that child.
fn measuring_alone(name: &str) -> bool {
    if std::env::var_os(MEASURE).is_some() {
        return true;
    }
    let path = format!(
        "{}::{name}",
        module_path!().split_once("::").map_or("", |(_, rest)| rest)
    );
    let output = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([path.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(MEASURE, "1")
        .output()
        .expect("the test binary runs");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(report.contains("1 passed"), "the measure ran: {report}");
    false
}

/// `count` entries of `body` bytes, each reading one product, verified, tagged, with every
/// encoding made when `encode`; the bytes the store charges and the bytes really allocated.
fn measure(count: usize, body: &[u8], encode: bool) -> (usize, usize) {
    let header = HeaderName::from_static("surrogate-key");
    let region = Region::new(GLOBAL);
    let store = Store::new(usize::MAX / 2);
    for i in 0..count {
        let sku = Sku::parse(&format!("PRODUCT_{i}")).expect("a SKU");
        let versions = vec![ProductVersion {
            epoch: 7,
            number: i as u64,
        }];
        let key: [u8; 32] = std::array::from_fn(|b| (i >> (b % 8)) as u8 ^ b as u8);
        let tags = Tags::of(std::slice::from_ref(&sku), &header);
        let entry = Entry::new(
            body,
            MediaType::Json,
            vec![sku],
            Some(versions.clone()),
            Some(etag(&key, &versions)),
            tags,
            PageStats::default(),
        );
        if encode {
            for coding in Coding::ENCODED {
                entry
                    .encoded
                    .set_for_tests(coding, coding.encode(body).expect("encoded"));
            }
        }
        // A hit clones the bodies and validators: their shared headers exist from then on.
        drop((
            entry.body.clone(),
            entry.etag.clone(),
            entry.tags.value().cloned(),
        ));
        drop(entry.encoded.clone_all_for_tests());
        assert!(store.insert(key, std::sync::Arc::new(entry)));
    }
    let stats = region.change();
    let allocations = stats.allocations as isize - stats.deallocations as isize;
    // A reallocation counts as the old block freed and the new one allocated.
    let bytes = stats.bytes_allocated as isize - stats.bytes_deallocated as isize;
    // Each block rounded up to the allocator's 16-byte granule: 8 bytes on average.
    let real = bytes + 8 * allocations;
    let charged = store.bytes();
    drop(store);
    (charged, usize::try_from(real).unwrap_or_default())
}

fn within_a_quarter(charged: usize, real: usize) -> bool {
    let ratio = charged as f64 / real as f64;
    println!("charged {charged} bytes for {real} allocated: {ratio:.3}");
    (0.8..=1.25).contains(&ratio)
}

#[test]
fn many_small_entries_are_charged_what_they_allocate() {
    if !measuring_alone("many_small_entries_are_charged_what_they_allocate") {
        return;
    }
    let body = br#"{"data":{"comments":{"edges":[{"node":{"id":"Q29tbWVudDox","body":"ok"}}]}}}"#;
    let (charged, real) = measure(20_000, body, false);
    assert!(within_a_quarter(charged, real));
    // The old count (body, key, tags and a flat 160 bytes) was about a quarter of this.
    assert!(charged > 20_000 * (body.len() + 32 + 160));
}

#[test]
fn large_entries_with_their_encodings_are_charged_what_they_allocate() {
    if !measuring_alone("large_entries_with_their_encodings_are_charged_what_they_allocate") {
        return;
    }
    let body: Vec<u8> = (0..3_000)
        .flat_map(|i| {
            format!(r#"{{"id":"{i}","body":"comment number {i} says hello"}},"#).into_bytes()
        })
        .collect();

    let (charged, real) = measure(40, &body, true);
    assert!(within_a_quarter(charged, real));
}
