// What GraphiQL, Apollo's and codegen's tools do first: send graphql-js's standard introspection
// query (every option on) to a running server, build a client schema from the answer, and
// compare it with schema.graphql. Usage: node introspect.mjs http://host:port/graphql
// Prints "introspection matches schema.graphql", or exits 1 with what differed.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  buildClientSchema,
  buildSchema,
  getIntrospectionQuery,
  lexicographicSortSchema,
  printSchema,
} from 'graphql';

const url = process.argv[2];
if (!url) {
  console.error('usage: node introspect.mjs <graphql endpoint>');
  process.exit(2);
}
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const query = getIntrospectionQuery({
  descriptions: true,
  specifiedByUrl: true,
  directiveIsRepeatable: true,
  schemaDescription: true,
  inputValueDeprecation: true,
  oneOf: true,
});
const response = await fetch(url, {
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json' },
  body: JSON.stringify({ query, operationName: 'IntrospectionQuery' }),
});
const body = await response.json();
if (!response.ok || body.errors || !body.data) {
  console.error(`introspection failed (HTTP ${response.status}): ${JSON.stringify(body)}`);
  process.exit(1);
}

const print = (schema) => printSchema(lexicographicSortSchema(schema));
const served = print(buildClientSchema(body.data));
const committed = print(buildSchema(readFileSync(join(root, 'schema.graphql'), 'utf8')));
if (served !== committed) {
  const a = served.split('\n');
  const b = committed.split('\n');
  const line = a.findIndex((text, i) => text !== b[i]);
  console.error(
    `the served schema differs from schema.graphql at line ${line + 1}:\n` +
      `  served:    ${a[line]}\n  committed: ${b[line]}`
  );
  process.exit(1);
}
console.log('introspection matches schema.graphql');
