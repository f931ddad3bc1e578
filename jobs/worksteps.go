package jobs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// checkSteps checks the options every job spread over many workers
// shares (compact's and rollup's --plan, --worker and --commit): the
// lease, the wait for the plan, the shard (from --shard or an Indexed
// Job's environment), and a plan id where several workers must find one
// plan.
func checkSteps(plan, worker bool, planID, shardFlag string, leaseTTL, planWait time.Duration) (shard, shards int, errs []error) {
	if leaseTTL < time.Second {
		errs = append(errs, bad("lease-ttl", "%s: want at least 1s", leaseTTL))
	}
	if planWait < 0 {
		errs = append(errs, bad("plan-wait", "%s: want a duration >= 0", planWait))
	}
	shard, shards, err := parseShard(shardFlag)
	if err != nil {
		errs = append(errs, err)
	}
	if plan && worker && planID == "" && shards > 1 {
		errs = append(errs, bad("plan-id", "required with --plan --worker on %d shards, so that every worker finds the one plan (give the Job's name)", shards))
	}
	return shard, shards, errs
}

// parseShard reads --shard, or an Indexed Job's environment.
func parseShard(flag string) (shard, shards int, err error) {
	what := "shard"
	if flag == "" {
		idx, n := os.Getenv("JOB_COMPLETION_INDEX"), os.Getenv("JOB_COMPLETIONS")
		switch {
		case idx == "" && n == "":
			return 0, 1, nil
		case idx == "" || n == "":
			return 0, 0, bad("shard", "JOB_COMPLETION_INDEX=%q and JOB_COMPLETIONS=%q: set both (an Indexed Job sets the index; pass the count from the Job's completions) or pass --shard i/n", idx, n)
		}
		flag, what = idx+"/"+n, "shard (from JOB_COMPLETION_INDEX/JOB_COMPLETIONS)"
	}
	i, n, ok := strings.Cut(flag, "/")
	shard, e1 := strconv.Atoi(i)
	shards, e2 := strconv.Atoi(n)
	if !ok || e1 != nil || e2 != nil || shards < 1 || shard < 0 || shard >= shards {
		return 0, 0, bad("shard", "%s %q: want i/n with 0 <= i < n", what, flag)
	}
	return shard, shards, nil
}

// instance names this process in claims and results: SLUICE_INSTANCE
// (a pod's name), else the host and process id.
func instance() string {
	if v := os.Getenv("SLUICE_INSTANCE"); v != "" {
		return v
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}
