package catalog

import (
	"fmt"
	"strconv"
	"strings"
)

// HiveDefaultPartition is the folder value Hive and Spark write for a NULL
// partition value.
const HiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

// hiveEscape escapes a partition value as Hive does for folder names:
// control characters and the characters that are special in paths get %XX.
func hiveEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// HiveDir is the Hive folder of partition values vals under keys, as
// Hive and Spark name it: "date=2024-01-31/country=DE", a NULL as
// HiveDefaultPartition, special characters escaped.
func HiveDir(keys []string, vals map[string]*string) string {
	segs := make([]string, len(keys))
	for i, k := range keys {
		v := HiveDefaultPartition
		if p := vals[k]; p != nil {
			v = hiveEscape(*p)
		}
		segs[i] = hiveEscape(k) + "=" + v
	}
	return strings.Join(segs, "/")
}

// hiveUnescape reverses hiveEscape: every %XX becomes its byte; anything
// else is kept as is (Hive does not escape '+' or spaces).
func hiveUnescape(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ParseHivePath splits a file's folder (relative to the table root) into
// partition keys and decoded values, as Spark and Hive escape them (%XX; a
// NULL value is HiveDefaultPartition). Every folder level must be
// key=value, each key once.
func ParseHivePath(dir string) (keys []string, vals map[string]*string, err error) {
	if dir == "" {
		return nil, nil, nil
	}
	vals = map[string]*string{}
	for _, seg := range strings.Split(dir, "/") {
		k, v, ok := strings.Cut(seg, "=")
		if !ok || k == "" {
			return nil, nil, fmt.Errorf("folder %q is not a Hive partition (want key=value)", seg)
		}
		k = hiveUnescape(k)
		if _, dup := vals[k]; dup {
			return nil, nil, fmt.Errorf("partition key %q twice", k)
		}
		keys = append(keys, k)
		if v == HiveDefaultPartition {
			vals[k] = nil
			continue
		}
		dv := hiveUnescape(v)
		vals[k] = &dv
	}
	return keys, vals, nil
}
