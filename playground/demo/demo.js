// The storefront demo (/demo): one product's comments as a shop shows them. Copy it: no
// framework, no build step.
//
// The server draws every page (src/storefront/): the comments, the pager, the rating form, from
// the answer to storefront.graphql for the page's URL, as GET /graphql would answer it. So the
// page works without this script, and search engines read it. Everything a page shows is in its
// URL, so every view is a plain link (crawlable, shareable):
//   ?sku=…        the product (default: DAFT_PUNK_TSHIRT, the demo product the server seeds)
//   &sort=…       the order, the connection's `orderBy` in lower case: `newest` (the default),
//                 `oldest`, and whatever else the schema's CommentOrder offers
//   &page=…       the page number, from 1 (default 1)
//   &numbering=…  `newest` (page 1 holds the newest comments; the default) or `oldest`; in the
//                 default order only (other orders number pages from their start)
//   &ratings=…    only these ratings, e.g. `4,5` (default: all; `ratings=4&ratings=5` too)
//   &verified=1   only verified purchases (the connection's `verified: true`; default: all)
//   &size=…       comments per page, 1 to the server's maximum page size (default 10)
//   &comment=…    a comment's id: opens the page that holds it, highlighted (a permalink)
//
// This script enhances the page the server drew:
// - a rating checkbox or the sort selector opens its view at once (without the script, the
//   form's Apply button does);
// - dates are shown in the reader's time zone;
// - a permalink's page number goes into the URL, and the linked comment takes focus;
// - live comments: it subscribes to the product's comment events (startLive, below): new
//   comments are counted in a banner, edits and deletions of comments on the page show in
//   place;
// - reports (enableReports, below): a reader signed in (a bearer token from the shop's identity
//   provider, pasted in the banner's "Sign in to report" form and kept in this tab's
//   sessionStorage) gets a Report button on each comment, which asks for a reason and sends
//   reportComment. The server must verify tokens (--auth jwt); reporting one's own comment, or
//   without a token, is refused by the API and the reason shown.
//
// Tests read the page through data-* attributes: <main data-state> is "ready" or "error" (the
// server's), data-live is "connected" once the subscription is on; each comment is
// <li data-comment-id>, the permalinked one also data-highlighted; pager links have
// data-page-link (first, previous, page, next, last). The report controls: the form
// #reader-sign-in, each comment's <button data-report>, its form .report-form with <select
// name="reason"> and <button data-send-report>, and the comment's data-reported ("OPEN",
// "UPHELD", "DISMISSED") or data-report-error once the API answered.

const DEFAULT_SIZE = 10;

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

// The view the server drew, from <main>'s data-* attributes.
function readView(main) {
  const data = main.dataset;
  return {
    sku: data.sku,
    sort: data.sort,
    page: Number(data.page),
    numbering: data.numbering,
    ratings: data.ratings ? data.ratings.split(',').map(Number) : [],
    verified: data.verified === '1',
    size: Number(data.size),
    comment: data.comment || null,
  };
}

// The URL of a view; defaults are left out, so each view has one URL (the server writes the
// same ones: View::url in src/storefront/view.rs).
function viewUrl({
  sku, sort = 'newest', page = 1, numbering = 'newest', ratings = [], verified = false,
  size = DEFAULT_SIZE, comment = null,
}) {
  const params = new URLSearchParams({ sku });
  if (sort !== 'newest') params.set('sort', sort);
  if (page !== 1) params.set('page', page);
  if (numbering !== 'newest' && sort === 'newest') params.set('numbering', numbering);
  if (ratings.length > 0) params.set('ratings', ratings.join(','));
  if (verified) params.set('verified', '1');
  if (size !== DEFAULT_SIZE) params.set('size', size);
  if (comment) params.set('comment', comment);
  return `/demo?${params.toString().replaceAll('%2C', ',')}`;
}

function stars(rating) {
  return el(
    'span',
    { class: 'stars', role: 'img', 'aria-label': `${rating} out of 5 stars` },
    '★'.repeat(rating),
    el('span', { class: 'stars-off', 'aria-hidden': 'true' }, '★'.repeat(5 - rating)),
  );
}

// Checking or unchecking a rating, or choosing another order, opens page 1 of the new view at
// once; the form's Apply button, for readers without this script, is not needed.
function enhanceViewForm(view) {
  const form = $('view-form');
  if (!form) return;
  const apply = form.querySelector('.apply');
  if (apply) apply.hidden = true;
  const boxes = [...form.querySelectorAll('#rating-options input')];
  const sort = $('sort');
  const verified = $('verified');
  const open = (changes) => {
    for (const control of [...boxes, sort, verified]) if (control) control.disabled = true;
    window.location.assign(viewUrl({ ...view, ...changes, page: 1, comment: null }));
  };
  for (const box of boxes) {
    box.addEventListener('change', () => {
      open({ ratings: boxes.filter((b) => b.checked).map((b) => Number(b.value)).sort((a, b) => a - b) });
    });
  }
  if (verified) verified.addEventListener('change', () => open({ verified: verified.checked }));
  // Pages of another order are numbered from its start.
  if (sort) sort.addEventListener('change', () => open({ sort: sort.value, numbering: 'newest' }));
}

// Dates in the reader's time zone and language (the server writes them in UTC).
function localDates(root) {
  for (const time of root.querySelectorAll('time[datetime]')) {
    const date = new Date(time.dateTime);
    if (!Number.isNaN(date.getTime())) time.textContent = dateFormat.format(date);
  }
}

// A permalink: the page that holds the comment goes into the URL, and the comment takes focus.
function showLinkedComment(view) {
  if (!view.comment) return;
  window.history.replaceState(null, '', viewUrl({ ...view }));
  const item = document.querySelector('li.highlighted');
  if (item) {
    item.scrollIntoView({ block: 'center' });
    item.focus({ preventScroll: true });
  }
}

