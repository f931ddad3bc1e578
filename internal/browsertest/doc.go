// Package browsertest drives a headless Chromium for tests of sluice's web
// pages, as a person with a browser would use them: open a URL, read the
// text and the attributes of what a CSS selector finds, fill in a field,
// click a button and wait for the page it leads to, run a script in the
// page, save a full-page PNG.
//
// It owns the browser's lifetime and nothing else: Start runs one Chromium
// per call (stopped when the test ends), and each Tab is a tab in a browser
// context of its own, so two tabs share no cookies, like two people. Every
// call on a Tab is bounded by the deadline the Tab was given, and a call
// that fails fails the test, naming the selector and the page.
//
// The browser is Debian's chromium, found on PATH as "chromium" (or the
// binary SLUICE_CHROMIUM names); `make deps` installs it. When it is
// missing, Start fails the test with one line saying so: the browser tests
// never skip. As root (CI runs so) Chromium's sandbox cannot start, and
// the browser runs with --no-sandbox.
//
// Import it from _test.go files only. It imports chromedp and its
// DevTools protocol types, and nothing of sluice.
package browsertest
