package warehouse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
)

// ErrNotOnS3 is a table published to Redshift that is not on S3: Redshift
// COPY reads only from S3.
var ErrNotOnS3 = errors.New("redshift loads only a table on s3://")

// manifestDir is the folder, inside the table's location, where the
// manifests Redshift's COPY reads are written. The catalog neither lists
// nor vacuums it.
const manifestDir = "_sluice_publish/"

// iamRoleRE is an IAM role ARN (arn:aws:iam::123456789012:role/name, the
// other partitions too); anything else is refused, not spliced into SQL.
var iamRoleRE = regexp.MustCompile(`^arn:aws[a-z-]*:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$`)

// redshiftType is the Redshift type of a column: no uuid (VARCHAR(36)),
// text as the longest VARCHAR (Redshift's TEXT is VARCHAR(256), which
// would truncate), binary as VARBYTE.
func redshiftType(t catalog.Type) (string, bool) {
	switch t.Kind {
	case catalog.KindUUID:
		return "VARCHAR(36)", true
	case catalog.KindString:
		return "VARCHAR(65535)", true
	case catalog.KindBinary:
		return "VARBYTE(1024000)", true
	}
	return pgType(t)
}

func redshiftColumnDefs(schema catalog.Schema) (string, error) {
	defs := make([]string, len(schema.Columns))
	for i, c := range schema.Columns {
		typ, ok := redshiftType(c.Type)
		if !ok {
			return "", fmt.Errorf("column %q: %s: %w", c.Name, c.Type, ErrUnsupportedType)
		}
		if len(c.Name) > 127 || strings.IndexByte(c.Name, 0) >= 0 {
			return "", fmt.Errorf("column %q: %w: longer than 127 bytes", c.Name, ErrInvalidName)
		}
		d := pgx.Identifier{c.Name}.Sanitize() + " " + typ
		if !c.Nullable {
			d += " NOT NULL"
		}
		defs[i] = d
	}
	return strings.Join(defs, ", "), nil
}

// manifestEntry is one file a COPY manifest lists; Parquet needs each
// file's content_length.
type manifestEntry struct {
	URL       string `json:"url"`
	Mandatory bool   `json:"mandatory"`
	Meta      struct {
		ContentLength int64 `json:"content_length"`
	} `json:"meta"`
}

// redshiftManifest is the COPY manifest of the table's files.
func redshiftManifest(t catalog.Readable, files []catalog.DataFile) ([]byte, error) {
	entries := make([]manifestEntry, len(files))
	for i, f := range files {
		entries[i].URL, entries[i].Mandatory, entries[i].Meta.ContentLength = t.FileURL(f), true, f.Bytes
	}
	return encodeManifest(entries)
}

