package scheduler

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// jobKeys are a job's own keys; any other key must name its kind.
var jobKeys = []string{"schedule", "after", "retries", "timeout", "overlap", "catchup", "parallel"}

var jobName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// jobNodes keeps the nodes links reports on.
type jobNodes struct {
	key, after, schedule, kind *yaml.Node
	afterItems                 []*yaml.Node
}

func (ps *parser) job(k, v *yaml.Node) {
	path := "jobs." + k.Value
	if !jobName.MatchString(k.Value) {
		ps.fail(k, path, "bad job name: letters, digits, '.', '_' and '-', starting with a letter or digit (it names the run records' folder)")
	}
	j := &Job{Name: k.Value, Pos: ps.pos(k), Overlap: OverlapSkip, Catchup: 1, Parallel: 1}
	nodes := &jobNodes{key: k}
	for _, kv := range ps.pairs(v, path) {
		key, val := kv[0], kv[1]
		kp := join(path, key.Value)
		switch key.Value {
		case "schedule":
			if s, ok := ps.scalar(val, kp); ok {
				sched, err := ParseSchedule(s)
				switch {
				case err != nil && envRef.MatchString(val.Value):
					ps.fail(val, kp, "bad cron spec %s", shown(val)) // the error would echo the expanded value
				case err != nil:
					ps.fail(val, kp, "bad cron spec %s: %v", shown(val), err)
				}
				j.Spec, j.Schedule, nodes.schedule = s, sched, val
			}
		case "after":
			nodes.after = val
			if val.Kind == yaml.ScalarNode && val.Tag != "!!null" {
				nodes.afterItems = []*yaml.Node{val}
			} else if val.Kind == yaml.SequenceNode {
				nodes.afterItems = val.Content
			} else {
				ps.fail(val, kp, "want a list of job names, got %s", kindName(val))
			}
			for _, it := range nodes.afterItems {
				if s, ok := ps.scalar(it, kp); ok {
					j.After = append(j.After, s)
				}
			}
		case "retries":
			ps.retries(val, kp, &j.Retries)
		case "timeout":
			j.Timeout = ps.duration(val, kp)
		case "overlap":
			if s, ok := ps.scalar(val, kp); ok {
				if s != string(OverlapSkip) && s != string(OverlapQueue) {
					ps.fail(val, kp, "%s: want skip or queue", shown(val))
				}
				j.Overlap = Overlap(s)
			}
		case "catchup":
			j.Catchup = ps.count(val, kp)
		case "parallel":
			j.Parallel = ps.count(val, kp)
		default:
			if _, ok := ps.kinds[key.Value]; !ok {
				ps.fail(key, kp, "unknown key (want %s, or a job kind: %s)", strings.Join(jobKeys, ", "), strings.Join(ps.kindNames(), ", "))
				continue
			}
			if j.Kind != "" {
				ps.fail(key, kp, "a job has one kind; this one is already %s", j.Kind)
				continue
			}
			j.Kind, nodes.kind = key.Value, key
			ps.options(j, val, kp)
		}
	}
	if j.Kind == "" {
		ps.fail(k, path, "no job kind: give one of %s", strings.Join(ps.kindNames(), ", "))
	}
	if j.Schedule == nil && len(j.After) == 0 && nodes.schedule == nil {
		ps.fail(k, path, "no schedule and no after: nothing would ever run it")
	}
	ps.p.Jobs[j.Name] = j
	ps.p.Order = append(ps.p.Order, j.Name)
	if ps.nodes == nil {
		ps.nodes = map[string]*jobNodes{}
	}
	ps.nodes[j.Name] = nodes
}

