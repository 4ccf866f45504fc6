// The moderator's page of the storefront demo (/demo/moderate): the queues a shop's moderators
// work through, with their counts and page numbers, a decision (publish, hide, reject, with a
// reason and a note to the author) and a public reply on each comment, and the moderation log.
// Copy it: no framework, no build step; everything it shows comes from the GraphQL API, asked
// as the signed-in moderator.
//
// Signing in: paste a moderator's bearer token (the shop's identity provider's, or
// `dynapage token --sub you --role moderator` against a server started with the flags it
// prints). It is kept in this tab's sessionStorage only and sent as `Authorization: Bearer`.
//
// What the page shows is in its URL, so a view is a link a colleague can open:
//   ?queue=…  PENDING (the default), REPORTED, HIDDEN, REJECTED, or PUBLISHED (a product's published
//             comments, to take one down: needs a product)
//   &sku=…    one product's comments only (default: the whole shop)
//   &page=…   the page number, from 1
//
// Tests read the page through data-* attributes: <main data-state> is "signed-out", "loading",
// "ready" or "error", and <main data-drawn> counts the times the page was drawn; each queue link is <a data-queue> with its count in .count and
// aria-current on the open one; each comment is <li data-comment-id data-status data-reports>
// (its open reports), its buttons
// <button data-decision> and <button data-reply>; pager links have data-page; each log entry
// is <li data-entry-id data-action>.

const SIZE = 10;
const TOKEN_KEY = 'dynapage-moderator-token';
const QUEUES = [
  ['PENDING', 'Pending'],
  ['REPORTED', 'Reported'],
  ['HIDDEN', 'Hidden'],
  ['REJECTED', 'Rejected'],
  ['PUBLISHED', 'Published'],
];
const REASONS = ['SPAM', 'OFF_TOPIC', 'ABUSIVE', 'PERSONAL_DATA', 'ILLEGAL', 'CONFLICT_OF_INTEREST', 'DUPLICATE', 'OTHER'];
// Which decisions apply to a comment in each status (moderateComment refuses the others), and
// to one with open reports: keeping it published dismisses them, hiding it upholds them.
const DECISIONS = {
  PENDING: ['PUBLISH', 'REJECT'],
  PUBLISHED: ['HIDE'],
  HIDDEN: ['PUBLISH'],
  REJECTED: ['PUBLISH'],
};
const REPORTED_DECISIONS = {
  PUBLISHED: ['PUBLISH', 'HIDE'],
  HIDDEN: ['PUBLISH', 'HIDE'],
};
const LABELS = { PUBLISH: 'Publish', HIDE: 'Hide', REJECT: 'Reject' };
const REPORTED_LABELS = { PUBLISH: 'Keep (dismiss reports)', HIDE: 'Hide (uphold reports)' };

const $ = (id) => document.getElementById(id);
const main = $('moderation');
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

// The view in the URL.
function readView() {
  const params = new URLSearchParams(location.search);
  const queue = QUEUES.some(([name]) => name === params.get('queue')) ? params.get('queue') : 'PENDING';
  const page = Math.max(1, Number.parseInt(params.get('page') || '1', 10) || 1);
  return { queue, sku: (params.get('sku') || '').trim(), page };
}

function writeView(view) {
  const params = new URLSearchParams();
  if (view.queue !== 'PENDING') params.set('queue', view.queue);
  if (view.sku) params.set('sku', view.sku);
  if (view.page > 1) params.set('page', String(view.page));
  const query = params.toString();
  history.replaceState(null, '', query ? `?${query}` : location.pathname);
}

