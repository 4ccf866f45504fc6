// A schema as graphql-js's printSchema prints it, from a running server or from an SDL file.
// For a server, the schema is what graphql-js's introspection query answers with every option a
// client can turn on (schemaDescription, specifiedByUrl, inputValueDeprecation,
// directiveIsRepeatable), so the two print alike only if introspection serves exactly what the
// file says, down to the schema's description (none).
// Usage: node print-schema.mjs http://host:port/graphql | node print-schema.mjs path/to/schema.graphql
import { readFileSync } from 'node:fs';
import { buildClientSchema, buildSchema, getIntrospectionQuery, printSchema } from 'graphql';

const source = process.argv[2];
if (!source) {
  console.error('usage: node print-schema.mjs <graphql endpoint | schema file>');
  process.exit(2);
}

let schema;
if (/^https?:/.test(source)) {
  const query = getIntrospectionQuery({
    descriptions: true,
    schemaDescription: true,
    specifiedByUrl: true,
    inputValueDeprecation: true,
    directiveIsRepeatable: true,
  });
  const response = await fetch(source, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query, operationName: 'IntrospectionQuery' }),
  });
  const body = await response.json();
  if (!response.ok || body.errors || !body.data) {
    console.error(`introspection failed (HTTP ${response.status}): ${JSON.stringify(body)}`);
    process.exit(1);
  }
  schema = buildClientSchema(body.data);
} else {
  schema = buildSchema(readFileSync(source, 'utf8'));
}
process.stdout.write(printSchema(schema));
