// graphql-http's audits of the GraphQL over HTTP specification (serverAudits) against a
// running server: prints every audit's id, result and name, and for each failure the reason
// and the response's status, content type and body; then lists the SHOULD and MAY audits that
// failed. Exits 1 when any MUST audit fails (or an audit cannot run at all).
//
// Usage: node http-audit.mjs <endpoint>
// Last line: "graphql-http: N audits, M MUST failed, S SHOULD/MAY failed".
import { serverAudits } from 'graphql-http';

const url = process.argv[2];
if (!url) {
  process.stderr.write('usage: node http-audit.mjs <endpoint>\n');
  process.exit(2);
}
const say = (line) => process.stdout.write(`${line}\n`);

/** What the server answered, for the failure report. */
async function describe(response) {
  if (!response) return '';
  let body;
  try {
    body = (await response.clone().text()).slice(0, 300);
  } catch {
    body = '(body already read)';
  }
  return ` [HTTP ${response.status}, content-type ${response.headers.get('content-type')}: ${body}]`;
}

const audits = serverAudits({ url });
const mustFailures = [];
const otherFailures = [];
for (const { id, name, fn } of audits) {
  let result;
  try {
    result = await fn();
  } catch (error) {
    // graphql-http throws (rather than returning a failure) when an audit cannot run at all.
    result = { id, name, status: 'error', reason: `the audit could not run: ${error}` };
  }
  const failed = result.status !== 'ok';
  say(`${id} ${result.status.padEnd(6)} ${name}${failed ? `: ${result.reason}${await describe(result.response)}` : ''}`);
  if (failed) (name.startsWith('MUST') ? mustFailures : otherFailures).push(`${id} ${name}`);
}

say(`SHOULD/MAY audits that failed (${otherFailures.length}):`);
for (const failure of otherFailures) say(`  ${failure}`);
if (mustFailures.length) {
  say(`MUST audits that failed (${mustFailures.length}):`);
  for (const failure of mustFailures) say(`  ${failure}`);
}
say(
  `graphql-http: ${audits.length} audits, ${mustFailures.length} MUST failed, ` +
    `${otherFailures.length} SHOULD/MAY failed`
);
process.exit(mustFailures.length ? 1 : 0);
