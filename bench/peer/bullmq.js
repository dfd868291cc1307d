#!/usr/bin/env node
// bench/peer/bullmq.js - BullMQ as a peer of srq, on the same Redis, in the
// same run, so srq's figures have a well-known queue beside them:
//
//   addBulk  BullMQ addBulk vs sr-enqueue: N stop jobs spread over A queues
//            (one per account, c0..c{A-1}), added in chunks; jobs/s, Redis
//            CPU us per job (INFO cpu delta / N) and Redis bytes per waiting
//            job (INFO memory used_memory delta / N, before any worker runs;
//            BullMQ's per-queue events stream is part of it)
//   worker   a BullMQ worker making one HTTP call per job to the same sr-gwsim
//            vs srq's drain: one Worker per queue, the concurrency split over
//            them (sum ~C), each job one POST /v1/cards/{card}/stop with an
//            Idempotency-Key, done when the answer is HTTP 200; from the
//            workers' start until all N jobs are completed or failed: jobs/s,
//            Redis CPU us per job, completed and failed counts, and the Redis
//            bytes per job still held then (used_memory over the one before
//            the adds: what removeOnComplete leaves, the events streams mostly)
//
// Jobs are added with removeOnComplete: true (a completed job leaves Redis,
// as a confirmed srq command leaves its queue), removeOnFail: false, and
// attempts: 1 (a failure is counted, not retried).
//
// Usage: node bullmq.js [--redis PATH|host:port] [--n N] [--accounts A]
//                       [--gateway URL] [--concurrency C] [--chunk K]
// or the environment: PEER_REDIS (else SRQ_REDIS, unix://PATH or
// redis://host:port), PEER_N, PEER_ACCOUNTS, SRQ_GATEWAY, PEER_CONCURRENCY,
// PEER_CHUNK, PEER_TIMEOUT_S. Defaults: N 20000, A 20, C 64, K 1000,
// timeout 100 s. One JSON line per figure on stdout; exit 0, or 1 on error
// or timeout (with a JSON line saying so).
'use strict';
const http = require('http');
const { Queue, Worker } = require('bullmq');
const IORedis = require('ioredis');
const PEER = 'bullmq ' + require('bullmq/package.json').version;

function arg(name, env, def) {
	const i = process.argv.indexOf('--' + name);
	if (i > 0 && i + 1 < process.argv.length) return process.argv[i + 1];
	for (const e of env) if (process.env[e]) return process.env[e];
	return def;
}
function posint(name, v) {
	const n = Number(v);
	if (!Number.isInteger(n) || n < 1) fail(`bad --${name}: ${v}`);
	return n;
}
function out(o) { process.stdout.write(JSON.stringify({ bench: o.bench, peer: PEER, ...o }) + '\n'); }
function fail(msg) { out({ bench: 'peer', error: String(msg) }); process.exit(1); }

const N = posint('n', arg('n', ['PEER_N'], '20000'));
const A = posint('accounts', arg('accounts', ['PEER_ACCOUNTS'], '20'));
const C = posint('concurrency', arg('concurrency', ['PEER_CONCURRENCY'], '64'));
const CHUNK = posint('chunk', arg('chunk', ['PEER_CHUNK'], '1000'));
const TIMEOUT_S = posint('timeout', arg('timeout', ['PEER_TIMEOUT_S'], '100'));
const GATEWAY = arg('gateway', ['SRQ_GATEWAY'], '');
if (!GATEWAY) fail('no gateway: --gateway URL or SRQ_GATEWAY');
const gw = new URL(GATEWAY);
if (gw.protocol !== 'http:') fail('the gateway must be http://');

// Redis: a socket path, unix://PATH, host:port or redis://host:port.
function redisOpts(s) {
	if (s.startsWith('unix://')) return { path: s.slice(7) };
	if (s.startsWith('/')) return { path: s };
	const u = new URL(s.includes('://') ? s : 'redis://' + s);
	return { host: u.hostname || '127.0.0.1', port: Number(u.port) || 6379 };
}
const conn = { ...redisOpts(arg('redis', ['PEER_REDIS', 'SRQ_REDIS'], '127.0.0.1:6379')),
	maxRetriesPerRequest: null };
const PREFIX = 'peer';

setTimeout(() => fail(`timeout after ${TIMEOUT_S} s`), TIMEOUT_S * 1000).unref();
process.on('unhandledRejection', (e) => fail(e && e.message || e));

