#!/usr/bin/env node
// icerows: the independent Iceberg reader. Go tests point it at an Iceberg
// table's metadata file; it reads the table with icebird (pure JavaScript,
// on hyparquet; not iceberg-go) and prints ONE JSON line per snapshot:
//
//   {"snapshot_id":"N","sequence_number":N,"operation":"append",
//    "summary":{...},"rows":N,"paths":["..."],"duck":{"rows":N,"checksum":"..."}}
//
// Usage:
//   node tools/icerows.mjs [--all] [--files-only] METADATA_JSON_URL
//
//   METADATA_JSON_URL  file:///.../metadata/00003-<uuid>.metadata.json
//   --all              every snapshot in the metadata, oldest first
//                      (default: the current snapshot only)
//   --files-only       resolve the live files only: no rows, no duck
//
// For each snapshot: icebird resolves the live data files (manifest list,
// manifests, entry status) and decodes every row of them (rows); the
// data files it resolved are then handed to tools/duckrows.mjs --hive for
// the order-independent checksum (duck, local files only), so a test
// compares both with DuckDB over `sluice files`. s3:// files are read from
// AWS_ENDPOINT_URL when it is set. icebird 0.3.1 reads Avro deflate blocks with
// a gzip decoder: icebird-inflate.mjs gives it raw inflate (see there).
// file:// URLs are served by a small fetch shim (icebird reads through
// fetch), with Range requests. An Iceberg location is a path spelled as a
// URL, not an escaped URL: file:///lake/ts=2021-10-01 08%3A09%3A20/x.parquet
// is the file in the folder named with "%3A", as Spark wrote it (Hive
// escaping), so localPath takes what follows file:// as it is, where
// fileURLToPath would decode %3A to ':' and name a file that does not exist.
//
// Exit status: 0 on success, 1 on failure (one line on stderr), 2 on a usage
// error.
import { register } from 'node:module';
import { fileResponse } from './filefetch.mjs';
import { execFileSync } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

register('./icebird-inflate.mjs', import.meta.url);

function fail(msg, code = 1) {
  process.stderr.write(`icerows: ${String(msg).split('\n')[0]}\n`);
  process.exit(code);
}

// icebird turns s3://bucket/key into https://bucket.s3.amazonaws.com/key;
// with AWS_ENDPOINT_URL set (an S3-compatible store, as sluice takes it)
// that becomes ENDPOINT/bucket/key, path-style, signed (s3Fetch).
const s3Endpoint = process.env.AWS_ENDPOINT_URL?.replace(/\/+$/, '');
const realFetch = globalThis.fetch;

// localPath is the file a file: location names: file:///p and file:/p
// (as Hadoop spells it) are /p, taken literally, never percent-decoded.
function localPath(loc) {
  const m = /^file:(?:\/\/)?(\/(?!\/).*)$/.exec(loc);
  if (!m) throw new Error(`${loc}: not a local file location (file:///path)`);
  return m[1];
}

