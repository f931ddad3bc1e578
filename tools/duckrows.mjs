#!/usr/bin/env node
// duckrows: the independent reader. Go tests and benchmarks use it to check
// that what sluice wrote reads back, through another engine (DuckDB), as the
// same rows: it prints ONE JSON line
//
//   {"rows":N,"checksum":"<32 hex digits>","columns":["name:TYPE",...]}
//
// Usage:
//   node tools/duckrows.mjs [--hive] [--columns a,b] [--list FILE] FILE_OR_GLOB...
//
//   --hive         read key=value folder names as columns (hive_partitioning)
//   --columns a,b  only these columns, in this order
//   --list FILE    read paths (or globs) from FILE, one a line ("-" = stdin);
//                  may repeat, and may be mixed with paths on the command line.
//                  Lists that are all empty mean an empty table: rows 0,
//                  checksum all zeros, columns [].
//
// The checksum is order-independent: every row is packed into a struct whose
// fields are the columns sorted by name, the struct is cast to text, hashed
// with DuckDB's 64-bit hash(), and the hashes are summed exactly (HUGEINT).
// A sum, unlike XOR, keeps duplicate rows from cancelling out. Neither the
// order of the files, the order of rows within them, nor the order of the
// columns inside each file changes it; any change of a value, of a column
// name, or of a type that prints differently (TIMESTAMP vs TIMESTAMPTZ, INT vs
// DECIMAL) does. Compare "columns" too when types matter.
//
// Exit status: 0 on success, 1 on failure (one line on stderr), 2 on a usage
// error.

import { readFileSync } from 'node:fs';
import { DuckDBInstance, LIST, VARCHAR, listValue } from '@duckdb/node-api';

const USAGE =
  'usage: node tools/duckrows.mjs [--hive] [--columns a,b] [--list FILE] FILE_OR_GLOB...';

function fail(msg, code = 1) {
  process.stderr.write(`duckrows: ${String(msg).split('\n')[0]}\n`);
  process.exit(code);
}

function parseArgs(argv) {
  const opts = { hive: false, columns: null, paths: [], listed: false };
  let rest = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (rest || !a.startsWith('--')) {
      opts.paths.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq >= 0 ? a.slice(0, eq) : a;
    const value = () => {
      if (eq >= 0) return a.slice(eq + 1);
      if (i + 1 >= argv.length) fail(`${name} needs a value`, 2);
      return argv[++i];
    };
    switch (name) {
      case '--':
        rest = true;
        break;
      case '--hive':
        opts.hive = true;
        break;
      case '--columns':
        opts.columns = value()
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '');
        if (opts.columns.length === 0) fail('--columns is empty', 2);
        break;
      case '--list': {
        opts.listed = true;
        const f = value();
        let text;
        try {
          text = readFileSync(f === '-' ? 0 : f, 'utf8');
        } catch (e) {
          fail(`--list ${f}: ${e.message}`);
        }
        for (const line of text.split('\n')) {
          const p = line.replace(/\r$/, '');
          if (p.trim() !== '') opts.paths.push(p);
        }
        break;
      }
      case '--help':
        process.stdout.write(USAGE + '\n');
        process.exit(0);
        break;
      default:
        fail(`unknown flag ${name}; ${USAGE}`, 2);
    }
  }
  if (opts.paths.length === 0 && !opts.listed) fail(`no files given; ${USAGE}`, 2);
  return opts;
}

const ident = (s) => '"' + s.replace(/"/g, '""') + '"';

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.paths.length === 0) {
    // An empty --list is an empty table (no live files): no rows, and no
    // columns to name, since there is no file to read them from.
    process.stdout.write(JSON.stringify({ rows: 0, checksum: '0'.repeat(32), columns: [] }) + '\n');
    return;
  }
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  // Set here, not at instance creation, where DuckDB would try to autoload
  // the (built-in) extensions that own these settings, and fail offline.
  // TIMESTAMPTZ values print the same whatever the machine's zone; the
  // footers read while binding (union_by_name reads every file's schema) are
  // reused when the files are scanned.
  await conn.run(`SET TimeZone = 'UTC'; SET parquet_metadata_cache = true`);

  // The file list is bound as one LIST(VARCHAR) parameter rather than spliced
  // into the SQL text: 100k paths stay cheap to pass and need no quoting.
  const files = [listValue(opts.paths)];
  const types = [LIST(VARCHAR)];
  const source =
    `read_parquet($1, hive_partitioning=${opts.hive}, union_by_name=true)`;
  const select = opts.columns ? opts.columns.map(ident).join(', ') : '*';

  const desc = await conn.runAndReadAll(
    `DESCRIBE SELECT ${select} FROM ${source}`, files, types);
  const cols = desc.getRowObjectsJS().map((r) => ({
    name: String(r.column_name),
    type: String(r.column_type),
  }));

  const sorted = [...cols].sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const row = cols.length === 0
    ? `''`
    : `struct_pack(${sorted.map((c) => `${ident(c.name)} := ${ident(c.name)}`).join(', ')})::VARCHAR`;
  const res = await conn.runAndReadAll(
    `SELECT count(*) AS n, coalesce(sum(hash(${row})), 0)::HUGEINT AS s
       FROM (SELECT ${select} FROM ${source})`, files, types);
  const [n, s] = res.getRows()[0];

  const mod = 1n << 128n;
  const checksum = (((BigInt(s) % mod) + mod) % mod).toString(16).padStart(32, '0');
  process.stdout.write(JSON.stringify({
    rows: Number(n),
    checksum,
    columns: cols.map((c) => `${c.name}:${c.type}`),
  }) + '\n');
  conn.closeSync();
  instance.closeSync();
}

main().catch((e) => fail(e && e.message ? e.message : e));
