// graphql-js's view of schema.graphql, as Apollo, urql and codegen tools see it: the SDL builds
// and validates, every type, field, argument, input field and enum value has a description,
// and every playground/*.graphql example validates against it. Exits 1 with the problems listed.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  buildSchema,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  isEnumType,
  isIntrospectionType,
  isSpecifiedScalarType,
  parse,
  validate,
  validateSchema,
} from 'graphql';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const problems = [];

const schema = buildSchema(readFileSync(join(root, 'schema.graphql'), 'utf8'));
for (const error of validateSchema(schema)) problems.push(`schema: ${error.message}`);

const described = (what, thing) => {
  if (!thing.description || !thing.description.trim()) problems.push(`no description: ${what}`);
};
for (const type of Object.values(schema.getTypeMap())) {
  if (isIntrospectionType(type) || isSpecifiedScalarType(type)) continue;
  described(type.name, type);
  if (isObjectType(type) || isInterfaceType(type)) {
    for (const field of Object.values(type.getFields())) {
      described(`${type.name}.${field.name}`, field);
      for (const arg of field.args) described(`${type.name}.${field.name}(${arg.name}:)`, arg);
    }
  } else if (isInputObjectType(type)) {
    for (const field of Object.values(type.getFields())) described(`${type.name}.${field.name}`, field);
  } else if (isEnumType(type)) {
    for (const value of type.getValues()) described(`${type.name}.${value.name}`, value);
  }
}

const examples = join(root, 'playground');
const files = readdirSync(examples).filter((name) => name.endsWith('.graphql')).sort();
for (const name of files) {
  const document = parse(readFileSync(join(examples, name), 'utf8'));
  for (const error of validate(schema, document)) problems.push(`playground/${name}: ${error.message}`);
}

if (problems.length > 0) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log(`schema.graphql: valid for graphql-js, fully described; ${files.length} playground examples valid`);
