#!/usr/bin/env node
// duckcompact: the DuckDB side of bench/compact.sh. Rewrites every Hive
// partition folder IN/<key=value>/ into OUT/<key=value>/data_0.parquet with
// one COPY per partition (faster for DuckDB than one COPY with PARTITION_BY,
// see LIBRARIES.md), zstd, and prints {"seconds":S,"rows":N}: the wall time
// of the COPY statements alone.
//
// Usage: node bench/duckcompact.mjs IN OUT

import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { DuckDBInstance } = await import(require.resolve('@duckdb/node-api', {
  paths: [resolve(new URL('.', import.meta.url).pathname, '../tools')],
}));

const [inArg, outArg] = process.argv.slice(2);
if (!inArg || !outArg) {
  process.stderr.write('usage: node bench/duckcompact.mjs IN OUT\n');
  process.exit(2);
}
const inDir = resolve(inArg), outDir = resolve(outArg);
rmSync(outDir, { recursive: true, force: true });
const parts = readdirSync(inDir).filter((d) => d.includes('=')).sort();
for (const p of parts) mkdirSync(join(outDir, p), { recursive: true });

const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
await conn.run(`SET TimeZone = 'UTC'`);
const lit = (s) => "'" + s.replace(/'/g, "''") + "'";
let rows = 0;
const start = process.hrtime.bigint();
for (const p of parts) {
  const res = await conn.runAndReadAll(
    `COPY (SELECT * FROM read_parquet(${lit(join(inDir, p, '*.parquet'))})) TO ${lit(join(outDir, p, 'data_0.parquet'))} (FORMAT parquet, COMPRESSION zstd)`);
  rows += Number(res.getRows()[0][0]);
}
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
process.stdout.write(JSON.stringify({ seconds: Math.round(seconds * 1e6) / 1e6, rows }) + '\n');
conn.closeSync();
instance.closeSync();
