package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dustin/go-humanize"
)

// funcs are the templates' helpers. Every one returns plain text, which
// html/template escapes where it lands.
var funcs = template.FuncMap{
	"pathEscape": url.PathEscape,
	"status":     statusText,
	"time":       fmtTime,
	"dur":        roundDur,
	"bytes":      fmtBytes,
	"count":      fmtCount,
	"firstLine":  firstLine,
	"inc":        func(i int) int { return i + 1 },
}

// statusText is a status as the text beside every colour: the record's
// own word (upstream_failed), as the command line prints it.
func statusText(v any) string {
	s := fmt.Sprint(v)
	if s == "" {
		return "never ran"
	}
	return s
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// roundDur is a duration to a sensible precision.
func roundDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func fmtBytes(n int64) string {
	if n < 0 {
		return "–"
	}
	return humanize.IBytes(uint64(n))
}

func fmtCount(n int64) string { return humanize.Comma(n) }

// firstLine is s's first line, at most 200 characters.
func firstLine(s string) string {
	line, _, more := strings.Cut(s, "\n")
	if more {
		line += " …"
	}
	return clip(line, 200)
}

// clip cuts s to n bytes at a character boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// prettyJSON indents a record's summary; what does not parse is shown
// as it is.
func prettyJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}
