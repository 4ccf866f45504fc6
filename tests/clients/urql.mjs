// urql with Graphcache (relayPagination() on Product.comments and Query.comments, the schema
// from schema.graphql, as the README gives) against a running server. Proves that forward
// (first/after) and backward (last/before) pages merge into exactly the list a plain walk
// gives, filtered and not; how relayPagination treats pages with neither first nor last; that
// a field error (totalCount with the index down) leaves the page usable; that addComment's
// commentEdge, inserted with the README's update, lands at the top of the cached connections;
// and that Graphcache logs nothing (no "Invalid undefined: The field at ..." or any other
// warning).
//
// Usage: node urql.mjs <endpoint> <endpoint of a server whose index (Redis) is down>
// Both serve the demo data. Last line: "urql: N checks passed, F failed, W warnings".
import { readFileSync } from 'node:fs';
import { DOCUMENTS, captureConsole, plainWalk, assert, assertEqual, run } from './common.mjs';
import { Client, fetchExchange, gql } from '@urql/core';
import { cacheExchange } from '@urql/exchange-graphcache';
import { relayPagination } from '@urql/exchange-graphcache/extras';
import { buildSchema, introspectionFromSchema } from 'graphql';

const [url, downUrl] = process.argv.slice(2);
if (!url || !downUrl) {
  process.stderr.write('usage: node urql.mjs <endpoint> <endpoint with the index down>\n');
  process.exit(2);
}
const captured = captureConsole();

const SKU = 'DAFT_PUNK_TSHIRT';
const PAGE = 10;
const schema = introspectionFromSchema(
  buildSchema(readFileSync(new URL('../../schema.graphql', import.meta.url), 'utf8'))
);

const PRODUCT_COMMENTS = gql(DOCUMENTS.productComments);
const COMMENTS = gql(DOCUMENTS.comments);
const ADD_COMMENT = gql(DOCUMENTS.addComment);

const connectionOf = (data) => data.product?.comments ?? data.comments;
const idsOf = (connection) => connection.edges.map((edge) => edge.node.id);

/**
 * The README's update for addComment: puts `commentEdge` at the top of the cached first pages
 * of the product's unfiltered lists (on Product and on Query) that hold the top of the list.
 * Filtered lists are left alone: the edge's cursor belongs to the unfiltered one.
 */
function insertCommentEdge(result, _args, cache) {
  const { comment, commentEdge } = result.addComment;
  const { sku } = comment.product;
  const prepend = (data) => {
    const list = data && (data.product?.comments ?? data.comments);
    if (!list || list.pageInfo.hasPreviousPage) return data;
    if (list.edges.some((edge) => edge.node.id === comment.id)) return data;
    list.edges.unshift(commentEdge);
    list.pageInfo.startCursor = commentEdge.cursor;
    return data;
  };
  const firstPages = (entity) =>
    cache.inspectFields(entity).filter(({ fieldName, arguments: a }) =>
      fieldName === 'comments' && a && !a.ratings && !a.after && !a.before && (a.sku ?? sku) === sku);
  for (const { arguments: a } of firstPages(cache.keyOfEntity(comment.product))) {
    cache.updateQuery({ query: PRODUCT_COMMENTS, variables: { ...a, sku } }, prepend);
  }
  for (const { arguments: a } of firstPages('Query')) {
    cache.updateQuery({ query: COMMENTS, variables: a }, prepend);
  }
}

/** The cache as the README configures it. */
function newClient(endpoint) {
  return new Client({
    url: endpoint,
    exchanges: [
      cacheExchange({
        schema,
        resolvers: {
          Product: { comments: relayPagination() },
          Query: { comments: relayPagination() },
        },
        updates: { Mutation: { addComment: insertCommentEdge } },
      }),
      fetchExchange,
    ],
  });
}

/** Queries and throws on a network error; the result, with `error` for GraphQL errors. */
async function query(client, document, variables) {
  const result = await client.query(document, variables).toPromise();
  if (result.error?.networkError) throw result.error.networkError;
  return result;
}

/**
 * Queries `variables`, then the next page until the list ends: `forward` by
 * `after: endCursor`, else by `before: startCursor`. The merged connection, and the first
 * page's query read back from the cache.
 */
async function walk(client, document, variables, forward) {
  let connection = connectionOf((await query(client, document, variables)).data);
  for (let pages = 1; forward ? connection.pageInfo.hasNextPage : connection.pageInfo.hasPreviousPage; pages++) {
    assert(pages < 100, 'the walk does not end');
    const next = forward ? { after: connection.pageInfo.endCursor } : { before: connection.pageInfo.startCursor };
    const previous = connection.pageInfo;
    connection = connectionOf((await query(client, document, { ...variables, ...next })).data);
    const moved = forward
      ? connection.pageInfo.endCursor !== previous.endCursor
      : connection.pageInfo.startCursor !== previous.startCursor;
    assert(moved, `the page ${JSON.stringify(next)} left the merged list as it was (${idsOf(connection).length} edges)`);
  }
  const cached = client.readQuery(document, variables);
  return { connection, cached: cached && connectionOf(cached.data) };
}

