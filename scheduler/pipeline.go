package scheduler

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Pipeline is a parsed, validated pipeline file: the lake's tables and
// the jobs over them.
type Pipeline struct {
	// File is the pipeline file's name as given.
	File string
	// Lake is the location under which run history lives
	// (<Lake>/_sluice/runs/): the file's "lake", else the common parent
	// of its tables' locations.
	Lake string
	// Tables by name.
	Tables map[string]*Table
	// Jobs by name; Order lists their names in file order.
	Jobs  map[string]*Job
	Order []string
	dir   string
}

// Table is one table the file declares.
type Table struct {
	Name     string
	Location string
	// Schema, PartitionBy and TargetFileSize describe a table to create;
	// a table with only a location is an existing one.
	Schema, PartitionBy, TargetFileSize string
	// Format is the table's format as the file says it: "" (sluice's),
	// "sluice", "delta" or "iceberg".
	Format string
	Pos    Pos
}

// TableFormats are the values a table's format key may take.
var TableFormats = []string{"sluice", "delta", "iceberg"}

// Option is one option of a job's kind, as the file gives it: a scalar
// (Value) or a list of scalars (List, IsList).
type Option struct {
	Key    string
	Value  string
	List   []string
	IsList bool
	Pos    Pos
}

// Values returns the option's values: the list, or the one scalar.
func (o Option) Values() []string {
	if o.IsList {
		return o.List
	}
	return []string{o.Value}
}

// Retries is a job's retry policy: up to Max more attempts after a failed
// one, waiting Backoff, doubling each time up to MaxBackoff, with jitter.
type Retries struct {
	Max        int
	Backoff    time.Duration
	MaxBackoff time.Duration
}

// Overlap says what happens when a job's tick comes while its previous
// run still runs.
type Overlap string

// The overlap policies: skip the new tick (recorded), or queue it.
const (
	OverlapSkip  Overlap = "skip"
	OverlapQueue Overlap = "queue"
)

// Job is one job of the pipeline.
type Job struct {
	Name string
	// Kind names the job's kind (ingest, compact, ...); Options are its
	// options in file order.
	Kind    string
	Options []Option
	// Spec is the schedule as written (inherited from the first upstream
	// when the job has none); Schedule is it parsed.
	Spec     string
	Schedule *Schedule
	After    []string
	Retries  Retries
	// Timeout cancels a run's context after this long; zero: none.
	Timeout time.Duration
	Overlap Overlap
	// Catchup is how many missed intervals a restart runs (default 1:
	// only the latest).
	Catchup int
	// Parallel is how many intervals a backfill may run at once (default 1).
	Parallel int
	Pos      Pos
}

// Option returns the job's option key, if given.
func (j *Job) Option(key string) (Option, bool) {
	for _, o := range j.Options {
		if o.Key == key {
			return o, true
		}
	}
	return Option{}, false
}

// Kind is a kind of job the pipeline file may name. The command wires
// each kind to its package; the scheduler knows only this interface.
type Kind interface {
	// Check validates a job's options before anything runs. It returns
	// an *OptionError (or several joined) naming each bad option.
	Check(p *Pipeline, j *Job) []*OptionError
	// Run runs one interval of the job and returns its typed result,
	// which the run record keeps as JSON (see Metrics for the keys
	// /metrics reads). It must stop when ctx ends and leave no half
	// commit. Its error says what the scheduler may do (Transient,
	// Permanent): a permanent one is not retried.
	Run(ctx context.Context, p *Pipeline, j *Job, iv Interval) (any, error)
}

