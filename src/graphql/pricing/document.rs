//! A document's price, counted by our own walk before anything runs: what the budget charges,
//! `--max-query-complexity` and `--max-items-per-request` bound, and `requestedQueryCost` shows.
//!
//! Why not async-graphql's complexity: it is counted inside validation, and the only way to
//! read it before execution is an extension on the `validation` hook. async-graphql 7.2.1
//! sends every field of a response through the extension chain as soon as a schema has any
//! extension (about 27 % of a page's instructions, BENCHMARKS.md, "What async-graphql's
//! extension path costs a page"), so the schema carries none, and the price is counted here.
//!
//! The count is async-graphql's, field for field: a field costs 1 plus what its selection
//! costs, `__typename` nothing, fragments count at every spread; the fields that read the store
//! (`comments`, `nodes`, `ratingSummaries`, the subgraph's `_entities`) cost what [`super`] says, from their arguments as
//! the resolver will see them (variables, their defaults, a lone value where a list is
//! expected), parsed by the same `InputType`s.
//! Two differences, on purpose: a fragment spread is counted on its fragment's type, where
//! async-graphql counted it on the type around the spread, so `node(id:) { ...OnProduct }`
//! priced `Product.comments` as an ordinary field and a page of reads came nearly free; and
//! only the operation that runs is priced (async-graphql counted every operation of the
//! document, so a neighbour's arguments could decide whether the one that runs was priced).
//!
//! The walk looks the schema's types up once per document (a `Plan`, kept with the parse by
//! text, `http::admission::documents`); each request then counts only the fields that read, from
//! its variables. A document the walk cannot follow (a field its type does not have, a fragment
//! that does not exist) is left to async-graphql, whose validation refuses it; the request then
//! pays the failure floor. A reading field's argument that does not parse as its resolver's
//! type is the request's error ([`Priced::Invalid`]): such a request never runs unpriced.

use std::sync::{Arc, OnceLock};

use async_graphql::parser::types::{
    BaseType, ExecutableDocument, Field, OperationType, Selection, SelectionSet, Type,
    VariableDefinition,
};
use async_graphql::{ID, InputType, Positioned, Value as ConstValue, Variables};

use super::ConnectionShape;
use crate::graphql::federation::Representation;
use crate::graphql::field_errors::OutputTypes;
use crate::graphql::{CommentOrder, MAX_NESTING};
use crate::pagination::PagingSettings;

/// A document's plan (`Plan`), made on its first request and shared by every copy of its parse
/// (made only once the request check has bounded the document: fragments are expanded).
#[derive(Clone, Debug, Default)]
pub struct Pricing(Arc<OnceLock<Option<Plan>>>);

/// What a request's price came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Priced {
    /// Its price.
    Cost(u64),
    /// The walk cannot follow the document (a field, type or fragment the schema does not
    /// have) or find the operation that runs: async-graphql refuses it.
    Unknown,
    /// An argument of a reading field does not parse as its type: the message to refuse with.
    Invalid(String),
}

impl Pricing {
    /// The price of `document` (the parse this belongs to), operation `operation_name`, with
    /// `variables` under this server's `settings`.
    pub fn price(
        &self,
        types: &OutputTypes,
        document: &ExecutableDocument,
        operation_name: Option<&str>,
        variables: &Variables,
        settings: &PagingSettings,
    ) -> Priced {
        let plan = self.0.get_or_init(|| Plan::new(types, document));
        let Some(operation) = plan.as_ref().and_then(|p| p.operation(operation_name)) else {
            return Priced::Unknown;
        };
        let count = Count {
            variables,
            definitions: &operation.definitions,
            settings,
        };
        match count.set(&operation.root) {
            Ok(cost) => Priced::Cost(cost),
            Err(why) => Priced::Invalid(why),
        }
    }
}

/// A document's price with its types looked up: per operation, what its plain fields cost and
/// the fields that read the store, whose price depends on their arguments.
#[derive(Debug)]
struct Plan {
    operations: Vec<Operation>,
}

#[derive(Debug)]
struct Operation {
    name: Option<String>,
    definitions: Vec<Positioned<VariableDefinition>>,
    root: Set,
}

/// A selection set: a field costs 1 plus its selection, so every field that does not read is a
/// constant, summed into `fixed`, and the reading fields below it are its set's own.
#[derive(Debug, Default)]
struct Set {
    fixed: u64,
    reads: Vec<ReadingField>,
}

