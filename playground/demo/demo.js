// The storefront demo (/demo): one product's comments as a shop shows them, drawn from this
// server's /graphql with one query per page view. Copy it: no framework, no build step.
//
// Everything the page shows is in its URL, so every view is a plain link (crawlable, shareable):
//   ?sku=…        the product (default: DAFT_PUNK_TSHIRT, the demo product the server seeds)
//   &page=…       the page number, from 1 (default 1)
//   &numbering=…  `newest` (page 1 holds the newest comments; the default) or `oldest`
//   &ratings=…    only these ratings, e.g. `4,5` (default: all)
//   &size=…       comments per page, 1 to 100 (default 10)
//   &comment=…    a comment's id: opens the page that holds it, highlighted (a permalink)
//
// How it goes: readView(location) → variablesFor(view) → graphql(QUERY, variables) →
// render(view, product). Pager links, rating checkboxes and permalinks just navigate to
// another view's URL. To show new comments live, call load() again (or patch the list with
// renderComments) when a poll or subscription says there are some. It subscribes to the
// product's comment events (startLive, below): new comments are counted in a banner, edits and
// deletions of comments on the page show in place.
//
// Tests read the page through data-* attributes: <main data-state> is "loading", "ready" or
// "error"; each comment is <li data-comment-id>, the permalinked one also data-highlighted;
// pager links have data-page-link (first, previous, page, next, last).

const DEFAULT_SKU = 'DAFT_PUNK_TSHIRT';
const DEFAULT_SIZE = 10;
const MAX_SIZE = 100; // the server's --max-page-size (100 unless configured)
const RATINGS = [5, 4, 3, 2, 1];
const NUMBERING = { newest: 'FROM_NEWEST', oldest: 'FROM_OLDEST' };

// Page p of size n is `first: n, offset: (p - 1) * n` from the newest, `last: n, offset:` from
// the oldest; a permalink asks for the page `containing` the comment. pageCursors gives the
// pager: the first, previous, next and last pages, the pages around this one, and the count.
const QUERY = `
query StorefrontComments(
  $sku: String!, $ratings: [Int!], $first: Int, $last: Int, $offset: Int,
  $containing: ID, $numbering: PageNumbering
) {
  product(sku: $sku) {
    sku
    ratingSummary { total average counts { rating count } }
    comments(
      ratings: $ratings, first: $first, last: $last, offset: $offset,
      containing: $containing, numbering: $numbering
    ) {
      totalCount
      startOffset
      nodes { id author body rating createdAt updatedAt }
      pageCursors(numbering: $numbering) {
        first { page isCurrent }
        previous { page }
        around { page isCurrent }
        next { page }
        last { page isCurrent }
        pageCount
      }
    }
  }
}`;

const $ = (id) => document.getElementById(id);
const numberFormat = new Intl.NumberFormat();
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

// An element with attributes (skipping null ones) and children (strings become text, never HTML).
function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== null && value !== undefined && value !== false) {
      element.setAttribute(name, value === true ? '' : String(value));
    }
  }
  element.append(...children.filter((child) => child !== null && child !== undefined));
  return element;
}

// ---- The view: what the URL asks for ----------------------------------------------------------

class BadLink extends Error {}

// The view a query string asks for; throws BadLink when a parameter makes no sense.
function readView(search) {
  const params = new URLSearchParams(search);
  const view = {
    sku: params.get('sku') || DEFAULT_SKU,
    page: 1,
    numbering: 'newest',
    ratings: [],
    size: DEFAULT_SIZE,
    comment: params.get('comment') || null,
  };
  if (params.has('page')) {
    view.page = wholeNumber(params.get('page'), 1, Infinity, 'page number');
  }
  if (params.has('numbering')) {
    view.numbering = params.get('numbering');
    if (!(view.numbering in NUMBERING)) {
      throw new BadLink(`“${view.numbering}” is not a numbering: use “newest” or “oldest”.`);
    }
  }
  if (params.has('size')) {
    view.size = wholeNumber(params.get('size'), 1, MAX_SIZE, 'page size');
  }
  const ratings = params.getAll('ratings').flatMap((value) => value.split(',')).filter(Boolean);
  view.ratings = [...new Set(ratings.map((value) => wholeNumber(value, 1, 5, 'rating')))].sort((a, b) => a - b);
  return view;
}

