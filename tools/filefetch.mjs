// filefetch: what the Iceberg readers' fetch shims (tools/icerows.mjs,
// tools/icebirdrows.mjs) answer for a local file, since icebird reads
// through fetch: HEAD with its size, GET of the whole file or of a
// Range (bytes=a-b, bytes=a-, bytes=-n), 404 for a missing file, 416 for
// a range it does not parse.
import { openSync, readSync, closeSync, statSync } from 'node:fs';

/** fileResponse answers a fetch of the local file with init's method and Range. */
export function fileResponse(file, init = {}) {
  let size;
  try {
    size = statSync(file).size;
  } catch {
    return new Response(null, { status: 404, statusText: 'Not Found' });
  }
  if ((init.method ?? 'GET').toUpperCase() === 'HEAD') {
    return new Response(null, { status: 200, headers: { 'content-length': String(size) } });
  }
  const range = new Headers(init.headers).get('range');
  let start = 0;
  let end = size - 1;
  if (range) {
    const m = /^bytes=(\d*)-(\d*)$/.exec(range);
    if (!m) return new Response(null, { status: 416 });
    if (m[1] === '') {
      start = Math.max(0, size - Number(m[2]));
    } else {
      start = Number(m[1]);
      if (m[2] !== '') end = Math.min(end, Number(m[2]));
    }
  }
  const buf = Buffer.alloc(Math.max(0, end - start + 1));
  const fd = openSync(file, 'r');
  try {
    readSync(fd, buf, 0, buf.length, start);
  } finally {
    closeSync(fd);
  }
  return new Response(buf, {
    status: range ? 206 : 200,
    headers: { 'content-length': String(buf.length), 'content-range': `bytes ${start}-${end}/${size}` },
  });
}
