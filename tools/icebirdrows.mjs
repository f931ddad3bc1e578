#!/usr/bin/env node
// icebirdrows: every snapshot of an Iceberg table as icebird (pure
// JavaScript, on hyparquet; not iceberg-go) reads it, position deletes
// applied, with the rows' checksum. tools/icerows.mjs prints the data
// files icebird resolves and a checksum of those files whole, which is
// right for tables without deletes; this reader is for tables with merge-on-
// read deletes. It prints ONE JSON line per snapshot, oldest first:
//
//   {"snapshot_id":"N","sequence_number":N,"operation":"delete",
//    "data_files":N,"position_delete_files":N,"rows":N,"checksum":"<hex>",
//    "icebird_rows":N|null}
//
// Usage:
//   node tools/icebirdrows.mjs [--decode all|current|none] METADATA_JSON_URL
//
//   METADATA_JSON_URL  file:///.../metadata/00003-<uuid>.metadata.json, or
//                      a local path
//   --decode WHICH     the snapshots icebird decodes every row of, to check
//                      its count (icebird_rows): all (the default), the
//                      current one only, or none (icebird_rows null).
//                      Decoding is what takes time on large tables.
//
// For each snapshot, icebird resolves the live data and delete files
// (icebergManifests: manifest list, manifests, entry status) and reads the
// Parquet position delete files into its map of deleted positions per data
// file (fetchDeleteMaps, what icebergRead applies). DuckDB then reads the
// data files and gives rows and checksum over the rows icebird's map does
// not delete, in duckrows' form (tools/icechecksum.mjs). icebird_rows is
// the number of rows icebird's own icebergRead decodes for the snapshot,
// deletes applied by icebird; it must equal rows, or the reader fails.
//
// What icebird 0.3.1 does with deletes: icebergRead applies Parquet
// position delete files (and equality delete files), but ignores
// sequence numbers for position deletes: every live position delete
// applies to the data file it names (the spec applies it only to data
// files whose data sequence number is at or below the delete's; both agree
// unless a data file is added again, under the same path, after a delete
// that names it). It cannot read deletion vectors (format version 3,
// Puffin): they are decoded here instead (tools/icedv.mjs, from the spec's
// deletion-vector-v1 layout), applied on the spec's sequence number
// condition, and icebird_rows is null for a snapshot that has any,
// since icebergRead would fail on them. Equality deletes fail here.
//
// icebird 0.3.1 reads Avro deflate blocks with a gzip decoder:
// icebird-inflate.mjs gives it raw inflate. file:// URLs are served to
// icebird's fetch by a shim with Range requests, taken literally (see
// tools/icerows.mjs). Only local tables.
//
// Exit status: 0 on success, 1 on failure (one line on stderr), 2 on a usage
// error.
import { register } from 'node:module';
import { fileResponse } from './filefetch.mjs';
import { readFileSync } from 'node:fs';
import { Sums, localPath } from './icechecksum.mjs';
import { decodeDV } from './icedv.mjs';

register('./icebird-inflate.mjs', import.meta.url);

function fail(msg, code = 1) {
  process.stderr.write(`icebirdrows: ${String(msg).split('\n')[0]}\n`);
  process.exit(code);
}

const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  const url = String(input instanceof Request ? input.url : input);
  if (!url.startsWith('file:')) return realFetch(input, init);
  return fileResponse(localPath(url), init);
};

const { icebergManifests, icebergRead } = await import('icebird');
const { splitManifestEntries } = await import('icebird/src/manifest.js');
const { fetchDeleteMaps } = await import('icebird/src/fetch.js');

const USAGE = 'usage: node tools/icebirdrows.mjs [--decode all|current|none] METADATA_JSON_URL';
const args = process.argv.slice(2);
let decode = 'all';
const rest = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--decode' || a.startsWith('--decode=')) {
    decode = a.includes('=') ? a.slice(a.indexOf('=') + 1) : args[++i];
    if (!['all', 'current', 'none'].includes(decode)) fail(`--decode ${decode}: want all, current or none; ${USAGE}`, 2);
  } else if (a.startsWith('--')) {
    fail(`unknown flag ${a}; ${USAGE}`, 2);
  } else {
    rest.push(a);
  }
}
if (rest.length !== 1) fail(USAGE, 2);
const metaURL = rest[0];