/** A forward and a backward walk, each on a fresh cache, compared with the plain walk. */
async function walksMerge(document, ratings) {
  const expected = await plainWalk(url, SKU, ratings);
  assert(expected.length > 2 * PAGE, `the demo product has more than ${2 * PAGE} comments`);
  const forward = await walk(newClient(url), document, { sku: SKU, ratings, first: PAGE }, true);
  assertEqual(idsOf(forward.connection), expected, 'forward pages merged');
  assertEqual(idsOf(forward.cached), expected, 'the first page read back from the cache');
  assertEqual(forward.connection.pageInfo.hasPreviousPage, false, 'forward: hasPreviousPage');
  const backward = await walk(newClient(url), document, { sku: SKU, ratings, last: PAGE }, false);
  assertEqual(idsOf(backward.connection), expected, 'backward pages merged');
  assertEqual(backward.connection.pageInfo.hasNextPage, false, 'backward: hasNextPage');
}

const client = newClient(url);

await run(
  'urql',
  [
    ['forward and backward pages on Product.comments merge into the plain walk', () =>
      walksMerge(PRODUCT_COMMENTS, undefined)],
    ['forward and backward pages on Query.comments merge into the plain walk', () =>
      walksMerge(COMMENTS, undefined)],
    ['a filtered walk (ratings [4, 5]) merges into its own cache entry; [5, 4] would be another', async () => {
      await walksMerge(PRODUCT_COMMENTS, [4, 5]);
      const all = await walk(client, PRODUCT_COMMENTS, { sku: SKU, first: PAGE }, true);
      const filtered = await walk(client, PRODUCT_COMMENTS, { sku: SKU, ratings: [4, 5], first: PAGE }, true);
      assertEqual(idsOf(filtered.connection), await plainWalk(url, SKU, [4, 5]), 'the filtered entry');
      assertEqual(idsOf(all.connection), await plainWalk(url, SKU), 'the unfiltered entry');
      // The server takes [5, 4] as the same filter; the cache keys it as given.
      const unsorted = client.readQuery(PRODUCT_COMMENTS, { sku: SKU, ratings: [5, 4], first: PAGE });
      assertEqual(unsorted, null, 'the cache entry of ratings [5, 4]');
    }],
    ['without first or last, Query.comments pages are forward pages; Product.comments gets no data', async () => {
      const fresh = newClient(url);
      const expected = await plainWalk(url, SKU);
      const top = connectionOf((await query(fresh, COMMENTS, { sku: SKU })).data);
      assertEqual(idsOf(top), expected.slice(0, 20), 'the first page (the server default, 20)');
      const walked = await walk(fresh, COMMENTS, { sku: SKU }, true);
      assertEqual(idsOf(walked.connection), expected, 'after pages without first, merged');
      // relayPagination skips cached fields that have no arguments at all, so
      // `product { comments { ... } }` never reads back: no data, and no error either.
      const bare = await query(fresh, PRODUCT_COMMENTS, { sku: SKU });
      assertEqual({ data: bare.data, error: bare.error?.message ?? null }, { data: null, error: null }, 'Product.comments without arguments');
    }],
    ['with the index down, the page comes with totalCount null and the error', async () => {
      const down = newClient(downUrl);
      const result = await query(down, PRODUCT_COMMENTS, { sku: SKU, first: PAGE });
      const connection = result.data?.product?.comments;
      assert(connection, `the page is there: ${JSON.stringify({ data: result.data, error: result.error?.message })}`);
      assertEqual(idsOf(connection), (await plainWalk(downUrl, SKU)).slice(0, PAGE), 'the edges');
      assertEqual(connection.totalCount, null, 'totalCount (null, not missing)');
      assertEqual(
        (result.error?.graphQLErrors ?? []).map((e) => [e.extensions?.code, e.path]),
        [['INDEX_UNAVAILABLE', ['product', 'comments', 'totalCount']]],
        'the errors reported'
      );
      const walked = await walk(down, PRODUCT_COMMENTS, { sku: SKU, first: PAGE }, true);
      assertEqual(idsOf(walked.connection), await plainWalk(downUrl, SKU), 'pages merged');
    }],
    ["addComment's commentEdge lands at the top of the cached connections, and paging goes on", async () => {
      const sku = 'VINYL_RAM';
      const before = idsOf(connectionOf((await query(client, PRODUCT_COMMENTS, { sku, first: 5 })).data));
      await query(client, COMMENTS, { sku, first: 5 });
      const filteredBefore = idsOf(connectionOf((await query(client, PRODUCT_COMMENTS, { sku, ratings: [1], first: 5 })).data));

      const added = await client
        .mutation(ADD_COMMENT, { input: { sku, author: 'urql', body: 'through the cache', rating: 1 } })
        .toPromise();
      assert(!added.error, `addComment: ${added.error}`);
      const id = added.data.addComment.comment.id;
      for (const document of [PRODUCT_COMMENTS, COMMENTS]) {
        const cached = client.readQuery(document, { sku, first: 5 });
        assertEqual(idsOf(connectionOf(cached.data)), [id, ...before], 'the cached connection');
      }
      const filtered = client.readQuery(PRODUCT_COMMENTS, { sku, ratings: [1], first: 5 });
      assertEqual(idsOf(connectionOf(filtered.data)), filteredBefore, 'the filtered connection');
      const end = connectionOf(client.readQuery(PRODUCT_COMMENTS, { sku, first: 5 }).data).pageInfo.endCursor;
      const next = await query(client, PRODUCT_COMMENTS, { sku, first: 5, after: end });
      const expected = await plainWalk(url, sku);
      assertEqual(idsOf(connectionOf(next.data)), expected.slice(0, 11), 'after the next page');
    }],
  ],
  captured
);
