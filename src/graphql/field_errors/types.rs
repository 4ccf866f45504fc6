//! The type of every output field of a schema, read once from its SDL: what the walk
//! (`super::walk`) asks to learn whether a position may hold `null`, and what the price walk
//! (`graphql::pricing::document`) follows to find the fields that read the store.

use std::collections::HashMap;

use async_graphql::Name;
use async_graphql::parser::types::{OperationType, Type, TypeKind, TypeSystemDefinition};

/// The type of every output field of a schema, by type name and field name.
#[derive(Clone, Debug, Default)]
pub struct OutputTypes {
    fields: HashMap<String, HashMap<String, Type>>,
    query: String,
    mutation: String,
    subscription: String,
}

impl OutputTypes {
    /// Reads the output fields of a schema printed as SDL.
    pub fn from_sdl(sdl: &str) -> Result<Self, async_graphql::parser::Error> {
        let document = async_graphql::parser::parse_schema(sdl)?;
        let mut types = OutputTypes {
            query: "Query".into(),
            mutation: "Mutation".into(),
            subscription: "Subscription".into(),
            ..OutputTypes::default()
        };
        for definition in document.definitions {
            match definition {
                TypeSystemDefinition::Schema(schema) => {
                    let schema = schema.node;
                    let name = |n: Option<async_graphql::Positioned<Name>>, default: &str| {
                        n.map_or_else(|| default.to_owned(), |n| n.node.to_string())
                    };
                    types.query = name(schema.query, "Query");
                    types.mutation = name(schema.mutation, "Mutation");
                    types.subscription = name(schema.subscription, "Subscription");
                }
                TypeSystemDefinition::Type(ty) => {
                    let ty = ty.node;
                    let fields = match ty.kind {
                        TypeKind::Object(object) => object.fields,
                        TypeKind::Interface(interface) => interface.fields,
                        _ => continue,
                    };
                    let entry = types.fields.entry(ty.name.node.to_string()).or_default();
                    for field in fields {
                        let field = field.node;
                        entry.insert(field.name.node.to_string(), field.ty.node);
                    }
                }
                TypeSystemDefinition::Directive(_) => {}
            }
        }
        Ok(types)
    }

    /// The type of `type_name`'s `field`, if the schema has both.
    pub(crate) fn field(&self, type_name: &str, field: &str) -> Option<&Type> {
        self.fields.get(type_name)?.get(field)
    }

    /// Whether the schema has an object or interface type `type_name`.
    pub(crate) fn has_type(&self, type_name: &str) -> bool {
        self.fields.contains_key(type_name)
    }

    /// The name of `operation`'s root type.
    pub(crate) fn root(&self, operation: OperationType) -> &str {
        match operation {
            OperationType::Query => &self.query,
            OperationType::Mutation => &self.mutation,
            OperationType::Subscription => &self.subscription,
        }
    }
}
