// icechecksum: the DuckDB side the two independent Iceberg readers share
// (tools/icebirdrows.mjs and tools/icewalkrows.mjs). Each reader resolves,
// by its own means, which data files every snapshot holds and which of
// their rows are deleted; this module reads the data files with DuckDB
// and gives each snapshot's rows and checksum, deletes applied, in the
// form tools/duckrows.mjs prints them:
//
//   {"rows":N,"checksum":"<32 hex digits>"}
//
// The checksum is duckrows' (see there): each row packed into a struct of
// its columns sorted by name, cast to text, hashed with DuckDB's hash(),
// the hashes summed exactly, in UTC. Without deletes, a snapshot's
// checksum is what `node tools/duckrows.mjs FILE...` (no --hive) prints
// for its data files, as long as all the table's data files have the same
// columns: the struct is built from the columns of every data file of
// every snapshot together (union_by_name), so after a column was added,
// an older snapshot's rows carry it as NULL here, and not in duckrows
// over that snapshot's files alone. Partition values are read from the
// files' own columns, never from folder names (no hive_partitioning).
//
// Every data file is read once, whatever the number of snapshots that
// hold it: each row's hash is kept with its file and position
// (file_row_number), and a snapshot's sums are those of its files' rows,
// minus the deleted positions.

import { DuckDBInstance, LIST, VARCHAR, listValue } from '@duckdb/node-api';

/** localPath is the local file a location names: file:///p and file:/p
 * (as Hadoop spells it) are /p, and a plain absolute path is itself, all
 * taken literally, never percent-decoded (see tools/icerows.mjs). */
export function localPath(loc) {
  const m = /^file:(?:\/\/)?(\/(?!\/).*)$/.exec(loc);
  if (m) return m[1];
  if (loc.startsWith('/')) return loc;
  throw new Error(`${loc}: not a local file location (file:///path)`);
}

const ident = (s) => '"' + s.replace(/"/g, '""') + '"';

/** checksumHex formats a sum of hashes as duckrows does. */
export function checksumHex(sum) {
  const mod = 1n << 128n;
  return (((BigInt(sum) % mod) + mod) % mod).toString(16).padStart(32, '0');
}

/**
 * Sums holds one DuckDB database with the tables the readers fill:
 *   data(snapshot VARCHAR, path VARCHAR, seq BIGINT)  a snapshot's live data files
 *   deleted(snapshot VARCHAR, path VARCHAR, pos BIGINT)  positions deleted in it
 *   snapshots(snapshot VARCHAR)  every snapshot, data or not
 * then readRows() reads every data file once and result() sums.
 */
export class Sums {
  static async open() {
    const s = new Sums();
    s.instance = await DuckDBInstance.create(':memory:');
    s.conn = await s.instance.connect();
    // As duckrows: TIMESTAMPTZ prints the same whatever the machine's zone.
    await s.conn.run(`SET TimeZone = 'UTC'; SET parquet_metadata_cache = true`);
    await s.conn.run(`
      CREATE TABLE snapshots(snapshot VARCHAR);
      CREATE TABLE data(snapshot VARCHAR, path VARCHAR, seq BIGINT);
      CREATE TABLE deleted(snapshot VARCHAR, path VARCHAR, pos BIGINT);
      CREATE TABLE files(path VARCHAR, local VARCHAR, record_count BIGINT);`);
    return s;
  }

  /** append adds rows (arrays of values: string, bigint or number) to a
   * table; numbers go in as BIGINT. */
  async append(table, rows) {
    if (rows.length === 0) return;
    const a = await this.conn.createAppender(table);
    for (const row of rows) {
      for (const v of row) {
        if (typeof v === 'string') a.appendVarchar(v);
        else if (v === null || v === undefined) a.appendNull();
        else a.appendBigInt(BigInt(v));
      }
      a.endRow();
    }
    a.flushSync();
    a.closeSync();
  }

  /** readRows reads every data file of the table data once (files maps
   * a path to its record_count from the manifests), keeps each row's
   * hash, and checks that each file holds record_count rows. */
  async readRows(files) {
    await this.append('files', [...files].map(([path, n]) => [path, localPath(path), n]));
    const locals = [...files.keys()].map(localPath);
    await this.conn.run(`CREATE TABLE rows(path VARCHAR, pos BIGINT, h UBIGINT)`);
    if (locals.length === 0) return;
    const params = [listValue(locals)];
    const types = [LIST(VARCHAR)];
    const source = `read_parquet($1, hive_partitioning=false, union_by_name=true)`;
    const desc = await this.conn.runAndReadAll(`DESCRIBE SELECT * FROM ${source}`, params, types);
    const cols = desc.getRowObjectsJS().map((r) => String(r.column_name));
    for (const c of ['filename', 'file_row_number']) {
      if (cols.includes(c)) throw new Error(`a data file has a column named ${c}, which DuckDB's read_parquet uses for itself`);
    }
    const sorted = [...cols].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const row = cols.length === 0
      ? `''`
      : `struct_pack(${sorted.map((c) => `${ident(c)} := ${ident(c)}`).join(', ')})::VARCHAR`;
    await this.conn.run(`
      INSERT INTO rows
      SELECT f.path, r.file_row_number, hash(${row})
        FROM read_parquet($1, hive_partitioning=false, union_by_name=true, filename=true, file_row_number=true) r
        JOIN files f ON f.local = r.filename`, params, types);
    const bad = await this.conn.runAndReadAll(`
      SELECT f.path, f.record_count, count(r.pos)
        FROM files f LEFT JOIN rows r USING (path)
       GROUP BY ALL HAVING count(r.pos) <> f.record_count LIMIT 1`);
    for (const [path, want, got] of bad.getRows()) {
      throw new Error(`${path}: ${got} rows, its manifest entry says ${want}`);
    }
  }

  /** result returns, for each snapshot, {rows, checksum} of its live
   * rows: its data files' rows but the deleted positions. A deleted
   * position that is no row of a live data file is an error. */
  async result() {
    const stray = await this.conn.runAndReadAll(`
      SELECT d.snapshot, d.path, d.pos FROM deleted d
       WHERE EXISTS (SELECT 1 FROM data x WHERE x.snapshot = d.snapshot AND x.path = d.path)
         AND NOT EXISTS (SELECT 1 FROM rows r WHERE r.path = d.path AND r.pos = d.pos)
       LIMIT 1`);
    for (const [snap, path, pos] of stray.getRows()) {
      throw new Error(`snapshot ${snap}: position ${pos} of ${path} is deleted, and the file has no such row`);
    }
    const res = await this.conn.runAndReadAll(`
      WITH del AS (SELECT DISTINCT snapshot, path, pos FROM deleted),
      live AS (
        SELECT x.snapshot, r.h
          FROM data x JOIN rows r ON r.path = x.path
          ANTI JOIN del d ON d.snapshot = x.snapshot AND d.path = r.path AND d.pos = r.pos)
      SELECT s.snapshot, count(l.h), coalesce(sum(l.h), 0)::HUGEINT::VARCHAR
        FROM snapshots s LEFT JOIN live l USING (snapshot)
       GROUP BY s.snapshot`);
    const out = new Map();
    for (const [snap, n, sum] of res.getRows()) {
      out.set(String(snap), { rows: Number(n), checksum: checksumHex(sum) });
    }
    return out;
  }

  close() {
    this.conn.closeSync();
    this.instance.closeSync();
  }
}
