//! The pagination engine on the embedded backends, without HTTP or GraphQL: what a page costs
//! at increasing offsets into one 2,300,000-comment product, with the index and with the naive
//! walk (every offset read from the store and discarded, as without an index), plus the cursor
//! codec. See BENCHMARKS.md for the results and `bench/load` for the server under load.
//!
//! The product is built once per bench binary (it takes a while), then shared by every case.
//! `cargo test --all-targets` runs each case once, unoptimized, as a smoke test: there the
//! product is small ([`TEST_COMMENTS`]) and the offsets beyond it are left out.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dynapage::domain::{CommentOrder, Listing, Order, Position, RatingSet, Sku, SortKey};
use dynapage::generate::CommentGenerator;
use dynapage::index::PageIndex;
use dynapage::index::memory::MemoryIndex;
use dynapage::pagination::{CursorCodec, CursorScope, Engine, PagePlan, PagingSettings, Want};
use dynapage::store::CommentStore;
use dynapage::store::memory::MemoryStore;
use tokio::runtime::Runtime;

const SKU: &str = "DAFT_PUNK_TSHIRT";
/// Comments of the benchmarked product, the size of a very popular product page.
const COMMENTS: usize = 2_300_000;
/// Comments of the product when the cases only run once as a test (no `--bench` argument).
const TEST_COMMENTS: usize = 20_000;
const PAGE: usize = 20;
const OFFSETS: [u64; 5] = [0, 1_000, 10_000, 100_000, 1_000_000];
/// Same timestamp as `dynapage seed`, so the product equals the server's demo product.
const NEWEST_MS: u64 = 1_767_225_600_000;

type MemoryEngine = Engine<MemoryStore, MemoryIndex>;

struct Fixture {
    runtime: Runtime,
    sku: Sku,
    indexed: MemoryEngine,
    naive: MemoryEngine,
    middle_key: SortKey,
    comments: usize,
}

/// Writes the product into an embedded store and its change feed into an embedded index.
fn fixture() -> Fixture {
    // `cargo bench` passes `--bench`; `cargo test` runs the cases once, unoptimized.
    let comments = if std::env::args().any(|arg| arg == "--bench") {
        COMMENTS
    } else {
        TEST_COMMENTS
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let sku = Sku::parse(SKU).expect("a valid sku");
    let started = Instant::now();
    let (store, index, middle_key) = runtime.block_on(async {
        let (sink, mut feed) = tokio::sync::mpsc::unbounded_channel();
        let store = MemoryStore::new().with_change_sink(sink);
        let index = MemoryIndex::new();
        let mut comments = CommentGenerator::new(sku.clone(), 1, NEWEST_MS).take(comments);
        let mut middle_key = None;
        let mut events = Vec::new();
        loop {
            let chunk: Vec<_> = comments.by_ref().take(10_000).collect();
            if chunk.is_empty() {
                break;
            }
            if middle_key.is_none() {
                middle_key = chunk.get(PAGE).map(|c| c.sort_key());
            }
            store.put_batch(&chunk).await.expect("the embedded store");
            while let Ok(event) = feed.try_recv() {
                events.push(event);
            }
            index.apply(&events).await.expect("the embedded index");
            events.clear();
        }
        (store, index, middle_key.expect("a non-empty product"))
    });
    let count = runtime
        .block_on(index.count(&sku, RatingSet::ALL))
        .expect("the embedded index");
    assert_eq!(count, comments as u64, "every comment reached the index");
    eprintln!(
        "built {comments} comments in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let naive = PagingSettings {
        offset_index_threshold: u64::MAX,
        ..PagingSettings::default()
    };
    Fixture {
        runtime,
        sku,
        indexed: Engine::new(store.clone(), index.clone(), PagingSettings::default()),
        naive: Engine::new(store, index, naive),
        middle_key,
        comments,
    }
}

fn plan(order: Order, start: Option<SortKey>, skip: u64) -> PagePlan {
    PagePlan {
        order,
        forward: Order::NewestFirst,
        start: start.map(Position::flat),
        stop: None,
        skip,
        skip_through_index: false,
        take: PAGE,
        keep_last: None,
    }
}

fn run(f: &Fixture, engine: &MemoryEngine, ratings: RatingSet, plan: &PagePlan) -> usize {
    let page = f
        .runtime
        .block_on(engine.page(&f.sku, Listing::flat(ratings), plan, Want::ALL))
        .expect("a page");
    assert_eq!(page.items.len(), PAGE);
    page.items.len()
}

fn benches(c: &mut Criterion) {
    let f = fixture();

    let mut pages = c.benchmark_group("page");
    pages.bench_function("first", |b| {
        let plan = plan(Order::NewestFirst, None, 0);
        b.iter(|| run(&f, &f.indexed, RatingSet::ALL, black_box(&plan)));
    });
    pages.bench_function("backward (last: 20)", |b| {
        let plan = plan(Order::OldestFirst, None, 0);
        b.iter(|| run(&f, &f.indexed, RatingSet::ALL, black_box(&plan)));
    });
    pages.bench_function("backward (last: 20, before: cursor)", |b| {
        let plan = plan(Order::OldestFirst, Some(f.middle_key), 0);
        b.iter(|| run(&f, &f.indexed, RatingSet::ALL, black_box(&plan)));
    });
    pages.bench_function("ratings [3, 5]", |b| {
        let ratings = RatingSet::parse(&[3, 5]).expect("valid ratings");
        let plan = plan(Order::NewestFirst, None, 0);
        b.iter(|| run(&f, &f.indexed, ratings, black_box(&plan)));
    });
    pages.finish();

    for (name, engine) in [
        ("offset/index", &f.indexed),
        ("offset/naive walk", &f.naive),
    ] {
        let mut group = c.benchmark_group(name);
        if engine.settings().offset_index_threshold == u64::MAX {
            // Deep naive pages take up to a second each; ten samples say enough.
            group.sample_size(10);
            group.measurement_time(Duration::from_secs(10));
        }
        for offset in OFFSETS
            .into_iter()
            .filter(|offset| offset + PAGE as u64 <= f.comments as u64)
        {
            let plan = plan(Order::NewestFirst, None, offset);
            group.bench_with_input(BenchmarkId::from_parameter(offset), &plan, |b, plan| {
                b.iter(|| run(&f, engine, RatingSet::ALL, black_box(plan)));
            });
        }
        group.finish();
    }

    let codec = CursorCodec::development();
    let scope = CursorScope {
        sku: f.sku.clone(),
        ratings: RatingSet::ALL,
        order: CommentOrder::Newest,
    };
    let middle = Position::flat(f.middle_key);
    let cursor = codec.seal(&scope, &middle);
    let mut cursors = c.benchmark_group("cursor");
    cursors.bench_function("seal", |b| {
        b.iter(|| codec.seal(black_box(&scope), black_box(&middle)));
    });
    cursors.bench_function("open", |b| {
        b.iter(|| codec.open(black_box(&scope), black_box(&cursor)));
    });
    cursors.finish();
}

criterion_group!(engine, benches);
criterion_main!(engine);
