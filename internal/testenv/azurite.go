package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
)

// errAzuriteMissing is the failure when tools/ was never installed.
var errAzuriteMissing = errors.New(`azurite not installed: run "make tools" (npm install in tools/)`)

type azurite struct {
	cmd  *exec.Cmd
	port int
	dir  string
	done chan struct{} // closed when the process has exited
	log  *bytes.Buffer
}

var (
	azMu  sync.Mutex
	azCur *azurite
	azErr error // a failed start is not retried: every test reports it
)

// azuriteConnectionString is the connection string of an Azurite on port,
// signed with key.
func azuriteConnectionString(port int, key string) string {
	return fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=http://127.0.0.1:%d/%s;",
		AzuriteAccount, key, port, AzuriteAccount)
}

func (a *azurite) env() []string {
	return []string{"AZURE_STORAGE_CONNECTION_STRING=" + azuriteConnectionString(a.port, AzuriteAccountKey)}
}

// repoRoot walks up from the working directory to the folder holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: no go.mod above the working directory")
		}
		dir = parent
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startAzurite starts Azurite once and points the process env at it.
func startAzurite() (*azurite, error) {
	azMu.Lock()
	defer azMu.Unlock()
	if azCur != nil || azErr != nil {
		return azCur, azErr
	}
	a, err := launchAzurite()
	if err != nil {
		azErr = err
		return nil, err
	}
	for _, kv := range a.env() {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			a.stop()
			azErr = fmt.Errorf("testenv: setenv %s: %w", k, err)
			return nil, azErr
		}
	}
	azCur = a
	return a, nil
}

func launchAzurite() (*azurite, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(root, "tools", "node_modules", ".bin", "azurite-blob")
	if _, err := os.Stat(bin); err != nil {
		return nil, errAzuriteMissing
	}
	var lastErr error
	for try := 0; try < 3; try++ { // another process may grab the free port first
		a, err := launchAzuriteOnce(bin)
		if err == nil {
			return a, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func launchAzuriteOnce(bin string) (*azurite, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("testenv: azurite: free port: %w", err)
	}
	dir, err := os.MkdirTemp("", "sluice-azurite-")
	if err != nil {
		return nil, fmt.Errorf("testenv: azurite: %w", err)
	}
	a := &azurite{port: port, dir: dir, done: make(chan struct{}), log: new(bytes.Buffer)}
	a.cmd = exec.Command(bin,
		"--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(port),
		"--location", dir, "--skipApiVersionCheck", "--silent", "--loose")
	a.cmd.Dir = dir
	a.cmd.Stdout = &lockedWriter{b: a.log}
	a.cmd.Stderr = a.cmd.Stdout
	a.cmd.SysProcAttr = childAttr()
	if err := a.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("testenv: start azurite (is node on PATH?): %w", err)
		}
		return nil, fmt.Errorf("testenv: start azurite: %w", err)
	}
	go func() {
		_ = a.cmd.Wait()
		close(a.done)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return a, nil
		}
		select {
		case <-a.done:
			a.stop()
			return nil, fmt.Errorf("testenv: azurite exited before serving on port %d: %s", port, strings.TrimSpace(a.log.String()))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			a.stop()
			return nil, fmt.Errorf("testenv: azurite did not answer on port %d within 30s", port)
		}
	}
}

type lockedWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (a *azurite) stop() {
	if a.cmd.Process != nil {
		killChild(a.cmd.Process)
		select {
		case <-a.done:
		case <-time.After(10 * time.Second):
		}
	}
	os.RemoveAll(a.dir)
}

func stopAzurite() {
	azMu.Lock()
	defer azMu.Unlock()
	if azCur != nil {
		azCur.stop()
		azCur = nil
	}
}

func mustAzurite(t testing.TB) *azurite {
	t.Helper()
	a, err := startAzurite()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// AzuriteConnectionString starts Azurite if needed and returns a
// connection string for it signed with accountKey — AzuriteAccountKey for
// one that works, anything else for one Azurite refuses.
func AzuriteConnectionString(t testing.TB, accountKey string) string {
	t.Helper()
	return azuriteConnectionString(mustAzurite(t).port, accountKey)
}

// NewContainer creates a new, empty container on Azurite and returns its
// name.
func NewContainer(t testing.TB) string {
	t.Helper()
	a := mustAzurite(t)
	client, err := azblob.NewClientFromConnectionString(azuriteConnectionString(a.port, AzuriteAccountKey), nil)
	if err != nil {
		t.Fatalf("testenv: azurite client: %v", err)
	}
	name := randomName("sluice-")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.CreateContainer(ctx, name, nil); err != nil {
		t.Fatalf("testenv: create container %s: %v", name, err)
	}
	return name
}
