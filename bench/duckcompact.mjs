#!/usr/bin/env node
// duckcompact: the DuckDB side of bench/compact.sh. Rewrites every Hive
// partition folder IN/<key=value>/ into OUT/<key=value>/data_0.parquet with
// one COPY per partition (faster for DuckDB than one COPY with PARTITION_BY,
// see LIBRARIES.md), zstd, and prints {"seconds":S,"rows":N}: the wall time
// of the COPY statements alone.
//
// Usage: node bench/duckcompact.mjs IN OUT
//
// With --probe, it reads instead: how much of the Parquet files listed in
// LIST (one path a line, - for stdin) DuckDB reads for
// `SELECT * ... WHERE COLUMN = VALUE` (an integer column), in ROUNDS runs
// (default 3), and prints {"rows":N,"row_groups":G,"row_groups_kept":K,
// "rows_kept":R,"bytes_read":B,"best_s":S,"median_s":M}: the rows matched,
// the row groups of the files and those whose min/max admit VALUE (which
// a reader cannot skip) with their rows, the bytes DuckDB's profiler says
// the query read, and its best and median latency. DuckDB's own
// rows_scanned counts every row of a file, skipped row groups included,
// so the row groups kept are counted from the footers.
//
//   node bench/duckcompact.mjs --probe LIST COLUMN VALUE [ROUNDS]

import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { DuckDBInstance } = await import(require.resolve('@duckdb/node-api', {
  paths: [resolve(new URL('.', import.meta.url).pathname, '../tools')],
}));

if (process.argv[2] === '--probe') {
  await probe(...process.argv.slice(3));
  process.exit(0);
}

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

// probe: see --probe above.
async function probe(listArg, column, value, roundsArg) {
  const { readFileSync } = await import('node:fs');
  if (!listArg || !column || !/^-?[0-9]+$/.test(value ?? '')) {
    process.stderr.write('usage: node bench/duckcompact.mjs --probe LIST COLUMN INTEGER [ROUNDS]\n');
    process.exit(2);
  }
  const files = readFileSync(listArg === '-' ? 0 : listArg, 'utf8').split('\n').filter((l) => l !== '');
  const lit = (s) => "'" + s.replace(/'/g, "''") + "'";
  const list = '[' + files.map(lit).join(',') + ']';
  const col = '"' + column.replace(/"/g, '""') + '"';
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  await conn.run(`SET TimeZone = 'UTC'`);
  const meta = (await conn.runAndReadAll(
    `SELECT count(*), count(*) FILTER (WHERE TRY_CAST(stats_min_value AS BIGINT) <= ${value} AND TRY_CAST(stats_max_value AS BIGINT) >= ${value}),
            coalesce(sum(row_group_num_rows) FILTER (WHERE TRY_CAST(stats_min_value AS BIGINT) <= ${value} AND TRY_CAST(stats_max_value AS BIGINT) >= ${value}), 0)
     FROM parquet_metadata(${list}) WHERE path_in_schema = ${lit(column)}`)).getRows()[0].map(Number);
  await conn.run(`SET enable_external_file_cache = false`);
  await conn.run(`SET profiling_mode = 'detailed'`);
  await conn.run(`SET custom_profiling_settings='{"TOTAL_BYTES_READ":"true","LATENCY":"true","OPERATOR_CARDINALITY":"true","OPERATOR_ROWS_SCANNED":"true","CUMULATIVE_ROWS_SCANNED":"true"}'`);
  const rounds = Number(roundsArg ?? 3);
  const lat = [];
  let bytes = 0, rows = 0;
  for (let i = 0; i < rounds; i++) {
    const res = await conn.runAndReadAll(
      `EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM read_parquet(${list}) WHERE ${col} = ${value}`);
    const prof = JSON.parse(res.getRows()[0][1]);
    lat.push(prof.latency);
    bytes = prof.total_bytes_read;
    const scan = (n) => (n.operator_type === 'TABLE_SCAN' ? n : (n.children ?? []).map(scan).find((x) => x));
    rows = scan(prof)?.operator_cardinality ?? 0;
  }
  lat.sort((a, b) => a - b);
  const r6 = (x) => Math.round(x * 1e6) / 1e6;
  process.stdout.write(JSON.stringify({
    rows, row_groups: meta[0], row_groups_kept: meta[1], rows_kept: meta[2], bytes_read: bytes,
    best_s: r6(lat[0]), median_s: r6(lat[Math.floor(lat.length / 2)]),
  }) + '\n');
  conn.closeSync();
  instance.closeSync();
}
