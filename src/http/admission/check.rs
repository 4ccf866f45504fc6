//! The one check every GraphQL request passes before it runs, whichever transport brought it
//! (`graphql`: POST and GET; `websocket`: a `subscribe`): [`check_request`] parses the text
//! (once per text, through `documents`), sees that the operation it selects may run over this
//! transport, and holds the document to the limits async-graphql does not enforce (`limits`:
//! depth; `selections`: aliases and fields, counted per fragment expansion; `subscription_shape`:
//! a subscription's one root field and no connections; the first two measured once per kept
//! parse, `documents::Measures`), and sees that every required variable of the selected
//! operation has a value (async-graphql 7.2.1 does not). Its refusals ([`Rejection`]) carry
//! one message and one code whatever the transport, so a client learns the same thing over
//! HTTP and WebSocket; each transport only says how to send them (a status and headers, or an
//! error in the subscription's stream).
//!
//! A check that belongs to every request goes here, in order: a persisted-document lookup would
//! take the place of the parse. The price is not here: it needs the viewer's budget, so each
//! transport asks `graphql::pricing` for it once the request is admitted.
//!
//! What is not here: the concurrency limit, rate limits and timeouts (HTTP only, `graphql`),
//! who the viewer is (`auth`), and validation against the schema (async-graphql's, when the
//! request runs).

use std::sync::Arc;

use async_graphql::parser::types::{DocumentOperations, ExecutableDocument, OperationType};

use super::documents::{DocumentCache, Measures, Parsed};
use super::{limits, subscription_shape};
use crate::graphql::nesting::{self, Unparsed};
use crate::http::HttpOptions;

/// How a request came, which decides the kinds of operation it may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// `POST /graphql`: queries and mutations (a subscription is async-graphql's to refuse).
    Post,
    /// `GET /graphql`: no mutation, since a link or a prefetch could trigger it.
    Get,
    /// A `subscribe` over a GraphQL WebSocket: subscriptions only. Queries and mutations go over
    /// HTTP, where the rate limits, timeouts and response shaping apply.
    WebSocket,
}

/// A request that passed the check.
#[derive(Debug)]
pub(crate) struct Checked {
    /// The parsed document (with what is kept of it by text: its price's plan, whether it
    /// passed validation), also set on the request so that running it parses nothing; `None`
    /// when the text does not parse: the syntax error is left to async-graphql to report in
    /// its usual shape.
    pub parsed: Option<Parsed>,
    /// Whether the request may run a mutation: the operation it names is one, or it names none
    /// and one of the document's operations is one.
    pub mutation: bool,
    /// The writes the selected operation makes ([`limits::writes`]), for the writes budget.
    pub writes: usize,
}

/// Why a request may not run: the same message and `extensions.code` on every transport.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Rejection {
    #[error("mutations must be sent with POST")]
    MutationOverGet,
    #[error(
        "only subscriptions are served over WebSocket: send queries and mutations to POST /graphql"
    )]
    OnlySubscriptions,
    #[error(
        "the query selects {aliases} aliased fields (fragments counted at every spread); at most {max} are allowed"
    )]
    TooManyAliases { aliases: usize, max: usize },
    #[error(
        "the query selects {} fields (fragments counted at every spread); at most {max} are allowed",
        count_or_more(*.selections)
    )]
    TooManySelections { selections: usize, max: usize },
    #[error("the query nests fields {depth} deep; at most {max} are allowed")]
    TooDeep { depth: usize, max: usize },
    /// Brackets nested past what the parser can take safely (`graphql::nesting`): refused
    /// before anything parses the text.
    #[error("{}", Unparsed::TooDeep)]
    NestedTooDeeply,
    /// Chains of fragment spreads past any real query's (see [`limits::depth`]).
    #[error("the query's fragment spreads nest too deeply")]
    FragmentsTooDeep,
    /// A subscription operation selects one root field (`subscription_shape`).
    #[error("a subscription operation must select exactly one root field; this one selects {0}")]
    SubscriptionRootFields(usize),
    /// A variable of a non-null type without a default has no value. async-graphql 7.2.1
    /// runs such an operation and fails the field that reads the variable (a field error, with
    /// data); the specification makes it a request error (CoerceVariableValues), which this is.
    #[error("variable `${name}` of required type `{ty}` was not provided")]
    MissingVariable { name: String, ty: String },
    /// A subscription selects events, not connections (`subscription_shape`).
    #[error(
        "`{0}` cannot be selected in a subscription: events carry comments, not connections; query `{0}` separately over POST /graphql"
    )]
    ConnectionInSubscription(String),
}

