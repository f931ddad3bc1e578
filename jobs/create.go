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
	"github.com/sluice-data/sluice/ingest"
)

// Create makes an empty table: sluice init, and an ingest job's table
// that its pipeline file gives a schema.
type Create struct {
	Table       string
	Schema      string
	PartitionBy string
	// FromRegistry is a Schema Registry subject whose latest version
	// gives the schema, from the registry at Registry.
	FromRegistry   string
	Registry       string
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
	fs.StringVar(&o.FromRegistry, "schema-from-registry", "", "take the columns from the latest version of this Schema Registry subject (Avro, Protobuf or JSON Schema), with --schema-registry")
	fs.StringVar(&o.Registry, "schema-registry", "", "Schema Registry URL for --schema-from-registry (credentials from SCHEMA_REGISTRY_USERNAME/SCHEMA_REGISTRY_PASSWORD or SCHEMA_REGISTRY_TOKEN)")
	fs.StringVar(&o.PartitionBy, "partition-by", "", "partition by the UTC day of a column: day(col)")
	fs.Var(&o.TargetFileSize, "target-file-size", "target size of data files written to the table (default 256MiB)")
}

// Validate parses the schema, the partition spec and the target size.
func (o *Create) Validate() error {
	switch {
	case o.FromRegistry != "" && o.Schema != "":
		return bad("schema-from-registry", "and --schema: give one")
	case o.FromRegistry != "" && o.Registry == "":
		return bad("schema-from-registry", "needs --schema-registry URL")
	case o.Registry != "" && o.FromRegistry == "":
		return bad("schema-registry", "is for --schema-from-registry SUBJECT")
	case o.Schema == "" && o.FromRegistry == "":
		return bad("schema", "is required (or --schema-from-registry SUBJECT)")
	}
	o.props = map[string]string{}
	if o.Schema != "" {
		schema, err := loadSchema(o.Schema)
		if err != nil {
			return bad("schema", "%v", err)
		}
		spec, err := catalog.ParsePartitionSpec(o.PartitionBy, schema)
		if err != nil {
			return bad("partition-by", "%v", err)
		}
		o.schema, o.spec = schema, spec
	}
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
	if o.FromRegistry != "" {
		schema, err := ingest.SchemaFromRegistry(ctx, o.Registry, o.FromRegistry)
		if err != nil {
			return &res, classify(fmt.Errorf("init %s: %w", cloud.Redact(o.Table), err))
		}
		spec, err := catalog.ParsePartitionSpec(o.PartitionBy, schema)
		if err != nil {
			return &res, classify(bad("partition-by", "%v", err))
		}
		o.schema, o.spec = schema, spec
	}
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