#[derive(Debug)]
struct ReadingField {
    read: Read,
    /// The field's name and arguments as written (variables are replaced per request), without
    /// its selection, which is `selection`.
    arguments: Field,
    selection: Set,
}

/// The fields that read the store, each priced by its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Read {
    /// `Query.comments`, `Product.comments`.
    Connection,
    /// `Query.nodes`.
    Nodes,
    /// `Query._entities` (the Federation subgraph's): each representation like a `product`
    /// field, or a `nodes` id.
    Entities,
    /// `Query.ratingSummaries`.
    Summaries,
    /// `Query.moderationStats`: priced as the counts of a product and its three queues (the
    /// shop's report reads every product's counts, in one index call per hash slot; it is for
    /// moderators only).
    Stats,
}

impl Plan {
    /// Walks every operation of `document` once; `None` when the walk finds it invalid.
    fn new(types: &OutputTypes, document: &ExecutableDocument) -> Option<Self> {
        let walk = Walk { types, document };
        let operations = document
            .operations
            .iter()
            .map(|(name, operation)| {
                let operation = &operation.node;
                let root = types.root(operation.ty);
                Some(Operation {
                    name: name.map(ToString::to_string),
                    definitions: operation.variable_definitions.clone(),
                    root: walk.set(&operation.selection_set.node, Some(root), 0)?,
                })
            })
            .collect::<Option<_>>()?;
        Some(Self { operations })
    }

    /// The operation that runs: the one named, or the only one.
    fn operation(&self, name: Option<&str>) -> Option<&Operation> {
        match (name, self.operations.as_slice()) {
            (None, [only]) => Some(only),
            (None, _) => None,
            (Some(name), operations) => operations.iter().find(|o| o.name.as_deref() == Some(name)),
        }
    }
}

/// The walk that makes a [`Plan`].
struct Walk<'a> {
    types: &'a OutputTypes,
    document: &'a ExecutableDocument,
}

impl Walk<'_> {
    /// `set` on the type `on` (`None`: a type the walk does not know, such as an introspection
    /// type, where every field costs 1 plus its selection).
    fn set(&self, set: &SelectionSet, on: Option<&str>, spreads: usize) -> Option<Set> {
        let mut plan = Set::default();
        for selection in &set.items {
            let inner = match &selection.node {
                Selection::Field(field) => self.field(&field.node, on, spreads)?,
                Selection::InlineFragment(inline) => {
                    let inline = &inline.node;
                    let on = match &inline.type_condition {
                        Some(condition) => Some(self.known(&condition.node.on.node)?),
                        None => on,
                    };
                    self.set(&inline.selection_set.node, on, spreads)?
                }
                Selection::FragmentSpread(spread) => {
                    let name = &spread.node.fragment_name.node;
                    let fragment = &self.document.fragments.get(name)?.node;
                    if spreads >= MAX_NESTING {
                        return None;
                    }
                    let on = self.known(&fragment.type_condition.node.on.node)?;
                    self.set(&fragment.selection_set.node, Some(on), spreads + 1)?
                }
            };
            plan.add(inner);
        }
        Some(plan)
    }

    /// A type condition's type, if the schema has it.
    fn known<'n>(&self, name: &'n str) -> Option<&'n str> {
        self.types.has_type(name).then_some(name)
    }

    /// What `field` adds to its set: `__typename` nothing, a plain field 1 and its selection, a
    /// reading field itself.
    fn field(&self, field: &Field, on: Option<&str>, spreads: usize) -> Option<Set> {
        let name = field.name.node.as_str();
        if name == "__typename" {
            return Some(Set::default());
        }
        let (ty, read) = match on {
            Some(on) => match self.types.field(on, name) {
                Some(ty) => (Some(named(ty)), read(self.types, on, name)),
                // `__schema` and `__type` on the query type: introspection, at 1 a field.
                None if name.starts_with("__") => (None, None),
                None => return None,
            },
            None => (None, None),
        };
        let mut selection = self.set(&field.selection_set.node, ty, spreads)?;
        Some(match read {
            None => {
                selection.fixed = selection.fixed.saturating_add(1);
                selection
            }
            Some(read) => {
                let arguments = Field {
                    alias: None,
                    name: field.name.clone(),
                    arguments: field.arguments.clone(),
                    directives: Vec::new(),
                    selection_set: Positioned::new(SelectionSet::default(), field.name.pos),
                };
                let reading = ReadingField {
                    read,
                    arguments,
                    selection,
                };
                Set {
                    fixed: 0,
                    reads: vec![reading],
                }
            }
        })
    }
}