func encodeManifest(entries []manifestEntry) ([]byte, error) {
	if entries == nil {
		entries = []manifestEntry{}
	}
	b, err := json.MarshalIndent(struct {
		Entries []manifestEntry `json:"entries"`
	}{entries}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return append(b, '\n'), nil
}

// redshiftPlan is the statements of a Redshift publish, all in one
// transaction: the first group before the COPY (NAME_new created), the
// COPY, then the swap.
type redshiftPlan struct {
	before []string
	copy   string
	swap   []string
}

// plainLiteral is s as a SQL string literal, for the statements Redshift
// takes no bind parameters in (COPY, COMMENT): s must hold no quote, no
// backslash (an escape in Redshift's literals) and no control character,
// so that no reading of the literal can end it early; anything else is
// refused, never quoted by hand.
func plainLiteral(what, s string) (string, error) {
	if i := strings.IndexFunc(s, func(r rune) bool { return r == '\'' || r == '\\' || r < 0x20 || r == 0x7f }); i >= 0 {
		return "", fmt.Errorf("%s %q: holds %q, which sluice will not put in a Redshift statement", what, s, s[i:i+1])
	}
	return "'" + s + "'", nil
}

// planRedshift is the plan of publishing into tgt; exists says whether
// NAME is there to rename, oldKept whether a NAME_old kept by an earlier
// publish is there to drop.
func planRedshift(tgt target, cols, manifestURL, iamRole string, exists, oldKept, keepOld bool) (redshiftPlan, error) {
	newT, oldT := tgt.with("_new"), tgt.with("_old")
	from, err := plainLiteral("the COPY manifest", manifestURL)
	if err != nil {
		return redshiftPlan{}, err
	}
	role, err := plainLiteral("--iam-role", iamRole)
	if err != nil {
		return redshiftPlan{}, err
	}
	p := redshiftPlan{
		before: []string{"CREATE TABLE " + newT.sql() + " (" + cols + ")"},
		copy:   "COPY " + newT.sql() + " FROM " + from + " IAM_ROLE " + role + " FORMAT AS PARQUET MANIFEST",
	}
	if exists && oldKept {
		p.swap = append(p.swap, "DROP TABLE "+oldT.sql())
	}
	if exists {
		p.swap = append(p.swap, "ALTER TABLE "+tgt.sql()+" RENAME TO "+pgx.Identifier{oldT.name}.Sanitize())
	}
	p.swap = append(p.swap, "ALTER TABLE "+newT.sql()+" RENAME TO "+pgx.Identifier{tgt.name}.Sanitize())
	if exists && !keepOld {
		p.swap = append(p.swap, "DROP TABLE "+oldT.sql())
	}
	if exists && keepOld {
		mark, err := plainLiteral("the mark of "+oldT.String(), oldMark(tgt))
		if err != nil {
			return redshiftPlan{}, err
		}
		p.swap = append(p.swap, "COMMENT ON TABLE "+oldT.sql()+" IS "+mark)
	}
	return p, nil
}

// redshiftRecordTable creates and locks sluice_published: Redshift has
// no advisory locks, so the table's lock serialises publishes into the
// schema.
func redshiftRecordTable(tgt target) []string {
	return []string{
		"CREATE TABLE IF NOT EXISTS " + recordsOf(tgt) + ` ("target" VARCHAR(127) NOT NULL, "location" VARCHAR(65535) NOT NULL, ` +
			`"version" BIGINT NOT NULL, "rows" BIGINT NOT NULL, "run" VARCHAR(256) NOT NULL, "published_at" TIMESTAMPTZ NOT NULL, ` +
			`"identity" VARCHAR(65535))`,
		"LOCK " + recordsOf(tgt),
	}
}

// redshiftIdentityColumn is the query telling whether sluice_published
// has its identity column, and the statement giving one to the records
// of an older sluice.
func redshiftIdentityColumn(tgt target) (query, add string) {
	return `SELECT count(*) FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = 'identity'`,
		"ALTER TABLE " + recordsOf(tgt) + ` ADD COLUMN "identity" VARCHAR(65535)`
}

// redshiftRecord is the statements that record a publish: Redshift has
// no ON CONFLICT, so a delete and an insert.
func redshiftRecord(tgt target) (del, ins string) {
	return "DELETE FROM " + recordsOf(tgt) + ` WHERE "target" = $1`,
		"INSERT INTO " + recordsOf(tgt) + ` ("target", "identity", "location", "version", "rows", "run", "published_at") VALUES ($1, $2, $3, $4, $5, $6, $7)`
}

// redshiftLoader runs the COPY of plan inside tx; Redshift's is the
// statement itself.
type redshiftLoader func(ctx context.Context, tx pgx.Tx, copyStmt string) error

func execCopy(ctx context.Context, tx pgx.Tx, copyStmt string) error {
	_, err := tx.Exec(ctx, copyStmt)
	return err
}

// redshiftURL is the pgx connection string of a redshift:// URL: the same
// wire protocol, port 5439 by default.
func redshiftURL(u *url.URL) string {
	c := *u
	c.Scheme = "postgres"
	if c.Port() == "" && c.Host != "" {
		c.Host += ":5439"
	}
	return c.String()
}

// publishRedshift is Publish into Redshift: the manifest of the version's
// live files is written beside the table, then in ONE transaction NAME_new
// is created and loaded by COPY ... FORMAT AS PARQUET MANIFEST and renamed
// over NAME. Views need no recreation: Redshift's late-binding views (WITH
// NO SCHEMA BINDING) bind by name.
func publishRedshift(ctx context.Context, t catalog.Readable, tgt target, u *url.URL, o Options, load redshiftLoader) (Result, error) {
	loc, err := cloud.ParseLocation(t.Location())
	if err != nil || loc.Kind != cloud.KindS3 {
		return Result{}, fmt.Errorf("%s: %w (its COPY reads from S3; publish a copy of the table on s3://)", t.Location(), ErrNotOnS3)
	}
	if !iamRoleRE.MatchString(o.IAMRole) {
		return Result{}, fmt.Errorf("--iam-role %q: want the ARN of a role Redshift may assume to read the table (arn:aws:iam::ACCOUNT:role/NAME)", o.IAMRole)
	}
	m, err := t.Latest(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("read table: %w", err)
	}
	if c := folderColumn(m); c != "" {
		return Result{}, fmt.Errorf("column %q: %w: a partition column kept out of the data files (in folder names or a table log), which Redshift's COPY does not read",
			c, ErrUnsupportedType)
	}
	cols, err := redshiftColumnDefs(m.Schema)
	if err != nil {
		return Result{}, err
	}
	conn, err := connect(ctx, redshiftURL(u))
	if err != nil {
		return Result{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if tgt.schema == "" {
		if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&tgt.schema); err != nil {
			return Result{}, fmt.Errorf("current schema: %w", err)
		}
	}
	res := Result{Target: tgt.String(), Version: m.Version, Attempts: 1}
	log := o.Logger.With("target", res.Target, "version", m.Version)
	tx, err := conn.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := redshiftRecords(ctx, tx, tgt); err != nil {
		return res, err
	}
	exists, err := redshiftTarget(ctx, tx, tgt)
	if err != nil {
		return res, err
	}
	if !o.Force && exists {
		var id *string
		var v int64
		err := tx.QueryRow(ctx, `SELECT "identity", "version" FROM `+recordsOf(tgt)+` WHERE "target" = $1`, tgt.name).Scan(&id, &v)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return res, fmt.Errorf("read %s: %w", publishedTable, err)
		}
		if err == nil && id != nil && *id == t.Identity(m) && v == m.Version {
			res.Unchanged = true
			log.Info("version already published: nothing to do")
			return res, nil
		}
	}
	oldKept, err := redshiftLeftovers(ctx, tx, tgt, exists)
	if err != nil {
		return res, err
	}
	files, size, err := liveFiles(ctx, t, m)
	if err != nil {
		return res, err
	}
	res.Bytes = size
	body, err := redshiftManifest(t, files)
	if err != nil {
		return res, err
	}
	key := fmt.Sprintf("%sredshift-%s-v%d.manifest", manifestDir, tgt, m.Version)
	if _, err := t.Store().Put(ctx, key, bytes.NewReader(body), int64(len(body)), cloud.PutOptions{}); err != nil {
		return res, fmt.Errorf("write the COPY manifest: %w", err)
	}
	p, err := planRedshift(tgt, cols, t.Store().URL(key), o.IAMRole, exists, oldKept, o.KeepOld)
	if err != nil {
		return res, err
	}
	for _, s := range p.before {
		if _, err := tx.Exec(ctx, s); err != nil {
			return res, fmt.Errorf("%s: %w", s, err)
		}
	}
	if len(files) > 0 { // an empty version loads nothing
		if err := load(ctx, tx, p.copy); err != nil {
			return res, fmt.Errorf("copy into %s: %w", tgt.with("_new"), err)
		}
	}
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+tgt.with("_new").sql()).Scan(&res.Rows); err != nil {
		return res, fmt.Errorf("count %s: %w", tgt.with("_new"), err)
	}
	if res.Rows != m.Rows {
		return res, fmt.Errorf("copy into %s: %d rows, version %d has %d: %w", tgt.with("_new"), res.Rows, m.Version, m.Rows, ErrRowCount)
	}
	for _, s := range p.swap {
		if _, err := tx.Exec(ctx, s); err != nil {
			return res, fmt.Errorf("swap: %s: %w", s, err)
		}
	}
	del, ins := redshiftRecord(tgt)
	for _, s := range []string{del, ins} {
		args := []any{tgt.name, t.Identity(m), t.Store().URL(""), m.Version, res.Rows, o.RunID, time.Now().UTC()}
		if s == del {
			args = args[:1]
		}
		if _, err := tx.Exec(ctx, s, args...); err != nil {
			return res, fmt.Errorf("record in %s: %w", publishedTable, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return res, fmt.Errorf("commit: %w", err)
	}
	log.Info("swapped", "rows", res.Rows)
	return res, nil
}

// redshiftRecords creates and locks sluice_published, giving the records
// of an older sluice their identity column.
func redshiftRecords(ctx context.Context, tx pgx.Tx, tgt target) error {
	for _, s := range redshiftRecordTable(tgt) {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", publishedTable, err)
		}
	}
	query, add := redshiftIdentityColumn(tgt)
	var n int
	if err := tx.QueryRow(ctx, query, tgt.schema, publishedTable).Scan(&n); err != nil {
		return fmt.Errorf("read %s: %w", publishedTable, err)
	}
	if n == 0 {
		if _, err := tx.Exec(ctx, add); err != nil {
			return fmt.Errorf("add the identity column to %s: %w", publishedTable, err)
		}
	}
	return nil
}

// redshiftLeftovers refuses someone's NAME_new or NAME_old: load and
// swap are one transaction, so a NAME_new is never a publish's leftover,
// and a NAME_old is one only when a publish kept it (oldKept).
func redshiftLeftovers(ctx context.Context, tx pgx.Tx, tgt target, exists bool) (oldKept bool, err error) {
	newExists, _, err := leftover(ctx, tx, tgt.with("_new"), newMark(tgt))
	if err != nil {
		return false, err
	}
	if newExists {
		return false, taken(tgt.with("_new"), tgt)
	}
	oldExists, oldKept, err := leftover(ctx, tx, tgt.with("_old"), oldMark(tgt))
	if err != nil {
		return false, err
	}
	if exists && oldExists && !oldKept {
		return false, taken(tgt.with("_old"), tgt)
	}
	return oldKept, nil
}

// redshiftTarget tells whether tgt exists, failing with ErrNotATable when
// it is not a table.
func redshiftTarget(ctx context.Context, tx pgx.Tx, tgt target) (bool, error) {
	var kind string
	err := tx.QueryRow(ctx, `SELECT c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2`, tgt.schema, tgt.name).Scan(&kind)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("look up %s: %w", tgt, err)
	case kind != "r":
		return false, fmt.Errorf("%s is a %s: %w (sluice replaces only a table it can rename)", tgt, relkindName(kind), ErrNotATable)
	}
	return true, nil
}