// One GraphQL request as the moderator; the data, or an Error with the API's message and code.
async function api(query, variables) {
  const response = await fetch('/graphql', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}`,
    },
    body: JSON.stringify({ query, variables }),
  });
  const answer = await response.json();
  if (answer.errors && answer.errors.length) {
    const [first] = answer.errors;
    const code = first.extensions && first.extensions.code;
    throw new Error(code ? `${first.message} (${code})` : first.message);
  }
  return answer.data;
}

const NODE = 'id author body rating createdAt product { sku } moderation { status reason note } reply { body } reportCount openReports { reason details createdAt }';
// The counts of the four queues, a page of the queue shown (or of a product's published
// comments), and the newest entries of the log, in one request.
function desk(published) {
  const list = published
    ? 'published: comments(sku: $product, first: $size, offset: $offset)'
    : 'queue: moderationQueue(queue: $queue, sku: $sku, first: $size, offset: $offset)';
  const product = published ? ', $product: String!' : ', $queue: ModerationQueue!';
  return `query Desk($sku: String, $size: Int!, $offset: Int!${product}) {
  pending: moderationQueue(queue: PENDING, sku: $sku, first: 0) { totalCount }
  reported: moderationQueue(queue: REPORTED, sku: $sku, first: 0) { totalCount }
  hidden: moderationQueue(queue: HIDDEN, sku: $sku, first: 0) { totalCount }
  rejected: moderationQueue(queue: REJECTED, sku: $sku, first: 0) { totalCount }
  ${list} {
    totalCount
    edges { node { ${NODE} } }
    pageCursors(size: $size, around: 5) { pageCount around { page isCurrent } }
  }
  moderationLog(sku: $sku, first: 10) {
    totalCount
    edges { node { id actor action previousStatus status reason note at comment { id } } }
  }
}`;
}
const MODERATE = `mutation Moderate($input: ModerateCommentInput!) {
  moderateComment(input: $input) { comment { id moderation { status } } }
}`;
const REPLY = `mutation Reply($input: ReplyToCommentInput!) {
  replyToComment(input: $input) { comment { id reply { body } } }
}`;

async function load() {
  const view = readView();
  writeView(view);
  $('sku').value = view.sku;
  main.dataset.state = 'loading';
  $('error').hidden = true;
  const published = view.queue === 'PUBLISHED';
  if (published && !view.sku) {
    draw(view, null, 'Published comments are listed per product: enter a SKU.');
    return;
  }
  try {
    const variables = { sku: view.sku || null, size: SIZE, offset: (view.page - 1) * SIZE };
    if (published) variables.product = view.sku;
    else variables.queue = view.queue;
    const data = await api(desk(published), variables);
    draw(view, data, null);
  } catch (error) {
    failed(error);
  }
}

// Marks the page as drawn once more (a test waits for the count to move after an action).
function drawn(state) {
  main.dataset.state = state;
  main.dataset.drawn = String(Number(main.dataset.drawn || 0) + 1);
}

// Shows an error from the API (or the network) above the list.
function failed(error) {
  $('error').textContent = error.message;
  $('error').hidden = false;
  drawn('error');
}

function draw(view, data, notice) {
  $('sign-in').hidden = true;
  $('desk').hidden = false;
  const counts = data
    ? {
      PENDING: data.pending.totalCount,
      REPORTED: data.reported.totalCount,
      HIDDEN: data.hidden.totalCount,
      REJECTED: data.rejected.totalCount,
    }
    : {};
  const list = data ? (data.queue || data.published) : null;
  if (list && view.queue === 'PUBLISHED') counts.PUBLISHED = list.totalCount;
  $('queues').replaceChildren(...QUEUES.map(([name, label]) => el('li', {},
    el('a', { href: '#', 'data-queue': name, 'aria-current': name === view.queue ? 'page' : null },
      label, ' ', el('span', { class: 'count' }, name in counts ? numberFormat.format(counts[name]) : '')))));
  $('queue-title').textContent = QUEUES.find(([name]) => name === view.queue)[1] + (view.sku ? ` · ${view.sku}` : ' · the whole shop');
  $('status').textContent = notice || `${numberFormat.format(list.totalCount)} comment${list.totalCount === 1 ? '' : 's'}`;
  $('queue').replaceChildren(...(list ? list.edges.map(({ node }) => comment(node)) : []));
  $('pager').replaceChildren(...(list ? pager(list.pageCursors) : []));
  $('log').replaceChildren(...(data ? data.moderationLog.edges.map(({ node }) => entry(node)) : []));
  drawn('ready');
}

function comment(node) {
  const status = node.moderation ? node.moderation.status : 'PUBLISHED';
  const stars = '★'.repeat(node.rating) + '☆'.repeat(5 - node.rating);
  const reason = el('select', { name: 'reason', 'aria-label': 'Reason' },
    el('option', { value: '' }, 'Reason…'), ...REASONS.map((r) => el('option', { value: r }, r.toLowerCase().replaceAll('_', ' '))));
  const note = el('input', { name: 'note', placeholder: 'Note to the author (optional)', 'aria-label': 'Note to the author' });
  const reports = node.reportCount || 0;
  const decisions = (reports && REPORTED_DECISIONS[status]) || DECISIONS[status];
  const labels = reports ? { ...LABELS, ...REPORTED_LABELS } : LABELS;
  const buttons = decisions.map((decision) =>
    el('button', { type: 'button', 'data-decision': decision }, labels[decision]));
  const reply = el('input', { name: 'reply', placeholder: 'The shop\'s public reply', 'aria-label': 'Reply', value: node.reply ? node.reply.body : '' });
  const li = el('li', { class: 'comment', 'data-comment-id': node.id, 'data-status': status, 'data-reports': reports },
    el('header', {},
      el('span', { class: 'author' }, node.author), ' ',
      el('span', { class: 'stars', 'aria-label': `${node.rating} of 5 stars` }, stars), ' ',
      el('span', { class: 'badge' }, node.product.sku), ' ',
      reports ? el('span', { class: 'badge reports' }, `${reports} open report${reports === 1 ? '' : 's'}`) : null, reports ? ' ' : null,
      el('time', { datetime: node.createdAt }, dateFormat.format(new Date(node.createdAt)))),
    el('p', { class: 'body' }, node.body),
    reports ? el('ul', { class: 'reports', 'aria-label': 'Open reports' }, ...(node.openReports || []).map((report) =>
      el('li', { 'data-report-reason': report.reason },
        report.reason.toLowerCase().replaceAll('_', ' '),
        report.details ? `: “${report.details}”` : '',
        ' (', el('time', { datetime: report.createdAt }, dateFormat.format(new Date(report.createdAt))), ')'))) : null,
    node.moderation && node.moderation.reason
      ? el('p', { class: 'status' }, `${status.toLowerCase()}: ${node.moderation.reason.toLowerCase()}${node.moderation.note ? ` (“${node.moderation.note}”)` : ''}`)
      : null,
    el('footer', {}, reason, ' ', note, ' ', ...buttons, ' ', reply, ' ',
      el('button', { type: 'button', 'data-reply': '' }, 'Reply')));
  li.addEventListener('click', (event) => act(event, node.id, reason, note, reply));
  return li;
}

async function act(event, commentId, reason, note, reply) {
  const button = event.target.closest('button');
  if (!button) return;
  main.dataset.state = 'loading';
  try {
    if (button.dataset.decision) {
      await api(MODERATE, {
        input: { commentId, decision: button.dataset.decision, reason: reason.value || null, note: note.value || null },
      });
    } else {
      await api(REPLY, { input: { commentId, body: reply.value.trim() || null } });
    }
    await load();
  } catch (error) {
    failed(error);
  }
}

function pager(cursors) {
  if (cursors.pageCount <= 1) return [];
  return [el('ul', {}, ...cursors.around.map(({ page, isCurrent }) => el('li', {},
    el('a', { href: '#', 'data-page': page, 'aria-current': isCurrent ? 'page' : null }, String(page)))))];
}

function entry(node) {
  const change = node.previousStatus ? `${node.previousStatus} → ${node.status}` : node.status;
  const parts = [dateFormat.format(new Date(node.at)), node.actor, node.action, change, node.reason, node.note];
  return el('li', { class: 'comment', 'data-entry-id': node.id, 'data-action': node.action },
    parts.filter(Boolean).join(' · '));
}

$('sign-in').addEventListener('submit', (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
  load();
});
$('sign-out').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  $('desk').hidden = true;
  $('sign-in').hidden = false;
  main.dataset.state = 'signed-out';
});
$('queues').addEventListener('click', (event) => {
  const link = event.target.closest('a[data-queue]');
  if (!link) return;
  event.preventDefault();
  writeView({ ...readView(), queue: link.dataset.queue, page: 1 });
  load();
});
$('pager').addEventListener('click', (event) => {
  const link = event.target.closest('a[data-page]');
  if (!link) return;
  event.preventDefault();
  writeView({ ...readView(), page: Number(link.dataset.page) });
  load();
});
$('product-filter').addEventListener('submit', (event) => {
  event.preventDefault();
  writeView({ ...readView(), sku: $('sku').value.trim(), page: 1 });
  load();
});

if (sessionStorage.getItem(TOKEN_KEY)) load();
