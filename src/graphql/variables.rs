//! A request's variable values held to their declared types, for documents whose text has
//! passed async-graphql's validation before.
//!
//! Why this exists: async-graphql 7.2.1 validates every request in full, every rule of the
//! specification over the whole document (22 % of a pager page's instructions, BENCHMARKS.md),
//! though the parse is kept by text and nothing but the variables changes between a client's
//! requests. The rules are the document's alone but one: argument values are checked with the
//! request's variables put in. So the server validates a text in full on its first request and,
//! once that passed, runs later requests of the same text on a schema that only walks the
//! document for its limits (`ValidationMode::Fast`, `http::graphql`), after [`InputTypes::check`]
//! has held the variables to their declared types here, as the specification's
//! CoerceVariableValues does and with async-graphql's own tests of each value
//! (`validation/utils.rs`, `is_valid_input_value`): a scalar by its type's `is_valid`, an enum
//! by its values, an input object field by field. A variable's declared type fits every place
//! it is used (validation's VariableInAllowedPosition), so a value of that type passes the
//! argument checks validation would make. It can go when async-graphql can validate a document
//! once and check variables apart.

use std::collections::{HashMap, HashSet};

use async_graphql::parser::types::{
    BaseType, OperationDefinition, Type, TypeKind, TypeSystemDefinition,
};
use async_graphql::{ID, ScalarType, Value, Variables};

use super::DateTime;

/// The schema's input types, by name: what a variable's value is held to.
#[derive(Debug, Default)]
pub struct InputTypes {
    types: HashMap<String, Input>,
}

#[derive(Debug)]
enum Input {
    /// A scalar and its type's test of a value.
    Scalar(fn(&Value) -> bool),
    Enum(HashSet<String>),
    /// Fields: name, type, and whether the field has a default.
    Object(Vec<(String, Type, bool)>),
}

impl InputTypes {
    /// Reads the input types of a schema printed as SDL (the built-in scalars are known).
    pub fn from_sdl(sdl: &str) -> Result<Self, async_graphql::parser::Error> {
        let document = async_graphql::parser::parse_schema(sdl)?;
        let mut types = HashMap::from([
            (
                "Int".to_owned(),
                Input::Scalar(<i32 as ScalarType>::is_valid),
            ),
            (
                "Float".to_owned(),
                Input::Scalar(<f64 as ScalarType>::is_valid),
            ),
            (
                "String".to_owned(),
                Input::Scalar(<String as ScalarType>::is_valid),
            ),
            (
                "Boolean".to_owned(),
                Input::Scalar(<bool as ScalarType>::is_valid),
            ),
            ("ID".to_owned(), Input::Scalar(<ID as ScalarType>::is_valid)),
            (
                "DateTime".to_owned(),
                Input::Scalar(<DateTime as ScalarType>::is_valid),
            ),
        ]);
        for definition in document.definitions {
            let TypeSystemDefinition::Type(ty) = definition else {
                continue;
            };
            let ty = ty.node;
            let input = match ty.kind {
                TypeKind::Enum(values) => Input::Enum(
                    values
                        .values
                        .into_iter()
                        .map(|v| v.node.value.node.to_string())
                        .collect(),
                ),
                TypeKind::InputObject(object) => Input::Object(
                    object
                        .fields
                        .into_iter()
                        .map(|f| {
                            let f = f.node;
                            (
                                f.name.node.to_string(),
                                f.ty.node,
                                f.default_value.is_some(),
                            )
                        })
                        .collect(),
                ),
                _ => continue,
            };
            types.insert(ty.name.node.to_string(), input);
        }
        Ok(Self { types })
    }

    /// Holds every variable `operation` declares to its type; `Err` says which is wrong and
    /// why. An absent variable is left to its default, or to the request check when it is
    /// required (`http::admission::check`).
    pub fn check(
        &self,
        operation: &OperationDefinition,
        variables: &Variables,
    ) -> Result<(), String> {
        for definition in &operation.variable_definitions {
            let definition = &definition.node;
            let Some(value) = variables.get(&definition.name.node) else {
                continue;
            };
            if let Err(why) = self.value(&definition.var_type.node, value) {
                let name = &definition.name.node;
                let ty = &definition.var_type.node;
                return Err(format!(
                    "variable `${name}` of type `{ty}` got an invalid value: {why}"
                ));
            }
        }
        Ok(())
    }