function wholeNumber(text, min, max, what) {
  const number = /^\d{1,9}$/.test(text) ? Number(text) : NaN;
  if (!(number >= min && number <= max)) {
    const range = max === Infinity ? `${min} or more` : `${min} to ${max}`;
    throw new BadLink(`“${text}” is not a ${what}: use a whole number, ${range}.`);
  }
  return number;
}

// The URL of a view, relative to this page; defaults are left out, so each view has one URL.
function viewUrl({ sku, page = 1, numbering = 'newest', ratings = [], size = DEFAULT_SIZE, comment = null }) {
  const params = new URLSearchParams({ sku });
  if (page !== 1) params.set('page', page);
  if (numbering !== 'newest') params.set('numbering', numbering);
  if (ratings.length > 0) params.set('ratings', ratings.join(','));
  if (size !== DEFAULT_SIZE) params.set('size', size);
  if (comment) params.set('comment', comment);
  return `?${params.toString().replaceAll('%2C', ',')}`;
}

// The connection's arguments for a view.
function variablesFor(view) {
  const variables = {
    sku: view.sku,
    ratings: view.ratings.length > 0 ? view.ratings : null,
    numbering: NUMBERING[view.numbering],
  };
  if (view.comment) {
    return { ...variables, containing: view.comment, first: view.size };
  }
  const offset = (view.page - 1) * view.size;
  return view.numbering === 'newest'
    ? { ...variables, first: view.size, offset }
    : { ...variables, last: view.size, offset };
}

// ---- The API ---------------------------------------------------------------------------------

// A failed request, with what to tell the reader.
class LoadError extends Error {
  constructor(title, detail, code = null) {
    super(detail);
    this.title = title;
    this.code = code;
  }
}

// Runs a query over GET, which browsers and CDNs may cache for a few seconds (the server says
// how long): the same page asked for twice in a row is fetched once. Answers
// `{ data, errors }`; throws LoadError when there is no GraphQL answer at all.
async function graphql(query, variables) {
  const url = new URL('/graphql', window.location.href);
  url.searchParams.set('query', query);
  url.searchParams.set('variables', JSON.stringify(variables));
  let response;
  try {
    response = await fetch(url, { headers: { accept: 'application/graphql-response+json' } });
  } catch (error) {
    throw new LoadError('The comments could not be loaded', `The server did not answer (${error.message}).`);
  }
  const type = response.headers.get('content-type') || '';
  if (!type.includes('json')) {
    throw new LoadError('The comments could not be loaded', `The server answered HTTP ${response.status}.`);
  }
  const body = await response.json();
  if (!body.data && !(body.errors && body.errors.length > 0)) {
    throw new LoadError('The comments could not be loaded', `The server answered HTTP ${response.status}.`);
  }
  return { data: body.data || null, errors: body.errors || [] };
}

// Why the answer holds no comments, told for a reader (by the first error's extensions.code).
function loadError(errors, view) {
  const error = errors[0] || { message: 'The server answered without data.' };
  const code = (error.extensions && error.extensions.code) || null;
  switch (code) {
    case 'NOT_FOUND':
      return new LoadError(
        'This comment is not here',
        view.ratings.length > 0
          ? 'It was deleted, or its rating is not among the ones chosen.'
          : 'It was deleted, or it belongs to another product.',
        code,
      );
    case 'BAD_USER_INPUT':
    case 'PAGE_SIZE_EXCEEDED':
      return new LoadError('This link does not work', error.message, code);
    case 'RATE_LIMITED':
      return new LoadError('Too many requests', error.message, code);
    default:
      return new LoadError('The comments could not be loaded', error.message, code);
  }
}

// ---- Rendering -------------------------------------------------------------------------------

function setState(state) {
  const main = $('reviews');
  main.dataset.state = state;
  main.setAttribute('aria-busy', String(state === 'loading'));
}

function showError(title, detail, links) {
  $('comments').replaceChildren();
  $('pager').hidden = true;
  $('status').textContent = '';
  $('error-title').textContent = title;
  $('error-detail').textContent = detail;
  $('error-links').replaceChildren(
    ...links.map(({ href, text }) => el('li', {}, el('a', { href }, text))),
  );
  $('error').hidden = false;
  document.title = `${title} · Customer reviews`;
  setState('error');
}

