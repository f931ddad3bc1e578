#!/usr/bin/env node
// duckcopy: the benchmark peer. Rewrites Parquet files with DuckDB, as sluice
// compact/ingest would, so benchmarks can put sluice's time beside another
// engine's on the same machine and the same input. Prints ONE JSON line:
//
//   {"seconds":S,"rows":N}
//
// where S is the wall time of the COPY statement alone (not node's start-up).
//
// Usage:
//   node tools/duckcopy.mjs --from GLOB [--from GLOB...] [--list FILE] --to DIR
//                           [--partition-by col[,col]] [--hive] [--overwrite]
//
//   --from GLOB          input files (a path or glob; may repeat)
//   --list FILE          more inputs, one a line ("-" = stdin)
//   --to DIR             output folder; created if missing. Without
//                        --partition-by the output is DIR/data_0.parquet.
//   --partition-by COLS  Hive-style DIR/col=value/ folders; the partition
//                        columns are not written into the files (as Spark)
//   --hive               read key=value folder names of the inputs as columns
//   --overwrite          replace what DIR holds (else DIR must be empty)
//
// The statement run is
//   COPY (SELECT * FROM read_parquet([...], union_by_name=true)) TO DIR
//        (FORMAT parquet, COMPRESSION zstd [, PARTITION_BY (cols)])
// Note that DuckDB's COPY never fsyncs, so its times include no durability.
//
// Exit status: 0 on success, 1 on failure (one line on stderr), 2 on a usage
// error.

import { mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DuckDBInstance, LIST, VARCHAR, listValue } from '@duckdb/node-api';

const USAGE =
  'usage: node tools/duckcopy.mjs --from GLOB [--list FILE] --to DIR [--partition-by col] [--hive] [--overwrite]';

function fail(msg, code = 1) {
  process.stderr.write(`duckcopy: ${String(msg).split('\n')[0]}\n`);
  process.exit(code);
}

function parseArgs(argv) {
  const opts = { from: [], to: null, partitionBy: [], hive: false, overwrite: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const eq = a.indexOf('=');
    const name = a.startsWith('--') && eq >= 0 ? a.slice(0, eq) : a;
    const value = () => {
      if (eq >= 0 && a.startsWith('--')) return a.slice(eq + 1);
      if (i + 1 >= argv.length) fail(`${name} needs a value`, 2);
      return argv[++i];
    };
    switch (name) {
      case '--from':
        opts.from.push(value());
        break;
      case '--list': {
        const f = value();
        let text;
        try {
          text = readFileSync(f === '-' ? 0 : f, 'utf8');
        } catch (e) {
          fail(`--list ${f}: ${e.message}`);
        }
        for (const line of text.split('\n')) {
          const p = line.replace(/\r$/, '');
          if (p.trim() !== '') opts.from.push(p);
        }
        break;
      }
      case '--to':
        opts.to = value();
        break;
      case '--partition-by':
        opts.partitionBy = value()
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '');
        break;
      case '--hive':
        opts.hive = true;
        break;
      case '--overwrite':
        opts.overwrite = true;
        break;
      case '--help':
        process.stdout.write(USAGE + '\n');
        process.exit(0);
        break;
      default:
        fail(`unexpected argument ${a}; ${USAGE}`, 2);
    }
  }
  if (opts.from.length === 0) fail(`--from is required; ${USAGE}`, 2);
  if (!opts.to) fail(`--to is required; ${USAGE}`, 2);
  return opts;
}

const ident = (s) => '"' + s.replace(/"/g, '""') + '"';
const literal = (s) => "'" + s.replace(/'/g, "''") + "'";

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const dir = resolve(opts.to);
  if (opts.overwrite) rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  if (readdirSync(dir).length > 0) fail(`--to ${dir} is not empty (use --overwrite)`);

  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  await conn.run(`SET TimeZone = 'UTC'; SET parquet_metadata_cache = true`);

  const source =
    `read_parquet($1, hive_partitioning=${opts.hive}, union_by_name=true)`;
  const target = opts.partitionBy.length > 0 ? dir : join(dir, 'data_0.parquet');
  const options = ['FORMAT parquet', 'COMPRESSION zstd'];
  if (opts.partitionBy.length > 0) {
    options.push(`PARTITION_BY (${opts.partitionBy.map(ident).join(', ')})`);
  }
  const sql = `COPY (SELECT * FROM ${source}) TO ${literal(target)} (${options.join(', ')})`;

  const start = process.hrtime.bigint();
  const res = await conn.runAndReadAll(sql, [listValue(opts.from)], [LIST(VARCHAR)]);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const rows = res.getRows()[0]?.[0];

  process.stdout.write(JSON.stringify({
    seconds: Math.round(seconds * 1e6) / 1e6,
    rows: rows === undefined ? null : Number(rows),
  }) + '\n');
  conn.closeSync();
  instance.closeSync();
}

main().catch((e) => fail(e && e.message ? e.message : e));
