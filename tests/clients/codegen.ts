// GraphQL Code Generator as a client team runs it against a running server: the schema is
// read from the server's URL by introspection over HTTP (its URL loader, with its own fetch and
// `Accept-Encoding`), the documents are the GraphiQL tabs (`playground/*.graphql`), and
// `typescript-operations` alone writes their types (with `typescript` beside it, 6.x emits the
// enums twice: TS2567). Run by tests/api/clients/codegen.rs:
//
//   SCHEMA_URL=http://127.0.0.1:8080/graphql npx graphql-codegen --config codegen.ts
import type { CodegenConfig } from '@graphql-codegen/cli';

const schema = process.env.SCHEMA_URL;
if (!schema) throw new Error('set SCHEMA_URL to the running server\'s /graphql');

const config: CodegenConfig = {
  schema,
  documents: '../../playground/*.graphql',
  generates: {
    'codegen/__generated__/operations.ts': { plugins: ['typescript-operations'] },
  },
};

export default config;