impl Rejection {
    /// The `extensions.code` of the refusal.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Self::MutationOverGet | Self::OnlySubscriptions => "BAD_REQUEST",
            Self::TooManyAliases { .. }
            | Self::TooManySelections { .. }
            | Self::TooDeep { .. }
            | Self::NestedTooDeeply
            | Self::FragmentsTooDeep
            | Self::SubscriptionRootFields(_)
            | Self::MissingVariable { .. }
            | Self::ConnectionInSubscription(_) => "GRAPHQL_VALIDATION_FAILED",
        }
    }
}

/// Parses `request` (or takes its document from `documents`), checks it for `transport` and
/// `options`' limits, and leaves the document on the request for execution.
pub(crate) fn check_request(
    request: &mut async_graphql::Request,
    transport: Transport,
    documents: &DocumentCache,
    options: &HttpOptions,
) -> Result<Checked, Rejection> {
    let Some(parsed) = parse(documents, &request.query)? else {
        return Ok(Checked {
            parsed: None,
            mutation: false,
            writes: 0,
        });
    };
    let (document, measures) = (&parsed.document, parsed.measures);
    let operation_name = request.operation_name.as_deref();
    let kinds = selectable(document, operation_name);
    let mutation = kinds.contains(&OperationType::Mutation);
    match transport {
        Transport::Get if mutation => return Err(Rejection::MutationOverGet),
        Transport::WebSocket if kinds != [OperationType::Subscription] => {
            return Err(Rejection::OnlySubscriptions);
        }
        Transport::Post | Transport::Get | Transport::WebSocket => {}
    }
    check_limits(measures, options)?;
    required_variables(document, operation_name, &request.variables)?;
    if transport == Transport::WebSocket {
        subscription_shape::check(document, operation_name).map_err(|shape| match shape {
            subscription_shape::Shape::RootFields(n) => Rejection::SubscriptionRootFields(n),
            subscription_shape::Shape::Connection(f) => Rejection::ConnectionInSubscription(f),
        })?;
    }
    let writes = limits::writes(document, operation_name);
    request.set_parsed_query(ExecutableDocument::clone(document));
    Ok(Checked {
        parsed: Some(parsed),
        mutation,
        writes,
    })
}

/// The document of `text` and its measures: parsed and measured once, then kept in `documents`
/// (a text seen before is neither parsed nor walked). `None` on a syntax error (async-graphql
/// reports it when the request runs); a text nested too deeply to parse safely is refused
/// (`graphql::nesting`).
fn parse(documents: &DocumentCache, text: &str) -> Result<Option<Parsed>, Rejection> {
    if let Some(parsed) = documents.get(text) {
        return Ok(Some(parsed));
    }
    let document = match nesting::parse(text) {
        Ok(document) => document,
        Err(Unparsed::TooDeep) => return Err(Rejection::NestedTooDeeply),
        Err(Unparsed::Syntax(_)) => return Ok(None),
    };
    let parsed = Parsed::new(Arc::new(document));
    documents.insert(text, &parsed);
    Ok(Some(parsed))
}

/// The kinds of the operations the request may select: the one it names (none if no operation
/// has that name), the only one, or, when it names none of several, every one of them
/// (async-graphql refuses to pick, but a check must not let one through by that gap).
fn selectable(document: &ExecutableDocument, operation_name: Option<&str>) -> Vec<OperationType> {
    match (&document.operations, operation_name) {
        (DocumentOperations::Single(op), _) => vec![op.node.ty],
        (DocumentOperations::Multiple(ops), Some(name)) => {
            ops.get(name).map(|op| op.node.ty).into_iter().collect()
        }
        (DocumentOperations::Multiple(ops), None) => ops.values().map(|op| op.node.ty).collect(),
    }
}