// s3Fetch sends a GET or HEAD signed with AWS Signature V4 from the
// AWS_* environment (the test server checks signatures).
function s3Fetch(url, init) {
  const u = new URL(url);
  const method = (init.method ?? 'GET').toUpperCase();
  const region = process.env.AWS_REGION || 'us-east-1';
  const now = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
  const day = now.slice(0, 8);
  const headers = new Headers(init.headers);
  headers.set('x-amz-date', now);
  headers.set('x-amz-content-sha256', 'UNSIGNED-PAYLOAD');
  if (process.env.AWS_SESSION_TOKEN) headers.set('x-amz-security-token', process.env.AWS_SESSION_TOKEN);
  const signed = { host: u.host };
  for (const [k, v] of headers) signed[k.toLowerCase()] = v.trim();
  const names = Object.keys(signed).sort();
  const path = u.pathname.split('/').map((seg) => encodeURIComponent(decodeURIComponent(seg))).join('/');
  const query = [...u.searchParams].map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).sort().join('&');
  const canonical = [method, path, query, names.map((n) => `${n}:${signed[n]}\n`).join(''), names.join(';'), 'UNSIGNED-PAYLOAD'].join('\n');
  const scope = `${day}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', now, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
  let key = `AWS4${process.env.AWS_SECRET_ACCESS_KEY ?? ''}`;
  for (const part of [day, region, 's3', 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
  const sig = createHmac('sha256', key).update(toSign).digest('hex');
  headers.set('authorization', `AWS4-HMAC-SHA256 Credential=${process.env.AWS_ACCESS_KEY_ID}/${scope}, SignedHeaders=${names.join(';')}, Signature=${sig}`);
  return realFetch(url, { ...init, method, headers });
}
globalThis.fetch = async (input, init = {}) => {
  const url = String(input instanceof Request ? input.url : input);
  const aws = /^https:\/\/([^./]+)\.s3\.amazonaws\.com\/(.*)$/.exec(url);
  if (aws && s3Endpoint) return s3Fetch(`${s3Endpoint}/${aws[1]}/${aws[2]}`, init);
  if (!url.startsWith('file:')) return realFetch(input, init);
  return fileResponse(localPath(url), init);
};

const { icebergManifests, icebergRead } = await import('icebird');

const args = process.argv.slice(2);
const all = args.includes('--all');
const filesOnly = args.includes('--files-only');
const rest = args.filter((a) => a !== '--all' && a !== '--files-only');
if (rest.length !== 1 || rest[0].startsWith('--')) {
  fail('usage: node tools/icerows.mjs [--all] [--files-only] METADATA_JSON_URL', 2);
}
const metaURL = rest[0];
const metaFile = metaURL.startsWith('file:') ? localPath(metaURL) : metaURL;

function duck(paths) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const local = paths.map((p) => (p.startsWith('file:') ? localPath(p) : p));
  const out = execFileSync('node', [path.join(here, 'duckrows.mjs'), '--hive', '--list', '-'], {
    input: local.join('\n') + '\n',
  });
  const d = JSON.parse(out.toString());
  return { rows: d.rows, checksum: d.checksum };
}

async function readSnapshot(metadata, snap) {
  const m = { ...metadata, 'current-snapshot-id': snap['snapshot-id'] };
  const manifests = await icebergManifests(m);
  const paths = [];
  for (const { entries } of manifests) {
    for (const e of entries) {
      if (e.status === 2 || e.data_file.content) continue;
      paths.push(e.data_file.file_path);
    }
  }
  const out = {
    snapshot_id: String(snap['snapshot-id']),
    sequence_number: Number(snap['sequence-number'] ?? 0),
    operation: snap.summary?.operation,
    summary: snap.summary,
    paths,
  };
  if (filesOnly) return out;
  out.rows = paths.length === 0 ? 0 : (await icebergRead({ tableUrl: metadata.location, metadata: m })).length;
  // DuckDB reads local files only here (no httpfs offline).
  if (paths.every((p) => p.startsWith('file:'))) out.duck = duck(paths);
  return out;
}

try {
  // Snapshot ids are 64-bit: quote them before JSON.parse rounds them.
  let raw;
  if (metaURL.startsWith('file:')) {
    raw = readFileSync(metaFile, 'utf8');
  } else {
    const s3 = /^s3a?:\/\/([^/]+)\/(.*)$/.exec(metaURL);
    const res = await fetch(s3 ? `https://${s3[1]}.s3.amazonaws.com/${s3[2]}` : metaURL);
    if (!res.ok) throw new Error(`${metaURL}: ${res.status} ${res.statusText}`);
    raw = await res.text();
  }
  const text = raw.replace(
    /"(snapshot-id|parent-snapshot-id|current-snapshot-id)"\s*:\s*(-?\d+)/g, '"$1":"$2"');
  const metadata = JSON.parse(text);
  let snaps = [...(metadata.snapshots ?? [])].sort((a, b) => Number(a['sequence-number']) - Number(b['sequence-number']));
  if (!all) snaps = snaps.filter((s) => s['snapshot-id'] === metadata['current-snapshot-id']);
  for (const s of snaps) {
    process.stdout.write(JSON.stringify(await readSnapshot(metadata, s), (k, v) => (typeof v === 'bigint' ? String(v) : v)) + '\n');
  }
} catch (e) {
  fail(e?.message ?? e);
}
