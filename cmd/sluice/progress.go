package main

import (
	"sync"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// progressBar draws a bar on stderr for a person at a terminal; elsewhere
// (pipes, CI, --json) it is silent and costs nothing.
type progressBar struct {
	once sync.Once
	name string
	p    *mpb.Progress
	bar  *mpb.Bar
	mu   sync.Mutex
	on   bool
}

func (a *app) progress(name string) *progressBar {
	return &progressBar{name: name, on: !a.jsonOut && stderrIsTTY()}
}

// Set reports done of total units; safe for concurrent use.
func (b *progressBar) Set(done, total int64) {
	if !b.on {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.once.Do(func() {
		b.p = mpb.New(mpb.WithWidth(40))
		b.bar = b.p.AddBar(total,
			mpb.PrependDecorators(decor.Name(b.name+" "), decor.CountersNoUnit("%d/%d")),
			mpb.AppendDecorators(decor.Percentage(), decor.Name(" "), decor.AverageETA(decor.ET_STYLE_GO)))
	})
	if done > b.bar.Current() {
		b.bar.SetCurrent(done)
	}
}

// Done finishes the bar (if one was drawn) and waits for its last frame.
func (b *progressBar) Done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		if !b.bar.Completed() {
			b.bar.Abort(false)
		}
		b.p.Wait()
	}
}
