// deploy/local end to end: three `g4 serve` replicas behind Debian's nginx with the repo's config
// (deploy/local/nginx-conf.sh, nginx.conf.in), all on loopback. 40 concurrent streams go through
// nginx; one replica gets SIGTERM in the middle: no request fails, it exits 0 after finishing its
// own, and the requests after the signal go to the others. Then a replica is killed with
// SIGKILL: only the requests it held may fail, and the ones that come after go to the last one.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeTinyModel, startServer, stopServer, streamCompletion, waitMetric, sleep }
  from '../server/e2e/harness.mjs';

const G4 = process.env.G4_BIN;
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
let nginx = '';
try {
  nginx = execFileSync('sh', ['-c', 'command -v nginx || ls /usr/sbin/nginx'], { encoding: 'utf8' }).trim();
} catch {}
if (!nginx && process.env.CI) throw new Error('nginx missing (CI is set): run scripts/setup.sh');
const skip = !nginx && 'nginx missing (scripts/setup.sh installs it)';

const freePort = () => new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});

// Left over after a failure: nginx's master stops its workers on SIGTERM (on SIGKILL they would
// stay, holding the streams open).
const procs = [];
after(() => { for (const [p, signal] of procs) p.kill(signal); });

// The replica that answered: the last address nginx tried ("a:1, b:2" after a retry).
const answeredBy = (r) => (r.headers?.get('x-g4-upstream') ?? '').split(',').pop().trim();

test('3 replicas behind nginx: SIGTERM drains one without a failed request, SIGKILL loses only ' +
     'what it held', { skip, timeout: 300000 }, async () => {
  assert.ok(G4, 'G4_BIN must point at the g4 binary');
  const dir = makeTinyModel(G4);
  // A grace long enough for every accepted request: draining must not cut any.
  const flags = ['--threads', '1', '--max-batch', '16', '--shutdown-grace', '60'];
  const replicas = await Promise.all([0, 1, 2].map(() => startServer(G4, join(dir, 'model'), flags)));
  for (const r of replicas) procs.push([r.proc, 'SIGKILL']);
  const addr = (r) => `127.0.0.1:${r.port}`;

  const port = await freePort();
  const conf = execFileSync(join(root, 'deploy', 'local', 'nginx-conf.sh'),
                            [join(dir, 'nginx'), `127.0.0.1:${port}`, ...replicas.map((r) => String(r.port))],
                            { encoding: 'utf8' }).trim();
  let nginxLog = '';
  const lb = spawn(nginx, ['-c', conf, '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] });
  lb.stderr.on('data', (d) => { nginxLog += d; });
  procs.push([lb, 'SIGTERM']);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; ++i) {
    const r = await fetch(url + '/health').catch(() => null);
    if (r && r.status === 200) break;
    await sleep(50);
  }
  assert.equal((await fetch(url + '/health')).status, 200, `nginx did not come up:\n${nginxLog}`);

  const send = (i, maxTokens) => streamCompletion(url, { model: 'tiny', prompt: `Replica test ${i}`,
                                                         max_tokens: maxTokens, ignore_eos: true,
                                                         temperature: 0 })
    .catch((e) => ({ thrown: String(e) }));

  // Phase 1: 20 streams, SIGTERM to replica 0 while it runs some of them, 20 more after.
  const first = Array.from({ length: 20 }, (_, i) => send(i, 48));
  await waitMetric(replicas[0].url, 'vllm:num_requests_running', (v) => v >= 1);
  replicas[0].proc.kill('SIGTERM');
  await sleep(100);
  const health = await fetch(replicas[0].url + '/health').catch(() => null);
  if (health) assert.equal(health.status, 503, 'a draining replica must fail its readiness probe');
  const second = Array.from({ length: 20 }, (_, i) => send(20 + i, 48));
  const results = await Promise.all([...first, ...second]);
  for (const [i, r] of results.entries()) {
    assert.equal(r.thrown, undefined, `request ${i} broke: ${r.thrown}\n${nginxLog}`);
    assert.equal(r.status, 200, `request ${i}: ${r.error}`);
    assert.ok(r.done && r.error === null, `request ${i} did not end cleanly: ${r.error}`);
    assert.equal(r.finishReason, 'length', `request ${i} was cut`);
  }
  const served = (rs, replica) => rs.filter((r) => answeredBy(r) === addr(replica)).length;
  assert.ok(served(results.slice(0, 20), replicas[0]) >= 1, 'replica 0 served nothing before SIGTERM');
  assert.equal(served(results.slice(20), replicas[0]), 0, 'the draining replica took new work');
  assert.ok(served(results.slice(20), replicas[1]) > 0 && served(results.slice(20), replicas[2]) > 0,
            'the other replicas must share the new work');
  // An unref'd timer: a pending one would keep node alive for its whole minute.
  const hung = new Promise((resolve) => setTimeout(resolve, 60000, 'hung').unref());
  const code = await Promise.race([replicas[0].exited, hung]);
  assert.equal(code, 0, `the drained replica exited ${code}:\n${replicas[0].log()}`);

  // Phase 2: long streams on both replicas; SIGKILL replica 1 while it holds some.
  const held = Array.from({ length: 8 }, (_, i) => send(100 + i, 400));
  await waitMetric(replicas[1].url, 'vllm:num_requests_running', (v) => v >= 1);
  await waitMetric(replicas[2].url, 'vllm:num_requests_running', (v) => v >= 1);
  replicas[1].proc.kill('SIGKILL');
  await replicas[1].exited;
  const later = await Promise.all(Array.from({ length: 10 }, (_, i) => send(200 + i, 16)));
  for (const [i, r] of later.entries()) {
    assert.equal(r.thrown, undefined, `request ${i} after SIGKILL broke: ${r.thrown}`);
    assert.equal(r.status, 200, `request ${i} after SIGKILL: ${r.error}`);
    assert.equal(r.finishReason, 'length');
    assert.equal(answeredBy(r), addr(replicas[2]), `request ${i} after SIGKILL`);
  }
  const heldResults = await Promise.all(held);
  const survived = heldResults.filter((r) => r.thrown === undefined && r.done);
  for (const r of survived) assert.equal(answeredBy(r), addr(replicas[2]));
  assert.ok(survived.length >= 1 && survived.length < heldResults.length,
            `the killed replica held some streams and the survivor finished its own ` +
            `(${survived.length} of ${heldResults.length} finished)`);
  assert.equal(await stopServer(replicas[2]), 0);
  lb.kill('SIGQUIT');
});