const agent = new http.Agent({ keepAlive: true, maxSockets: C, maxFreeSockets: C });
// One call: resolves with the HTTP status (0 if the connection failed).
function call(card, carrier, action) {
	const key = `${card}-1-${action}`;
	const body = JSON.stringify({ carrier, request_id: key });
	return new Promise((resolve) => {
		const req = http.request({
			agent, host: gw.hostname, port: gw.port || 80, method: 'POST',
			path: `${gw.pathname.replace(/\/$/, '')}/v1/cards/${card}/${action}`,
			headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body),
				'Idempotency-Key': key },
		}, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); });
		req.on('error', () => resolve(0));
		req.end(body);
	});
}

async function info(r) {
	const cpu = await r.info('cpu'), mem = await r.info('memory');
	const f = (s, k) => Number((s.match(new RegExp('^' + k + ':([0-9.]+)', 'm')) || [])[1]);
	return { cpu: f(cpu, 'used_cpu_sys') + f(cpu, 'used_cpu_user'), mem: f(mem, 'used_memory') };
}
const r1 = (x) => Math.round(x * 10) / 10;

async function main() {
	const r = new IORedis(conn);
	const names = Array.from({ length: A }, (_, k) => 'c' + k);
	const queues = names.map((q) => new Queue(q, { connection: conn, prefix: PREFIX }));
	await Promise.all(queues.map((q) => q.waitUntilReady()));
	// A Redis shared with an earlier run: start from empty queues.
	await Promise.all(queues.map((q) => q.obliterate({ force: true })));

	// --- addBulk ----------------------------------------------------------
	const perQ = names.map(() => []);
	for (let i = 0; i < N; i++) {
		const card = '8986' + String(i).padStart(16, '0');
		perQ[i % A].push({ name: 'stop', data: { card, carrier: names[i % A], action: 'stop' },
			opts: { removeOnComplete: true, removeOnFail: false, attempts: 1 } });
	}
	const a0 = await info(r), t0 = process.hrtime.bigint();
	await Promise.all(queues.map(async (q, k) => {
		for (let j = 0; j < perQ[k].length; j += CHUNK) await q.addBulk(perQ[k].slice(j, j + CHUNK));
	}));
	const t1 = process.hrtime.bigint(), a1 = await info(r);
	const waiting = (await Promise.all(queues.map((q) => q.getWaitingCount()))).reduce((s, x) => s + x, 0);
	const ms = Number(t1 - t0) / 1e6;
	out({ bench: 'addBulk', n: N, per_s: Math.round(N * 1000 / ms), ms: Math.round(ms), waiting,
		accounts: A, chunk: CHUNK, redis_cpu_us_per_job: r1((a1.cpu - a0.cpu) * 1e6 / N),
		redis_bytes_per_job: Math.round((a1.mem - a0.mem) / N), remove_on_complete: true });

	// --- worker -----------------------------------------------------------
	let completed = 0, failed = 0, done;
	const finished = new Promise((res) => { done = res; });
	const tick = () => { if (completed + failed >= N) done(); };
	const conc = names.map((_, k) => Math.max(1, Math.floor(C / A) + (k < C % A ? 1 : 0)));
	const workers = names.map((q, k) => {
		const w = new Worker(q, async (job) => {
			const { card, carrier, action } = job.data;
			const status = await call(card, carrier, action);
			if (status !== 200) throw new Error(`HTTP ${status}`);
		}, { connection: conn, prefix: PREFIX, concurrency: conc[k], autorun: false });
		w.on('completed', () => { completed++; tick(); });
		w.on('failed', () => { failed++; tick(); });
		w.on('error', () => {});
		return w;
	});
	await Promise.all(workers.map((w) => w.waitUntilReady()));
	const w0 = await info(r), t2 = process.hrtime.bigint();
	workers.forEach((w) => w.run().catch((e) => fail(e.message)));
	await finished;
	const t3 = process.hrtime.bigint(), w1 = await info(r);
	const wms = Number(t3 - t2) / 1e6;
	out({ bench: 'worker', n: N, per_s: Math.round(completed * 1000 / wms), ms: Math.round(wms),
		completed, failed, workers: A, concurrency_total: conc.reduce((s, x) => s + x, 0),
		concurrency_per_worker: `${Math.min(...conc)}..${Math.max(...conc)}`,
		redis_cpu_us_per_job: r1((w1.cpu - w0.cpu) * 1e6 / N),
		redis_bytes_left_per_job: Math.round((w1.mem - a0.mem) / N), remove_on_complete: true });

	await Promise.all(workers.map((w) => w.close()));
	await Promise.all(queues.map((q) => q.obliterate({ force: true }).then(() => q.close())));
	await r.quit();
	agent.destroy();
}
main().then(() => process.exit(0), (e) => fail(e && e.message || e));
