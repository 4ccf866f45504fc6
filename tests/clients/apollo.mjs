// Apollo Client 3 (InMemoryCache with the type policies the README gives) against a running
// server. Proves that forward (first/after) and backward (last/before) pages fetched with
// fetchMore merge into exactly the list a plain walk gives, on Product.comments and on
// Query.comments, filtered and not; that a field error (totalCount with the index down) leaves
// the page usable with errorPolicy "all"; that addComment's commentEdge, inserted with the
// README's cache.modify, lands at the top of the cached connections; and that Apollo logs
// nothing (no "Missing field ... while writing result" or any other warning).
//
// Usage: node apollo.mjs <endpoint> <endpoint of a server whose index (Redis) is down>
// Both serve the demo data. Last line: "apollo: N checks passed, F failed, W warnings".
import { DOCUMENTS, captureConsole, plainWalk, assert, assertEqual, run } from './common.mjs';
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client/core/index.js';
import { relayStylePagination } from '@apollo/client/utilities/index.js';
import { loadDevMessages, loadErrorMessages } from '@apollo/client/dev/index.js';

const [url, downUrl] = process.argv.slice(2);
if (!url || !downUrl) {
  process.stderr.write('usage: node apollo.mjs <endpoint> <endpoint with the index down>\n');
  process.exit(2);
}
const captured = captureConsole();
loadDevMessages(); // Apollo's warnings in full, not as links to go.apollo.dev
loadErrorMessages();

const SKU = 'DAFT_PUNK_TSHIRT';
const PAGE = 10;

const PRODUCT_COMMENTS = gql(DOCUMENTS.productComments);
const COMMENTS = gql(DOCUMENTS.comments);
const ADD_COMMENT = gql(DOCUMENTS.addComment);

/** The cache as the README configures it. */
function newClient(uri) {
  return new ApolloClient({
    link: new HttpLink({ uri }),
    cache: new InMemoryCache({
      typePolicies: {
        Product: { fields: { comments: relayStylePagination(['ratings', 'orderBy']) } },
        Query: { fields: { comments: relayStylePagination(['sku', 'ratings', 'orderBy']) } },
      },
    }),
  });
}

/**
 * The README's `update` for addComment: puts `commentEdge` at the top of every cached
 * connection of the product (on Product and on Query) that is unfiltered, newest first, and
 * holds the top of the list. Other connections are left alone: the edge's cursor belongs to the
 * unfiltered newest-first one.
 */
function insertCommentEdge(cache, { data: { addComment } }) {
  const { comment, commentEdge } = addComment;
  const prepend = (existing, { storeFieldName, readField, toReference }) => {
    // The connection's key arguments: 'comments:{"sku":"A","ratings":[5]}'.
    const key = JSON.parse(storeFieldName.slice(storeFieldName.indexOf(':') + 1));
    const { sku = comment.product.sku, ratings, orderBy = 'NEWEST' } = key;
    if (sku !== comment.product.sku || ratings || orderBy !== 'NEWEST') return existing;
    if (existing.pageInfo?.hasPreviousPage) return existing;
    if (existing.edges.some((edge) => readField('id', edge.node) === comment.id)) return existing;
    const edge = { ...commentEdge, node: toReference(commentEdge.node) };
    const pageInfo = { ...existing.pageInfo, startCursor: edge.cursor };
    return { ...existing, edges: [edge, ...existing.edges], pageInfo };
  };
  cache.modify({ id: cache.identify(comment.product), fields: { comments: prepend } });
  cache.modify({ fields: { comments: prepend } }); // Query.comments, on ROOT_QUERY
}

const connectionOf = (data) => data.product?.comments ?? data.comments;
const idsOf = (connection) => connection.edges.map((edge) => edge.node.id);

/** Resolves with the first complete result of `observable` (and keeps it watched). */
function firstResult(observable) {
  return new Promise((resolve, reject) => {
    observable.subscribe({
      next: (result) => {
        if (!result.loading) resolve(result);
      },
      error: reject,
    });
  });
}

