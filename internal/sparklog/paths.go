package sparklog

import (
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/sluice-data/sluice/cloud"
)

// decodePath decodes a path as the log writes it, a URI (Hadoop's
// Path.toUri: "%20" a space, "%25" a '%', '+' itself), into where the
// file is, spelled as cloud.Store.URL spells locations: an absolute local
// path for file:/ and file:///, s3://bucket/key for s3, s3a and s3n,
// az://account/container/key for abfs(s) and wasb(s); any other scheme
// (hdfs, gs) as scheme://authority/path. base is the part before the
// path ("s3://bucket"; "" on local disk) and p the path, cleaned ("/a/../b"
// is "/b"). A path with no scheme that does not start with '/' is relative
// to the output folder: it is returned, cleaned, as p, with absolute
// false.
func decodePath(raw string) (base, p string, absolute bool, err error) {
	scheme, rest := splitScheme(raw)
	authority := ""
	if scheme != "" {
		if a, ok := strings.CutPrefix(rest, "//"); ok {
			authority, rest, _ = strings.Cut(a, "/")
			rest = "/" + rest
		}
	}
	if p, err = url.PathUnescape(rest); err != nil {
		return "", "", false, fmt.Errorf("path %q: %v", raw, err)
	}
	p = path.Clean(p)
	scheme = strings.ToLower(scheme)
	switch scheme {
	case "":
		return "", p, strings.HasPrefix(p, "/"), nil
	case "file":
		if authority != "" && authority != "localhost" {
			break
		}
		if len(p) > 3 && p[0] == '/' && p[2] == ':' && p[3] == '/' {
			p = p[1:] // file:/C:/x on Windows
		}
		return "", p, true, nil
	case "s3", "s3a", "s3n":
		return "s3://" + authority, p, true, nil
	case "abfs", "abfss", "wasb", "wasbs":
		if container, host, ok := strings.Cut(authority, "@"); ok {
			account, _, _ := strings.Cut(host, ".")
			return "az://" + account + "/" + container, p, true, nil
		}
	}
	return scheme + "://" + authority, p, true, nil
}

// splitScheme splits "scheme:rest"; a one-letter scheme is a Windows
// drive, not a scheme.
func splitScheme(raw string) (scheme, rest string) {
	i := strings.IndexByte(raw, ':')
	if i < 2 {
		return "", raw
	}
	for j, r := range raw[:i] {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (j == 0 || !(r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return "", raw
		}
	}
	return raw[:i], raw[i+1:]
}

// rootOf is where the store's root is, spelled as decodePath spells
// locations.
func rootOf(st cloud.Store) string {
	return strings.TrimSuffix(filepath.ToSlash(st.URL("")), "/")
}

// keysUnder maps the live files, as decoded, to keys under the output
// folder now at root (see rootOf). The rule:
//
//   - a relative path is a key as it is;
//   - an absolute path under root (the folder has not moved since the
//     sink wrote it) is a key relative to root;
//   - when no absolute path is under root (the folder was moved or copied
//     since, or is read under another name), the folder the sink wrote is
//     inferred from the paths: each file's folder with its Hive partition
//     folders (k=v) taken off the end, the one most files agree on. Keys
//     are relative to it.
//
// A file not under the folder so found is refused with ErrOutsideFolder,
// naming it: import adopts a folder's own files. Spark's own reader
// reads the absolute paths as written, so it reads a moved folder's log
// as naming the old place; sluice reads it as naming the files moved
// with it. An output folder itself named like a partition (k=v) is known
// only where it was written.
func keysUnder(files []entry, root string) ([]string, error) {
	keys := make([]string, len(files))
	written, matched := root, false
	for _, f := range files {
		if f.absolute && strings.HasPrefix(f.base+f.p, root+"/") {
			matched = true
			break
		}
	}
	if !matched {
		written = inferRoot(files, root)
	}
	for i, f := range files {
		if !f.absolute {
			if f.p == ".." || strings.HasPrefix(f.p, "../") {
				return nil, fmt.Errorf("%s names %s, outside %s: import adopts a folder's own files: %w", f.where, f.raw, root, ErrOutsideFolder)
			}
			keys[i] = f.p
			continue
		}
		k, ok := strings.CutPrefix(f.base+f.p, written+"/")
		if !ok || k == "" {
			where := root
			if written != root {
				where = written + ", the folder the sink wrote (now " + root + ")"
			}
			return nil, fmt.Errorf("%s names %s, outside %s: import adopts a folder's own files: %w", f.where, f.raw, where, ErrOutsideFolder)
		}
		keys[i] = k
	}
	return keys, nil
}

// inferRoot returns the folder the sink wrote the absolute files to: each
// file's folder with its trailing Hive partition folders taken off, the
// one most files agree on. With no absolute file it returns root.
func inferRoot(files []entry, root string) string {
	count := map[string]int{}
	best := root
	for _, f := range files {
		if !f.absolute {
			continue
		}
		dir := path.Dir(f.p)
		for isHiveFolder(path.Base(dir)) {
			dir = path.Dir(dir)
		}
		dir = strings.TrimSuffix(f.base+dir, "/")
		count[dir]++
		if count[dir] > count[best] {
			best = dir
		}
	}
	return best
}
