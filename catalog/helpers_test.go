package catalog_test

import "encoding/json"

type jsonRaw = json.RawMessage
