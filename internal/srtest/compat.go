package srtest

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
)

// compatLevels maps each level to whether it checks backward and forward
// and whether it is transitive.
var compatLevels = map[string]struct{ backward, forward, transitive bool }{
	"NONE":                {},
	"BACKWARD":            {backward: true},
	"BACKWARD_TRANSITIVE": {backward: true, transitive: true},
	"FORWARD":             {forward: true},
	"FORWARD_TRANSITIVE":  {forward: true, transitive: true},
	"FULL":                {backward: true, forward: true},
	"FULL_TRANSITIVE":     {backward: true, forward: true, transitive: true},
}

// compatAnswer is the body of the compatibility routes.
type compatAnswer struct {
	IsCompatible bool     `json:"is_compatible"`
	Messages     []string `json:"messages,omitempty"`
}

func answer(req *http.Request, problems []string) compatAnswer {
	a := compatAnswer{IsCompatible: len(problems) == 0}
	if verbose, _ := strconv.ParseBool(req.URL.Query().Get("verbose")); verbose {
		a.Messages = append([]string{}, problems...)
	}
	return a
}

func (r *Registry) checkVersion(req *http.Request) (any, *apiError) {
	subject := req.PathValue("subject")
	version, aerr := parseVersion(req.PathValue("version"))
	if aerr != nil {
		return nil, aerr
	}
	var body schemaRequest
	if aerr := decodeBody(req, &body); aerr != nil {
		return nil, aerr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v, aerr := r.liveVersion(subject, version)
	if aerr != nil {
		return nil, aerr
	}
	cand, aerr := r.candidate(body)
	if aerr != nil {
		return nil, aerr
	}
	problems, aerr := r.compatProblems(r.level(subject), cand, r.schemas[v.id-1])
	if aerr != nil {
		return nil, aerr
	}
	return answer(req, problems), nil
}

func (r *Registry) checkSubject(req *http.Request) (any, *apiError) {
	subject := req.PathValue("subject")
	var body schemaRequest
	if aerr := decodeBody(req, &body); aerr != nil {
		return nil, aerr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cand, aerr := r.candidate(body)
	if aerr != nil {
		return nil, aerr
	}
	problems, aerr := r.checkSubjectLocked(subject, cand)
	if aerr != nil {
		return nil, aerr
	}
	return answer(req, problems), nil
}

// checkSubjectLocked checks cand against a subject's latest version, or all
// its versions at a transitive level. The caller holds r.mu.
func (r *Registry) checkSubjectLocked(subject string, cand *schemaRecord) ([]string, *apiError) {
	s := r.subjects[subject]
	if s == nil {
		return nil, nil
	}
	live := s.live()
	level := r.level(subject)
	if !compatLevels[level].transitive && len(live) > 0 {
		live = live[len(live)-1:]
	}
	var problems []string
	for _, v := range live {
		p, aerr := r.compatProblems(level, cand, r.schemas[v.id-1])
		if aerr != nil {
			return nil, aerr
		}
		for _, msg := range p {
			problems = append(problems, fmt.Sprintf("version %d: %s", v.version, msg))
		}
	}
	return problems, nil
}

// compatProblems lists why cand may not follow old at a compatibility
// level; none means compatible. Only Avro is really checked. The caller
// holds r.mu.
func (r *Registry) compatProblems(level string, cand, old *schemaRecord) ([]string, *apiError) {
	mode := compatLevels[level]
	if !mode.backward && !mode.forward {
		return nil, nil
	}
	if cand.typ != old.typ {
		return []string{fmt.Sprintf("schema type changed from %s to %s", old.typ, cand.typ)}, nil
	}
	if cand.typ != TypeAvro {
		return nil, nil
	}
	newer, err := r.parseAvro(cand)
	if err != nil {
		return nil, invalidSchema("%v", err)
	}
	older, err := r.parseAvro(old)
	if err != nil {
		return nil, errorf(http.StatusInternalServerError, 50001, "parse stored schema %d: %v", old.id, err)
	}
	var problems []string
	if mode.backward {
		if err := avro.NewSchemaCompatibility().Compatible(newer, older); err != nil {
			problems = append(problems, "new schema cannot read data written with the old one: "+err.Error())
		}
	}
	if mode.forward {
		if err := avro.NewSchemaCompatibility().Compatible(older, newer); err != nil {
			problems = append(problems, "old schema cannot read data written with the new one: "+err.Error())
		}
	}
	return problems, nil
}

// parseAvro parses an Avro schema, with the named types of the schemas
// it references, by hamba/avro. The caller holds r.mu.
func (r *Registry) parseAvro(rec *schemaRecord) (avro.Schema, error) {
	cache := &avro.SchemaCache{}
	if err := r.loadAvroRefs(cache, rec.refs, 0, map[int]bool{}); err != nil {
		return nil, err
	}
	return avro.ParseWithCache(rec.text, "", cache)
}

// loadAvroRefs parses the referenced Avro schemas into cache.
func (r *Registry) loadAvroRefs(cache *avro.SchemaCache, refs []sr.SchemaReference, depth int, loaded map[int]bool) error {
	if depth > 32 {
		return errors.New("references nested too deeply")
	}
	for _, ref := range refs {
		v, aerr := r.liveVersion(ref.Subject, ref.Version)
		if aerr != nil {
			return fmt.Errorf("reference %q: %s", ref.Name, aerr.msg)
		}
		dep := r.schemas[v.id-1]
		if loaded[dep.id] || dep.typ != TypeAvro {
			continue
		}
		loaded[dep.id] = true
		if err := r.loadAvroRefs(cache, dep.refs, depth+1, loaded); err != nil {
			return err
		}
		if _, err := avro.ParseWithCache(dep.text, "", cache); err != nil {
			return fmt.Errorf("reference %q: %w", ref.Name, err)
		}
	}
	return nil
}
