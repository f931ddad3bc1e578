package sparklog

import (
	"path"
	"strings"

	"github.com/sluice-data/sluice/catalog"
)

// isHiveFolder reports whether a folder name is a Hive partition folder,
// key=value with a key.
func isHiveFolder(name string) bool {
	k, _, ok := strings.Cut(name, "=")
	return ok && k != ""
}

// partitionOf returns the partition keys and values of the file at key
// (relative to the output folder), from its Hive folders as Spark's file
// sink names them (catalog.ParseHivePath): the values catalog's import
// reads from the same folders. A file at the folder's root has none.
func partitionOf(key string) (keys []string, vals map[string]*string, err error) {
	dir := path.Dir(key)
	if dir == "." {
		return nil, map[string]*string{}, nil
	}
	return catalog.ParseHivePath(dir)
}
