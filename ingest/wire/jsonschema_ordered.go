package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// jsParseOrdered parses a JSON document, objects as *jsObject and numbers
// as json.Number.
func jsParseOrdered(text string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	v, err := jsOrderedValue(dec)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON document")
	}
	return v, nil
}

// jsOrderedValue reads one JSON value from dec.
func jsOrderedValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		obj := &jsObject{vals: map[string]any{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key := kt.(string)
			v, err := jsOrderedValue(dec)
			if err != nil {
				return nil, err
			}
			if _, dup := obj.vals[key]; !dup {
				obj.keys = append(obj.keys, key)
			}
			obj.vals[key] = v
		}
		_, err := dec.Token()
		return obj, err
	case '[':
		arr := []any{}
		for dec.More() {
			v, err := jsOrderedValue(dec)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token()
		return arr, err
	}
	return nil, fmt.Errorf("unexpected %v", d)
}

// jsPlain converts an ordered tree to plain JSON values (map[string]any
// objects), as the validator takes them.
func jsPlain(v any) any {
	switch x := v.(type) {
	case *jsObject:
		m := make(map[string]any, len(x.vals))
		for k, e := range x.vals {
			m[k] = jsPlain(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = jsPlain(e)
		}
		return a
	}
	return v
}

// jsConv converts one JSON value (not null) to its column's Go value.
type jsConv func(v any) (any, error)

// jsField is one property's column name, nullability and conversion.
type jsField struct {
	name     string
	nullable bool
	conv     jsConv
}

// jsWalker maps schemas to column types. docs holds the documents by
// URL; stack the $refs being followed, to refuse a recursive one.
type jsWalker struct {
	docs  map[string]*jsDoc
	stack []string
}
