#!/usr/bin/env node
// gen-sample: (re)generates testdata/sample/events, the small events table
// that the README demo imports, WITH DUCKDB, as another engine would write it.
//
//   node scripts/gen-sample.mjs [OUT_DIR]     # default: testdata/sample/events
//
// Layout, Hive style as Spark writes it: OUT_DIR/date=YYYY-MM-DD/part-NNNNN-<uuid>.parquet,
// 3 days x 4 files. The day lives ONLY in the folder name, never as a column
// in the files: each file is written by a plain COPY to its exact path (COPY
// ... PARTITION_BY would name the folders for us, but the layout is spelled
// out here so that it is exactly the one above).
//
// Every value is computed from the day, file and row numbers (md5 of a fixed
// label for the UUIDs, modular arithmetic for the rest), never random(), so a
// rerun with the same DuckDB version writes the same bytes.
//
// Needs `make tools` (the DuckDB package lives in tools/node_modules).

import { createRequire } from 'node:module';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');
const require = createRequire(join(root, 'tools', 'package.json'));
const { DuckDBInstance } = require('@duckdb/node-api');

const out = resolve(process.argv[2] ?? join(root, 'testdata', 'sample', 'events'));
const DAYS = ['2024-05-01', '2024-05-02', '2024-05-03'];
const FILES_PER_DAY = 4;
const LISTS = 5; // list_id 1001..1005
const SUBSCRIBERS = 120; // subscriber pool shared by all days

// uuid_of(label): a UUID (version 4 layout) from the md5 of a label:
// deterministic, and valid for any parser that checks the version and
// variant nibbles.
const UUID_MACRO = `
  CREATE MACRO hex_uuid(x) AS
    substr(x, 1, 8) || '-' || substr(x, 9, 4) || '-4' || substr(x, 14, 3) || '-' ||
    substr('89ab', (ascii(substr(x, 17, 1)) % 4) + 1, 1) || substr(x, 18, 3) || '-' ||
    substr(x, 21, 12);
  CREATE MACRO uuid_of(label) AS hex_uuid(md5(label));`;

async function main() {
  const instance = await DuckDBInstance.create(':memory:', {
    threads: '1', // one writer thread: the same bytes on every run
  });
  const conn = await instance.connect();
  // ICU is built in but cannot be set up at instance creation (it would try
  // to autoload it), so the zone is set per connection.
  await conn.run(`SET TimeZone = 'UTC'`);
  await conn.run(UUID_MACRO);

  // Start clean, removing only what this script writes (OUT_DIR may be
  // given by hand).
  mkdirSync(out, { recursive: true });
  for (const d of readdirSync(out)) {
    if (d.startsWith('date=')) rmSync(join(out, d), { recursive: true, force: true });
  }
  let fileNo = 0;
  let total = 0;
  for (let d = 0; d < DAYS.length; d++) {
    const day = DAYS[d];
    const dir = join(out, `date=${day}`);
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < FILES_PER_DAY; f++, fileNo++) {
      // 180..400 rows, varying by file, so files differ in size as
      // streaming output does.
      const rows = 180 + ((fileNo * 97) % 221);
      const fileId = (await (await conn.runAndReadAll(
        `SELECT uuid_of('sample-file-${day}-${f}')`)).getRows())[0][0];
      const name = `part-${String(f).padStart(5, '0')}-${fileId}.parquet`;
      const path = join(dir, name);
      const sql = `
        COPY (
          SELECT
            uuid_of('event-${day}-${f}-' || i) AS event_id,
            (1001 + (i * 7 + ${d * 3 + f}) % ${LISTS})::BIGINT AS list_id,
            uuid_of('subscriber-' || ((i * 13 + ${f * 31 + d * 17}) % ${SUBSCRIBERS})) AS subscriber_id,
            (CASE WHEN (i * 11 + ${d + f}) % 10 < 7 THEN 1 ELSE -1 END)::INTEGER AS tally,
            (TIMESTAMPTZ '${day} 00:00:00+00'
              + to_microseconds((i * 2654435761 + ${f * 1000003}) % 86400000000)) AS event_time
          FROM range(${rows}) r(i)
          ORDER BY event_time, event_id
        ) TO '${path.replace(/'/g, "''")}' (FORMAT parquet, COMPRESSION zstd)`;
      await conn.run(sql);
      total += rows;
    }
  }
  conn.closeSync();
  instance.closeSync();

  let bytes = 0;
  let files = 0;
  for (const d of readdirSync(out).filter((d) => d.startsWith('date='))) {
    for (const f of readdirSync(join(out, d))) {
      bytes += statSync(join(out, d, f)).size;
      files++;
    }
  }
  process.stdout.write(`${out}: ${files} files, ${total} rows, ${bytes} bytes\n`);
}

main().catch((e) => {
  process.stderr.write(`gen-sample: ${String(e && e.message ? e.message : e).split('\n')[0]}\n`);
  process.exit(1);
});
