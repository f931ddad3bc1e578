// Package console owns serve's web console: the pages at GET / of the
// admin address (jobs, a timeline of the last day's runs, runs with
// filters, one run's record, tables as describe shows them) and their
// two actions, run a job now and cancel a run.
//
// The pages are server-rendered with html/template from templates and a
// stylesheet embedded in the binary: no build step, nothing fetched from
// another site, and every page works with JavaScript off (filters are
// GET forms, actions POST forms; the small script only adds an
// auto-refresh toggle). Every status is shown as text as well as by its
// colour.
//
// The pages read summaries, never every run record: the jobs page and
// the runs list read the run index (scheduler.History.RecentAll), cached
// for a couple of seconds; only a single run's page reads its record.
// Table descriptions are cached for half a minute, so a burst of page
// loads does not read the lake again.
//
// The timeline's lanes are bounded: runs that start in the same five
// minutes share one bar, of the worst status among them, so a job that
// runs every few seconds draws at most 288 bars a day.
//
// Actions are refused from another site's page (scheduler.CrossSite),
// need a CSRF token (an HMAC, with a per-process key, of the session or
// of a random cookie), and, when serve has a token, a session: a cookie
// holding an HMAC of the token, set by logging in with it. A client
// address that sends five wrong tokens in a minute is refused (429,
// Retry-After) until the minute ends; the addresses remembered are
// bounded. Without a session the pages say they are read-only and
// render no action forms.
// The console never commits to a table and never writes a run record
// itself: actions go through the scheduler's Server.
//
// console imports scheduler, inspect and cloud; scheduler never imports
// it (the command wires it into scheduler.Admin.Pages).
package console