// LoadFile reads and validates the pipeline file at path, expanding
// ${NAME} from the environment.
func LoadFile(path string, kinds map[string]Kind) (*Pipeline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read pipeline: %w", err)
	}
	return Parse(path, data, kinds, os.LookupEnv)
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// Parse validates the pipeline file data (named file, for messages and
// to resolve relative locations). lookup resolves ${NAME}. Every problem
// found is in the returned ErrorList.
func Parse(file string, data []byte, kinds map[string]Kind, lookup func(string) (string, bool)) (*Pipeline, error) {
	p := &Pipeline{File: file, Tables: map[string]*Table{}, Jobs: map[string]*Job{}, dir: filepath.Dir(file)}
	ps := &parser{p: p, kinds: kinds, lookup: lookup}
	if e := tabIndent(file, data); e != nil {
		return nil, ErrorList{e}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line := 1
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		msg = yamlLine.ReplaceAllString(msg, "")
		msg = strings.TrimLeft(msg, ": ")
		return nil, ErrorList{{Pos: Pos{file, line, 1}, Msg: "not valid YAML: " + msg}}
	}
	if len(doc.Content) == 0 {
		return nil, ErrorList{{Pos: Pos{file, 1, 1}, Msg: "empty pipeline file: want tables and jobs"}}
	}
	ps.top(doc.Content[0])
	if len(ps.errs) == 0 {
		ps.links() // first: a job's kind may check the schedule it inherits
	}
	ps.kindChecks()
	if len(ps.errs) > 0 {
		slices.SortStableFunc(ps.errs, func(a, b *Error) int {
			if a.Pos.Line != b.Pos.Line {
				return a.Pos.Line - b.Pos.Line
			}
			return a.Pos.Column - b.Pos.Column
		})
		return nil, ps.errs
	}
	return p, nil
}

// tabIndent finds a tab in a line's indentation: YAML indents with
// spaces, and the YAML parser's own message for it does not say so.
func tabIndent(file string, data []byte) *Error {
	for i, line := range bytes.Split(data, []byte("\n")) {
		for col, c := range line {
			if c == '\t' {
				return &Error{Pos: Pos{file, i + 1, col + 1}, Msg: "tab in indentation: YAML indents with spaces"}
			}
			if c != ' ' {
				break
			}
		}
	}
	return nil
}

type parser struct {
	p      *Pipeline
	kinds  map[string]Kind
	lookup func(string) (string, bool)
	errs   ErrorList
	nodes  map[string]*jobNodes
}

func (ps *parser) pos(n *yaml.Node) Pos { return Pos{ps.p.File, n.Line, n.Column} }

func (ps *parser) fail(n *yaml.Node, key, format string, args ...any) {
	ps.errs = append(ps.errs, &Error{Pos: ps.pos(n), Key: key, Msg: fmt.Sprintf(format, args...)})
}

// pairs returns a mapping's key/value nodes, reporting duplicate keys
// and a node that is not a mapping.
func (ps *parser) pairs(n *yaml.Node, path string) [][2]*yaml.Node {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		ps.fail(n, path, "want a mapping of keys, got %s", kindName(n))
		return nil
	}
	seen := map[string]*yaml.Node{}
	var out [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if first, dup := seen[k.Value]; dup {
			ps.fail(k, join(path, k.Value), "duplicate key (first at line %d)", first.Line)
			continue
		}
		seen[k.Value] = k
		out = append(out, [2]*yaml.Node{k, v})
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return "a scalar"
	}
	return "something else"
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// scalar returns a scalar's value with ${NAME} expanded. A message about
// a bad value quotes the value only when nothing was expanded in it, so
// a secret from the environment never shows.
func (ps *parser) scalar(n *yaml.Node, key string) (string, bool) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		ps.fail(n, key, "want a value, got %s", kindName(n))
		return "", false
	}
	ok := true
	v := envRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
		name := ref[2 : len(ref)-1]
		val, set := ps.lookup(name)
		if !set {
			ps.fail(n, key, "environment variable %s is not set", name)
			ok = false
		}
		return val
	})
	return v, ok
}

// shown is how a message quotes a value: never one from the environment.
func shown(n *yaml.Node) string {
	if envRef.MatchString(n.Value) {
		return "(value from the environment)"
	}
	return strconv.Quote(n.Value)
}

