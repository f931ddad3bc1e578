#!/usr/bin/env node
// duckrollup: the DuckDB side of bench/rollup.sh. The rollup as warehouses
// write it, in SQL: the snapshot union the deltas after its day, a group by
// (list, day), a date spine crossed with every key, and a window sum
// (ROWS UNBOUNDED PRECEDING) over days; written as Parquet partitioned by
// date (the date column kept in the files, as sluice's output has it).
// Prints {"seconds":S,"rows":N}: the wall time of the COPY statement alone.
//
// The event day is make_timestamp(epoch_us(ts))::DATE, the UTC day without
// ICU, which LIBRARIES.md measured as the fast form.
//
// Usage: node bench/duckrollup.mjs SNAPSHOT.parquet 'EVENTS/*/*.parquet' OUT

import { rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { DuckDBInstance } = await import(require.resolve('@duckdb/node-api', {
  paths: [resolve(new URL('.', import.meta.url).pathname, '../tools')],
}));

const [snapArg, eventsArg, outArg] = process.argv.slice(2);
if (!snapArg || !eventsArg || !outArg) {
  process.stderr.write("usage: node bench/duckrollup.mjs SNAPSHOT.parquet 'EVENTS/*/*.parquet' OUT\n");
  process.exit(2);
}
const lit = (s) => "'" + s.replace(/'/g, "''") + "'";
const out = resolve(outArg);
rmSync(out, { recursive: true, force: true });

const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
await conn.run(`SET TimeZone = 'UTC'`);
const sql = `COPY (
WITH snap AS (SELECT list_id, subscribers AS base, date AS sday FROM read_parquet(${lit(resolve(snapArg))})),
d0 AS (SELECT min(sday) AS d0 FROM snap),
daily AS (
  SELECT list_id, make_timestamp(epoch_us(ts))::DATE AS day, sum(tally) AS delta
  FROM read_parquet(${lit(eventsArg)}, hive_partitioning = false)
  WHERE make_timestamp(epoch_us(ts))::DATE > (SELECT d0 FROM d0)
  GROUP BY ALL),
keys AS (SELECT list_id FROM snap UNION SELECT list_id FROM daily),
spine AS (SELECT range::DATE AS day FROM range((SELECT d0 FROM d0),
  greatest((SELECT max(day) FROM daily), (SELECT d0 FROM d0)) + INTERVAL 1 DAY, INTERVAL 1 DAY))
SELECT k.list_id, s.day AS date,
  (coalesce(sn.base, 0) + sum(coalesce(d.delta, 0)) OVER (PARTITION BY k.list_id ORDER BY s.day ROWS UNBOUNDED PRECEDING))::BIGINT AS subscribers
FROM keys k CROSS JOIN spine s
LEFT JOIN daily d ON d.list_id = k.list_id AND d.day = s.day
LEFT JOIN snap sn ON sn.list_id = k.list_id
) TO ${lit(out)} (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (date), WRITE_PARTITION_COLUMNS true)`;
const start = process.hrtime.bigint();
const res = await conn.runAndReadAll(sql);
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const rows = Number(res.getRows()[0][0]);
process.stdout.write(JSON.stringify({ seconds: Math.round(seconds * 1e6) / 1e6, rows }) + '\n');
conn.closeSync();
instance.closeSync();
