// Subscriptions from Node with the clients the README's set-up names, against a running server:
// the `graphql-ws` client itself, Apollo Client's GraphQLWsLink and urql's subscriptionExchange
// over it. Each subscribes to commentEvents on a product of its own, then adds, edits and
// deletes a comment over HTTP and must receive ADDED, UPDATED and DELETED, in order, each
// within a second, with nothing logged.
//
// Usage: node subscriptions.mjs <endpoint>   (http://host:port/graphql)
// Last line: "subscriptions: N checks passed, F failed, W warnings".
import { captureConsole, post, assert, assertEqual, run } from './common.mjs';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { ApolloClient, InMemoryCache, gql } from '@apollo/client/core/index.js';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions/index.js';
import { Client as UrqlClient, subscriptionExchange } from '@urql/core';

const [url] = process.argv.slice(2);
if (!url) {
  process.stderr.write('usage: node subscriptions.mjs <endpoint>\n');
  process.exit(2);
}
const captured = captureConsole();
const wsUrl = url.replace(/^http/, 'ws');

const EVENTS = `
  subscription Events($sku: String!) {
    commentEvents(sku: $sku) {
      kind
      totalCount
      deletedCommentId
      edge { cursor node { id body rating } }
    }
  }
`;

// Collects events from a subscription started by `start(onEvent)`; `next()` waits for one.
function collector() {
  const queue = [];
  const waiting = [];
  return {
    push(event) {
      const resolve = waiting.shift();
      if (resolve) resolve(event);
      else queue.push(event);
    },
    next() {
      if (queue.length) return Promise.resolve(queue.shift());
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no event within 1 s')), 1_000);
        waiting.push((event) => {
          clearTimeout(timer);
          resolve(event);
        });
      });
    },
  };
}

// Writes a comment, edits it and deletes it over HTTP, and checks what `events` receives.
async function addEditDelete(sku, events) {
  const added = await post(url, `mutation($sku: String!) { addComment(input: { sku: $sku, author: "node", body: "from node", rating: 5 }) { comment { id } } }`, { sku });
  const id = added.data.addComment.comment.id;
  const first = await events.next();
  const { id: addedId, body, rating } = first.edge.node; // Apollo adds __typename
  assertEqual([first.kind, addedId, body, rating, first.totalCount], ['ADDED', id, 'from node', 5, 1], 'ADDED');
  await post(url, `mutation($id: ID!) { updateComment(input: { id: $id, body: "edited" }) { comment { id } } }`, { id });
  const second = await events.next();
  assertEqual([second.kind, second.edge.node.body], ['UPDATED', 'edited'], 'UPDATED');
  await post(url, `mutation($id: ID!) { deleteComment(input: { id: $id }) { deletedCommentId } }`, { id });
  const third = await events.next();
  assertEqual([third.kind, third.deletedCommentId, third.totalCount], ['DELETED', id, 0], 'DELETED');
}

// Resolves once the server has acknowledged the connection and the subscription is running:
// a subscription set up after `connected` and a short pause is live.
function wsClient() {
  let connected;
  const ready = new Promise((resolve) => (connected = resolve));
  const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, lazy: false, on: { connected } });
  return { client, ready };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

await run('subscriptions', [
  ['graphql-ws receives ADDED, UPDATED and DELETED', async () => {
    const { client, ready } = wsClient();
    await ready;
    const events = collector();
    const errors = [];
    const stop = client.subscribe(
      { query: EVENTS, variables: { sku: 'NODE_WS' } },
      { next: (result) => (result.errors ? errors.push(result.errors) : events.push(result.data.commentEvents)), error: (e) => errors.push(e), complete: () => {} },
    );
    await settle();
    await addEditDelete('NODE_WS', events);
    stop();
    await client.dispose();
    assertEqual(errors, [], 'no errors');
  }],
  ['Apollo Client over GraphQLWsLink', async () => {
    const { client: ws, ready } = wsClient();
    await ready;
    const apollo = new ApolloClient({ link: new GraphQLWsLink(ws), cache: new InMemoryCache() });
    const events = collector();
    const errors = [];
    const subscription = apollo
      .subscribe({ query: gql(EVENTS), variables: { sku: 'NODE_APOLLO' } })
      .subscribe({ next: ({ data }) => events.push(data.commentEvents), error: (e) => errors.push(e) });
    await settle();
    await addEditDelete('NODE_APOLLO', events);
    subscription.unsubscribe();
    await ws.dispose();
    assertEqual(errors, [], 'no errors');
  }],
  ['urql over subscriptionExchange', async () => {
    const { client: ws, ready } = wsClient();
    await ready;
    const urql = new UrqlClient({
      url,
      exchanges: [
        subscriptionExchange({
          forwardSubscription(request) {
            const input = { ...request, query: request.query || '' };
            return { subscribe: (sink) => ({ unsubscribe: ws.subscribe(input, sink) }) };
          },
        }),
      ],
    });
    const events = collector();
    const errors = [];
    const { unsubscribe } = urql
      .subscription(EVENTS, { sku: 'NODE_URQL' })
      .subscribe((result) => (result.error ? errors.push(result.error) : events.push(result.data.commentEvents)));
    await settle();
    await addEditDelete('NODE_URQL', events);
    unsubscribe();
    await ws.dispose();
    assert(errors.length === 0, `no errors: ${errors}`);
  }],
], captured);
