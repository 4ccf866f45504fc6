// The GraphiQL page in headless Chromium through playwright-core, as a person would use its
// CommentEvents tab: open the page, click the tab, press the run button, and, once the browser
// has sent the subscription over its WebSocket, write a comment over HTTP (as another client
// would). It reports what the result pane shows then; the Rust test
// (tests/api/clients/live_clients.rs) decides what that should be.
//
//   node graphiql-events.mjs '<json>'
//
// where the JSON is { chromium, args, base, tab, post, expect }: the browser binary and its
// extra flags, the server's address, the tab's name, the GraphQL request to send ({ query,
// variables }) and a text the result pane must come to show (within 20 s). It prints one JSON
// object: { result, frames, received, requests, pageErrors, error }, with the result pane's
// text, the WebSocket frames the page sent and received, every URL the browser asked for and
// every uncaught exception.
import { chromium } from 'playwright-core';

const { chromium: executablePath, args, base, tab, post, expect } = JSON.parse(process.argv[2]);
const browser = await chromium.launch({ executablePath, args });
const requests = [];
const pageErrors = [];
const frames = [];
const received = [];
let result = '';
let error = null;
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(20_000);
  page.on('request', (request) => requests.push(request.url()));
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  let subscribed;
  const sent = new Promise((resolve) => (subscribed = resolve));
  page.on('websocket', (socket) => {
    requests.push(socket.url());
    socket.on('framesent', ({ payload }) => {
      frames.push(String(payload));
      if (String(payload).includes('"subscribe"')) subscribed();
    });
    socket.on('framereceived', ({ payload }) => received.push(String(payload)));
    socket.on('close', () => received.push('(closed)'));
  });
  await page.goto(new URL('/', base).href);
  const tabButton = page.locator('.graphiql-tab-button', { hasText: tab });
  await tabButton.click();
  await page.waitForFunction(
    (name) => {
      const editor = document.querySelector('.graphiql-query-editor .CodeMirror');
      return editor && editor.CodeMirror && editor.CodeMirror.getValue().includes(`subscription ${name}`);
    },
    tab,
  );
  // GraphiQL fetches the schema (two POSTs) as it starts; a run pressed before that ends may
  // send nothing (seen on a loaded machine: no WebSocket ever opened). So wait for the network
  // to settle, and press again while the page has sent nothing on a socket. Every wait is
  // bounded: a page that never subscribes fails the test with what it saw.
  await page.waitForLoadState('networkidle');
  const deadline = Date.now() + 20_000;
  let subscribedInTime = false;
  while (!subscribedInTime && Date.now() < deadline) {
    if (frames.length === 0) await page.locator('.graphiql-execute-button').click();
    subscribedInTime = await Promise.race([
      sent.then(() => true),
      new Promise((resolve) => setTimeout(() => resolve(false), 2_000)),
    ]);
  }
  if (!subscribedInTime) throw new Error('the page sent no subscribe within 20 s');
  // The server subscribes its feed as it takes the message; leave it a moment.
  await page.waitForTimeout(500);
  const response = await fetch(new URL('/graphql', base), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(post),
  });
  const answer = await response.json();
  if (answer.errors) throw new Error(`${JSON.stringify(post)}: ${JSON.stringify(answer.errors)}`);
  await page.waitForFunction((text) => {
    const editor = document.querySelector('.result-window .CodeMirror');
    return editor && editor.CodeMirror && editor.CodeMirror.getValue().includes(text);
  }, expect);
  result = await page.evaluate(() => document.querySelector('.result-window .CodeMirror').CodeMirror.getValue());
} catch (e) {
  error = String(e);
} finally {
  await browser.close();
}
console.log(JSON.stringify({ result, frames, received, requests, pageErrors, error }));