    fn value(&self, ty: &Type, value: &Value) -> Result<(), String> {
        if *value == Value::Null {
            return match ty.nullable {
                true => Ok(()),
                false => Err(format!("expected `{ty}`, found null")),
            };
        }
        match &ty.base {
            BaseType::List(item) => match value {
                Value::List(items) => items.iter().try_for_each(|v| self.value(item, v)),
                // A lone value where a list is expected is a list of one.
                other => self.value(item, other),
            },
            BaseType::Named(name) => self.named(name, value),
        }
    }

    fn named(&self, name: &str, value: &Value) -> Result<(), String> {
        match self.types.get(name) {
            // A type this table does not know (none in this schema) is validation's to check.
            None => Ok(()),
            Some(Input::Scalar(is_valid)) if is_valid(value) => Ok(()),
            Some(Input::Scalar(_)) => Err(format!("expected `{name}`")),
            Some(Input::Enum(values)) => match value {
                Value::Enum(v) if values.contains(v.as_str()) => Ok(()),
                Value::String(v) if values.contains(v.as_str()) => Ok(()),
                _ => Err(format!("`{name}` has no value {value}")),
            },
            Some(Input::Object(fields)) => {
                let Value::Object(given) = value else {
                    return Err(format!("expected an object of type `{name}`"));
                };
                for (field, ty, has_default) in fields {
                    match given.get(field.as_str()) {
                        Some(v) => self
                            .value(ty, v)
                            .map_err(|why| format!("`{field}`: {why}"))?,
                        None if !ty.nullable && !has_default => {
                            return Err(format!("field `{field}` of `{name}` is required"));
                        }
                        None => {}
                    }
                }
                match given
                    .keys()
                    .find(|k| !fields.iter().any(|(f, _, _)| f == k.as_str()))
                {
                    Some(unknown) => Err(format!("`{name}` has no field `{unknown}`")),
                    None => Ok(()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(query: &str, variables: serde_json::Value) -> Result<(), String> {
        let types = InputTypes::from_sdl(&crate::graphql::sdl()).expect("our SDL parses");
        let document = async_graphql::parser::parse_query(query).expect("parses");
        let operation = crate::graphql::field_errors::operation(&document, None).expect("one");
        types.check(operation, &Variables::from_json(variables))
    }

    #[test]
    fn scalars_lists_and_enums_are_held_to_their_declared_types() {
        let query = "query($n: Int, $r: [Int!], $o: CommentOrder, $id: ID) { __typename }";
        let fine = serde_json::json!({"n": 3, "r": [1, 2], "o": "HIGHEST_RATED", "id": "x"});
        assert_eq!(check(query, fine), Ok(()));
        assert_eq!(
            check(query, serde_json::json!({"r": 4, "n": null})),
            Ok(()),
            "a lone value"
        );
        for bad in [
            serde_json::json!({"n": "ten"}),
            serde_json::json!({"n": 1.5}),
            serde_json::json!({"r": [1, null]}),
            serde_json::json!({"r": ["one"]}),
            serde_json::json!({"o": "SIDEWAYS"}),
            serde_json::json!({"id": true}),
        ] {
            assert!(check(query, bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn input_objects_are_held_field_by_field() {
        let query = "mutation($input: AddCommentInput!) { __typename }";
        let fine = serde_json::json!({"input": {"sku": "X", "body": "b", "rating": 5}});
        assert_eq!(check(query, fine), Ok(()));
        let unknown = serde_json::json!({"input": {"sku": "X", "body": "b", "rating": 5, "x": 1}});
        let unknown = check(query, unknown).expect_err("an unknown field");
        assert!(unknown.contains("no field `x`"), "{unknown}");
        let missing = serde_json::json!({"input": {"sku": "X", "rating": 5}});
        let missing = check(query, missing).expect_err("a missing field");
        assert!(missing.contains("`body`"), "{missing}");
        let wrong = serde_json::json!({"input": {"sku": "X", "body": "b", "rating": "five"}});
        assert!(check(query, wrong).is_err());
        assert!(check(query, serde_json::json!({"input": "X"})).is_err());
    }
}
