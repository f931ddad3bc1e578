#!/usr/bin/env node
// duckquery: run SQL in DuckDB, the independent engine tests compare
// against, and print the last statement's rows, one a line, the values
// tab-separated as DuckDB casts them to text, NULL as "NULL".
//
// Usage: node tools/duckquery.mjs < query.sql
//
// The session's TimeZone is UTC unless the SQL sets it.
// Exit status: 0 on success, 1 on failure (one line on stderr).

import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

function fail(msg) {
  process.stderr.write(`duckquery: ${String(msg).split('\n')[0]}\n`);
  process.exit(1);
}

async function main() {
  const sql = readFileSync(0, 'utf8');
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  await conn.run(`SET TimeZone = 'UTC'`);
  const statements = sql.split(/;\s*\n/).map((s) => s.trim()).filter((s) => s !== '');
  let res;
  for (const s of statements) res = await conn.runAndReadAll(s);
  const out = [];
  for (const row of res.getRows()) {
    out.push(row.map((v) => (v === null ? 'NULL' : String(v))).join('\t'));
  }
  process.stdout.write(out.join('\n') + (out.length ? '\n' : ''));
}

main().catch((e) => fail(e.message ?? e));
