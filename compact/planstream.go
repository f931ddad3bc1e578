package compact

import (
	"context"
	"fmt"
	"sort"

	"github.com/sluice-data/sluice/catalog"
)

// partitioned is a Table whose live files can be read one partition at a
// time (a sluice table: its manifest lists partitions, each partition its
// pieces).
type partitioned interface {
	Partitions(ctx context.Context, m *catalog.Manifest) ([]catalog.PartitionRef, error)
	PartitionFiles(ctx context.Context, ref catalog.PartitionRef) ([]catalog.DataFile, error)
}

// planTable plans the compaction of version m of t as PlanCompaction
// plans its files. A table read a partition at a time is planned that
// way: only one partition's file list is held at once, with the bins
// planned so far, so a plan of a table with millions of files in
// thousands of partitions does not hold them all. Other tables are
// planned from their whole file list.
func planTable(ctx context.Context, t Table, m *catalog.Manifest, o PlanOptions) (Plan, error) {
	pt, ok := t.(partitioned)
	if !ok {
		files, err := t.Files(ctx, m)
		if err != nil {
			return Plan{}, err
		}
		return PlanCompaction(files, o)
	}
	if err := o.Validate(); err != nil {
		return Plan{}, err
	}
	refs, err := pt.Partitions(ctx, m)
	if err != nil {
		return Plan{}, err
	}
	var wanted map[string]bool
	if len(o.Partitions) > 0 {
		wanted = map[string]bool{}
		for _, p := range o.Partitions {
			wanted[p] = true
		}
	}
	one := o
	one.Partitions = nil
	plan := Plan{Target: o.withDefaults().TargetFileSize}
	seen := map[string]bool{}
	for _, ref := range refs {
		if wanted != nil && !wanted[ref.Partition] {
			continue
		}
		if seen[ref.Partition] {
			return Plan{}, fmt.Errorf("plan: partition %s listed twice", ref.Partition)
		}
		seen[ref.Partition] = true
		files, err := pt.PartitionFiles(ctx, ref)
		if err != nil {
			return Plan{}, err
		}
		for i := range files {
			files[i].Partition = ref.Partition
		}
		p, err := PlanCompaction(files, one)
		if err != nil {
			return Plan{}, err
		}
		plan.Partitions = append(plan.Partitions, p.Partitions...)
	}
	// A partition asked for that the table lacks is planned as
	// PlanCompaction plans it: skipped, with no live files.
	for p := range wanted {
		if !seen[p] {
			only := o
			only.Partitions = []string{p}
			missing, err := PlanCompaction(nil, only)
			if err != nil {
				return Plan{}, err
			}
			plan.Partitions = append(plan.Partitions, missing.Partitions...)
		}
	}
	sort.Slice(plan.Partitions, func(i, j int) bool { return plan.Partitions[i].Partition < plan.Partitions[j].Partition })
	return plan, nil
}
