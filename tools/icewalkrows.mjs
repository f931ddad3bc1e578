#!/usr/bin/env node
// icewalkrows: the rows of every snapshot that tools/iceberg_walk.py
// resolved, read with DuckDB, position deletes applied. It reads the walk's
// JSON lines (one per snapshot) and prints ONE JSON line per snapshot, in
// the same order:
//
//   {"snapshot_id":"N","sequence_number":N,"operation":"append",
//    "data_files":N,"position_delete_files":N,"rows":N,"checksum":"<hex>"}
//
// rows and checksum are those of duckrows (tools/duckrows.mjs; see
// tools/icechecksum.mjs for what they cover), over the snapshot's live
// rows: its data files' rows but those its live position deletes delete.
//
// Usage:
//   python3 tools/iceberg_walk.py METADATA_JSON | node tools/icewalkrows.mjs -
//   node tools/icewalkrows.mjs WALK_JSONL
//
// Deletes, as the Iceberg spec's "Scan Planning" has them for format
// versions 2 and 3:
//   - a position delete file (Parquet, columns file_path and pos) deletes
//     row pos (0-based, in file order) of the data file file_path, for a
//     data file of the snapshot whose data sequence number is at or below
//     the delete file's; its rows are read here with DuckDB;
//   - a deletion vector (a Puffin blob the walk decoded into positions)
//     deletes those positions of its referenced data file, on the same
//     sequence number condition;
//   - equality delete files are not supported: the snapshot fails.
// A delete naming a position past the end of a live data file is an
// error, as is a data file holding another number of rows than its
// manifest entry says.
//
// Exit status: 0 on success, 1 on failure (one line on stderr), 2 on a usage
// error.
import { readFileSync } from 'node:fs';
import { LIST, VARCHAR, listValue } from '@duckdb/node-api';
import { Sums, localPath } from './icechecksum.mjs';

function fail(msg, code = 1) {
  process.stderr.write(`icewalkrows: ${String(msg).split('\n')[0]}\n`);
  process.exit(code);
}

const args = process.argv.slice(2);
if (args.length !== 1 || (args[0].startsWith('-') && args[0] !== '-')) {
  fail('usage: python3 tools/iceberg_walk.py METADATA_JSON | node tools/icewalkrows.mjs - (or: node tools/icewalkrows.mjs WALK_JSONL)', 2);
}

async function main() {
  let text;
  try {
    text = readFileSync(args[0] === '-' ? 0 : args[0], 'utf8');
  } catch (e) {
    throw new Error(`${args[0]}: ${e.message}`);
  }
  const snaps = text.split('\n').filter((l) => l.trim() !== '').map((l, i) => {
    try {
      return JSON.parse(l);
    } catch (e) {
      throw new Error(`line ${i + 1} of the walk: ${e.message}`);
    }
  });

  const sums = await Sums.open();
  try {
    const files = new Map(); // data file path -> record_count
    const delFiles = new Set(); // Parquet position delete files
    const data = [];
    const snapDeletes = []; // [snapshot, delete file, seq]
    const dvDeleted = [];
    for (const s of snaps) {
      const id = s.snapshot_id;
      if (typeof id !== 'string') throw new Error('the walk printed a snapshot id that is no string');
      if ((s.equality_delete_files ?? []).length > 0) {
        throw new Error(`snapshot ${id}: equality delete files (${s.equality_delete_files[0].path}): not supported`);
      }
      const seqOf = new Map();
      for (const f of s.data_files) {
        if ((f.file_format ?? 'PARQUET').toUpperCase() !== 'PARQUET') {
          throw new Error(`snapshot ${id}: data file ${f.path} is ${f.file_format}: only Parquet is read`);
        }
        files.set(f.path, f.record_count);
        seqOf.set(f.path, f.data_sequence_number);
        data.push([id, f.path, f.data_sequence_number]);
      }
      for (const d of s.position_delete_files) {
        const format = (d.file_format ?? '').toUpperCase();
        if (format === 'PUFFIN') {
          const seq = seqOf.get(d.referenced_data_file);
          if (seq === undefined || seq > d.data_sequence_number) continue;
          for (const pos of d.positions) dvDeleted.push([id, d.referenced_data_file, pos]);
        } else if (format === 'PARQUET') {
          delFiles.add(d.path);
          snapDeletes.push([id, d.path, d.data_sequence_number]);
        } else {
          throw new Error(`snapshot ${id}: position delete file ${d.path} is ${d.file_format}`);
        }
      }
    }
    await sums.append('snapshots', snaps.map((s) => [s.snapshot_id]));
    await sums.append('data', data);
    await sums.append('deleted', dvDeleted);

    // The Parquet position delete files, each read once.
    const c = sums.conn;
    await c.run(`
      CREATE TABLE delfiles(path VARCHAR, local VARCHAR);
      CREATE TABLE snapdel(snapshot VARCHAR, path VARCHAR, seq BIGINT);
      CREATE TABLE posdel(delfile VARCHAR, file_path VARCHAR, pos BIGINT);`);
    await sums.append('delfiles', [...delFiles].map((p) => [p, localPath(p)]));
    await sums.append('snapdel', snapDeletes);
    if (delFiles.size > 0) {
      await c.run(`
        INSERT INTO posdel
        SELECT f.path, r.file_path, r.pos
          FROM read_parquet($1, filename=true) r JOIN delfiles f ON f.local = r.filename`,
      [listValue([...delFiles].map(localPath))], [LIST(VARCHAR)]);
      await c.run(`
        INSERT INTO deleted
        SELECT sd.snapshot, p.file_path, p.pos
          FROM snapdel sd
          JOIN posdel p ON p.delfile = sd.path
          JOIN data x ON x.snapshot = sd.snapshot AND x.path = p.file_path AND x.seq <= sd.seq`);
    }

    await sums.readRows(files);
    const res = await sums.result();
    for (const s of snaps) {
      const r = res.get(s.snapshot_id);
      process.stdout.write(JSON.stringify({
        snapshot_id: s.snapshot_id,
        sequence_number: s.sequence_number,
        operation: s.operation,
        data_files: s.data_files.length,
        position_delete_files: s.position_delete_files.length,
        rows: r.rows,
        checksum: r.checksum,
      }) + '\n');
    }
  } finally {
    sums.close();
  }
}

main().catch((e) => fail(e?.message ?? e));
