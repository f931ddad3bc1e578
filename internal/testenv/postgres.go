package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresPassword is the test server's superuser password (user
// "postgres"), a test-only value.
const PostgresPassword = "sluice-test-pg"

// errPostgresMissing is the failure when the server binaries are absent.
var errPostgresMissing = errors.New("testenv: PostgreSQL not installed (no initdb under /usr/lib/postgresql/*/bin or on PATH): " +
	"run make deps, which installs Debian's postgresql package (apt-get install postgresql), or set SLUICE_TEST_POSTGRES to a superuser URL")

// baseTempDir is the temporary folder as the process started: Run points
// TMPDIR at a folder only this user may enter, and the server runs as
// another.
var baseTempDir = os.TempDir()

type postgres struct {
	cmd  *exec.Cmd // nil when SLUICE_TEST_POSTGRES names the server
	url  *url.URL  // the superuser's, database "postgres"
	dir  string
	done chan struct{}
	log  *lockedWriter
}

var (
	pgMu  sync.Mutex
	pgCur *postgres
	pgErr error // a failed start is not retried: every test reports it
)

// PostgresURL starts the test server if needed (once per test process)
// and returns a superuser URL of a new, empty database on it, dropped when
// t ends. SLUICE_TEST_POSTGRES, when set, names a server to use instead.
func PostgresURL(t testing.TB) string {
	t.Helper()
	p, err := startPostgres()
	if err != nil {
		t.Fatal(err)
	}
	db := randomName("sluice_")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.url.String())
	if err != nil {
		t.Fatalf("testenv: postgres: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatalf("testenv: create database %s: %v", db, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, p.url.String()); err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	u := *p.url
	u.Path = "/" + db
	return u.String()
}

func startPostgres() (*postgres, error) {
	pgMu.Lock()
	defer pgMu.Unlock()
	if pgCur != nil || pgErr != nil {
		return pgCur, pgErr
	}
	if s := os.Getenv("SLUICE_TEST_POSTGRES"); s != "" {
		u, err := url.Parse(s)
		if err != nil {
			pgErr = fmt.Errorf("testenv: SLUICE_TEST_POSTGRES: %w", err)
			return nil, pgErr
		}
		pgCur = &postgres{url: u}
		return pgCur, nil
	}
	var lastErr error
	for try := 0; try < 3; try++ { // another process may grab the free port first
		p, err := launchPostgres()
		if err == nil {
			pgCur = p
			return p, nil
		}
		if errors.Is(err, errPostgresMissing) {
			pgErr = err
			return nil, err
		}
		lastErr = err
	}
	pgErr = lastErr
	return nil, lastErr
}

// postgresBin finds the server's binaries: Debian's newest under
// /usr/lib/postgresql, else initdb on PATH.
func postgresBin() (string, error) {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(found, func(i, j int) bool { return pgMajor(found[i]) > pgMajor(found[j]) })
	if len(found) > 0 {
		return filepath.Dir(found[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errPostgresMissing
}

func pgMajor(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// serverUser is the user the server runs as: the postgres user when the
// tests run as root, which the server refuses; as is false otherwise.
func serverUser() (uid, gid int, as bool, err error) {
	if os.Geteuid() != 0 {
		return -1, -1, false, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return 0, 0, false, fmt.Errorf("testenv: running as root, and the server refuses root: no postgres user to run it as: %w", err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, true, nil
}

func launchPostgres() (*postgres, error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	uid, gid, as, err := serverUser()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(baseTempDir, "sluice-postgres-")
	if err != nil {
		return nil, fmt.Errorf("testenv: postgres: %w", err)
	}
	p := &postgres{dir: dir, done: make(chan struct{}), log: &lockedWriter{b: new(bytes.Buffer)}}
	fail := func(err error) (*postgres, error) {
		p.stop()
		return nil, err
	}
	pwfile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwfile, []byte(PostgresPassword+"\n"), 0o600); err != nil {
		return fail(fmt.Errorf("testenv: postgres: %w", err))
	}
	if as {
		for _, f := range []string{dir, pwfile} {
			if err := os.Chown(f, uid, gid); err != nil {
				return fail(fmt.Errorf("testenv: postgres: chown: %w", err))
			}
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--pwfile", pwfile,
		"--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = userAttr(nil, uid, gid, as)
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("testenv: initdb: %v: %s", err, out))
	}
	port, err := freePort()
	if err != nil {
		return fail(fmt.Errorf("testenv: postgres: free port: %w", err))
	}
	p.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "fsync=off",
		"-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=100",
		"-c", "lc_messages=C")
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = userAttr(childAttr(), uid, gid, as)
	if err := p.cmd.Start(); err != nil {
		return fail(fmt.Errorf("testenv: start postgres: %w", err))
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	p.url = &url.URL{Scheme: "postgres", User: url.UserPassword("postgres", PostgresPassword),
		Host: fmt.Sprintf("127.0.0.1:%d", port), Path: "/postgres", RawQuery: "sslmode=disable"}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := pgx.Connect(ctx, p.url.String())
		if err == nil {
			c.Close(ctx)
			cancel()
			return p, nil
		}
		cancel()
		select {
		case <-p.done:
			return fail(fmt.Errorf("testenv: postgres exited before serving on port %d: %s", port, p.log.b.String()))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("testenv: postgres did not answer on port %d within 60s: %v", port, err))
		}
	}
}

// stop shuts the server down fast (SIGINT: abort transactions, then a
// clean exit) and removes its folder.
func (p *postgres) stop() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}

func stopPostgres() {
	pgMu.Lock()
	defer pgMu.Unlock()
	if pgCur != nil {
		pgCur.stop()
		pgCur = nil
	}
}