func (ps *parser) top(root *yaml.Node) {
	var jobs *yaml.Node
	for _, kv := range ps.pairs(root, "") {
		k, v := kv[0], kv[1]
		switch k.Value {
		case "lake":
			if s, ok := ps.scalar(v, "lake"); ok {
				ps.p.Lake = ps.p.Resolve(s)
			}
		case "tables":
			for _, tkv := range ps.pairs(v, "tables") {
				ps.table(tkv[0], tkv[1])
			}
		case "jobs":
			jobs = v
		default:
			ps.fail(k, k.Value, "unknown key (want lake, tables or jobs)")
		}
	}
	if jobs == nil {
		ps.fail(root, "jobs", "missing: a pipeline names at least one job")
		return
	}
	for _, jkv := range ps.pairs(jobs, "jobs") {
		ps.job(jkv[0], jkv[1])
	}
	if ps.p.Lake == "" && len(ps.errs) == 0 {
		ps.p.Lake = commonParent(ps.p.Tables)
		if ps.p.Lake == "" {
			ps.fail(root, "lake", "missing, and the tables share no parent location to keep run history in")
		}
	}
}

// Resolve makes a relative local location (a plain relative path, or
// file://./path) relative to the pipeline file's folder, so a file runs
// the same from any working directory. Other locations pass unchanged.
func (p *Pipeline) Resolve(loc string) string {
	rest, isFile := strings.CutPrefix(loc, "file://")
	switch {
	case isFile && !strings.HasPrefix(rest, "/"):
		return filepath.Join(p.dir, rest)
	case !isFile && !strings.Contains(loc, "://") && !filepath.IsAbs(loc) && loc != "":
		return filepath.Join(p.dir, loc)
	}
	return loc
}

// inCatalog reports whether a table's location names a table in an
// Iceberg catalog (iceberg+sqlite:///path#ns.table), not a folder.
func inCatalog(loc string) bool { return strings.HasPrefix(loc, "iceberg+") }

func commonParent(tables map[string]*Table) string {
	var parent string
	for _, t := range tables {
		if inCatalog(t.Location) {
			continue // a catalog's table: no folder of the lake
		}
		dir := t.Location[:strings.LastIndex(t.Location, "/")+1]
		if strings.HasSuffix(dir, "://") || dir == "" {
			return ""
		}
		if parent == "" {
			parent = dir
		}
		for !strings.HasPrefix(dir, parent) {
			parent = strings.TrimSuffix(parent, "/")
			parent = parent[:strings.LastIndex(parent, "/")+1]
			if parent == "" || strings.HasSuffix(parent, "://") {
				return ""
			}
		}
	}
	return strings.TrimSuffix(parent, "/")
}

func (ps *parser) table(k, v *yaml.Node) {
	path := "tables." + k.Value
	t := &Table{Name: k.Value, Pos: ps.pos(k)}
	hasLocation := false
	for _, kv := range ps.pairs(v, path) {
		key, val := kv[0], kv[1]
		hasLocation = hasLocation || key.Value == "location"
		s, ok := ps.scalar(val, join(path, key.Value))
		if !ok {
			continue
		}
		switch key.Value {
		case "location":
			t.Location = ps.p.Resolve(s)
		case "schema":
			t.Schema = s
		case "partition_by":
			t.PartitionBy = s
		case "target_file_size":
			t.TargetFileSize = s
		case "format":
			if !slices.Contains(TableFormats, s) {
				ps.fail(val, join(path, key.Value), "%q: want one of %s", s, strings.Join(TableFormats, ", "))
			}
			t.Format = s
		default:
			ps.fail(key, join(path, key.Value), "unknown key (want location, schema, partition_by, target_file_size or format)")
		}
	}
	if !hasLocation {
		ps.fail(k, path, "no location")
	}
	named := inCatalog(t.Location)
	switch {
	case t.Format == "iceberg" && !named && t.Location != "":
		ps.fail(k, join(path, "location"), "an Iceberg table is named by its catalog: iceberg+sqlite:///abs/path/catalog.db#ns.table, iceberg+postgres://host/db#ns.table or iceberg+rest://host/path#ns.table")
	case named && t.Format != "" && t.Format != "iceberg":
		ps.fail(k, join(path, "format"), "%q: the location names an Iceberg table in its catalog", t.Format)
	case named && (t.Schema != "" || t.PartitionBy != ""):
		ps.fail(k, path, "an Iceberg table's schema and partitioning are its catalog's: give neither")
	case named:
		t.Format = "iceberg"
	}
	ps.p.Tables[t.Name] = t
}
