#!/usr/bin/env node
// gen-small-files: writes the benchmark input of bench/compact.sh, many small
// Parquet files in a Hive layout as a streaming engine leaves them:
//
//   OUT/date=2024-01-01/part-00000-<n>.(zstd|snappy).parquet ...
//
// ROWS rows in FILES files spread over DAYS days (default 10), every fourth
// file snappy-compressed and the others zstd, written by DuckDB (a separate
// engine, not sluice). The partition column is in the folder names only, as
// Spark writes it. The table schema of the files is printed to stdout:
//
//   event_id:string,user_id:int64,ts:timestamp,kind:string,country:string?,amount:decimal(12,2)?,score:float64,qty:int32,flag:bool?
//
// NESTED=1 adds two nested columns after them, NULL in some rows:
//
//   ...,attrs:struct<device:string?,os:string?,version:int32?>?,tags:list<string?>?
//
// (a struct of three fields, one of them NULL in some rows, and a list of
// zero to three strings).
//
// Usage: [NESTED=1] node bench/gen-small-files.mjs ROWS FILES OUT [DAYS]
// The data is deterministic for given ROWS, FILES and DAYS (no random()).

import { mkdirSync, existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { DuckDBInstance } = await import(require.resolve('@duckdb/node-api', {
  paths: [resolve(new URL('.', import.meta.url).pathname, '../tools')],
}));

const [rowsArg, filesArg, outArg, daysArg] = process.argv.slice(2);
if (!rowsArg || !filesArg || !outArg) {
  process.stderr.write('usage: node bench/gen-small-files.mjs ROWS FILES OUT [DAYS]\n');
  process.exit(2);
}
const rows = Number(rowsArg), files = Number(filesArg), days = Number(daysArg ?? 10);
const out = resolve(outArg);
if (!(rows > 0 && files > 0 && days > 0 && files >= days)) {
  process.stderr.write('gen-small-files: want ROWS > 0 and FILES >= DAYS > 0\n');
  process.exit(2);
}
rmSync(out, { recursive: true, force: true });

const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
await conn.run(`SET TimeZone = 'UTC'; SET threads = 2`);

const nested = process.env.NESTED === '1';
const nestedCols = nested ? `,
      CASE WHEN hash(i * 37) % 10 = 0 THEN NULL ELSE struct_pack(
        device := (['phone','tablet','desktop','tv'])[1 + (hash(i * 41) % 4)::INT],
        os := CASE WHEN hash(i * 43) % 7 = 0 THEN NULL
                   ELSE (['ios','android','linux','windows','macos'])[1 + (hash(i * 47) % 5)::INT] END,
        version := (hash(i * 53) % 40)::INTEGER) END AS attrs,
      CASE WHEN hash(i * 59) % 8 = 0 THEN NULL
           ELSE list_transform(range((hash(i * 61) % 4)::BIGINT),
                  x -> (['new','promo','mobile','returning','vip','eu','us'])[1 + ((hash(i * 67) + x) % 7)::INT]) END AS tags` : '';
const perFile = Math.floor(rows / files);
let next = 0;
for (let f = 0; f < files; f++) {
  const day = f % days;
  const n = f === files - 1 ? rows - next : perFile;
  const date = new Date(Date.UTC(2024, 0, 1 + day)).toISOString().slice(0, 10);
  const dir = join(out, `date=${date}`);
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
  const codec = f % 4 === 3 ? 'snappy' : 'zstd';
  const path = join(dir, `part-${String(f).padStart(5, '0')}-${codec}.${codec}.parquet`);
  const dayStart = Date.UTC(2024, 0, 1 + day) * 1000; // micros
  // Values are functions of the global row number i: hash() spreads them.
  await conn.run(`COPY (
    SELECT
      md5(i::VARCHAR) AS event_id,
      (hash(i) % 100000)::BIGINT AS user_id,
      make_timestamp(${dayStart}::BIGINT + (hash(i * 7) % 86400000000)::BIGINT)::TIMESTAMPTZ AS ts,
      (['click','view','purchase','signup','logout','search'])[1 + (hash(i * 3) % 6)::INT] AS kind,
      CASE WHEN hash(i * 5) % 10 = 0 THEN NULL
           ELSE (['US','DE','FR','GB','JP','BR','IN','CA','NL','SE','ES','IT'])[1 + (hash(i * 11) % 12)::INT] END AS country,
      CASE WHEN hash(i * 13) % 4 = 0 THEN NULL
           ELSE ((hash(i * 17) % 1000000)::BIGINT / 100)::DECIMAL(12,2) END AS amount,
      (hash(i * 19) % 1000000)::DOUBLE / 1000.0 AS score,
      (hash(i * 23) % 100)::INTEGER AS qty,
      CASE WHEN hash(i * 29) % 3 = 0 THEN NULL ELSE hash(i * 31) % 2 = 0 END AS flag${nestedCols}
    FROM range(${next}, ${next + n}) t(i)
  ) TO '${path}' (FORMAT parquet, COMPRESSION ${codec})`);
  next += n;
}
conn.closeSync();
instance.closeSync();
process.stdout.write('event_id:string,user_id:int64,ts:timestamp,kind:string,country:string?,amount:decimal(12,2)?,score:float64,qty:int32,flag:bool?' +
  (nested ? ',attrs:struct<device:string?,os:string?,version:int32?>?,tags:list<string?>?' : '') + '\n');
