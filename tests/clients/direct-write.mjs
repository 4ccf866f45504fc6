// The README's three subscription clients (the `graphql-ws` client, Apollo Client's
// GraphQLWsLink, urql's subscriptionExchange) receiving a comment that nobody wrote through the
// API: the Rust test (tests/api/clients/live_clients.rs) writes it straight into the DynamoDB table once
// this script says the three are subscribed, and the server (`serve --sync`) hears of it from the
// table's stream.
//
// Usage: node direct-write.mjs <endpoint> <sku> <body>
// Prints "subscribed" once the three subscriptions are running, then, for each client, a line
// "received <client> <kind> <id> <body>" for the first event it gets (within 10 s), and last
// "direct-write: N checks passed, F failed, W warnings".
import { captureConsole, assertEqual, run, say } from './common.mjs';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { ApolloClient, InMemoryCache, gql } from '@apollo/client/core/index.js';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions/index.js';
import { Client as UrqlClient, subscriptionExchange } from '@urql/core';

const [url, sku, body] = process.argv.slice(2);
if (!body) {
  process.stderr.write('usage: node direct-write.mjs <endpoint> <sku> <body>\n');
  process.exit(2);
}
const captured = captureConsole();
const wsUrl = url.replace(/^http/, 'ws');
const EVENTS = `
  subscription Events($sku: String!) {
    commentEvents(sku: $sku) { kind edge { node { id body } } }
  }
`;

// The first event of a subscription, or a failure after 10 s.
function firstEvent() {
  let resolve;
  let reject;
  const promise = new Promise((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  // Failures are read when the check awaits it, not before.
  promise.catch(() => {});
  const timer = setTimeout(() => reject(new Error('no event within 10 s')), 10_000);
  return {
    promise,
    next(event) {
      clearTimeout(timer);
      resolve(event);
    },
    fail(e) {
      clearTimeout(timer);
      reject(e instanceof Error ? e : new Error(JSON.stringify(e)));
    },
  };
}

async function wsClient() {
  let connected;
  const ready = new Promise((resolve) => (connected = resolve));
  const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, lazy: false, on: { connected } });
  await ready;
  return client;
}

const plain = await wsClient();
const apolloWs = await wsClient();
const urqlWs = await wsClient();
const events = { 'graphql-ws': firstEvent(), apollo: firstEvent(), urql: firstEvent() };

plain.subscribe(
  { query: EVENTS, variables: { sku } },
  {
    next: (r) => (r.errors ? events['graphql-ws'].fail(r.errors) : events['graphql-ws'].next(r.data.commentEvents)),
    error: (e) => events['graphql-ws'].fail(e),
    complete: () => {},
  },
);
const apollo = new ApolloClient({ link: new GraphQLWsLink(apolloWs), cache: new InMemoryCache() });
apollo
  .subscribe({ query: gql(EVENTS), variables: { sku } })
  .subscribe({ next: ({ data }) => events.apollo.next(data.commentEvents), error: (e) => events.apollo.fail(e) });
const urql = new UrqlClient({
  url,
  exchanges: [
    subscriptionExchange({
      forwardSubscription(request) {
        const input = { ...request, query: request.query || '' };
        return { subscribe: (sink) => ({ unsubscribe: urqlWs.subscribe(input, sink) }) };
      },
    }),
  ],
});
urql
  .subscription(EVENTS, { sku })
  .subscribe((r) => (r.error ? events.urql.fail(r.error) : events.urql.next(r.data.commentEvents)));
// The server subscribes its feed as it takes each message; leave it a moment.
await new Promise((resolve) => setTimeout(resolve, 500));
say('subscribed');

// `run` exits the process when the checks are done, closing the sockets.
await run(
  'direct-write',
  Object.entries(events).map(([name, event]) => [
    `${name} receives the comment written straight into the table`,
    async () => {
      const got = await event.promise;
      say(`received ${name} ${got.kind} ${got.edge?.node?.id} ${got.edge?.node?.body}`);
      assertEqual([got.kind, got.edge?.node?.body], ['ADDED', body], name);
    },
  ]),
  captured,
);
