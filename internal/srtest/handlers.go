package srtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/sr"
)

func (r *Registry) listSubjects(req *http.Request) (any, *apiError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := showDeleted(req)
	out := []string{}
	for name, s := range r.subjects {
		if len(s.versions) > 0 && (all || len(s.live()) > 0) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (r *Registry) listVersions(req *http.Request) (any, *apiError) {
	subject := req.PathValue("subject")
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.subjects[subject]
	if s == nil {
		return nil, subjectNotFound(subject)
	}
	versions := s.live()
	if showDeleted(req) {
		versions = s.versions
	}
	if len(versions) == 0 {
		return nil, subjectNotFound(subject)
	}
	out := make([]int, 0, len(versions))
	for _, v := range versions {
		out = append(out, v.version)
	}
	return out, nil
}

func (r *Registry) getVersion(req *http.Request) (any, *apiError) {
	subject := req.PathValue("subject")
	version, aerr := parseVersion(req.PathValue("version"))
	if aerr != nil {
		return nil, aerr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v, aerr := r.liveVersion(subject, version)
	if aerr != nil {
		return nil, aerr
	}
	return r.response(subject, v), nil
}

// schemaByIDPath returns the schema named by the {id} path element. The
// caller holds r.mu.
func (r *Registry) schemaByIDPath(req *http.Request) (*schemaRecord, *apiError) {
	id, err := strconv.Atoi(req.PathValue("id"))
	if err != nil || id < 1 || id > len(r.schemas) {
		return nil, schemaNotFound()
	}
	return r.schemas[id-1], nil
}

func (r *Registry) getSchema(req *http.Request) (any, *apiError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, aerr := r.schemaByIDPath(req)
	if aerr != nil {
		return nil, aerr
	}
	return schemaResponse{Schema: rec.text, SchemaType: typeField(rec.typ), References: rec.refs}, nil
}

func (r *Registry) schemaVersions(req *http.Request) (any, *apiError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, aerr := r.schemaByIDPath(req)
	if aerr != nil {
		return nil, aerr
	}
	all := showDeleted(req)
	out := []sr.SubjectVersion{}
	for name, s := range r.subjects {
		for _, v := range s.versions {
			if v.id == rec.id && (all || !v.deleted) {
				out = append(out, sr.SubjectVersion{Subject: name, Version: v.version})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Subject != out[j].Subject {
			return out[i].Subject < out[j].Subject
		}
		return out[i].Version < out[j].Version
	})
	return out, nil
}

func (r *Registry) registerRoute(req *http.Request) (any, *apiError) {
	subject := req.PathValue("subject")
	var body schemaRequest
	if aerr := decodeBody(req, &body); aerr != nil {
		return nil, aerr
	}
	if body.ID > 0 || body.Version > 0 {
		return nil, errorf(http.StatusUnprocessableEntity, 42205,
			"Subject '%s' is not in import mode; registering with an explicit id or version is not permitted", subject)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cand, aerr := r.candidate(body)
	if aerr != nil {
		return nil, aerr
	}
	s := r.subjects[subject]
	if s == nil {
		s = &subjectState{}
	}
	for _, v := range s.live() {
		if r.schemas[v.id-1].key == cand.key {
			return map[string]int{"id": v.id}, nil
		}
	}
	problems, aerr := r.checkSubjectLocked(subject, cand)
	if aerr != nil {
		return nil, aerr
	}
	if len(problems) > 0 {
		return nil, errorf(http.StatusConflict, 409,
			"Schema being registered is incompatible with an earlier schema for subject \"%s\", details: [%s]",
			subject, strings.Join(problems, "; "))
	}
	id, ok := r.byKey[cand.key]
	if !ok {
		id = len(r.schemas) + 1
		cand.id = id
		r.schemas = append(r.schemas, cand)
		r.byKey[cand.key] = id
	}
	next := 1
	if n := len(s.versions); n > 0 {
		next = s.versions[n-1].version + 1
	}
	s.versions = append(s.versions, subjectVersion{version: next, id: id})
	r.subjects[subject] = s
	return map[string]int{"id": id}, nil
}

// candidate validates a request's schema and computes its identity key.
// The caller holds r.mu.
func (r *Registry) candidate(body schemaRequest) (*schemaRecord, *apiError) {
	typ := strings.ToUpper(body.SchemaType)
	if typ == "" {
		typ = TypeAvro
	}
	if typ != TypeAvro && typ != TypeProtobuf && typ != TypeJSON {
		return nil, invalidSchema("unknown schema type %q", body.SchemaType)
	}
	if strings.TrimSpace(body.Schema) == "" {
		return nil, invalidSchema("empty schema")
	}
	refs := slices.Clone(body.References)
	var refKey strings.Builder
	for i, ref := range refs {
		if ref.Name == "" {
			return nil, invalidSchema("reference %d has no name", i)
		}
		v, aerr := r.liveVersion(ref.Subject, ref.Version)
		if aerr != nil {
			return nil, invalidSchema("reference %q to subject %q version %d: %s", ref.Name, ref.Subject, ref.Version, aerr.msg)
		}
		refs[i].Version = v.version
		fmt.Fprintf(&refKey, "%q %q %d;", ref.Name, ref.Subject, v.version)
	}
	norm := body.Schema
	if typ != TypeProtobuf {
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(body.Schema)); err != nil {
			return nil, invalidSchema("not JSON: %v", err)
		}
		norm = buf.String()
	}
	rec := &schemaRecord{typ: typ, text: body.Schema, refs: refs, key: typ + "\x00" + norm + "\x00" + refKey.String()}
	if typ == TypeAvro {
		if _, err := r.parseAvro(rec); err != nil {
			return nil, invalidSchema("%v", err)
		}
	}
	return rec, nil
}

func (r *Registry) lookup(req *http.Request) (any, *apiError) {
	subject := req.PathValue("subject")
	var body schemaRequest
	if aerr := decodeBody(req, &body); aerr != nil {
		return nil, aerr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.subjects[subject]
	if s == nil || len(s.live()) == 0 {
		return nil, subjectNotFound(subject)
	}
	cand, aerr := r.candidate(body)
	if aerr != nil {
		return nil, aerr
	}
	for _, v := range s.live() {
		if r.schemas[v.id-1].key == cand.key {
			return r.response(subject, v), nil
		}
	}
	return nil, schemaNotFound()
}

func (r *Registry) deleteSubject(req *http.Request) (any, *apiError) {
	subject := req.PathValue("subject")
	permanent, _ := strconv.ParseBool(req.URL.Query().Get("permanent"))
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.subjects[subject]
	if s == nil || len(s.versions) == 0 {
		return nil, subjectNotFound(subject)
	}
	live := s.live()
	out := []int{}
	switch {
	case permanent && len(live) > 0:
		return nil, errorf(http.StatusNotFound, 40405,
			"Subject '%s' was not deleted first before being permanently deleted", subject)
	case permanent:
		for _, v := range s.versions {
			out = append(out, v.version)
		}
		delete(r.subjects, subject)
		delete(r.levels, subject)
	case len(live) == 0:
		return nil, errorf(http.StatusNotFound, 40404, "Subject '%s' was soft deleted.Set permanent=true to delete permanently", subject)
	default:
		for i := range s.versions {
			if !s.versions[i].deleted {
				s.versions[i].deleted = true
				out = append(out, s.versions[i].version)
			}
		}
	}
	return out, nil
}

func (r *Registry) getConfig(req *http.Request) (any, *apiError) {
	subject := req.PathValue("subject")
	r.mu.Lock()
	defer r.mu.Unlock()
	return map[string]string{"compatibilityLevel": r.level(subject)}, nil
}

func (r *Registry) putConfig(req *http.Request) (any, *apiError) {
	subject := req.PathValue("subject")
	var body struct {
		Compatibility string `json:"compatibility"`
	}
	if aerr := decodeBody(req, &body); aerr != nil {
		return nil, aerr
	}
	level := strings.ToUpper(body.Compatibility)
	if _, ok := compatLevels[level]; !ok {
		return nil, errorf(http.StatusUnprocessableEntity, 42203, "Invalid compatibility level: %q", body.Compatibility)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if subject == "" {
		r.global = level
	} else {
		r.levels[subject] = level
	}
	return map[string]string{"compatibility": level}, nil
}

// level returns the effective compatibility level of a subject. The caller
// holds r.mu.
func (r *Registry) level(subject string) string {
	if l, ok := r.levels[subject]; ok {
		return l
	}
	return r.global
}
