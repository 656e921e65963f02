// The dashboard end to end: a real cluster (test/cluster.mjs), Debian's Chromium driven by
// playwright-core. Signs in with a one-time link (as `cohort dashboard` prints it), checks that
// its code is gone from the address bar and the history and that a second tab is signed in too,
// visits every page (any console error or page
// error fails the test), sees a line the task writes appear on the job page within a second,
// counts a chart's points, sees the checkpoint the task reported, kills the job from its page,
// lists the job's outputs and downloads one in ranges,
// sees the jobs list follow a job submitted and killed through the API by the event stream alone,
// follows a sweep of 3 trials on its pages (leaderboard best first, a chart line per trial,
// a trial's job page linking back, pause, resume and kill from its buttons) and a sweep of 21
// trials whose chart keeps the best 20,
// opens a notebook session from the Sessions page (Jupyter through the master, in a new tab)
// and stops it, and saves a screenshot of each page. Then: a link used twice and an expired one are refused,
// signing out revokes the session (in every tab, and on the master), and no code or session is
// in the master's log.
//   node test/e2e.mjs --bin-dir build/bin --web-dir build/web --artifacts build/web-artifacts
import { chromium } from 'playwright-core';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, waitFor } from './cluster.mjs';

const { values: args } = parseArgs({
  options: {
    'bin-dir': { type: 'string', default: 'build/bin' },
    'web-dir': { type: 'string', default: 'build/web' },
    artifacts: { type: 'string', default: 'build/web-artifacts' },
    chromium: { type: 'string', default: '/usr/bin/chromium' },
  },
});
const artifacts = resolve(args.artifacts);
mkdirSync(artifacts, { recursive: true });

// The task: copies the TensorBoard fixture of ../shared (100 points of my_metric, written by
// TensorFlow 2) into its log directory, prints 50 points of `loss`, then a line every 200 ms
// stamped with the time it was written (ms since the epoch) until it is killed. Between the two
// it reports a checkpoint, which the job page shows.
const METRIC_POINTS = 50;
const FIXTURE = resolve(dirname(fileURLToPath(import.meta.url)),
  '../../../shared/fixtures/tfevents/events.out.tfevents.1585499054.host.11684.5.v2');
const FIXTURE_POINTS = 100;
const TASK = `
import os, shutil, sys, time
shutil.copy(${JSON.stringify(FIXTURE)}, os.environ["COHORT_LOG_DIR"])
for step in range(${METRIC_POINTS}):
    print(f"cohort-metric step={step} loss={1.0 / (step + 1):.6f}", flush=True)
print(f"cohort-checkpoint step={${METRIC_POINTS} - 1}", flush=True)
n = 0
while True:
    print(f"tick {n} written_ms={int(time.time() * 1000)}", flush=True)
    n += 1
    time.sleep(0.2)
`;
// A sweep's trial: a grid point q (1, 2 or 3) sets how high its `acc` climbs, in SWEEP_POINTS
// points written at once; then it idles until stopped, so that the sweep can be paused.
const SWEEP_POINTS = 10;
const TRIAL_TASK = `
import sys, time
q = int(sys.argv[1])
for step in range(${SWEEP_POINTS}):
    print(f"cohort-metric step={step} acc={q / 10 * (1 - 1 / (step + 2)):.6f}", flush=True)
while True:
    time.sleep(1)
`;
// A larger sweep, to see the chart keep the best MAX_TRIALS_CHARTED of its trials: each trial
// writes 2 points of `loss`, lower with q, and ends.
const MANY_TRIALS = 21;
const MAX_TRIALS_CHARTED = 20; // web/src/parts/trial_chart.jsx
const SHORT_TRIAL = `
import sys
q = int(sys.argv[1])
for step in range(2):
    print(f"cohort-metric step={step} loss={1 / (q * (step + 1)):.6f}", flush=True)
`;
const bestAcc = (q) => Number(((q / 10) * (1 - 1 / (SWEEP_POINTS + 1))).toFixed(6));
const LATENCY_LIMIT_MS = 1000;
const TICKS_MEASURED = 10;
// A change made through the API shows on a page this soon, through the event stream alone: the
// page's fallback poll is set to an hour for that check (window.cohortPollMs, web/src/live.js).
const EVENT_LIMIT_MS = 2000;
const NO_POLL_MS = 3600 * 1000;
// Sign-in codes last this long here (cohortd master --sign-in-code-ttl): one made at the start
// has expired by the end.
const CODE_TTL_S = 4;

