package main

import (
	"bufio"
	"strconv"
	"strings"
	"unicode/utf8"
)

// bufferedStdout buffers line output: listing 100,000 files one write a
// line would cost a syscall each.
func bufferedStdout(a *app) *bufio.Writer { return bufio.NewWriterSize(a.stdout, 256<<10) }

// textName is a name from the data (a path, a run ID) as text output
// prints it: unchanged, unless it holds a character that is not printable
// (a newline would split one line into two, an escape sequence would
// drive the terminal) or is not UTF-8, or it starts with a double quote.
// Then it is quoted and escaped as Go's strconv.Quote does, so a line
// starting with " is always one to unquote (strconv.Unquote), and never
// a name as it is.
func textName(s string) string {
	if !strings.HasPrefix(s, `"`) && utf8.ValidString(s) && strings.IndexFunc(s, notPrintable) < 0 {
		return s
	}
	return strconv.Quote(s)
}

func notPrintable(r rune) bool { return !strconv.IsPrint(r) }
