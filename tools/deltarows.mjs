#!/usr/bin/env node
// deltarows: the independent Delta Lake reader. Go tests use it to check
// sluice's own Delta log reader: it replays TABLE_DIR/_delta_log by the Delta
// protocol (PROTOCOL.md of delta-io/delta: Delta Log Entries, Checkpoints,
// Sidecar Files, Last Checkpoint File, Action Reconciliation), written from
// that text and not from sluice's Go code, reads the live files with DuckDB,
// and prints ONE JSON line
//
//   {"version":V,"checkpoint":CV|null,"protocol":{...},"partitionColumns":[..],
//    "configuration":{..},"schema":{..},"files":[{"path","partitionValues",
//    "size","numRecords","deletionVector"?}..],"rows":N,"checksum":"<32 hex>"}
//
// Usage:
//   node tools/deltarows.mjs [--version N] [--files-only] [--as-stored] TABLE_DIR
//
//   --version N    the table as of version N (default: the newest found)
//   --files-only   replay the log only: no rows, no checksum
//   --as-stored    hash each column as DuckDB reads it from the files, not
//                  as the table's type (a timestamp stored as INT96 then
//                  hashes otherwise than the same instant stored as INT64)
//
// The checkpoint is chosen by listing _delta_log (the newest complete one at
// or below the version); _last_checkpoint is only a hint and is not read. The
// commits after it must all be there, up to the version. "files" are the
// live logical files, sorted by path (UTF-8 byte order): a relative path is
// given decoded (decodeURIComponent: '+' stays '+'), a file: URI or an
// absolute path as a local path. numRecords comes from the add's stats.
// "rows" and "checksum" are over the columns stored in the files (partition
// columns not added), with duckrows.mjs's order-independent checksum, each
// top-level timestamp column read as the instant the table's type says it is
// (TIMESTAMP WITH TIME ZONE) unless --as-stored. A table
// with a deletion vector on a live file, or with column mapping, is not read:
// "rows" and "checksum" are null and "unreadable" says why.
//
// Exit status: 0 on success, 1 on failure (one line on stderr), 2 on a usage
// error.

