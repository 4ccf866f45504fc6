// A shop's supergraph around a running dynapage subgraph, in one process: a products subgraph
// (@apollo/subgraph on @apollo/server: `sku`, `name`, `price`), the supergraph composed from it
// and dynapage's `_service { sdl }` by @apollo/composition and by
// @theguild/federation-composition, and two gateways in front: @apollo/gateway on
// @apollo/server (from Apollo's supergraph) and Hive Gateway (from The Guild's). Both forward
// `Authorization` and `X-Forwarded-For` (the client's chain plus the address the gateway saw);
// Hive Gateway reaches dynapage's subscriptions over graphql-ws.
//
//   node federation/stack.mjs '{"reviews": "http://127.0.0.1:8080/graphql", "products": 48}'
//
// Prints one JSON line (the products subgraph's URL, the gateways' origins, which serve
// `/graphql`, and both composers' errors and hints), then serves until its standard input
// closes. @apollo/gateway copies the `Dynapage-Cost` of its fetches to dynapage onto its own
// response (`; `-separated), so a test can count what a query through it read.
import http from 'node:http';
import { parse } from 'graphql';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { ApolloServerPluginInlineTraceDisabled } from '@apollo/server/plugin/disabled';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { composeServices } from '@apollo/composition';
import { composeServices as composeWithGuild } from '@theguild/federation-composition';
import { ApolloGateway, RemoteGraphQLDataSource } from '@apollo/gateway';
import { createGatewayRuntime } from '@graphql-hive/gateway';

const config = JSON.parse(process.argv[2] ?? '{}');
const reviews = config.reviews;

/** The catalogue: `SKU-01` … `SKU-<n>`, named and priced. */
const catalogue = Array.from({ length: config.products ?? 48 }, (_, i) => {
  const sku = `SKU-${String(i + 1).padStart(2, '0')}`;
  return { sku, name: `Product ${i + 1}`, price: 1000 + 100 * i };
});
const bySku = new Map(catalogue.map((p) => [p.sku, p]));

const productsSdl = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.5", import: ["@key"])
  type Query {
    "The catalogue's first products, in catalogue order."
    products(first: Int! = 48): [Product!]!
  }
  type Product @key(fields: "sku") {
    sku: String!
    name: String!
    "Price in cents."
    price: Int!
  }
`;

/** The products subgraph; its URL. */
async function productsSubgraph() {
  const schema = buildSubgraphSchema([{
    typeDefs: parse(productsSdl),
    resolvers: {
      Query: { products: (_, { first }) => catalogue.slice(0, first) },
      // A SKU the catalogue does not have is still a product the reviews name.
      Product: { __resolveReference: ({ sku }) => bySku.get(sku) ?? { sku, name: sku, price: 0 } },
    },
  }]);
  const server = new ApolloServer({ schema, plugins: [ApolloServerPluginInlineTraceDisabled()] });
  const { url } = await startStandaloneServer(server, { listen: { port: 0, host: '127.0.0.1' } });
  return url;
}

/** dynapage's subgraph SDL, asked as a gateway that composes from its subgraphs would. */
async function reviewsSdl() {
  const response = await fetch(reviews, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ _service { sdl } }' }),
  });
  const body = await response.json();
  if (!body.data?._service?.sdl) throw new Error(`no _service.sdl: ${JSON.stringify(body)}`);
  return body.data._service.sdl;
}

/** The address a request came from, as `X-Forwarded-For` names it. */
const peer = (socket) => (socket?.remoteAddress ?? '').replace(/^::ffff:/, '');

/** The client's `X-Forwarded-For` with the address the gateway saw appended. */
const forwardedFor = (chain, socket) => [chain, peer(socket)].filter(Boolean).join(', ');

/** @apollo/gateway on @apollo/server; its URL. */
async function apolloGateway(supergraphSdl) {
  const gateway = new ApolloGateway({
    supergraphSdl,
    buildService: ({ url }) =>
      new RemoteGraphQLDataSource({
        url,
        willSendRequest({ request, context }) {
          for (const [name, value] of Object.entries(context.forward ?? {})) {
            if (value) request.http.headers.set(name, value);
          }
        },
        // What each dynapage fetch read (its `Dynapage-Cost`), for the gateway's response.
        didReceiveResponse({ response, context }) {
          const cost = response.http?.headers.get('dynapage-cost');
          if (cost) context.costs?.push(cost);
          return response;
        },
      }),
  });
  // The subgraph fetches' `Dynapage-Cost`, joined with `; `, on the gateway's response.
  const costs = {
    async requestDidStart() {
      return {
        async willSendResponse({ response, contextValue }) {
          if (contextValue.costs?.length) {
            response.http.headers.set('dynapage-cost', contextValue.costs.join('; '));
          }
        },
      };
    },
  };
  const server = new ApolloServer({ gateway, plugins: [costs], includeStacktraceInErrorResponses: false });
  const { url } = await startStandaloneServer(server, {
    listen: { port: 0, host: '127.0.0.1' },
    context: async ({ req }) => ({
      forward: {
        authorization: req.headers.authorization,
        'x-forwarded-for': forwardedFor(req.headers['x-forwarded-for'], req.socket),
      },
      costs: [],
    }),
  });
  return url.replace(/\/$/, '');
}

/** Hive Gateway; its URL. */
async function hiveGateway(supergraph) {
  const gateway = createGatewayRuntime({
    supergraph,
    logging: false,
    propagateHeaders: {
      fromClientToSubgraphs({ request, context }) {
        const headers = {
          'x-forwarded-for': forwardedFor(request.headers.get('x-forwarded-for'), context.req?.socket),
        };
        const authorization = request.headers.get('authorization');
        if (authorization) headers.authorization = authorization;
        return headers;
      },
    },
    transportEntries: {
      reviews: { options: { subscriptions: { kind: 'ws', location: new URL(reviews).pathname } } },
    },
  });
  const server = http.createServer(gateway);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${server.address().port}`;
}

const products = await productsSubgraph();
const services = [
  { name: 'products', url: products, typeDefs: parse(productsSdl) },
  { name: 'reviews', url: reviews, typeDefs: parse(await reviewsSdl()) },
];
const apollo = composeServices(services);
const guild = composeWithGuild(services);
const report = {
  products,
  composition: {
    apollo: {
      errors: (apollo.errors ?? []).map((e) => e.message),
      hints: (apollo.hints ?? []).map((h) => `${h.definition.code}: ${h.message}`),
    },
    guild: { errors: (guild.errors ?? []).map((e) => e.message) },
  },
};
if (apollo.supergraphSdl && guild.supergraphSdl) {
  report.apollo = await apolloGateway(apollo.supergraphSdl);
  report.hive = await hiveGateway(guild.supergraphSdl);
}
console.log(JSON.stringify(report));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