// ---- Live comments ----------------------------------------------------------------------------
//
// A subscription to the product's comment events over a WebSocket, in the graphql-transport-ws
// protocol (what the `graphql-ws` client speaks; with a bundler, use that client instead of
// these few lines). New comments do not reshuffle the page being read: a banner counts them,
// with a link to the newest. Edits and deletions of comments on this page show in place.

const EVENTS = `
subscription StorefrontEvents($sku: String!, $ratings: [Int!], $verified: Boolean) {
  commentEvents(sku: $sku, ratings: $ratings, verified: $verified) {
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
      const variables = {
        sku: view.sku,
        ratings: view.ratings.length > 0 ? view.ratings : null,
        verified: view.verified || null,
      };
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
        applyInPlace(event);
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
    el('a', { href: viewUrl({
      sku: view.sku, ratings: view.ratings, verified: view.verified, size: view.size,
    }) }, 'Show the newest'),
  );
  banner.hidden = false;
}

// An edit or a deletion of a comment this page shows, patched into the server's markup.
function applyInPlace(event) {
  const id = event.kind === 'DELETED' ? event.deletedCommentId : event.edge.node.id;
  const item = document.querySelector(`li[data-comment-id="${CSS.escape(id)}"]`);
  if (!item) return;
  if (event.kind === 'UPDATED') {
    const comment = event.edge.node;
    item.querySelector('.author').textContent = comment.author;
    item.querySelector('.stars').replaceWith(stars(comment.rating));
    item.querySelector('.body').textContent = comment.body;
    if (comment.updatedAt && !item.querySelector('.edited')) {
      item.querySelector('time').after(el('span', { class: 'edited', title: comment.updatedAt }, '(edited)'));
    }
    item.dataset.updated = '';
  } else {
    item.dataset.deleted = '';
    item.classList.add('deleted');
    item.querySelector('.body').textContent = 'This comment was deleted.';
  }
}

const READER_TOKEN_KEY = 'dynapage-reader-token';
const REPORT_REASONS = ['SPAM', 'OFF_TOPIC', 'ABUSIVE', 'PERSONAL_DATA', 'ILLEGAL', 'FAKE', 'OTHER'];
const REPORT = `mutation Report($input: ReportCommentInput!) {
  reportComment(input: $input) { report { id status } }
}`;

// The reader's sign-in form in the banner, and a Report button on each comment once signed in.
function enableReports() {
  const form = el('form', { id: 'reader-sign-in', class: 'reader-sign-in' },
    el('label', { for: 'reader-token' }, 'Sign in to report'), ' ',
    el('input', { id: 'reader-token', name: 'token', type: 'password', autocomplete: 'off', placeholder: 'Bearer token', required: true }), ' ',
    el('button', { type: 'submit' }, 'Sign in'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    sessionStorage.setItem(READER_TOKEN_KEY, $('reader-token').value.trim());
    addReportButtons();
  });
  document.querySelector('.banner').append(form);
  addReportButtons();
}

function addReportButtons() {
  const token = sessionStorage.getItem(READER_TOKEN_KEY);
  if (!token) return;
  $('reader-sign-in').hidden = true;
  for (const item of document.querySelectorAll('#comments li[data-comment-id]')) {
    const footer = item.querySelector('footer');
    if (!footer || footer.querySelector('[data-report]')) continue;
    const button = el('button', { type: 'button', 'data-report': '' }, 'Report');
    button.addEventListener('click', () => openReportForm(item, button, token));
    footer.append(' ', button);
  }
}

function openReportForm(item, button, token) {
  button.hidden = true;
  const reason = el('select', { name: 'reason', 'aria-label': 'Why' },
    ...REPORT_REASONS.map((r) => el('option', { value: r }, r.toLowerCase().replaceAll('_', ' '))));
  const send = el('button', { type: 'button', 'data-send-report': '' }, 'Send report');
  const form = el('p', { class: 'report-form' }, 'Report this comment: ', reason, ' ', send);
  send.addEventListener('click', async () => {
    send.disabled = true;
    try {
      const response = await fetch('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({
          query: REPORT,
          variables: { input: { commentId: item.dataset.commentId, reason: reason.value } },
        }),
      });
      const answer = await response.json();
      if (answer.errors && answer.errors.length) throw new Error(answer.errors[0].message);
      const { status } = answer.data.reportComment.report;
      item.dataset.reported = status;
      form.replaceChildren(status === 'OPEN'
        ? 'Reported: thank you, a moderator will look at it.'
        : `You reported it before: ${status.toLowerCase()}.`);
    } catch (error) {
      item.dataset.reportError = error.message;
      form.replaceChildren(`Not reported: ${error.message}`);
    }
  });
  item.querySelector('footer').append(form);
}

function enhance() {
  const main = $('reviews');
  localDates(main);
  if (main.dataset.state !== 'ready') return;
  const view = readView(main);
  enhanceViewForm(view);
  showLinkedComment(view);
  enableReports();
  if ('WebSocket' in window) startLive(view);
}

enhance();
// Coming back with the Back button may restore this page as it was left (the back/forward
// cache): a checkbox just toggled and every control disabled. Put them as the server drew them.
window.addEventListener('pageshow', (event) => {
  if (!event.persisted) return;
  for (const box of document.querySelectorAll('#rating-options input')) {
    box.checked = box.defaultChecked;
    box.disabled = false;
  }
  const sort = $('sort');
  if (sort) {
    for (const option of sort.options) option.selected = option.defaultSelected;
    sort.disabled = false;
  }
});
