#!/usr/bin/env node
// delta-log: makes a folder of Hive-partitioned Parquet files (as
// bench/gen-small-files.mjs writes them) a Delta Lake table, as a Spark
// stream would have left it: version 0 creates the table (protocol 1/2,
// the schema read from one file by DuckDB, the folders' partition column),
// then one commit per BATCH files adds them, dataChange true, each with
// its numRecords in stats. For bench/compact.sh's DELTA=1 run; not timed.
//
// Usage: node bench/delta-log.mjs DIR [BATCH]   (default BATCH 100)

import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { DuckDBInstance } = await import(require.resolve('@duckdb/node-api', {
  paths: [resolve(new URL('.', import.meta.url).pathname, '../tools')],
}));

const [dirArg, batchArg] = process.argv.slice(2);
if (!dirArg) {
  process.stderr.write('usage: node bench/delta-log.mjs DIR [BATCH]\n');
  process.exit(2);
}
const dir = resolve(dirArg);
const batch = Number(batchArg ?? 100);
const files = [];
for (const part of readdirSync(dir).filter((d) => d.includes('=')).sort()) {
  for (const f of readdirSync(join(dir, part)).filter((f) => f.endsWith('.parquet')).sort()) {
    files.push({ part, name: f, rel: `${part}/${f}` });
  }
}
if (files.length === 0) {
  process.stderr.write(`delta-log: no Parquet files in partition folders of ${dir}\n`);
  process.exit(1);
}
const key = files[0].part.split('=')[0];

const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
const lit = (s) => "'" + s.replace(/'/g, "''") + "'";
// Delta's name for a DuckDB type, nested types included.
function deltaType(t) {
  t = t.trim();
  const simple = { VARCHAR: 'string', BIGINT: 'long', INTEGER: 'integer', DOUBLE: 'double', BOOLEAN: 'boolean',
    DATE: 'date', 'TIMESTAMP WITH TIME ZONE': 'timestamp', TIMESTAMP: 'timestamp', BLOB: 'binary' };
  if (simple[t]) return simple[t];
  let m = /^DECIMAL\((\d+),\s*(\d+)\)$/.exec(t);
  if (m) return `decimal(${m[1]},${m[2]})`;
  if (t.endsWith('[]')) return { type: 'array', elementType: deltaType(t.slice(0, -2)), containsNull: true };
  m = /^STRUCT\((.*)\)$/s.exec(t);
  if (m) return { type: 'struct', fields: splitTop(m[1]).map(field) };
  throw new Error(`delta-log: no Delta type for DuckDB's ${t}`);
}
function splitTop(s) {
  const out = []; let depth = 0, cur = '';
  for (const c of s) {
    if (c === '(') depth++;
    if (c === ')') depth--;
    if (c === ',' && depth === 0) { out.push(cur); cur = ''; continue; }
    cur += c;
  }
  if (cur.trim()) out.push(cur);
  return out;
}
function field(s) {
  s = s.trim();
  const m = /^("(?:[^"]|"")*"|\S+)\s+(.*)$/s.exec(s);
  const name = m[1].startsWith('"') ? m[1].slice(1, -1).replace(/""/g, '"') : m[1];
  return { name, type: deltaType(m[2]), nullable: true, metadata: {} };
}
const desc = await conn.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${lit(join(dir, files[0].rel))})`);
const fields = desc.getRowObjectsJS().map((r) => ({ name: String(r.column_name), type: deltaType(String(r.column_type)), nullable: true, metadata: {} }));
fields.push({ name: key, type: 'date', nullable: true, metadata: {} });
const rows = new Map();
const meta = await conn.runAndReadAll(`SELECT file_name, num_rows FROM parquet_file_metadata(${lit(join(dir, '*', '*.parquet'))})`);
for (const r of meta.getRowObjectsJS()) rows.set(resolve(String(r.file_name)), Number(r.num_rows));

const log = join(dir, '_delta_log');
mkdirSync(log, { recursive: true });
const pad = (v) => String(v).padStart(20, '0');
const now = Date.now();
writeFileSync(join(log, `${pad(0)}.json`), [
  { commitInfo: { timestamp: now, operation: 'CREATE TABLE', operationParameters: {}, engineInfo: 'bench/delta-log.mjs' } },
  { protocol: { minReaderVersion: 1, minWriterVersion: 2 } },
  { metaData: { id: 'bench-events', format: { provider: 'parquet', options: {} },
    schemaString: JSON.stringify({ type: 'struct', fields }), partitionColumns: [key], configuration: {}, createdTime: now } },
].map((a) => JSON.stringify(a)).join('\n') + '\n');
let v = 0;
for (let i = 0; i < files.length; i += batch) {
  const adds = files.slice(i, i + batch).map((f) => {
    const p = join(dir, f.rel);
    return { add: { path: f.rel.split('/').map(encodeURIComponent).join('/'),
      partitionValues: { [key]: decodeURIComponent(f.part.slice(key.length + 1)) },
      size: statSync(p).size, modificationTime: now, dataChange: true,
      stats: JSON.stringify({ numRecords: rows.get(p) }) } };
  });
  writeFileSync(join(log, `${pad(++v)}.json`), [
    { commitInfo: { timestamp: now, operation: 'STREAMING UPDATE', isBlindAppend: true, engineInfo: 'bench/delta-log.mjs' } },
    ...adds,
  ].map((a) => JSON.stringify(a)).join('\n') + '\n');
}
process.stdout.write(JSON.stringify({ files: files.length, versions: v + 1 }) + '\n');
conn.closeSync();
instance.closeSync();