/// Every variable of a non-null type without a default that the selected operation defines
/// has a value, and not `null`.
fn required_variables(
    document: &ExecutableDocument,
    operation_name: Option<&str>,
    variables: &async_graphql::Variables,
) -> Result<(), Rejection> {
    let Some(operation) = crate::graphql::field_errors::operation(document, operation_name) else {
        return Ok(());
    };
    for definition in &operation.variable_definitions {
        let definition = &definition.node;
        let ty = &definition.var_type.node;
        let given = variables.get(&definition.name.node);
        let missing = given.is_none_or(|value| *value == async_graphql::Value::Null);
        if !ty.nullable && definition.default_value.is_none() && missing {
            return Err(Rejection::MissingVariable {
                name: definition.name.node.to_string(),
                ty: ty.to_string(),
            });
        }
    }
    Ok(())
}

/// The limits on the document's measures: aliases first, then depth, then selections (taken by
/// walks that visit each fragment once, however often it is spread).
fn check_limits(measures: Measures, options: &HttpOptions) -> Result<(), Rejection> {
    let selected = measures.selected;
    if selected.aliases > options.max_aliases {
        return Err(Rejection::TooManyAliases {
            aliases: selected.aliases,
            max: options.max_aliases,
        });
    }
    match measures.depth {
        usize::MAX => return Err(Rejection::FragmentsTooDeep),
        depth if depth > options.max_depth => {
            return Err(Rejection::TooDeep {
                depth,
                max: options.max_depth,
            });
        }
        _ => {}
    }
    if selected.fields > options.max_selections {
        return Err(Rejection::TooManySelections {
            selections: selected.fields,
            max: options.max_selections,
        });
    }
    Ok(())
}