async function main() {
  // Snapshot ids are 64-bit: quote them before JSON.parse rounds them.
  const text = readFileSync(localPath(metaURL), 'utf8').replace(
    /"(snapshot-id|parent-snapshot-id|current-snapshot-id)"\s*:\s*(-?\d+)/g, '"$1":"$2"');
  const metadata = JSON.parse(text);
  const snaps = [...(metadata.snapshots ?? [])].sort((a, b) => Number(a['sequence-number'] ?? 0) - Number(b['sequence-number'] ?? 0));

  const sums = await Sums.open();
  try {
    const files = new Map();
    const data = [];
    const deleted = [];
    const out = [];
    for (const snap of snaps) {
      const id = snap['snapshot-id'];
      const m = { ...metadata, 'current-snapshot-id': id };
      const { dataEntries, deleteEntries } = splitManifestEntries(await icebergManifests(m));
      const seqOf = new Map();
      for (const e of dataEntries) {
        const f = e.data_file;
        files.set(f.file_path, Number(f.record_count));
        seqOf.set(f.file_path, e.sequence_number);
        data.push([id, f.file_path, 0]);
      }
      const puffin = deleteEntries.filter((e) => String(e.data_file.file_format).toUpperCase() === 'PUFFIN');
      const parquet = deleteEntries.filter((e) => String(e.data_file.file_format).toUpperCase() !== 'PUFFIN');
      const { positionDeletesMap, equalityDeletesMap } = await fetchDeleteMaps(parquet);
      if (equalityDeletesMap.size > 0) throw new Error(`snapshot ${id}: equality deletes: not supported`);
      for (const [path, positions] of positionDeletesMap) {
        if (!seqOf.has(path)) continue;
        for (const pos of positions) deleted.push([id, path, pos]);
      }
      for (const e of puffin) {
        const f = e.data_file;
        const ref = f.referenced_data_file;
        const seq = seqOf.get(ref);
        if (seq === undefined || BigInt(seq ?? 0) > BigInt(e.sequence_number ?? 0)) continue;
        for (const pos of decodeDV(f.file_path, Number(f.content_offset), Number(f.content_size_in_bytes))) {
          deleted.push([id, ref, pos]);
        }
      }
      let icebirdRows = null;
      const decodeThis = decode === 'all' || (decode === 'current' && id === metadata['current-snapshot-id']);
      if (decodeThis && puffin.length === 0) {
        icebirdRows = dataEntries.length === 0 ? 0 : (await icebergRead({ tableUrl: metadata.location, metadata: m })).length;
      }
      out.push({
        snapshot_id: String(id),
        sequence_number: Number(snap['sequence-number'] ?? 0),
        operation: snap.summary?.operation,
        data_files: dataEntries.length,
        position_delete_files: deleteEntries.length,
        icebird_rows: icebirdRows,
      });
    }
    await sums.append('snapshots', snaps.map((s) => [String(s['snapshot-id'])]));
    await sums.append('data', data);
    await sums.append('deleted', deleted);
    await sums.readRows(files);
    const res = await sums.result();
    for (const o of out) {
      const r = res.get(o.snapshot_id);
      if (o.icebird_rows !== null && o.icebird_rows !== r.rows) {
        throw new Error(`snapshot ${o.snapshot_id}: icebird decodes ${o.icebird_rows} rows, DuckDB reads ${r.rows} once icebird's deletes are applied`);
      }
      const { icebird_rows, ...head } = o;
      process.stdout.write(JSON.stringify({ ...head, rows: r.rows, checksum: r.checksum, icebird_rows }) + '\n');
    }
  } finally {
    sums.close();
  }
}

main().catch((e) => fail(e?.message ?? e));
