package delta

import (
	"fmt"
	"net/url"
	"strings"
)

// decodePath decodes a path as the log holds it: a URI (RFC 2396), so
// "%25" is '%' and "%20" a space, while '+' stays '+' (it is not a form).
func decodePath(p string) (string, error) {
	s, err := url.PathUnescape(p)
	if err != nil {
		return "", fmt.Errorf("%w: path %q: %v", ErrCorruptLog, p, err)
	}
	return s, nil
}

// canonical is the key a log path is reconciled by, as Delta's readers
// canonicalize paths: decoded, "file:/p" and "file:///p" as "/p", and a
// path under the table's root (root, a URL or local path ending in '/')
// relative to it, so that an add and a remove that spell one file two
// ways match.
func canonical(p, root string) string {
	s, err := url.PathUnescape(p)
	if err != nil {
		return p // refused when the live set is built
	}
	switch {
	case strings.HasPrefix(s, "file:///"):
		s = s[len("file://"):]
	case strings.HasPrefix(s, "file:/"):
		s = s[len("file:"):]
	}
	if r, ok := strings.CutPrefix(s, root); ok && root != "" {
		return r
	}
	return s
}

// isAbsolute reports whether a decoded log path is an absolute URI
// ("s3://b/k", "file:/x", "abfss://...") rather than relative to the
// table's root.
func isAbsolute(p string) bool {
	i := strings.IndexByte(p, ':')
	return i > 0 && !strings.Contains(p[:i], "/") || strings.HasPrefix(p, "/")
}

// EncodePath encodes a relative data file path for the log, as Spark
// does: each segment escaped as a URI path, '/' kept.
func EncodePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