import { existsSync, readFileSync, readdirSync, mkdtempSync, symlinkSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { parseArgs as parseArgv } from 'node:util';
import { DuckDBInstance, LIST, VARCHAR, listValue } from '@duckdb/node-api';

const USAGE = 'usage: node tools/deltarows.mjs [--version N] [--files-only] [--as-stored] TABLE_DIR';

// A folder of symlinks, made only when needed (see literalPaths).
let linkDir = null;

function fail(msg, code = 1) {
  if (linkDir !== null) rmSync(linkDir, { recursive: true, force: true });
  process.stderr.write(`deltarows: ${String(msg).split('\n')[0]}\n`);
  process.exit(code);
}

function parseArgs(args) {
  const options = {
    version: { type: 'string' }, 'files-only': { type: 'boolean' }, 'as-stored': { type: 'boolean' }, help: { type: 'boolean' },
  };
  let a;
  try {
    a = parseArgv({ args, options, allowPositionals: true });
  } catch (e) {
    fail(`${e.message}; ${USAGE}`, 2);
  }
  if (a.values.help) {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  const v = a.values.version;
  if (v !== undefined && !/^\d+$/.test(v)) fail(`--version needs a number; ${USAGE}`, 2);
  if (a.positionals.length !== 1) fail(`give one TABLE_DIR; ${USAGE}`, 2);
  const version = v === undefined ? null : Number(v);
  return {
    version, filesOnly: a.values['files-only'] === true, asStored: a.values['as-stored'] === true, dir: a.positionals[0],
  };
}

const pad20 = (v) => String(v).padStart(20, '0');
const ident = (s) => '"' + s.replace(/"/g, '""') + '"';
// Every parquet read goes through this, the file list bound as $1.
const SRC = 'read_parquet($1, union_by_name=true, hive_partitioning=false)';

// listLog sorts the names in _delta_log into commits (version -> file) and
// complete checkpoints (version -> list of files). Log compaction files,
// .crc files and anything else are ignored.
// (Read errors are left to main's catch: Node's message names the path.)
function listLog(logDir) {
  const names = readdirSync(logDir);
  const commits = new Map();
  const checkpoints = new Map();
  const multi = new Map(); // "version/p" -> names of the parts found
  const uuid = /^(\d{20})\.checkpoint\.[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\.(json|parquet)$/i;
  for (const n of names.sort()) {
    let m;
    if ((m = /^(\d{20})\.json$/.exec(n))) commits.set(Number(m[1]), n);
    // Classic, or V2 UUID-named: one file. Any of several at a version will do.
    else if ((m = /^(\d{20})\.checkpoint\.parquet$/.exec(n) || uuid.exec(n))) {
      checkpoints.set(Number(m[1]), [n]);
    } else if ((m = /^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$/.exec(n))) {
      const [o, p] = [Number(m[2]), Number(m[3])];
      const key = `${Number(m[1])}/${p}`;
      if (o >= 1 && o <= p) multi.set(key, [...(multi.get(key) ?? []), n]);
    }
  }
  // A multi-part checkpoint counts only with all its parts 1..p (distinct
  // names, sorted, so in part order).
  for (const [key, parts] of multi) {
    const [v, p] = key.split('/').map(Number);
    if (!checkpoints.has(v) && parts.length === p) checkpoints.set(v, parts);
  }
  return { commits, checkpoints };
}

// decodePath turns an action's path (a URI: relative to the table, or
// absolute) into {shown, local, key}: shown is what "files" gives, local what
// DuckDB reads, key what identifies the file in replay (its absolute location,
// so that "a", "/t/a" and "file:///t/a" are one file).
function decodePath(uri, tableDir) {
  const dec = (s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      fail(`bad URI-encoded path in the log: ${uri}`);
    }
  };
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(uri);
  if (scheme && scheme[1].toLowerCase() === 'file') {
    let rest = uri.slice(scheme[0].length);
    if (rest.startsWith('//')) rest = rest.slice(rest.indexOf('/', 2) < 0 ? rest.length : rest.indexOf('/', 2));
    const p = dec(rest);
    return { shown: p, local: p, key: resolve(p) };
  }
  if (scheme) {
    const u = dec(uri); // another store (s3:, abfss:...): left to DuckDB
    return { shown: u, local: u, key: u };
  }
  const p = dec(uri);
  if (p.startsWith('/')) return { shown: p, local: p, key: resolve(p) };
  const abs = join(tableDir, p);
  return { shown: p, local: abs, key: resolve(abs) };
}

// dvId is the deletion vector's uniqueId (PROTOCOL.md, Derived Fields):
// storageType + pathOrInlineDv, then "@offset" when there is an offset.
function dvId(dv) {
  if (!dv) return '';
  const off = dv.offset === null || dv.offset === undefined ? '' : `@${dv.offset}`;
  return `${dv.storageType}${dv.pathOrInlineDv}${off}`;
}

// DuckDB globs the paths it is given ('*', '?', '[...]'): a path holding one
// of these is read through a symlink with a plain name.
let links = 0;
function literalPaths(paths) {
  return paths.map((p) => {
    if (!/[*?[\]{}]/.test(p)) return p;
    if (linkDir === null) linkDir = mkdtempSync(join(tmpdir(), 'deltarows-'));
    const link = join(linkDir, `f${links++}.parquet`);
    symlinkSync(resolve(p), link);
    return link;
  });
}

// Wanted fields of each action column read from a parquet checkpoint or
// sidecar. remove is not read there: in a checkpoint, removes are tombstones
// (for VACUUM) of files that are not live, and cancel nothing.
const WANTED = {
  protocol: ['minReaderVersion', 'minWriterVersion', 'readerFeatures', 'writerFeatures'],
  metaData: ['id', 'schemaString', 'partitionColumns', 'configuration'],
  add: ['path', 'partitionValues', 'size', 'stats', 'deletionVector'],
  sidecar: ['path'],
};

// readParquetActions reads the action columns a set of parquet checkpoint
// files has (a checkpoint may lack some, and a struct some fields), each row
// turned into JSON by DuckDB so that it looks like a line of a commit.
async function readParquetActions(conn, files) {
  const bind = [[listValue(literalPaths(files))], [LIST(VARCHAR)]];
  const names = async (sel) =>
    (await conn.runAndReadAll(`DESCRIBE SELECT ${sel} FROM ${SRC}`, ...bind))
      .getRowObjectsJS().map((r) => String(r.column_name));
  const columns = await names('*');
  const actions = [];
  for (const [col, wanted] of Object.entries(WANTED)) {
    if (!columns.includes(col)) continue;
    const have = await names(`${ident(col)}.*`);
    const fields = wanted.filter((f) => have.includes(f));
    if (fields.length === 0) continue;
    const pack = fields.map((f) => `${ident(f)} := ${ident(col)}.${ident(f)}`).join(', ');
    const res = await conn.runAndReadAll(
      `SELECT to_json(struct_pack(${pack}))::VARCHAR FROM ${SRC} WHERE ${ident(col)} IS NOT NULL`, ...bind);
    for (const [j] of res.getRows()) actions.push({ [col]: JSON.parse(j) });
  }
  return actions;
}

// readJsonLines reads a commit or a JSON V2 checkpoint: one action a line.
function readJsonLines(file) {
  return readFileSync(file, 'utf8').split('\n').map((l, i) => {
    try {
      return l.trim() === '' ? null : JSON.parse(l);
    } catch {
      fail(`${file}: line ${i + 1} is not JSON`);
    }
  }).filter((a) => a !== null);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const tableDir = resolve(opts.dir);
  const logDir = join(tableDir, '_delta_log');
  const { commits, checkpoints } = listLog(logDir);
  const known = [...commits.keys(), ...checkpoints.keys()];
  if (known.length === 0) fail(`no commit or checkpoint in ${logDir}`);
  const newest = Math.max(...known);
  const version = opts.version ?? newest;
  if (version > newest) fail(`version ${version} is missing: the newest in ${logDir} is ${newest}`);

  // The newest complete checkpoint not after the version, then every commit
  // after it, with no gap.
  const cps = [...checkpoints.keys()].filter((v) => v <= version);
  const cp = cps.length ? Math.max(...cps) : null;
  for (let v = cp === null ? 0 : cp + 1; v <= version; v++) {
    if (!commits.has(v)) {
      fail(`version ${v} is missing: no ${pad20(v)}.json in ${logDir}` +
        (cp === null ? ` and no checkpoint at or below ${version}` : ` (checkpoint at ${cp})`));
    }
  }

  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  // As in duckrows.mjs: set here, not at creation (offline autoload).
  await conn.run(`SET TimeZone = 'UTC'; SET parquet_metadata_cache = true`);

  // Replay state: latest protocol and metaData win; live files by
  // (path, deletion vector uniqueId).
  let protocol = null;
  let metaData = null;
  const live = new Map();
  const apply = (a, inCheckpoint) => {
    if (a.protocol) protocol = a.protocol;
    if (a.metaData) metaData = a.metaData;
    if (a.add) {
      const loc = decodePath(a.add.path, tableDir);
      live.set(`${loc.key}\0${dvId(a.add.deletionVector)}`, { ...a.add, loc });
    }
    if (a.remove && !inCheckpoint) {
      live.delete(`${decodePath(a.remove.path, tableDir).key}\0${dvId(a.remove.deletionVector)}`);
    }
  };

  if (cp !== null) {
    const files = checkpoints.get(cp).map((n) => join(logDir, n));
    let actions = files[0].endsWith('.json')
      ? readJsonLines(files[0])
      : await readParquetActions(conn, files);
    // A V2 checkpoint (UUID-named, or classic-named with V2 content) keeps
    // its file actions in sidecars under _delta_log/_sidecars.
    const sidecars = actions.filter((a) => a.sidecar)
      .map((a) => decodePath(a.sidecar.path, join(logDir, '_sidecars')).local);
    const lost = sidecars.find((f) => !existsSync(f));
    if (lost) fail(`checkpoint ${cp} names a sidecar that is not there: ${lost}`);
    if (sidecars.length) actions = actions.concat(await readParquetActions(conn, sidecars));
    for (const a of actions) apply(a, true);
  }
  // Commits in version order; actions in a commit in line order.
  for (let v = cp === null ? 0 : cp + 1; v <= version; v++) {
    for (const a of readJsonLines(join(logDir, commits.get(v)))) apply(a, false);
  }

  const missing = [!protocol && 'protocol', !metaData && 'metaData'].filter(Boolean);
  if (missing.length) fail(`no ${missing.join(' and no ')} action in the log up to version ${version}`);

  let schema = null;
  if (metaData.schemaString != null) {
    try {
      schema = JSON.parse(metaData.schemaString);
    } catch {
      fail(`metaData.schemaString is not JSON at version ${version}`);
    }
  }
  const numRecords = (stats) => {
    try { // stats is a JSON string; numRecords may be absent
      const n = (typeof stats === 'string' ? JSON.parse(stats) : stats).numRecords;
      return typeof n === 'number' ? n : null;
    } catch {
      return null;
    }
  };
  const entries = [...live.values()].sort((a, b) =>
    Buffer.compare(Buffer.from(a.loc.shown), Buffer.from(b.loc.shown)));
  const files = entries.map((f) => ({
    path: f.loc.shown,
    partitionValues: f.partitionValues ?? {},
    size: f.size,
    numRecords: f.stats == null ? null : numRecords(f.stats),
    ...(f.deletionVector ? { deletionVector: true } : {}),
  }));

  // The features lists only when the protocol action has them.
  const proto = Object.fromEntries(WANTED.protocol
    .filter((k) => protocol[k] != null).map((k) => [k, protocol[k]]));
  const configuration = metaData.configuration ?? {};
  const out = {
    version, checkpoint: cp, protocol: proto,
    partitionColumns: metaData.partitionColumns ?? [], configuration, schema, files,
  };

  if (!opts.filesOnly) {
    // Reading these right takes more than DuckDB's read_parquet: refuse.
    const mapping = configuration['delta.columnMapping.mode'];
    const unreadable = files.some((f) => f.deletionVector) ? 'deletion vectors'
      : mapping != null && mapping !== 'none' ? 'column mapping' : null;
    if (unreadable) {
      Object.assign(out, { rows: null, checksum: null, unreadable });
    } else if (entries.length === 0) {
      Object.assign(out, { rows: 0, checksum: '0'.repeat(32) });
    } else {
      const gone = entries.find((f) => f.loc.local.startsWith('/') && !existsSync(f.loc.local));
      if (gone) fail(`live file ${gone.loc.shown} is not there (${gone.loc.local})`);
      // duckrows.mjs's checksum: each row as a struct of its columns sorted
      // by name, cast to text, hashed, the hashes summed exactly.
      const bind = [[listValue(literalPaths(entries.map((f) => f.loc.local)))], [LIST(VARCHAR)]];
      const desc = await conn.runAndReadAll(`DESCRIBE SELECT * FROM ${SRC}`, ...bind);
      const cols = desc.getRowObjectsJS().map((r) => String(r.column_name)).sort();
      // A Delta timestamp is an instant, whether a file stores it as
      // Spark's INT96 (DuckDB: TIMESTAMP) or as INT64 adjusted to UTC
      // (TIMESTAMP WITH TIME ZONE): read it as the table's type, as a
      // Delta reader does, so that the two spellings hash alike.
      const instants = new Set(opts.asStored ? [] : (schema?.fields ?? [])
        .filter((f) => f.type === 'timestamp').map((f) => f.name.toLowerCase()));
      const value = (c) => instants.has(c.toLowerCase()) ? `${ident(c)}::TIMESTAMPTZ` : ident(c);
      const row = `struct_pack(${cols.map((c) => `${ident(c)} := ${value(c)}`).join(', ')})::VARCHAR`;
      const res = await conn.runAndReadAll(
        `SELECT count(*), coalesce(sum(hash(${row})), 0)::HUGEINT FROM ${SRC}`, ...bind);
      const [n, s] = res.getRows()[0];
      const mod = 1n << 128n;
      out.rows = Number(n);
      out.checksum = (((BigInt(s) % mod) + mod) % mod).toString(16).padStart(32, '0');
    }
  }
  process.stdout.write(JSON.stringify(out) + '\n');
  conn.closeSync();
  instance.closeSync();
}

main()
  .then(() => linkDir !== null && rmSync(linkDir, { recursive: true, force: true }))
  .catch((e) => fail(e && e.message ? e.message : e));
