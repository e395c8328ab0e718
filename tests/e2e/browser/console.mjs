// Drives Eddy's web console in Debian's headless Chromium (playwright-core; no browser
// download). Run by tests/e2e/test_console.py: `node console.mjs SCENARIO` with the
// scenario's settings as JSON in $CONSOLE_TEST; prints one JSON object of what it saw
// and exits non-zero (with the step that failed) when a step does not happen.
// Screenshots of each page go to $CONSOLE_TEST.screenshots.

import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const cfg = JSON.parse(process.env.CONSOLE_TEST);
const seen = {};
let step = 'start';

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
});
const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
const page = await context.newPage();
page.setDefaultTimeout(30000);
page.on('dialog', (d) => d.accept());
const consoleErrors = [];
page.on('pageerror', (e) => consoleErrors.push(String(e)));

async function shot(name) {
  if (cfg.screenshots) await page.screenshot({ path: join(cfg.screenshots, `${cfg.prefix || ''}${name}.png`), fullPage: true });
}

async function go(hash) {
  await page.evaluate((h) => { location.hash = h; }, hash);
}

// The text of `selector` once `pred` holds for it.
async function waitText(selector, pred, what) {
  step = what;
  const deadline = Date.now() + 30000;
  let last = null;
  while (Date.now() < deadline) {
    last = await page.locator(selector).first().textContent({ timeout: 1000 }).catch(() => null);
    if (last !== null && pred(last)) return last;
    await page.waitForTimeout(200);
  }
  throw new Error(`${what}: ${selector} is ${JSON.stringify(last)}`);
}

async function login(user, secret) {
  step = 'open the console';
  await page.goto(cfg.base + '/');
  await page.waitForSelector('#login-form');
  seen.url_after_root = page.url();
  await shot('login');
  step = 'sign in';
  await page.fill('#access-key', user);
  await page.fill('#secret-key', secret);
  await page.click('#login-button');
  await page.waitForSelector('#bar:not([hidden])');
  seen.who = await page.textContent('#who');
}

// Calls the console's API from the page, as its own code does (cookie and CSRF token).
async function call(method, path, body, headers = {}) {
  return page.evaluate(async ([m, p, b, h]) => {
    const s = await (await fetch('/console/api/session')).json();
    const r = await fetch('/console/api/' + p, {
      method: m, body: b, headers: { 'x-csrf-token': s.csrf, ...(typeof b === 'string' && !h['content-type'] ? { 'content-type': 'application/json' } : {}), ...h },
    });
    return { status: r.status, body: await r.text() };
  }, [method, path, body, headers]);
}

async function admin() {
  await login(cfg.user, cfg.secret);
  step = 'overview';
  await go('#/overview');
  await page.waitForSelector('#drives tr:nth-child(2)');
  seen.drives = await page.locator('#drives tr').count() - 1;
  seen.status = await page.textContent('#status');
  await shot('overview');

  step = 'create a topic';
  await go('#/topics');
  await page.fill('#new-topic-name', cfg.topic);
  await page.fill('#new-topic-partitions', '2');
  await page.click('#create-topic-button');
  await page.waitForSelector('#partitions tr:nth-child(3)');
  seen.partitions = await page.locator('#partitions tr').count() - 1;

  step = 'produce a record';
  await page.fill('#produce-key', 'k1');
  await page.fill('#produce-value', JSON.stringify(cfg.record));
  await page.click('#produce-button');
  seen.browsed = await waitText('#record-table', (t) => t.includes(cfg.record.item), 'browse the record');
  seen.pretty = await page.locator('#record-table td.value pre').first().textContent();
  await shot('topic');

  step = 'topic list';
  await go('#/topics');
  await page.fill('#topic-filter', cfg.topic);
  await page.press('#topic-filter', 'Enter');
  await page.waitForSelector(`#topic-list tr[data-topic="${cfg.topic}"]`);
  await shot('topics');

  step = 'group lag';
  await go('#/groups/' + encodeURIComponent(cfg.group));
  seen.lag_before = await waitText('#group-lag', (t) => t === String(cfg.lag), 'the group lag at first');
  for (let i = 0; i < 2; i++) {
    const r = await call('POST', `topics/${encodeURIComponent(cfg.group_topic)}/records`, JSON.stringify({ value: `more-${i}` }));
    if (r.status !== 201) throw new Error(`produce: ${r.status} ${r.body}`);
  }
  seen.lag_risen = await waitText('#group-lag', (t) => t === String(cfg.lag + 2), 'the group lag rising');
  await shot('group');
  step = 'reset the group';
  await page.selectOption('#reset-to', 'latest');
  await page.click('#reset-button');
  seen.lag_fallen = await waitText('#group-lag', (t) => t === '0', 'the group lag falling');

  step = 'upload an object';
  await go('#/buckets/' + encodeURIComponent(cfg.bucket));
  await page.waitForSelector('#upload-input');
  await page.setInputFiles('#upload-input', cfg.upload);
  const key = cfg.upload.split('/').pop();
  await page.waitForSelector(`#object-table tr[data-key="${key}"]`);
  await shot('bucket');
  step = 'download it';
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.click(`#object-table tr[data-key="${key}"] a.download`),
  ]);
  const saved = join(cfg.screenshots || '/tmp', 'downloaded-' + key);
  await download.saveAs(saved);
  seen.download_matches = Buffer.compare(readFileSync(saved), readFileSync(cfg.upload)) === 0;
  seen.download_name = download.suggestedFilename();

  step = 'preview a table';
  await go(`#/tables/${cfg.namespace}/${encodeURIComponent(cfg.topic)}`);
  await page.waitForSelector('#schema tr:nth-child(2)');
  seen.preview = await waitText('#preview', (t) => t.includes(cfg.record.item), 'the table preview');
  seen.columns = await page.locator('#schema tr td:nth-child(2)').allTextContents();
  await shot('table');

  if (cfg.pipeline) {
    step = 'pipeline graph and a failed trace';
    await go('#/pipelines/' + encodeURIComponent(cfg.pipeline));
    await page.waitForSelector('#pipeline-graph g[data-node]');
    seen.graph_nodes = await page.locator('#pipeline-graph g[data-node]').evaluateAll((gs) => gs.map((g) => g.dataset.node));
    // The dead letter's span may land after the page loaded: reload until it shows.
    for (let i = 0; ; i++) {
      if (await page.locator('#trace-list tr[data-status="error"]').count()) break;
      if (i === 60) throw new Error('no failed trace on the pipeline page');
      await page.waitForTimeout(500);
      await go('#/pipelines');
      await page.waitForSelector('#pipeline-list');
      await go('#/pipelines/' + encodeURIComponent(cfg.pipeline));
      await page.waitForSelector('#traces > *');
    }
    await page.click('#trace-list tr[data-status="error"] .trace-link');
    await page.waitForSelector('#span-tree tr:nth-child(2)');
    seen.spans = await page.locator('#span-tree tr td:first-child').allTextContents();
    await shot('pipeline');
  }

  step = 'security';
  await go('#/security');
  await page.waitForSelector('#users tr:nth-child(2)');
  seen.users = await page.locator('#users tr td:first-child').allTextContents();
  await shot('security');

  step = 'audit log';
  await go('#/audit');
  await page.waitForSelector('#audit tr:nth-child(2)');
  seen.audit_actions = await page.locator('#audit tr td:nth-child(5)').allTextContents();
  await shot('audit');

  step = 'sign out';
  await page.click('#logout');
  await page.waitForSelector('#login-form');
  seen.after_logout = (await call('GET', 'topics')).status;
}

