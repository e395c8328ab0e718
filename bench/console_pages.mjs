// The browser half of bench/console.py, run with tests/e2e/browser as its working
// directory (playwright-core comes from there). Settings as JSON in $CONSOLE_BENCH.
// mode "pages": renders the topics list and a bucket's root and one prefix 20 times
// each, timing from the hash change to the table drawn; prints {page: [p50, p95]} as
// JSON. mode "watch": signs in, prints "watching", then on "open" keeps the overview and
// a group's page open in two tabs, on "close" closes them, answering "ok"; "quit" ends.

import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';

const { chromium } = createRequire(process.cwd() + '/')('playwright-core');
const cfg = JSON.parse(process.env.CONSOLE_BENCH);
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
});
const context = await browser.newContext();

async function signIn(page) {
  await page.goto(cfg.base + '/console/');
  await page.fill('#access-key', cfg.user);
  await page.fill('#secret-key', cfg.secret);
  await page.click('#login-button');
  await page.waitForSelector('#bar:not([hidden])');
}

async function timeRender(page, hash, selector) {
  const times = [];
  for (let i = 0; i < 21; i++) {
    await page.evaluate(() => { location.hash = '#/overview'; });
    await page.waitForSelector('#graphs');
    const t = Date.now();
    await page.evaluate((h) => { location.hash = h; }, hash);
    await page.waitForSelector(selector);
    if (i > 0) times.push(Date.now() - t);
  }
  times.sort((a, b) => a - b);
  return [times[Math.floor(times.length / 2)], times[Math.floor(times.length * 0.95) - 1]];
}

if (cfg.mode === 'pages') {
  const page = await context.newPage();
  await signIn(page);
  const out = {
    'topics list (1,000 topics, first 50)': await timeRender(page, '#/topics', '#topic-list tr:nth-child(51)'),
    'bucket root (100 prefixes)': await timeRender(page, `#/buckets/${cfg.bucket}`, '#object-table tr:nth-child(101)'),
    'bucket prefix (100 of 1,000 keys)': await timeRender(page, `#/buckets/${cfg.bucket}?prefix=d42%2F`, '#object-table tr:nth-child(101)'),
  };
  console.log(JSON.stringify(out));
  await browser.close();
} else {
  const first = await context.newPage();
  await signIn(first);
  await first.close();
  console.log('watching');
  let open = [];
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'open') {
      const a = await context.newPage();
      await a.goto(cfg.base + '/console/#/overview');
      await a.waitForSelector('#graphs');
      const b = await context.newPage();
      await b.goto(cfg.base + '/console/#/groups/' + encodeURIComponent(cfg.group));
      await b.waitForSelector('#group-lag');
      open = [a, b];
    } else if (line === 'close') {
      for (const p of open) await p.close();
      open = [];
    } else if (line === 'quit') {
      break;
    }
    console.log('ok');
  }
  await browser.close();
}