/// A count for a message: past a trillion it is a doubling fragment's, and "more than" says it.
fn count_or_more(count: usize) -> String {
    const TRILLION: usize = 1_000_000_000_000;
    if count > TRILLION {
        format!("more than {TRILLION}")
    } else {
        count.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> HttpOptions {
        HttpOptions {
            max_aliases: 2,
            max_depth: 3,
            max_selections: 6,
            ..HttpOptions::default()
        }
    }

    fn check(text: &str, name: Option<&str>, transport: Transport) -> Result<Checked, Rejection> {
        let mut request = async_graphql::Request::new(text);
        if let Some(name) = name {
            request = request.operation_name(name);
        }
        check_request(&mut request, transport, &DocumentCache::new(8), &options())
    }

    const ALL: [Transport; 3] = [Transport::Post, Transport::Get, Transport::WebSocket];

    #[test]
    fn each_transport_runs_only_its_kinds_of_operation() {
        let query = "{ product(sku: \"A\") { sku } }";
        let mutation = "mutation { addComment(input: $i) { comment { id } } }";
        let subscription = "subscription { commentEvents(sku: \"A\") { kind } }";
        assert!(check(query, None, Transport::Post).is_ok());
        assert!(check(query, None, Transport::Get).is_ok());
        assert!(check(mutation, None, Transport::Post).is_ok_and(|c| c.mutation && c.writes == 1));
        assert_eq!(
            check(mutation, None, Transport::Get).err(),
            Some(Rejection::MutationOverGet)
        );
        assert!(check(subscription, None, Transport::WebSocket).is_ok());
        for refused in [query, mutation] {
            assert_eq!(
                check(refused, None, Transport::WebSocket).err(),
                Some(Rejection::OnlySubscriptions),
                "{refused}"
            );
        }
    }

    #[test]
    fn a_document_of_several_operations_is_judged_by_what_it_may_select() {
        let two = "query Q { a } mutation M { a: addComment(input: $i) { x } }";
        assert!(check(two, Some("Q"), Transport::Get).is_ok_and(|c| !c.mutation));
        assert_eq!(
            check(two, Some("M"), Transport::Get).err(),
            Some(Rejection::MutationOverGet)
        );
        assert_eq!(
            check(two, None, Transport::Get).err(),
            Some(Rejection::MutationOverGet),
            "without a name, either could be meant"
        );
        let subscriptions = "subscription S { a } subscription T { b }";
        assert!(check(subscriptions, Some("T"), Transport::WebSocket).is_ok());
        assert_eq!(
            check(subscriptions, None, Transport::WebSocket).err(),
            Some(Rejection::OnlySubscriptions)
        );
        assert_eq!(
            check(subscriptions, Some("Missing"), Transport::WebSocket).err(),
            Some(Rejection::OnlySubscriptions)
        );
    }

    #[test]
    fn the_limits_refuse_alike_on_every_transport() {
        let aliased = "subscription { a: x b: x c: x }";
        let deep = "subscription { a { b { c { d } } } }";
        let mut chain = String::from("subscription { ...F0 }");
        for i in 0..100 {
            chain.push_str(&format!(" fragment F{i} on S {{ ...F{} }}", i + 1));
        }
        chain.push_str(" fragment F100 on S { z }");
        for transport in ALL {
            let aliases = check(aliased, None, transport).err();
            assert_eq!(
                aliases,
                Some(Rejection::TooManyAliases { aliases: 3, max: 2 })
            );
            let depth = check(deep, None, transport).err();
            assert_eq!(depth, Some(Rejection::TooDeep { depth: 4, max: 3 }));
            let fragments = check(&chain, None, transport).err();
            assert_eq!(fragments, Some(Rejection::FragmentsTooDeep));
        }
        let wide = "subscription { a b c d e f g }";
        let spread = "subscription { x { ...F ...F ...F } } fragment F on T { y z }";
        for transport in ALL {
            let refused = check(wide, None, transport).err();
            let selections = Some(Rejection::TooManySelections {
                selections: 7,
                max: 6,
            });
            assert_eq!(refused, selections);
            let refused = check(spread, None, transport).err();
            assert_eq!(refused, selections, "a fragment counts at every spread");
        }
        let rejection = Rejection::TooDeep { depth: 4, max: 3 };
        assert_eq!(
            (rejection.to_string().as_str(), rejection.code()),
            (
                "the query nests fields 4 deep; at most 3 are allowed",
                "GRAPHQL_VALIDATION_FAILED"
            )
        );
    }

    #[test]
    fn a_kept_document_is_held_to_the_limits_as_a_fresh_one() {
        let documents = DocumentCache::new(8);
        let spread = "{ x { ...F ...F ...F } } fragment F on T { y z }";
        let mut narrow = options();
        narrow.max_selections = 6;
        let mut wide = narrow.clone();
        wide.max_selections = 7;
        for _ in 0..2 {
            let mut request = async_graphql::Request::new(spread);
            let refused = check_request(&mut request, Transport::Post, &documents, &narrow);
            let selections = Rejection::TooManySelections {
                selections: 7,
                max: 6,
            };
            assert_eq!(refused.err(), Some(selections));
        }
        assert!(documents.get(spread).is_some(), "the parse is kept");
        let mut request = async_graphql::Request::new(spread);
        let passed = check_request(&mut request, Transport::Post, &documents, &wide);
        assert!(
            passed.is_ok(),
            "the limits are the server's, the counts the document's"
        );
    }

    #[test]
    fn the_document_is_parsed_once_and_left_for_execution() {
        let documents = DocumentCache::new(8);
        let text = "{ product(sku: \"A\") { sku } }";
        let mut request = async_graphql::Request::new(text);
        let checked = check_request(&mut request, Transport::Post, &documents, &options())
            .expect("a query passes");
        let kept = documents.get(text).expect("the parse is kept");
        assert!(Arc::ptr_eq(
            &kept.document,
            &checked.parsed.expect("parsed").document
        ));
        // Execution takes the document set on the request, not the text.
        request.query = "{ product(".to_owned();
        assert!(request.parsed_query().is_ok());

        let mut broken = async_graphql::Request::new("{ product(");
        let checked = check_request(&mut broken, Transport::WebSocket, &documents, &options())
            .expect("a syntax error is async-graphql's to report");
        assert!(checked.parsed.is_none());
    }
}
