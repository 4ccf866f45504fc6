// Drives the storefront demo (/demo) in headless Chromium through playwright-core, as a reader
// would: open a URL, click a link or a checkbox. It only reports what the page shows; the Rust
// test (tests/api/storefront/demo.rs) decides what that should be, from the API.
//
//   node browse-demo.mjs '<json>'
//
// where the JSON is { chromium, args, base, steps, javaScript }: the browser binary and its extra
// flags, the server's address, steps, and whether pages may run scripts (default true; false is
// how a crawler without JavaScript sees the demo). Steps, each { goto: "/demo?page=3" },
// { click: "<CSS selector>" } (which must open another page), { check: "<CSS selector>" } (ticks
// or unticks a checkbox, which need not open another page), { select: "<CSS selector>", value }
// (chooses an option; with scripts on, the demo opens another page), { block: "/graphql" } (later
// requests to that path fail as if the network were down), { waitFor: "<CSS selector>" } (on
// the page as it is), or
// { post: { query, variables }, waitFor: "<CSS selector>" } (a GraphQL request sent by this
// script, as another client would, then the wait). After each step it waits for the page to be drawn
// (<main data-state="ready"> or "error") and takes a snapshot of it. It prints one JSON object:
// { snapshots, requests, pageErrors }, with every URL the browser requested and every uncaught
// exception of the page.
import { chromium } from 'playwright-core';

const { chromium: executablePath, args, base, steps, javaScript = true } = JSON.parse(process.argv[2]);
const browser = await chromium.launch({ executablePath, args });
const requests = [];
const pageErrors = [];
const snapshots = [];
try {
  const context = await browser.newContext({ javaScriptEnabled: javaScript });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.on('request', (request) => requests.push(request.url()));
  page.on('pageerror', (error) => pageErrors.push(String(error)));

  for (const step of steps) {
    if (step.block) {
      await page.route((url) => url.pathname === step.block, (route) => route.abort('internetdisconnected'));
      continue;
    }
    if (step.post) {
      const response = await fetch(new URL('/graphql', base), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(step.post),
      });
      const answer = await response.json();
      if (answer.errors) throw new Error(`${JSON.stringify(step.post)}: ${JSON.stringify(answer.errors)}`);
    }
    if (step.waitFor) {
      await page.waitForSelector(step.waitFor);
    } else if (step.goto) {
      await page.goto(new URL(step.goto, base).href);
    } else if (step.select) {
      const before = page.url();
      await page.selectOption(step.select, step.value);
      if (javaScript) {
        await page.waitForURL((url) => url.href !== before);
        await page.waitForLoadState('load');
      }
    } else if (step.check) {
      await page.locator(step.check).setChecked(!(await page.locator(step.check).isChecked()));
    } else if (step.click) {
      const before = page.url();
      const target = page.locator(step.click);
      if ((await target.count()) !== 1) {
        const shown = JSON.stringify(await page.evaluate(snapshot), null, 2);
        throw new Error(`${step.click}: ${await target.count()} elements on ${before}, which shows ${shown}`);
      }
      await target.click();
      await page.waitForURL((url) => url.href !== before);
      await page.waitForLoadState('load');
    } else {
      throw new Error(`unknown step ${JSON.stringify(step)}`);
    }
    await page.waitForSelector('main[data-state="ready"], main[data-state="error"]');
    snapshots.push({ step, ...(await page.evaluate(snapshot)) });
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify({ snapshots, requests, pageErrors }));

// What the page shows, by the data-* attributes demo.js documents. Runs in the page.
function snapshot() {
  const all = (selector) => [...document.querySelectorAll(selector)];
  const text = (selector) => {
    const element = document.querySelector(selector);
    return element && !element.closest('[hidden]') ? element.textContent.replace(/\s+/g, ' ').trim() : null;
  };
  const href = (kind) => {
    const link = document.querySelector(`#pager a[data-page-link="${kind}"]`);
    return link ? link.getAttribute('href') : null;
  };
  return {
    url: location.pathname + location.search,
    state: document.querySelector('main').dataset.state,
    ids: all('li[data-comment-id]').map((li) => li.dataset.commentId),
    highlighted: all('li[data-comment-id][data-highlighted]').map((li) => li.dataset.commentId),
    focused: document.activeElement ? document.activeElement.dataset.commentId || null : null,
    permalinks: all('li[data-comment-id] a.permalink').map((a) => a.getAttribute('href')),
    currentPage: text('#pager a[aria-current="page"]'),
    pageOf: text('#page-of'),
    links: { first: href('first'), previous: href('previous'), next: href('next'), last: href('last') },
    checked: all('#rating-options input:checked').map((input) => Number(input.value)),
    counts: all('#rating-options li').map((li) => [
      Number(li.querySelector('input').value),
      li.querySelector('.count') ? li.querySelector('.count').textContent : null,
    ]),
    status: text('#status'),
    live: text('#live'),
    deleted: all('li[data-comment-id][data-deleted]').map((li) => li.dataset.commentId),
    bodies: all('li[data-comment-id] .body').map((p) => p.textContent),
    error: text('#error'),
    title: document.title,
    verifiedChecked: Boolean(document.querySelector('#verified:checked')),
    verifiedCount: text('#verified-filter .count'),
    verifiedBadges: all('li[data-comment-id] [data-verified-badge]').length,
    statement: text('#verification-statement'),
  };
}
