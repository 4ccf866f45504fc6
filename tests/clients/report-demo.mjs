// Reports a comment from the storefront demo (/demo) in headless Chromium through
// playwright-core, as a signed-in reader would: open the page, paste a token in the banner's
// "Sign in to report" form, press Report on a comment, choose a reason, send. It only reports
// what the page shows; the Rust test (tests/api/storefront/report.rs) decides what that should
// be.
//
//   node report-demo.mjs '<json>'
//
// where the JSON is { chromium, args, base, url, token, comment, reason }. It prints one JSON
// object: { snapshots: [{ buttons, reported, error }], requests, pageErrors }, buttons being the
// number of Report buttons the signed-in page shows.
import { chromium } from 'playwright-core';

const { chromium: executablePath, args, base, url, token, comment, reason } = JSON.parse(process.argv[2]);
const browser = await chromium.launch({ executablePath, args });
const requests = [];
const pageErrors = [];
const snapshots = [];
try {
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(20_000);
  page.on('request', (request) => requests.push(request.url()));
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  await page.goto(new URL(url, base).href);
  await page.waitForSelector('#reader-sign-in');
  await page.fill('#reader-token', token);
  await page.click('#reader-sign-in button[type=submit]');
  const item = `li[data-comment-id="${comment}"]`;
  await page.click(`${item} [data-report]`);
  await page.selectOption(`${item} .report-form select[name=reason]`, reason);
  await page.click(`${item} [data-send-report]`);
  await page.waitForFunction((selector) => {
    const li = document.querySelector(selector);
    return li.dataset.reported || li.dataset.reportError;
  }, item);
  snapshots.push(await page.evaluate((selector) => {
    const li = document.querySelector(selector);
    return {
      buttons: document.querySelectorAll('[data-report]').length,
      reported: li.dataset.reported || null,
      error: li.dataset.reportError || null,
    };
  }, item));
} finally {
  await browser.close();
}
console.log(JSON.stringify({ snapshots, requests, pageErrors }));
