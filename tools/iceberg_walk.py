#!/usr/bin/env python3
"""iceberg_walk: the spec walk, a second independent Iceberg reader.

It reads an Iceberg table the way the table spec (iceberg.apache.org/spec,
"Manifests", "Manifest Lists", "Sequence Numbers", "Scan Planning",
"Deletion Vectors") describes it, with nothing but Debian's python3-avro:
the metadata file, then every snapshot's manifest list (Avro), then the
manifests it lists (Avro), and prints ONE JSON line per snapshot, oldest
first (by sequence number):

  {"snapshot_id":"N","parent_snapshot_id":"N"|null,"sequence_number":N,
   "timestamp_ms":N,"operation":"append","summary":{...},
   "format_version":2,"current":true|false,
   "data_files":[{"path":"file:///...","file_format":"PARQUET",
                  "record_count":N,"file_size_in_bytes":N,"spec_id":N,
                  "partition":{"ts_day":"2024-03-01",...},
                  "data_sequence_number":N,"file_sequence_number":N}],
   "position_delete_files":[{"path":...,"file_format":"PARQUET"|"PUFFIN",
                  "record_count":N,"spec_id":N,"partition":{...},
                  "data_sequence_number":N,"file_sequence_number":N,
                  "referenced_data_file":"..."|null,
                  "content_offset":N|null,"content_size_in_bytes":N|null,
                  "positions":[N,...]}],        # deletion vectors only
   "equality_delete_files":[...same fields as data files...]}

Snapshot ids are strings (they are 64-bit; JavaScript's JSON.parse would
round them). The files of a snapshot are its live ones: every entry of its
manifests whose status is not DELETED (2). A manifest's entries with no
sequence number inherit the manifest's (from the manifest list) when they
were ADDED (status 1) in it; EXISTING ones must carry theirs. Format
version 1 has no sequence numbers: they are all 0.

Position delete files in Parquet are only listed here: python has no
Parquet reader on Debian's side, so tools/icewalkrows.mjs reads them (and
the data files) with DuckDB and applies them. Deletion vectors (format
version 3, a blob of a Puffin file) are decoded here, from the spec's
deletion-vector-v1 blob layout and the portable Roaring 64-bit format, and
their positions printed.

Usage:
  python3 tools/iceberg_walk.py METADATA_JSON
  python3 tools/iceberg_walk.py METADATA_JSON | node tools/icewalkrows.mjs -

METADATA_JSON is file:///.../metadata/00003-<uuid>.metadata.json or a plain
local path. A file: location is a path spelled as a URL, taken literally
(never percent-decoded), as tools/icerows.mjs takes it. Only local files.

Exit status: 0 on success, 1 on failure (one line on stderr), 2 on a usage
error.
"""

import base64
import datetime
import decimal
import json
import re
import struct
import sys
import uuid
import warnings
import zlib

try:
    import avro.datafile
    import avro.io
except ImportError:
    sys.stderr.write(
        "iceberg_walk: python3-avro is missing: run 'apt-get install -y python3-avro' "
        "(Debian's package, for /usr/bin/python3)\n")
    sys.exit(1)

# python3-avro warns about Iceberg's logicalType "map" on arrays of
# key/value records (it reads them as arrays, which is what we want).
warnings.filterwarnings("ignore")

STATUS_EXISTING, STATUS_ADDED, STATUS_DELETED = 0, 1, 2
CONTENT_DATA, CONTENT_POSITION_DELETES, CONTENT_EQUALITY_DELETES = 0, 1, 2
DV_MAGIC = b"\xd1\xd3\x39\x64"


class WalkError(Exception):
    pass


def local_path(loc):
    """The local file a location names: file:///p, file:/p or /p, literally."""
    m = re.match(r"^file:(?://)?(/(?!/).*)$", loc)
    if m:
        return m.group(1)
    if loc.startswith("/"):
        return loc
    raise WalkError(f"{loc}: not a local file location (file:///path)")


def read_avro(loc):
    """The records and the file metadata of the Avro file at loc."""
    try:
        with open(local_path(loc), "rb") as f:
            reader = avro.datafile.DataFileReader(f, avro.io.DatumReader())
            meta = {k: v.decode("utf-8", "replace") for k, v in reader.meta.items() if k != "avro.schema"}
            records = list(reader)
            reader.close()
    except OSError as e:
        raise WalkError(f"{loc}: {e.strerror or e}") from e
    except Exception as e:  # a malformed Avro file
        raise WalkError(f"{loc}: not a readable Avro file: {e}") from e
    return records, meta