func (ps *parser) kindNames() []string {
	var names []string
	for n := range ps.kinds {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (ps *parser) options(j *Job, v *yaml.Node, path string) {
	for _, kv := range ps.pairs(v, path) {
		key, val := kv[0], kv[1]
		o := Option{Key: key.Value, Pos: ps.pos(key)}
		kp := join(path, key.Value)
		if val.Kind == yaml.SequenceNode {
			o.IsList = true
			for _, it := range val.Content {
				if s, ok := ps.scalar(it, kp); ok {
					o.List = append(o.List, s)
				}
			}
		} else if s, ok := ps.scalar(val, kp); ok {
			o.Value = s
		} else {
			continue
		}
		j.Options = append(j.Options, o)
	}
}

func (ps *parser) retries(v *yaml.Node, path string, r *Retries) {
	for _, kv := range ps.pairs(v, path) {
		key, val := kv[0], kv[1]
		kp := join(path, key.Value)
		switch key.Value {
		case "max":
			r.Max = ps.count(val, kp)
		case "backoff":
			r.Backoff = ps.duration(val, kp)
		case "max_backoff":
			r.MaxBackoff = ps.duration(val, kp)
		default:
			ps.fail(key, kp, "unknown key (want max, backoff or max_backoff)")
		}
	}
	if r.Backoff == 0 {
		r.Backoff = 10 * time.Second
	}
	if r.MaxBackoff == 0 {
		r.MaxBackoff = max(r.Backoff, 10*time.Minute)
	}
	if r.MaxBackoff < r.Backoff {
		ps.fail(v, join(path, "max_backoff"), "shorter than backoff")
	}
}

func (ps *parser) duration(v *yaml.Node, key string) time.Duration {
	s, ok := ps.scalar(v, key)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		ps.fail(v, key, "bad duration %s: want a positive Go duration such as 30s, 5m or 1h30m", shown(v))
		return 0
	}
	return d
}

func (ps *parser) count(v *yaml.Node, key string) int {
	s, ok := ps.scalar(v, key)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		ps.fail(v, key, "%s: want a whole number >= 1", shown(v))
	}
	return n
}

// links checks what spans jobs: after names, cycles, inherited
// schedules; then each kind's options.
func (ps *parser) links() {
	p := ps.p
	for _, name := range p.Order {
		j, n := p.Jobs[name], ps.nodes[name]
		for i, up := range j.After {
			if _, ok := p.Jobs[up]; !ok {
				ps.fail(n.afterItems[i], "jobs."+name+".after", "unknown job %q", up)
			} else if up == name {
				ps.fail(n.afterItems[i], "jobs."+name+".after", "a job cannot run after itself")
			}
		}
	}
	if len(ps.errs) > 0 {
		return
	}
	for _, name := range p.Order {
		if cyc := ps.cycle(name, nil); cyc != nil {
			ps.fail(ps.nodes[name].after, "jobs."+name+".after", "cycle: %s", strings.Join(cyc, " -> "))
			return
		}
	}
	for _, name := range p.Order {
		ps.inherit(p.Jobs[name])
	}
	for _, name := range p.Order {
		j := p.Jobs[name]
		for _, up := range j.After {
			if u := p.Jobs[up]; u.Spec != j.Spec {
				at := ps.nodes[name].schedule
				if at == nil {
					at = ps.nodes[name].key
				}
				ps.fail(at, "jobs."+name+".schedule",
					"differs from upstream %s's schedule: a job runs after another for the same intervals", up)
			}
		}
	}
}

// kindChecks has each job's kind check its options.
func (ps *parser) kindChecks() {
	for _, name := range ps.p.Order {
		j := ps.p.Jobs[name]
		k, ok := ps.kinds[j.Kind]
		if !ok {
			continue
		}
		for _, oe := range k.Check(ps.p, j) {
			pos := ps.pos(ps.nodes[name].kind)
			if o, ok := j.Option(oe.Key); ok {
				pos = o.Pos
			}
			key := "jobs." + name + "." + j.Kind
			if oe.Key != "" { // "": the options together, not one of them
				key += "." + oe.Key
			}
			ps.errs = append(ps.errs, &Error{Pos: pos, Key: key, Msg: oe.Msg})
		}
	}
}

// cycle returns a path of after-links from name back to itself, if any.
func (ps *parser) cycle(name string, path []string) []string {
	if i := slices.Index(path, name); i >= 0 {
		return append(path[i:], name)
	}
	path = append(path, name)
	for _, up := range ps.p.Jobs[name].After {
		if c := ps.cycle(up, path); c != nil {
			return c
		}
	}
	return nil
}

func (ps *parser) inherit(j *Job) {
	if j.Schedule != nil || len(j.After) == 0 {
		return
	}
	u := ps.p.Jobs[j.After[0]]
	ps.inherit(u)
	j.Spec, j.Schedule = u.Spec, u.Schedule
}

// Downstream returns the jobs that run after name, in file order.
func (p *Pipeline) Downstream(name string) []*Job {
	var out []*Job
	for _, n := range p.Order {
		if slices.Contains(p.Jobs[n].After, name) {
			out = append(out, p.Jobs[n])
		}
	}
	return out
}

// Job returns the job named name, or ErrUnknownJob.
func (p *Pipeline) Job(name string) (*Job, error) {
	j, ok := p.Jobs[name]
	if !ok {
		return nil, fmt.Errorf("job %q: %w (the file has %s)", name, ErrUnknownJob, strings.Join(p.Order, ", "))
	}
	return j, nil
}
