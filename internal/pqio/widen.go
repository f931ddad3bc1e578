package pqio

// Widen returns the conversion of a value of type from, in its Go
// representation, to type to, for types CheckCompatible accepts a file
// column of type from into a table column of type to: int32 to int64,
// float64 or a decimal, decimals to wider ones, and within structs, lists
// and maps the same per field (a struct field the value lacks reads as
// NULL). Nil when no conversion is needed. The conversion leaves nil as
// nil; it assumes values of type from (it panics on another Go type, as
// a decoder's bug would deserve).
func Widen(from, to Type) func(any) any {
	if !from.Nested() || !to.Nested() {
		w := widener(from, to)
		if w == nil {
			return nil
		}
		return func(v any) any {
			if v == nil {
				return nil
			}
			return w(v)
		}
	}
	switch from.Kind {
	case KindList:
		elem := Widen(from.Elem().Type, to.Elem().Type)
		if elem == nil {
			return nil
		}
		return func(v any) any {
			if v == nil {
				return nil
			}
			in := v.([]any)
			out := make([]any, len(in))
			for i, e := range in {
				if e != nil {
					e = elem(e)
				}
				out[i] = e
			}
			return out
		}
	case KindMap:
		key, val := Widen(from.Key(), to.Key()), Widen(from.Elem().Type, to.Elem().Type)
		if key == nil && val == nil {
			return nil
		}
		return func(v any) any {
			if v == nil {
				return nil
			}
			in := v.([]MapEntry)
			out := make([]MapEntry, len(in))
			for i, e := range in {
				if key != nil && e.Key != nil {
					e.Key = key(e.Key)
				}
				if val != nil && e.Value != nil {
					e.Value = val(e.Value)
				}
				out[i] = e
			}
			return out
		}
	}
	return widenStruct(from, to)
}

// widenStruct is Widen for structs: each field the table's struct has
// that from's has too, widened.
func widenStruct(from, to Type) func(any) any {
	fields := map[string]func(any) any{}
	for _, tf := range to.Fields {
		if ff, ok := fieldOf(from, tf.Name); ok {
			if w := Widen(ff.Type, tf.Type); w != nil {
				fields[tf.Name] = w
			}
		}
	}
	if len(fields) == 0 {
		return nil
	}
	return func(v any) any {
		if v == nil {
			return nil
		}
		in := v.(map[string]any)
		out := make(map[string]any, len(in))
		for k, e := range in {
			if w := fields[k]; w != nil && e != nil {
				e = w(e)
			}
			out[k] = e
		}
		return out
	}
}
