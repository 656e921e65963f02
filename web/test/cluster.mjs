// A real local Cohort cluster for the dashboard's end-to-end test: cohortd master (serving the
// dashboard) and one agent with fake GPUs, as child processes, in a scratch directory. Like
// tests/integration/local_cluster.cc, in Node.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, existsSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export async function waitFor(what, condition, timeoutMs = 20000, everyMs = 50) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

export class Cluster {
  constructor({ binDir, webDir, gpus = 4, masterArgs = [] }) {
    this.binDir = binDir;
    this.masterArgs = masterArgs;
    this.webDir = webDir;
    this.gpus = gpus;
    this.dir = mkdtempSync(join(tmpdir(), 'cohort-web-e2e-'));
    this.children = [];
  }

  start(name, args) {
    const log = openSync(join(this.dir, `${name}.log`), 'a');
    const child = spawn(join(this.binDir, 'cohortd'), args, { stdio: ['ignore', log, log] });
    child.name = name;
    child.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    this.children.push(child);
    return child;
  }

  async up() {
    const urlFile = join(this.dir, 'url');
    const master = this.start('master', [
      'master', '--listen', '127.0.0.1:0', '--url-file', urlFile, '--data-dir', join(this.dir, 'master'),
      '--web-dir', this.webDir, '--node-timeout', '10s', ...this.masterArgs,
    ]);
    this.url = await waitFor('the master to listen', () => existsSync(urlFile) && readFileSync(urlFile, 'utf8').trim());
    this.token = readFileSync(join(this.dir, 'master', 'admin-token'), 'utf8').trim();
    this.start('agent', [
      'agent', '--master', this.url, '--name', 'agent-0', '--data-dir', join(this.dir, 'agent-0'),
      '--gpus', String(this.gpus), '--ports', '31000-31999', '--allow-root-tasks',
      '--join-token-file', join(this.dir, 'master', 'join-token'),
    ]);
    await waitFor('the agent to register', async () => {
      if (master.exitCode !== null) throw new Error(`the master exited:\n${this.log('master')}`);
      const { nodes } = await this.api('GET', '/nodes');
      return nodes.some((n) => n.state === 'READY');
    });
  }

  async api(method, path, body) {
    const response = await fetch(`${this.url}/api/v1${path}`, {
      method,
      headers: { Authorization: `Bearer ${this.token}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return JSON.parse(text);
  }

  // The whole of a daemon's log.
  fullLog(name) {
    return readFileSync(join(this.dir, `${name}.log`), 'utf8');
  }

  log(name) {
    try {
      return readFileSync(join(this.dir, `${name}.log`), 'utf8').split('\n').slice(-30).join('\n');
    } catch {
      return '';
    }
  }

  // Processes whose command line or working directory is inside the scratch directory: the
  // daemons, the agent's task supervisors and the tasks.
  ownProcesses() {
    const found = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
      try {
        const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
        let cwd = '';
        try {
          cwd = readlinkSync(`/proc/${entry}/cwd`);
        } catch {}
        if (cmdline.includes(this.dir) || cwd.startsWith(this.dir)) found.push(Number(entry));
      } catch {}
    }
    return found;
  }

  // Every job, following the list's pages (GET /jobs answers at most 1000 at a time).
  async allJobs() {
    const jobs = [];
    for (let after = ''; ; ) {
      const page = await this.api('GET', `/jobs?limit=1000&after=${after}`);
      jobs.push(...page.jobs);
      if (page.next === null) return jobs;
      after = page.next;
    }
  }

  // Ends every job, stops the daemons (SIGTERM, then SIGKILL), and returns the pids of
  // processes that outlived them (killed here too). The directory is kept if `keep`.
  async down({ keep = false } = {}) {
    try {
      const jobs = await this.allJobs();
      for (const job of jobs) {
        if (!['SUCCEEDED', 'FAILED', 'KILLED'].includes(job.state)) await this.api('POST', `/jobs/${job.id}/kill`).catch(() => {});
      }
      await waitFor('every job to end', async () => {
        const now = await this.allJobs();
        return now.every((j) => ['SUCCEEDED', 'FAILED', 'KILLED'].includes(j.state));
      }, 20000);
    } catch (error) {
      console.error(`cleanup: ${error.message}`);
    }
    for (const child of [...this.children].reverse()) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const ended = await Promise.race([child.exited, sleep(10000).then(() => null)]);
      if (!ended) child.kill('SIGKILL');
    }
    let leaked = [];
    try {
      leaked = await waitFor('leftover processes to exit', () => {
        const left = this.ownProcesses();
        return left.length === 0 ? [] : null;
      }, 5000);
    } catch {
      leaked = this.ownProcesses();
      for (const pid of leaked) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
      }
    }
    if (!keep) rmSync(this.dir, { recursive: true, force: true });
    return leaked;
  }
}