const started = Date.now();
const problems = [];
const check = (ok, message) => {
  if (!ok) problems.push(message);
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${message}`);
};

const cluster = new Cluster({
  binDir: resolve(args['bin-dir']), webDir: resolve(args['web-dir']),
  masterArgs: ['--sign-in-code-ttl', `${CODE_TTL_S}s`],
});
let browser;
try {
  await cluster.up();
  console.log(`cluster at ${cluster.url} (${cluster.dir})`);
  // A link left unused until it expires, opened at the end.
  const expiring = await cluster.api('POST', '/auth/signin-codes');
  await cluster.api('PUT', '/teams/vision', { guaranteed_gpus: 2, max_gpus: 4 });
  const job = await cluster.api('POST', '/jobs', {
    name: 'ticker', team: 'vision',
    tasks: [{ role: 'main', command: ['python3', '-u', '-c', TASK], resources: { gpus: 2 } }],
  });
  // One that cannot start (more GPUs than the cluster has), so the queue has a reason to show.
  const waiting = await cluster.api('POST', '/jobs', {
    name: 'too-big', tasks: [{ role: 'worker', command: ['true'], resources: { gpus: 16 } }],
  });
  // And one that fits once the first has gone: it waits for resources, in the queue's order.
  const next = await cluster.api('POST', '/jobs', {
    name: 'next-in-line', tasks: [{ role: 'worker', command: ['true'], resources: { gpus: 4 } }],
  });
  await waitFor('the job to run', async () => (await cluster.api('GET', `/jobs/${job.id}`)).state === 'RUNNING');

  browser = await chromium.launch({ executablePath: args.chromium, args: ['--no-sandbox'] });
  // One browser profile: its tabs share the session.
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  // Every confirm() is accepted; what each asked is kept.
  const dialogs = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    d.accept();
  });

  // Sign in with a link, as `cohort dashboard` prints it. The first load: what the browser
  // fetched, and when the page was ready.
  const link = await cluster.api('POST', '/auth/signin-codes');
  check(link.url === `${cluster.url}/#signin=${link.code}`, `the link is the master's URL with the code in its fragment: ${link.url.replace(link.code, 'CODE')}`);
  await page.goto(link.url);
  const load = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const resources = performance.getEntriesByType('resource');
    const bytes = resources.reduce((n, r) => n + r.transferSize, nav.transferSize);
    const script = resources.find((r) => r.name.endsWith('/assets/app.js'));
    return { ms: nav.loadEventEnd - nav.startTime, bytes, script: [script?.encodedBodySize, script?.decodedBodySize] };
  });
  console.log(`first load: ${load.bytes} bytes transferred, load event after ${load.ms.toFixed(0)} ms`);
  // The master sends the gzip the build wrote beside each file (Content-Encoding: gzip).
  check(load.script[0] > 0 && load.script[0] < load.script[1] / 2,
    `app.js came gzipped: ${load.script[0]} bytes for ${load.script[1]}`);
  await page.waitForSelector('[data-testid=who]');
  check((await page.textContent('[data-testid=who]')).includes('(admin)'), 'signed in as the admin by the link');
  const secretOf = (code) => code.slice('cohc_'.length + 17);
  check(!page.url().includes(secretOf(link.code)) && !page.url().includes('signin'), `the code is gone from the address bar: ${page.url()}`);
  const cdp = await context.newCDPSession(page);
  const history = (await cdp.send('Page.getNavigationHistory')).entries.map((e) => e.url);
  check(history.every((url) => !url.includes(secretOf(link.code)) && !url.includes('signin')),
    `the code is in no history entry: ${history.join(', ')}`);
  const session = await page.evaluate(() => localStorage.getItem('cohort-session'));
  check(session?.startsWith('cohs_') && (await page.evaluate(() => sessionStorage.length)) === 0,
    'the session is in localStorage, nothing in sessionStorage');
  check(session !== cluster.token, 'the session is not the admin token');
  // A second tab of the same browser is signed in by the session, without a link.
  const tab = await context.newPage();
  await tab.goto(cluster.url);
  await tab.waitForSelector('[data-testid=who]', { timeout: 10000 });
  check((await tab.textContent('[data-testid=who]')).includes('(admin)'), 'a second tab is signed in too');

  // Every page, each with what it must show.
  const visit = async (hash, selector, name) => {
    await page.goto(`${cluster.url}/#/${hash}`);
    await page.waitForSelector(selector, { timeout: 10000 });
    await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
  };
  await visit('cluster', '.gpu.held', 'cluster');
  check((await page.locator('.gpu.held').count()) === 2, 'cluster: the job holds 2 GPU cells');
  check((await page.textContent('.node')).includes('ready'), 'cluster: agent-0 is ready');
  // The queue page asks one route for everything it shows (GET /queue), and nothing else:
  // each refresh is one request, however many jobs wait.
  const queueCalls = [];
  const onRequest = (request) => {
    const { pathname } = new URL(request.url());
    if (pathname.startsWith('/api/v1/') && pathname !== '/api/v1/events') queueCalls.push(pathname);
  };
  page.on('request', onRequest);
  await visit('queue', `.queue li[data-job="${waiting.id}"]`, 'queue');
  page.off('request', onRequest);
  check(queueCalls.length >= 1 && queueCalls.every((p) => p === '/api/v1/queue'),
    `queue: one request per refresh, GET /queue (${queueCalls.join(', ')})`);
  const why = await page.textContent(`.queue li[data-job="${waiting.id}"] .why`);
  const explained = await cluster.api('GET', `/jobs/${waiting.id}/explain`);
  check(why.trim() === explained.summary.trim(), `queue: job ${waiting.id}'s reason is cohort why's: "${why.trim()}"`);
  const shown = await page.$$eval('.queue > li', (items) => items.map((li) => Number(li.dataset.job)));
  const places = await Promise.all(shown.map(async (id) => (await cluster.api('GET', `/jobs/${id}/explain`)).ahead));
  check(shown.length === 2 && places.every((p, i) => i === 0 || places[i - 1] <= p),
    `queue: pending jobs ${shown.join(', ')} in the policy's order (ahead ${places.join(', ')})`);
  await visit('jobs', `tr[data-job="${job.id}"]`, 'jobs');
  await visit(`jobs?state=PENDING`, `tr[data-job="${waiting.id}"]`, 'jobs-pending');
  check((await page.locator(`tr[data-job="${job.id}"]`).count()) === 0, 'jobs: the state filter keeps pending jobs only');
  await visit('teams', 'tr[data-team="vision"]', 'teams');
  check((await page.textContent('tr[data-team="vision"]')).includes('2'), 'teams: vision shows its guarantee');

  // The job page: a line the task writes is on screen within a second. The page stamps each
  // tick line with the time it appeared (a MutationObserver); the line says when it was written.
  await visit(`jobs/${job.id}`, '.chart[data-tag="loss"]', 'job');
  await page.waitForFunction(() => /tick \d+/.test(document.querySelector('[data-testid=log-lines]')?.textContent ?? ''));
  const latencies = await page.evaluate(
    ({ count }) =>
      new Promise((resolveTicks) => {
        const from = Date.now();
        const seen = new Map();
        const pre = document.querySelector('[data-testid=log-lines]');
        const observer = new MutationObserver(() => {
          const now = Date.now();
          for (const m of pre.textContent.matchAll(/tick (\d+) written_ms=(\d+)/g)) {
            const written = Number(m[2]);
            if (written > from && !seen.has(m[1])) seen.set(m[1], now - written);
          }
          if (seen.size >= count) {
            observer.disconnect();
            resolveTicks([...seen.values()]);
          }
        });
        observer.observe(pre, { childList: true, characterData: true, subtree: true });
      }),
    { count: TICKS_MEASURED },
  );
  const worst = Math.max(...latencies);
  check(worst < LATENCY_LIMIT_MS, `job: ${TICKS_MEASURED} task lines on screen ${Math.min(...latencies)}-${worst} ms after written (limit ${LATENCY_LIMIT_MS})`);
  const rows = Number(await page.getAttribute('.chart[data-tag="loss"]', 'data-points'));
  check(rows === METRIC_POINTS, `job: the loss chart has ${rows} points (the task logged ${METRIC_POINTS})`);
  await page.waitForSelector('.chart[data-tag="my_metric"]');
  const fixture = Number(await page.getAttribute('.chart[data-tag="my_metric"]', 'data-points'));
  check(fixture === FIXTURE_POINTS, `job: the my_metric chart has ${fixture} points (the fixture holds ${FIXTURE_POINTS})`);
  await page.selectOption('[data-testid=axis]', 'time');
  await page.waitForSelector('.chart[data-tag="loss"] canvas');
  check(Number(await page.getAttribute('.chart[data-tag="loss"]', 'data-points')) === METRIC_POINTS, 'job: the time axis shows the same points');
  // The task wrote its 50 loss points in one burst: the axis spans seconds, not years.
  const span = await page.$eval('.chart[data-tag="loss"]', (c) => Number(c.dataset.xMax) - Number(c.dataset.xMin));
  check(span >= 1 && span <= 60, `job: the time axis of a burst of points spans ${span} s (1 to 60)`);
  await page.screenshot({ path: join(artifacts, 'job-time-axis.png'), fullPage: true });

  // The checkpoint the task reported reaches the master (the agent sends it with its next sync).
  await waitFor('the checkpoint report', async () => !!(await cluster.api('GET', `/jobs/${job.id}`)).last_checkpoint_at, 30000);

  // Kill from the page; the API then says KILLED, and so does the page, with the checkpoint.
  await page.click('[data-testid=kill]');
  await waitFor('the job to be KILLED', async () => (await cluster.api('GET', `/jobs/${job.id}`)).state === 'KILLED', 30000);
  check(true, 'job: killed from its page (the API says KILLED)');
  await page.waitForSelector('[data-testid=job-page][data-state="KILLED"]', { timeout: 10000 });
  const checkpointed = (await cluster.api('GET', `/jobs/${job.id}`)).last_checkpoint_at;
  const shownCheckpoint = await page.getAttribute('[data-testid=checkpoint]', 'title').catch(() => null);
  check(!!checkpointed && shownCheckpoint === checkpointed,
    `job: the page shows the checkpoint the task reported (${shownCheckpoint}; the API: ${checkpointed})`);
  check((await page.locator('[data-testid=kill]').count()) === 0, 'job: no kill button once it ended');
  await page.screenshot({ path: join(artifacts, 'job-killed.png'), fullPage: true });

  // The job's outputs, put where its agent's upload would have put them: in the master's
  // directory store (store/directory_store.h: a key's segments are directories named SEGMENT%2F).
  // The job page lists them with the upload's state, and downloads one of 9 MiB and a bit (two
  // ranges) with the session's credential; the file saved holds exactly its bytes.
  const outputs = join(cluster.dir, 'master', 'store', 'objects', 'jobs%2F', `${job.id}%2F`, 'outputs%2F');
  mkdirSync(join(outputs, 'ckpt%2F'), { recursive: true });
  const model = Buffer.alloc(9 * 1024 * 1024 + 123);
  for (let i = 0; i < model.length; i++) model[i] = (i * 31 + (i >> 11)) & 255;
  writeFileSync(join(outputs, 'ckpt%2F', 'model.bin'), model);
  writeFileSync(join(outputs, 'notes.txt'), 'hello');
  // Loaded again: the page read the store when the job ended, before these were there.
  await page.goto(`${cluster.url}/#/jobs/${job.id}`);
  await page.reload();
  await visit(`jobs/${job.id}`, '[data-output="ckpt/model.bin"]', 'job-outputs');
  const outputRows = await page.$$eval('[data-testid=outputs] tr[data-output]', (rows) => rows.map((r) => r.textContent));
  check(outputRows.length === 2 && outputRows[0].includes('ckpt/model.bin') && outputRows[0].includes('9.0Mi') &&
      outputRows[1].includes('notes.txt'),
    `job: its outputs are listed with their sizes: ${outputRows.join(' | ')}`);
  const uploadLine = await page.textContent('[data-testid=outputs-state]');
  check(uploadLine.startsWith('Upload: '), `job: the upload's state is shown: "${uploadLine}"`);
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.click('[data-output="ckpt/model.bin"] [data-testid=download]'),
  ]);
  const saved = readFileSync(await download.path());
  check(download.suggestedFilename() === 'model.bin' && saved.equals(model),
    `job: ckpt/model.bin downloaded from its page as ${download.suggestedFilename()}, ${saved.length} bytes, the same as stored (${model.length})`);

  // The jobs list kept current by GET /api/v1/events alone: with the fallback poll at an hour,
  // a job submitted and then killed through the API (outside the browser) shows within
  // EVENT_LIMIT_MS. The page is loaded again so that it starts with the long poll, and the job
  // is submitted once its event stream is open.
  await page.addInitScript((ms) => (window.cohortPollMs = ms), NO_POLL_MS);
  await page.goto(`${cluster.url}/#/jobs`);
  const streamOpen = page.waitForResponse((r) => r.url().endsWith('/api/v1/events') && r.status() === 200);
  await page.reload();
  await page.waitForSelector(`tr[data-job="${waiting.id}"]`);
  await streamOpen;
  check(await page.evaluate(() => window.cohortPollMs) === NO_POLL_MS, 'events: the fallback poll is off (an hour)');
  let since = Date.now();
  const late = await cluster.api('POST', '/jobs', {
    name: 'via-events', tasks: [{ role: 'worker', command: ['true'], resources: { gpus: 16 } }],
  });
  await page.waitForSelector(`tr[data-job="${late.id}"]`, { timeout: EVENT_LIMIT_MS });
  check(true, `events: job ${late.id}, submitted through the API, on the jobs list after ${Date.now() - since} ms (limit ${EVENT_LIMIT_MS})`);
  since = Date.now();
  await cluster.api('POST', `/jobs/${late.id}/kill`);
  await page.waitForSelector(`tr[data-job="${late.id}"] .state-killed`, { timeout: EVENT_LIMIT_MS });
  check(true, `events: its kill through the API on the jobs list after ${Date.now() - since} ms (limit ${EVENT_LIMIT_MS})`);
  await page.screenshot({ path: join(artifacts, 'jobs-via-events.png'), fullPage: true });

  // A sweep: its list, its page (leaderboard, chart), a trial's job page, and its buttons.
  const sweepStarted = Date.now();
  const sweep = await cluster.api('POST', '/sweeps', {
    name: 'grid', team: 'vision',
    trial: { tasks: [{ role: 'worker', command: ['python3', '-u', '-c', TRIAL_TASK, '${hp.q}'], resources: { gpus: 1, cpus: 0.25 } }] },
    hyperparameters: { q: { type: 'int', minval: 1, maxval: 3, count: 3 } },
    searcher: { name: 'grid', metric: 'acc', mode: 'max', max_concurrent_trials: 3 },
  });
  const reported = await waitFor('every trial to report its points', async () => {
    const s = await cluster.api('GET', `/sweeps/${sweep.id}`);
    return s.trials.length === 3 && s.trials.every((t) => t.points === SWEEP_POINTS) && s;
  }, 30000);
  const qOf = (trial) => trial.hparams.q;
  await visit('sweeps', `tr[data-sweep="${sweep.id}"]`, 'sweeps');
  const listed = await page.textContent(`tr[data-sweep="${sweep.id}"]`);
  const best = await page.textContent(`tr[data-sweep="${sweep.id}"] [data-testid=best]`);
  check(listed.includes('grid') && listed.includes('RUNNING') && listed.includes('3/3') && Number(best) === Number(bestAcc(3).toPrecision(4)),
    `sweeps: the sweep is listed RUNNING with 3/3 trials and best ${best} (${bestAcc(3)})`);
  await visit(`sweeps/${sweep.id}`, '.chart[data-tag="acc"]', 'sweep');
  await page.waitForFunction(
    (n) => (document.querySelector('.chart[data-tag="acc"]')?.dataset.lines ?? '').split(',').filter(Boolean).length === n,
    3, { timeout: 10000 });
  await page.waitForFunction(
    () => document.querySelectorAll('[data-testid=leaderboard] tbody tr[data-metric]:not([data-metric=""])').length === 3,
    undefined, { timeout: 10000 });
  await page.screenshot({ path: join(artifacts, 'sweep.png'), fullPage: true });
  const board = await page.$$eval('[data-testid=leaderboard] tbody tr', (rows) =>
    rows.map((r) => ({ id: Number(r.dataset.trial), metric: Number(r.dataset.metric), text: r.textContent })));
  const expected = [...reported.trials].sort((a, b) => qOf(b) - qOf(a));
  check(board.length === 3 && board.every((row, i) => row.id === expected[i].id && row.metric === bestAcc(qOf(expected[i]))),
    `sweep: the leaderboard has 3 trials best first: ${board.map((r) => `trial ${r.id} ${r.metric}`).join(', ')}`);
  check(board[0].text.includes('q=3') && board[2].text.includes('q=1'), 'sweep: the best trial is q=3, the worst q=1');
  const charted = (await page.getAttribute('.chart[data-tag="acc"]', 'data-lines')).split(',').map((l) => l.split('='));
  check(charted.length === 3 && charted.every(([label, points], i) => label === `trial ${expected[i].id}` && Number(points) === SWEEP_POINTS),
    `sweep: the acc chart has a line per trial of ${SWEEP_POINTS} points: ${charted.map((l) => l.join(': ')).join(', ')}`);
  // A trial's job page says whose trial it is, and links back.
  const trialJob = expected[0].job_id;
  await visit(`jobs/${trialJob}`, '[data-testid=trial]', 'sweep-trial-job');
  const trialText = await page.textContent('[data-testid=trial]');
  check(trialText.includes(`Trial ${expected[0].id} of sweep ${sweep.id}`) && trialText.includes('q=3'),
    `sweep: job ${trialJob}'s page says "${trialText}"`);
  await page.click(`[data-testid=trial] a[href="#/sweeps/${sweep.id}"]`);
  await page.waitForSelector('[data-testid=sweep-page][data-state="RUNNING"] [data-testid=pause]');
  // Pause, resume and kill from the page: the API and then the page (trials too) follow.
  const sweepState = async () => (await cluster.api('GET', `/sweeps/${sweep.id}`)).state;
  const trialsShown = (state) =>
    page.waitForFunction((s) => [...document.querySelectorAll('[data-testid=leaderboard] tbody tr')].every((r) => r.dataset.state === s), state, { timeout: 20000 });
  await page.click('[data-testid=pause]');
  await page.waitForSelector('[data-testid=sweep-page][data-state="PAUSED"]', { timeout: 10000 });
  check(await sweepState() === 'PAUSED', 'sweep: paused from its page (the API says PAUSED)');
  await trialsShown('PAUSED');
  check(true, 'sweep: its 3 trials show PAUSED');
  await page.screenshot({ path: join(artifacts, 'sweep-paused.png'), fullPage: true });
  await page.click('[data-testid=resume]');
  await page.waitForSelector('[data-testid=sweep-page][data-state="RUNNING"]', { timeout: 10000 });
  check(await sweepState() === 'RUNNING', 'sweep: resumed from its page (the API says RUNNING)');
  await trialsShown('RUNNING');
  check(true, 'sweep: its 3 trials show RUNNING again');
  await page.click('[data-testid=kill]');
  await page.waitForSelector('[data-testid=sweep-page][data-state="KILLED"]', { timeout: 10000 });
  check(await sweepState() === 'KILLED', 'sweep: killed from its page (the API says KILLED)');
  await trialsShown('KILLED');
  check((await page.locator('[data-testid=sweep-page] .actions button').count()) === 0, 'sweep: no buttons once it ended');
  await page.screenshot({ path: join(artifacts, 'sweep-killed.png'), fullPage: true });
  // More trials than the chart takes: the best 20 are charted, and the page says so.
  const many = await cluster.api('POST', '/sweeps', {
    name: 'many',
    trial: { tasks: [{ role: 'worker', command: ['python3', '-c', SHORT_TRIAL, '${hp.q}'], resources: { gpus: 1, cpus: 0.25 } }] },
    hyperparameters: { q: { type: 'int', minval: 1, maxval: MANY_TRIALS, count: MANY_TRIALS } },
    searcher: { name: 'grid', metric: 'loss', max_concurrent_trials: 4 },
  });
  const finished = await waitFor('the larger sweep to complete', async () => {
    const s = await cluster.api('GET', `/sweeps/${many.id}`);
    return s.state === 'COMPLETED' && s;
  }, 60000);
  await visit(`sweeps/${many.id}`, '[data-testid=sweep-page][data-state="COMPLETED"] .chart[data-tag="loss"]', 'sweep-completed');
  const manyRows = await page.$$eval('[data-testid=leaderboard] tbody tr', (rows) => rows.map((r) => Number(r.dataset.trial)));
  const manyLines = (await page.getAttribute('.chart[data-tag="loss"]', 'data-lines')).split(',').map((l) => l.split('='));
  const bestTwenty = finished.trials.slice(0, MAX_TRIALS_CHARTED);
  check(manyRows.length === MANY_TRIALS && finished.trials[0].hparams.q === MANY_TRIALS &&
      manyLines.length === MAX_TRIALS_CHARTED &&
      manyLines.every(([label, points], i) => label === `trial ${bestTwenty[i].id}` && Number(points) === 2),
    `sweep: of ${manyRows.length} trials the chart has the best ${manyLines.length} (q=${MANY_TRIALS} first), 2 points each`);
  const note = await page.textContent('[data-testid=charted-note]');
  check(note.includes(`best ${MAX_TRIALS_CHARTED} of ${MANY_TRIALS} trials`), `sweep: the page says "${note.trim()}"`);

  const asked = dialogs.filter((d) => d.includes(`sweep ${sweep.id}`));
  check(asked.length === 2 && asked[0].startsWith(`Pause sweep ${sweep.id}`) && asked[1].startsWith(`Kill sweep ${sweep.id}`),
    `sweep: pause and kill asked first, resume did not: ${asked.join(' | ')}`);
  console.log(`sweeps: shown, paused, resumed, killed, and ${MANY_TRIALS} trials run, in ${((Date.now() - sweepStarted) / 1000).toFixed(1)} s`);

  // Sessions: a notebook listed with its buttons; Open lets this browser into Jupyter through
  // the master (a new tab, by a one-time link); Stop ends it.
  const notebookStarted = Date.now();
  const notebook = await cluster.api('POST', '/jobs', {
    name: 'my-notebook', session: { kind: 'notebook' }, restart: { on: [] },
    tasks: [{ role: 'notebook', resources: { gpus: 0, cpus: 0.5 } }],
  });
  await waitFor('the notebook to run', async () => (await cluster.api('GET', `/jobs/${notebook.id}`)).state === 'RUNNING', 30000);
  await waitFor('its Jupyter to answer', () => cluster.api('GET', `/jobs/${notebook.id}/notebook/api/status`).then(() => true, () => false), 60000, 250);
  await visit('sessions', `tr[data-job="${notebook.id}"][data-state="RUNNING"] [data-testid=open-notebook]`, 'sessions');
  check((await page.textContent(`tr[data-job="${notebook.id}"]`)).includes('notebook'), 'sessions: the notebook is listed with its kind');
  const [jupyter] = await Promise.all([context.waitForEvent('page'), page.click(`tr[data-job="${notebook.id}"] [data-testid=open-notebook]`)]);
  await jupyter.waitForURL(`**/api/v1/jobs/${notebook.id}/notebook/tree**`, { timeout: 30000 });
  await jupyter.waitForSelector('#notebook_list', { timeout: 30000 });
  const banner = await jupyter.$('#cohort-session-notice');
  check(banner !== null, "sessions: Jupyter's tree, through the master, with Cohort's notice bar");
  const notebookCookie = (await context.cookies(`${cluster.url}/api/v1/jobs/${notebook.id}/notebook/`)).find((c) => c.name === 'cohort_notebook');
  check(notebookCookie?.httpOnly && notebookCookie.sameSite === 'Strict' && notebookCookie.path === `/api/v1/jobs/${notebook.id}/notebook/`,
    `sessions: the notebook's pass is an HttpOnly, SameSite=Strict cookie of its path only (${notebookCookie?.path})`);
  check(await jupyter.evaluate(() => document.cookie.includes('cohort_notebook')) === false, "sessions: the notebook's pages cannot read the pass");
  await jupyter.screenshot({ path: join(artifacts, 'notebook.png'), fullPage: true });
  await jupyter.close();
  await page.click(`tr[data-job="${notebook.id}"] [data-testid=stop-session]`);
  await waitFor('the notebook to be KILLED', async () => (await cluster.api('GET', `/jobs/${notebook.id}`)).state === 'KILLED', 30000);
  await page.waitForSelector(`[data-testid=ended-sessions] tr[data-job="${notebook.id}"][data-state="KILLED"]`, { timeout: 10000 });
  check(dialogs.some((d) => d.startsWith(`Stop session ${notebook.id}`)), 'sessions: Stop asked first');
  console.log(`sessions: a notebook listed, opened in Jupyter and stopped, in ${((Date.now() - notebookStarted) / 1000).toFixed(1)} s`);

  for (const e of errors) console.log(`  ${e}`);
  check(errors.length === 0, `no console or page errors (${errors.length})`);

  // The link again, in a new browser profile: refused, and the page says why and what to do.
  const refusedIn = async (url, name) => {
    const other = await browser.newContext();
    const otherPage = await other.newPage();
    await otherPage.goto(url);
    await otherPage.waitForSelector('[data-testid=sign-in-error]', { timeout: 10000 });
    const text = await otherPage.textContent('.sign-in');
    await otherPage.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
    const where = otherPage.url();
    await other.close();
    return { text, where };
  };
  const twice = await refusedIn(link.url, 'sign-in-used-twice');
  check(twice.text.includes('used already') && twice.text.includes('cohort dashboard'),
    `a link used twice is refused: "${twice.text.slice(0, 120)}"`);
  check(!twice.where.includes(secretOf(link.code)), 'the refused code is gone from the address bar too');
  const age = Date.now() - Date.parse(expiring.expires_at);
  if (age < 100) await sleep(100 - age);
  const expired = await refusedIn(expiring.url, 'sign-in-expired');
  check(expired.text.includes('expired') && expired.text.includes('cohort dashboard'),
    `an expired link is refused: "${expired.text.slice(0, 120)}"`);

  // Sign out: the session is revoked on the master (a call with it is 401), and the other tab
  // is signed out as well.
  await page.click('[data-testid=sign-out]');
  await page.waitForSelector('[data-testid=sign-in-how]');
  check((await page.textContent('[data-testid=sign-in-how]')).includes('cohort dashboard'), 'signed out: the page says to run cohort dashboard');
  await tab.waitForSelector('[data-testid=sign-in-how]', { timeout: 5000 });
  check(true, 'the second tab is signed out too');
  check(await page.evaluate(() => localStorage.getItem('cohort-session')) === null, 'the session is gone from localStorage');
  const after = await fetch(`${cluster.url}/api/v1/whoami`, { headers: { Authorization: `Bearer ${session}` } });
  const afterText = await after.text();
  check(after.status === 401 && afterText.includes('signed out'), `the old session is refused: ${after.status} ${afterText.slice(0, 100)}`);

  // No code and no session in the master's log (their public ids may be).
  const masterLog = cluster.fullLog('master');
  const leaked = [link.code, expiring.code, session].filter((secret) => masterLog.includes(secretOf(secret)));
  check(masterLog.includes('signed in to the dashboard') && leaked.length === 0,
    `no sign-in code or session in the master's log (${leaked.length} found)`);
} catch (error) {
  problems.push(error.stack ?? String(error));
  console.error(error);
  console.error(`master log:\n${cluster.log('master')}\nagent log:\n${cluster.log('agent')}`);
} finally {
  await browser?.close();
  const leaked = await cluster.down({ keep: problems.length > 0 });
  check(leaked.length === 0, `no processes left behind${leaked.length ? `: ${leaked.join(' ')}` : ''}`);
}
console.log(`${problems.length ? 'FAILED' : 'PASSED'} in ${((Date.now() - started) / 1000).toFixed(1)} s; screenshots in ${artifacts}`);
process.exit(problems.length ? 1 : 0);
