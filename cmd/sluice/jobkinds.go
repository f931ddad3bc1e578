package main

import (
	"log/slog"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/jobs"
	"github.com/sluice-data/sluice/scheduler"
)

// jobKinds are the kinds a pipeline file may name: the jobs' typed
// calls, given the process's logger (each run's lines name its job and
// run), the Iceberg mirror's observer, whose failures the log reports,
// and the mirror's retention for vacuum.
func (a *app) jobKinds(logger *slog.Logger) map[string]scheduler.Kind {
	mirror := &mirrorObserver{a: a, report: func(map[string]any, string) {}}
	return jobs.Kinds(jobs.Env{Logger: logger, Observers: []catalog.CommitObserver{mirror}, MirrorKeep: a.icebergVacuum, OpenFormat: openFormat, OpenCatalogTable: openCatalogTable,
		OpenRead: openRead})
}
