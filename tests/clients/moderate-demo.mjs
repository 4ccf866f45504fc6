// Drives the moderator's page of the storefront demo (/demo/moderate) in headless Chromium
// through playwright-core, as a moderator would: open it, sign in with a token, choose a
// reason, press Publish or Hide. It only reports what the page shows; the Rust test
// (tests/api/storefront/moderate.rs) decides what that should be.
//
//   node moderate-demo.mjs '<json>'
//
// where the JSON is { chromium, args, base, steps }. Steps, each { goto: "/demo/moderate?…" }
// (then waits until the page is drawn or signed out), { fill: "<CSS selector>", value } (types
// into a field, nothing drawn), { select: "<CSS selector>", value } (chooses an option, nothing
// drawn) or { click: "<CSS selector>" } (which must draw the page again: <main data-drawn>
// moves). After each step it takes a snapshot. It prints one JSON object:
// { snapshots, requests, pageErrors }.
import { chromium } from 'playwright-core';

const { chromium: executablePath, args, base, steps } = JSON.parse(process.argv[2]);
const browser = await chromium.launch({ executablePath, args });
const requests = [];
const pageErrors = [];
const snapshots = [];
try {
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(20_000);
  page.on('request', (request) => requests.push(request.url()));
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  const drawn = () => page.evaluate(() => Number(document.querySelector('main').dataset.drawn || 0));

  for (const step of steps) {
    if (step.goto) {
      await page.goto(new URL(step.goto, base).href);
      await page.waitForFunction(() => {
        const main = document.querySelector('main');
        return ['signed-out', 'ready', 'error'].includes(main.dataset.state) && (main.dataset.state === 'signed-out' || main.dataset.drawn);
      });
    } else if (step.fill) {
      await page.fill(step.fill, step.value);
    } else if (step.select) {
      await page.selectOption(step.select, step.value);
    } else if (step.click) {
      const before = await drawn();
      const target = page.locator(step.click);
      if ((await target.count()) !== 1) {
        const shown = JSON.stringify(await page.evaluate(snapshot), null, 2);
        throw new Error(`${step.click}: ${await target.count()} elements, on a page that shows ${shown}`);
      }
      await target.click();
      await page.waitForFunction((n) => Number(document.querySelector('main').dataset.drawn || 0) > n, before);
    } else {
      throw new Error(`unknown step ${JSON.stringify(step)}`);
    }
    snapshots.push({ step, ...(await page.evaluate(snapshot)) });
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify({ snapshots, requests, pageErrors }));

// What the page shows, by the data-* attributes moderate.js documents. Runs in the page.
function snapshot() {
  const all = (selector) => [...document.querySelectorAll(selector)];
  const error = document.getElementById('error');
  return {
    url: location.pathname + location.search,
    state: document.querySelector('main').dataset.state,
    queues: Object.fromEntries(all('a[data-queue]').map((a) => [a.dataset.queue, a.querySelector('.count').textContent])),
    current: all('a[data-queue][aria-current]').map((a) => a.dataset.queue),
    ids: all('li[data-comment-id]').map((li) => li.dataset.commentId),
    statuses: all('li[data-comment-id]').map((li) => li.dataset.status),
    reports: all('li[data-comment-id]').map((li) => Number(li.dataset.reports || 0)),
    reasons: all('li[data-comment-id]').map((li) => [...li.querySelectorAll('li[data-report-reason]')].map((r) => r.dataset.reportReason)),
    log: all('li[data-entry-id]').map((li) => li.dataset.action),
    error: error && !error.hidden ? error.textContent : null,
  };
}