impl Set {
    fn add(&mut self, other: Set) {
        self.fixed = self.fixed.saturating_add(other.fixed);
        self.reads.extend(other.reads);
    }
}

/// One operation's count with a request's variables.
struct Count<'a> {
    variables: &'a Variables,
    definitions: &'a [Positioned<VariableDefinition>],
    settings: &'a PagingSettings,
}

impl Count<'_> {
    fn set(&self, set: &Set) -> Result<u64, String> {
        let mut total = set.fixed;
        for field in &set.reads {
            total = total.saturating_add(self.field(field)?);
        }
        Ok(total)
    }

    fn field(&self, field: &ReadingField) -> Result<u64, String> {
        let child = usize::try_from(self.set(&field.selection)?).unwrap_or(usize::MAX);
        let cost = match field.read {
            Read::Connection => {
                super::connection_complexity(self.shape(field)?, child, self.settings)
            }
            Read::Nodes => {
                let ids = self.argument::<Vec<ID>>(field, "ids")?;
                super::nodes_complexity(ids.len(), child)
            }
            Read::Entities => {
                let representations =
                    self.argument::<Vec<Representation>>(field, "representations")?;
                super::nodes_complexity(representations.len(), child)
            }
            Read::Summaries => {
                let skus = self.argument::<Vec<String>>(field, "skus")?;
                super::summaries_complexity(skus.len(), child)
            }
            Read::Stats => super::summaries_complexity(4, child),
        };
        Ok(cost as u64)
    }

    /// The arguments of a `comments` field that decide what it reads.
    fn shape(&self, field: &ReadingField) -> Result<ConnectionShape, String> {
        let order = self.argument::<Option<CommentOrder>>(field, "orderBy")?;
        let ratings = self.argument::<Option<Vec<i32>>>(field, "ratings")?;
        Ok(ConnectionShape {
            first: self.argument(field, "first")?,
            last: self.argument(field, "last")?,
            offset: self.argument(field, "offset")?,
            ratings: ratings.map(|r| r.len()),
            containing: self.argument::<Option<ID>>(field, "containing")?.is_some(),
            grouped: order
                .is_some_and(|o| crate::domain::CommentOrder::from(o).grouping().by_rating()),
        })
    }

    /// Argument `name` of `field` as the resolver receives it: variables replaced (by the
    /// request's value, else the definition's default), parsed as `T`; `Err` says why when it
    /// does not parse or names a variable the operation does not define.
    fn argument<T: InputType>(&self, field: &ReadingField, name: &str) -> Result<T, String> {
        let field_name = &field.arguments.name.node;
        let value = match field.arguments.get_argument(name) {
            None => None,
            Some(value) => Some(value.node.clone().into_const_with(|variable| {
                let value = self.variable(&variable).cloned();
                value.ok_or_else(|| format!("variable `${variable}` is not defined"))
            })?),
        };
        T::parse(value).map_err(|e| {
            let why = e.into_server_error(async_graphql::Pos::default()).message;
            format!("argument `{name}` of `{field_name}`: {why}")
        })
    }

    fn variable(&self, name: &str) -> Option<&ConstValue> {
        let definition = self.definitions.iter().find(|d| d.node.name.node == name)?;
        self.variables
            .get(&definition.node.name.node)
            .or_else(|| definition.node.default_value())
    }
}

/// The store read a field makes, if any.
fn read(types: &OutputTypes, on: &str, field: &str) -> Option<Read> {
    let query = on == types.root(OperationType::Query);
    match field {
        "comments" if query || on == "Product" || on == "Viewer" => Some(Read::Connection),
        "moderationQueue" | "moderationLog" if query => Some(Read::Connection),
        "reports" if on == "Viewer" => Some(Read::Connection),
        "moderationStats" if query => Some(Read::Stats),
        "nodes" if query => Some(Read::Nodes),
        "_entities" if query => Some(Read::Entities),
        "ratingSummaries" if query => Some(Read::Summaries),
        _ => None,
    }
}

/// The named type inside list and non-null wrappers.
fn named(ty: &Type) -> &str {
    match &ty.base {
        BaseType::Named(name) => name.as_str(),
        BaseType::List(inner) => named(inner),
    }
}

#[cfg(test)]
mod tests;
