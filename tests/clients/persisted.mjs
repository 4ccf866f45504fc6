// Automatic persisted queries from the two client libraries, as their docs configure them:
// Apollo Client 3 with createPersistedQueryLink (useGETForHashedQueries) and urql with
// persistedExchange (GET for persisted queries). Each pages through a product with a cache that
// merges pages, and must get exactly the list a plain walk gets, logging nothing. Every request
// is recorded (a wrapped fetch), to prove the protocol ran: the first request of a document is a
// GET with its hash and no text, answered PersistedQueryNotFound; the client then sends the
// text once (Apollo by POST, urql by GET); every later page is a GET with the hash only, answered with data.
//
// Usage: node persisted.mjs <endpoint>   (a server with the demo data)
// Last line: "persisted: N checks passed, F failed, W warnings".
import { createHash } from 'node:crypto';
import { DOCUMENTS, captureConsole, plainWalk, assert, assertEqual, run } from './common.mjs';
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client/core/index.js';
import { createPersistedQueryLink } from '@apollo/client/link/persisted-queries/index.js';
import { relayStylePagination } from '@apollo/client/utilities/index.js';
import { loadDevMessages, loadErrorMessages } from '@apollo/client/dev/index.js';
import { Client, fetchExchange, gql as urqlGql } from '@urql/core';
import { cacheExchange } from '@urql/exchange-graphcache';
import { relayPagination } from '@urql/exchange-graphcache/extras';
import { persistedExchange } from '@urql/exchange-persisted';

const [url] = process.argv.slice(2);
if (!url) {
  process.stderr.write('usage: node persisted.mjs <endpoint>\n');
  process.exit(2);
}
loadDevMessages();
loadErrorMessages();
const captured = captureConsole();

const SKU = 'DAFT_PUNK_TSHIRT';
const PAGE = 10;
const sha256 = (text) => createHash('sha256').update(text).digest('hex');

/** A fetch that records each request: method, whether it sent a text, a hash, and the answer. */
function recordingFetch(log) {
  return async (input, init = {}) => {
    const target = new URL(typeof input === 'string' ? input : input.url);
    const method = (init.method ?? 'GET').toUpperCase();
    const body = method === 'POST' ? JSON.parse(init.body) : null;
    const extensions = body ? body.extensions : JSON.parse(target.searchParams.get('extensions') ?? 'null');
    const response = await fetch(input, init);
    const answer = await response.clone().json();
    log.push({
      method,
      text: Boolean(body ? body.query : target.searchParams.get('query')),
      hash: extensions?.persistedQuery?.sha256Hash ?? null,
      status: response.status,
      code: answer.errors?.[0]?.extensions?.code ?? null,
      data: Boolean(answer.data),
    });
    return response;
  };
}

/** The protocol as the log shows it: one miss, one text, then hash-only GETs with data. */
function assertProtocol(log, pages, retryMethod) {
  assert(log.length === pages + 1, `${pages} pages took ${log.length} requests: ${JSON.stringify(log)}`);
  const [miss, sent, ...rest] = log;
  assertEqual(miss, { method: 'GET', text: false, hash: miss.hash, status: 200, code: 'PERSISTED_QUERY_NOT_FOUND', data: false }, 'the first request');
  assert(/^[0-9a-f]{64}$/.test(miss.hash ?? ''), 'the first request carries a SHA-256');
  assertEqual(sent, { method: retryMethod, text: true, hash: miss.hash, status: 200, code: null, data: true }, 'the retry with the text');
  for (const request of rest) {
    assertEqual(request, { method: 'GET', text: false, hash: miss.hash, status: 200, code: null, data: true }, 'a later page');
  }
}

async function apolloWalk(expected) {
  const log = [];
  const client = new ApolloClient({
    link: createPersistedQueryLink({ sha256, useGETForHashedQueries: true }).concat(
      new HttpLink({ uri: url, fetch: recordingFetch(log) })
    ),
    cache: new InMemoryCache({
      typePolicies: { Product: { fields: { comments: relayStylePagination(['ratings']) } } },
    }),
  });
  const query = gql(DOCUMENTS.productComments);
  let result = await client.query({ query, variables: { sku: SKU, first: PAGE } });
  let pages = 1;
  while (result.data.product.comments.pageInfo.hasNextPage) {
    const after = result.data.product.comments.pageInfo.endCursor;
    // network-only: relayStylePagination keys the field without `after`, so a cache-first
    // read would answer from the merged list.
    await client.query({ query, variables: { sku: SKU, first: PAGE, after }, fetchPolicy: 'network-only' });
    result = await client.query({ query, variables: { sku: SKU, first: PAGE }, fetchPolicy: 'cache-only' });
    pages += 1;
  }
  assertEqual(result.data.product.comments.edges.map((e) => e.node.id), expected, 'the merged list');
  // Apollo sends the text by POST (its issue #7456: texts may be long).
  assertProtocol(log, pages, 'POST');
}

async function urqlWalk(expected) {
  const log = [];
  const client = new Client({
    url,
    fetch: recordingFetch(log),
    exchanges: [
      cacheExchange({ resolvers: { Product: { comments: relayPagination() } } }),
      persistedExchange({ preferGetForPersistedQueries: true }),
      fetchExchange,
    ],
  });
  const query = urqlGql(DOCUMENTS.productComments);
  let after = null;
  let pages = 0;
  let list;
  for (;;) {
    const result = await client.query(query, { sku: SKU, first: PAGE, after }).toPromise();
    assert(!result.error, `page ${pages + 1}: ${result.error}`);
    pages += 1;
    list = result.data.product.comments;
    if (!list.pageInfo.hasNextPage) break;
    after = list.pageInfo.endCursor;
  }
  assertEqual(list.edges.map((e) => e.node.id), expected, 'the merged list');
  // urql keeps GET for the text while the URL stays short.
  assertProtocol(log, pages, 'GET');
}

const expected = await plainWalk(url, SKU);
await run(
  'persisted',
  [
    ['the walk has several pages', async () => assert(expected.length > 2 * PAGE, `${expected.length} comments`)],
    ['Apollo Client pages through a product with automatic persisted queries over GET', () => apolloWalk(expected)],
    ['urql pages through a product with its persisted exchange over GET', () => urqlWalk(expected)],
  ],
  captured
);