/**
 * Watches `query` with `variables`, then calls fetchMore with the next cursor until the list
 * ends: `forward` by `after: endCursor`, else by `before: startCursor`. The merged connection.
 */
async function fetchMoreWalk(client, query, variables, forward) {
  const observable = client.watchQuery({ query, variables, errorPolicy: 'all' });
  let connection = connectionOf((await firstResult(observable)).data);
  for (let pages = 1; forward ? connection.pageInfo.hasNextPage : connection.pageInfo.hasPreviousPage; pages++) {
    assert(pages < 100, 'the walk does not end');
    const next = forward ? { after: connection.pageInfo.endCursor } : { before: connection.pageInfo.startCursor };
    await observable.fetchMore({ variables: next });
    const previous = connection.pageInfo;
    connection = connectionOf(observable.getCurrentResult().data);
    const moved = forward
      ? connection.pageInfo.endCursor !== previous.endCursor
      : connection.pageInfo.startCursor !== previous.startCursor;
    assert(moved, `fetchMore(${JSON.stringify(next)}) left the merged list as it was (${idsOf(connection).length} edges)`);
  }
  return { observable, connection };
}

const client = newClient(url);

/**
 * A forward and a backward fetchMore walk (each on a fresh cache: with relayStylePagination
 * both directions of one filter share one cache entry, and a cached list answers either).
 */
async function walksMerge(query, ratings) {
  const expected = await plainWalk(url, SKU, ratings);
  assert(expected.length > 2 * PAGE, `the demo product has more than ${2 * PAGE} comments`);
  const forward = await fetchMoreWalk(newClient(url), query, { sku: SKU, ratings, first: PAGE }, true);
  assertEqual(idsOf(forward.connection), expected, 'forward pages merged');
  assertEqual(forward.connection.pageInfo.hasPreviousPage, false, 'forward: hasPreviousPage');
  const backward = await fetchMoreWalk(newClient(url), query, { sku: SKU, ratings, last: PAGE }, false);
  assertEqual(idsOf(backward.connection), expected, 'backward pages merged');
  assertEqual(backward.connection.pageInfo.hasNextPage, false, 'backward: hasNextPage');
}

