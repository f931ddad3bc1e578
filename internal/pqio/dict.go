package pqio

// A string column whose values are nearly all distinct (a JSON payload,
// ids, free text) gains nothing from a dictionary: the dictionary page
// holds every value anyway, and building it (a hash map insert per value,
// which grows with the column chunk) was about a twelfth of an ingest's
// CPU on event records (bench/ingest.sh). parquet-mr gives up on such a
// column's dictionary once it overflows; sluice decides up front, from the
// first batch a file is given: a string column at least
// noDictDistinct/1000 of whose non-null sample values are distinct is
// written without one (DELTA_LENGTH_BYTE_ARRAY, see ParquetSchemaNoDict),
// every other keeps its dictionary. Writers sharing Codecs share the
// decision, made on the first sample of at least noDictSureValues values.
const (
	// noDictSample is how many values of the first batch are looked at.
	noDictSample = 1024
	// noDictMinValues is the fewest non-null values a decision is made on;
	// on fewer a column keeps its dictionary.
	noDictMinValues = 64
	// noDictSureValues is the fewest non-null values a decision is shared
	// on through Codecs.
	noDictSureValues = 512
	// noDictDistinct is the share (in 1/1000) of distinct values from
	// which a column goes without a dictionary.
	noDictDistinct = 900
)

// noDictionary says, for each column of schema, whether it is written
// without a dictionary, judging by rows (the first batch; nil keeps every
// dictionary). cs, when not nil, remembers what a large enough sample
// said, for the same column's next files. A uuid column never has a
// dictionary (see uuidEncoding) and is not looked at.
func (cs *Codecs) noDictionary(schema Schema, rows [][]any) []bool {
	noDict := make([]bool, len(schema.Columns))
	var seen map[string]struct{}
	for i, c := range schema.Columns {
		if c.Type.Kind != KindString {
			continue
		}
		if d, ok := cs.dictDecision(c.Name); ok {
			noDict[i] = d
			continue
		}
		if seen == nil {
			seen = make(map[string]struct{}, noDictSample)
		} else {
			clear(seen)
		}
		n := 0
		for _, row := range rows[:min(len(rows), noDictSample)] {
			if i >= len(row) {
				continue
			}
			if s, ok := row[i].(string); ok {
				n++
				seen[s] = struct{}{}
			}
		}
		if n < noDictMinValues {
			continue
		}
		noDict[i] = len(seen)*1000 >= n*noDictDistinct
		if n >= noDictSureValues {
			cs.setDictDecision(c.Name, noDict[i])
		}
	}
	return noDict
}

// dictDecision returns what a sample decided for the named column, if one
// did.
func (cs *Codecs) dictDecision(column string) (noDict, ok bool) {
	if cs == nil {
		return false, false
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	noDict, ok = cs.noDict[column]
	return noDict, ok
}

// setDictDecision records a sample's decision for the named column,
// unless one was made before.
func (cs *Codecs) setDictDecision(column string, noDict bool) {
	if cs == nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.noDict == nil {
		cs.noDict = map[string]bool{}
	}
	if _, ok := cs.noDict[column]; !ok {
		cs.noDict[column] = noDict
	}
}
