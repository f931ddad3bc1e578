package jobs

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/cloud"
	"go.yaml.in/yaml/v3"

	"github.com/sluice-data/sluice/catalog"
)

// Create makes an empty table: sluice init, and an ingest job's table
// that its pipeline file gives a schema.
type Create struct {
	Table          string
	Schema         string
	PartitionBy    string
	TargetFileSize size

	schema catalog.Schema
	spec   catalog.PartitionSpec
	props  map[string]string
}

// Kind is "init".
func (*Create) Kind() string { return "init" }

// Bind registers init's flags.
func (o *Create) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&o.Schema, "schema", "", "columns: 'name:type,name:type?,...' or @file.yaml")
	fs.StringVar(&o.PartitionBy, "partition-by", "", "partition by the UTC day of a column: day(col)")
	fs.Var(&o.TargetFileSize, "target-file-size", "target size of data files written to the table (default 256MiB)")
}

// Validate parses the schema, the partition spec and the target size.
func (o *Create) Validate() error {
	if o.Schema == "" {
		return bad("schema", "is required")
	}
	schema, err := loadSchema(o.Schema)
	if err != nil {
		return bad("schema", "%v", err)
	}
	spec, err := catalog.ParsePartitionSpec(o.PartitionBy, schema)
	if err != nil {
		return bad("partition-by", "%v", err)
	}
	o.schema, o.spec, o.props = schema, spec, map[string]string{}
	n, err := o.TargetFileSize.bytes("target-file-size", 1<<40)
	if err != nil {
		return err
	}
	if n > 0 {
		o.props[catalog.PropTargetFileSize] = strconv.FormatInt(n, 10)
	}
	return nil
}

// CreateResult is what init did.
type CreateResult struct {
	Command     string `json:"command"`
	Table       string `json:"table"`
	Version     int64  `json:"version"`
	Schema      string `json:"schema"`
	PartitionBy string `json:"partition_by"`
}

// Line says what was created.
func (r CreateResult) Line() string {
	return fmt.Sprintf("created %s at version %d", r.Table, r.Version)
}

// Warnings: none.
func (CreateResult) Warnings() []string { return nil }

// Run creates the table; catalog.ErrTableExists when there is one.
func (o *Create) Run(ctx context.Context, env Env) (Result, error) {
	res := CreateResult{Command: "init", Table: cloud.Redact(o.Table)}
	t, err := env.begin(ctx, o, o.Table)
	if err != nil {
		return &res, err
	}
	defer t.Close()
	m, err := t.Create(ctx, o.schema, o.spec, o.props, env.RunID)
	if err != nil {
		return &res, classify(fmt.Errorf("init %s: %w", o.Table, err))
	}
	res.Version, res.Schema, res.PartitionBy = m.Version, o.schema.String(), o.spec.String()
	return &res, nil
}

// loadSchema reads --schema: a schema string, or @file.yaml holding either
// a schema string or a list of {name, type, nullable}.
func loadSchema(arg string) (catalog.Schema, error) {
	file, ok := strings.CutPrefix(arg, "@")
	if !ok {
		return catalog.ParseSchema(arg)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return catalog.Schema{}, fmt.Errorf("%s: %w", arg, err)
	}
	var node yaml.Node
	if err := yaml.Unmarshal(b, &node); err != nil {
		return catalog.Schema{}, fmt.Errorf("%s: %w", arg, err)
	}
	var s string
	if node.Decode(&s) == nil {
		return catalog.ParseSchema(s)
	}
	var cols []struct {
		Name     string `yaml:"name"`
		Type     string `yaml:"type"`
		Nullable bool   `yaml:"nullable"`
	}
	if err := node.Decode(&cols); err != nil {
		return catalog.Schema{}, fmt.Errorf("%s: want a schema string or a list of {name, type, nullable}: %w", arg, err)
	}
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c.Name + ":" + c.Type
		if c.Nullable {
			parts[i] += "?"
		}
	}
	return catalog.ParseSchema(strings.Join(parts, ","))
}