function stars(rating) {
  return el(
    'span',
    { class: 'stars', role: 'img', 'aria-label': `${rating} out of 5 stars` },
    '★'.repeat(rating),
    el('span', { class: 'stars-off', 'aria-hidden': 'true' }, '★'.repeat(5 - rating)),
  );
}

function renderProduct(view, product) {
  $('product').replaceChildren('Product ', el('strong', {}, product.sku));
  const summary = product.ratingSummary;
  $('summary').replaceChildren(
    ...(summary && summary.total > 0
      ? [
          stars(Math.round(summary.average)),
          ` ${summary.average.toFixed(1)} out of 5 · ${numberFormat.format(summary.total)} `,
          summary.total === 1 ? 'review' : 'reviews',
        ]
      : []),
  );
}

// One checkbox per rating, with its count; checking or unchecking one opens page 1 of the
// new filter. No rating checked means every rating.
function renderRatingFilter(view, product) {
  const counts = new Map(
    ((product.ratingSummary && product.ratingSummary.counts) || []).map((c) => [c.rating, c.count]),
  );
  const options = RATINGS.map((rating) => {
    const id = `rating-${rating}`;
    const input = el('input', {
      type: 'checkbox',
      id,
      name: 'rating',
      value: rating,
      checked: view.ratings.includes(rating),
    });
    input.addEventListener('change', () => {
      const ratings = RATINGS.filter((r) => (r === rating ? input.checked : view.ratings.includes(r)))
        .sort((a, b) => a - b);
      for (const box of document.querySelectorAll('#rating-options input')) box.disabled = true;
      window.location.assign(viewUrl({ ...view, ratings, page: 1, comment: null }));
    });
    const count = counts.has(rating)
      ? el('span', { class: 'count' }, numberFormat.format(counts.get(rating)))
      : null;
    return el(
      'li',
      {},
      input,
      el(
        'label',
        { for: id },
        el(
          'span',
          { class: 'stars', 'aria-hidden': 'true' },
          '★'.repeat(rating),
          el('span', { class: 'stars-off' }, '★'.repeat(5 - rating)),
        ),
        el('span', { class: 'rating-name' }, rating === 1 ? '1 star' : `${rating} stars`),
        count,
      ),
    );
  });
  $('rating-options').replaceChildren(...options);
  const clear = $('rating-clear');
  clear.hidden = view.ratings.length === 0;
  clear.querySelector('a').href = viewUrl({ ...view, ratings: [], page: 1, comment: null });
}

function renderNumbering(view) {
  for (const link of document.querySelectorAll('#numbering a')) {
    const numbering = link.dataset.numbering;
    link.href = viewUrl({ ...view, numbering, page: 1, comment: null });
    if (numbering === view.numbering) link.setAttribute('aria-current', 'true');
    else link.removeAttribute('aria-current');
  }
  $('numbering').hidden = false;
}

// The page's comments, newest first; the permalinked one highlighted.
function renderComments(view, comments) {
  $('comments').replaceChildren(...comments.map((comment) => commentItem(view, comment)));
}

// One comment of the list.
function commentItem(view, comment) {
  const highlighted = comment.id === view.comment;
  const created = new Date(comment.createdAt);
  return el(
    'li',
    {
      class: highlighted ? 'comment highlighted' : 'comment',
      'data-comment-id': comment.id,
      'data-highlighted': highlighted,
      'aria-current': highlighted ? 'true' : null,
      tabindex: highlighted ? '-1' : null,
    },
    el(
      'article',
      {},
      el(
        'header',
        {},
        el('span', { class: 'author' }, comment.author),
        stars(comment.rating),
        el('time', { datetime: comment.createdAt }, dateFormat.format(created)),
        comment.updatedAt ? el('span', { class: 'edited', title: comment.updatedAt }, '(edited)') : null,
        highlighted ? el('span', { class: 'badge' }, 'Linked comment') : null,
      ),
      el('p', { class: 'body' }, comment.body),
      el(
        'footer',
        {},
        el(
          'a',
          {
            class: 'permalink',
            rel: 'bookmark',
            href: viewUrl({ ...view, page: 1, comment: comment.id }),
            'aria-label': `Permalink to ${comment.author}’s comment of ${dateFormat.format(created)}`,
          },
          'Permalink',
        ),
      ),
    ),
  );
}

