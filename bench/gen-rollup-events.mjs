#!/usr/bin/env node
// gen-rollup-events: writes the input of bench/rollup.sh, subscribe (+1)
// and unsubscribe (-1) events of mailing lists in many small Parquet files,
// Hive layout, written by DuckDB (a separate engine, not sluice):
//
//   OUT/date=2024-01-02/part-<tag>-<n>.parquet ...     list_id, ts, tally
//
// Day index d is the date 2024-01-01 + d; day 0 is the snapshot day and
// events are generated for days FROM..TO, PER_DAY events a day in FILES
// files a day. list_id is skewed: list_id = floor(LISTS * u^3) for u
// uniform in [0, 1), so a few lists get most events and the last ones a
// dozen a day at the default sizes; tally is +1 on three events in five
// and -1 on the others. TAG names the batch: files of another tag are
// other files with other values (late events for a day already written).
// The data is a function of (TAG, day, row) only (no random()).
//
// With --snapshot FILE it also writes the snapshot: lists 0 .. 0.9*LISTS-1
// (the last tenth appear only in the events) with a base count
// `subscribers` and `date` = day 0.
//
// Usage: node bench/gen-rollup-events.mjs OUT PER_DAY FROM TO FILES LISTS [TAG] [--snapshot FILE]
// The events table's schema is printed to stdout:
//   list_id:int64,ts:timestamp,tally:int32

import { mkdirSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { DuckDBInstance } = await import(require.resolve('@duckdb/node-api', {
  paths: [resolve(new URL('.', import.meta.url).pathname, '../tools')],
}));

const args = process.argv.slice(2);
let snapshot = null;
const si = args.indexOf('--snapshot');
if (si >= 0) {
  snapshot = resolve(args[si + 1] ?? '');
  args.splice(si, 2);
}
const [outArg, perDayArg, fromArg, toArg, filesArg, listsArg, tagArg] = args;
const perDay = Number(perDayArg), from = Number(fromArg), to = Number(toArg);
const files = Number(filesArg), lists = Number(listsArg), tag = Number(tagArg ?? 0);
if (!outArg || !(perDay > 0 && from >= 1 && to >= from && files > 0 && lists > 0 && tag >= 0)) {
  process.stderr.write('usage: node bench/gen-rollup-events.mjs OUT PER_DAY FROM TO FILES LISTS [TAG] [--snapshot FILE]\n');
  process.exit(2);
}
const out = resolve(outArg);

const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
await conn.run(`SET TimeZone = 'UTC'; SET threads = 2`);

const date = (d) => new Date(Date.UTC(2024, 0, 1 + d)).toISOString().slice(0, 10);
const perFile = Math.floor(perDay / files);
for (let d = from; d <= to; d++) {
  const dir = join(out, `date=${date(d)}`);
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
  const dayStart = Date.UTC(2024, 0, 1 + d) * 1000; // micros
  let next = 0;
  for (let f = 0; f < files; f++) {
    const n = f === files - 1 ? perDay - next : perFile;
    // i: the event's number, unique over (tag, day, row).
    const base = (tag * 1000 + d) * 1e9 + next;
    const path = join(dir, `part-${String(tag).padStart(3, '0')}-${String(f).padStart(5, '0')}.parquet`);
    await conn.run(`COPY (
      SELECT
        floor(${lists} * pow((hash(i) % 1000000)::DOUBLE / 1e6, 3))::BIGINT AS list_id,
        make_timestamp(${dayStart}::BIGINT + (hash(i * 7) % 86400000000)::BIGINT)::TIMESTAMPTZ AS ts,
        CASE WHEN hash(i * 3) % 5 < 3 THEN 1 ELSE -1 END::INTEGER AS tally
      FROM range(${base}::BIGINT, ${base + n}::BIGINT) t(i)
    ) TO '${path}' (FORMAT parquet, COMPRESSION zstd)`);
    next += n;
  }
}
if (snapshot) {
  await conn.run(`COPY (
    SELECT i::BIGINT AS list_id, (1000 + hash(i * 11) % 100000)::BIGINT AS subscribers, DATE '${date(0)}' AS date
    FROM range(0, ${Math.floor(lists * 0.9)}) t(i)
  ) TO '${snapshot}' (FORMAT parquet, COMPRESSION zstd)`);
}
conn.closeSync();
instance.closeSync();
process.stdout.write('list_id:int64,ts:timestamp,tally:int32\n');
