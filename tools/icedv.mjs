// icedv: decodes Iceberg deletion vectors (format version 3): a blob of
// type deletion-vector-v1 in a Puffin file, as the Iceberg spec's "Deletion
// Vectors" section lays it out:
//
//   4 bytes  big-endian length of the magic and the vector
//   4 bytes  magic D1 D3 39 64
//   vector   Roaring 64-bit, portable format: a little-endian uint64 count
//            of 32-bit bitmaps, then each as a little-endian uint32 key
//            (the positions' high 32 bits) and a 32-bit Roaring bitmap in
//            the portable format (RoaringFormatSpec: array, bitmap and run
//            containers)
//   4 bytes  big-endian CRC-32 of the magic and the vector
//
// The manifest entry of a deletion vector gives the Puffin file, the
// blob's offset (content_offset) and length (content_size_in_bytes), and
// the one data file it deletes rows of (referenced_data_file).
// tools/iceberg_walk.py decodes them by the same spec in Python.
//
//   node tools/icedv.mjs FILE OFFSET LENGTH   prints the positions, one a line
import { openSync, readSync, closeSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

// CRC-32 (IEEE, as zlib's), by table: node:zlib has crc32 only from
// Node 20.15 on.
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** localPath is the local file a location names, taken literally (as in
 * tools/icechecksum.mjs, which this module does not import: it loads
 * DuckDB). */
function localPath(loc) {
  const m = /^file:(?:\/\/)?(\/(?!\/).*)$/.exec(loc);
  if (m) return m[1];
  if (loc.startsWith('/')) return loc;
  throw new Error(`${loc}: not a local file location (file:///path)`);
}

/** readRange reads length bytes of the local file at start (fewer at its end). */
export function readRange(file, start, length) {
  const buf = Buffer.alloc(length);
  const fd = openSync(file, 'r');
  try {
    let got = 0;
    while (got < length) {
      const n = readSync(fd, buf, got, length - got, start + got);
      if (n === 0) break;
      got += n;
    }
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

/** roaring32 decodes a 32-bit Roaring bitmap in the portable format at
 * buf[off:]; returns [values, offset after it]. */
export function roaring32(buf, off) {
  const cookie = buf.readUInt32LE(off);
  off += 4;
  let size;
  let runFlags = null;
  if ((cookie & 0xffff) === 12347) {
    size = (cookie >>> 16) + 1;
    runFlags = buf.subarray(off, off + ((size + 7) >> 3));
    off += (size + 7) >> 3;
  } else if (cookie === 12346) {
    size = buf.readUInt32LE(off);
    off += 4;
  } else {
    throw new Error(`roaring bitmap: bad cookie ${cookie}`);
  }
  const header = [];
  for (let i = 0; i < size; i++) header.push([buf.readUInt16LE(off + 4 * i), buf.readUInt16LE(off + 4 * i + 2) + 1]);
  off += 4 * size;
  if (!runFlags || size >= 4) off += 4 * size; // the offset header
  const values = [];
  header.forEach(([key, card], i) => {
    const high = key * 65536;
    if (runFlags && runFlags[i >> 3] & (1 << (i & 7))) {
      const runs = buf.readUInt16LE(off);
      off += 2;
      for (let r = 0; r < runs; r++) {
        const start = buf.readUInt16LE(off + 4 * r);
        const len = buf.readUInt16LE(off + 4 * r + 2);
        for (let v = start; v <= start + len; v++) values.push(high + v);
      }
      off += 4 * runs;
    } else if (card <= 4096) {
      for (let j = 0; j < card; j++) values.push(high + buf.readUInt16LE(off + 2 * j));
      off += 2 * card;
    } else {
      for (let w = 0; w < 1024; w++) {
        const word = buf.readBigUInt64LE(off + 8 * w);
        if (word === 0n) continue;
        for (let b = 0; b < 64; b++) if ((word >> BigInt(b)) & 1n) values.push(high + w * 64 + b);
      }
      off += 8192;
    }
  });
  return [values, off];
}

/** decodeDV returns the positions of the deletion-vector-v1 blob of the
 * Puffin file loc at offset, length bytes long (as BigInts). */
export function decodeDV(loc, offset, length) {
  const blob = readRange(localPath(loc), offset, length);
  if (blob.length !== length || length < 12) throw new Error(`${loc}: deletion vector at ${offset}: ${blob.length} of ${length} bytes`);
  if (blob.readUInt32BE(0) !== length - 8 || blob.readUInt32BE(4) !== 0xd1d33964) {
    throw new Error(`${loc}: deletion vector at ${offset}: bad length or magic`);
  }
  if ((crc32(blob.subarray(4, length - 4)) >>> 0) !== blob.readUInt32BE(length - 4)) {
    throw new Error(`${loc}: deletion vector at ${offset}: CRC mismatch`);
  }
  const vec = blob.subarray(8, length - 4);
  const count = Number(vec.readBigUInt64LE(0));
  let off = 8;
  const out = [];
  for (let i = 0; i < count; i++) {
    const key = BigInt(vec.readUInt32LE(off));
    off += 4;
    const [values, next] = roaring32(vec, off);
    off = next;
    for (const v of values) out.push((key << 32n) | BigInt(v));
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [file, offset, length] = process.argv.slice(2);
  if (length === undefined) {
    process.stderr.write('icedv: usage: node tools/icedv.mjs FILE OFFSET LENGTH\n');
    process.exit(2);
  }
  try {
    const out = decodeDV(file, Number(offset), Number(length)).map(String);
    process.stdout.write(out.length ? out.join('\n') + '\n' : '');
  } catch (e) {
    process.stderr.write(`icedv: ${String(e?.message ?? e).split('\n')[0]}\n`);
    process.exit(1);
  }
}
