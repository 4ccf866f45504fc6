// Shared by the client-library checks (apollo.mjs, urql.mjs): raw GraphQL over fetch, a plain
// walk of a connection to compare cached pages with, a console that records what libraries log,
// and a runner that prints one line per check and a summary line.
import { format } from 'node:util';

// The documents both client checks send, as text (each library parses them with its own `gql`).
const COMMENT_FIELDS = `
  fragment CommentFields on Comment {
    id
    author
    body
    rating
    createdAt
  }
`;
const CONNECTION_FIELDS = `
  fragment ConnectionFields on CommentConnection {
    totalCount
    edges { cursor node { ...CommentFields } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
  ${COMMENT_FIELDS}
`;
export const DOCUMENTS = {
  productComments: `
    query ProductComments($sku: String!, $ratings: [Int!], $orderBy: CommentOrder, $first: Int, $after: String, $last: Int, $before: String) {
      product(sku: $sku) {
        id
        comments(ratings: $ratings, orderBy: $orderBy, first: $first, after: $after, last: $last, before: $before) {
          ...ConnectionFields
        }
      }
    }
    ${CONNECTION_FIELDS}
  `,
  comments: `
    query Comments($sku: String!, $ratings: [Int!], $orderBy: CommentOrder, $first: Int, $after: String, $last: Int, $before: String) {
      comments(sku: $sku, ratings: $ratings, orderBy: $orderBy, first: $first, after: $after, last: $last, before: $before) {
        ...ConnectionFields
      }
    }
    ${CONNECTION_FIELDS}
  `,
  addComment: `
    mutation AddComment($input: AddCommentInput!) {
      addComment(input: $input) {
        comment { id product { id sku } }
        commentEdge { cursor node { ...CommentFields } }
      }
    }
    ${COMMENT_FIELDS}
  `,
};

/** POSTs a GraphQL request with plain fetch; the whole JSON response. */
export async function post(url, query, variables = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  return response.json();
}

/**
 * The ids of a connection, newest first, walked with `first/after` pages of 100 over plain
 * fetch (no client library). `ratings` filters as the API does.
 */
export async function plainWalk(url, sku, ratings, orderBy) {
  const query = `query($sku: String!, $ratings: [Int!], $orderBy: CommentOrder, $after: String) {
    comments(sku: $sku, ratings: $ratings, orderBy: $orderBy, first: 100, after: $after) {
      edges { node { id } } pageInfo { hasNextPage endCursor } } }`;
  const ids = [];
  let after = null;
  for (;;) {
    const body = await post(url, query, { sku, ratings, orderBy, after });
    if (body.errors) throw new Error(`plain walk failed: ${JSON.stringify(body.errors)}`);
    const { edges, pageInfo } = body.data.comments;
    ids.push(...edges.map((edge) => edge.node.id));
    if (!pageInfo.hasNextPage) return ids;
    after = pageInfo.endCursor;
  }
}

/** A check's failure: printed as its message only (anything else thrown with its stack). */
class CheckFailure extends Error {}

/** Fails the check with both values when `actual` and `expected` differ (compared as JSON). */
export function assertEqual(actual, expected, what) {
  const a = JSON.stringify(actual);
  const b = JSON.stringify(expected);
  if (a !== b) throw new CheckFailure(`${what}:\n    got      ${a}\n    expected ${b}`);
}

export function assert(condition, what) {
  if (!condition) throw new CheckFailure(what);
}

/** Anything written to stdout by the checks themselves (the console is captured). */
export function say(line) {
  process.stdout.write(`${line}\n`);
}

/**
 * Replaces console.{debug,log,info,warn,error} so that every message a library logs is kept
 * (with the check that was running) instead of printed; a check suite fails on any.
 */
export function captureConsole() {
  const logged = [];
  const state = { check: '(setup)' };
  for (const level of ['debug', 'log', 'info', 'warn', 'error']) {
    console[level] = (...args) => {
      // Apollo logs printf-style ('Missing field %s ...', name, result); results can be long.
      const text = format(...args).replace(/\s+/g, ' ');
      logged.push({ level, check: state.check, text: text.length > 500 ? `${text.slice(0, 500)}...` : text });
    };
  }
  return { logged, state };
}

/**
 * Runs `checks` ([name, async fn] pairs) in order, each to the end even when one fails; prints
 * `ok - name` or `FAIL - name: why`, then every distinct captured log message, then
 * `<label>: P checks passed, F failed, W warnings`. Exits 1 on any failure or message.
 */
export async function run(label, checks, captured) {
  let passed = 0;
  let failed = 0;
  for (const [name, check] of checks) {
    captured.state.check = name;
    try {
      await check();
      passed += 1;
      say(`ok - ${name}`);
    } catch (error) {
      failed += 1;
      say(`FAIL - ${name}: ${error instanceof CheckFailure ? error.message : error?.stack ?? error}`);
    }
  }
  captured.state.check = '(teardown)';
  const distinct = new Map();
  for (const { level, check, text } of captured.logged) {
    const line = `(console.${level} during "${check}"): ${text}`;
    distinct.set(line, (distinct.get(line) ?? 0) + 1);
  }
  for (const [line, times] of distinct) say(`warning ${times > 1 ? `x${times} ` : ''}${line}`);
  const warnings = captured.logged.length;
  say(`${label}: ${passed} checks passed, ${failed} failed, ${warnings} warnings`);
  process.exit(failed === 0 && warnings === 0 ? 0 : 1);
}
