//! Parsed GraphQL documents, kept by their text.
//!
//! Relay, Apollo and urql send the same few query texts over and over; only the variables
//! change. Parsing was 8% of the server's CPU for a page (BENCHMARKS.md), so the server parses
//! a text once and hands a copy of the document to every later request with that text, over
//! HTTP or in a WebSocket `subscribe` alike (the request check, `check`, is the one reader).
//! What the request check measures of a document ([`Measures`]: aliases and fields counted per
//! fragment expansion, depth) is kept with it, so a text seen before is not walked again
//! either (the two walks were about 30 % of the check's instructions on a pager page, callgrind),
//! and neither is its price's walk of the schema's types (`graphql::pricing::Pricing`).
//! Validation runs in full on a text's requests until one passes; later ones have only their
//! variables checked ([`Validated`], `graphql::variables`).
//!
//! The cache is bounded in entries and in text size, so hostile or generated queries cannot
//! grow it: texts longer than [`MAX_TEXT_BYTES`] are parsed every time, and when it is full the
//! oldest entry leaves (first in, first out: cheap, and a steady set of client queries stays in).
//!
//! Trusted documents (`--trusted-documents`, `crate::persisted`) are parsed when the manifest
//! is loaded and pinned here: they never leave, whatever their length.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_graphql::parser::types::ExecutableDocument;

use super::{limits, selections};
use crate::graphql::field_errors::KeyOrder;
use crate::graphql::field_errors::OutputTypes;
use crate::graphql::pricing::{Priced, Pricing};
use crate::pagination::PagingSettings;

/// Longest query text kept: hand-written and generated client queries are far shorter.
pub(crate) const MAX_TEXT_BYTES: usize = 8 * 1024;

/// What the limits of the request check measure of a document, whatever its operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Measures {
    /// Fields and aliases, fragments counted at every spread ([`selections::selected`]).
    pub selected: selections::Selected,
    /// How deep fields nest; `usize::MAX` for chains of fragment spreads ([`limits::depth`]).
    pub depth: usize,
}

impl Measures {
    /// Walks `document` once for each measure.
    fn of(document: &ExecutableDocument) -> Self {
        Self {
            selected: selections::selected(document),
            depth: limits::depth(document),
        }
    }
}

/// A parsed document with its [`Measures`], its price's plan once a request made it
/// (`graphql::pricing`), and whether a request of it passed validation ([`Validated`]).
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    pub document: Arc<ExecutableDocument>,
    pub measures: Measures,
    pub pricing: Pricing,
    pub validated: Validated,
    /// The order of its responses' keys (`graphql::field_errors::KeyOrder`).
    pub key_order: KeyOrder,
}

/// Whether a request of a kept text passed async-graphql's full validation, shared by every
/// copy of its parse: later requests of it only have their variables checked
/// (`graphql::variables`). Whether the text is plain (`graphql::plain_document`: it then skips
/// async-graphql's validation walk too) is found when it passes, so a text that never does,
/// hostile or mistaken, is never walked for it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Validated(Arc<AtomicU8>);

/// [`Validated`]'s states.
const NOT_YET: u8 = 0;
const PASSED: u8 = 1;
const PASSED_PLAIN: u8 = 2;

impl Validated {
    /// Whether a request of the text passed validation.
    pub(crate) fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed) != NOT_YET
    }

    /// Whether the text passed validation and is plain.
    pub(crate) fn plain(&self) -> bool {
        self.0.load(Ordering::Relaxed) == PASSED_PLAIN
    }

    /// A request of `document`, the text's parse, passed validation.
    pub(crate) fn set(&self, document: &ExecutableDocument) {
        let plain = crate::graphql::plain_document::is_plain(document);
        let state = if plain { PASSED_PLAIN } else { PASSED };
        self.0.store(state, Ordering::Relaxed);
    }
}

impl Parsed {
    /// `document` with its measures taken.
    pub(crate) fn new(document: Arc<ExecutableDocument>) -> Self {
        let measures = Measures::of(&document);
        Self {
            document,
            measures,
            pricing: Pricing::default(),
            validated: Validated::default(),
            key_order: KeyOrder::default(),
        }
    }

    /// The price of `request` (a request of this text) under this server's `settings`
    /// (`graphql::pricing`), on every transport.
    pub(crate) fn price(
        &self,
        types: &OutputTypes,
        request: &async_graphql::Request,
        settings: &PagingSettings,
    ) -> Priced {
        let (operation, variables) = (request.operation_name.as_deref(), &request.variables);
        (self.pricing).price(types, &self.document, operation, variables, settings)
    }
}

/// A bounded map from query text to its parsed document.
#[derive(Debug)]
pub(crate) struct DocumentCache {
    capacity: usize,
    inner: Mutex<Entries>,
    /// Trusted documents, parsed at start-up; read without the lock.
    pinned: HashMap<Arc<str>, Parsed>,
}

#[derive(Debug, Default)]
struct Entries {
    by_text: HashMap<Arc<str>, Parsed>,
    /// Texts in insertion order, for eviction.
    order: VecDeque<Arc<str>>,
}