await run(
  'apollo',
  [
    ['forward and backward fetchMore pages on Product.comments merge into the plain walk', () =>
      walksMerge(PRODUCT_COMMENTS, undefined)],
    ['forward and backward fetchMore pages on Query.comments merge into the plain walk', () =>
      walksMerge(COMMENTS, undefined)],
    ['a filtered walk (ratings [4, 5]) merges into its own cache entry; [5, 4] would be another', async () => {
      await walksMerge(PRODUCT_COMMENTS, [4, 5]);
      const all = await fetchMoreWalk(client, PRODUCT_COMMENTS, { sku: SKU, first: PAGE }, true);
      const filtered = await fetchMoreWalk(client, PRODUCT_COMMENTS, { sku: SKU, ratings: [4, 5], first: PAGE }, true);
      assertEqual(idsOf(filtered.connection), await plainWalk(url, SKU, [4, 5]), 'the filtered entry');
      assertEqual(idsOf(connectionOf(all.observable.getCurrentResult().data)), await plainWalk(url, SKU), 'the unfiltered entry');
      // The server takes [5, 4] as the same filter; the cache keys it as given.
      const unsorted = client.readQuery({ query: PRODUCT_COMMENTS, variables: { sku: SKU, ratings: [5, 4], first: PAGE } });
      assertEqual(unsorted, null, 'the cache entry of ratings [5, 4]');
    }],
    ['walks in other orders (orderBy) merge into entries of their own in one cache', async () => {
      const shared = newClient(url);
      for (const orderBy of ['HIGHEST_RATED', 'OLDEST', 'LOWEST_RATED']) {
        const expected = await plainWalk(url, SKU, [2, 5], orderBy);
        const walked = await fetchMoreWalk(shared, PRODUCT_COMMENTS, { sku: SKU, ratings: [2, 5], orderBy, first: PAGE }, true);
        assertEqual(idsOf(walked.connection), expected, `the ${orderBy} entry`);
      }
      const newest = await fetchMoreWalk(shared, COMMENTS, { sku: SKU, ratings: [2, 5], first: PAGE }, true);
      assertEqual(idsOf(newest.connection), await plainWalk(url, SKU, [2, 5]), 'the newest-first entry');
      const highest = shared.readQuery({ query: PRODUCT_COMMENTS, variables: { sku: SKU, ratings: [2, 5], orderBy: 'HIGHEST_RATED', first: PAGE } });
      const ratings = highest.product.comments.edges.map((edge) => edge.node.rating);
      assertEqual(ratings, [...ratings].sort((a, b) => b - a), 'the cached HIGHEST_RATED list, highest first');
    }],
    ['with the index down, errorPolicy "all" gives the page with totalCount null and the error', async () => {
      const down = newClient(downUrl);
      const result = await down.query({
        query: PRODUCT_COMMENTS,
        variables: { sku: SKU, first: PAGE },
        errorPolicy: 'all',
      });
      const connection = result.data?.product?.comments;
      assert(connection, `the page is there: ${JSON.stringify(result)}`);
      assertEqual(idsOf(connection), (await plainWalk(downUrl, SKU)).slice(0, PAGE), 'the edges');
      assertEqual(connection.totalCount, null, 'totalCount (null, not missing)');
      const errors = result.errors ?? result.error?.graphQLErrors ?? [];
      assertEqual(
        errors.map((e) => [e.extensions?.code, e.path]),
        [['INDEX_UNAVAILABLE', ['product', 'comments', 'totalCount']]],
        'the errors reported'
      );
      const walked = await fetchMoreWalk(down, PRODUCT_COMMENTS, { sku: SKU, first: PAGE }, true);
      assertEqual(idsOf(walked.connection), await plainWalk(downUrl, SKU), 'fetchMore pages merged');
    }],
    ["addComment's commentEdge lands at the top of the cached connections, and paging goes on", async () => {
      const sku = 'VINYL_RAM';
      const product = client.watchQuery({ query: PRODUCT_COMMENTS, variables: { sku, first: 5 } });
      const root = client.watchQuery({ query: COMMENTS, variables: { sku, first: 5 } });
      const filtered = client.watchQuery({ query: PRODUCT_COMMENTS, variables: { sku, ratings: [1], first: 5 } });
      const before = idsOf(connectionOf((await firstResult(product)).data));
      await firstResult(root);
      const filteredBefore = idsOf(connectionOf((await firstResult(filtered)).data));

      const { data } = await client.mutate({
        mutation: ADD_COMMENT,
        variables: { input: { sku, author: 'apollo', body: 'through the cache', rating: 1 } },
        update: insertCommentEdge,
      });
      const id = data.addComment.comment.id;
      for (const watched of [product, root]) {
        assertEqual(idsOf(connectionOf(watched.getCurrentResult().data)), [id, ...before], 'the cached connection');
      }
      assertEqual(idsOf(connectionOf(filtered.getCurrentResult().data)), filteredBefore, 'the filtered connection');
      // The edge's cursor is a real one: paging backwards from the top finds nothing newer.
      const top = await client.query({
        query: PRODUCT_COMMENTS,
        variables: { sku, last: 5, before: data.addComment.commentEdge.cursor },
        fetchPolicy: 'no-cache',
      });
      assertEqual(idsOf(top.data.product.comments), [], 'comments before the new one');
      await product.fetchMore({ variables: { after: connectionOf(product.getCurrentResult().data).pageInfo.endCursor } });
      const expected = await plainWalk(url, sku);
      assertEqual(idsOf(connectionOf(product.getCurrentResult().data)), expected.slice(0, 11), 'after fetchMore');
    }],
  ],
  captured
);