// First, previous, the pages around this one, next and last, as links to their views.
function renderPager(view, cursors) {
  const link = (kind, cursor, label, extra = {}) =>
    cursor
      ? el('a', { href: viewUrl({ ...view, page: cursor.page, comment: null }), 'data-page-link': kind, ...extra }, ...label)
      : el('span', { class: 'disabled', 'aria-disabled': 'true' }, ...label);
  const arrow = (text) => el('span', { 'aria-hidden': 'true' }, text);
  const gap = () => el('li', { class: 'gap', 'aria-hidden': 'true' }, '…');
  const around = cursors.around;
  const firstShown = around.length > 0 ? around[0].page : 1;
  const lastShown = around.length > 0 ? around[around.length - 1].page : cursors.pageCount;
  const current = [cursors.first, ...around, cursors.last].find((c) => c.isCurrent);
  const items = [
    el('li', {}, link('first', current === cursors.first ? null : cursors.first, [arrow('« '), 'First'],
      { 'aria-label': 'First page' })),
    el('li', {}, link('previous', cursors.previous, [arrow('‹ '), 'Previous'],
      { rel: 'prev', 'aria-label': 'Previous page' })),
    firstShown > 1 ? gap() : null,
    ...around.map((cursor) =>
      el('li', {}, link('page', cursor, [String(cursor.page)], {
        'aria-label': `Page ${cursor.page}`,
        'aria-current': cursor.isCurrent ? 'page' : null,
      })),
    ),
    lastShown < cursors.pageCount ? gap() : null,
    el('li', {}, link('next', cursors.next, ['Next', arrow(' ›')], { rel: 'next', 'aria-label': 'Next page' })),
    el('li', {}, link('last', current === cursors.last ? null : cursors.last, ['Last', arrow(' »')],
      { 'aria-label': `Last page, ${cursors.last.page}` })),
  ];
  $('page-links').replaceChildren(...items.filter(Boolean));
  $('page-of').textContent = current ? `Page ${current.page} of ${cursors.pageCount}` : '';
  $('pager').hidden = cursors.pageCount <= 1;
}

// Draws a view from the query's answer.
function render(view, product, errors) {
  const comments = product.comments;
  renderProduct(view, product);
  renderRatingFilter(view, product);
  renderNumbering(view);
  const cursors = comments.pageCursors;
  const current = cursors && [cursors.first, ...cursors.around, cursors.last].find((c) => c.isCurrent);
  const page = current ? current.page : view.page;
  const pageCount = cursors ? cursors.pageCount : Math.ceil((comments.totalCount || 0) / view.size);

  if (comments.nodes.length === 0 && view.page > 1) {
    const last = Math.max(pageCount, 1);
    showError(`There is no page ${view.page}`, `These comments fill ${pageCount === 1 ? '1 page' : `${numberFormat.format(pageCount)} pages`}.`, [
      { href: viewUrl({ ...view, page: last }), text: `Go to the last page (${last})` },
      { href: viewUrl({ ...view, page: 1 }), text: 'Go to the first page' },
    ]);
    return;
  }
  renderComments(view, comments.nodes);
  if (cursors) renderPager(view, cursors);
  else $('pager').hidden = true;

  const shown = comments.nodes.length;
  const total = comments.totalCount;
  let status;
  if (shown === 0) {
    status = view.ratings.length > 0 ? 'No comments with these ratings.' : 'No comments yet.';
  } else if (comments.startOffset !== null && comments.startOffset !== undefined && total !== null) {
    const from = comments.startOffset + 1;
    status = `Comments ${numberFormat.format(from)}–${numberFormat.format(from + shown - 1)} of ${numberFormat.format(total)}, newest first.`;
  } else {
    status = `${shown} comments, newest first.`;
  }
  if (errors.length > 0) {
    status += ' Some details (counts, page numbers) are unavailable right now.';
  }
  $('status').textContent = status;
  document.title = `Page ${page}${pageCount > 0 ? ` of ${pageCount}` : ''} · Customer reviews of ${product.sku}`;

  if (view.comment) {
    // Put the page that holds the comment into the URL, keeping the permalink.
    window.history.replaceState(null, '', viewUrl({ ...view, page }));
    const item = document.querySelector('li.highlighted');
    if (item) {
      item.scrollIntoView({ block: 'center' });
      item.focus({ preventScroll: true });
    }
  }
  setState('ready');
}

