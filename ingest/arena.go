package ingest

import (
	"sync"
	"sync/atomic"
)

// A JSON lines file's records are decoded a block at a time (see
// decodeJSONL), and every string, boxed value and row of a block's
// records is cut from the block's arena: slab chunks, box chunks and row
// chunks, as a decoder's own strSlab, boxes and newRow cut them. Without
// arenas those chunks are garbage once the rows are written, and at the
// rate an ingest decodes that garbage was most of what the collector
// traced and freed (a cycle every half second). An arena is reused
// instead, once nothing holds a row cut from it: its block was handed on
// whole, and every sink batch that took one of its rows was written (the
// Parquet writers copy what they keep) or dropped.
//
// An arena that is never released is only garbage: a missed release
// costs a reuse, never a value. A release too early would let the next
// block overwrite rows still buffered, so releases are few and counted:
// one for the block's decoding, one for each sink batch holding its rows.
type arena struct {
	slab strSlab
	box  boxes
	rows chunks[any]
	refs atomic.Int32
	pool *arenaPool
}

// arenaPool holds arenas free for reuse.
type arenaPool struct {
	mu   sync.Mutex
	free []*arena
	// poison, in tests, overwrites a released arena's values, so that a
	// row used after its release reads as garbage.
	poison bool
}

// poisonArenas makes new pools poison what they release; tests set it.
var poisonArenas = false

// maxFreeArenas bounds the arenas a pool keeps; more are left to the
// collector. A block's arena holds about its block's size (256 KiB), so
// this is more than the default memory budget's rows.
const maxFreeArenas = 1024

// get returns a free arena, or a new one, holding one reference: its
// block's.
func (p *arenaPool) get() *arena {
	p.mu.Lock()
	var a *arena
	if n := len(p.free); n > 0 {
		a, p.free = p.free[n-1], p.free[:n-1]
	}
	p.mu.Unlock()
	if a == nil {
		a = &arena{pool: p, slab: strSlab{reuse: true}, box: arenaBoxes()}
		a.rows.reuse = true
	}
	a.refs.Store(1)
	liveArenas.Add(1)
	return a
}

// liveArenas counts the arenas handed out and not yet released, over
// every pool: once a run's rows are written, none is (a test checks it).
var liveArenas atomic.Int64

// hold adds a reference: a sink batch took a row of a.
func (a *arena) hold() { a.refs.Add(1) }

// release drops a reference; the last one makes a free for reuse.
func (a *arena) release() {
	n := a.refs.Add(-1)
	if n > 0 {
		return
	}
	if n < 0 {
		panic("ingest: arena released more often than held")
	}
	liveArenas.Add(-1)
	p := a.pool
	a.slab.reset(p.poison)
	a.box.reset(p.poison)
	a.rows.reset(p.poison)
	p.mu.Lock()
	if len(p.free) < maxFreeArenas {
		p.free = append(p.free, a)
	}
	p.mu.Unlock()
}

// chunks cuts values from chunks of boxChunk, and with reuse keeps every
// chunk it cut so that reset can cut them again.
type chunks[T any] struct {
	cur   []T
	all   [][]T
	next  int // the index in all of the chunk after cur
	reuse bool
}

// take returns n consecutive free elements.
func (c *chunks[T]) take(n int) []T {
	if len(c.cur) < n {
		size := max(boxChunk, n)
		switch {
		case c.next < len(c.all) && len(c.all[c.next]) >= n:
			c.cur = c.all[c.next]
			c.next++
		case c.reuse:
			c.cur = make([]T, size)
			c.all = append(c.all, c.cur)
			c.next = len(c.all)
		default:
			c.cur = make([]T, size)
		}
	}
	s := c.cur[:n:n]
	c.cur = c.cur[n:]
	return s
}

// reset makes every chunk free again.
func (c *chunks[T]) reset(poison bool) {
	if poison {
		for _, ch := range c.all {
			clear(ch)
		}
	}
	c.cur, c.next = nil, 0
}