async function readOnly() {
  await login(cfg.user, cfg.secret);
  seen.security_nav_hidden = await page.locator('#nav-security').isHidden();
  step = 'an overview without the nodes';
  await go('#/overview');
  await page.waitForSelector('#nodes-hidden');
  seen.drive_rows = await page.locator('#drives').count();
  await shot('overview');
  step = 'topics without a create form';
  await go('#/topics');
  await page.waitForSelector(`#topic-list tr[data-topic="${cfg.topic}"]`);
  seen.create_form = await page.locator('#create-topic').count();
  step = 'a topic without buttons that would fail';
  await go('#/topics/' + encodeURIComponent(cfg.topic));
  await page.waitForSelector('#record-table');
  seen.produce_form = await page.locator('#produce').count();
  seen.alter_form = await page.locator('#alter-config').count();
  seen.delete_button = await page.locator('#delete-topic').count();
  seen.records = await page.locator('#record-table tr').count() - 1;
  await shot('topic');
  step = 'a bucket without upload';
  await go('#/buckets/' + encodeURIComponent(cfg.bucket));
  await page.waitForSelector('#object-table');
  seen.upload_zone = await page.locator('#drop').count();
  seen.download_links = await page.locator('#object-table a.download').count();
  await shot('bucket');
  step = 'the server refuses anyway';
  seen.create_topic = await call('POST', 'topics', JSON.stringify({ name: cfg.topic + '-x', partitions: 1 }));
  seen.produce = await call('POST', `topics/${encodeURIComponent(cfg.topic)}/records`, JSON.stringify({ value: 'x' }));
  seen.delete_topic = await call('DELETE', 'topics/' + encodeURIComponent(cfg.topic));
  seen.upload = await call('PUT', `s3/${cfg.bucket}/sneaky.txt`, 'sneaky', { 'content-type': 'text/plain' });
  seen.delete_object = await call('DELETE', `s3/${cfg.bucket}/${cfg.object}`);
  seen.users_api = await call('GET', 'admin/v1/users');
}

try {
  if (cfg.scenario === 'admin') await admin();
  else if (cfg.scenario === 'read-only') await readOnly();
  else throw new Error('unknown scenario ' + cfg.scenario);
  seen.page_errors = consoleErrors;
  console.log(JSON.stringify(seen));
  await browser.close();
} catch (e) {
  await shot('failed').catch(() => {});
  console.error(`step "${step}" failed: ${e.message}\nseen so far: ${JSON.stringify(seen)}\npage errors: ${consoleErrors.join('; ')}`);
  await browser.close();
  process.exit(1);
}