def plain(v):
    """A partition value as JSON can hold it."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, datetime.datetime):
        return v.isoformat()
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return str(v)


def roaring32(buf, off):
    """Decodes a 32-bit Roaring bitmap in the portable format at buf[off:];
    returns (sorted values, offset after it)."""
    (cookie,) = struct.unpack_from("<I", buf, off)
    off += 4
    if cookie & 0xFFFF == 12347:  # SERIAL_COOKIE: has run containers
        size = (cookie >> 16) + 1
        run_flags = buf[off:off + (size + 7) // 8]
        off += (size + 7) // 8
        has_runs = True
    elif cookie == 12346:  # SERIAL_COOKIE_NO_RUNCONTAINER
        (size,) = struct.unpack_from("<I", buf, off)
        off += 4
        run_flags = b""
        has_runs = False
    else:
        raise WalkError(f"roaring bitmap: bad cookie {cookie:#x}")
    header = [struct.unpack_from("<HH", buf, off + 4 * i) for i in range(size)]
    off += 4 * size
    if not has_runs or size >= 4:  # the offset header
        off += 4 * size
    values = []
    for i, (key, card_minus_1) in enumerate(header):
        high = key << 16
        if has_runs and run_flags[i // 8] & (1 << (i % 8)):
            (runs,) = struct.unpack_from("<H", buf, off)
            off += 2
            for r in range(runs):
                start, length_minus_1 = struct.unpack_from("<HH", buf, off + 4 * r)
                values.extend(high | v for v in range(start, start + length_minus_1 + 1))
            off += 4 * runs
        elif card_minus_1 + 1 <= 4096:  # array container
            n = card_minus_1 + 1
            values.extend(high | v for v in struct.unpack_from(f"<{n}H", buf, off))
            off += 2 * n
        else:  # bitmap container: 2^16 bits
            words = struct.unpack_from("<1024Q", buf, off)
            off += 8192
            for w, word in enumerate(words):
                while word:
                    low = word & -word
                    values.append(high | (w * 64 + low.bit_length() - 1))
                    word ^= low
    return values, off


def deletion_vector(loc, offset, length):
    """The positions of the deletion-vector-v1 blob of the Puffin file loc
    at offset, length bytes: 4-byte big-endian length of magic+vector, the
    magic D1 D3 39 64, the vector (portable Roaring 64-bit: a little-endian
    uint64 count of 32-bit bitmaps, each a little-endian uint32 key, the
    high 32 bits, then the bitmap), a big-endian CRC-32 of magic+vector."""
    try:
        with open(local_path(loc), "rb") as f:
            f.seek(offset)
            blob = f.read(length)
    except OSError as e:
        raise WalkError(f"{loc}: {e.strerror or e}") from e
    if len(blob) != length or length < 12:
        raise WalkError(f"{loc}: deletion vector at {offset}: {len(blob)} of {length} bytes")
    (n,) = struct.unpack_from(">I", blob, 0)
    if n != length - 8 or blob[4:8] != DV_MAGIC:
        raise WalkError(f"{loc}: deletion vector at {offset}: bad length or magic")
    (crc,) = struct.unpack_from(">I", blob, length - 4)
    if zlib.crc32(blob[4:length - 4]) != crc:
        raise WalkError(f"{loc}: deletion vector at {offset}: CRC mismatch")
    vec = blob[8:length - 4]
    (count,) = struct.unpack_from("<Q", vec, 0)
    off = 8
    positions = []
    for _ in range(count):
        (key,) = struct.unpack_from("<I", vec, off)
        off += 4
        values, off = roaring32(vec, off)
        positions.extend((key << 32) | v for v in values)
    return positions


class Walk:
    def __init__(self, metadata_loc):
        self.metadata_loc = metadata_loc
        try:
            with open(local_path(metadata_loc), "rb") as f:
                self.meta = json.load(f)
        except OSError as e:
            raise WalkError(f"{metadata_loc}: {e.strerror or e}") from e
        except ValueError as e:
            raise WalkError(f"{metadata_loc}: not JSON: {e}") from e
        self.version = int(self.meta.get("format-version", 1))
        self.manifests = {}  # path -> decoded entries (a manifest is immutable)
        self.dvs = {}

    def manifest_entries(self, mf):
        """The entries of the manifest mf (a manifest list record), sequence
        numbers inherited."""
        path = mf["manifest_path"]
        key = (path, mf.get("sequence_number"))
        if key in self.manifests:
            return self.manifests[key]
        records, _ = read_avro(path)
        manifest_seq = mf.get("sequence_number") if self.version >= 2 else 0
        entries = []
        for e in records:
            status = e["status"]
            seq = e.get("sequence_number")
            fseq = e.get("file_sequence_number")
            if self.version < 2:
                seq = fseq = 0
            if seq is None:
                if status != STATUS_ADDED:
                    raise WalkError(f"{path}: an entry with status {status} has no sequence number")
                seq = manifest_seq
            if fseq is None:
                if status != STATUS_ADDED:
                    raise WalkError(f"{path}: an entry with status {status} has no file sequence number")
                fseq = manifest_seq
            entries.append((status, seq, fseq, e["data_file"]))
        self.manifests[key] = entries
        return entries

    def snapshot(self, snap):
        data, posdel, eqdel = [], [], []
        if "manifest-list" in snap:
            manifest_list, _ = read_avro(snap["manifest-list"])
        elif "manifests" in snap:  # format version 1 may list manifests inline
            manifest_list = [{"manifest_path": p, "partition_spec_id": 0, "content": 0} for p in snap["manifests"]]
        else:
            raise WalkError(f"snapshot {snap['snapshot-id']}: no manifest list")
        for mf in manifest_list:
            spec_id = mf.get("partition_spec_id", 0)
            mcontent = mf.get("content") or CONTENT_DATA
            for status, seq, fseq, df in self.manifest_entries(mf):
                if status == STATUS_DELETED:
                    continue
                content = df.get("content") or CONTENT_DATA
                if mcontent == CONTENT_DATA and content != CONTENT_DATA:
                    raise WalkError(f"{mf['manifest_path']}: a data manifest lists delete file {df['file_path']}")
                f = {
                    "path": df["file_path"],
                    "file_format": df["file_format"],
                    "record_count": df["record_count"],
                    "file_size_in_bytes": df["file_size_in_bytes"],
                    "spec_id": spec_id,
                    "partition": plain(df.get("partition") or {}),
                    "data_sequence_number": seq,
                    "file_sequence_number": fseq,
                }
                if content == CONTENT_DATA:
                    data.append(f)
                elif content == CONTENT_POSITION_DELETES:
                    f["referenced_data_file"] = df.get("referenced_data_file")
                    f["content_offset"] = df.get("content_offset")
                    f["content_size_in_bytes"] = df.get("content_size_in_bytes")
                    if f["file_format"].upper() == "PUFFIN":
                        if not f["referenced_data_file"] or f["content_offset"] is None or f["content_size_in_bytes"] is None:
                            raise WalkError(f"{f['path']}: a deletion vector without referenced_data_file, content_offset or content_size_in_bytes")
                        key = (f["path"], f["content_offset"], f["content_size_in_bytes"])
                        if key not in self.dvs:
                            self.dvs[key] = deletion_vector(*key)
                        f["positions"] = self.dvs[key]
                        if len(f["positions"]) != f["record_count"]:
                            raise WalkError(f"{f['path']}: deletion vector of {f['referenced_data_file']} holds {len(f['positions'])} positions, its record_count says {f['record_count']}")
                    posdel.append(f)
                elif content == CONTENT_EQUALITY_DELETES:
                    f["equality_ids"] = df.get("equality_ids")
                    eqdel.append(f)
                else:
                    raise WalkError(f"{df['file_path']}: unknown content {content}")
        paths = [f["path"] for f in data]
        if len(set(paths)) != len(paths):
            raise WalkError(f"snapshot {snap['snapshot-id']}: a data file is live twice")
        summary = snap.get("summary") or {}
        return {
            "snapshot_id": str(snap["snapshot-id"]),
            "parent_snapshot_id": None if snap.get("parent-snapshot-id") is None else str(snap["parent-snapshot-id"]),
            "sequence_number": int(snap.get("sequence-number", 0)),
            "timestamp_ms": snap.get("timestamp-ms"),
            "operation": summary.get("operation"),
            "summary": summary,
            "format_version": self.version,
            "current": snap["snapshot-id"] == self.meta.get("current-snapshot-id"),
            "data_files": data,
            "position_delete_files": posdel,
            "equality_delete_files": eqdel,
        }

    def run(self, out):
        snaps = sorted(self.meta.get("snapshots") or [],
                       key=lambda s: (int(s.get("sequence-number", 0)), s.get("timestamp-ms", 0)))
        for s in snaps:
            out.write(json.dumps(self.snapshot(s), ensure_ascii=False, separators=(",", ":")) + "\n")


def main(argv):
    if len(argv) != 1 or argv[0].startswith("-"):
        sys.stderr.write("iceberg_walk: usage: python3 tools/iceberg_walk.py METADATA_JSON\n")
        return 2
    try:
        Walk(argv[0]).run(sys.stdout)
    except WalkError as e:
        sys.stderr.write(f"iceberg_walk: {str(e).splitlines()[0]}\n")
        return 1
    except (KeyError, TypeError, ValueError, struct.error) as e:
        sys.stderr.write(f"iceberg_walk: {argv[0]}: malformed table metadata: {type(e).__name__}: {e}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