impl DocumentCache {
    /// A cache of at most `capacity` documents; 0 keeps none.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::default(),
            pinned: HashMap::new(),
        }
    }

    /// Keeps `documents` (text and parse) for good, beside the bounded entries.
    pub(crate) fn with_pinned<'a>(
        mut self,
        documents: impl IntoIterator<Item = (&'a Arc<str>, &'a Arc<ExecutableDocument>)>,
    ) -> Self {
        for (text, document) in documents {
            let parsed = Parsed::new(Arc::clone(document));
            self.pinned.insert(Arc::clone(text), parsed);
        }
        self
    }

    /// Whether a request of `text` is parsed again each time it comes: it is neither a trusted
    /// document (pinned) nor short enough to be kept.
    pub(crate) fn parsed_each_time(&self, text: &str) -> bool {
        text.len() > MAX_TEXT_BYTES && !self.pinned.contains_key(text)
    }

    /// The document parsed from `text`, if it is kept.
    pub(crate) fn get(&self, text: &str) -> Option<Parsed> {
        // An empty map answers without hashing the text.
        if let Some(parsed) = self.pinned.get(text) {
            return Some(parsed.clone());
        }
        if self.capacity == 0 || text.len() > MAX_TEXT_BYTES {
            return None;
        }
        self.entries().by_text.get(text).cloned()
    }

    /// Keeps `parsed` as the parse of `text` (unless the text is too long to keep).
    pub(crate) fn insert(&self, text: &str, parsed: &Parsed) {
        if self.capacity == 0 || text.len() > MAX_TEXT_BYTES {
            return;
        }
        let mut entries = self.entries();
        if entries.by_text.contains_key(text) {
            return;
        }
        while entries.order.len() >= self.capacity {
            if let Some(oldest) = entries.order.pop_front() {
                entries.by_text.remove(&oldest);
            }
        }
        let key: Arc<str> = Arc::from(text);
        entries.order.push_back(key.clone());
        entries.by_text.insert(key, parsed.clone());
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries().order.len()
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        // The map is consistent after every statement; a panic elsewhere cannot corrupt it.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Parsed {
        let document = async_graphql::parser::parse_query(text).expect("a valid document");
        Parsed::new(Arc::new(document))
    }

    fn query(n: usize) -> String {
        format!("{{ field{n} }}")
    }

    #[test]
    fn whether_a_text_is_plain_is_found_when_it_passes_and_shared_by_every_copy() {
        let plain = parse("{ comments(sku: \"X\") { nodes { body } } }");
        let kept = plain.clone();
        assert!(!plain.validated.get() && !plain.validated.plain());
        plain.validated.set(&plain.document);
        assert!(kept.validated.get() && kept.validated.plain());
        let text =
            "{ comments(sku: \"X\") { edges { ...E } } } fragment E on CommentEdge { cursor }";
        let fragments = parse(text);
        fragments.validated.set(&fragments.document);
        assert!(fragments.validated.get() && !fragments.validated.plain());
    }

    #[test]
    fn returns_what_was_parsed_for_the_same_text_only() {
        let cache = DocumentCache::new(4);
        let text = "query A { comments(sku: \"X\", first: 2) { totalCount } }";
        assert!(cache.get(text).is_none());
        cache.insert(text, &parse(text));
        let kept = cache.get(text).expect("kept");
        assert_eq!(format!("{kept:?}"), format!("{:?}", parse(text)));
        let selected = selections::Selected {
            fields: 2,
            aliases: 0,
        };
        assert_eq!(kept.measures, Measures { selected, depth: 2 });
        assert!(cache.get("query A { other }").is_none());
    }

    #[test]
    fn evicts_the_oldest_beyond_capacity() {
        let cache = DocumentCache::new(3);
        for n in 0..5 {
            cache.insert(&query(n), &parse(&query(n)));
        }
        assert_eq!(cache.len(), 3);
        assert!(cache.get(&query(0)).is_none());
        assert!(cache.get(&query(1)).is_none());
        for n in 2..5 {
            assert!(cache.get(&query(n)).is_some(), "query {n} is kept");
        }
        // Inserting a kept text again neither duplicates nor evicts.
        cache.insert(&query(4), &parse(&query(4)));
        assert_eq!(cache.len(), 3);
        assert!(cache.get(&query(2)).is_some());
    }

    #[test]
    fn pinned_documents_stay_whatever_their_length_and_the_evictions() {
        let long: Arc<str> = Arc::from(format!("{{ a }}{}", " ".repeat(MAX_TEXT_BYTES)));
        let document = parse(&long);
        let cache = DocumentCache::new(1).with_pinned([(&long, &document.document)]);
        for n in 0..3 {
            cache.insert(&query(n), &parse(&query(n)));
        }
        let pinned = cache.get(&long).expect("pinned");
        let selected = selections::Selected {
            fields: 1,
            aliases: 0,
        };
        let measures = Measures { selected, depth: 1 };
        assert_eq!(pinned.measures, measures, "measured when pinned");
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn keeps_neither_long_texts_nor_anything_at_capacity_zero() {
        let long = format!("{{ a }}{}", " ".repeat(MAX_TEXT_BYTES));
        let cache = DocumentCache::new(8);
        cache.insert(&long, &parse(&long));
        assert!(cache.get(&long).is_none());
        assert_eq!(cache.len(), 0);

        let none = DocumentCache::new(0);
        none.insert(&query(1), &parse(&query(1)));
        assert!(none.get(&query(1)).is_none());
        assert_eq!(none.len(), 0);
    }
}
