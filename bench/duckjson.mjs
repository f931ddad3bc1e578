#!/usr/bin/env node
// duckjson: the DuckDB side of bench/ingest.sh. Reads every JSON lines file
// IN/*.jsonl with read_json (explicit column types, newline_delimited: the
// columns of SCHEMA, sluice's schema string of the table, in DuckDB's
// types) and writes zstd Parquet under OUT, then prints
// {"seconds":S,"rows":N,"mode":M}: the wall time of the statements alone
// (not DuckDB's start). Fields SCHEMA does not name are not read.
//
// Modes:
//   single       one COPY to OUT/data_0.parquet (no partitions)
//   partitioned  one COPY ... PARTITION_BY (date) into OUT/date=YYYY-MM-DD/
//   perday       the JSON loaded once into an in-memory table, then one COPY
//                per day into OUT/date=YYYY-MM-DD/data_0.parquet (one COPY
//                per partition is faster than PARTITION_BY, see LIBRARIES.md;
//                the load is timed too)
//   single-text  single, with the uuid columns read as VARCHAR: stored
//                as text, as sluice stores a uuid column, where the other
//                modes store DuckDB's 16-byte UUID
//   partitioned-text  partitioned, with the uuid columns as VARCHAR: the
//                same table sluice writes (partitioned by day, uuids as
//                text)
//
// A string column that the records hold a nested object or array in is
// read as VARCHAR too: DuckDB keeps such a value as its JSON text,
// normalised (compact, strings and numbers rewritten).
//
// Usage: node bench/duckjson.mjs IN OUT single|partitioned|perday|single-text|partitioned-text SCHEMA

import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { DuckDBInstance } = await import(require.resolve('@duckdb/node-api', {
  paths: [resolve(new URL('.', import.meta.url).pathname, '../tools')],
}));

const [inArg, outArg, mode, schema] = process.argv.slice(2);
if (!inArg || !outArg || !['single', 'partitioned', 'perday', 'single-text', 'partitioned-text'].includes(mode) || !schema) {
  process.stderr.write('usage: node bench/duckjson.mjs IN OUT single|partitioned|perday|single-text|partitioned-text SCHEMA\n');
  process.exit(2);
}
const inDir = resolve(inArg), outDir = resolve(outArg);
rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });

const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
await conn.run(`SET TimeZone = 'UTC'`);
await conn.run(`SET preserve_insertion_order = false`);
const lit = (s) => "'" + s.replace(/'/g, "''") + "'";
const duckType = {
  uuid: mode.endsWith('-text') ? 'VARCHAR' : 'UUID', int64: 'BIGINT', int32: 'INTEGER',
  timestamp: 'TIMESTAMP', string: 'VARCHAR',
};
const columns = schema.split(',').map((c) => {
  const [name, type] = c.split(':');
  const t = duckType[type.replace(/\?$/, '')];
  if (!t) throw new Error(`duckjson: no DuckDB type for ${c}`);
  return `${name}: '${t}'`;
});
const src = `read_json(${lit(join(inDir, '*.jsonl'))}, format='newline_delimited', columns={${columns.join(', ')}})`;
const zstd = '(FORMAT parquet, COMPRESSION zstd)';
let rows = 0;
const start = process.hrtime.bigint();
if (mode === 'single' || mode === 'single-text') {
  const res = await conn.runAndReadAll(`COPY (SELECT * FROM ${src}) TO ${lit(join(outDir, 'data_0.parquet'))} ${zstd}`);
  rows = Number(res.getRows()[0][0]);
} else if (mode === 'partitioned' || mode === 'partitioned-text') {
  const res = await conn.runAndReadAll(
    `COPY (SELECT *, CAST(event_time AS DATE) AS date FROM ${src}) TO ${lit(outDir)} ` +
    `(FORMAT parquet, COMPRESSION zstd, PARTITION_BY (date), OVERWRITE_OR_IGNORE)`);
  rows = Number(res.getRows()[0][0]);
} else {
  await conn.run(`CREATE TABLE t AS SELECT * FROM ${src}`);
  const days = (await conn.runAndReadAll(
    `SELECT DISTINCT strftime(CAST(event_time AS DATE), '%Y-%m-%d') FROM t ORDER BY 1`)).getRows().map((r) => r[0]);
  for (const d of days) {
    mkdirSync(join(outDir, `date=${d}`), { recursive: true });
    const res = await conn.runAndReadAll(
      `COPY (SELECT * FROM t WHERE event_time >= DATE ${lit(d)} AND event_time < DATE ${lit(d)} + INTERVAL 1 DAY) ` +
      `TO ${lit(join(outDir, `date=${d}`, 'data_0.parquet'))} ${zstd}`);
    rows += Number(res.getRows()[0][0]);
  }
}
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
process.stdout.write(JSON.stringify({ seconds: Math.round(seconds * 1e6) / 1e6, rows, mode }) + '\n');
conn.closeSync();
instance.closeSync();