// ---- Live comments ----------------------------------------------------------------------------
//
// A subscription to the product's comment events over a WebSocket, in the graphql-transport-ws
// protocol (what the `graphql-ws` client speaks; with a bundler, use that client instead of
// these few lines). New comments do not reshuffle the page being read: a banner counts them,
// with a link to the newest. Edits and deletions of comments on this page show in place.

const EVENTS = `
subscription StorefrontEvents($sku: String!, $ratings: [Int!]) {
  commentEvents(sku: $sku, ratings: $ratings) {
    kind
    deletedCommentId
    totalCount
    edge { node { id author body rating createdAt updatedAt } }
  }
}`;

function startLive(view) {
  const url = new URL('/graphql', window.location.href);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const socket = new WebSocket(url, 'graphql-transport-ws');
  const send = (message) => socket.send(JSON.stringify(message));
  let added = 0;
  socket.addEventListener('open', () => send({ type: 'connection_init', payload: {} }));
  socket.addEventListener('message', ({ data }) => {
    const message = JSON.parse(data);
    if (message.type === 'connection_ack') {
      const variables = { sku: view.sku, ratings: view.ratings.length > 0 ? view.ratings : null };
      send({ id: 'comments', type: 'subscribe', payload: { query: EVENTS, variables } });
      $('reviews').dataset.live = 'connected';
    } else if (message.type === 'ping') {
      send({ type: 'pong' });
    } else if (message.type === 'next' && message.payload.data) {
      const event = message.payload.data.commentEvents;
      if (event.kind === 'ADDED') {
        added += 1;
        showNewComments(view, added);
      } else {
        applyInPlace(view, event);
      }
    }
  });
  socket.addEventListener('close', () => {
    $('reviews').dataset.live = 'closed';
  });
}

function showNewComments(view, count) {
  const banner = $('live');
  const text = count === 1 ? '1 new comment' : `${numberFormat.format(count)} new comments`;
  banner.replaceChildren(
    `${text} since you opened this page. `,
    el('a', { href: viewUrl({ sku: view.sku, ratings: view.ratings, size: view.size }) }, 'Show the newest'),
  );
  banner.hidden = false;
}

// An edit or a deletion of a comment this page shows.
function applyInPlace(view, event) {
  const id = event.kind === 'DELETED' ? event.deletedCommentId : event.edge.node.id;
  const item = document.querySelector(`li[data-comment-id="${CSS.escape(id)}"]`);
  if (!item) return;
  if (event.kind === 'UPDATED') {
    const fresh = commentItem(view, event.edge.node);
    fresh.dataset.updated = '';
    item.replaceWith(fresh);
  } else {
    item.dataset.deleted = '';
    item.classList.add('deleted');
    item.querySelector('.body').textContent = 'This comment was deleted.';
  }
}

// Reads the URL, asks the API, draws the answer or says what went wrong.
async function load() {
  setState('loading');
  $('error').hidden = true;
  let view;
  try {
    view = readView(window.location.search);
  } catch (error) {
    if (!(error instanceof BadLink)) throw error;
    const sku = new URLSearchParams(window.location.search).get('sku') || DEFAULT_SKU;
    showError('This link does not work', error.message, [{ href: viewUrl({ sku }), text: 'Go to the first page' }]);
    return;
  }
  try {
    const { data, errors } = await graphql(QUERY, variablesFor(view));
    const product = data && data.product;
    if (!product || !product.comments) throw loadError(errors, view);
    render(view, product, errors);
    if ('WebSocket' in window) startLive(view);
  } catch (error) {
    const failure = error instanceof LoadError
      ? error
      : new LoadError('The comments could not be shown', String(error.message || error));
    const links = [];
    if (failure.code === 'NOT_FOUND' && view.ratings.length > 0) {
      links.push({ href: viewUrl({ ...view, ratings: [] }), text: 'Look for it among all ratings' });
    }
    if (failure.code === 'NOT_FOUND' || failure.code === 'BAD_USER_INPUT') {
      links.push({ href: viewUrl({ sku: view.sku }), text: 'Go to the first page' });
    } else {
      links.push({ href: window.location.href, text: 'Try again' });
    }
    showError(failure.title, failure.message, links);
  }
}

load();
// Coming back with the Back button may restore this page as it was left (the back/forward
// cache): a checkbox just toggled and every checkbox disabled. Draw it afresh.
window.addEventListener('pageshow', (event) => {
  if (event.persisted) load();
});
