package main

import "bufio"

// bufferedStdout buffers line output: listing 100,000 files one write a
// line would cost a syscall each.
func bufferedStdout(a *app) *bufio.Writer { return bufio.NewWriterSize(a.stdout, 256<<10) }
