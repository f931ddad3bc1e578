package inspect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// QuarantineSuffix makes a table's quarantine location from its own (as
// ingest names it by default).
const QuarantineSuffix = "_quarantine"

// MaxReasonBytes is how much of a reason groups quarantined rows: reasons
// that differ further on (an offset, a value) count as one.
const MaxReasonBytes = 200

// QuarantineOf is the location of the quarantine of the table at loc.
func QuarantineOf(loc string) string { return strings.TrimRight(loc, "/") + QuarantineSuffix }

// quarantine reads the reasons of t's quarantine, nil when it has none
// (no sluice table there, or one without a reason column). Only the
// reason column of its files is read.
func quarantine(ctx context.Context, t *Table) (*Quarantine, error) {
	loc := QuarantineOf(t.loc)
	qt, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		return nil, nil // no folder there: no quarantine
	}
	defer qt.Close()
	m, err := qt.Latest(ctx)
	if errors.Is(err, catalog.ErrTableNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	col, ok := m.Schema.Column("reason")
	if !ok || col.Type.Kind != catalog.KindString {
		return nil, nil
	}
	files, err := qt.Files(ctx, m)
	if err != nil {
		return nil, err
	}
	q := &Quarantine{Table: cloud.Redact(loc)}
	counts := map[string]int64{}
	for _, f := range files {
		st, key, err := qt.DataFileStore(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", cloud.Redact(qt.FileURL(f)), err)
		}
		err = pqio.ScanParquetColumn(ctx, st, key, f.Bytes, col, func(v any) error {
			q.Rows++
			s, _ := v.(string)
			counts[cutReason(s)]++
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", cloud.Redact(qt.FileURL(f)), err)
		}
	}
	q.Reasons = make([]ReasonCount, 0, len(counts))
	for r, n := range counts {
		q.Reasons = append(q.Reasons, ReasonCount{Reason: r, Count: n})
	}
	sort.Slice(q.Reasons, func(i, j int) bool {
		a, b := q.Reasons[i], q.Reasons[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Reason < b.Reason
	})
	return q, nil
}

// cutReason is the first MaxReasonBytes of s, cut on a character
// boundary.
func cutReason(s string) string {
	if len(s) <= MaxReasonBytes {
		return s
	}
	s = s[:MaxReasonBytes]
	for len(s) > 0 {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}
