package faults

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// TCPProxy forwards TCP connections from its own address to a target
// (a broker), and can cut them: Cut drops every open connection and
// refuses new ones for a while, which a client sees as the server going
// down and coming back — a restart that keeps the server's data.
type TCPProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	downTo time.Time
	cuts   int
	wg     sync.WaitGroup
	closed bool
}

// NewTCPProxy listens on addr ("127.0.0.1:0" for any port) and forwards
// to target until Close.
func NewTCPProxy(addr, target string) (*TCPProxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &TCPProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr returns the address clients dial.
func (p *TCPProxy) Addr() string { return p.ln.Addr().String() }

// Cut drops every open connection and refuses new ones (accepting and
// closing them at once) for d.
func (p *TCPProxy) Cut(d time.Duration) {
	p.mu.Lock()
	p.downTo = time.Now().Add(d)
	p.cuts++
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

// Cuts returns how many times Cut was called.
func (p *TCPProxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// Close stops listening, drops every connection and waits for the
// proxy's goroutines to end.
func (p *TCPProxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *TCPProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.mu.Lock()
		down := time.Now().Before(p.downTo) || p.closed
		if !down {
			p.conns[c] = struct{}{}
		}
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go p.pipe(c)
	}
}

// pipe copies both ways between c and a new connection to the target
// until either side ends, then closes both.
func (p *TCPProxy) pipe(c net.Conn) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		c.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	var d net.Dialer
	up, err := d.DialContext(ctx, "tcp", p.target)
	cancel()
	if err != nil {
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		up.Close()
		return
	}
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, up)
		p.mu.Unlock()
		up.Close()
	}()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); up.Close(); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); c.Close(); done <- struct{}{} }()
	<-done
	<-done
}
