// icebird-inflate: a module resolve hook, registered by icerows.mjs, that
// gives icebird's Avro reader a gunzip that also inflates raw deflate.
//
// Why: Avro's "deflate" codec is raw deflate (RFC 1951, no header), which is
// what iceberg-go (and Java Iceberg) write in manifests and manifest lists;
// icebird 0.3.1 hands those blocks to hyparquet-compressors' gunzip, which
// wants a gzip header and fails. Only icebird's src/avro/ modules are
// redirected here; everything else, hyparquet's Parquet decoding included,
// sees hyparquet-compressors unchanged.
import { inflateRawSync, gunzipSync } from 'node:zlib';

export * from 'hyparquet-compressors';

/** gunzip(data): gzip when the data has gzip's magic, else raw deflate. */
export function gunzip(data) {
  const isGzip = data.length >= 2 && data[0] === 0x1f && data[1] === 0x8b;
  const out = isGzip ? gunzipSync(data) : inflateRawSync(data);
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

/** Node's resolve hook (module.register). */
export async function resolve(specifier, context, next) {
  if (specifier === 'hyparquet-compressors' && /\/icebird\/src\/avro\//.test(context.parentURL ?? '')) {
    return { url: import.meta.url, shortCircuit: true };
  }
  return next(specifier, context);
}
